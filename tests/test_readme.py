"""The README's set-up commands and .ci/run stay in step; the command line works."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spectheory.cli import main

ROOT = Path(__file__).resolve().parents[1]


def readme_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set-up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, flags=re.S)


def test_exactly_two_setup_commands_and_ci_runs_the_test_one():
    commands = readme_commands()
    assert len(commands) == 2
    main_job, test_cmd = commands
    assert "spectheory" in main_job and "pytest" in test_cmd
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci == [test_cmd]


def test_cli_bound_example(capsys):
    assert main(["bound", "--vocab", "0", "--n", "2", "--sampling", "iid"]) == 0
    out = capsys.readouterr().out
    assert "0.890000000" in out and "[0, 1]" in out


def test_cli_bound_exact_method_json(capsys):
    code = main(["bound", "--vocab", "0", "--n", "2", "--method", "enumerate", "--json"])
    assert code == 0
    out = capsys.readouterr().out
    assert '"exact": "139/140"' in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["bound", "--vocab", "0", "--n", "0"], "--n: must be an integer >= 1; got 0"),
        (
            ["bound", "--vocab", "0", "--target", "0.3,0.4,0.3", "--draft", "0.5,0.7,0.1"],
            "draft sums to 1.3",
        ),
        (
            ["bound", "--vocab", "0", "--target", "a,b", "--draft", "0.5,0.5"],
            "--target must be comma-separated",
        ),
        (["bound", "--vocab", "0", "--draft", "0.5,0.7,0.1"], "--draft needs --target"),
    ],
)
def test_cli_errors_exit_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_python_blocks_run_in_order(tmp_path, monkeypatch):
    """Every ```python block of the README, run in order in one namespace (as a reader pasting
    them would): several used names no block defined (``P``, ``Q``, ``drafts``, ``u``) or
    asked for four drafts without replacement from a three-token draft."""
    text = (ROOT / "README.md").read_text()
    blocks = [(m.start(), m.group(1))
              for m in re.finditer(r"```python\n(.*?)\n```", text, flags=re.S)]  # fmt: skip
    assert len(blocks) >= 10
    monkeypatch.chdir(tmp_path)  # a block may write files
    namespace: dict = {}
    for start, block in blocks:
        line = text[:start].count("\n") + 1
        exec(compile(block, f"README.md, the block at line {line}", "exec"), namespace)
