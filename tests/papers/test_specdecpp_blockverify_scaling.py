"""SpecDec++, block verification and scaling figures: oracles, and checks failing on planted errors.

Block verification's chain expectations (spectheory.papers._block_chains) are
compared with the exact law of the package's own block verifier run through the
coins enumeration (spectheory.trees.block_law), with brute-force joint laws, with a
transport LP and, for the Monte Carlo estimator, with the exact values under a
stated false-alarm rate.  Every new required check is shown to fail on a planted
error.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction as F
from functools import partial
from itertools import product

import numpy as np
import pytest
from scipy import stats

from spectheory.papers import blockverify, specdecpp
from spectheory.papers._block_chains import (
    block_stop_probabilities,
    chain_exact,
    chain_monte_carlo,
    expected_block,
)
from spectheory.papers._common import Run
from spectheory.trees import block_law, draft_chain, joint_law, random_markov_model

P_EX = lambda s: [F(1, 3), F(2, 3)]  # noqa: E731 - the paper's motivating example
Q_EX = lambda s: [F(2, 3), F(1, 3)]  # noqa: E731


def _checks(fn, tmp_path, *args, **kwargs):
    run = Run("test", tmp_path, True, False)
    fn(run, *args, **kwargs)
    return {c.name: c for c in run.checks}


def _failed(checks):
    return {n for n, c in checks.items() if c.required and not c.passed}


# --------------------------------------------------------------------------- block verification


def test_motivating_example_is_exact():
    r = chain_exact(P_EX, Q_EX, 8)
    assert (r["token"][1], r["block"][1], r["joint_bound"][1]) == (F(10, 9), F(11, 9), F(12, 9))
    # Token-level with constant alpha = 2/3: E[A] = sum_k alpha^k (docs/theory.md §4.4).
    assert r["token"] == [sum(F(2, 3) ** k for k in range(1, g + 1)) for g in range(1, 9)]


@pytest.mark.parametrize("seed", range(4))
def test_chain_exact_equals_the_coins_law_of_the_block_verifier(seed):
    target = random_markov_model(3, 1, seed=2 * seed + 7)
    draft = random_markov_model(3, 1, seed=2 * seed + 8)
    r = chain_exact(target, draft, 3)
    for g in (1, 2, 3):
        for v in ("token", "block"):
            law = block_law(v, target, draft, partial(draft_chain, gamma=g), g + 1)
            assert r[v][g - 1] == law.block_efficiency - 1, (v, g)


@pytest.mark.parametrize("seed", range(3))
def test_joint_bound_is_the_sum_of_prefix_overlaps_by_brute_force(seed):
    target = random_markov_model(3, 1, seed=seed + 30)
    draft = random_markov_model(3, 1, seed=seed + 40)
    r = chain_exact(target, draft, 3)
    total = 0
    for k in (1, 2, 3):
        P, Q = joint_law(target, k), joint_law(draft, k)
        total += sum(min(P.get(x, 0), Q.get(x, 0)) for x in product(range(3), repeat=k))
        assert r["joint_bound"][k - 1] == total
        assert r["token"][k - 1] <= r["block"][k - 1] <= r["joint_bound"][k - 1]


def test_ideal_by_lp_attains_twelve_ninths_and_the_bound_at_gamma_3():
    assert blockverify.ideal_by_lp(blockverify.INSTANCE_8_3, 2) == pytest.approx(12 / 9, rel=1e-12)
    # gamma = 3: the LP optimum over couplings is at most the joint bound (it is an upper bound).
    bound = float(chain_exact(P_EX, Q_EX, 3)["joint_bound"][2])
    assert blockverify.ideal_by_lp(blockverify.INSTANCE_8_3, 3) <= bound + 1e-9


def test_stop_probabilities_follow_the_scan():
    # h_1 = Z/(Z + 1 - w): w_1 = 1/2, Z_1 = 1/4 -> 1/3; h_2 = w_2.
    h = block_stop_probabilities([F(1, 2), F(1, 4)], [F(1, 4)])
    assert h == [F(1, 3), F(1, 4)]
    # P(A = 2) = 1/4, P(A = 1) = 1/3 * 3/4 = 1/4: E[A] = 3/4.
    assert expected_block(h) == F(3, 4)
    assert block_stop_probabilities([F(1), F(1, 2)], [F(0)])[0] == 1  # 0/0 := 1


def test_monte_carlo_agrees_with_the_exact_chains():
    """Position-dependent rows (V = 4, gamma = 4): MC means vs exact, false-alarm rate 1e-6.

    Each of the 4 x 3 estimates is a mean of 40,000 i.i.d. draws; with a
    two-sided z test at level 1e-6 / 12 (Bonferroni) the whole test fails with
    probability at most 1e-6 when the estimator is unbiased.
    """
    rng = np.random.default_rng(5)
    gamma = 4
    p = rng.dirichlet(np.ones(4), size=gamma)
    q = rng.dirichlet(np.ones(4), size=gamma)
    pf = [[F(x).limit_denominator(10**12) for x in row] for row in p]
    qf = [[F(x).limit_denominator(10**12) for x in row] for row in q]
    # Rows normalised exactly so that the exact side is a distribution.
    pf = [[x / sum(row) for x in row] for row in pf]
    qf = [[x / sum(row) for x in row] for row in qf]
    exact = chain_exact(lambda s: pf[len(s)], lambda s: qf[len(s)], gamma)
    p = np.array([[float(x) for x in r] for r in pf])
    q = np.array([[float(x) for x in r] for r in qf])
    m = chain_monte_carlo(p[None], q[None], gamma, 40_000, np.random.default_rng(11))
    np.testing.assert_allclose(m["token"][0], [float(x) for x in exact["token"]], rtol=1e-12)
    z = stats.norm.ppf(1 - 1e-6 / 24)
    for key in ("token_draws", "block", "joint_bound"):
        draws = m[key][0]
        ref = exact["token" if key == "token_draws" else key]
        se = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
        err = np.abs(draws.mean(axis=0) - np.array([float(x) for x in ref]))
        assert np.all(err <= z * se + 1e-12), (key, err, se)


def test_blockverify_new_checks_pass_and_fail_on_planted_errors(tmp_path, monkeypatch):
    good = {**_checks(blockverify.known_answers, tmp_path),
            **_checks(blockverify.example_vs_gamma, tmp_path, range(1, 9))}  # fmt: skip
    assert not _failed(good)
    assert good["motivating example (gamma = 2): the ideal verifier's accepted tokens"].kind == (
        "published"
    )
    # A wrong published ideal value.
    monkeypatch.setattr(blockverify, "KNOWN_IDEAL", F(11, 9))
    bad = _checks(blockverify.known_answers, tmp_path)
    assert _failed(bad) == {
        "motivating example (gamma = 2): the ideal verifier's accepted tokens",
        "motivating example: the joint bound is attained (best coupling of q x q and p x p)",
    }
    monkeypatch.undo()

    # A block verifier that never stops early (h_i = 0 below gamma): accepts less than
    # token-level at some gamma, and is caught exactly.
    def no_early_stop(w, z):
        return [0] * (len(w) - 1) + [w[-1]]

    monkeypatch.setattr("spectheory.papers._block_chains.block_stop_probabilities", no_early_stop)
    bad = _checks(blockverify.example_vs_gamma, tmp_path, range(1, 9))
    assert "motivating example, gamma = 1..8: block >= token-level" in _failed(bad)
    bad = _checks(blockverify.markov_vs_gamma, tmp_path, 3, 3)
    name = "random Markov models, gamma = 1..3: block >= token-level on every model"
    assert _failed(bad) == {name}


def _fake_trace(n_prompts=3, length=6, V=6, seed=0):
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    n = n_prompts * length
    target = rng.normal(size=(n, V)) * 2
    draft = target + rng.normal(size=(n, V))
    return SimpleNamespace(
        num_positions=n,
        prompt_ids=np.repeat(np.arange(n_prompts), length),
        steps=np.tile(np.arange(length), n_prompts),
        target_logits=target,
        drafts=("exit:3", "ngram:2"),
        draft_logits=lambda d, rows: draft[rows],
    )


def test_trace_chains_only_start_where_the_continuation_is_long_enough():
    tr = _fake_trace(length=6)
    starts = blockverify._valid_starts(tr, 4)
    assert starts.tolist() == [0, 1, 2, 6, 7, 8, 12, 13, 14]
    assert blockverify._valid_starts(tr, 7).size == 0


def test_trace_checks_pass_and_fail_on_a_planted_biased_block_verifier(tmp_path, monkeypatch):
    tr = _fake_trace()
    good = _checks(blockverify.trace_vs_gamma, tmp_path, tr, 4, 12, 200)
    assert not _failed(good)
    run = Run("test", tmp_path, True, False)
    rows = blockverify.trace_vs_gamma(run, tr, 4, 12, 200)
    assert [r["draft"] for r in rows] == ["exit:3"] * 4  # n-gram drafts left out
    assert all(r["block_tau_ci_low"] <= r["block_tau"] <= r["block_tau_ci_high"] for r in rows)
    assert rows[0]["block_tau"] == pytest.approx(rows[0]["token_tau"], abs=1e-12)  # gamma = 1

    real = blockverify.chain_monte_carlo

    def biased(*args, **kwargs):  # a block verifier accepting 10 % less than it should
        out = real(*args, **kwargs)
        return {**out, "block": out["block"] * 0.9}

    monkeypatch.setattr(blockverify, "chain_monte_carlo", biased)
    bad = _checks(blockverify.trace_vs_gamma, tmp_path, tr, 4, 12, 200)
    assert _failed(bad) == {"real trace, gamma = 1..4: block verification not below token-level"}


# --------------------------------------------------------------------------- SpecDec++


def test_threshold_grid_starts_with_never_draft():
    grid = specdecpp.threshold_grid(19)
    assert grid[0] == 0.0 and grid.size == 20 and np.all(np.diff(grid) > 0)
    from spectheory.sim.draft_length import Fixed, Threshold, simulate_policy

    beta = [np.full(20, 0.7), np.full(12, 0.2)]
    never = simulate_policy(beta, Threshold(0.0), 0.3)
    plain = simulate_policy(beta, Fixed(0), 0.3)
    assert never.speedup == plain.speedup == 1.0 and never.drafts == plain.drafts == 0.0
    # At a cost ratio where drafting loses, never drafting is the best rule on the grid.
    speeds = [simulate_policy(beta, Threshold(float(h)), 0.95).speedup for h in grid]
    assert int(np.argmax(speeds)) == 0


def test_threshold_round_against_a_direct_expectation():
    # One acceptance value a: the rule drafts k* tokens, the first k with 1 - a^k >= h;
    # tokens/round = sum_{i<=k*} a^i (bonus included), drafts = k*.
    a, h, c = 0.8, 0.55, 0.1
    k = next(k for k in range(1, 30) if 1 - a**k >= h)
    tokens = sum(a**i for i in range(k + 1))
    speed, drafts = specdecpp.threshold_round({a: 1.0}, c, h)
    np.testing.assert_allclose([speed, drafts], [tokens / (1 + c * k), k], rtol=1e-12)


def test_specdecpp_new_checks_fail_on_planted_errors(tmp_path, monkeypatch):
    good = _checks(specdecpp.mdp_checks, tmp_path)
    assert not _failed(good)
    real = specdecpp.evaluate_threshold_policy

    # The threshold read the wrong way round (stop iff P >= h): draft length falls with h.
    monkeypatch.setattr(specdecpp, "evaluate_threshold_policy",
                        lambda law, c, h, k_max: real(law, c, 1.0 - h, k_max=k_max))  # fmt: skip
    bad = _failed(_checks(specdecpp.mdp_checks, tmp_path))
    assert "two-point law: the average draft length grows with the threshold" in bad
    monkeypatch.undo()

    # A solver whose best fixed length is too good: no threshold beats it.
    solve = specdecpp.solve_specdecpp

    def inflated(*args, **kwargs):
        r = solve(*args, **kwargs)
        return dataclasses.replace(r, fixed_speedup=r.speedup * 1.01)

    monkeypatch.setattr(specdecpp, "solve_specdecpp", inflated)
    bad = _failed(_checks(specdecpp.mdp_checks, tmp_path))
    assert "two-point law: the best threshold on the grid beats every fixed length" in bad
    assert "three-point law: the best threshold on the grid beats every fixed length" in bad


# --------------------------------------------------------------------------- scaling (Scylla)


def _alpha_trace(V=5, n=12, seed=1):
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    target = rng.normal(size=(n, V))
    draft = {"exit:10": target + rng.normal(size=(n, V)), "exit:20": target + 0.3 * rng.normal(
        size=(n, V))}  # fmt: skip
    return SimpleNamespace(num_positions=n, target_logits=target, drafts=tuple(draft),
                           draft_logits=lambda d, rows: draft[d][rows])  # fmt: skip


def test_batch_law_falls_with_the_batch_and_fails_on_a_planted_error(tmp_path, monkeypatch):
    from spectheory.papers import scaling
    from spectheory.solvers import roofline

    tr = _alpha_trace()
    params = {"exit:10": 60_000_000, "exit:20": 100_000_000}
    run = Run("test", tmp_path, True, False)
    rows = scaling.batch_law(run, tr, params, 135_000_000, 12)
    assert not _failed({c.name: c for c in run.checks})
    # The batch law's n* is the roofline optimum of the measured alpha*(n), recomputed here.
    from spectheory import bound
    from spectheory.distributions import process_logits

    p = process_logits(tr.target_logits.astype(np.float64), 1.0)
    q = process_logits(tr.draft_logits("exit:20", np.arange(12)), 1.0)
    alpha = np.array([np.mean(bound(p, q, k, "iid")) for k in scaling.WIDTHS])
    S = [roofline.batch_speedup(alpha, B, 135_000_000, 100_000_000) for B in scaling.BATCHES]
    expected = [int(np.argmax(s)) + 1 for s in S]
    assert [r["n_star"] for r in rows if r["draft"] == "exit:20"] == expected

    # A cost model that charges nothing for verifying more tokens: n* never falls.
    monkeypatch.setattr(roofline, "optimal_width",
                        lambda alpha, batches, *a: (np.full(len(batches), len(alpha)),
                                                    np.ones(len(batches))))  # fmt: skip
    bad = _checks(scaling.batch_law, tmp_path, tr, params, 135_000_000, 12)
    assert _failed(bad) == {
        "exit:10: the optimal number of drafts falls with the batch size",
        "exit:20: the optimal number of drafts falls with the batch size",
    }
