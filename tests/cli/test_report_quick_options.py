"""`spectheory report --quick` with a recording option keeps the quick trace and the report's
drafts (any such option used to replace them by TraceSettings' defaults, 38 prompts x 24
tokens without quant:Q4_0, while the page said "mode quick")."""
from typing import ClassVar

import spectheory.report as report_pkg
from spectheory.cli import main


class _Res:
    ok = True
    seconds = 0.0
    summary: ClassVar[dict] = {}

    def __init__(self, out):
        from pathlib import Path

        self.html = Path(out) / "report.html"


def test_recording_option_keeps_quick_trace_and_report_drafts(monkeypatch, tmp_path):
    seen = {}

    def fake_build_report(out, **kw):
        seen.update(kw)
        return _Res(out)

    monkeypatch.setattr(report_pkg, "build_report", fake_build_report)
    assert main(["report", "--quick", "--seed", "1", "--out", str(tmp_path)]) == 0
    s = seen["settings"]
    quick = report_pkg._quick_settings()
    assert s.seed == 1
    assert (s.prompts, s.max_new_tokens, s.drafts) == (quick.prompts, quick.max_new_tokens,
                                                       quick.drafts)
