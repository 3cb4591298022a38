"""``pair_scores``: the window-sum marginal, exact losslessness, and reaching the bound.

Oracles: the pair sum itself in Fractions and exact enumeration of every ordered
draw (:func:`spectheory.exact.exact_row`, ``ordered_draft_law``), the bound
without replacement by enumeration over draft sets and by HiGHS
(:func:`spectheory.solve_bound`), an exhaustive search over tier rules (HiGHS
over the coins of every tiering), and ``check_lossless`` at V = 49,152 with its
stated false-alarm rate.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from scipy.optimize import linprog

from spectheory._errors import InvalidDistributionError, InvalidParameterError
from spectheory.exact import exact_row
from spectheory.exact._tuples import ordered_draft_law
from spectheory.solvers.ot_dual import bound, solve_bound
from spectheory.solvers.pair_scores import pair_score_marginal, pair_score_plan, ramp
from spectheory.solvers.pair_tiers import pair_tier_plan
from spectheory.verifiers.pair_scores import pair_scores

from ._rows import peaked_pair

WOR = "without_replacement"
#: Three tokens where no tier rule reaches the bound (1: every output can be a draft).
TIERLESS_P, TIERLESS_Q = [7, 8, 1], [8, 5, 5]


def _fractions(w):
    w = [int(x) for x in w]
    return np.array([F(x, sum(w)) for x in w], dtype=object)


def _marginal_by_enumeration(q, preferred, mu):
    """P(selected = a), summing the rule over every ordered pair without replacement."""
    y = np.array([F(0)] * len(q), dtype=object)
    for (a, b), prob in ordered_draft_law(q, 2, WOR):
        if preferred[a] != preferred[b]:
            y[a if preferred[a] else b] += prob
        else:
            share = ramp(mu[a] - mu[b])
            y[a] += prob * share
            y[b] += prob * (1 - share)
    return y


@pytest.mark.parametrize("seed", range(5))
def test_exact_marginal_equals_enumeration(seed):
    rng = np.random.default_rng(seed)
    V = int(rng.integers(2, 7))
    q = _fractions(rng.integers(1, 9, V))
    preferred = rng.random(V) < 0.4
    mu = np.array([F(int(k), 3) for k in rng.integers(-5, 6, V)], dtype=object)
    assert list(pair_score_marginal(q, preferred, mu)) == list(
        _marginal_by_enumeration(q, preferred, mu)
    )


@pytest.mark.parametrize("seed", range(4))
def test_window_sums_equal_the_pair_sum(seed):
    """The O(V log V) float marginal against the O(V^2) pair sum on the same (exact) inputs."""
    rng = np.random.default_rng(seed)
    V = 40
    q = rng.dirichlet(np.full(V, 0.5))
    preferred = rng.random(V) < 0.3
    mu = rng.normal(size=V) * 2 * (rng.random(V) < 0.7)  # ties at 0, gaps inside and out
    exact = pair_score_marginal(np.array([F(x) for x in q], dtype=object), preferred,
                                np.array([F(x) for x in mu], dtype=object))
    np.testing.assert_allclose(pair_score_marginal(q, preferred, mu), exact.astype(float),
                               rtol=0, atol=1e-15)


@pytest.mark.parametrize("top", [1 - 1e-5, 1 - 1e-9])
def test_window_sums_keep_their_digits_for_a_peaked_draft(top):
    """A draft with q_max = 1 - 1e-5 (or 1e-9): e_a = 1/(1 - q_a) is large, so 1 - q_a, or a
    prefix sum holding q_a, would lose 5 (9) digits of the marginal; the float marginal
    must still match the Fraction pair sum on the same floats to 1e-15 relative."""
    rng = np.random.default_rng(5)
    V = 30
    rest = rng.dirichlet(np.full(V - 1, 0.5)) * (1 - top)
    q = np.r_[top, rest]
    preferred = rng.random(V) < 0.3
    preferred[0] = False
    mu = rng.normal(size=V) * 1.5 * (rng.random(V) < 0.7)
    exact = pair_score_marginal(np.array([F(x) for x in q], dtype=object), preferred,
                                np.array([F(x) for x in mu], dtype=object)).astype(float)
    np.testing.assert_allclose(pair_score_marginal(q, preferred, mu), exact, rtol=1e-14,
                               atol=1e-300)


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_law_is_p_and_the_bound_is_reached_exactly(seed):
    rng = np.random.default_rng(seed)
    for _ in range(8):
        V = int(rng.integers(3, 6))
        p = _fractions(rng.integers(0, 6, V) + (np.arange(V) == 0))
        q = _fractions(rng.integers(1, 7, V))
        law, acc = exact_row(pair_scores, p, q, 2, WOR)
        assert list(law) == list(p)
        hi = solve_bound(p, q, 2, WOR, method="enumerate").exact_value
        plan = pair_score_plan(p, q)
        assert plan.reached and plan.alpha_value == hi == acc


@pytest.mark.parametrize(("wp", "wq"), [([0, 0, 4, 5], [1, 0, 4, 5]), ([5, 0, 6], [5, 1, 5])])
def test_exact_rescoring_of_rows_the_random_profile_found(wp, wq):
    """Shrunk failures of the thorough hypothesis profile, frozen: a tight token whose pairs
    all lie outside the window (its equation names no score), and a part whose tokens are
    all tight (only score differences are fixed, a singular system).  Both reach the bound,
    1, exactly."""
    p, q = _fractions(wp), _fractions(wq)
    plan = pair_score_plan(p, q)
    assert plan.reached and plan.alpha_value == plan.bound == 1
    law, acc = exact_row(pair_scores, p, q, 2, WOR)
    assert list(law) == list(p) and acc == 1


def test_instance_a_reaches_the_bound_exactly():
    """docs/theory.md §8.1, instance A, n = 2 without replacement: 139/140 (RRS: 7/8)."""
    p, q = _fractions([3, 4, 3]), _fractions([6, 3, 1])
    assert pair_score_plan(p, q).alpha_value == F(139, 140)
    assert exact_row(pair_scores, p, q, 2, WOR)[1] == F(139, 140)


def _ordered_partitions(items):
    if not items:
        yield []
        return
    for mask in range(1, 1 << len(items)):
        first = [x for i, x in enumerate(items) if mask >> i & 1]
        rest = [x for i, x in enumerate(items) if not mask >> i & 1]
        for tail in _ordered_partitions(rest):
            yield [first, *tail]


def _some_tier_rule_reaches(p, q, in_h):
    """Exhaustive: every tiering (T's tiers first) with HiGHS over its coins; the marginal
    is linear in the coins once the tiers are fixed (docs/theory.md §3.14)."""
    e = 1 / (1 - q)
    top = [a for a in range(q.size) if not in_h[a]]
    low = [a for a in range(q.size) if in_h[a]]
    for tiers in (t + h for t in _ordered_partitions(top) for h in _ordered_partitions(low)):
        A, b = np.zeros((q.size, q.size)), np.zeros(q.size)
        for k, G in enumerate(tiers):
            L = [x for T in tiers[k + 1:] for x in T]
            for a in G:
                b[a] = q[a] * (e[a] * q[L].sum() + (q * e)[L].sum() + (q * e)[G].sum()
                               - q[a] * e[a])
                A[a, a] += q[a] * e[a] * q[G].sum()
                A[a, G] -= q[a] * q[G] * e[G]
        sign = np.where(in_h, -1.0, 1.0)  # y <= p on T, y >= p on H*
        res = linprog(np.zeros(q.size), A_ub=sign[:, None] * A, b_ub=sign * (p - b) + 1e-12,
                      bounds=[(0, 1)] * q.size, method="highs")
        if res.status == 0:
            return True
    return False


def test_a_row_no_tier_rule_reaches_is_reached_by_the_ramp():
    """Three tokens where every tier rule, with any coins, stays below the bound (so the
    tiers of pair_tiers are not enough), while the ramp rule reaches it exactly."""
    def dual_set(pf, qf):
        return np.asarray(solve_bound(pf, qf, 2, WOR).certificate, dtype=bool).reshape(-1)

    # Positive control: the search finds the tiering that reaches instance A's bound.
    pa, qa = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    assert _some_tier_rule_reaches(pa, qa, dual_set(pa, qa))
    p, q = _fractions(TIERLESS_P), _fractions(TIERLESS_Q)
    pf, qf = p.astype(float), q.astype(float)
    assert not _some_tier_rule_reaches(pf, qf, dual_set(pf, qf))
    assert not pair_tier_plan(p, q).reached
    plan = pair_score_plan(p, q)
    assert plan.reached and plan.bound == 1
    law, acc = exact_row(pair_scores, p, q, 2, WOR)
    assert list(law) == list(p) and acc == 1


def test_every_random_row_reaches_the_lp_bound():
    """Float rows, V = 3..8: the plan reaches HiGHS's optimum to 1e-9 on every one (the tier
    rules reach about 93% of such rows)."""
    rng = np.random.default_rng(4)
    for _ in range(120):
        V = int(rng.integers(3, 9))
        p, q = rng.dirichlet(np.full(V, 0.6)), rng.dirichlet(np.full(V, 0.6))
        plan = pair_score_plan(p, q)
        lp = solve_bound(p, q, 2, WOR, method="lp").value
        assert plan.reached, plan.message
        assert abs(plan.alpha_value - lp) < 1e-9


def test_a_dominant_token_at_its_window_edge_is_reached_at_full_vocabulary():
    """V = 49,152 with one token of mass about 0.9997 in both laws (as on the trace's
    quantised rows).  Newton's step carries the dominant token's score just past the
    window's edge with the block of tokens pinned at 0, where the Hessian's model ends;
    the shortfall falls by a fifth there and the dual changes below its rounding, and a
    line search that asked for half the shortfall or a dual decrease stalled 6.9e-10
    below the bound on this row.  It must reach ``bound`` (computed apart from the plan)
    to 1e-12."""
    from spectheory.distributions import process_logits

    rng = np.random.default_rng(14)
    target = rng.normal(0.0, 2.5, 49_152)
    target[0] = 22.0
    draft = target + rng.normal(0.0, 1.6, target.size)
    p, q = process_logits(target[None], 1.0)[0], process_logits(draft[None], 1.0)[0]
    plan = pair_score_plan(p, q)
    assert plan.reached, plan.message
    assert abs(plan.alpha_value - bound(p, q, 2, WOR)) <= 1e-12


def test_check_lossless_and_the_bound_at_full_vocabulary():
    """V = 49,152: the plan reaches the bound; check_lossless (false-alarm rate 1e-6) finds
    no loss, and the Monte Carlo acceptance is within 5 standard errors of the bound (0.5 /
    sqrt(trials) bounds the standard error, so the false-alarm rate is below 6e-7)."""
    from spectheory.sim.check import check_lossless

    p, q = peaked_pair(49_152, seed=17)
    p, q = p[0], q[0]
    plan = pair_score_plan(p, q)
    assert plan.reached, plan.message
    assert plan.bound == pytest.approx(bound(p, q, 2, WOR), abs=1e-15)
    trials = 3000
    report = check_lossless(pair_scores, p, q, n=2, sampling=WOR, trials=trials, rng=1)
    assert not report.lossy and not report.exceeds_bound
    assert abs(report.acceptance - plan.bound) <= 5 * 0.5 / np.sqrt(trials)


def test_bad_input_is_refused_by_name():
    from spectheory.coins import ReplayCoins

    p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    with pytest.raises(InvalidParameterError, match=r"n=3, sampling='without_replacement'"):
        pair_scores(p, q, (0, 1, 2), ReplayCoins([0.5] * 4))
    with pytest.raises(InvalidParameterError, match=r"n=2, sampling='iid'"):
        pair_scores(p, q, (0, 1), ReplayCoins([0.5] * 4), sampling="iid")
    with pytest.raises(InvalidParameterError, match="at least two tokens; q has 1"):
        pair_score_plan(p, np.array([1.0, 0.0, 0.0]))
    with pytest.raises(InvalidParameterError, match="one row"):
        pair_score_plan(np.tile(p, (2, 1)), np.tile(q, (2, 1)))
    with pytest.raises(InvalidDistributionError, match="draft has a negative entry"):
        pair_score_plan(p, np.array([-0.1, 0.5, 0.6]))


def test_plan_sees_the_rows_simulate_sees():
    """A row off by 1e-10 in sum gets exactly the plan of its renormalised row."""
    from spectheory._validate import as_distribution_pair

    rng = np.random.default_rng(2)
    p, q = rng.dirichlet(np.ones(30)), rng.dirichlet(np.ones(30))
    P, Q, _ = as_distribution_pair(p * (1 + 1e-10), q)
    off, clean = pair_score_plan(p * (1 + 1e-10), q), pair_score_plan(P[0], Q[0])
    assert off.alpha_value == clean.alpha_value
    np.testing.assert_array_equal(off.y, clean.y)


def test_a_part_of_one_token_needs_no_score():
    """q uniform on three tokens, p = (1, 1, 8)/10: the needy token is T alone (preferred,
    y <= p), so no pair lies inside T; its score stays 0 and the rule still reaches the
    bound exactly."""
    p, q = _fractions([1, 1, 8]), _fractions([1, 1, 1])
    plan = pair_score_plan(p, q)
    assert list(plan.preferred) == [False, False, True] and plan.mu[2] == 0
    law, acc = exact_row(pair_scores, p, q, 2, WOR)
    assert list(law) == list(p) and acc == plan.bound == plan.alpha_value


def test_batched_forms_refuse_other_than_two_drafts_without_validation():
    """The numba kernel and the torch form, called bare, refuse n != 2 by name: neither may
    verify on the first two drafts of three (the validating entry points refuse it first)."""
    torch = pytest.importorskip("torch")
    from spectheory.sim._pair_scores_kernel import run_pair_scores
    from spectheory.torch._pair_scores import pair_scores_torch

    p = np.full((1, 4), 0.25)
    with pytest.raises(InvalidParameterError, match="got n=3"):
        run_pair_scores(p, p, np.zeros((1, 1, 3), dtype=np.int64), np.zeros((1, 1, 3)))
    tp = torch.from_numpy(p)
    with pytest.raises(InvalidParameterError, match="got n=3"):
        pair_scores_torch(tp, tp, torch.tensor([[0, 1, 2]]), torch.zeros(1, 3, dtype=torch.float64))


def test_a_batch_on_threads_gets_each_rows_own_plan(monkeypatch):
    """``score_plans`` spreads a batch's rows over threads: every plan must equal the row's
    plan solved alone, to the bit, in row order, and a bad row must still be refused by
    name (the worker's error reaches the caller)."""
    import importlib

    import numba

    # the module (the package's attribute of that name is the verifier function)
    vps = importlib.import_module("spectheory.verifiers.pair_scores")
    rng = np.random.default_rng(5)
    V, B = 3000, 6
    p = rng.dirichlet(np.full(V, 0.2), size=B)
    q = rng.dirichlet(np.full(V, 0.2), size=B)
    alone = [pair_score_plan(p[b], q[b]) for b in range(B)]
    cache_mod = importlib.import_module("spectheory.verifiers._plan_cache")
    monkeypatch.setattr(cache_mod, "run_parallel", lambda entries, rows: True)
    monkeypatch.setattr(numba, "get_num_threads", lambda: 2)
    vps.clear_score_plan_cache()
    pooled = vps.score_plans(p, q)
    for a, b in zip(alone, pooled):
        for field in ("preferred", "mu", "y", "residual"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        assert a.alpha_value == b.alpha_value and a.reached == b.reached
    bad = q.copy()
    bad[3] = 0.0
    bad[3, 7] = 1.0
    vps.clear_score_plan_cache()
    with pytest.raises(InvalidParameterError, match="at least two tokens; q has 1"):
        vps.score_plans(p, bad)
    # the priority-coin plans (three drafts) go through the same threaded batch
    from spectheory.solvers.priority_coins import priority_coin_plan
    from spectheory.verifiers.priority_coins import clear_coin_plan_cache, coin_plans

    clear_coin_plan_cache()
    for a, b in zip([priority_coin_plan(p[r], q[r], 3) for r in range(B)], coin_plans(p, q, 3)):
        for field in ("preferred", "rank", "kappa", "y", "residual"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        assert a.alpha_value == b.alpha_value and a.reached == b.reached
