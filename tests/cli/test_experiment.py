"""``spectheory experiment draft-scaling|draft-length|trees``: help, usage errors, small real runs.

The real runs use the session's model (the ``smol`` fixture) in place of the command's own
load, with tiny settings; the full-size numbers are the studies' own business.  The quick run
of ``draft-scaling`` through the command line is in test_draft_scaling.py.
"""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from spectheory.cli import ExitCode, main

SUBCOMMANDS = ("draft-scaling", "draft-length", "trees")


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def loaded_once(smol, monkeypatch, tmp_path):
    """The command's model load returns the session's model; the cache is a fresh folder."""
    import spectheory.cli.experiment as E

    monkeypatch.setattr(E, "_load_model", lambda: smol)
    monkeypatch.setenv("SPECTHEORY_CACHE_DIR", str(tmp_path / "cache"))
    return smol


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_help_exit_0(sub, capsys):
    assert main(["experiment", sub, "--help"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out.startswith(f"usage: spectheory experiment {sub}")
    assert "--out" in out or "--layer" in out


def test_experiment_lists_its_subcommands(capsys):
    assert main(["experiment", "--help"]) == ExitCode.OK
    out = capsys.readouterr().out
    for sub in SUBCOMMANDS:
        assert sub in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["experiment"], "required"),
        (["experiment", "nonsense"], "invalid choice"),
        (["experiment", "draft-scaling", "--seed", "-1"], "must be an integer >= 0; got -1"),
        (["experiment", "trees", "--budgets", "12"], "budgets must be among (8, 16)"),
        (["experiment", "trees", "--trials", "0"], "must be an integer >= 1; got 0"),
        (["experiment", "draft-length", "--capacity-layers", "2", "3"],
         "capacity_layers must hold at least 3 layers"),
        (["experiment", "draft-length", "--holdout", "1.5"], "must be in (0, 1); got 1.5"),
        (["experiment", "draft-length", "--costs", "0.1", "0"], "costs must be finite numbers > 0"),
        (["experiment", "draft-length", "--trace", "no/such/file.npz"], "no such file"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_exit_2(argv, message, capsys):
    assert main(argv) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2


def test_draft_length_refuses_trace_options_beside_a_trace_file(tmp_path, capsys):
    trace = tmp_path / "t.npz"
    trace.write_bytes(b"")
    argv = ["experiment", "draft-length", "--trace", str(trace), "--max-new-tokens", "3"]
    assert main(argv) == ExitCode.USAGE
    assert "--max-new-tokens cannot be combined with --trace" in capsys.readouterr().err


def test_draft_length_small_real_run(loaded_once, capsys):
    argv = ["experiment", "draft-length", "-q", "--prompts", "0-3", "--max-new-tokens", "4",
            "--layer", "3", "--cost-layers", "2", "--repeats", "2", "--capacity-layers", "1", "2",
            "3", "--epochs", "1", "--costs", "0.3"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    out = capsys.readouterr().out
    assert "trace: " in out and " 4 prompts" in out
    assert "c(L=2) = " in out and "c(L=3) = " in out
    assert "held-out loss against beta" in out
    blocks = [line for line in out.splitlines() if line.startswith("--- c = ")]
    assert len(blocks) == 2 and blocks[1].startswith("--- c = 0.300: held-out 1 prompts")
    speedups = {}
    for line in out.splitlines():
        key = line.split(" ")[0]
        if key in ("best_fixed", "heuristic", "oracle", "head") and "S = " in line:
            speedups.setdefault(key, []).append(float(line.split("S = ")[1].split()[0]))
    assert set(speedups) == {"best_fixed", "heuristic", "oracle", "head"}
    for values in speedups.values():
        assert len(values) == 2 and all(math.isfinite(v) and v > 0 for v in values)


def test_draft_length_refuses_a_layer_beyond_the_model(loaded_once, capsys):
    argv = ["experiment", "draft-length", "--prompts", "0", "--max-new-tokens", "2",
            "--layer", "99"]  # fmt: skip
    assert main(argv) == ExitCode.USAGE
    assert "exit layers must be < 30" in capsys.readouterr().err


def test_trees_small_real_run(loaded_once, tmp_path, capsys):
    out = tmp_path / "trees"
    argv = ["experiment", "trees", "-q", "--quick", "--out", str(out), "--prompts", "1",
            "--offset", "1", "--trees", "1", "--trials", "50", "--ref-trials", "2"]  # fmt: skip
    assert main(argv) == ExitCode.OK
    printed = capsys.readouterr().out
    rows = _read(out / "tau.csv")
    assert {r["drafter"] for r in rows} == {
        "chain", "spectr", "rsd_c", "rsd_s", "sequoia", "eagle", "eagle_top",
    }  # fmt: skip
    assert {int(r["budget"]) for r in rows} == {8}
    for r in rows:
        # one tree of 8 drafted tokens: every block holds the bonus token and at most 8 more
        assert int(r["trees"]) == 1 and 1 <= float(r["tau"]) <= 9
    assert (out / "tau.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "orderings.csv").is_file() and "Orderings claimed by the papers" in printed
    assert np.all([f"{float(r['tau']):.3f}" in printed for r in rows])
