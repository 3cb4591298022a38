"""``embedded_iid``: the stream lemma, exact losslessness, the acceptance between two bounds.

Oracles: exact enumeration of every ordered draw and every coin in Fractions
(:func:`spectheory.exact.exact_row`, :func:`spectheory.coins.enumerate_outcomes`),
the bounds by enumeration over draft sets (:func:`spectheory.solve_bound`).
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction as F

import numpy as np
import pytest

from spectheory._errors import InvalidParameterError
from spectheory.coins import ReplayCoins, enumerate_outcomes
from spectheory.exact import exact_row
from spectheory.exact._tuples import ordered_draft_law
from spectheory.solvers.ot_dual import bound, solve_bound
from spectheory.verifiers import REGISTRY
from spectheory.verifiers.embedded import embedded_iid, stream_prefix
from spectheory.verifiers.single import sd

from ._rows import peaked_pair


def _fractions(w):
    w = [int(x) for x in w]
    return np.array([F(x, sum(w)) for x in w], dtype=object)


def _instances(count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        V = int(rng.integers(3, 6))
        n = int(rng.integers(2, min(V, 4) + 1))
        yield _fractions(rng.integers(0, 6, V) + (np.arange(V) == 0)), _fractions(
            rng.integers(1, 7, V)
        ), n


@pytest.mark.parametrize("V, n", [(3, 2), (3, 3), (4, 3), (5, 2)])
def test_stream_prefix_of_drafts_without_replacement_is_iid(V, n):
    """The lemma the verifier rests on: Z_1..Z_n has law q x ... x q exactly."""
    q = _fractions(np.random.default_rng(V * 10 + n).integers(1, 9, V))
    law = Counter()
    for drafts, prob in ordered_draft_law(q, n, "without_replacement"):
        prefix = enumerate_outcomes(lambda c, d=drafts: tuple(stream_prefix(q, d, c)[0]))
        for z, w in prefix.items():
            assert set(z) <= set(drafts)
            law[z] += prob * w
    for z in itertools.product(range(V), repeat=n):
        assert law[z] == np.prod([q[x] for x in z]), z


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_law_is_p_and_acceptance_lies_between_the_bounds(seed):
    for p, q, n in _instances(12, seed):
        law, acc = exact_row(embedded_iid, p, q, n, "without_replacement")
        assert list(law) == list(p), (p, q, n)
        lo = solve_bound(p, q, n, "iid", method="enumerate").exact_value
        hi = solve_bound(p, q, n, "without_replacement", method="enumerate").exact_value
        assert lo <= acc <= hi, (p, q, n, lo, acc, hi)


def test_not_optimal_without_replacement_on_a_known_instance():
    """It is a lower bound on the optimum, not the optimum: docs/theory.md §8.1, instance A."""
    p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    _, acc = exact_row(embedded_iid, p, q, 2, "without_replacement")
    _, rrs = exact_row(REGISTRY["rrs_wor"].function, p, q, 2, "without_replacement")
    assert acc == F(937, 1025)
    assert F(89, 100) < acc and F(7, 8) < acc < F(139, 140)
    assert solve_bound(p, q, 2, "without_replacement", method="enumerate").exact_value == F(
        139, 140
    )
    assert rrs == F(7, 8)


def test_one_draft_is_speculative_sampling():
    p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    for u in ([0.1, 0.2], [0.9, 0.05], [0.6, 0.99]):
        assert embedded_iid(p, q, (0,), ReplayCoins(u)) == sd(p, q, (0,), ReplayCoins(u))


def test_other_draft_laws_are_refused():
    p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    with pytest.raises(InvalidParameterError, match="sampling must be 'without_replacement'"):
        embedded_iid(p, q, (0, 1), ReplayCoins([0.5] * 6), sampling="iid")
    assert REGISTRY["embedded_iid"].samplings == ("without_replacement",)


def test_check_lossless_at_full_vocabulary():
    """spectheory.check_lossless on a peaked random row at V = 49,152, false-alarm rate 1e-6.

    Row as in ``test_optimal``: logits ~ 3 N(0, 1), the draft's perturbed by
    N(0, 1).  The Monte Carlo acceptance must also lie within 5 standard errors
    of the interval [alpha*_iid, alpha*_wor] (a two-sided false alarm below 1e-6).
    """
    from spectheory.sim.check import check_lossless

    p, q = peaked_pair(49_152, seed=17)
    trials = 2000
    report = check_lossless(
        embedded_iid, p, q, n=4, sampling="without_replacement", trials=trials, rng=1
    )
    assert not report.lossy and not report.exceeds_bound
    se = 0.5 / np.sqrt(trials)
    lo, hi = bound(p, q, 4, "iid")[0], bound(p, q, 4, "without_replacement")[0]
    assert lo - 5 * se <= report.acceptance <= hi + 5 * se
