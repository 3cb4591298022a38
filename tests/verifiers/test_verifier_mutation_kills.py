"""Mutation kills for the registered verifiers, their closed forms and their numba kernels.

Each test is deterministic and cheap, and names in its docstring the bug it
catches; the expected values come from hand computation (exact in binary
floating point or in Fractions), never from the code under test.  Kernel tests
feed uniforms that sit exactly on a boundary (``u`` equal to a probability or to a
partial sum), where the coins protocol's strict ``u < prob`` decides, and
random uniforms never land.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from spectheory import InstanceTooLargeError, InvalidParameterError
from spectheory.coins import ReplayCoins
from spectheory.sim import _kernels as K
from spectheory.verifiers import _closed_forms as cf
from spectheory.verifiers.hub import greedy, spechub

P_A = np.array([0.3, 0.4, 0.3])
Q_A = np.array([0.6, 0.3, 0.1])


def _run(name, p, q, drafts, u, sampling="iid"):
    """One trial of the numba kernel ``name`` on one row (float64 rows, given uniforms)."""
    p = np.asarray(p, dtype=np.float64)[None]
    q = np.asarray(q, dtype=np.float64)[None]
    d = np.asarray(drafts, dtype=np.int64)[None, None]
    uu = np.asarray(u, dtype=np.float64)[None, None]
    return int(K.run_verifier(name, p, q, d, uu, sampling)[0, 0])


# --------------------------------------------------------------------------- _ops.py


def test_a_draft_of_draft_probability_zero_is_rejected():
    """Bug: ``accept_prob`` took ``den >= 0`` for ``den > 0``, so a drafted token that the
    draft gives probability 0 was accepted with probability 1 (``num >= 0``).

    p = (1/2, 1/4, 1/4), q = (1, 0, 0) and the (unvalidated) draft 1: the accept
    probability is 0, so even u = 0 rejects, and the residual (0, 1/2, 1/2) at
    u = 3/4 gives token 2, reading both uniforms; the kernel agrees.
    """
    from spectheory.verifiers._ops import accept_prob
    from spectheory.verifiers.single import sd

    assert accept_prob(F(1, 3), F(0)) == 0
    assert accept_prob(0.0, 0.0) == 0
    p, q = np.array([0.5, 0.25, 0.25]), np.array([1.0, 0.0, 0.0])
    coins = ReplayCoins([0.0, 0.75])
    assert sd(p, q, (1,), coins) == 2
    assert coins.position == 2
    assert _run("sd", p, q, (1,), [0.0, 0.75]) == 2


# --------------------------------------------------------------------------- hub.py


def test_greedy_and_spechub_refuse_drafts_that_do_not_start_with_the_top_tokens():
    """Bug: the greedy-law check of ``greedy``/``spechub`` (first n - 1 drafts are the top
    tokens of q) was skipped, so a direct call on drafts (1, 0) ran SD on the wrong token.

    On instance A the top token is 0; drafts (1, 0) cannot come from the greedy law.
    """
    for fn in (greedy, spechub):
        with pytest.raises(InvalidParameterError, match="greedy law"):
            fn(P_A, Q_A, (1, 0), ReplayCoins([0.5] * 4), sampling="greedy")


def test_spechub_kernel_pair_coin_is_strict_at_the_boundary():
    """Bug: the SpecHub kernel took the pair type (i, a) when ``u == 1 - q(a)`` (``<=`` for ``<``).

    p = (0.3, 0.4, 0.3), q = (0.5, 0.3, 0.2): hub a = 0, q~ = (0, 0.6, 0.4), drafts
    (0, 1).  With u_0 = 0.5 = 1 - q(a) the coin ``u < 0.5`` fails, so the pair is
    (a, i): i = 1 is accepted w.p. p_1(1)/Q_ai(1) = 0.1/0.3 = 1/3 (u_1 = 0.9 rejects),
    then a w.p. min(1, p(a)/sum e_ai) = min(1, 0.3/0.3) = 1: token 0.  The pair (i, a)
    would accept i w.p. min(1, 0.4/0.3) = 1: token 1.
    """
    p, q = np.array([0.3, 0.4, 0.3]), np.array([0.5, 0.3, 0.2])
    u = [0.5, 0.9, 0.5, 0.5]
    assert spechub(p, q, (0, 1), ReplayCoins(u), sampling="greedy") == 0
    assert _run("spechub", p, q, (0, 1), u, "greedy") == 0
    u_below = [np.nextafter(0.5, 0.0), 0.9, 0.5, 0.5]  # just below: pair (i, a), token 1
    assert _run("spechub", p, q, (0, 1), u_below, "greedy") == 1


# --------------------------------------------------------------------------- numba coin kernels


def test_kernel_categorical_draw_is_strict_on_a_partial_sum():
    """Bug: the kernels' inverse-CDF search took ``u <= cum[i]`` instead of ``u < cum[i]``.

    SD with p = (1/2, 1/4, 1/4), q = (1, 0, 0): draft 0 is rejected at u_0 = 3/4
    (accept probability 1/2), and the residual norm((p - q)_+) = (0, 1/2, 1/2) has
    partial sums (0, 1/2, 1) in binary exactly.  At u_1 = 1/2 the first partial sum
    strictly above u is the last one: token 2.  The i.i.d. draft sampler reads the same
    search: q = (1/2, 1/2) at u = 1/2 draws token 1.
    """
    p, q = np.array([0.5, 0.25, 0.25]), np.array([1.0, 0.0, 0.0])
    assert _run("sd", p, q, (0,), [0.75, 0.5]) == 2
    assert _run("sd", p, q, (0,), [0.75, np.nextafter(0.5, 0.0)]) == 1
    drafts = K.draw_drafts(np.array([[0.5, 0.5]]), 2, "iid", np.array([[[0.5, 0.25]]]))
    assert drafts.tolist() == [[[1, 0]]]


# --------------------------------------------------------------------------- _closed_forms.py


def test_the_loop_work_limit_refuses_only_above_it(monkeypatch):
    """Bug: RRS's closed form refused ``n x V == MAX_LOOP_WORK`` (``>=`` for ``>``).

    With the limit set to 6, instance A (V = 3) at n = 2 is exactly at the limit
    and runs (41/50, docs/theory.md §8.1); n = 3 (9 > 6) is refused.
    """
    monkeypatch.setattr(cf, "MAX_LOOP_WORK", 6)
    pf = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    qf = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    assert cf.rrs_acceptance(pf, qf, 2) == F(41, 50)
    with pytest.raises(InstanceTooLargeError, match="loops over"):
        cf.rrs_acceptance(pf, qf, 3)
