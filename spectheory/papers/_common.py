"""Shared machinery of the reproductions: results, checks, files, the trace and the model.

A reproduction writes its tables as CSV and its figures as PNG into one
folder and returns a :class:`PaperResult`: the tables, the files and a list
of :class:`Check` records, each comparing a published number or claim (or a
test vector of docs/theory.md) with ours under a stated tolerance or direction,
and saying which of the three it is (:data:`CHECK_KINDS`).

Figures are drawn on :class:`matplotlib.figure.Figure` objects and saved
through the Agg canvas, without ``pyplot``: no global backend switch, no
open windows, nothing left in the caller's matplotlib state.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import _files
from .._errors import InvalidParameterError, MissingDependencyError

__all__ = [
    "CHECK_COLUMNS",
    "CHECK_KINDS",
    "QUICK_PROMPTS",
    "Check",
    "Paper",
    "PaperResult",
    "Run",
    "close_to",
    "cost_ratio",
    "get_model",
    "get_trace",
    "serial_kernels",
]

#: Columns of ``checks.csv``.
CHECK_COLUMNS = (
    "name", "kind", "source", "reference", "ours", "criterion", "passed", "required",
)  # fmt: skip

#: What a check compares, by kind:
#: ``published``: a number or claim printed in the paper (``source`` names the table, figure,
#: theorem or page);
#: ``derived``: a value derived from the paper's formulas or data in this repository
#: (``source`` names the docs/theory.md section or the notebook);
#: ``internal``: the package against itself (two solvers, two methods); never required,
#: since agreement of two of our own codes says nothing about the paper (the test suite
#: holds these).
CHECK_KINDS = ("published", "derived", "internal")

#: Prompts of the quick trace: one of each category of :data:`spectheory.lm.PROMPTS`
#: (chat, code, math, summarisation, translation, reasoning).
QUICK_PROMPTS = (0, 6, 12, 18, 24, 30)


@dataclass(frozen=True)
class Check:
    """One comparison with a published number or claim.

    Attributes
    ----------
    name : str
        What is compared.
    kind : str
        One of :data:`CHECK_KINDS`: ``published``, ``derived`` or ``internal``.
    source : str
        Where the reference comes from, with its provenance tag
        (``[paper]``, ``[derived]``, ``[unconfirmed]``, as in docs/theory.md).
    reference : str
        The published number or claim.
    ours : str
        Our number.
    criterion : str
        The tolerance or the direction that decides ``passed``.
    passed : bool
    required : bool
        False for comparisons that are reported but cannot fail the
        reproduction: unconfirmed second-hand claims, and published numbers
        measured in a setting that ours does not share (other models,
        hardware), and every ``internal`` check.  The exit code and the tests
        look at required checks only.

    Raises
    ------
    InvalidParameterError
        For a kind outside :data:`CHECK_KINDS`, or an ``internal`` check marked required.
    """

    name: str
    source: str
    reference: str
    ours: str
    criterion: str
    passed: bool
    required: bool
    kind: str

    def __post_init__(self):
        if self.kind not in CHECK_KINDS:
            raise InvalidParameterError(
                f"check kind must be one of {', '.join(CHECK_KINDS)}; got {self.kind!r} "
                f"(check {self.name!r})"
            )
        if self.kind == "internal" and self.required:
            raise InvalidParameterError(
                f"an internal-consistency check cannot be required; got required=True for "
                f"{self.name!r}"
            )

    def row(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "source": self.source,
            "reference": self.reference,
            "ours": self.ours,
            "criterion": self.criterion,
            "passed": self.passed,
            "required": self.required,
        }


@dataclass
class PaperResult:
    """What a reproduction returns.

    Attributes
    ----------
    paper : str
        Registry name.
    out_dir : pathlib.Path
    tables : dict {str: list of dict}
        Every table written, by name (``out_dir / (name + ".csv")``).
    checks : list of Check
    files : list of pathlib.Path
        Every file written (CSV, PNG), in order.
    quick : bool
    seconds : float
        Wall-clock time of the reproduction.
    notes : list of str
        Where the setting differs from the paper's, and what was left out.
    """

    paper: str
    out_dir: Path
    tables: dict
    checks: list
    files: list
    quick: bool
    seconds: float = 0.0
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True iff every required check passed."""
        return all(c.passed for c in self.checks if c.required)

    @property
    def failed(self) -> list:
        """The required checks that failed."""
        return [c for c in self.checks if c.required and not c.passed]

    def summary(self) -> str:
        """A plain-text report of the checks, one line each."""
        lines = [
            f"{self.paper}: {len(self.checks)} checks, "
            f"{sum(c.required for c in self.checks)} required, {len(self.failed)} failed "
            f"({'quick' if self.quick else 'full'} run, {self.seconds:.1f} s) -> {self.out_dir}"
        ]
        for c in self.checks:
            if c.required:
                mark = "PASS" if c.passed else "FAIL"
            else:
                mark = "info" if c.passed else "diff"
            lines.append(
                f"  [{mark}] {c.name}: ours {c.ours} vs {c.reference} "
                f"({c.criterion}; {c.kind}: {c.source})"
            )
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


@dataclass(frozen=True)
class Paper:
    """A registered reproduction.

    Attributes
    ----------
    name : str
        Registry key (``spectheory reproduce NAME``).
    title : str
        Authors and title.
    arxiv : str
        arXiv id(s).
    reproduce : callable
        ``reproduce(out_dir, *, quick=False, trace=None, loaded=None, progress=True)
        -> PaperResult``.
    regenerates : str
        What the reproduction writes.
    needs_model : bool
        Whether it runs the real model (not only its recorded trace).
    uses_trace : bool
        Whether it reads the real model's trace at all; False for reproductions
        that are exact computations on small synthetic instances only.
    draft_prefixes : tuple of str
        The trace drafts it analyses, by name prefix (:func:`paper_drafts`).
    """

    name: str
    title: str
    arxiv: str
    reproduce: Callable
    regenerates: str
    needs_model: bool
    uses_trace: bool = True
    draft_prefixes: tuple = ("exit:",)

    @property
    def setting(self) -> str:
        """``real model``, ``trace only`` or ``exact, no model``: what the reproduction runs."""
        if self.needs_model:
            return "real model"
        return "trace only" if self.uses_trace else "exact, no model"


def close_to(ours, reference, tol) -> bool:
    """``|ours - reference| <= tol`` for finite numbers (False for NaN)."""
    return bool(abs(float(ours) - float(reference)) <= tol)


@contextmanager
def serial_kernels():
    """Run the package's parallel numba kernels on one thread inside the block.

    For loops over many tiny instances (a few tokens each): each call of a
    ``parallel=True`` kernel (the input checks, the solvers) starts a parallel
    region whose threads spin at its barrier, which costs more than the work
    itself, and on a busy machine costs CPU seconds that the load multiplies
    (a search of SpecTr's worst case took 120 CPU s with two threads and 4 with
    one).  Results do not change: every kernel computes the same per-row values
    on any number of threads.  The previous thread count is restored on exit.

    Examples
    --------
    >>> import numba
    >>> before = numba.get_num_threads()
    >>> with serial_kernels():
    ...     numba.get_num_threads()
    1
    >>> numba.get_num_threads() == before
    True
    """
    import numba

    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(old)


class Run:
    """Collects the tables, figures and checks of one reproduction.

    Parameters
    ----------
    paper : str
    out_dir : path-like
        Created if missing.
    quick : bool
    progress : bool
        Print stage messages on stderr.
    """

    def __init__(self, paper, out_dir, quick, progress):
        self.paper = paper
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.quick = bool(quick)
        self.progress = bool(progress)
        self.tables: dict = {}
        self.checks: list = []
        self.files: list = []
        self.notes: list = []
        self._t0 = time.perf_counter()

    def log(self, message: str) -> None:
        if self.progress:
            elapsed = time.perf_counter() - self._t0
            print(f"[{self.paper} {elapsed:6.1f} s] {message}", file=sys.stderr, flush=True)

    def table(self, name: str, rows: list, columns=None) -> list:
        """Store a table and write it atomically as ``name.csv``."""
        if not rows:
            raise InvalidParameterError(f"table {name!r} of {self.paper} is empty")
        columns = list(columns or rows[0].keys())
        self.tables[name] = rows
        self.files.append(_files.write_csv(rows, self.out_dir / f"{name}.csv", columns))
        return rows

    @contextmanager
    def figure(self, name: str, ncols: int = 1, nrows: int = 1, size=(6.4, 4.2)):
        """Yield ``(fig, axes)``; on exit save ``name.png`` atomically (Agg canvas)."""
        try:
            from matplotlib.figure import Figure
        except ImportError:  # pragma: no cover - matplotlib is a declared extra
            raise MissingDependencyError(
                "the reproductions draw figures with matplotlib: pip install matplotlib"
            ) from None
        fig = Figure(figsize=(size[0] * ncols, size[1] * nrows), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False)
        yield fig, axes.ravel() if axes.size > 1 else axes[0, 0]
        path = self.out_dir / f"{name}.png"
        with _files.atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=110)
        self.files.append(path)

    def check(self, name, source, reference, ours, criterion, passed, required=True, *, kind):
        """Record a :class:`Check` of the given ``kind`` (:data:`CHECK_KINDS`) and return it."""
        c = Check(
            name, source, str(reference), str(ours), criterion, bool(passed), bool(required), kind
        )
        self.checks.append(c)
        return c

    def note(self, text: str) -> None:
        self.notes.append(text)

    def result(self) -> PaperResult:
        """Write ``checks.csv`` and return the :class:`PaperResult`."""
        rows = [c.row() for c in self.checks]
        self.tables["checks"] = rows
        self.files.append(_files.write_csv(rows, self.out_dir / "checks.csv", CHECK_COLUMNS))
        return PaperResult(
            paper=self.paper,
            out_dir=self.out_dir,
            tables=self.tables,
            checks=self.checks,
            files=self.files,
            quick=self.quick,
            seconds=time.perf_counter() - self._t0,
            notes=self.notes,
        )


def get_trace(trace, quick: bool, loaded=None, progress: bool = True, *, paper=None):
    """The trace to analyse: ``trace`` itself, a trace file, or the default one.

    ``None`` records (or reuses from the cache) the default trace
    (:class:`spectheory.lm.TraceSettings`: 38 prompts, 24 tokens at T = 1),
    or in quick mode a small one (:data:`QUICK_PROMPTS`, 8 tokens).

    With ``paper`` (a registered paper's name), a given trace must suit it: it must
    hold the drafts the paper analyses (:func:`paper_drafts`), and a paper that
    runs the model on the trace's tokens needs a trace of that very model
    (``loaded``, or the embedded SmolLM2 the paper would load): token ids of
    another vocabulary fed to SmolLM2 give numbers about nothing.
    """
    from ..lm import Trace, TraceSettings, load_trace, record_trace
    from ..lm._loader import SMOLLM2  # the model get_model loads

    if isinstance(trace, Trace) or trace is not None:
        tr = trace if isinstance(trace, Trace) else load_trace(trace)
        if paper is not None:
            check_trace_suits(tr, paper, loaded.name if loaded is not None else SMOLLM2)
        return tr
    settings = TraceSettings(prompts=QUICK_PROMPTS, max_new_tokens=8) if quick else TraceSettings()
    return record_trace(settings, loaded=loaded, progress=progress)


def check_trace_suits(tr, paper: str, model: str) -> None:
    """Refuse a trace that ``paper`` cannot analyse (see :func:`get_trace`).

    ``model`` is the name of the model the paper would run on the trace's
    tokens (checked only for papers that run one).
    """
    from . import PAPERS

    paper_drafts(tr, paper)
    if PAPERS[paper].needs_model and tr.settings.model != model:
        raise InvalidParameterError(
            f"{paper} runs the model {model} on the trace's tokens, but the trace was "
            f"recorded from {tr.settings.model}; pass a trace of {model} (spectheory trace "
            "record) or leave out the trace"
        )


def paper_drafts(tr, paper: str) -> list:
    """The drafts of ``tr`` that ``paper`` analyses (its ``draft_prefixes``), or an error.

    Most reproductions compare the trace's early exits (``exit:L``), one also
    its n-gram draft; a trace built from arrays names its drafts
    ``logits:NAME``, which they cannot place (a layer, a cost ratio).  A paper
    with no prefixes takes every draft.
    """
    from . import PAPERS

    prefixes = PAPERS[paper].draft_prefixes
    if not prefixes:
        return list(tr.drafts)
    drafts = [d for d in tr.drafts if d.startswith(prefixes)]
    if not drafts:
        raise InvalidParameterError(
            f"{paper} analyses the trace's drafts named "
            f"{' or '.join(x + '...' for x in prefixes)}; the trace has {', '.join(tr.drafts)}"
        )
    return drafts


_COST_RATIOS: dict = {}


def cost_ratio(loaded, layer: int, quick: bool):
    """The measured CPU cost ratio of the early exit after ``layer`` layers, once per process.

    :func:`spectheory.lm.measure_cost_ratio` with 30 timed steps after 5 warm-up
    steps (quick: 11 after 2; the median of 3 steps on a shared machine ranged
    from 0.21 to 1.46 for exit:25, whose c is about 0.87).  Reproductions run in
    one process (``reproduce all``) share the measurement, so they use the same ``c``.
    """
    from ..lm import measure_cost_ratio

    key = (id(loaded), int(layer), bool(quick))
    hit = _COST_RATIOS.get(key)
    if hit is None or hit[0] is not loaded:
        repeats, warmup = (11, 2) if quick else (30, 5)
        hit = (loaded, measure_cost_ratio(loaded, layer, repeats=repeats, warmup=warmup))
        _COST_RATIOS[key] = hit
    return hit[1]


def get_model(loaded=None):
    """``loaded`` itself, or the embedded SmolLM2-135M-Instruct (about 25 s to load)."""
    if loaded is not None:
        return loaded
    from ..lm import load_model

    return load_model()
