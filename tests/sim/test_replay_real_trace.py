"""Replay of a real trace: the tidy table, its statistics, the CSV and the command line."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

import spectheory as stt
from spectheory.sim.replay import COLUMNS, REPLAY_VERIFIERS, replay, write_csv


@pytest.fixture(scope="module")
def trace(smol):
    from spectheory.lm import TraceSettings, record_trace

    settings = TraceSettings(prompts=(1, 13), max_new_tokens=4, drafts=("exit:25", "ngram:3"))
    return record_trace(settings, loaded=smol, cache=False, progress=False)


@pytest.fixture(scope="module")
def table(trace):
    return replay(trace, temperatures=(0.7, 1.0), ns=(1, 2), trials=400, seed=3)


def test_layout(trace, table):
    assert all(tuple(row) == COLUMNS for row in table)
    keys = {(r["draft"], r["temperature"], r["n"], r["sampling"], r["verifier"]) for r in table}
    assert {k[0] for k in keys} == {"exit:25", "ngram:3"}
    assert {k[4] for k in keys} <= set(REPLAY_VERIFIERS)
    # every configuration covers every position whose draft has enough support
    iid = [r for r in table if r["sampling"] == "iid" and r["verifier"] == "rrs"]
    assert len(iid) == trace.num_positions * 2 * 2 * 2  # drafts x temperatures x n


def test_exact_below_bound_and_matched_by_monte_carlo(table):
    groups = {}
    for r in table:
        key = (r["draft"], r["temperature"], r["n"], r["sampling"], r["verifier"])
        groups.setdefault(key, []).append(r)
        if r["lossless"] and not math.isnan(r["exact"]):
            assert r["exact"] <= r["bound"] + 1e-12
    # Pooled z-test of the Monte Carlo counts against the closed forms, each at a
    # false-alarm rate of 1e-6 (|z| > 4.89).
    checked = 0
    for rows in groups.values():
        if math.isnan(rows[0]["exact"]):
            continue
        k = sum(r["mc"] * r["trials"] for r in rows)
        mean = sum(r["exact"] * r["trials"] for r in rows)
        var = sum(r["exact"] * (1 - r["exact"]) * r["trials"] for r in rows)
        if var > 0:
            assert abs(k - mean) / math.sqrt(var) < 4.89
        else:
            assert k == pytest.approx(mean)
        checked += 1
    assert checked >= 20


def test_typical_exceeds_the_bound_somewhere(table):
    rows = [r for r in table if r["verifier"] == "typical"]
    assert any(r["mc_low"] > r["bound"] for r in rows)


def test_pit_means_of_lossless_verifiers(table):
    # Under losslessness each PIT value is U(0, 1): the mean of 400 has sd 1/sqrt(4800).
    # Pooled over every lossless row, |z| < 4.89 (false-alarm rate 1e-6).
    pits = [r["pit_mean"] for r in table if r["lossless"]]
    z = (np.mean(pits) - 0.5) / math.sqrt(1 / (12 * 400 * len(pits)))
    assert abs(z) < 4.89


def test_csv_and_command_line(trace, table, tmp_path, capsys):
    path = write_csv(table, tmp_path / "out" / "replay.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == COLUMNS and len(rows) == len(table)
    assert float(rows[0]["bound"]) == pytest.approx(table[0]["bound"])
    saved = trace.save(tmp_path / "trace.safetensors")
    from spectheory.cli import main

    out = tmp_path / "cli.csv"
    argv = ["replay", "--trace", str(saved), "--n", "2", "--samplings", "iid", "--trials", "50"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    assert f"rows ({trace.num_positions} positions)" in capsys.readouterr().out
    assert out.is_file()


def test_bad_arguments(trace):
    # Any verifier replays (a Python path where there is no kernel), but the transport-LP
    # verifiers refuse a draft of full support at once instead of enumerating ~1e9 draft
    # sets (this call used to exhaust 24 GB of memory); the message names the count.
    with pytest.raises(stt.InstanceTooLargeError, match=r"would have \d+ \(draft set"):
        replay(trace, verifiers=("optimal_lp",), ns=(2,), samplings=("iid",))
    with pytest.raises(stt.InvalidParameterError, match="samplings must be among"):
        replay(trace, samplings=("wor",))


def test_transport_verifiers_reach_the_bound_without_replacement_on_the_ngram_draft(trace):
    """The recorded trace at V = 49,152: where the 3-gram draft has a few dozen tokens,
    ``khisti`` reaches alpha*_wor exactly (its plan's acceptance, to 1e-12) and
    ``check_lossless`` judges it lossless (false-alarm rate 1e-6), n = 2."""
    from spectheory.distributions import process_logits
    from spectheory.sim.check import check_lossless
    from spectheory.verifiers.coupling import khisti, transport_plan

    q_all = process_logits(trace.draft_logits("ngram:3").astype(np.float64), 1.0)
    support = (q_all > 0).sum(axis=1)
    usable = np.flatnonzero((support >= 3) & (support <= 80))
    assert usable.size, support  # the 3-gram draft of a recorded trace has such rows
    i = int(usable[np.argmax(support[usable])])
    p = process_logits(trace.target_logits[i].astype(np.float64), 1.0)
    q = q_all[i]
    assert p.size == 49_152
    _, _, r_beta = transport_plan(p, q, 2, "without_replacement")
    alpha = float(stt.bound(p, q, 2, "without_replacement"))
    assert np.minimum(p, r_beta).sum() == pytest.approx(alpha, abs=1e-12)
    report = check_lossless(khisti, p, q, n=2, sampling="without_replacement", trials=2000, rng=5)
    assert not report.lossy and not report.exceeds_bound


def test_pair_scores_reaches_the_bound_without_replacement_on_every_position(trace):
    """The recorded trace at V = 49,152, exit:25 draft, n = 2 without replacement: the ramp
    score plan reaches alpha*_wor at every position and temperature (its selection acceptance
    equals the bound to 1e-12), and ``check_lossless`` (false-alarm rate 1e-6) judges the
    verifier lossless at one of them."""
    from spectheory.distributions import process_logits
    from spectheory.sim.check import check_lossless
    from spectheory.solvers.pair_scores import pair_score_plan
    from spectheory.verifiers.pair_scores import pair_scores

    for T in (0.7, 1.0):
        P = process_logits(trace.target_logits.astype(np.float64), T)
        Q = process_logits(trace.draft_logits("exit:25").astype(np.float64), T)
        assert P.shape[1] == 49_152
        for i in range(P.shape[0]):
            plan = pair_score_plan(P[i], Q[i])
            assert plan.reached, (T, i, plan.message)
            assert plan.bound == pytest.approx(
                float(stt.bound(P[i], Q[i], 2, "without_replacement")), abs=1e-15)
    report = check_lossless(pair_scores, P[0], Q[0], n=2, sampling="without_replacement",
                            trials=2000, rng=5)
    assert not report.lossy and not report.exceeds_bound


def test_random_utility_reaches_the_bound_for_three_drafts_on_the_ngram_draft(trace):
    """The recorded trace at V = 49,152, n = 3 without replacement, where ``optimal`` refuses:
    on a 3-gram row of small support the random-utility plan reaches alpha*_wor (to 1e-12)
    and ``check_lossless`` (false-alarm rate 1e-6) judges the verifier lossless."""
    from spectheory.distributions import process_logits
    from spectheory.sim.check import check_lossless
    from spectheory.solvers.random_utility import random_utility_plan

    q_all = process_logits(trace.draft_logits("ngram:3").astype(np.float64), 1.0)
    support = (q_all > 0).sum(axis=1)
    usable = np.flatnonzero((support >= 4) & (support <= 40))
    assert usable.size, support
    i = int(usable[np.argmin(support[usable])])
    p = process_logits(trace.target_logits[i].astype(np.float64), 1.0)
    q = q_all[i]
    assert p.size == 49_152
    plan = random_utility_plan(p, q, 3, "without_replacement")
    assert plan.reached
    assert float(plan.alpha_value) == pytest.approx(
        float(stt.bound(p, q, 3, "without_replacement")), abs=1e-12)
    report = check_lossless("random_utility", p, q, n=3, sampling="without_replacement",
                            trials=2000, rng=5)
    assert not report.lossy and not report.exceeds_bound


def test_optimal_reaches_the_bound_for_four_drafts_without_replacement(trace):
    """The recorded trace at V = 49,152, exit:25 draft, n = 4 without replacement (refused
    by ``optimal`` until the priority-coin rule): the plan reaches alpha*_wor at every
    position and temperature (to 1e-12; the marginal sums to 1 to 1e-13), and
    ``check_lossless`` (false-alarm rate 1e-6) judges the verifier lossless at one of them."""
    from spectheory.distributions import process_logits
    from spectheory.sim.check import check_lossless
    from spectheory.solvers.priority_coins import priority_coin_plan

    for T in (0.7, 1.0):
        P = process_logits(trace.target_logits.astype(np.float64), T)
        Q = process_logits(trace.draft_logits("exit:25").astype(np.float64), T)
        assert P.shape[1] == 49_152
        for i in range(P.shape[0]):
            plan = priority_coin_plan(P[i], Q[i], 4)
            assert plan.reached, (T, i, plan.message)
            assert abs(plan.total - 1.0) <= 1e-13
            assert plan.bound == pytest.approx(
                float(stt.bound(P[i], Q[i], 4, "without_replacement")), abs=1e-15)
    report = check_lossless("optimal", P[0], Q[0], n=4, sampling="without_replacement",
                            trials=2000, rng=5)
    assert not report.lossy and not report.exceeds_bound
