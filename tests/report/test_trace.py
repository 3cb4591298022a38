"""``spectheory report --trace FILE``: the report on a researcher's own trace, no model loaded."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import spectheory as stt
from spectheory.cli import main
from spectheory.lm import Trace
from spectheory.report import build_report


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    """A 2-prompt, 24-position trace over 1,000 tokens from arrays, saved as a trace file.

    Zipf-like targets (p ~ rank^-1.5, as language models' are peaked with long tails): the
    top token has about 0.3 of the mass, so i.i.d. drafts repeat (the de-duplication bug
    shows), and about 1.7% lies below float16's smallest normal 2^-14 (the half-precision
    bug shows: both flagged with p < 1e-26 at the rows the report picks).  The draft's
    logits are the target's plus N(0, 1) noise (overlap 0.6..0.8 at those rows).
    """
    rng = np.random.default_rng(0)
    V = 1000
    target = -1.5 * np.log(np.arange(1, V + 1))[None] + rng.normal(size=(24, V)) * 0.3
    target = target[:, rng.permutation(V)]
    draft = target + rng.normal(size=(24, V))
    tr = Trace.from_arrays(target, {"mine": draft}, name="my-model", prompt_ids=[0] * 12 + [1] * 12)
    return tr.save(tmp_path_factory.mktemp("trace") / "mine.safetensors")


@pytest.fixture()
def no_model(monkeypatch):
    """Any attempt to load a model fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("report --trace loaded a model")

    monkeypatch.setattr("spectheory.lm.load_model", refuse)
    monkeypatch.setattr("spectheory.papers._common.get_model", refuse)


def test_report_on_a_trace_file_loads_no_model(trace_file, tmp_path, no_model, monkeypatch):
    from spectheory import papers

    # the papers that run the model are skipped before they start; keep one such paper only
    monkeypatch.setattr(papers, "PAPERS", {"leviathan": papers.PAPERS["leviathan"]})
    res = build_report(tmp_path, sections=["setup", "lossless", "papers"], progress=False,
                       trace=str(trace_file))  # fmt: skip
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["trace_file"] == {"path": str(trace_file), "model": "arrays:my-model"}
    assert summary["setup"]["trace file"] == f"{trace_file} (model arrays:my-model)"
    assert summary["setup"]["drafts"] == "logits:mine"
    # nothing was sampled, and the report records no adapter for a trace file
    assert summary["setup"]["target sampling"] == "none: the trace was built from arrays"
    assert summary["setup"]["trained adapters"] == "none in this trace"
    reason = summary["skipped"]["papers/leviathan"]
    assert "runs the model" in reason and str(trace_file) in reason
    assert summary["lossless"]["draft"] == "logits:mine"
    assert summary["lossless"]["verdicts"]["rrs"] == "consistent with lossless"
    assert summary["lossless"]["verdicts"]["typical"] == "lossy"
    assert res.ok
    html = res.html.read_text()
    assert "speculative decoding on arrays:my-model" in html
    assert "Skipped papers/leviathan: it runs the model" in html
    assert f"from the trace file {trace_file}" in html


def test_cli_report_trace(trace_file, tmp_path, no_model, capsys):
    argv = ["report", "--trace", str(trace_file), "--sections", "setup", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert f"trace: {trace_file} (model arrays:my-model)" in out
    # recording options would be ignored: refused
    assert main([*argv, "--out", str(tmp_path / "s"), "--model", "x"]) == 2
    assert "--model cannot be combined with --trace" in capsys.readouterr().err


def test_papers_that_cannot_use_the_trace_are_skipped_or_refused(trace_file, tmp_path, no_model,
                                                                 monkeypatch, capsys):
    """A trace from arrays has no early exits and is not SmolLM2's.

    The report skipped nothing and died on "table 'alpha_vs_n' of hu2025 is empty"; and
    ``reproduce specdecpp --trace`` fed the trace's token ids to SmolLM2 and exited 0 with
    tables about nothing.  Now the report skips such a paper, saying why, and ``reproduce``
    refuses before loading any model.
    """
    from spectheory import papers

    monkeypatch.setattr(papers, "PAPERS", {k: papers.PAPERS[k] for k in ("hu2025", "blockverify")})
    res = build_report(tmp_path / "r", sections=["setup", "papers"], progress=False,
                       trace=str(trace_file))  # fmt: skip
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    reason = summary["skipped"]["papers/hu2025"]
    assert "hu2025 analyses the trace's drafts named exit:..." in reason
    assert "the trace has logits:mine" in reason
    assert "papers/blockverify" not in summary["skipped"]  # any draft will do for it
    assert res.ok
    monkeypatch.undo()
    for paper, message in (
        ("specdecpp", "specdecpp runs the model smollm2-135m-instruct on the trace's tokens, "
                      "but the trace was recorded from arrays:my-model"),
        ("hu2025", "hu2025 analyses the trace's drafts named exit:...; the trace has logits:mine"),
        ("leviathan", "drafts named exit:... or ngram:..."),
    ):
        argv = ["reproduce", paper, "--quick", "--trace", str(trace_file), "--quiet",
                "--out", str(tmp_path / paper)]  # fmt: skip
        assert main(argv) == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / paper).exists()


def test_trace_and_settings_together_are_refused(trace_file, tmp_path):
    from spectheory.lm import TraceSettings

    with pytest.raises(stt.InvalidParameterError, match="settings or trace, not both"):
        build_report(tmp_path, sections=["setup"], progress=False, trace=str(trace_file),
                     settings=TraceSettings())  # fmt: skip


def test_a_section_in_a_second_process_gives_the_same_report(trace_file, tmp_path, monkeypatch):
    """``jobs=2`` runs the background sections in a spawned process: same summary and blocks.

    The papers are the section that runs there in practice; the losslessness checks stand in
    for them here (the same mechanism, seconds instead of minutes on this trace).
    """
    import spectheory.report as report

    monkeypatch.setattr(report, "BACKGROUND_SECTIONS", ("lossless",))
    runs = {}
    for jobs in (1, 2):
        res = build_report(tmp_path / str(jobs), sections=["setup", "lossless"], progress=False,
                           trace=str(trace_file), jobs=jobs)  # fmt: skip
        html = res.html.read_text()
        part = html[html.index('id="lossless"') : html.index('id="time"')]
        # every cell but the last number of each row (the check's seconds) must agree
        timing = r"<td>[0-9.e+-]+</td>(<td class=\"(pass|fail)\">)"
        runs[jobs] = (res.summary, re.sub(timing, r"\1", part))
    assert runs[2][0]["lossless"] == runs[1][0]["lossless"]
    assert runs[2][1] == runs[1][1]
    assert "ran in a second process" in (tmp_path / "2" / "report.html").read_text()
    assert "ran in a second process" not in (tmp_path / "1" / "report.html").read_text()
    assert runs[2][0]["ok"] and runs[2][0]["cpu_seconds"]["lossless"] > 0


def test_jobs_must_be_a_positive_integer(trace_file, tmp_path):
    with pytest.raises(ValueError, match="jobs"):
        build_report(tmp_path, sections=["setup"], progress=False, trace=str(trace_file), jobs=0)


def test_summary_json_is_strict_json_where_a_number_is_not_finite(trace_file, tmp_path, no_model,
                                                                   monkeypatch):
    """A section's NaN or infinity (a detectable TV of inf, a mean over no rows) was written as
    ``NaN``/``Infinity``: not JSON, refused by jq, JavaScript and every strict parser.  They
    are null now."""
    import spectheory.report as report_mod

    setup = report_mod.SECTIONS["setup"]

    def setup_with_odd_numbers(ctx, page):
        setup(ctx, page)
        ctx.summary["odd"] = {"nan": float("nan"), "inf": [float("inf"), -float("inf"), 1.5]}

    monkeypatch.setitem(report_mod.SECTIONS, "setup", setup_with_odd_numbers)
    build_report(tmp_path, sections=["setup"], progress=False, trace=str(trace_file))

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    summary = json.loads((tmp_path / "summary.json").read_text(), parse_constant=refuse)
    assert summary["odd"] == {"nan": None, "inf": [None, None, 1.5]}
