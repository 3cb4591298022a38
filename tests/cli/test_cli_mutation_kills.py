"""Mutation kills for the command line: options reaching the library, printed numbers, exit codes.

Each test is deterministic and cheap and names in its docstring the bug it catches.  The
expected values come from hand computation, from numpy recomputing what the command documents
(its help text and module docstrings), or from the library's Python API called directly with
the same arguments, never from the command's own output.
"""

from __future__ import annotations

import csv
import json
import types

import numpy as np
import pytest

from spectheory.cli import ExitCode, main

EXAMPLE_P = "0.3,0.4,0.3"
EXAMPLE_Q = "0.6,0.3,0.1"
EXAMPLE = ["--target", EXAMPLE_P, "--draft", EXAMPLE_Q]


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _one_line_error(argv, capsys) -> str:
    assert main(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory):
    """Six positions over V = 6, one draft ``logits:d``, every overlap sum(min(p, q)) in (0.1, 0.9)
    at T = 1 and T = 0.5 (so that the automatic row rule may choose any position)."""
    from spectheory.lm import Trace

    rng = np.random.default_rng(6)
    z = 1.5 * rng.standard_normal((6, 6))
    d = z + rng.standard_normal((6, 6))
    for t in (1.0, 0.5):
        overlap = np.minimum(_softmax(z / t), _softmax(d / t)).sum(1)
        assert np.all((overlap > 0.1) & (overlap < 0.9)), overlap
    path = tmp_path_factory.mktemp("clitrace") / "t.safetensors"
    return str(Trace.from_arrays(z.astype(np.float32), {"d": d.astype(np.float32)}).save(path))


def _trace_logits(path):
    """The stored logits (float32) as float64: what every command reads back."""
    from spectheory.lm import load_trace

    tr = load_trace(path)
    return tr.target_logits.astype(np.float64), tr.draft_logits("logits:d").astype(np.float64)


# --------------------------------------------------------------------------- bound


def test_bound_synthetic_size_limit_is_inclusive(monkeypatch, capsys):
    """Bug: ``--vocab x --batch`` equal to the limit was refused (``>=`` for ``>``).

    The message says "at most" the limit: a batch of exactly that many values runs.
    """
    import spectheory.cli.bound as bound

    monkeypatch.setattr(bound, "MAX_SYNTHETIC_VALUES", 40 * 3)
    argv = ["bound", "--vocab", "40", "--n", "1", "--sampling", "iid", "--json", "-q"]
    assert main([*argv, "--batch", "3"]) == ExitCode.OK
    capsys.readouterr()
    assert "--vocab x --batch must be at most" in _one_line_error([*argv, "--batch", "4"], capsys)


def test_bound_n_equal_to_the_draft_support_is_computed_not_skipped(capsys):
    """Bug: n distinct drafts were skipped when n equalled the draft's support (``>=`` for ``>``).

    Three distinct drafts from a three-token draft hold every token, so the target's token is
    always among them: alpha* = 1 for without replacement and greedy alike (hand computation).
    """
    for law in ("without_replacement", "greedy"):
        argv = ["bound", "--vocab", "0", "--n", "3", "--sampling", law, "--json"]
        assert main(argv) == ExitCode.OK
        captured = capsys.readouterr()
        rows = json.loads(captured.out)["bounds"]
        assert [r["n"] for r in rows] == [3] and "skipped" not in captured.err
        assert rows[0]["alpha_star"] == pytest.approx(1.0, abs=1e-12)


def test_bound_support_counts_only_positive_draft_probabilities(capsys):
    """Bug: the draft's support was its length, zeros included.

    q = (1/2, 1/2, 0) has two tokens of support: two drafts without replacement are always
    {0, 1}, so alpha* = p0 + p1 = 3/4 (hand computation), and n = 3 must be skipped and named.
    """
    argv = ["bound", "--vocab", "0", "--target", "0.5,0.25,0.25", "--draft", "0.5,0.5,0",
            "--n", "2", "3", "--sampling", "without_replacement", "--json"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    captured = capsys.readouterr()
    rows = json.loads(captured.out)["bounds"]
    assert [r["n"] for r in rows] == [2]
    assert rows[0]["alpha_star"] == pytest.approx(0.75, abs=1e-12)
    assert "need n <= 2" in captured.err and "skipped without_replacement n=3" in captured.err


def test_bound_solves_target_against_draft_not_the_reverse(capsys):
    """Bug: the target and the draft were swapped on the way to the solver.

    With n = 1, alpha* = sum min(p, q) is symmetric, so use two i.i.d. drafts (hand
    computation): for p = (1/2, 1/2) and q = (1, 0) both drafts are token 0 and the target's
    token is 1 half the time, so alpha* = 1/2; the swapped problem, target (1, 0) and draft
    (1/2, 1/2), drafts token 0 with probability 1 - 1/4, so alpha* = 3/4.
    """
    argv = ["bound", "--vocab", "0", "--target", "0.5,0.5", "--draft", "1,0", "--n", "2",
            "--sampling", "iid", "--json"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    (row,) = json.loads(capsys.readouterr().out)["bounds"]
    assert row["alpha_star"] == pytest.approx(0.5, abs=1e-12)


def _synthetic(seed, V, B):
    """The synthetic batch as the help describes it: softmax of N(0, 9) logits (standard
    deviation 3); the draft's logits are the target's plus N(0, 1) noise."""
    rng = np.random.default_rng(seed)
    z = 3.0 * rng.standard_normal((B, V))
    return _softmax(z), _softmax(z + rng.standard_normal((B, V)))


def test_bound_synthetic_batch_mean_is_the_mean_of_the_documented_batch(capsys):
    """Bugs: ``--seed`` ignored (the batch always seeded 0); logits of standard deviation 9
    instead of variance 9; the median of the rows reported as their mean.

    For one draft alpha* = sum min(p, q) per row, computed here with numpy on the batch the
    help describes, then averaged.
    """
    p, q = _synthetic(5, 40, 3)
    want = np.minimum(p, q).sum(1)
    assert np.median(want) != pytest.approx(want.mean(), rel=1e-3)  # the mean is told apart
    argv = ["bound", "--vocab", "40", "--batch", "3", "--seed", "5", "--n", "1", "--sampling",
            "iid", "--json", "-q"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    (row,) = json.loads(capsys.readouterr().out)["full_vocabulary"]
    assert row["mean"] == pytest.approx(want.mean(), rel=1e-9)
    p0, q0 = _synthetic(0, 40, 3)
    assert np.minimum(p0, q0).sum(1).mean() != pytest.approx(want.mean(), rel=1e-3)


def test_bound_synthetic_batch_runs_n_up_to_the_vocabulary(capsys):
    """Bug: the synthetic batch skipped n distinct drafts at n = V (``<`` for ``<=``).

    At V = 2, two distinct drafts hold both tokens: alpha* = 1 on every row (hand computation).
    """
    argv = ["bound", "--vocab", "2", "--batch", "3", "--n", "2", "--sampling",
            "without_replacement", "--json", "-q"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    rows = json.loads(capsys.readouterr().out)["full_vocabulary"]
    assert [(r["sampling"], r["n"]) for r in rows] == [("without_replacement", 2)]
    assert rows[0]["mean"] == pytest.approx(1.0, abs=1e-12)


def test_bound_synthetic_batch_time_is_per_row(monkeypatch, capsys):
    """Bug: "ms per row" was the whole batch's time (not divided by the rows).

    A clock that advances one second per reading: the timed solve of B = 4 rows takes 1 s,
    so 250 ms per row.
    """
    import spectheory.cli.bound as bound

    ticks = iter(range(10**6))
    monkeypatch.setattr(bound, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))
    argv = ["bound", "--vocab", "40", "--batch", "4", "--n", "1", "--sampling", "iid",
            "--json", "-q"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    (row,) = json.loads(capsys.readouterr().out)["full_vocabulary"]
    assert row["ms_per_row"] == pytest.approx(250.0)


# --------------------------------------------------------------------------- check


def test_check_default_rows_is_four_informative_positions(trace_path, capsys):
    """Bug: the automatic rule tested another number of positions than the documented 4."""
    argv = ["check", "sd", "--trace", trace_path, "--on", "logits:d", "--trials", "50", "--json"]
    assert main(argv) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["rows"] == 4


def test_check_temperature_reaches_the_checker(trace_path, capsys):
    """Bug: ``--check-temperature`` was read from the wrong option (so ignored).

    For one draft the report's bound is the mean over the rows of sum min(p_T, q_T), computed
    here with numpy from the stored logits divided by T = 0.5; at T = 1 it differs.
    """
    z, d = _trace_logits(trace_path)
    rows = [0, 1, 2]
    want = np.minimum(_softmax(z[rows] / 0.5), _softmax(d[rows] / 0.5)).sum(1).mean()
    at_one = np.minimum(_softmax(z[rows]), _softmax(d[rows])).sum(1).mean()
    assert abs(want - at_one) > 1e-3
    argv = ["check", "sd", "--trace", trace_path, "--on", "logits:d", "--positions", "0-2",
            "--check-temperature", "0.5", "--trials", "50", "--json"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] == 3 and out["bound"] == pytest.approx(want, rel=1e-5)


def test_check_seed_reaches_the_checker(capsys):
    """Bug: ``--seed`` was not passed to check_lossless (every run used seed 0).

    The command's p-value must be the API's at the same seed; seed 0 gives another one.
    """
    from spectheory.sim.check import check_lossless

    p, q = [0.3, 0.4, 0.3], [0.6, 0.3, 0.1]
    want = check_lossless("rrs", p, q, n=2, sampling="iid", trials=300, rng=7)
    other = check_lossless("rrs", p, q, n=2, sampling="iid", trials=300, rng=0)
    assert want.acceptance != other.acceptance
    argv = ["check", "rrs", "--n", "2", "--sampling", "iid", *EXAMPLE, "--trials", "300",
            "--seed", "7", "--json"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    out = json.loads(capsys.readouterr().out)
    assert out["acceptance"] == want.acceptance and out["p_value"] == want.p_value


def test_check_seed_is_allowed_beside_target(capsys):
    """Bug: ``--seed`` (a recording option, but also the checker's seed) was refused with
    ``--target`` as if it selected trace rows."""
    argv = ["check", "sd", *EXAMPLE, "--trials", "100", "--seed", "3"]
    assert main(argv) == ExitCode.OK, capsys.readouterr().err


def test_check_target_alone_checks_against_itself(capsys):
    """Bug: ``--draft`` did not default to ``--target`` as its help says.

    A draft equal to the target: one draft is always accepted by an optimal coupling,
    alpha* = sum min(p, p) = 1 (hand computation).
    """
    argv = ["check", "sd", "--target", EXAMPLE_P, "--trials", "100", "--json"]
    assert main(argv) == ExitCode.OK
    out = json.loads(capsys.readouterr().out)
    assert out["bound"] == pytest.approx(1.0, abs=1e-12) and out["lossy"] is False


def test_check_alpha_reaches_the_checker(capsys):
    """Bug: ``--alpha`` was not passed on (the verdict kept the default 1e-6)."""
    argv = ["check", "rrs", "--n", "2", "--sampling", "iid", *EXAMPLE, "--trials", "200",
            "--alpha", "0.01", "--json"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    out = json.loads(capsys.readouterr().out)
    assert out["alpha"] == 0.01 and out["acceptance_interval_confidence"] == pytest.approx(0.99)


def test_check_json_by_law_holds_every_field(capsys):
    """Bug: a field (``lossy``) was dropped from each law's JSON entry.

    Each law's entry holds the top level's fields but the verifier's name, with the values of
    the API's report for that law.
    """
    from spectheory.sim.check import check_lossless

    fields = {"lossy", "verdict", "p_value", "alpha", "impossible_outputs", "acceptance",
              "acceptance_interval", "bound", "exceeds_bound", "detectable_tv", "rows",
              "trials", "acceptance_interval_confidence"}  # fmt: skip
    argv = ["check", "naive", "--n", "2", *EXAMPLE, "--trials", "300", "--json"]
    assert main(argv) == ExitCode.OK
    out = json.loads(capsys.readouterr().out)
    want = check_lossless("naive", [0.3, 0.4, 0.3], [0.6, 0.3, 0.1], n=2, trials=300)
    assert set(out["by_law"]) == set(want.by_law)
    for law, entry in out["by_law"].items():
        assert set(entry) == fields
        assert entry["lossy"] is bool(want.by_law[law].lossy)
        assert entry["p_value"] == want.by_law[law].p_value


def test_check_text_prints_the_detectable_tv(capsys):
    """Bug: the "detects a TV bias" line printed another number than the report's."""
    from spectheory.sim.check import check_lossless

    want = check_lossless("rrs", [0.3, 0.4, 0.3], [0.6, 0.3, 0.1], n=2, sampling="iid",
                          trials=400)  # fmt: skip
    argv = ["check", "rrs", "--n", "2", "--sampling", "iid", *EXAMPLE, "--trials", "400"]
    assert main(argv) == ExitCode.OK
    text = capsys.readouterr().out
    assert f"detects a TV bias >= {want.detectable_tv:.3f} on one row" in text
    assert f"bound {want.bound:.4f}" in text


# --------------------------------------------------------------------------- audit


@pytest.fixture(scope="module")
def repeated_log(tmp_path_factory):
    """Ten positions logged 40 times each by a sampler that skips repeated drafts (biased)."""
    from spectheory.sim.samplelog import save_log
    from tests.audit_logs import multidraft_log

    log = multidraft_log(np.random.default_rng(4), 400, dedup=True, positions=10)
    return str(save_log(log, tmp_path_factory.mktemp("auditlog") / "log.npz"))


def test_audit_min_repeats_reaches_the_audit(repeated_log, capsys):
    """Bug: ``--min-repeats`` was not passed on.

    Every position repeats 40 times: the default (20) tests each of the 10 positions, and
    ``--min-repeats 50`` tests none.
    """
    for extra, count in (([], 10), (["--min-repeats", "50"], 0)):
        main(["audit", repeated_log, "--json", *extra])
        tests = json.loads(capsys.readouterr().out)["tests"]
        assert sum(k.startswith("position") for k in tests) == count


def test_audit_seed_and_suspicious_list_are_the_apis(repeated_log, capsys):
    """Bugs: ``--seed`` ignored (the PIT's uniforms always seeded 0); the JSON list of
    suspicious positions cut short.

    The command's tests, p-value and suspicious positions equal the API's at the same seed.
    """
    from spectheory.sim.audit import check_lossless_from_samples

    want = check_lossless_from_samples(repeated_log, rng=5)
    seed0 = check_lossless_from_samples(repeated_log, rng=0)
    assert want.tests["pit_ks"] != seed0.tests["pit_ks"] and len(want.suspicious) > 1
    code = main(["audit", repeated_log, "--seed", "5", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == (ExitCode.CHECK_FAILED if want.lossy else ExitCode.OK)
    assert out["tests"] == pytest.approx(want.tests, rel=1e-12)
    assert out["p_value"] == want.p_value
    assert [s["row"] for s in out["suspicious"]] == [s["row"] for s in want.suspicious]


def test_audit_text_lists_the_smallest_p_values_first(repeated_log, capsys):
    """Bug: the tests were printed by decreasing p-value (the ten least suspicious).

    The text lists the ten tests of smallest p-value, smallest first.
    """
    from spectheory.sim.audit import check_lossless_from_samples

    want = sorted(check_lossless_from_samples(repeated_log, rng=0).tests.values())[:10]
    main(["audit", repeated_log])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if " p = " in ln]
    got = [float(ln.split(" p = ")[1]) for ln in lines]
    assert got == [float(f"{p:.3g}") for p in want]


def test_audit_text_shows_index_zero(tmp_path, capsys):
    """Bug: quantity index 0 was printed without its index (as if it were the -1 "no index").

    The acceptance table of a chain log has depth rows 0, 1, ...; each is printed with its index.
    """
    from spectheory.sim.log_metrics import acceptance_table
    from spectheory.sim.samplelog import save_log
    from tests.audit_logs import chain_log

    log = chain_log(np.random.default_rng(7), 2000)
    path = save_log(log, tmp_path / "good.npz")
    assert main(["audit", str(path)]) == ExitCode.OK
    text = capsys.readouterr().out
    for t in acceptance_table(log):
        name = t["quantity"] if t["index"] < 0 else f"{t['quantity']} {t['index']}"
        assert f"\n  {name}: {t['value']:.4f} [" in text


def test_audit_unwritable_csv_is_a_one_line_error(tmp_path, capsys):
    """Bug: an ``OSError`` (here writing ``--csv`` under a file) was an unexpected failure
    (exit 1, traceback) instead of bad input (exit 2, one line)."""
    from spectheory.sim.samplelog import save_log
    from tests.audit_logs import chain_log

    path = save_log(chain_log(np.random.default_rng(7), 500), tmp_path / "good.npz")
    (tmp_path / "file").write_text("")
    err = _one_line_error(["audit", str(path), "--csv", str(tmp_path / "file" / "a.csv")],
                          capsys)  # fmt: skip
    assert err.startswith("spectheory audit: error:")


# --------------------------------------------------------------------------- replay, sweep


def test_replay_seed_and_trials_reach_the_replay(trace_path, tmp_path, capsys):
    """Bugs: ``--seed`` or ``--trials`` not passed to replay (its defaults, 0 and 200, used).

    The CSV's Monte Carlo column equals the API's replay at the same seed and trials.
    """
    from spectheory.lm import load_trace
    from spectheory.sim.replay import replay

    kw = dict(ns=(2,), samplings=("iid",), verifiers=("rrs",), trials=30)
    want = replay(load_trace(trace_path), seed=9, **kw)
    other = replay(load_trace(trace_path), seed=0, **kw)
    assert [r["mc"] for r in want] != [r["mc"] for r in other]
    out = tmp_path / "r.csv"
    argv = ["replay", "--trace", trace_path, "--n", "2", "--samplings", "iid", "--verifiers",
            "rrs", "--trials", "30", "--seed", "9", "--out", str(out), "-q"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    with out.open() as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["position"]))
    assert [int(r["trials"]) for r in rows] == [30] * 6
    want_mc = [r["mc"] for r in sorted(want, key=lambda r: r["position"])]
    assert [float(r["mc"]) for r in rows] == want_mc


def test_sweep_options_map_to_their_parameters(monkeypatch, tmp_path, capsys):
    """Bug: ``--chunk`` (or ``--workers``, ``--retries``, ``--seed``) not passed to sweep.

    ``chunk`` does not change the result, so the call is watched.
    """
    import spectheory.sim.sweeps as sweeps

    seen = {}

    def spy(shards, grid, **kwargs):
        seen.update(kwargs)
        return []

    monkeypatch.setattr(sweeps, "sweep", spy)
    # --workers only with --scheduler local (refused with the others: it was ignored there)
    argv = ["sweep", "--shards", str(tmp_path), "--chunk", "7", "--workers", "3", "--retries",
            "2", "--seed", "5", "--no-cache", "--out", str(tmp_path / "s.csv"), "-q",
            "--scheduler", "local"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    assert (seen["chunk"], seen["local_workers"], seen["retries"], seen["seed"]) == (7, 3, 2, 5)
    assert seen["cache_dir"] is None and seen["scheduler"] == "local"


# --------------------------------------------------------------------------- summary


def test_replay_summary_means_skip_missing_exact_and_show_mc(trace_path, monkeypatch, capsys):
    """Bugs: a missing exact acceptance (NaN) entered the mean of the exact column; the Monte
    Carlo column showed the bound.

    Planted rows: bound 0.2 everywhere, exact 0.3 except NaN at one position, mc 0.5: the
    means are 0.200, 0.300 and 0.500.
    """
    import spectheory.sim.replay as replay_mod
    from tests.planted_tables import planted_replay

    def planted(trace, **kwargs):
        rows = [r for r in planted_replay(2, "logits:d") if r["sampling"] == "iid"]
        for r in rows:
            r.update(bound=0.2, exact=0.3 if r["position"] else float("nan"), mc=0.5)
        return rows

    monkeypatch.setattr(replay_mod, "replay", planted)
    argv = ["replay", "--trace", trace_path, "-q", "--out", str(trace_path) + ".planted.csv"]
    assert main(argv) == ExitCode.OK
    lines = [ln.split() for ln in capsys.readouterr().out.splitlines()]
    rows = [p for p in lines if p[:1] == ["logits:d"] and len(p) == 9]
    assert len(rows) == 2
    for p in rows:
        assert (p[5], p[6], p[7], p[8]) == ("0.200", "0.300", "0.500", "2")


# --------------------------------------------------------------------------- trace, cache


def test_trace_shard_size_is_in_mebibytes(trace_path, tmp_path, capsys):
    """Bug: ``--max-shard-mb`` was read as 10**6 bytes, not MiB (2**20) as its help says."""
    argv = ["trace", "shard", "--trace", trace_path, "--out", str(tmp_path / "s"),
            "--max-shard-mb", "0.5"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    assert "(at most 524,288)" in capsys.readouterr().out


def test_cache_list_sizes_in_mebibytes_and_total_counts_every_file(tmp_path, monkeypatch, capsys):
    """Bugs: sizes divided by 2**10 but labelled MiB; the total left out partial writes.

    A 1 MiB trace and a 1 MiB partial write: each line shows 1.00 MiB, the total 2.00 MiB.
    """
    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path))
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "k.safetensors").write_bytes(b"x" * 2**20)
    (tmp_path / "traces" / "j.safetensors.tmp").write_bytes(b"y" * 2**20)
    assert main(["cache", "list"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out.count("      1.00 MiB") == 2
    assert "2 files, 2.00 MiB" in out


# --------------------------------------------------------------------------- option types and exits


def test_infinite_numbers_are_refused():
    """Bug: only NaN was refused; ``inf`` passed as a finite number."""
    import argparse

    from spectheory.cli._common import nonnegative_float, positive_float

    for kind in (positive_float, nonnegative_float):
        with pytest.raises(argparse.ArgumentTypeError, match="expected a finite number"):
            kind("inf")


def test_infinite_shard_size_is_a_usage_error(capsys):
    """The same bug through a command: ``--max-shard-mb inf`` must exit 2 naming the option."""
    err = _one_line_error(["trace", "shard", "--out", "x", "--max-shard-mb", "inf"], capsys)
    assert "argument --max-shard-mb: expected a finite number; got 'inf'" in err


def test_tuple_options_of_integers_refuse_zero(capsys):
    """Bug: the items of an integer tuple option (``--cost-layers``) were checked >= 0, not >= 1;
    layer 0 reached the study, which needs the model, before being refused."""
    err = _one_line_error(["experiment", "draft-length", "--cost-layers", "0"], capsys)
    assert "argument --cost-layers: must be an integer >= 1; got 0" in err


def test_keyboard_interrupt_exits_130(monkeypatch, capsys):
    """Bug: an interrupted command exited 1 (as a failure) instead of 130 (128 + SIGINT)."""
    import spectheory.cli.bound as bound

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(bound, "run", interrupted)
    assert main(["bound"]) == 130
    assert "spectheory bound: interrupted" in capsys.readouterr().err


# --------------------------------------------------------------------------- reproduce


def test_reproduce_all_writes_one_folder_per_paper_and_exits_3_on_a_failure(
    monkeypatch, tmp_path, capsys
):
    """Bug: ``reproduce all`` wrote every paper into ``--out`` itself (overwriting each
    other's checks.csv) instead of one sub-folder per paper, as its help says; and a failed
    paper must make the exit code 3."""
    import spectheory.papers as papers
    import spectheory.papers._common as papers_common

    outs = {}

    def fake(name, ok):
        def reproduce(out, **kwargs):
            outs[name] = out
            return types.SimpleNamespace(ok=ok, summary=lambda: f"{name} done")

        return types.SimpleNamespace(name=name, needs_model=False, uses_trace=False,
                                     reproduce=reproduce)  # fmt: skip

    monkeypatch.setattr(papers, "PAPERS", {"a": fake("a", True), "b": fake("b", False)})
    monkeypatch.setattr(papers_common, "get_model", lambda loaded=None: None)
    code = main(["reproduce", "all", "--out", str(tmp_path / "o"), "-q"])
    assert code == ExitCode.CHECK_FAILED
    assert outs == {"a": tmp_path / "o" / "a", "b": tmp_path / "o" / "b"}
    assert capsys.readouterr().out.splitlines() == ["a done", "b done"]


# --------------------------------------------------------------------------- fixed with these tests


def _no_constant(token):
    raise ValueError(f"not JSON: {token}")


def test_check_json_is_strict_json_for_a_one_token_target(capsys):
    """Bug (fixed): ``check --json`` wrote ``Infinity`` for detectable_tv, which is not JSON.

    A one-token target p = (1, 0): every output but token 0 is impossible, so no total-variation
    bias is left for the row test to detect and the library reports detectable_tv = inf; the
    JSON must say null, and parse with a strict parser.
    """
    argv = ["check", "sd", "--target", "1,0", "--draft", "0.5,0.5", "--trials", "100", "--json"]
    assert main(argv) == ExitCode.OK
    out = json.loads(capsys.readouterr().out, parse_constant=_no_constant)
    assert out["detectable_tv"] is None and out["bound"] == pytest.approx(0.5, abs=1e-12)
    assert all(r["detectable_tv"] is None for r in out["by_law"].values())
    # and the text states no power there, where it read "detects a TV bias >= inf"
    assert main(argv[:-1]) == ExitCode.OK
    text = capsys.readouterr().out
    assert "consistent with lossless" in text and "detects a TV bias" not in text


def test_audit_seed_and_report_jobs_are_checked_options(repeated_log, monkeypatch, capsys):
    """Bug (fixed): ``audit --seed -1`` and ``report --jobs 0`` passed the parser (plain ``int``)
    and were refused by the library under its own parameter names (``rng``, ``jobs``); the
    message must name the option, as every other seed and count option's does.  The value
    given reaches build_report unchanged."""
    import spectheory.report as report_pkg

    err = _one_line_error(["audit", repeated_log, "--seed", "-1"], capsys)
    assert "argument --seed: must be an integer >= 0; got -1" in err
    err = _one_line_error(["report", "--jobs", "0"], capsys)
    assert "argument --jobs: must be an integer >= 1; got 0" in err
    seen = {}

    def fake_build_report(out, **kw):
        seen.update(kw)
        raise KeyboardInterrupt  # stop here: only the arguments are watched

    monkeypatch.setattr(report_pkg, "build_report", fake_build_report)
    assert main(["report", "--jobs", "1", "--out", "unused"]) == 130
    assert seen["jobs"] == 1


def test_check_refuses_rows_beside_positions(trace_path, capsys):
    """``check --positions 0,1 --rows 3`` ran on positions 0 and 1 and ignored ``--rows``
    without a word; the two choose the trace positions, so together they are refused."""
    err = _one_line_error(["check", "sd", "--trace", trace_path, "--on", "logits:d",
                           "--positions", "0,1", "--rows", "3"], capsys)  # fmt: skip
    assert "--rows cannot be combined with --positions" in err


def test_a_list_default_is_shown_as_it_is_typed(capsys):
    """``--capacity-layers``' help read "(default: 1-29)", a form the option refuses (it
    takes integers one by one)."""
    assert main(["experiment", "draft-length", "--help"]) == ExitCode.OK
    help_text = " ".join(capsys.readouterr().out.split())
    assert "(default: 1 2 ... 29)" in help_text and "1-29" not in help_text
