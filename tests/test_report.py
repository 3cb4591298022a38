"""`spectheory check` and `spectheory report`: exit codes, files, and the report's verdicts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from spectheory.cli import main
from spectheory.report import build_report, informative_rows
from spectheory.report._html import Page


def always_accept_first(target, draft, drafts, rng):
    """A user verifier that is biased towards the draft: always outputs the first draft."""
    return int(drafts[0])


EXAMPLE = ["--target", "0.3,0.4,0.3", "--draft", "0.6,0.3,0.1"]


def test_check_passes_a_lossless_verifier(capsys):
    assert main(["check", "rrs", "--n", "2", *EXAMPLE]) == 0
    out = capsys.readouterr().out
    assert "consistent with lossless" in out and "bound 0.8900" in out


@pytest.mark.parametrize(
    "verifier", ["bug:rrs_dedup", "typical", "tests.test_report:always_accept_first"]
)
def test_check_flags_biased_verifiers_with_exit_code_3(verifier, capsys):
    assert main(["check", verifier, *EXAMPLE, "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert report["lossy"] is True and report["alpha"] == 1e-6


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check", "nonsense", *EXAMPLE], "verifier must be a registry name"),
        (["check", "bug:nope", *EXAMPLE], "unknown bug 'nope'"),
        (["check", "no.such.module:f", *EXAMPLE], "cannot be imported"),
        (["check", "rrs", "--target", "0.5,0.6"], "target sums to 1.1"),
        (["check", "rrs", *EXAMPLE, "--alpha", "2"], "--alpha: must be in (0, 1); got 2"),
    ],
)
def test_check_bad_input_exit_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_informative_rows_rule():
    p = np.array([[0.5, 0.5], [1.0, 0.0], [0.9, 0.1], [0.5, 0.5]])
    q = np.array([[0.9, 0.1], [0.0, 1.0], [0.5, 0.5], [0.5, 0.5]])
    # Row 1 has overlap 0 and row 3 overlap 1: both excluded; row 0 has the higher entropy.
    assert informative_rows(p, q, 5).tolist() == [0, 2]


def test_page_escapes_text_and_marks_status(tmp_path):
    page = Page("<t>")
    page.section("A & B", "a")
    page.paragraph("use `bound` <now>")
    page.table([{"ok": True}, {"ok": False}], ["ok"], status_column="ok")
    text = page.write(tmp_path / "r.html").read_text()
    assert "<title>&lt;t&gt;</title>" in text and "A &amp; B" in text
    assert "<code>bound</code> &lt;now&gt;" in text
    assert 'class="pass">PASS' in text and 'class="fail">FAIL' in text


def test_report_quick_on_the_real_model(smol, tmp_path):
    res = build_report(
        tmp_path, quick=True, sections=["setup", "lossless"], progress=False, loaded=smol
    )
    assert res.ok
    summary = json.loads((tmp_path / "summary.json").read_text())
    verdicts = summary["lossless"]["verdicts"]
    assert verdicts["rrs"] == "consistent with lossless" and verdicts["typical"] == "lossy"
    assert all(v == "lossy" for k, v in verdicts.items() if k.startswith("bug:"))
    html = res.html.read_text()
    assert "Losslessness of every verifier" in html and "FAIL" not in html
    assert (tmp_path / "lossless.csv").read_text().count("\n") == len(verdicts) + 1


def test_report_rejects_unknown_section(tmp_path):
    with pytest.raises(ValueError, match="sections must be among"):
        build_report(tmp_path, sections=["nope"], progress=False)


def test_atomic_writes_get_the_usual_mode_under_the_umask(tmp_path):
    import os

    from spectheory._files import atomic_path

    old = os.umask(0o022)
    try:
        with atomic_path(tmp_path / "f.txt") as tmp:
            open(tmp, "w").close()
    finally:
        os.umask(old)
    assert (tmp_path / "f.txt").stat().st_mode & 0o777 == 0o644  # not mkstemp's private 0600
