"""Tests written against surviving mutants of the exact solvers (mutation audit).

Each test names the mutant it kills and the code path it reaches.  The oracle
is exact: every token set in Fractions (``solve_bound(..., "enumerate")``).
The instances are tiny (V <= 5), so the float scan is exact to a few ulp and
the tolerances sit far below the errors of the mutants.
"""

from __future__ import annotations

import numpy as np
import pytest

import spectheory as stt

WOR = "without_replacement"


def _exact_wor(p, q, n):
    return float(stt.solve_bound(p, q, n, WOR, "enumerate").exact_value)


@pytest.mark.parametrize("k", [23.13, 23.2])
def test_wor_grid_keeps_nodes_until_the_law_is_truly_dead(k):
    """WOR_DEAD (``_bound_kernels._prune``): raised from 1e-18 to 1e-10, it drops a live node.

    Drafts (n = 2) from {A, B, C} with q_C = 2^-11 and q_B = k / 2048, and the
    optimal set H = {B, A}.  At the grid node t = 2048 = 1 / q_C,
    P(N_H(t) <= 1) ~ e^{-q_B t} = e^{-k} ~ 9e-11 and the weight
    h lam t e^{-lam t} of that node in 1 - Q(H) is 0.23 / e: dropping it (the
    mutant prunes top nodes below 1e-10) moves the bound by -7.7e-12 (k = 23.13)
    and -7.2e-12 (k = 23.2).  The clean scan is exact to 1e-16 here.
    """
    lam = 2.0**-11
    b = k / 2048
    q = np.array([1 - b - lam, b, lam])
    p = np.array([0.5, 0.003, 0.497])
    got = stt.bound(p, q, 2, WOR)
    assert abs(got - _exact_wor(p, q, 2)) <= 1e-13


@pytest.mark.parametrize("m", [6e-13, 8e-13])
def test_pending_bucket_is_kept_when_its_bound_is_tight(m):
    """WOR_BOUND_SLACK (``_wor_bucket``): the slack's sign flipped (4e-12 -> -4e-12).

    The pending-bucket bound ``P_start - Q_end + r_lo (Q_end - Q_start) / c``
    is tight within 4e-12 here, and the optimum is inside the bucket: with the
    slack added instead of subtracted the bucket is dropped and its inner
    prefix, better than both bucket ends by 4.7e-13 (m = 6e-13) and 6.3e-13
    (m = 8e-13), is never scanned.

    n = 2; D (q = 1 - 1/101 - ..., dominant) and F in the first bucket (ratio
    1/4), an outside token O (q = 1e-4, ratio ~7000, above the cut), and two
    tokens X, Y of mass m in the bucket [100, 104) of p/q, at ratios 100.1 and
    101.8 on either side of the marginal rate dQ/dq ~ 101.01 of the set {D, F}:
    the cut is c = 1 + 1/(1 - q_D) ~ 102, so the bound is within
    (c - 100)(2 m) of the inner value.
    """
    lam = 1e-4
    eta = 1 / 101 - lam - 2 * m
    q = np.array([1 - eta - lam - 2 * m, eta, m, m, lam])
    p = np.array([0.25 * q[0], 0.25 * q[1], 100.1 * m, 101.8 * m, 0.0])
    p[4] = 1 - p.sum()
    got = stt.bound(p, q, 2, WOR)
    assert abs(got - _exact_wor(p, q, 2)) <= 1e-13


def test_bucket_whose_largest_inner_prefix_holds_exactly_n_tokens_is_scanned():
    """``_wor_bucket_row`` snapshot test ``support + cnt - 1 >= n`` (mutant: ``- 2``).

    n = 2; L (q = 0.88, p/q = 0.001) alone in its bucket, then X1 (p/q = 8.0)
    and X2 (p/q = 8.4) in the bucket [8, 8.5) of p/q, then O (p/q = 8.504).
    The optimum is {L, X1}: an inner prefix of the bucket of X1, X2 with
    exactly n = 2 tokens (support 1 before the bucket, 2 tokens in it).  With
    ``- 2`` no snapshot is taken for that bucket, its inner prefix is never
    integrated, and the bound comes out 4.06e-3 too high (0.99772 against
    0.99366).
    """
    q = np.array([0.88, 0.03, 0.06, 0.03])
    p = np.array([0.00088, 0.24, 0.504, 0.25512])
    exact = stt.solve_bound(p, q, 2, WOR, "enumerate")
    assert np.flatnonzero(exact.certificate).tolist() == [0, 1]  # the inner prefix
    assert abs(stt.bound(p, q, 2, WOR) - float(exact.exact_value)) <= 1e-13


def test_float_reference_plan_equals_the_kernel_at_an_exact_flat_density_tie():
    """``plan_python``'s H* density rule ``cp >= r[j]`` (mutant: ``cp > r[j]``).

    On exact (Fraction) input the mutant is equivalent: at a tie ``cp = r_j``
    the next flat density is ``(QH - P - p_j) / R[j+1] = r_j`` again and
    ``y_j = cp q_j = p_j``, so every table is the same (swept over 44,982 plans
    with denominators up to 12, 90 of them with the tie).  On float input the
    tie is exact in float here (``fl((QH - P) / R[5]) == fl(p_i / q_i)``, found
    by nudging ``p_i`` by ulps) and the mutant keeps ``g_j = r_j``, ``y_i = p_i``
    and restarts the flat density at ``j + 1`` from a recomputed ``cp`` that is
    not ``r_j`` in float: an extra tier of weight 0 in ``w_h`` (ranks 2, 1
    instead of 1, 0) and ``y_i`` 4.2e-17 from the kernel's ``fl(cp q_i)``.
    The float reference must
    equal the numba kernel bit for bit (the coins reference, the many-trial
    kernel and the torch form share these tables).
    """
    from spectheory.solvers._polymatroid_kernels import row_tables
    from spectheory.solvers.polymatroid import plan_python, plan_row

    p = np.array([0.21922855788130455, 0.16657632803317593, 0.0004879390251031204,
                  0.11833191182620512, 0.35046146209012896, 0.1448303639882524,
                  0.164165401219748])
    q = np.array([0.18087338170450257, 0.388984570829923, 0.21103037190263507,
                  8.268990245646575e-05, 0.14570465359539658, 0.00465527077123234,
                  0.06866906129385403])
    n = 3
    order, nT, R, _g, _y, _pos = row_tables(p, q, n)
    j = 5  # first H* position with the flat density: an exact tie in float
    P = sum(p[order[t]] for t in range(nT, j))
    assert nT == 4 and (R[nT] ** n - P) / R[j] == p[order[j]] / q[order[j]]
    ref, fast = plan_python(p, q, n), plan_row(p, q, n)
    assert np.array_equal(ref.order, fast.order) and np.array_equal(ref.rank, fast.rank)
    np.testing.assert_array_equal(ref.y, fast.y)
