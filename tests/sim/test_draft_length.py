"""Tests of spectheory.sim.draft_length: exact renewal simulations of draft-length policies."""

from __future__ import annotations

import numpy as np
import pytest

import spectheory as stt
from spectheory.sim.draft_length import (
    Fixed,
    Heuristic,
    Threshold,
    binned_acceptance_law,
    compare_policies,
    oracle_threshold,
    simulate_policy,
)
from spectheory.solvers.speedup import optimal_gamma, speedup, tokens_per_round

# ----------------------------------------------------------------------------- brute force


def _brute(b, policy, k_max, pred=None):
    """E[rounds], E[discards], E[drafts] by enumerating every accept/reject path.

    Written token by token and independently of the module's dynamic
    programming: each drafted token is accepted with probability b[t].
    """
    n = len(b)
    a = b if pred is None else pred

    def wants_more(s, k, gcur):
        cap = min(k_max, n - 1 - s)
        if k >= cap:
            return False
        if isinstance(policy, Fixed):
            return k < policy.gamma
        if isinstance(policy, Heuristic):
            return k < gcur
        return 1.0 - float(np.prod(a[s : s + k])) < policy.h

    def rec(s, gcur):
        # returns (rounds, discards, drafts) expected from position s on
        if s >= n:
            return 0.0, 0.0, 0.0
        k = 0
        while wants_more(s, k, gcur):
            k += 1
        out = np.zeros(3)
        prob_prefix = 1.0
        for m in range(k + 1):
            # m accepted; then either a rejection (m < k) or all accepted (m == k)
            pm = prob_prefix * ((1.0 - b[s + m]) if m < k else 1.0)
            if pm > 0:
                nxt = gcur
                if isinstance(policy, Heuristic):
                    nxt = min(gcur + 2, k_max) if (m == k == gcur) else max(1, gcur - 1)
                r = np.array(rec(s + m + 1, nxt))
                out += pm * (np.array([1.0, k - m, k]) + r)
            if m < k:
                prob_prefix *= b[s + m]
        return tuple(out)

    start = min(policy.start, k_max) if isinstance(policy, Heuristic) else 0
    return rec(0, start)


def _random_betas(seed, lengths):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.0, 1.0, size=n) ** 0.5 for n in lengths]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "policy",
    [Fixed(0), Fixed(1), Fixed(3), Heuristic(), Heuristic(2), Threshold(0.3), Threshold(0.7)],
    ids=lambda p: p.name,
)
def test_dynamic_programming_matches_path_enumeration(seed, policy):
    betas = _random_betas(seed, [7, 5])
    k_max = 4
    res = simulate_policy(betas, policy, 0.3, k_max=k_max)
    ref = np.sum([_brute(b, policy, k_max) for b in betas], axis=0)
    np.testing.assert_allclose([res.rounds, res.discards, res.drafts], ref, rtol=1e-12, atol=0)
    assert res.tokens == 12


def test_head_policy_uses_predictions_not_truth():
    betas = _random_betas(10, [8])
    pred = _random_betas(11, [8])
    pol = Threshold(0.5, predicted=tuple(pred))
    res = simulate_policy(betas, pol, 0.2, k_max=5)
    ref = _brute(betas[0], pol, 5, pred=pred[0])
    np.testing.assert_allclose([res.rounds, res.discards, res.drafts], ref, rtol=1e-12)
    oracle = simulate_policy(betas, Threshold(0.5), 0.2, k_max=5)
    assert oracle.rounds != res.rounds


def test_accounting_identity():
    betas = _random_betas(3, [20, 13])
    for pol in (Fixed(4), Heuristic(), Threshold(0.4)):
        r = simulate_policy(betas, pol, 0.17)
        total_time = 0.17 * r.drafts + 1.0 * r.rounds  # t_d N_draft + t_t N_target
        assert r.speedup == pytest.approx(r.tokens / total_time, rel=1e-12)
        # N_draft = (N - N_target) + N_discard  (docs/theory.md §5.1)
        assert r.drafts == pytest.approx(r.tokens - r.rounds + r.discards, rel=1e-12)
        assert r.tokens_per_round == pytest.approx(1.0 / r.verify_rate, rel=1e-12)


@pytest.mark.parametrize(("alpha", "gamma", "c"), [(0.8, 4, 0.1), (0.6, 2, 0.3), (0.9, 7, 0.05)])
def test_constant_acceptance_reproduces_leviathan_speedup(alpha, gamma, c):
    # Finite-n renewal bound.  Rounds starting at s <= n-1-gamma are uncapped,
    # i.i.d. with tau tokens and cost gamma c + 1 in expectation; by Wald's
    # identity their number K0 has E[K0] in [(n - gamma)/tau, n/tau], and at most
    # gamma capped rounds follow, each costing <= gamma c + 1.  Hence
    # S n / (n + gamma tau) <= S_n <= S n / (n - gamma).
    n = 4000
    res = simulate_policy([np.full(n, alpha)], Fixed(gamma), c)
    S = speedup(alpha, gamma, c)
    tau = tokens_per_round(alpha, gamma)
    assert S * n / (n + gamma * tau) <= res.speedup <= S * n / (n - gamma)
    assert res.speedup == pytest.approx(S, rel=3 * gamma / n)


def test_threshold_on_constant_acceptance_is_a_fixed_length():
    alpha, h = 0.8, 0.55  # 1 - 0.8^k >= 0.55 first at k = 4 (0.5904)
    b = [np.full(50, alpha), np.full(9, alpha)]
    a = simulate_policy(b, Threshold(h), 0.1)
    f = simulate_policy(b, Fixed(4), 0.1)
    assert (a.rounds, a.discards, a.drafts) == pytest.approx((f.rounds, f.discards, f.drafts))


def test_oracle_beats_every_fixed_length_on_iid_acceptances():
    # docs/theory.md §8.7, first row: D = {.95: .8, .3: .2}, c = 0.2:
    # S* = 2.221 vs best fixed 1.942.
    rng = np.random.default_rng(7)
    b = [rng.choice([0.95, 0.3], p=[0.8, 0.2], size=2500) for _ in range(2)]
    h = oracle_threshold(b, 0.2)
    oracle = simulate_policy(b, Threshold(h), 0.2)
    fixed = [simulate_policy(b, Fixed(g), 0.2).speedup for g in range(0, 26)]
    assert oracle.speedup > max(fixed)
    assert oracle.speedup == pytest.approx(2.221, abs=0.05)  # sampling noise of 5000 draws
    assert max(fixed) == pytest.approx(1.942, abs=0.05)


def test_oracle_on_constant_acceptance_is_the_optimal_fixed_length():
    # constant beta: the solver's threshold reproduces gamma* of docs/theory.md §1.5(c) exactly
    for alpha, c, gamma_star in [(0.7, 0.1, 4), (0.9, 0.05, 13), (0.5, 0.2, 1)]:
        assert optimal_gamma(alpha, c).gamma == gamma_star
        b = [np.full(300, alpha)]
        oracle = simulate_policy(b, Threshold(oracle_threshold(b, c)), c)
        fixed = simulate_policy(b, Fixed(gamma_star), c)
        assert (oracle.rounds, oracle.discards) == pytest.approx((fixed.rounds, fixed.discards))


def test_heuristic_known_paths():
    # all accepted: gamma 5, 7, 9, then 11 cut to 5 by the end: 4 rounds, nothing discarded
    r = simulate_policy([np.ones(30)], Heuristic(), 0.1)
    assert (r.rounds, r.discards, r.drafts) == (4.0, 0.0, 26.0)
    # all rejected: one token per round; gamma 5,4,3,2,1,1,1,1, then 1 and 0 at the end
    r = simulate_policy([np.zeros(10)], Heuristic(), 0.1)
    assert (r.rounds, r.discards) == (10.0, 19.0)
    assert r.speedup == pytest.approx(10 / (0.1 * 19 + 10))


def test_binned_law_preserves_the_mean():
    b = _random_betas(5, [17, 9])
    law = binned_acceptance_law(b, bins=4)
    assert sum(law.values()) == pytest.approx(1.0)
    assert sum(v * p for v, p in law.items()) == pytest.approx(np.concatenate(b).mean())


def test_compare_policies_contents():
    b = _random_betas(6, [24, 24, 24])
    pred = tuple(np.clip(x + 0.05, 0, 1) for x in b)
    out = compare_policies(b, 0.2, gammas=range(1, 6), predicted=pred, head_h=0.5)
    assert out["best_fixed"].speedup == max(r.speedup for r in out["fixed"])
    assert len(out["oracle_sweep"]) == len(out["head_sweep"]) == 19
    assert out["head"].policy == "head(h=0.5)"
    # the oracle swept over h contains the oracle at the solver's threshold up to the grid
    assert max(r.speedup for r in out["oracle_sweep"]) > out["heuristic"].speedup * 0.9


def test_errors_name_argument_and_value():
    with pytest.raises(stt.InvalidParameterError, match=r"beta\[1\] must lie in \[0, 1\]; got 1.5"):
        simulate_policy([[0.5], [0.2, 1.5]], Fixed(1), 0.1)
    with pytest.raises(stt.InvalidParameterError, match=r"c must be a finite number >= 0; got -1"):
        simulate_policy([[0.5]], Fixed(1), -1)
    with pytest.raises(stt.InvalidParameterError, match=r"gamma must be >= 0; got -2"):
        Fixed(-2)
    with pytest.raises(stt.InvalidParameterError, match=r"policy must be"):
        simulate_policy([[0.5]], "fixed", 0.1)
    with pytest.raises(stt.InvalidParameterError, match=r"policy.predicted"):
        simulate_policy([[0.5, 0.5]], Threshold(0.5, predicted=([0.5],)), 0.1)
