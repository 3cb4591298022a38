"""Report sections in a second process, beside the others (``build_report(jobs=2)``).

The papers' reproductions and the verifier replay are independent and each
mostly single-threaded Python around numba kernels, so on a 2-core machine the
report's wall-clock time is about their maximum rather than their sum when the
papers run in a second process.  The child is *spawned* (not forked: the
parent may already run numba's and torch's thread pools, which are not
fork-safe), loads the trace from its file, runs the section on a
:class:`~spectheory.report._html.Page` of its own and returns the page's
blocks, the section's summary and its wall-clock and CPU seconds.  Each
process uses one numba and one torch thread while both run, so the two do not
oversubscribe the cores.  Results do not depend on the thread count (the
kernels' randomness is per trial, docs/design.md), so the report is the same.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

__all__ = ["BACKGROUND_SECTIONS", "one_thread", "start_section"]

#: Sections that may run in the second process: they read only the trace (from
#: its file), write their own files and page blocks, and load their own model.
BACKGROUND_SECTIONS = ("papers",)


@contextmanager
def one_thread():
    """numba and torch on one thread inside the block (restored afterwards)."""
    import numba

    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        import torch
    except ImportError:  # the torch extra is optional
        torch = None
    old_torch = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(old)
        if torch is not None:
            torch.set_num_threads(old_torch)


def _run_section(name, out_dir, quick, progress, trace_path, trace_file):
    """The child: section ``name`` on the trace at ``trace_path``; (page, summary, s, cpu s)."""
    from ..lm import load_trace
    from . import SECTIONS
    from ._core import ReportContext
    from ._html import Page

    t0, c0 = time.perf_counter(), time.process_time()
    with one_thread():
        ctx = ReportContext(out_dir=Path(out_dir), quick=quick, progress=progress)
        ctx.trace = load_trace(trace_path)
        ctx.trace_file = trace_file
        page = Page("")
        SECTIONS[name](ctx, page)
    return page, ctx.summary, time.perf_counter() - t0, time.process_time() - c0


def start_section(name, ctx, trace_path) -> tuple[ProcessPoolExecutor, Future]:
    """Start section ``name`` in a spawned process; the future gives :func:`_run_section`'s tuple.

    ``ctx`` must carry no loaded model and no user verifiers (the child has
    neither); ``trace_path`` is the trace's file.
    """
    import multiprocessing

    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    fut = pool.submit(_run_section, name, str(ctx.out_dir), ctx.quick, ctx.progress,
                      str(trace_path), ctx.trace_file)  # fmt: skip
    return pool, fut
