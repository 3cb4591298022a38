"""Tests written against surviving mutants of the ``optimal`` verifier's code (mutation audit).

Each test names the mutant it kills and the code path it reaches.  The oracles
are the coins references (:func:`spectheory.verifiers.optimal.optimal`,
:func:`spectheory.verifiers.pair_scores.pair_scores`, run with ``ReplayCoins``),
exact Fractions, and the documented contracts of the plans.  Uniforms at the
edges of ``[0, 1)`` (``0.0`` and the largest double below 1) are legal draws that
random uniforms essentially never produce, so the compiled forms are replayed on
them by hand: a kernel that compares ``u <= prob`` where the reference compares
``u < prob`` differs only there.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

from spectheory.coins import ReplayCoins

#: The largest uniform, 1 - 2**-53.
U_TOP = np.nextafter(1.0, 0.0)
#: Hand-fed uniforms: both edges and the middle.
EDGES = (0.0, 0.5, U_TOP)
#: Small float rows with exact binary entries: ``p = 0`` on a drafted token (rows 1, 2), a
#: residual with zero mass at both ends (row 0, n = 2: token 0 first, token 3 last, and
#: a cumulative sum that ends at ``U_TOP``), and pairs whose selection weight is 0 or 1.
ROWS = (
    (np.array([17, 16, 19, 19]) / 71, np.array([18, 3, 1, 10]) / 32),
    (np.array([0, 6, 3, 1]) / 10, np.array([4, 1, 2, 1]) / 8),
    (np.array([3, 0, 1, 4]) / 8, np.array([1, 2, 4, 1]) / 8),
)


def _fractions(w):
    w = [int(x) for x in w]
    return np.array([F(x, sum(w)) for x in w], dtype=object)


@pytest.mark.parametrize("row", range(len(ROWS)))
@pytest.mark.parametrize("n", [2, 3])
def test_one_position_path_replays_the_reference_on_edge_uniforms(row, n):
    """``optimal_token`` (and ``run_optimal``) against the coins reference, every draft tuple,
    every uniform in {0, 1/2, U_TOP}^3.

    Kills, in ``sim/_optimal_kernel.optimal_token``: the accept test ``u[1] <= prob``
    (accepts a selected token of ``p = 0`` at ``u[1] = 0``); the residual's
    ``searchsorted(..., side="left")`` (at ``u[2] = 0`` it returns token 0, of residual mass
    0); the last-ulp fallback ``j = V - 1`` (at ``u[2] = U_TOP`` beyond the residual's
    rounded total it returns the trailing token of mass 0, where the reference returns
    the last token of positive mass).  The grid stays away from the mixture's merge times,
    where the hull path may differ from the reference within rounding (its docstring).
    """
    from spectheory.sim._optimal_kernel import optimal_token, run_optimal
    from spectheory.solvers.polymatroid import plan_row
    from spectheory.verifiers.optimal import optimal

    p, q = ROWS[row]
    pl = plan_row(p, q, n)
    merges = np.r_[np.cumsum(pl.w_top)[:-1], np.cumsum(pl.w_h)[:-1]]
    assert all(np.abs(merges - u).min(initial=1.0) > 1e-9 for u in EDGES)
    if row == 0 and n == 2:  # the residual: mass 0 on the first and the last token, and a
        # sum that ends at or below U_TOP (so U_TOP lies beyond it)
        assert pl.residual[0] == pl.residual[3] == 0 and np.cumsum(pl.residual)[-1] <= U_TOP
    tuples = [d for d in itertools.product(range(p.size), repeat=n) if (q[list(d)] > 0).all()]
    grid = list(itertools.product(EDGES, repeat=3))
    drafts = np.array([[d for d in tuples for _ in grid]], dtype=np.int64)
    u = np.array([[g for _ in tuples for g in grid]])
    kernel = run_optimal(p[None], q[None], drafts, u)[0]
    for t, (d, ut) in enumerate(zip(drafts[0], u[0])):
        want = optimal(p, q, tuple(int(x) for x in d), ReplayCoins(ut))
        assert p[want] > 0
        assert optimal_token(p, q, d, ut) == want, (d, ut)
        assert kernel[t] == want, (d, ut)


@pytest.mark.parametrize("row", range(len(ROWS)))
def test_pair_scores_kernel_replays_the_reference_on_edge_uniforms(row):
    """``run_pair_scores`` against ``pair_scores`` (coins), every ordered pair of distinct
    drafts, every uniform in {0, 1/2, U_TOP}^3.

    Kills, in ``sim/_pair_scores_kernel._trial``: the selection test ``u[0] <= weight``
    (at ``u[0] = 0`` it selects the first draft where its weight is 0: a draft outside
    ``T`` beside one inside, or a score gap of at least 1) and the accept test
    ``u[1] <= accept`` (at ``u[1] = 0`` it outputs a selected token of ``p = 0``).
    """
    from spectheory.sim._pair_scores_kernel import run_pair_scores
    from spectheory.verifiers.pair_scores import first_draft_weight, pair_scores, score_plan

    p, q = ROWS[row]
    pl = score_plan(p, q)
    pairs = list(itertools.permutations(range(p.size), 2))
    assert any(first_draft_weight(pl, a, b) == 0 for a, b in pairs)
    grid = list(itertools.product(EDGES, repeat=3))
    drafts = np.array([[d for d in pairs for _ in grid]], dtype=np.int64)
    u = np.array([[g for _ in pairs for g in grid]])
    kernel = run_pair_scores(p[None], q[None], drafts, u)[0]
    for t, (d, ut) in enumerate(zip(drafts[0], u[0])):
        want = pair_scores(p, q, (int(d[0]), int(d[1])), ReplayCoins(ut))
        assert p[want] > 0
        assert kernel[t] == want, (d, ut)


def test_a_draft_of_q_zero_before_a_draft_in_T_is_never_selected():
    """Unvalidated input (the bare verifier): a drafted token of ``q = 0`` is never selected.

    Kills, in ``verifiers/optimal.select``: the selection loop without its ``t >= 0``
    guard.  The q = 0 draft (position -1) comes first in draw order and the other draft
    lies in ``T``; the mutant then takes the range maximum of an empty slice of the ranks
    (ValueError) instead of passing over it.  Token 2 is ``T`` alone, so the T draft is
    selected whatever the component, and accepted (``p_2 > y_2``) at ``u[1] = 0``.
    """
    from spectheory.solvers.polymatroid import plan
    from spectheory.verifiers.optimal import optimal, select

    p = _fractions([1, 3, 6, 10])
    q = np.array([F(9, 20), F(9, 20), F(1, 10), F(0)], dtype=object)
    pl = plan(p, q, 2)
    assert pl.n_top == 1 and pl.pos[2] == 0 and pl.pos[3] == -1 and p[2] > pl.y[2]
    for drafts in ((3, 2), (2, 3)):
        assert select(pl, drafts, 0, True) == 2
        for u0 in EDGES:
            assert optimal(p, q, drafts, ReplayCoins([u0, 0.0, 0.5])) == 2


def test_exact_plan_residual_is_the_target_when_the_bound_is_one():
    """``p = q``: every selected draft is accepted (``y = p``, the bound is 1), so
    :math:`(p - y)_+` is 0 and the residual falls back to ``p`` (a law, exactly), as in the
    float kernel; it is drawn after the rejection of an unvalidated ``q = 0`` draft.

    Kills, in ``solvers/polymatroid.plan_python`` (the Fraction plan): the fallback
    ``excess`` (all zeros) for ``p.copy()``.
    """
    from spectheory.solvers.polymatroid import plan
    from spectheory.verifiers.optimal import optimal

    p = np.array([F(1, 2), F(1, 3), F(1, 6), F(0)], dtype=object)
    pl = plan(p, p.copy(), 2)
    assert pl.alpha == 1 and list(pl.y) == list(p)
    assert list(pl.residual) == list(p)
    # both drafts of q = 0 (unvalidated): nothing is selected, the residual is drawn
    assert optimal(p, p.copy(), (3, 3), ReplayCoins([0.5, 0.0, 0.6])) == 1


def test_float_plan_is_reached_only_to_1e_12(monkeypatch):
    """``reached`` (float rows): the selection acceptance equals the bound to 1e-12, no looser.

    The solver is made to stop short: its best scores are shrunk by a factor
    ``1 - 1e-9`` (the marginal recomputed there), which leaves about 1e-10 below the
    bound.  The plan must say so (``reached`` False, status ``"exact"``).  Kills, in
    ``solvers/pair_scores.pair_score_plan``: the float tolerance 1e-12 widened (1e-8).
    """
    import spectheory.solvers.pair_scores as ps

    solve = ps._solve_part

    def short_of_the_bound(q, e, base, p, sign):
        mu, _, short = solve(q, e, base, p, sign)
        mu = mu * (1 - 1e-9)
        return mu, ps._part_state(mu, q, e, base, p)[1], short

    p, q = ROWS[0]
    assert ps.pair_score_plan(p, q).reached
    monkeypatch.setattr(ps, "_solve_part", short_of_the_bound)
    plan = ps.pair_score_plan(p, q)
    assert 1e-11 < plan.bound - plan.alpha_value < 1e-9
    assert not plan.reached and plan.status == "exact"


def test_fraction_plan_is_reached_only_exactly(monkeypatch):
    """``reached`` (Fraction rows) means equal to the bound exactly, not to rounding.

    With the exact re-solve of the scores switched off, the float scores leave 7e-17
    below the bound on the three-token row no tier rule reaches (``TIERLESS`` of
    ``test_pair_scores``); the plan must not call that reached.  Kills, in
    ``solvers/pair_scores.pair_score_plan``: the exact test ``value == bound`` relaxed to
    ``value >= bound - 1e-12``; and the plan without its float candidate (only the exact
    re-solve kept), which has no rule at all when the re-solve finds none (TypeError).
    """
    import spectheory.solvers.pair_scores as ps

    p, q = _fractions([7, 8, 1]), _fractions([8, 5, 5])
    monkeypatch.setattr(ps, "_exact_scores", lambda *args: None)
    plan = ps.pair_score_plan(p, q)
    assert 0 < plan.bound - plan.alpha_value < F(1, 10**15)
    assert not plan.reached and plan.status == "exact"


def test_exact_rescoring_solver_refuses_an_inconsistent_system():
    """``_solve_exactly`` (the exact re-solve of the tight tokens' equations): None when the
    system has no solution, and free unknowns at their defaults when it is singular.

    Kills, in ``solvers/pair_scores._solve_exactly``: the inconsistency check dropped (the
    mutant returns a "solution" of ``x0 + x1 = 1, x0 + x1 = 2``).
    """
    from spectheory.solvers.pair_scores import _solve_exactly

    one = F(1)
    assert _solve_exactly([[one, one], [one, one]], [F(1), F(2)], [0.0, 0.0]) is None
    # x0 - x1 = 1 twice: x1 is free and keeps its default, x0 follows exactly
    x = _solve_exactly([[one, -one], [-one, one]], [F(1), F(-1)], [0.5, 0.25])
    assert x == [F(5, 4), F(1, 4)]


def test_conjugate_gradients_with_the_big_token_at_the_windows_edge():
    """The Hessian's pairs are those with ``|mu_a - mu_b| < 1`` (the window sums' test, and
    the dense Laplacian here): a token whose score is exactly 1 from the big token's
    (``q > 1/2``, kept out of the prefix sums and added on its own) is not its neighbour.

    Kills, in ``_pair_score_kernels.conjugate_gradients``: ``near_big`` by ``<= 1.0``.
    The existing dense-Hessian test draws normal scores, which never sit exactly on the
    edge; here the scores are quarters, several of them at distance exactly 1 from the
    big token.
    """
    from scipy.sparse.csgraph import connected_components

    from spectheory.solvers._pair_rows import inverse_rest
    from spectheory.solvers._pair_score_kernels import conjugate_gradients
    from spectheory.solvers.pair_scores import _hessian_weights, _Windows

    rng = np.random.default_rng(3)
    V = 16
    q = rng.dirichlet(np.ones(V))
    q[0] += 2.0
    q /= q.sum()
    e = inverse_rest(q)
    mu = np.round(4 * rng.uniform(-1.5, 1.5, V)) / 4
    mu[0] = 0.0
    mu[1:5] = [1.0, -1.0, 1.0, -1.0]  # at the big token's window edge
    win = _Windows(mu, q)
    assert win.big == 0
    M = q[:, None] * q[None, :] * (e[:, None] + e[None, :])
    inside = (np.abs(mu[:, None] - mu[None, :]) < 1) & ~np.eye(V, dtype=bool)
    L = np.where(inside, -0.5 * M, 0.0)
    L[np.diag_indices(V)] = -L.sum(axis=1)
    weight, diag = _hessian_weights(win, q, e)
    free = np.ones(V, dtype=bool)
    rhs = rng.standard_normal(V)
    # in the range of L: orthogonal to the constant on each connected block of the window graph
    _, label = connected_components(inside, directed=False)
    for c in np.unique(label):
        rhs[label == c] -= rhs[label == c].mean()
    x = conjugate_gradients(win.order, win.lo, win.hi, win.mu, win._big, q, e, weight,
                            diag, rhs, free, 1e-13, 10 * V)
    np.testing.assert_allclose(L @ x, rhs, rtol=0, atol=1e-10)


def test_float_reference_plan_equals_the_kernel_at_an_exact_flat_density_tie_in_T():
    """``plan_python``'s T density rule ``c >= r[j]`` (mutant: ``c > r[j]``), the twin of
    ``test_mutation_kills_solvers``' test on the H* side.

    On exact input the mutant is equivalent (at a tie ``c = r_j`` the next flat density is
    ``r_j`` again).  Here the tie is exact in float at the first T position past the
    flat part (``fl((f(T) - p(after)) / q(before)) == fl(p_i / q_i)``, found by nudging
    ``p_i`` by ulps, ``p`` renormalised on an H* token); the mutant goes on to the next
    position, whose recomputed density is not ``r_j`` in float, and its ``y`` leaves the
    kernel's by 5.6e-17.  The float reference must equal the numba kernel bit for bit.
    """
    from spectheory.solvers._polymatroid_kernels import _chord, row_tables
    from spectheory.solvers.polymatroid import plan_python, plan_row

    p = np.array([0.1378313759712723, 0.058869332394765106, 0.21225542630950922,
                  0.1568374278608189, 0.4342064374636345])
    q = np.array([0.07876592105294647, 0.024716497060801795, 0.14872691065233584,
                  0.5827116145637885, 0.16507905667012746])
    n = 3
    order, nT, R, *_ = row_tables(p, q, n)
    fT = q[order[:nT]].sum() * _chord(1.0, R[nT], n)
    j = 1  # the tie: the flat density of the first j tokens equals r_j
    assert nT == 4 and (fT - p[order[j:nT]].sum()) / q[order[0]] == p[order[j]] / q[order[j]]
    ref, fast = plan_python(p, q, n), plan_row(p, q, n)
    assert np.array_equal(ref.order, fast.order) and np.array_equal(ref.rank, fast.rank)
    np.testing.assert_array_equal(ref.y, fast.y)


def test_one_position_path_at_an_exact_merge_time():
    """``optimal_token`` with ``u[0]`` exactly at a merge time of the mixture, with no rounding
    anywhere: the row's entries are binary fractions and the H* segment's two components
    have weights 1/2 and 1/2 exactly (the Fraction plan), so the tiers merge at ``W = 1/2``.
    There the reference draws the component after the merge (``u < cum[k]``, strict), in
    which the tiers are one; the hull's lines meet exactly (``sl[top] == sb``) and must be
    merged too.  The docstring's caveat (merge times within rounding of ``u[0]``) does not
    apply: every quantity is exact.

    Kills, in ``sim/_optimal_kernel._hull_end``: the merge test ``sl[top] < sb`` (for
    ``<=``), which keeps the two tiers apart at the merge time and selects draft 1 from
    the drafts (2, 1), where the reference selects 2.
    """
    from spectheory.sim._optimal_kernel import optimal_token
    from spectheory.solvers.polymatroid import plan
    from spectheory.verifiers.optimal import optimal

    pw, qw = [12, 1, 1, 2], [5, 1, 4, 6]
    p, q = np.array(pw) / 16, np.array(qw) / 16
    pf, qf = _fractions(pw), _fractions(qw)
    exact = plan(pf, qf, 2)
    assert list(exact.w_h) == [F(1, 2), F(1, 2)]
    for d in itertools.product(range(4), repeat=2):
        want = optimal(pf, qf, d, ReplayCoins([F(1, 2), F(0), F(1, 2)]))
        u = np.array([0.5, 0.0, 0.5])
        assert optimal(p, q, d, ReplayCoins(u)) == want, d
        assert optimal_token(p, q, np.array(d), u) == want, d


def test_one_position_path_rejects_where_rounding_leaves_no_residual_mass():
    """A float row on which the marginal ``y`` rounds to at least ``p`` on every token (``q``
    equal to ``p`` up to 1e-15, three drafts): :math:`(p - y)_+` is 0 everywhere, yet
    ``p_x / y_x`` lies below the top uniform on some tokens, so ``u[1] = U_TOP`` rejects
    them and the residual is drawn from its fallback, ``p`` (the plan's residual).

    Kills, in ``sim/_optimal_kernel.optimal_token``: the fallback law ``excess`` (all
    zeros) for ``p``; the mutant finds no token of positive mass and raises IndexError.
    """
    from spectheory.sim._optimal_kernel import optimal_token, run_optimal
    from spectheory.solvers.polymatroid import plan_row
    from spectheory.verifiers.optimal import optimal

    p = np.array([0.21922855788130455, 0.004258727363580647, 0.0004879390251031204,
                  0.11833191182620512, 0.35046146209012896, 0.1448303639882524,
                  0.16240103782542514])
    q = np.array([0.21922855788130458, 0.004258727363580648, 0.00048793902510312043,
                  0.11833191182620513, 0.350461462090129, 0.14483036398825241,
                  0.16240103782542517])
    n = 3
    pl = plan_row(p, q, n)
    assert not (p > pl.y).any() and (p / pl.y < U_TOP).any()
    np.testing.assert_array_equal(pl.residual, p)
    cases = [((x,) * n, (0.5, U_TOP, u2)) for x in range(p.size) for u2 in EDGES]
    drafts = np.array([[d for d, _ in cases]], dtype=np.int64)
    u = np.array([[ut for _, ut in cases]])
    kernel = run_optimal(p[None], q[None], drafts, u)[0]
    for t, (d, ut) in enumerate(cases):
        want = optimal(p, q, d, ReplayCoins(ut))
        assert kernel[t] == want
        assert optimal_token(p, q, np.array(d), np.array(ut)) == want, (d, ut)


def test_kernel_rejects_when_no_draft_has_positive_probability():
    """Unvalidated input (the bare kernel; the public ``run_optimal`` refuses such drafts):
    drafts that all have ``q = 0`` select nothing, so the trial rejects and draws the
    residual with ``u[2]``, as the coins reference does.

    Kills, in ``sim/_optimal_kernel._trial``: the no-selection branch returning the first
    draft (a token of ``q = 0``) instead of the residual draw.
    """
    from spectheory.sim._optimal_kernel import run_optimal_checked
    from spectheory.verifiers.optimal import optimal

    p = np.array([1, 3, 6, 0]) / 10  # token 3: q = 0 and p = 0, so no residual mass either
    q = np.array([9, 9, 2, 0]) / 20
    cases = [((3, 3), (u0, u1, u2)) for u0 in EDGES for u1 in EDGES for u2 in (0.0, 0.3, 0.9)]
    drafts = np.array([[d for d, _ in cases]], dtype=np.int64)
    u = np.array([[ut for _, ut in cases]])
    kernel = run_optimal_checked(p[None], q[None], drafts, u)[0]
    for t, (d, ut) in enumerate(cases):
        want = optimal(p, q, d, ReplayCoins(ut))
        assert want != 3 and kernel[t] == want, (d, ut)


def test_window_sums_with_the_big_token_at_the_windows_edge():
    """The window sums and the dual's pair terms on a row with a token of ``q > 1/2`` (added
    on its own, outside the prefix sums) and half-integer scores, so that tokens sit at
    distance exactly 1 below and above the big token's score.  The existing bit-for-bit
    rows have either a big token (normal scores) or integer or quarter scores, never both.

    Oracles: the sums over the pairs themselves (``below``: ``gap >= 1``, ``above``:
    ``gap <= -1``), and the numpy expressions of the dual (``_part_state_numpy``, bit for
    bit).  Kills, in ``_pair_score_kernels``: ``window_sums``' big-token ``above`` test
    ``gap < -1.0`` (for ``<=``; the big token's term is then in no sum at the edge) and
    the same in ``_window_moments_at``'s first moment above (the dual's value moves).
    """
    from spectheory.solvers._pair_rows import inverse_rest
    from spectheory.solvers.pair_scores import _part_state, _part_state_numpy, _Windows

    rng = np.random.default_rng(8)
    V = 24
    q = rng.dirichlet(np.full(V, 0.5))
    q[0] += 2.0
    q /= q.sum()
    mu = np.round(2 * rng.normal(0.0, 1.5, V)) / 2
    mu[0] = 0.5  # not 0: the first moments carry the big token's own score
    mu[1:5] = [1.5, -0.5, 2.5, -1.5]  # at the big token's window edge, and beyond it
    w = rng.random(V)
    win = _Windows(mu, q)
    assert win.big == 0
    gap = mu[:, None] - mu[None, :]
    off = ~np.eye(V, dtype=bool)
    for k in (0, 1, 2):
        wk = w * mu**k
        want = (((gap >= 1) & off) @ wk, ((np.abs(gap) < 1) & off) @ wk,
                ((gap <= -1) & off) @ wk)
        for got, ref in zip(win.sums(w, k), want):
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12 * np.abs(wk).sum())
    e = inverse_rest(q)
    base, p = 1e-3 * rng.random(V), rng.dirichlet(np.ones(V))
    value, y, _ = _part_state(mu, q, e, base, p)
    value_np, y_np, _ = _part_state_numpy(mu, q, e, base, p)
    assert np.array_equal(y, y_np) and value == value_np


#: A four-token row the pair-tier search reaches exactly (its coins re-solved in Fractions),
#: and whose float coins, taken as exact fractions, leave about 2e-17 below the bound.
TIER_ROW = ([3, 5, 4, 5], [3, 5, 6, 4])


def test_pair_tier_float_plan_is_reached_only_to_1e_12(monkeypatch):
    """``pair_tier_plan``'s ``reached`` (float rows): to 1e-12, no looser.

    The search is made to stop short: its coins are shrunk by ``1 - 1e-9``, which leaves
    about 7e-11 below the bound; the plan must say so.  Kills, in
    ``solvers/pair_tiers.pair_tier_plan``: the float tolerance 1e-12 widened (1e-6).
    """
    import spectheory.solvers.pair_tiers as pt

    p, q = (np.array(w, dtype=np.float64) / sum(w) for w in TIER_ROW)
    assert pt.pair_tier_plan(p, q).reached
    blocks = pt._blocks

    def short_of_the_bound(*args, **kwargs):
        tiers, missed = blocks(*args, **kwargs)
        return [(block, np.asarray(a) * (1 - 1e-9)) for block, a in tiers], missed

    monkeypatch.setattr(pt, "_blocks", short_of_the_bound)
    plan = pt.pair_tier_plan(p, q)
    assert 1e-11 < plan.bound - plan.alpha_value < 1e-9
    assert not plan.reached and plan.status == "exact"


def test_pair_tier_fraction_plan_is_reached_only_exactly(monkeypatch):
    """``pair_tier_plan``'s ``reached`` (Fraction rows) means equal to the bound exactly.

    With the exact re-solve of the coins switched off, the float coins leave a gap of
    rounding size (below 1e-15); the plan must not call that reached.  Kills, in
    ``solvers/pair_tiers.pair_tier_plan``: the exact test ``value == bound`` replaced by the
    float one (``abs(value - bound) <= 1e-12``).
    """
    import spectheory.solvers.pair_tiers as pt

    p, q = (_fractions(w) for w in TIER_ROW)
    plan = pt.pair_tier_plan(p, q)
    assert plan.reached and plan.alpha_value == plan.bound  # positive control
    monkeypatch.setattr(pt, "_exact_tier_coins", lambda *args: None)
    plan = pt.pair_tier_plan(p, q)
    assert 0 < plan.bound - plan.alpha_value < F(1, 10**15)
    assert not plan.reached and plan.status == "exact"


def _tier_rule_acceptance(p, q, tier, coin):
    """sum_a min(p_a, y_a) of a tier rule, by enumerating the ordered pairs (a, b) of two
    drafts without replacement, P = q_a q_b / (1 - q_a): the lower tier's draft, within a
    tier ``a`` with probability ``coin[a]`` (independent of ``pair_marginal``)."""
    V = len(q)
    y = [0.0] * V
    for a, b in itertools.permutations(range(V), 2):
        if q[a] == 0 or q[b] == 0:
            continue
        pair = q[a] * q[b] / (1 - q[a])
        w = 1 if tier[a] < tier[b] else 0 if tier[a] > tier[b] else coin[a]
        y[a] += pair * w
        y[b] += pair * (1 - w)
    return sum(min(x, z) for x, z in zip(p, y))


def test_pair_tier_plan_keeps_the_better_rule_when_its_search_misses():
    """Where the tier search misses its bounds, the plan weighs its rule against the plain
    one (T before H*, the first draft within each) and keeps the one that accepts more.

    On the three-token row no tier rule reaches (``test_pair_scores``' TIERLESS, bound 1,
    H* empty; float rows, whose coins are not re-solved in Fractions, so the two
    candidates differ) the searched rule, with its coins, accepts more than every tiering
    with first-draft coins (the plain rule among them), each enumerated here.  Kills, in
    ``solvers/pair_tiers.pair_tier_plan``: the comparison that keeps the better candidate
    reversed (the plain rule kept, 0.78 against the search's 0.97).
    """
    from spectheory.solvers.pair_tiers import pair_tier_plan

    p, q = np.array([7, 8, 1]) / 16, np.array([8, 5, 5]) / 18
    plan = pair_tier_plan(p, q)
    assert not plan.reached and abs(plan.bound - 1) < 1e-12
    assert abs(plan.alpha_value - _tier_rule_acceptance(p, q, plan.tier, plan.alpha)) < 1e-12
    best_plain = max(_tier_rule_acceptance(p, q, t, np.ones(3))
                     for t in itertools.product(range(3), repeat=3))
    assert plan.alpha_value > best_plain + 0.05  # 0.968 against 0.893
