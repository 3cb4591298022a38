"""The command line as a whole (spectheory.cli): registration, exit codes, help, version, logging.

The per-command regressions are in test_cli_commands.py.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

import spectheory
from spectheory.cli import COMMANDS, ExitCode, build_parser, main
from spectheory.cli._common import (
    dataclass_options,
    id_list,
    nonnegative_int,
    positive_float,
    positive_int,
    probability,
    settings_from_args,
)

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )


# --------------------------------------------------------------------------- registration


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_module_follows_the_convention(name):
    module = importlib.import_module(f"spectheory.cli.{name}")
    assert isinstance(module.HELP, str) and "\n" not in module.HELP
    assert callable(module.add_parser)
    # nested commands (trace record|shard, draft train|list|evaluate) have one run per subcommand
    runs = [getattr(module, r) for r in dir(module) if r == "run" or r.startswith("run_")]
    assert runs and all(callable(r) for r in runs)


def leaves():
    """Every runnable command line: each command, or each subcommand of a nested one."""
    import argparse

    out = []
    for name in COMMANDS:
        sub = next(a for a in build_parser([name])._actions if a.dest == "command")
        actions = sub.choices[name]._actions
        nested = [a for a in actions if isinstance(a, argparse._SubParsersAction)]
        out += [[name, s] for a in nested for s in a.choices] if nested else [[name]]
    return out


@pytest.mark.parametrize("words", [[c] for c in COMMANDS] + leaves())
def test_every_command_has_help_exit_0(words, capsys):
    assert main([*words, "--help"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out.startswith(f"usage: spectheory {' '.join(words)}")
    if words in leaves():
        assert "-q, --quiet" in out and "-v, --verbose" in out


def test_top_level_help_lists_every_command_and_the_exit_codes(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert f"    {name} " in out
    text = " ".join(out.split())
    assert "2 bad input or usage" in text and "3 a check failed" in text


def test_only_the_chosen_command_gets_its_full_parser():
    parser = build_parser(["bound"])
    sub = next(a for a in parser._actions if a.dest == "command")
    assert any(a.dest == "vocab" for a in sub.choices["bound"]._actions)
    assert not any(a.dest == "trials" for a in sub.choices["check"]._actions)


def test_exit_code_table():
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 141]
    assert [c.name for c in ExitCode] == ["OK", "FAILURE", "USAGE", "CHECK_FAILED", "BROKEN_PIPE"]


# --------------------------------------------------------------------------- version and -m


def test_one_version_string():
    from importlib.metadata import version

    from spectheory._version import __version__

    assert spectheory.__version__ == __version__
    assert version("spectheory") == __version__
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()


def test_version_option(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"spectheory {spectheory.__version__}"


def test_python_dash_m_runs_the_same_command_line():
    res = subprocess.run(
        [sys.executable, "-m", "spectheory", "bound", "--vocab", "0", "--n", "2", "--sampling",
         "iid", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["bounds"][0]["alpha_star"] == pytest.approx(0.89, rel=1e-12)
    res = subprocess.run([sys.executable, "-m", "spectheory", "bound", "--vocab", "-5"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 2 and "Traceback" not in res.stderr


def test_the_command_line_is_the_one_entry_point():
    # no argparse and no ``__main__`` block outside spectheory/cli (and ``python -m spectheory``)
    import ast

    offenders = []
    for path in sorted((ROOT / "spectheory").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("spectheory/cli/") or rel == "spectheory/__main__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n.split(".")[0] == "argparse" for n in names):
                offenders.append(f"{rel}:{node.lineno} imports argparse")
            if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
                offenders.append(f"{rel}:{node.lineno} has a __main__ block")
    assert not offenders, "\n".join(offenders)


# --------------------------------------------------------------------------- lazy imports

HEAVY = ("numpy", "numba", "scipy", "torch", "transformers")


@pytest.mark.parametrize(
    "argv", [["--help"], ["--version"], ["bound", "--help"], ["reproduce", "--help"]],
)  # fmt: skip
def test_help_imports_no_heavy_module(argv):
    code = (
        "import sys, contextlib, io\n"
        "from spectheory.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main({argv!r}) == 0\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_every_parser_and_help_imports_no_heavy_module():
    # every command's full parser (with its subcommands) and every help text: their options
    # come from settings dataclasses and signatures read from the source (cli._static)
    code = (
        "import sys, contextlib, io\n"
        "from spectheory.cli import COMMANDS, build_parser, main\n"
        "import argparse\n"
        "for name in COMMANDS:\n"
        "    parser = build_parser([name])\n"
        "    sub = next(a for a in parser._actions if a.dest == 'command').choices[name]\n"
        "    nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]\n"
        "    words = [[name, s] for a in nested for s in a.choices] or [[name]]\n"
        "    for w in words:\n"
        "        with contextlib.redirect_stdout(io.StringIO()):\n"
        "            assert main([*w, '--help']) == 0, w\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
        "print(len(COMMANDS))\n"
    )
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["[]", str(len(COMMANDS))]


def test_import_spectheory_is_lazy_but_complete():
    res = run_python(
        "import sys, spectheory\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
        "print(all(getattr(spectheory, n) is not None for n in spectheory.__all__))\n"
        "print(spectheory.sim.__name__)\n"
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["[]", "True", "spectheory.sim"]
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        spectheory.nonexistent  # noqa: B018


# --------------------------------------------------------------------------- errors and logging


def test_usage_errors_are_one_line_exit_2(capsys):
    assert main(["bound", "--vocab", "-5"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --vocab: must be an integer >= 0; got -5" in err
    assert main(["nosuchcommand"]) == ExitCode.USAGE
    assert "invalid choice: 'nosuchcommand'" in capsys.readouterr().err
    assert main([]) == ExitCode.USAGE


def test_unexpected_failure_exit_1_with_traceback(monkeypatch, capsys):
    import spectheory.cli.bound as bound

    monkeypatch.setattr(bound, "run", lambda args: 1 / 0)
    assert main(["bound", "--vocab", "0"]) == ExitCode.FAILURE
    err = capsys.readouterr().err
    assert "unexpected failure" in err and "ZeroDivisionError" in err and "Traceback" in err


def test_quiet_and_verbose_set_the_logging_level(monkeypatch, capsys):
    import spectheory.cli.bound as bound

    seen = []

    def run(args):
        logger = logging.getLogger("spectheory.cli")
        seen.append(logger.getEffectiveLevel())
        logger.info("an info message")
        return 0

    monkeypatch.setattr(bound, "run", run)
    level = logging.getLogger("spectheory").level
    assert main(["bound"]) == 0 and main(["-q", "bound"]) == 0
    assert main(["bound", "--verbose"]) == 0
    assert seen == [logging.INFO, logging.WARNING, logging.DEBUG]
    assert capsys.readouterr().err.count("an info message") == 2  # not with --quiet
    assert logging.getLogger("spectheory").level == level  # restored after each command


# --------------------------------------------------------------------------- option types


@pytest.mark.parametrize(
    ("kind", "text", "message"),
    [
        (positive_int, "0", "must be an integer >= 1; got 0"),
        (positive_int, "1.5", "expected an integer; got '1.5'"),
        (nonnegative_int, "-1", "must be an integer >= 0; got -1"),
        (positive_float, "nan", "expected a finite number; got 'nan'"),
        (positive_float, "-2", "must be a number > 0; got -2"),
        (probability, "1", "must be in (0, 1); got 1"),
        (id_list, "5-2", "ranges low-high"),
        (id_list, "1,,2", "must look like '0-5,9'"),
        (id_list, "-1", "must look like '0-5,9'"),
    ],
)
def test_option_types_refuse_bad_values(kind, text, message):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError) as info:
        kind(text)
    assert message in str(info.value)


def test_dataclass_options_take_defaults_and_help_from_the_dataclass(capsys):
    import argparse
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Settings:
        """Settings.

        Attributes
        ----------
        size : int
            How many. More words.
        names : tuple of str
            Which ones.
        rate : float
        """

        size: int = 3
        names: tuple = ("a", "b")
        rate: float = 0.5

    parser = argparse.ArgumentParser()
    dataclass_options(parser, Settings)
    assert settings_from_args(Settings, parser.parse_args([])) == Settings()
    got = settings_from_args(Settings, parser.parse_args(["--size", "7", "--names", "x"]))
    assert got == Settings(size=7, names=("x",))
    text = parser.format_help()
    assert "How many (default: 3)" in text and "Which ones (default: a b)" in text
    assert "rate (default: 0.5)" in text
    with pytest.raises(SystemExit):
        parser.parse_args(["--size", "-1"])
    assert "must be an integer >= 0" in capsys.readouterr().err


def test_recording_defaults_come_from_trace_settings():
    from spectheory.cli._recording import trace_settings
    from spectheory.lm import TraceSettings

    parser = build_parser(["trace", "record"])
    args = parser.parse_args(["trace", "record"])
    assert trace_settings(args) == TraceSettings()
    args = parser.parse_args(["trace", "record", "--max-new-tokens", "5", "--prompts", "1-2"])
    assert trace_settings(args) == TraceSettings(max_new_tokens=5, prompts=(1, 2))


def test_check_default_n_is_the_api_default(capsys):
    import inspect

    from spectheory.sim.check import check_lossless

    default_n = inspect.signature(check_lossless).parameters["n"].default
    assert main(["check", "rrs", "--target", "0.3,0.4,0.3", "--draft", "0.6,0.3,0.1",
                 "--trials", "200"]) == 0  # fmt: skip
    assert f"(n = {default_n}," in capsys.readouterr().out


def test_progress_uses_tqdm_and_degrades_without_it(monkeypatch):
    import argparse

    from spectheory.cli._common import progress

    loud, quiet = argparse.Namespace(quiet=0), argparse.Namespace(quiet=1)
    items = [1, 2, 3]
    assert progress(items, quiet, "x") is items
    bar = progress(items, loud, "x")
    assert type(bar).__module__.startswith("tqdm") and list(bar) == items
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # as if tqdm were not installed
    assert progress(items, loud, "x") is items


def test_grid_and_training_defaults_come_from_their_dataclasses():
    from spectheory.cli._grid import grid_from_args
    from spectheory.lm.adapters import TrainSettings
    from spectheory.lm.corpus import CorpusSettings
    from spectheory.sim.sweeps import SweepGrid

    for words in (["sweep", "--shards", "."], ["replay"]):
        args = build_parser(words).parse_args(words)
        assert grid_from_args(args) == SweepGrid()
    words = ["sweep", "--shards", ".", "--n", "2", "--samplings", "all", "--trials", "9"]
    assert grid_from_args(build_parser(words).parse_args(words)) == SweepGrid(ns=(2,), trials=9)
    words = ["draft", "train", "--layer", "12"]
    args = build_parser(words).parse_args(words)
    assert settings_from_args(TrainSettings, args) == TrainSettings()
    assert settings_from_args(CorpusSettings, args) == CorpusSettings()
    words += ["--vocab", "0", "--seed", "3", "--doc-sequences", "7", "--depth", "2"]
    args = build_parser(words).parse_args(words)
    assert settings_from_args(TrainSettings, args) == TrainSettings(vocab=None, seed=3, depth=2)
    assert settings_from_args(CorpusSettings, args) == CorpusSettings(doc_sequences=7, seed=3)


def test_check_without_sampling_checks_every_claimed_law(capsys):
    """``spectheory check naive --n 2`` checked i.i.d. drafts only; it claims two laws."""
    argv = ["check", "naive", "--n", "2", "--target", "0.3,0.4,0.3", "--draft", "0.6,0.3,0.1",
            "--trials", "500"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "(n = 2, iid and without_replacement)" in text and "5e-07 per law" in text
    assert "\n  iid: p-value" in text and "\n  without_replacement: p-value" in text
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["by_law"]) == ["iid", "without_replacement"]
    assert out["by_law"]["iid"]["alpha"] == out["alpha"] / 2
    assert main([*argv, "--sampling", "iid", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sampling"] == "iid" and "by_law" not in out


@pytest.mark.parametrize("command", ["sweep", "replay", "trace", "draft", "draft train"])
def test_help_shows_no_rest_markup(command, capsys):
    """Option help comes from numpydoc attributes; roles, maths and doubled quotes leaked in."""
    assert main([*command.split(), "--help"]) == 0
    text = capsys.readouterr().out
    assert not re.search(r":(data|func|class|mod|meth|math):`|``|'\"|\\text", text), text
