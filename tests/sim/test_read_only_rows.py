"""A verifier that modifies its input rows in place is refused at its own line, by name.

The rows ``p`` and ``q`` are shared by every trial of a row (and every coin path of an
exact enumeration).  A verifier writing into them (``q[x] = 0; q /= q.sum()``: RRS
without replacement without a copy) corrupted the later trials, which failed with an
unrelated "categorical probs has a negative or non-finite entry" (or returned plausible
numbers).  Verifiers now get read-only views: numpy refuses the write, and the error
names the verifier and says to copy.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

import spectheory as stt
from spectheory._errors import VerifierError
from spectheory.lm import Trace
from spectheory.sim.replay import replay

P = np.array([0.3, 0.4, 0.3])
Q = np.array([0.6, 0.3, 0.1])
MATCH = r"verifier 'wor_in_place' raised ValueError: .*read-only.*must not modify its inputs"


def _wor(p, q, drafts, coins, copy):
    """Recursive rejection sampling without replacement (lossless), ``q`` renormalised."""
    r = p
    if copy:
        q = q.copy()
    for x in drafts:
        if coins.bernoulli(min(1, r[x] / q[x]) if q[x] > 0 else 0 * p[0]):
            return x
        rest = np.maximum(r - q, 0 * p[0])
        r = rest / rest.sum()
        q[x] = 0 * p[0]  # in place: the caller's row, unless copied
        q /= q.sum()
    return coins.categorical(r)


def wor_in_place(p, q, drafts, coins, *, sampling="without_replacement"):
    return _wor(p, q, drafts, coins, copy=False)


def wor_copy(p, q, drafts, coins, *, sampling="without_replacement"):
    return _wor(p, q, drafts, coins, copy=True)


def wor_in_place_blackbox(target, draft, drafts, rng):
    draft[drafts[0]] = 0.0
    return int(drafts[0])


WOR = {"n": 2, "sampling": "without_replacement"}
ENTRY_POINTS = {
    "check_lossless": lambda fn, p, q: stt.check_lossless(fn, p, q, trials=200, rng=0, **WOR),
    "simulate": lambda fn, p, q: stt.simulate(fn, p, q, trials=50, rng=0, **WOR),
    "verify": lambda fn, p, q: stt.verify(fn, p, q, [0, 1], rng=0, sampling=WOR["sampling"]),
    "output_distribution": lambda fn, p, q: stt.output_distribution(fn, p, q, **WOR),
    "acceptance": lambda fn, p, q: stt.acceptance(fn, p, q, **WOR),
    "replay": lambda fn, p, q: replay(
        Trace.from_arrays(p[None], {"d": q[None]}, kind="probs"),
        verifiers=(fn,),
        ns=(2,),
        samplings=(WOR["sampling"],),
        trials=20,
    ),
}


@pytest.mark.parametrize("run", ENTRY_POINTS.values(), ids=ENTRY_POINTS.keys())
def test_a_verifier_writing_into_its_inputs_is_named(run):
    p, q = P.copy(), Q.copy()
    with pytest.raises(VerifierError, match=MATCH):
        run(wor_in_place, p, q)
    np.testing.assert_array_equal(q, Q)  # the caller's rows are untouched
    np.testing.assert_array_equal(p, P)


def test_exact_rows_are_read_only_too_and_a_copy_is_fine():
    pf = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    qf = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    with pytest.raises(VerifierError, match=MATCH):
        stt.output_distribution(wor_in_place, pf, qf, n=2, sampling="without_replacement")
    law = stt.output_distribution(wor_copy, pf, qf, n=2, sampling="without_replacement")
    assert list(law) == list(pf)  # lossless, exactly


def test_a_black_box_gets_read_only_rows():
    with pytest.raises(VerifierError, match=r"wor_in_place_blackbox.*must not modify"):
        stt.simulate(wor_in_place_blackbox, P, Q, n=1, sampling="iid", trials=5, rng=0)
