"""Regressions of the commands' bad-input handling (issue 22 item 9) and of ``check module:fn``.

Every bad input must exit 2 with a one-line message naming the option, no
traceback; none may be silently ignored.
"""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pytest

from spectheory.cli import ExitCode, main

EXAMPLE = ["--target", "0.3,0.4,0.3", "--draft", "0.6,0.3,0.1"]


def usage_error(argv, capsys) -> str:
    """Run ``argv``; assert exit code 2 and a one-line message without traceback; return it."""
    assert main(argv) == ExitCode.USAGE
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.err.count("\n") == 1, captured.err
    return captured.err


def save_small_trace(folder, noise=(("exit:1", 0.5),)) -> str:
    """A 6-position, V = 50 trace saved in ``folder``: each draft ``(name, scale)`` is the
    target's logits plus ``scale`` N(0, 1) noise, drawn in order, then the tokens."""
    from spectheory.lm import Trace
    from spectheory.lm.trace import FORMAT_VERSION

    rng = np.random.default_rng(0)
    z = rng.standard_normal((6, 50))
    drafts = {name: (z + scale * rng.standard_normal((6, 50))).astype(np.float16)
              for name, scale in noise}  # fmt: skip
    trace = Trace(
        target_logits=z.astype(np.float16), exit_logits=drafts,
        tokens=rng.integers(0, 50, 6), prompt_ids=np.array([0, 0, 0, 1, 1, 1]),
        steps=np.array([0, 1, 2, 0, 1, 2]), prompt_tokens=np.array([1, 2, 3, 4]),
        prompt_offsets=np.array([0, 2, 4]),
        metadata={"format": FORMAT_VERSION, "prompt_order": [0, 1],
                  "settings": {"drafts": list(drafts)}},
    )  # fmt: skip
    return str(trace.save(folder / "t.safetensors"))


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    """A 6-position, V = 50 trace with one early-exit draft, saved as a file."""
    return save_small_trace(tmp_path_factory.mktemp("trace"))


# --------------------------------------------------------------------------- bound


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--vocab", "-5"], "argument --vocab: must be an integer >= 0; got -5"),
        (["--batch", "-1"], "argument --batch: must be an integer >= 1; got -1"),
        (["--batch", "0"], "argument --batch: must be an integer >= 1; got 0"),
        (["--seed", "-1"], "argument --seed: must be an integer >= 0; got -1"),
        (["--n", "2", "x"], "argument --n: expected an integer; got 'x'"),
        (["--sampling", "bogus"], "--sampling must be one of 'iid'"),
        (["--method", "bogus"], "--method must be one of"),
        (["--vocab", "100000", "--batch", "100000"], "--vocab x --batch must be at most 2**28"),
        # one vector alone was paired with the built-in example's other one
        (["--target", "0.5,0.25,0.25"], "--target needs --draft: give both, or neither"),
        (["--draft", "0.5,0.5"], "--draft needs --target: give both, or neither"),
    ],
)
def test_bound_bad_numbers_exit_2(argv, message, capsys):
    assert message in usage_error(["bound", *argv], capsys)


def test_bound_with_nothing_to_compute_is_an_error_not_an_empty_table(capsys):
    # without replacement needs n <= 3 here: the table would be empty
    argv = ["bound", "--vocab", "0", "--n", "4", "5", "--sampling", "without_replacement"]
    assert "nothing to compute" in usage_error(argv, capsys)


def test_bound_skipped_rows_are_reported(capsys):
    argv = ["bound", "--vocab", "0", "--n", "2", "4", "--sampling", "without_replacement", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert [r["n"] for r in json.loads(captured.out)["bounds"]] == [2]
    assert "skipped without_replacement n=4" in captured.err


def test_bound_synthetic_batch_runs_the_chosen_law_only(capsys):
    argv = ["bound", "--vocab", "40", "--batch", "3", "--n", "2", "--sampling", "greedy", "--json"]
    assert main([*argv, "--quiet"]) == 0
    rows = json.loads(capsys.readouterr().out)["full_vocabulary"]
    assert [(r["sampling"], r["n"]) for r in rows] == [("greedy", 2)]
    assert 0 < rows[0]["mean"] <= 1


FRACTIONS = ["--target", "1/2,1/2,0", "--draft", "1/3,1/3,1/3", "--n", "2", "--vocab", "0"]


def test_bound_fractions_with_a_float_method_say_they_need_an_exact_one(capsys):
    # It said "--target must be comma-separated numbers", although maxflow takes them.
    err = usage_error(["bound", *FRACTIONS], capsys)
    assert "--target '1/2,1/2,0'" in err and "--method dual" in err
    assert "fractions need an exact method: --method maxflow or --method enumerate" in err
    err = usage_error(["bound", *FRACTIONS, "--method", "lp"], capsys)
    assert "--method lp" in err and "--method maxflow or --method enumerate" in err
    err = usage_error(["bound", *FRACTIONS[:2], "--draft", "0.3,0.3,0.4", "--vocab", "0"], capsys)
    assert "--draft '0.3,0.3,0.4'" not in err  # only the fraction argument is named
    for method in ("maxflow", "enumerate"):
        assert main(["bound", *FRACTIONS, "--method", method, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["bounds"][0]["exact"] is not None
    # not a number at all: the plain message
    err = usage_error(["bound", "--target", "a,b", "--draft", "0.5,0.5", "--vocab", "0"], capsys)
    assert "--target must be comma-separated numbers; got 'a,b'" in err
    # check takes no exact method: it says fractions are not accepted
    err = usage_error(["check", "rrs", "--target", "1/2,1/2", "--trials", "10"], capsys)
    assert "--target '1/2,1/2'" in err and "write decimals" in err


def test_bound_synthetic_batch_uses_and_names_the_requested_method(capsys):
    # The batch was always solved by the dual, unlabelled, whatever --method said.
    common = ["bound", "--vocab", "40", "--batch", "2", "--sampling", "iid", "--json", "-q"]
    assert main([*common, "--n", "1", "4"]) == 0
    dual = json.loads(capsys.readouterr().out)["full_vocabulary"]
    assert [r["method"] for r in dual] == ["dual", "dual"]
    assert all(r["fallback_reason"] is None for r in dual)
    # lp runs at V = 40 for n = 1, refuses n = 4 (too many variables): the dual is named instead
    assert main([*common, "--n", "1", "4", "--method", "lp"]) == 0
    lp = json.loads(capsys.readouterr().out)["full_vocabulary"]
    assert [r["method"] for r in lp] == ["lp", "dual"]
    assert lp[0]["fallback_reason"] is None and lp[0]["mean"] == pytest.approx(dual[0]["mean"])
    assert "method='lp' refuses V=40, n=4" in lp[1]["fallback_reason"]
    assert lp[1]["mean"] == dual[1]["mean"]
    text_argv = [a for a in common if a != "--json"]
    assert main([*text_argv, "--n", "1", "4", "--method", "lp"]) == 0
    text = capsys.readouterr().out
    assert "method" in text.splitlines()[text.splitlines().index("") + 2]  # the table's header
    assert "* the dual solver was timed where --method lp cannot run:" in text
    assert "iid n=4: method='lp' refuses V=40, n=4" in text
    # enumerate cannot run at V = 40 at all: the header says so
    assert main([*text_argv, "--n", "1", "--method", "enumerate"]) == 0
    text = capsys.readouterr().out
    assert "synthetic batch (method dual: --method enumerate cannot run at V = 40" in text


def test_bound_synthetic_batch_falls_back_when_the_method_is_too_slow(monkeypatch, capsys):
    import spectheory.cli.bound as bound

    monkeypatch.setattr(bound, "MAX_ORACLE_SECONDS", 0.0)
    argv = ["bound", "--vocab", "40", "--batch", "2", "--n", "1", "--sampling", "iid",
            "--method", "maxflow", "--json", "-q"]  # fmt: skip
    assert main(argv) == 0
    (row,) = json.loads(capsys.readouterr().out)["full_vocabulary"]
    assert row["method"] == "dual" and "--method maxflow took" in row["fallback_reason"]


# --------------------------------------------------------------------------- check


def test_check_n_0_is_refused_not_replaced(capsys):
    err = usage_error(["check", "rrs", *EXAMPLE, "--n", "0"], capsys)
    assert "argument --n: must be an integer >= 1; got 0" in err


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--trials", "0", "argument --trials: must be an integer >= 1; got 0"),
        ("--trials", "1e3", "argument --trials: expected an integer; got '1e3'"),
        ("--alpha", "0", "argument --alpha: must be in (0, 1); got 0"),
        ("--check-temperature", "-1", "argument --check-temperature: must be a number >= 0"),
        ("--rows", "0", "argument --rows: must be an integer >= 1; got 0"),
        ("--positions", "5-2", "argument --positions: must look like '0-5,9'"),
        ("--trace", "/nonexistent/t.safetensors", "no such file or folder"),
        ("--sampling", "bogus", "--sampling must be one of"),
    ],
)
def test_check_bad_numbers_exit_2(option, value, message, capsys):
    assert message in usage_error(["check", "rrs", *EXAMPLE, option, value], capsys)


def test_check_acceptance_interval_states_its_level(capsys):
    """The interval is Wilson's at 1 - alpha (z about 4.89), not 95%: the output must say so."""
    from spectheory.sim._stats import wilson_interval

    argv = ["check", "rrs", "--n", "2", *EXAMPLE, "--trials", "5000"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "(Wilson interval, confidence 1 - 1e-06)" in text
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["acceptance_interval_confidence"] == 1 - 1e-6
    k = round(out["acceptance"] * 5000)
    np.testing.assert_allclose(out["acceptance_interval"], wilson_interval(k, 5000, 1 - 1e-6))
    # several laws: each law's interval is at its share of alpha
    argv = ["check", "naive", "--n", "2", *EXAMPLE, "--trials", "500"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.count("(Wilson interval, confidence 1 - 5e-07)") == 2
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["acceptance_interval_confidence"] == 1 - 5e-7
    assert {r["acceptance_interval_confidence"] for r in out["by_law"].values()} == {1 - 5e-7}


def test_check_math_sqrt_is_a_clear_error(capsys):
    err = usage_error(["check", "math:sqrt", *EXAMPLE], capsys)
    assert "verifier 'math:sqrt' must take four arguments" in err and "(x, /)" in err
    err = usage_error(["check", "math:pi", *EXAMPLE], capsys)
    assert "verifier 'math:pi' is not a function" in err


def test_check_module_function_from_the_current_folder(tmp_path, monkeypatch, capsys):
    package = tmp_path / "mylab_cli_test"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "verifiers.py").write_text(textwrap.dedent('''
        def my_target_sampler(target, draft, drafts, rng):
            """Lossless by construction: ignores the drafts and samples the target."""
            return int(rng.choice(len(target), p=target))

        def my_biased(target, draft, drafts, rng):
            return int(drafts[0])
    '''))  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(__import__("sys").modules, "mylab_cli_test", raising=False)
    argv = ["check", "mylab_cli_test.verifiers:my_target_sampler", *EXAMPLE, "--trials", "2000"]
    assert main(argv) == ExitCode.OK, capsys.readouterr().err
    assert "consistent with lossless" in capsys.readouterr().out
    argv = ["check", "mylab_cli_test.verifiers:my_biased", *EXAMPLE, "--trials", "2000"]
    assert main(argv) == ExitCode.CHECK_FAILED
    import sys

    assert str(tmp_path) not in sys.path  # the folder was importable only while importing


def test_check_draft_with_a_trace_is_refused(trace_file, capsys):
    err = usage_error(["check", "rrs", "--draft", "0.5,0.5", "--trace", trace_file], capsys)
    assert "--draft needs --target" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--on", "exit:1"], "--on cannot be combined with --target"),
        (["--positions", "0-2"], "--positions cannot be combined with --target"),
        (["--model", "m"], "--model cannot be combined with --target"),
    ],
)
def test_check_trace_options_with_target_are_refused(extra, message, capsys):
    assert message in usage_error(["check", "rrs", *EXAMPLE, *extra], capsys)


def test_check_trace_without_informative_rows_says_so(tmp_path, capsys):
    from spectheory.lm import Trace

    z = np.random.default_rng(1).standard_normal((4, 8))
    path = Trace.from_arrays(z, {"same": z}).save(tmp_path / "same.safetensors")
    err = usage_error(["check", "rrs", "--trace", str(path), "--on", "logits:same"], capsys)
    assert "no position of the trace has an overlap" in err and "--positions" in err


def test_check_picks_positions_where_distinct_drafts_exist(tmp_path, capsys):
    """A draft with 3 tokens of support at most positions (an n-gram draft, say), n = 4.

    The automatic rule chose such a position for rrs_wor and the library then said "draft
    row 2" (an index into its own selection).  Now only positions with 4 draft tokens are
    chosen, and a position the user names is reported by its trace position.
    """
    from spectheory.lm import Trace

    rng = np.random.default_rng(2)
    z = rng.standard_normal((6, 8))
    d = z + rng.standard_normal((6, 8))
    d[:, 3:] = -np.inf  # support 3 ...
    d[4, 3] = 0.0  # ... except at position 4 (support 4)
    path = Trace.from_arrays(z, {"narrow": d}).save(tmp_path / "narrow.safetensors")
    argv = ["check", "rrs_wor", "--trace", str(path), "--on", "logits:narrow", "--n", "4",
            "--sampling", "without_replacement", "--trials", "300", "--json"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["rows"] == 1  # position 4 alone
    err = usage_error([*argv, "--positions", "4,1"], capsys)
    assert "larger than the support of draft row 1" in err and "trace position 1" in err


def test_check_recording_options_with_a_trace_file_are_refused(trace_file, capsys):
    argv = ["check", "rrs", "--trace", trace_file, "--max-new-tokens", "3"]
    assert "--max-new-tokens cannot be combined with --trace" in usage_error(argv, capsys)


@pytest.mark.parametrize(
    ("positions", "bad"), [("999", "[999]"), ("0-6", "[6]"), ("5,6,7", "[6, 7]")]
)
def test_check_positions_outside_the_trace(trace_file, positions, bad, capsys):
    argv = ["check", "rrs", "--trace", trace_file, "--on", "exit:1", "--positions", positions]
    err = usage_error(argv, capsys)
    assert f"--positions must be in 0-5 (the trace's positions); got {bad}" in err


def test_check_on_a_trace_file(trace_file, capsys):
    argv = ["check", "rrs", "--trace", trace_file, "--on", "exit:1", "--positions", "0-2",
            "--n", "2", "--trials", "400", "--json"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    report = json.loads(capsys.readouterr().out)
    assert report["rows"] == 3 and report["trials"] == 400 and report["lossy"] is False
    assert "--on must be one of" in usage_error(
        ["check", "rrs", "--trace", trace_file, "--on", "exit:9"], capsys
    )


# --------------------------------------------------------------------------- sweep, replay, trace


@pytest.mark.parametrize("value", ["bogus", "tcp:/host", ""])
def test_sweep_bad_scheduler(tmp_path, value, capsys):
    err = usage_error(["sweep", "--shards", str(tmp_path), "--scheduler", value], capsys)
    assert "argument --scheduler: must be 'serial', 'threads' or 'local'" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--shards", "/nonexistent"], "argument --shards: no such file or folder"),
        (["--chunk", "0"], "argument --chunk: must be an integer >= 1; got 0"),
        (["--workers", "0"], "argument --workers: must be an integer >= 1; got 0"),
        (["--retries", "-1"], "argument --retries: must be an integer >= 0; got -1"),
        (["--trials", "0"], "argument --trials: must be an integer >= 1; got 0"),
        (["--n", "0"], "argument --n: must be an integer >= 1; got 0"),
        (["--temperatures", "-1"], "argument --temperatures: must be a number >= 0"),
        (["--samplings", "bogus"], "samplings must be among"),
        (["--verifiers", "bogus"], "got ['bogus']"),
    ],
)
def test_sweep_bad_options(tmp_path, argv, message, capsys):
    base = ["sweep", "--shards", str(tmp_path)]
    assert message in usage_error([*base, *argv], capsys)


def test_replay_and_sweep_on_a_trace_file(trace_file, tmp_path, capsys):
    common = ["--n", "2", "--samplings", "iid", "--verifiers", "rrs", "--trials", "20", "-q"]
    out = tmp_path / "r.csv"
    assert main(["replay", "--trace", trace_file, *common, "--out", str(out)]) == 0
    assert "6 rows (6 positions)" in capsys.readouterr().out and out.is_file()
    shards = tmp_path / "shards"
    argv = ["trace", "shard", "--trace", trace_file, "--out", str(shards), "--max-shard-mb", "1"]
    assert main(argv) == 0
    assert "6 positions x 50 tokens in 1 shards" in capsys.readouterr().out
    argv = ["sweep", "--shards", str(shards), *common, "--no-cache", "--out", str(tmp_path / "s")]
    assert main(argv) == 0
    assert "6 rows in" in capsys.readouterr().out


def test_replay_and_sweep_take_a_verifier_of_ones_own_by_module_and_function(
    trace_file, tmp_path, monkeypatch, capsys
):
    """``--verifiers package.module:function`` as ``check`` and ``report --verifier`` take it
    (the message used to say "add yours with spectheory.register_verifier", which a command
    line cannot do); the rows carry the spec as the verifier's name."""
    import csv

    (tmp_path / "my_verifiers.py").write_text(textwrap.dedent("""
        def first_draft(target, draft, drafts, rng):
            return int(drafts[0])
    """))
    monkeypatch.chdir(tmp_path)
    common = ["--n", "2", "--samplings", "iid", "--trials", "20", "-q"]
    mine = ["--verifiers", "my_verifiers:first_draft", "rrs"]
    assert main(["replay", "--trace", trace_file, *common, *mine, "--out", "r.csv"]) == 0
    with open(tmp_path / "r.csv") as f:
        names = {r["verifier"] for r in csv.DictReader(f)}
    assert names == {"my_verifiers:first_draft", "rrs"}
    shards = tmp_path / "shards"
    assert main(["trace", "shard", "--trace", trace_file, "--out", str(shards)]) == 0
    argv = ["sweep", "--shards", str(shards), *common, *mine, "--no-cache", "--out", "s"]
    assert main(argv) == 0
    capsys.readouterr()
    bad = ["replay", "--trace", trace_file, *common, "--verifiers", "my_verifiers:nothing"]
    assert "cannot be imported" in usage_error(bad, capsys)


def test_replay_summary_compares_laws_and_n_on_the_same_positions(trace_file, monkeypatch, capsys):
    """Planted: without replacement replayed on positions 0-2 only (support), beating i.i.d.

    i.i.d. is 0.2 there and 0.9 on 3-5; averaged over its own positions i.i.d. would read 0.55
    at n = 1 and 2 against 0.21 for without replacement: the order the theory forbids.
    """
    import spectheory.sim.replay as replay_mod
    from tests.planted_tables import planted_replay

    def planted(trace, **kwargs):
        return planted_replay(6, "exit:1")

    monkeypatch.setattr(replay_mod, "replay", planted)
    argv = ["replay", "--trace", trace_file, "-q", "--out", str(trace_file) + ".csv"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    means = {}
    for line in out.splitlines():
        parts = line.split()
        if parts[:1] == ["exit:1"] and len(parts) == 9:
            means[(int(parts[2]), parts[3])] = (float(parts[5]), int(parts[8]))
    assert means[(1, "iid")] == means[(2, "iid")] == (0.2, 3)
    assert means[(2, "without_replacement")] == (0.21, 3)
    assert "exit:1, T = 1: 3 of 6" in out


def test_replay_recording_options_with_a_trace_file_are_refused(trace_file, capsys):
    argv = ["replay", "--trace", trace_file, "--prompts", "0-1"]
    assert "--prompts cannot be combined with --trace" in usage_error(argv, capsys)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["trace", "record", "--max-new-tokens", "0"], "argument --max-new-tokens: must be"),
        (["trace", "record", "--prompts", "1-x"], "argument --prompts: must look like"),
        (["trace", "record", "--temperature", "-1"], "argument --temperature: must be"),
        (["trace", "shard", "--out", "x", "--max-shard-mb", "0"], "must be a number > 0"),
        (["trace", "shard", "--out", "x", "--trace", "/nonexistent"], "no such file"),
    ],
)
def test_trace_bad_options(argv, message, capsys):
    assert message in usage_error(argv, capsys)


# --------------------------------------------------------------------------- reproduce, draft


def test_reproduce_missing_trace_file(capsys):
    err = usage_error(["reproduce", "blockverify", "--trace", "/nonexistent"], capsys)
    assert "argument --trace: no such file or folder: '/nonexistent'" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--layer", "-1"], "argument --layer: must be an integer >= 1"),
        # layer 0 passed the parser and failed after the model load, naming no option
        (["train", "--layer", "0"], "argument --layer: must be an integer >= 1"),
        (["train", "--layer", "3", "--steps", "0"], "argument --steps: must be an integer >= 1"),
        (["train", "--layer", "3", "--lr", "0"], "argument --lr: must be a number > 0"),
        (["evaluate", "adapter:3", "--repeats", "0"], "argument --repeats: must be an integer"),
    ],
)
def test_draft_bad_options(argv, message, capsys):
    assert message in usage_error(["draft", *argv], capsys)


def test_load_callable_accepts_both_verifier_protocols(tmp_path, monkeypatch):
    import sys

    from spectheory.cli.check import load_callable

    (tmp_path / "protocols_cli_test.py").write_text(textwrap.dedent('''
        def black_box(target, draft, drafts, rng):
            return 0

        def coins(p, q, drafts, coins, *, sampling):
            return 0

        def three(p, q, drafts):
            return 0
    '''))  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "protocols_cli_test", raising=False)
    for name in ("black_box", "coins"):
        fn, n, law = load_callable(f"protocols_cli_test:{name}")
        assert fn.__name__ == name and n is None and law is None
    with pytest.raises(ValueError, match="must take four arguments"):
        load_callable("protocols_cli_test:three")


def test_replay_drafts_choose_the_drafts_of_a_trace_file(tmp_path, capsys):
    # --replay-drafts shared the recording's --drafts slot: with --trace it was refused
    # as "--drafts cannot be combined with --trace", and beside --drafts one was dropped.
    import csv

    from spectheory.lm import Trace

    rng = np.random.default_rng(2)
    z = rng.standard_normal((3, 8))
    drafts = {"a": z + rng.standard_normal((3, 8)), "b": z + rng.standard_normal((3, 8))}
    path = Trace.from_arrays(z, drafts).save(tmp_path / "t.safetensors")
    out = tmp_path / "r.csv"
    argv = ["replay", "--trace", str(path), "--replay-drafts", "logits:b", "--n", "1",
            "--verifiers", "sd", "--trials", "5", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == ExitCode.OK, capsys.readouterr().err
    with open(out) as f:
        assert {r["draft"] for r in csv.DictReader(f)} == {"logits:b"}
    err = usage_error(["replay", "--trace", str(path), "--drafts", "logits:a"], capsys)
    assert "--drafts cannot be combined with --trace" in err
    from spectheory.cli import build_parser

    args = build_parser(["replay"]).parse_args(
        ["replay", "--drafts", "exit:15", "--replay-drafts", "exit:25"]
    )
    assert args.drafts == ["exit:15"] and args.replay_drafts == ["exit:25"]


def test_a_closed_pipe_is_not_reported_as_bad_input(monkeypatch, capsys):
    """``spectheory bound --json | head`` exited 2 with "[Errno 32] Broken pipe", the code and
    message of bad input: the reader closing stdout is not the user's mistake."""

    class ClosedPipe:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["bound", "--json", "--vocab", "0"]) == ExitCode.BROKEN_PIPE == 141
    err = capsys.readouterr().err
    assert "error" not in err and "Broken pipe" not in err, err
