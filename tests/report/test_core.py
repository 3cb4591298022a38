"""`spectheory check` and `spectheory report`: exit codes, files, and the report's verdicts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from spectheory.cli import main
from spectheory.report import build_report, informative_rows
from spectheory.report._html import Page
from tests.planted_tables import planted_replay


def always_accept_first(target, draft, drafts, rng):
    """A user verifier that is biased towards the draft: always outputs the first draft."""
    return int(drafts[0])


EXAMPLE = ["--target", "0.3,0.4,0.3", "--draft", "0.6,0.3,0.1"]


def test_check_passes_a_lossless_verifier(capsys):
    assert main(["check", "rrs", "--n", "2", *EXAMPLE]) == 0
    out = capsys.readouterr().out
    assert "consistent with lossless" in out and "bound 0.8900" in out


@pytest.mark.parametrize(
    "verifier", ["bug:rrs_dedup", "typical", "tests.report.test_core:always_accept_first"]
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


def test_page_fits_wide_figures_to_the_page():
    """A four-draft figure is wider than the page; seen in Chromium, it ran off the right edge."""
    import re

    from spectheory.report._html import _STYLE

    rule = re.search(r"(?:^|\})\s*img\{([^}]*)\}", _STYLE)
    assert rule and "max-width:100%" in rule.group(1) and "height:auto" in rule.group(1)


def test_report_quick_on_the_real_model(smol, tmp_path):
    res = build_report(
        tmp_path, quick=True, sections=["setup", "lossless"], progress=False, loaded=smol
    )
    assert res.ok
    summary = json.loads((tmp_path / "summary.json").read_text())
    verdicts = summary["lossless"]["verdicts"]
    assert verdicts["rrs"] == "consistent with lossless" and verdicts["typical"] == "lossy"
    assert f"({smol.num_layers} layers, V = " in summary["setup"]["model"]  # not "? layers"
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


def _planted_replay(trace=None, **kwargs):
    """24 positions of an n-gram draft (tests/planted_tables.py)."""
    return planted_replay(24, "ngram:2", acceptance_offset=-0.05)


def test_report_compares_draft_laws_on_the_same_positions(tmp_path, monkeypatch):
    import csv
    from types import SimpleNamespace

    import spectheory.sim.replay as replay_mod
    from spectheory.report._core import ReportContext, section_bounds_and_verifiers
    from spectheory.sim.replay import common_positions

    monkeypatch.setattr(replay_mod, "replay", _planted_replay)
    monkeypatch.setattr(replay_mod, "REPLAY_VERIFIERS", ("rrs",))
    trace = SimpleNamespace(num_positions=24, drafts=("ngram:2",))
    ctx = ReportContext(out_dir=tmp_path, quick=True, progress=False, trace=trace)
    page = Page("t")
    section_bounds_and_verifiers(ctx, page)
    with open(tmp_path / "verifiers_summary.csv", newline="") as fh:
        rows = {(int(r["n"]), r["draft law"]): r for r in csv.DictReader(fh)}
    iid, wor = rows[(2, "iid")], rows[(2, "without_replacement")]
    # On the 12 common positions: without replacement above i.i.d., as the theory requires.
    assert int(iid["positions"]) == int(wor["positions"]) == 12
    assert int(iid["positions left out"]) == 12
    np.testing.assert_allclose(float(iid["bound"]), 0.2, rtol=1e-12)
    np.testing.assert_allclose(float(wor["bound"]), 0.21, rtol=1e-12)
    # n = 1 on the same 12 positions: the curve against n may not fall (0.55 -> 0.2 before)
    assert int(rows[(1, "iid")]["positions"]) == 12
    assert float(rows[(1, "iid")]["bound"]) <= float(iid["bound"]) <= float(wor["bound"])
    assert ctx.summary["verifiers"]["positions_compared"]["ngram:2/T=1/n=2"] == 12
    assert (
        "Positions compared (every n): ngram:2, T = 1: 12 of 24"
        in page.write(tmp_path / "r.html").read_text()
    )
    common = common_positions(_planted_replay())
    assert sorted(common[("ngram:2", 1.0, 2)]) == list(range(12))
    assert common[("ngram:2", 1.0, 1)] == common[("ngram:2", 1.0, 2)]


def test_setup_states_the_layer_count():
    from types import SimpleNamespace

    from spectheory.report._core import _layers

    assert _layers(SimpleNamespace(metadata={"model": {"num_layers": 30}})) == "30 layers"
    assert "?" not in _layers(SimpleNamespace(metadata={}))


def test_report_records_the_quantised_draft_and_cached_adapters(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from spectheory.lm.adapters import adapter_path
    from spectheory.report import _full_settings, _quick_settings, cached_adapters, report_drafts
    from spectheory.report._core import _adapters_line

    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path))
    assert cached_adapters() == ()
    assert report_drafts() == ("exit:15", "exit:25", "quant:Q4_0", "ngram:3")
    assert _quick_settings().drafts == _full_settings().drafts == report_drafts()
    line = _adapters_line(SimpleNamespace(drafts=report_drafts()))
    assert "none" in line and "spectheory draft train --layer 25" in line
    # A cached adapter (its file in the cache) joins the report's drafts.
    path = adapter_path(25, "smollm2-135m-instruct")
    assert path.is_relative_to(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    assert cached_adapters() == ("adapter:25",)
    assert report_drafts() == ("exit:15", "exit:25", "quant:Q4_0", "adapter:25", "ngram:3")
    assert _adapters_line(SimpleNamespace(drafts=report_drafts())).startswith("adapter:25")


def test_report_loads_the_model_once_when_it_records_the_trace(tmp_path, monkeypatch):
    """An uncached trace: the model loaded for recording is the one the papers get."""
    from types import SimpleNamespace

    import spectheory.lm as lm
    import spectheory.report as report
    from spectheory.lm import TraceSettings

    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path / "cache"))
    loads, seen = [], {}
    model = SimpleNamespace(name="fake")
    trace = SimpleNamespace(settings=TraceSettings(drafts=("ngram:3",)))

    def fake_load(name):
        loads.append(name)
        return model

    def fake_record(settings, loaded=None, progress=True):
        seen["recorded_with"] = loaded
        return trace

    monkeypatch.setattr(lm, "load_model", fake_load)
    monkeypatch.setattr(lm, "record_trace", fake_record)
    monkeypatch.setitem(report.SECTIONS, "probe", lambda ctx, page: seen.update(papers=ctx.loaded))
    settings = TraceSettings(drafts=("ngram:3",), prompts=(0,))
    build_report(tmp_path / "a", sections=["probe"], progress=False, settings=settings)
    assert loads == ["smollm2-135m-instruct"]
    assert seen["recorded_with"] is model and seen["papers"] is model
    # Cached: nothing is loaded up front (the papers load the model only if one needs it).
    path = lm.cache_dir() / "traces" / f"{settings.key()}.safetensors"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    seen.clear()
    build_report(tmp_path / "b", sections=["probe"], progress=False, settings=settings)
    assert loads == ["smollm2-135m-instruct"]
    assert seen["recorded_with"] is None and seen["papers"] is None


def test_tables_scroll_instead_of_being_cut_off(tmp_path):
    """A wide table (the without-replacement table) ran past the page and lost its last
    column; tables sit in a horizontally scrolling box."""
    page = Page("t")
    page.table([{f"column {i}": i for i in range(30)}], [f"column {i}" for i in range(30)])
    html = page.write(tmp_path / "t.html").read_text()
    assert '<div class="wide"><table>' in html and ".wide{overflow-x:auto}" in html


def _rows(positions, groups):
    """Replay rows of one n-gram draft at T = 1, verifier rrs: ``groups`` maps (n, law) to
    (the positions replayed, acceptance per position); bound 1/2, 1,000 trials each."""
    return [{
        "position": i, "prompt_id": 0, "step": i, "draft": "ngram:2", "temperature": 1.0,
        "n": n, "sampling": law, "verifier": "rrs", "lossless": True, "bound": 0.5,
        "exact": float("nan"), "mc": mc, "mc_low": 0.0, "mc_high": 1.0, "trials": 1000,
        "chi2_p": 0.5, "impossible": 0, "pit_mean": 0.5,
    } for (n, law), (kept, mc) in groups.items() for i in range(positions) if i < kept]


def _summary(tmp_path, monkeypatch, positions, groups):
    import csv
    from types import SimpleNamespace

    import spectheory.sim.replay as replay_mod
    from spectheory.report._core import ReportContext, section_bounds_and_verifiers

    monkeypatch.setattr(replay_mod, "replay", lambda *a, **k: _rows(positions, groups))
    monkeypatch.setattr(replay_mod, "REPLAY_VERIFIERS", ("rrs",))
    trace = SimpleNamespace(num_positions=positions, drafts=("ngram:2",))
    ctx = ReportContext(out_dir=tmp_path, quick=True, progress=False, trace=trace)
    section_bounds_and_verifiers(ctx, Page("t"))
    with open(tmp_path / "verifiers_summary.csv", newline="") as fh:
        return {(int(r["n"]), r["draft law"]): r for r in csv.DictReader(fh)}


def test_positions_left_out_counts_the_positions_not_compared(tmp_path, monkeypatch):
    """Bug: ``positions left out`` held the number of positions kept.  (The planted table of
    the test above keeps 12 of 24, where both counts are 12.)

    25 positions, n = 2 without replacement replayed on the first 10 only: every n of
    the draft is compared on those 10 (the same set for every n) and leaves out 15.
    """
    rows = _summary(tmp_path, monkeypatch, 25, {
        (1, "iid"): (25, 0.5), (1, "without_replacement"): (25, 0.5),
        (2, "iid"): (25, 0.5), (2, "without_replacement"): (10, 0.5),
    })
    for key in rows:
        assert (rows[key]["positions"], rows[key]["positions left out"]) == ("10", "15"), key


def test_above_bound_is_bonferroni_corrected_over_the_groups(tmp_path, monkeypatch):
    """Bug: a group's ``above bound`` flag compared its own p-value with the false-alarm
    rate, without the factor of the table's number of groups.

    One group accepts 517 of 1,000 trials at each of 24 positions against a bound of
    1/2: Chernoff's bound on the upper tail is exp(-N KL(0.517 || 0.5)) with
    N = 24,000, about 9.5e-7, below 1e-6 but above 1e-6 / 2 (two groups): not flagged.
    A group at 0.53 (p about 1e-31) is flagged.
    """
    import math

    def chernoff(rate, bound=0.5, draws=24_000):
        kl = rate * math.log(rate / bound) + (1 - rate) * math.log((1 - rate) / (1 - bound))
        return math.exp(-draws * kl)

    assert 0.5e-6 < chernoff(0.517) <= 1e-6
    rows = _summary(tmp_path, monkeypatch, 24, {
        (1, "iid"): (24, 0.517), (1, "without_replacement"): (24, 0.5),
    })
    assert float(rows[(1, "iid")]["excess p"]) == pytest.approx(chernoff(0.517), rel=1e-9)
    assert rows[(1, "iid")]["above bound"] == "False"
    rows = _summary(tmp_path, monkeypatch, 24, {
        (1, "iid"): (24, 0.53), (1, "without_replacement"): (24, 0.5),
    })
    assert rows[(1, "iid")]["above bound"] == "True"
