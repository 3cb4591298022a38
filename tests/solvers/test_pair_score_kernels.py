"""The compiled window sums of the pair-score solver against their numpy expressions.

:mod:`spectheory.solvers._pair_score_kernels` claims the same floating-point
operations in the same order as the numpy expressions it replaced, so the sums
and the window bounds must be equal bit for bit (``np.array_equal``, not a
tolerance), on rows with ties, scores on the window's edges (integer and quarter
scores), and a token of draft mass above 1/2 (kept out of the prefix sums).  The
conjugate gradients are checked against a dense solve of the Hessian built pair
by pair (:math:`O(V^2)`, small ``V``).
"""

from __future__ import annotations

import numpy as np
import pytest

from spectheory.solvers._pair_rows import inverse_rest
from spectheory.solvers._pair_score_kernels import conjugate_gradients, window_moments
from spectheory.solvers.pair_scores import _hessian_weights, _Windows, score_order


def _rows(V, seed):
    rng = np.random.default_rng(seed)
    for kind in ("plain", "big", "integers", "quarters"):
        q = rng.dirichlet(np.full(V, 0.3))
        if kind == "big":
            q[0] += 4.0
            q /= q.sum()
        mu = rng.normal(0.0, 2.0, V)
        if kind == "integers":
            mu = np.round(mu)
        elif kind == "quarters":
            mu = np.round(4 * mu) / 4
        yield kind, q, mu, rng.random(V)


@pytest.mark.parametrize("V", [1, 2, 3, 17, 1000, 49_152])
def test_window_sums_and_bounds_equal_numpy_bit_for_bit(V):
    for kind, q, mu, w in _rows(V, V):
        win = _Windows(mu, q)
        lo = np.searchsorted(win.m, win.m - 1.0, side="right")
        hi = np.searchsorted(win.m, win.m + 1.0, side="left")
        want_lo, want_hi = np.empty_like(lo), np.empty_like(hi)
        want_lo[win.order], want_hi[win.order] = lo, hi
        assert np.array_equal(win.lo, want_lo) and np.array_equal(win.hi, want_hi), kind
        for k in (0, 1, 2):
            for got, want in zip(win.sums(w, k), win.sums_numpy(w, k)):
                assert np.array_equal(got, want), (kind, k)
        moments = window_moments(win.order, win.m, win.lo, win.hi, win.mu, w, win._big)
        want = (*win.sums_numpy(w), *win.sums_numpy(w, 1)[1:], win.sums_numpy(w, 2)[1])
        for got, ref in zip(moments, want):
            assert np.array_equal(got, ref), kind


@pytest.mark.parametrize("V", [1, 2, 5, 1000])
def test_score_order_sorts_and_keeps_the_zeros_in_token_order(V):
    """``score_order`` sorts only the nonzero scores: the sorted scores must be
    ``np.sort``'s, every token must appear once, and the zero block (``-0.0`` included)
    must come in token order, between the negative and the positive scores."""
    rng = np.random.default_rng(V)
    for share in (0.0, 0.05, 0.5, 1.0):
        for sign in (-1.0, 1.0, None):
            mu = rng.normal(0.0, 2.0, V)
            mu = np.abs(mu) * sign if sign is not None else mu
            mu[rng.random(V) >= share] = 0.0
            mu[rng.random(V) < 0.1] = -0.0
            mu[rng.random(V) < 0.1] = 1.5  # tied nonzero scores
            order = score_order(mu)
            assert np.array_equal(np.sort(order), np.arange(V))
            assert np.array_equal(mu[order], np.sort(mu))
            zeros = order[mu[order] == 0]
            assert np.array_equal(zeros, np.flatnonzero(mu == 0))


def test_window_sums_are_the_pair_sums():
    """The window sums against the sums over pairs themselves (float, O(V^2))."""
    for kind, q, mu, w in _rows(40, 3):
        win = _Windows(mu, q)
        assert (win.big is not None) == (kind == "big")
        gap = mu[:, None] - mu[None, :]
        off = ~np.eye(mu.size, dtype=bool)
        for k in (0, 1, 2):
            wk = w * mu**k
            below = ((gap >= 1) & off) @ wk
            window = ((np.abs(gap) < 1) & off) @ wk
            above = ((gap <= -1) & off) @ wk
            for got, want in zip(win.sums(w, k), (below, window, above)):
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(wk).sum())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["plain", "big", "zeros"])
@pytest.mark.parametrize("share_free", [0.8, 0.3])
def test_conjugate_gradients_solve_the_dense_hessian(seed, kind, share_free):
    """H = the Laplacian of the pairs within the window, weights M_ab / 2; CG on the free
    tokens must solve H x = rhs there (H is singular on a connected block: compare H x).
    The iteration runs on the free tokens alone, so the fixed ones, a token of mass above
    1/2 (``big``) and a block of scores at 0 (``zeros``, as at the solver's bound) must
    change nothing."""
    rng = np.random.default_rng(seed)
    V = 30
    q = rng.dirichlet(np.full(V, 0.5))
    if kind == "big":
        q[0] += 2.0
        q /= q.sum()
    e = inverse_rest(q)
    mu = rng.normal(0.0, 0.6, V)
    if kind == "zeros":
        mu[rng.random(V) < 0.5] = 0.0
    win = _Windows(mu, q)
    M = q[:, None] * q[None, :] * (e[:, None] + e[None, :])
    inside = (np.abs(mu[:, None] - mu[None, :]) < 1) & ~np.eye(V, dtype=bool)
    L = np.where(inside, -0.5 * M, 0.0)
    L[np.diag_indices(V)] = -L.sum(axis=1)
    weight, diag = _hessian_weights(win, q, e)
    np.testing.assert_allclose(diag, np.diag(L), rtol=1e-12, atol=0)
    free = rng.random(V) < share_free
    free[0] = seed < 2  # the big token free, then fixed
    rhs = np.where(free, rng.standard_normal(V), 0.0)
    rhs[free] -= rhs[free].mean()  # in the range of a connected block's Laplacian
    x = conjugate_gradients(win.order, win.lo, win.hi, win.mu, win._big, q, e, weight,
                            diag, rhs, free, 1e-13, 10 * V)
    assert np.all(x[~free] == 0.0)
    Lf = L[np.ix_(free, free)]
    np.testing.assert_allclose(Lf @ x[free], rhs[free], rtol=0, atol=1e-10)


@pytest.mark.parametrize("V", [2, 3, 50, 49_152])
def test_part_state_equals_the_numpy_expressions_bit_for_bit(V):
    """The compiled dual and marginal (``part_dual``) against the numpy expressions over
    the numpy window sums: the same bits, the dual's value included."""
    from spectheory.solvers.pair_scores import _part_state, _part_state_numpy

    rng = np.random.default_rng(V + 1)
    for kind, q, mu, _ in _rows(V, V + 2):
        e = inverse_rest(q)
        base, p = 1e-3 * rng.random(V), rng.dirichlet(np.ones(V))
        value, y, win = _part_state(mu, q, e, base, p)
        value_np, y_np, _ = _part_state_numpy(mu, q, e, base, p)
        assert np.array_equal(y, y_np) and value == value_np, kind
        # the Hessian's weights the dual pass leaves behind = the window sums' own
        for got, want in zip(_hessian_weights(win, q, e), _hessian_weights(_Windows(mu, q), q, e)):
            assert np.array_equal(got, want), kind


def test_plan_marginal_is_the_marginal_function_bit_for_bit():
    """The plan keeps the marginal its solve computed at the best scores; it must be what
    ``pair_score_marginal`` (tested against Fraction pair sums) gives for the plan's scores,
    bit for bit, also with tokens of q = 0 and parts of one token."""
    from spectheory.solvers.pair_scores import pair_score_marginal, pair_score_plan

    rng = np.random.default_rng(11)
    checked = 0
    for V in rng.integers(2, 9, 150):
        p, q = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
        if rng.random() < 0.3:
            q[rng.integers(V)] = 0.0
            q /= q.sum()
        if np.count_nonzero(q) < 2:
            continue
        plan = pair_score_plan(p, q)
        assert np.array_equal(plan.y, pair_score_marginal(q, plan.preferred, plan.mu))
        assert plan.reached
        checked += 1
    assert checked > 100
