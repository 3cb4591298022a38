"""The report's section on the papers: every reproduction of :mod:`spectheory.papers`."""

from __future__ import annotations

import time

from ._core import ReportContext

__all__ = ["section_papers"]

_CHECK_COLUMNS = ["name", "kind", "reference", "ours", "criterion", "source", "required", "passed"]


def section_papers(ctx: ReportContext, page) -> None:
    """Run every registered reproduction on the report's trace; embed figures and checks.

    Each paper writes its CSV tables and PNG figures into ``papers/NAME/`` of the
    report folder (the same files as ``spectheory reproduce NAME``).
    """
    from .._errors import InvalidParameterError
    from ..lm._loader import SMOLLM2
    from ..papers import PAPERS
    from ..papers._common import check_trace_suits, get_model

    page.section("The papers, reproduced", "papers")
    page.paragraph(
        "Each reproduction compares published numbers or claims (docs/theory.md §9) with ours. "
        "Required checks decide the verdict; checks marked `required = no` are reported only: "
        "unconfirmed second-hand claims, numbers measured on other models and hardware, and "
        "`internal` checks (the package against itself). `kind` says what is compared: "
        "`published` (a number or claim printed in the paper), `derived` (a value derived in "
        "docs/theory.md from the paper's formulas or data) or `internal`. "
        "Each runs its quick grid on this report's trace; `spectheory reproduce NAME` runs the "
        "full grid. Files: `papers/NAME/` beside this report."
    )
    summary = {}
    for name, paper in PAPERS.items():
        if paper.needs_model and ctx.loaded is None and ctx.trace_file:
            ctx.skip(f"papers/{name}", f"it runs the model, and report --trace {ctx.trace_file} "
                     "loads none (run `spectheory reproduce` with the model)", page)  # fmt: skip
            continue
        if paper.uses_trace and ctx.trace is not None:
            # the drafts it analyses, and for a paper that runs a model, a trace of that model
            model = ctx.loaded.name if ctx.loaded is not None else SMOLLM2
            try:
                check_trace_suits(ctx.trace, name, model)
            except InvalidParameterError as exc:
                ctx.skip(f"papers/{name}", str(exc), page)
                continue
        if paper.needs_model and ctx.loaded is None:
            ctx.loaded = get_model()
        ctx.say(f"reproducing {name}")
        c0 = time.process_time()
        res = paper.reproduce(
            ctx.out_dir / "papers" / name,
            # The reproductions' quick grids (fewer n, temperatures, positions) keep
            # the report within minutes; `spectheory reproduce all` runs the full grids.
            quick=True,
            trace=ctx.trace,
            loaded=ctx.loaded,
            progress=ctx.progress,
        )
        cpu = time.process_time() - c0
        page.subheading(f"{name}: {paper.title} (arXiv {paper.arxiv})")
        page.paragraph(f"Regenerates {paper.regenerates}. {res.seconds:.0f} s "
                       f"({cpu:.0f} s of CPU).")  # fmt: skip
        for f in res.files:
            if f.suffix == ".png":
                page.figure(f, f"{name}: {f.stem}")
        rows = [c.row() for c in res.checks]
        for r in rows:
            # A reported-only comparison shows PASS/FAIL as well, but cannot fail the report.
            r["as expected"] = r["passed"] or not r["required"]
        page.table(rows, [*_CHECK_COLUMNS, "as expected"], status_column="as expected")
        for note in res.notes:
            page.paragraph(f"Note: {note}")
        summary[name] = {
            "ok": res.ok,
            "checks": len(res.checks),
            "failed": [c.name for c in res.failed],
            "seconds": res.seconds,
            "cpu_seconds": cpu,
        }
    ctx.summary["papers"] = {
        "all_as_expected": all(s["ok"] for s in summary.values()),
        **summary,
    }
