"""Options that another option makes irrelevant are refused, naming them, never ignored.

Each case below was accepted and ignored without a word (exit code 0, or an error that did
not name the option): a value the user gave could not be told from the default.  Where the
option does apply, its value must reach the result: compared with an independent oracle.
"""

from __future__ import annotations

import csv
import itertools
import json
import types

import numpy as np
import pytest

from spectheory.cli import ExitCode, main
from tests.cli.test_commands import save_small_trace, usage_error


def _strict_json(text):
    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    """A 6-position, V = 50 trace with two early-exit drafts, saved as a file."""
    return save_small_trace(tmp_path_factory.mktemp("trace"), (("exit:1", 0.5), ("exit:2", 1.5)))


# --------------------------------------------------------------------------- bound


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--batch", "5", "--seed", "3"], "--batch, --seed"),
        (["--seed", "3"], "--seed"),
        (["--batch", "16"], "--batch"),  # the default's value too: it was given
    ],
)
def test_bound_vocab_0_refuses_batch_and_seed(extra, named, capsys):
    # --vocab 0 skips the synthetic batch: --batch and --seed were ignored, exit code 0
    err = usage_error(["bound", "--vocab", "0", "--n", "2", *extra], capsys)
    assert f"{named} cannot be combined with --vocab 0" in err


def _brute_iid_bound(p, q, n):
    """1 + min over every token set H of p(H) - q(H)^n (i.i.d. drafts), by enumeration."""
    best = 0.0
    for r in range(1, len(p) + 1):
        for H in itertools.combinations(range(len(p)), r):
            best = min(best, p[list(H)].sum() - q[list(H)].sum() ** n)
    return 1.0 + best


def _oracle_batch_mean(V, B, seed, n):
    """The synthetic batch as documented (softmax of N(0, 9) logits, draft logits + N(0, 1))."""
    rng = np.random.default_rng(seed)
    z = 3.0 * rng.standard_normal((B, V))

    def softmax(x):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    p, q = softmax(z), softmax(z + rng.standard_normal((B, V)))
    return float(np.mean([_brute_iid_bound(p[i], q[i], n) for i in range(B)]))


@pytest.mark.parametrize(("extra", "B", "seed"), [([], 16, 0), (["--batch", "3", "--seed", "7"],
                                                                3, 7)])  # fmt: skip
def test_bound_batch_and_seed_reach_the_synthetic_batch(extra, B, seed, capsys):
    argv = ["bound", "--vocab", "5", "--n", "2", "--sampling", "iid", "--json", "-q", *extra]
    assert main(argv) == ExitCode.OK
    (row,) = _strict_json(capsys.readouterr().out)["full_vocabulary"]
    assert row["mean"] == pytest.approx(_oracle_batch_mean(5, B, seed, 2), abs=1e-12)


def test_bound_synthetic_batch_names_the_laws_it_skips(capsys):
    # V = 3 cannot hold 4 distinct drafts: the batch's row for greedy n = 4 was left out
    # without a word, while the example's table (support 4) has it
    argv = ["bound", "--target", "0.25,0.25,0.25,0.25", "--draft", "0.4,0.3,0.2,0.1",
            "--vocab", "3", "--batch", "2", "--n", "2", "4", "--sampling", "greedy", "--json",
            "-q"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    captured = capsys.readouterr()
    out = _strict_json(captured.out)
    assert [r["n"] for r in out["bounds"]] == [2, 4]
    assert [r["n"] for r in out["full_vocabulary"]] == [2]
    assert "synthetic batch: " in captured.err and "skipped greedy n=4" in captured.err


# --------------------------------------------------------------------------- trace files


@pytest.mark.parametrize("command", [["replay"], ["check", "rrs"], ["report"], ["reproduce"],
                                     ["trace", "shard", "--out", "x"]])  # fmt: skip
def test_an_empty_trace_path_is_refused_not_read_as_no_trace(command, capsys):
    # Path('') is the current folder, which exists: --trace '' passed the check and then
    # read as "no trace", so the command recorded (or reused) the model's trace instead
    from spectheory.cli import build_parser

    argv = [*command, "--trace", ""]
    with pytest.raises(SystemExit) as exc:
        build_parser(argv).parse_args(argv)
    assert exc.value.code == ExitCode.USAGE
    assert "argument --trace: no such file or folder: ''" in capsys.readouterr().err


def test_trace_shard_of_a_file_refuses_recording_options(trace_file, tmp_path, capsys):
    # splitting a file records nothing: --prompts 0 kept all 6 positions, --seed did nothing
    argv = ["trace", "shard", "--trace", trace_file, "--out", str(tmp_path / "s")]
    err = usage_error([*argv, "--prompts", "0", "--drafts", "exit:1", "--seed", "4"], capsys)
    assert "--drafts, --prompts, --seed cannot be combined with --trace" in err
    assert "--seed cannot be combined with --trace" in usage_error([*argv, "--seed", "4"], capsys)
    assert not (tmp_path / "s").exists()
    assert main(argv) == ExitCode.OK
    assert "6 positions x 50 tokens" in capsys.readouterr().out


def test_report_on_a_trace_file_refuses_seed(trace_file, tmp_path, capsys):
    # it said "give settings or trace, not both", naming no option, after announcing a
    # report on the default model and drafts
    argv = ["report", "--trace", trace_file, "--seed", "3", "--out", str(tmp_path / "r")]
    err = usage_error(argv, capsys)
    assert "spectheory report: error: --seed cannot be combined with --trace" in err



@pytest.mark.parametrize("sections", [["setup"], ["setup", "lossless"], ["papers"]])
def test_report_jobs_refused_where_nothing_runs_beside_the_papers(trace_file, tmp_path,
                                                                  sections, capsys):
    """Audit: ``--jobs 2`` runs the papers in a second process beside the other sections;
    with no papers, or the papers alone, every section ran in one process and ``--jobs`` was
    ignored without a word (exit code 0)."""
    argv = ["report", "--trace", trace_file, "--jobs", "2", "--sections", *sections,
            "--out", str(tmp_path / "r")]  # fmt: skip
    err = usage_error(argv, capsys)
    assert f"--jobs 2 cannot be combined with --sections {' '.join(sections)}" in err


@pytest.mark.parametrize(
    ("extra", "jobs"),
    [(["--jobs", "2", "--sections", "setup", "papers"], 2),
     (["--jobs", "1", "--sections", "setup"], 1),
     (["--jobs", "3"], 3)],
)  # fmt: skip
def test_report_jobs_reach_the_report_where_they_apply(extra, jobs, tmp_path, monkeypatch):
    import spectheory.report as report_pkg

    seen = {}

    def fake_build_report(out, **kw):
        seen.update(kw)
        raise KeyboardInterrupt  # stop here: only the arguments are watched

    monkeypatch.setattr(report_pkg, "build_report", fake_build_report)
    assert main(["report", *extra, "--out", str(tmp_path / "r")]) == 130
    assert seen["jobs"] == jobs

# --------------------------------------------------------------------------- replay, sweep


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--bounds-only", "--seed", "5"], "--seed cannot be combined with --bounds-only"),
        (["--bounds-only", "--trials", "3", "--verifiers", "sd"],
         "--trials, --verifiers cannot be combined with --bounds-only"),
        (["--workers", "4"], "--workers needs --scheduler local"),
        (["--workers", "4", "--scheduler", "threads"], "got --scheduler threads"),
        (["--no-cache", "--cache-dir", "x"], "--cache-dir cannot be combined with --no-cache"),
    ],
)
def test_sweep_refuses_options_that_its_mode_ignores(extra, message, tmp_path, capsys):
    argv = ["sweep", "--shards", str(tmp_path), "--out", str(tmp_path / "s.csv"), *extra]
    assert message in usage_error(argv, capsys)


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        # rrs draws i.i.d. only: it had no row at all
        (["--samplings", "without_replacement", "--verifiers", "rrs", "sd", "--n", "1"],
         "--verifiers rrs:"),
        # sd takes one draft: n = 2 had no row
        (["--samplings", "iid", "--verifiers", "sd", "--n", "1", "2"], "--n 2:"),
        (["--samplings", "iid", "greedy", "--verifiers", "rrs", "--n", "2"], "--samplings greedy:"),
    ],
)
def test_replay_refuses_grid_values_that_no_configuration_uses(
    extra, named, trace_file, tmp_path, capsys
):
    argv = ["replay", "--trace", trace_file, "--trials", "5", "--out", str(tmp_path / "r.csv")]
    err = usage_error([*argv, *extra], capsys)
    assert named in err and "no configuration of the grid uses it" in err
    assert not (tmp_path / "r.csv").exists()


def test_replay_values_that_some_configuration_uses_are_accepted(trace_file, tmp_path, capsys):
    # sd runs at n = 1 only and rrs_wor at both: every value given has rows
    argv = ["replay", "--trace", trace_file, "--trials", "5", "--out", str(tmp_path / "r.csv"),
            "--samplings", "without_replacement", "--verifiers", "rrs_wor", "sd", "--n", "1", "2",
            "--replay-drafts", "exit:1", "-q"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    with (tmp_path / "r.csv").open(newline="") as f:
        pairs = {(r["n"], r["verifier"]) for r in csv.DictReader(f)}
    assert pairs == {("1", "rrs_wor"), ("2", "rrs_wor"), ("1", "sd")}


# --------------------------------------------------------------------------- draft


@pytest.fixture
def no_model(monkeypatch):
    """Loading the model fails loudly: the refusals come before it."""

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr("spectheory.lm._loader.load_model", refuse)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--no-eval", "--temperatures", "0.5"],
         "--temperatures cannot be combined with --no-eval"),
        (["--name", "mine", "--as-draft"], "--as-draft cannot be combined with --name"),
    ],
)
def test_draft_train_refuses_options_that_others_make_ignored(
    extra, message, no_model, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path))
    assert message in usage_error(["draft", "train", "--layer", "3", *extra], capsys)


def test_draft_evaluate_no_cost_refuses_repeats(no_model, capsys):
    err = usage_error(["draft", "evaluate", "quant:Q4_0", "--no-cost", "--repeats", "5"], capsys)
    assert "--repeats cannot be combined with --no-cost" in err


@pytest.mark.parametrize(("extra", "temperatures", "repeats"),
                         [([], [0.7, 1.0], 30), (["--temperatures", "0.3", "--repeats", "4"],
                                                 [0.3], 4)])  # fmt: skip
def test_draft_evaluate_temperatures_and_repeats_reach_the_measurements(
    extra, temperatures, repeats, monkeypatch, capsys
):
    import spectheory.lm._loader as loader
    import spectheory.lm.acceptance as acceptance
    import spectheory.lm.draft_eval as draft_eval
    import spectheory.lm.quantised as quantised
    from spectheory.lm.draft_eval import AdapterEvaluation

    seen = {}

    def evaluate(loaded, qtype, temps):
        seen["temperatures"] = list(temps)
        k = len(temps)
        return AdapterEvaluation(temperatures=tuple(temps), acceptance=(0.5,) * k,
                                 raw_exit=(float("nan"),) * k, coverage=(1.0,) * k,
                                 positions=(4,) * k, per_prompt=())  # fmt: skip

    def cost(loaded, draft, repeats):
        seen["repeats"] = repeats
        return types.SimpleNamespace(c=0.5, t_draft=1e-3, t_target=2e-3, threads=1)

    monkeypatch.setattr(loader, "load_model", lambda *a, **k: types.SimpleNamespace())
    monkeypatch.setattr(draft_eval, "evaluate_quantised", evaluate)
    monkeypatch.setattr(acceptance, "measure_cost_ratio", cost)
    monkeypatch.setattr(quantised, "memory_ratio", lambda *a, **k: 0.3)
    assert main(["draft", "evaluate", "quant:Q4_0", *extra]) == ExitCode.OK
    out = _strict_json(capsys.readouterr().out)
    assert seen == {"temperatures": temperatures, "repeats": repeats}
    assert list(out["held_out"]) == [f"T={t:g}" for t in temperatures]


# --------------------------------------------------------------------------- reproduce, check


@pytest.mark.parametrize(
    ("extra", "named"),
    [(["leviathan"], "PAPER"), (["--quick", "--out", "x"], "--out, --quick")],
)
def test_reproduce_list_refuses_what_it_would_ignore(extra, named, capsys):
    err = usage_error(["reproduce", "--list", *extra], capsys)
    assert f"{named} cannot be combined with --list" in err


def test_check_names_the_default_draft_it_looked_for(trace_file, capsys):
    # "--on ...; got 'exit:25'" read as if the user had typed it
    err = usage_error(["check", "rrs", "--trace", trace_file, "--trials", "10"], capsys)
    assert "got the default 'exit:25'" in err
    err = usage_error(["check", "rrs", "--trace", trace_file, "--on", "exit:9"], capsys)
    assert "got 'exit:9'" in err and "default" not in err


@pytest.mark.parametrize(
    "argv, flag",
    [(["--target", ""], "--target"), (["--target", "0.5,0.5", "--draft", ""], "--draft")],
)
def test_check_refuses_an_empty_target_or_draft(argv, flag, capsys):
    """``check --target ''`` (an unset shell variable) was read as no target at all, so the
    command recorded or reused the real model's trace; ``--draft ''`` silently checked
    q = p."""
    err = usage_error(["check", "sd", *argv, "--trials", "50"], capsys)
    assert f"{flag} must be comma-separated numbers; got ''" in err
