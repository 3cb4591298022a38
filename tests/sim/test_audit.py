"""Tests of the audit of logged samples (spectheory.sim.audit) and the log format.

Verdicts use the audit's default false-alarm rate alpha = 1e-6: a correct
engine's log fails ``test_correct_chain_sampler_passes`` with probability at
most 1e-6.  The buggy logs are flagged at the sizes used here in every one of
10 seeds of ``benchmarks/bench_checker_power.py`` (measured power, docs/checker.md);
the seeds are fixed, so the tests are deterministic.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from spectheory import InvalidDistributionError, InvalidParameterError, ShapeMismatchError
from spectheory import bound as stt_bound
from spectheory.sim.audit import check_lossless_from_samples as audit
from spectheory.sim.log_metrics import acceptance_table, write_csv
from spectheory.sim.samplelog import as_sample_log, load_log, save_log
from tests.audit_logs import chain_log, multidraft_log

ALPHA = 1e-6


def test_correct_chain_sampler_passes():
    log = chain_log(np.random.default_rng(0), 20_000)
    r = audit(log)
    assert not r.lossy, r.verdict
    assert r.source == "logged" and r.samples == 20_000 and r.impossible_outputs == 0
    assert set(r.tests) == {"pit", "pit_ks", "pit_p", "bound"}
    lo, hi = r.acceptance_interval
    assert lo <= r.bound  # a correct sampler's acceptance equals the bound for n = 1
    assert r.acceptance <= hi


def test_correct_multidraft_sampler_passes():
    r = audit(multidraft_log(np.random.default_rng(1), 20_000))
    assert not r.lossy, r.verdict


@pytest.mark.parametrize("bug", ["recorded_q", "mismatched_q"])
def test_chain_bugs_are_flagged(bug):
    """(b) recorded q is not the draft's law; (c) drafts sampled from another law than tested."""
    r = audit(chain_log(np.random.default_rng(2), 20_000, bug=bug))
    assert r.lossy and r.p_value <= ALPHA, r.tests


def test_dedup_of_iid_drafts_is_flagged():
    """(d) RRS skipping repeated drafts (pitfall P1), positions all different: the pooled PIT."""
    r = audit(multidraft_log(np.random.default_rng(3), 20_000, dedup=True))
    assert r.lossy and min(r.tests["pit"], r.tests["pit_ks"]) * len(r.tests) <= ALPHA


def test_repeated_positions_get_their_own_tests_and_are_ranked():
    """Ten positions logged 2,000 times each: per-position chi-square, Holm-ranked."""
    log = multidraft_log(np.random.default_rng(4), 20_000, dedup=True, positions=10)
    r = audit(log)
    assert r.lossy
    pos = {k: v for k, v in r.tests.items() if k.startswith("position")}
    assert len(pos) == 10
    top = r.suspicious[0]
    assert top["test"] == "G test" and top["repeats"] == 2_000
    assert top["p_value"] == min(pos.values())
    assert top["adjusted_p_value"] == pytest.approx(10 * top["p_value"], rel=1e-12)
    # ranked: adjusted p-values never decrease down the list
    adj = [s["adjusted_p_value"] for s in r.suspicious]
    assert adj == sorted(adj)
    good = audit(multidraft_log(np.random.default_rng(4), 20_000, positions=10))
    assert not good.lossy, good.verdict


def test_false_alarm_rate_at_alpha_005():
    """200 correct logs audited at alpha = 0.05: false alarms at most the binomial bound.

    The verdict's false-alarm rate is at most 0.05 (Bonferroni); the count of
    200 is then stochastically below Binomial(200, 0.05), whose 1 - 1e-6
    quantile bounds it.  The pooled PIT's G-test p-values are finite-sample
    bounds (stochastically at least uniform: their rejections at 0.05 are
    bounded above only); the Kolmogorov-Smirnov p-values of the same PIT are
    exactly uniform, so their 200 values must pass a KS test against U(0, 1)
    at 1e-6 (a two-sided count at 0.05 could not fail low: its 5e-7 quantile is 0).
    """
    alarms, pit_rejects, ks = 0, 0, []
    for s in range(200):
        r = audit(chain_log(np.random.default_rng(1000 + s), 400), alpha=0.05, rng=s)
        alarms += r.lossy
        pit_rejects += r.tests["pit"] <= 0.05
        ks.append(r.tests["pit_ks"])
    assert alarms <= stats.binom.isf(1e-6, 200, 0.05)
    assert pit_rejects <= stats.binom.isf(1e-6, 200, 0.05)
    assert stats.kstest(ks, "uniform").pvalue > 1e-6


def test_impossible_output_and_impossible_draft_are_proof():
    p = np.tile([0.5, 0.5, 0.0], (30, 1))
    q = np.tile([0.2, 0.2, 0.6], (30, 1))
    y = np.zeros(30, dtype=int)
    y[7] = 2
    r = audit(p, q, np.zeros((30, 1), dtype=int), y)
    assert r.lossy and r.impossible_outputs == 1 and r.p_value == 0.0
    assert "row 7" in r.verdict and r.suspicious[0]["row"] == 7
    q2 = np.tile([0.5, 0.5, 0.0], (30, 1))
    d = np.zeros((30, 1), dtype=int)
    d[4] = 2  # drafted a token the logged q gives probability 0
    r2 = audit(p, q2, d, np.zeros(30, dtype=int))
    assert r2.lossy and "row 4" in r2.verdict and "not the drafts' law" in r2.verdict


@pytest.mark.parametrize("suffix", [".npz", ".safetensors", ".jsonl"])
def test_log_files_round_trip(tmp_path, suffix):
    log = chain_log(np.random.default_rng(5), 300)
    path = save_log(log, tmp_path / f"log{suffix}")
    back = load_log(path)
    np.testing.assert_array_equal(back.outputs, log.outputs)
    np.testing.assert_array_equal(back.drafts, log.drafts)
    np.testing.assert_array_equal(back.round, log.round)
    np.testing.assert_allclose(back.target, log.target, rtol=1e-15)  # JSON keeps float64 repr
    a, b = audit(log), audit(path)
    assert b.verifier == str(path) and a.tests.keys() == b.tests.keys()
    # the rows are renormalised again on reading: PIT values move by ulps
    np.testing.assert_allclose(list(b.tests.values()), list(a.tests.values()), rtol=1e-9)


def test_bad_logs_raise_naming_the_row(tmp_path):
    p = np.tile([0.5, 0.5], (3, 1))
    d = np.zeros((3, 1), dtype=int)
    y = np.zeros(3, dtype=int)
    with pytest.raises(ShapeMismatchError, match=r"outputs must have shape \(3,\)"):
        audit(p, p, d, np.zeros(4, dtype=int))
    with pytest.raises(ShapeMismatchError, match=r"same shape \(N, V\)"):
        audit(p, np.tile([0.2, 0.3, 0.5], (3, 1)), d, y)
    with pytest.raises(ShapeMismatchError, match=r"drafts must have shape \(3, n\)"):
        audit(p, p, np.zeros((2, 1), dtype=int), y)
    with pytest.raises(InvalidParameterError, match=r"outputs row 2 holds token 5, outside"):
        audit(p, p, d, [0, 1, 5])
    with pytest.raises(InvalidParameterError, match=r"drafts row 1 slot 0 holds token -3"):
        audit(p, p, [[0], [-3], [1]], y)
    bad = p.copy()
    bad[1] = [0.7, 0.7]
    with pytest.raises(InvalidDistributionError, match=r"target row 1 sums to 1.4"):
        audit(bad, p, d, y)
    bad[1] = [1.2, -0.2]
    with pytest.raises(InvalidDistributionError, match=r"draft row 1 has a negative entry"):
        audit(p, bad, d, y)
    with pytest.raises(InvalidParameterError, match=r"outputs must hold integer token ids"):
        audit(p, p, d, [0.5, 1, 0])
    with pytest.raises(InvalidParameterError, match=r"round 0 is not one consecutive block"):
        as_sample_log(p, p, d, y, round=[0, 1, 0])
    np.savez(tmp_path / "obj.npz", target=np.array([object()]), draft=p, drafts=d, outputs=y)
    with pytest.raises(InvalidParameterError, match="pickled objects"):
        load_log(tmp_path / "obj.npz")
    np.savez(tmp_path / "extra.npz", target=p, draft=p, drafts=d, outputs=y, weights=y)
    with pytest.raises(InvalidParameterError, match="unknown key"):
        load_log(tmp_path / "extra.npz")
    lines = [{"target": [0.5, 0.5], "draft": [0.5, 0.5], "drafts": [0], "output": 0}] * 2
    (tmp_path / "bad.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines) + '\n{"target": [0.5, 0.5]}\n'
    )
    with pytest.raises(InvalidParameterError, match="line 3 has keys"):
        load_log(tmp_path / "bad.jsonl")
    with pytest.raises(InvalidParameterError, match=r"suffix '\.txt'"):
        (tmp_path / "log.txt").write_text("")
        load_log(tmp_path / "log.txt")


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ('"drafts": [1.7], "output": 0', r"line 2: drafts must be integer token ids; got 1\.7"),
        ('"drafts": [[0]], "output": 0', r"drafts must be integer token ids; got \[0\]"),
        ('"drafts": [true], "output": 0', "drafts must be integer token ids; got True"),
        ('"drafts": [0], "output": true', "output must be an integer; got True"),
        ('"drafts": [0], "output": 0, "output": 1', "line 2 repeats the key"),
    ],
)
def test_jsonl_ids_are_never_coerced(tmp_path, line, match):
    # JSON lets a float, a bool, a nested list or a repeated key through; each
    # was coerced (1.7 -> 1, true -> 1, the last "output" kept) and audited.
    good = '{"target": [0.5, 0.5], "draft": [0.5, 0.5], "drafts": [0], "output": 0}'
    path = tmp_path / "log.jsonl"
    path.write_text(good + '\n{"target": [0.5, 0.5], "draft": [0.5, 0.5], ' + line + "}\n")
    with pytest.raises(InvalidParameterError, match=match):
        load_log(path)


def test_unreadable_npz_is_a_named_error(tmp_path):
    (tmp_path / "empty.npz").write_bytes(b"")
    with pytest.raises(InvalidParameterError, match=r"not a readable \.npz file"):
        load_log(tmp_path / "empty.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip file at all")
    with pytest.raises(InvalidParameterError, match=r"not a readable \.npz file"):
        load_log(tmp_path / "junk.npz")


def test_acceptance_table_by_depth_and_slot(tmp_path):
    """Depth acceptance of a correct chain: the rows' mean bound sum min(p, q) lies inside.

    Hits at depth d are independent Bernoulli(beta_t) given the rows; the
    Wilson interval at 1 - 1e-6 of their count covers the mean of the beta_t
    (a Poisson binomial is less variable than the binomial of the same mean).
    """
    log = chain_log(np.random.default_rng(6), 6000, gamma=3)
    table = acceptance_table(log, confidence=1 - 1e-6)
    beta = np.minimum(log.target, log.draft).sum(axis=1)
    starts = np.flatnonzero(np.r_[True, log.round[1:] != log.round[:-1]])
    depth = np.concatenate([np.arange(e - s) for s, e in zip(starts, np.r_[starts[1:], 6000])])
    has = log.drafts[:, 0] >= 0
    rows = {(t["quantity"], t["index"]): t for t in table}
    for k in range(3):
        t = rows[("depth", k)]
        at = has & (depth == k)
        assert t["total"] == at.sum()
        assert t["low"] <= beta[at].mean() <= t["high"]
    # slot 0 of a chain is its membership acceptance
    assert rows[("slot", 0)]["count"] == rows[("membership", -1)]["count"]
    length = rows[("accepted_length", -1)]
    assert length["count"] == rows[("membership", -1)]["count"]
    assert length["total"] == np.unique(log.round).size
    assert length["low"] <= length["value"] <= length["high"]
    path = write_csv(table, tmp_path / "acc.csv")
    assert path.read_text().splitlines()[0] == "quantity,index,count,total,value,low,high"


def test_acceptance_table_multidraft_slots():
    log = as_sample_log(
        np.tile([0.25] * 4, (4, 1)),
        np.tile([0.25] * 4, (4, 1)),
        [[1, 1, 2], [0, 3, -1], [2, 2, 2], [3, -1, -1]],
        [1, 3, 0, 3],
    )
    rows = {(t["quantity"], t["index"]): (t["count"], t["total"]) for t in acceptance_table(log)}
    assert rows[("membership", -1)] == (3, 4)
    assert rows[("slot", 0)] == (2, 4)  # rows 0 and 3
    assert rows[("slot", 1)] == (1, 3)  # row 1 (row 0's slot 1 repeats slot 0's token)
    assert rows[("slot", 2)] == (0, 2)


def test_cli_audit(tmp_path, capsys):
    from spectheory.cli import ExitCode, main

    good = save_log(chain_log(np.random.default_rng(7), 2000), tmp_path / "good.npz")
    bad = save_log(chain_log(np.random.default_rng(7), 2000, bug="mismatched_q"),
                   tmp_path / "bad.jsonl")  # fmt: skip
    assert main(["audit", str(good), "--csv", str(tmp_path / "acc.csv")]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "consistent with lossless" in out and "depth 0" in out
    assert (tmp_path / "acc.csv").read_text().startswith("quantity,index")
    assert main(["audit", str(bad), "--json"]) == ExitCode.CHECK_FAILED
    assert json.loads(capsys.readouterr().out)["lossy"] is True
    np.savez(tmp_path / "short.npz", target=np.full((2, 2), 0.5), draft=np.full((2, 2), 0.5),
             drafts=np.zeros((2, 1), dtype=int), outputs=np.array([0, 9]))  # fmt: skip
    assert main(["audit", str(tmp_path / "short.npz")]) == ExitCode.USAGE
    assert "outputs row 1 holds token 9" in capsys.readouterr().err


def test_drafts_the_declared_law_cannot_produce_are_refused():
    p = np.tile([0.4, 0.3, 0.2, 0.1], (2, 1))
    q = np.tile([0.1, 0.2, 0.3, 0.4], (2, 1))
    y = np.array([3, 2])
    with pytest.raises(InvalidParameterError, match="row 1 repeats token 2"):
        audit(p, q, [[3, 1], [2, 2]], y, sampling="without_replacement")
    with pytest.raises(InvalidParameterError, match="lacks the 2 most likely"):
        audit(p, q, [[3, 2, 0], [1, 0, 3]], y, sampling="greedy")
    # Consistent logs pass the check (greedy: top 2 of q = {3, 2}, in any order; ties too).
    audit(p, q, [[3, 2, 0], [2, 3, 1]], y, sampling="greedy")
    tie = np.tile([0.1, 0.3, 0.3, 0.3], (2, 1))
    audit(p, tie, [[3, 1, 0], [2, 1, 3]], y, sampling="greedy")
    audit(p, q, [[3, 3], [2, 2]], y, sampling="iid")


def test_distinct_drafts_refute_the_default_iid_law():
    r"""A correct engine drafting without replacement, audited with the default sampling="iid".

    The verdict was "lossy: acceptance exceeds the optimal bound" (the i.i.d. bound is lower).
    None of its rows repeats a draft, which i.i.d. drafts from these peaked rows
    (:math:`\sum q^2 = 0.315` each) would do in 300 rows with probability at most
    :math:`0.685^{300} \approx 6e{-50}`: refused, naming the fix.  Diffuse drafts
    (:math:`\sum q^2 = 10^{-3}`) repeat rarely: no refusal.
    """
    rng = np.random.default_rng(0)
    N, V = 300, 6
    q = np.tile([0.5, 0.2, 0.1, 0.1, 0.05, 0.05], (N, 1))
    p = rng.dirichlet(np.ones(V), size=N)
    drafts = np.array([rng.choice(V, size=3, replace=False, p=q[0]) for _ in range(N)])
    y = np.array([rng.choice(V, p=row) for row in p])
    with pytest.raises(InvalidParameterError, match=r"contradict sampling='iid': none of the "
                       r"300 rows .* at most \d\.\d+e-50; pass sampling='without_replacement'"):
        audit(p, q, drafts, y)
    audit(p, q, drafts, y, sampling="without_replacement")  # the declaration that fits
    padded = np.c_[drafts, np.full((N, 2), -1)]  # empty slots (-1) are not repeats
    with pytest.raises(InvalidParameterError, match="contradict sampling='iid'"):
        audit(p, q, padded, y)
    padded[0, 3] = padded[0, 0]  # one real repeat anywhere: i.i.d. is possible
    audit(p, q, padded, y)
    wide = np.full((N, 1000), 1e-3)
    pw = rng.dirichlet(np.ones(1000), size=N)
    dw = np.array([rng.choice(1000, size=3, replace=False) for _ in range(N)])
    yw = np.array([rng.choice(1000, p=row) for row in pw])
    audit(pw, wide, dw, yw)  # (1 - 1e-3)^300 = 0.74: nothing to refute


def _tied_greedy_log(fixed, lossy, N=2000, seed=0):
    """Two greedy drafts with q(0) = q(1): the engine fixes token ``fixed``, samples the other.

    p = (0, 0.9, 0.1), q = (0.4, 0.4, 0.2).  Fixing token 1 the engine is lossless with
    acceptance 1 (x = 0: output 1; x = 2: output 1 w.p. 0.7, else 2).  ``lossy``: it fixes
    ``fixed`` and always outputs the sampled draft, accepting everything.
    """
    p, q = np.array([0.0, 0.9, 0.1]), np.array([0.4, 0.4, 0.2])
    rng = np.random.default_rng(seed)
    other = [t for t in range(3) if t != fixed]  # the sampled draft's support
    rest = q[other] / q[other].sum()
    d = np.empty((N, 2), dtype=np.int64)
    y = np.empty(N, dtype=np.int64)
    for t in range(N):
        x = other[int(rng.random() >= rest[0])]
        d[t] = (fixed, x)
        y[t] = x if lossy else (1 if x == 0 else (1 if rng.random() < 0.7 else 2))
    return np.tile(p, (N, 1)), np.tile(q, (N, 1)), d, y


def test_greedy_bound_follows_the_engines_tie_order():
    """A tie in q broken towards token 1 is a lossless greedy law whose bound (1.0) exceeds
    spectheory's tie order's (0.7667, token 0 fixed): the audit said "lossy: acceptance 1.0000
    exceeds the optimal bound 0.7667".  The drafts show the fixed token where the sampled one
    is not tied (x = 2); where it is (drafts {0, 1}) the largest bound of the two orders."""
    r = audit(*_tied_greedy_log(fixed=1, lossy=False), sampling="greedy")
    assert not r.lossy and not r.exceeds_bound, r.verdict
    assert r.acceptance == 1.0 and r.bound == pytest.approx(1.0)


def test_greedy_over_acceptance_with_ties_is_still_flagged():
    """Engine fixing token 0 (spectheory's order) and accepting every draft: lossy.

    Rows with x = 2 show token 0 fixed (bound 0.7667); rows with drafts {0, 1} could be
    either order (bound max(0.7667, 1) = 1).  The mean bound stays below the acceptance 1.
    """
    p, q, d, y = _tied_greedy_log(fixed=0, lossy=True)
    r = audit(p, q, d, y, sampling="greedy")
    assert r.lossy and r.exceeds_bound and "exceeds the optimal bound" in r.verdict
    low = float(np.round(stt_bound(p[0], q[0], n=2, sampling="greedy"), 12))
    assert low == pytest.approx(0.7 + 0.2 / 3)  # token 0 fixed: min(0.9, 2/3) + min(0.1, 1/3)
    ambiguous = np.mean(d[:, 1] == 1)
    assert r.bound == pytest.approx(ambiguous + (1 - ambiguous) * low)


def test_greedy_bound_with_a_fixed_set_given():
    """The bound with the fixed set read from the drafts, n = 3: three tokens tied at the cut.

    q = (0.3, 0.3, 0.3, 0.1): two of tokens 0-2 are fixed, and the bound is 0.9 when token 0
    (p = 0.85) is not, else 1.  Drafts {1, 2, 3} show T = {1, 2}: 0.9, below spectheory's
    order (T = {0, 1}); drafts {0, 1, 2} could have any two fixed: the largest, 1.  Each bound
    is spectheory's (lowest ids fixed) on the tokens relabelled so that T comes first.
    """
    from spectheory.sim.audit import _bound

    p = np.tile([0.85, 0.05, 0.05, 0.05], (3, 1))
    q = np.tile([0.3, 0.3, 0.3, 0.1], (3, 1))
    d = np.array([[1, 2, 3], [2, 3, 1], [1, 0, 2]])

    def with_fixed(T):
        perm = [*T, *(t for t in range(4) if t not in T)]
        return stt_bound(p[0][perm], q[0][perm], n=3, sampling="greedy")

    beta = _bound(p, q, d, "greedy", np.zeros(3, dtype=np.int64))
    assert with_fixed([1, 2]) == pytest.approx(0.9) and with_fixed([0, 2]) == pytest.approx(1)
    assert stt_bound(p[0], q[0], n=3, sampling="greedy") == pytest.approx(1)  # T = {0, 1}
    np.testing.assert_allclose(beta, [0.9, 0.9, 1.0], rtol=1e-12)
