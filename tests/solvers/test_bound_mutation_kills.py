"""Mutation kills for the bound and its exact solvers: tie rules, grouped clocks, result text.

Each test is deterministic and cheap, and names in its docstring the bug it
catches.  The expected values come from hand computation on dyadic inputs
(exact in float64) or from brute force over every token set in Fractions,
written here, never from the code under test.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

import spectheory as stt
from spectheory.solvers.polymatroid import plan, plan_python, plan_row


def _iid_values(p, q, n):
    """``p(H) + 1 - q(H)^n`` of every token set ``H`` (Fractions of the floats), by mask."""
    pf = [F(float(x)) for x in p]
    qf = [F(float(x)) for x in q]
    V = len(pf)
    out = []
    for mask in range(2**V):
        H = [i for i in range(V) if mask >> i & 1]
        out.append(sum((pf[i] for i in H), F(0)) + 1 - sum((qf[i] for i in H), F(0)) ** n)
    return out


#: An i.i.d. instance (n = 2) whose dual has two optimal prefixes.  Ratio order
#: 0 (p/q = 1/8), 1 (5/4), 2 (5/2); p(H) - q(H)^2 is -3/16 after token 0 and
#: 6/16 - 9/16 = -3/16 again after tokens 0 and 1, and 0 after all three.
TIE_P = np.array([1 / 16, 5 / 16, 10 / 16])
TIE_Q = np.array([1 / 2, 1 / 4, 1 / 4])


def test_the_tie_instance_is_what_the_tests_below_assume():
    """Guards the hand computation: the optimum 13/16 is reached by {0} and {0, 1} only."""
    values = _iid_values(TIE_P, TIE_Q, 2)
    best = min(values)
    assert best == F(13, 16)
    assert [m for m, v in enumerate(values) if v == best] == [0b001, 0b011]


def test_float_plan_takes_the_first_optimal_prefix_on_a_tie():
    """Bug: the numba plan's prefix scan kept the *last* minimiser of ``p(H) - q(H)^n``
    (``<=`` for ``<``), so on a tie ``H*`` grew by the tied tokens.

    The plan's ``H*`` is the first minimiser over the ratio-order prefixes (the
    Python reference's rule, which the coins reference, the trial kernel and the
    torch form rely on bit for bit).  Here the prefixes {0} and {0, 1} tie at
    -3/16 (exact in float64), so ``T`` = {2, 1} (``n_top = 2``, order by p/q
    descending: 2, 1, then 0); the bug gives ``T`` = {2}.
    """
    fast = plan_row(TIE_P, TIE_Q, 2)
    assert fast.n_top == 2 and fast.order.tolist() == [2, 1, 0]
    ref = plan_python(TIE_P, TIE_Q, 2)
    assert ref.n_top == 2 and ref.order.tolist() == [2, 1, 0]
    assert fast.alpha == ref.alpha == 13 / 16


def test_exact_plan_takes_the_first_optimal_prefix_on_a_tie():
    """Bug: the exact (Fraction) plan kept the last minimiser of ``p(H) - q(H)^n`` on a tie.

    Same instance as above in Fractions: ``H*`` = {0}, so ``T`` = {2, 1}.
    """
    p = np.array([F(1, 16), F(5, 16), F(10, 16)], dtype=object)
    q = np.array([F(1, 2), F(1, 4), F(1, 4)], dtype=object)
    exact = plan(p, q, 2)
    assert exact.n_top == 2 and exact.order.tolist() == [2, 1, 0]
    assert exact.alpha == F(13, 16)


def test_enumeration_certificate_is_the_first_optimal_set_in_binary_order():
    """Bug: enumeration kept the last optimal set on ties (``<=`` for ``<``), against its
    documented rule "ties go to the first set in binary order".

    On the tie instance the optimal sets are masks 0b001 and 0b011 (hand
    computation above): the certificate is {0}.  With ``p = q`` the value 1 is
    reached by the empty set (mask 0) and the full set: the certificate is empty.
    """
    r = stt.solve_bound(TIE_P, TIE_Q, 2, "iid", "enumerate")
    assert r.exact_value == F(13, 16)
    assert r.certificate.tolist() == [True, False, False]
    r = stt.solve_bound([0.5, 0.5], [0.5, 0.5], 2, "iid", "enumerate")
    assert r.exact_value == 1
    assert r.certificate.tolist() == [False, False]


def test_result_summary_prints_twelve_significant_digits():
    """Bug: ``SolverResult.summary`` printed floats to 6 significant digits instead of 12.

    ``p = (1/3, 2/3)``, ``q = (2/3, 1/3)``, one draft: the bound is
    ``sum min(p, q) = 2/3``, printed as 0.666666666667.
    """
    text = stt.solve_bound([1 / 3, 2 / 3], [2 / 3, 1 / 3], 1).summary()
    assert "  value: 0.666666666667" in text.splitlines()


@pytest.mark.parametrize("n", [2, 5, 9])
def test_grouped_clock_update_keeps_enough_taylor_terms(n):
    """Bug: the grouped (power-sum) update of small tokens dropped Taylor terms of
    ``(e^u - 1)^k`` once their bound fell below 4e-12 instead of 4e-18.

    Eight tokens of scaled mass exactly at the grouping limit (``x t = 1/32`` at
    the top node), added to the point law ``P(N = 0) = 1``: one at a time, the
    law is exact to a few ulp (8 products of numbers at most 1); the group must
    match it to 2e-15.  Fewer terms leave errors of 4e-14 (n = 2) and 8e-15
    (n = 5, 9), which the long sequential check of ``test_wor_bucket`` (500
    tokens, tolerance 1e-13) cannot see.
    """
    from spectheory.solvers import _wor_bucket as wb
    from spectheory.solvers._bound_kernels import WOR_STEP

    G = 60
    t = np.exp(math.log(2.0**-8) + WOR_STEP * np.arange(G))
    xs = np.full(8, wb.WOR_GROUP_X / t[-1])
    P1 = np.zeros((n, G))
    P1[0] = 1.0
    P2 = P1.copy()
    a, y = np.empty(G), np.empty(G)
    for x in xs:
        wb._add_token(P1, x, t, a, y, G, n)
    A = wb._expm1_power_table(n)
    Kd = wb._group_terms(n, G, WOR_STEP)
    K = wb.WOR_GROUP_TERMS
    F_, M, tp, W = np.empty(n), np.empty(n + K), np.empty(n + K), np.empty(n)
    wb._add_group(P2, xs, xs.size, t, G, n, A, Kd, F_, M, tp, W, np.empty(G), np.empty(G))
    np.testing.assert_allclose(P2, P1, rtol=0, atol=2e-15)
    assert np.abs(P1[0] - 1.0).max() > 0.2  # the clocks moved the law at the top nodes
