"""Sections of ``spectheory report`` that run on the real-model trace directly.

Each section function takes the shared :class:`ReportContext` and the
:class:`~spectheory.report._html.Page`, writes its tables as CSV into the output
folder, adds its HTML, and records a short summary (for ``summary.json``).
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._files import write_csv

#: False-alarm rate of the verifiers table's ``above bound`` flags (all groups together).
ABOVE_BOUND_ALPHA = 1e-6

__all__ = [
    "ReportContext",
    "informative_rows",
    "resolve_verifier",
    "section_lossless",
    "section_setup",
]


def resolve_verifier(spec):
    """A :class:`~spectheory.verifiers.Verifier` for ``report --verifier SPEC``.

    ``spec`` is a registry name, ``"package.module:attr"`` (a function on
    either protocol, or a ``Verifier`` record; the current folder is importable,
    as with ``python -m``), or already a record or function.  An imported
    function is named by its attribute in the report (``yours: my_sd``), as
    before; :func:`~spectheory.verifiers.as_verifier` names it by the whole spec
    for replay and sweep, whose rows are looked up by the names given.

    Raises
    ------
    InvalidParameterError
        A module or attribute that cannot be imported, or an object that is
        not a verifier.
    """
    import dataclasses

    from ..verifiers import as_verifier

    # registry names, records, functions and "package.module:attr" (imported there)
    record = as_verifier(spec)
    if isinstance(spec, str) and ":" in spec and record.name == spec:  # an imported function
        record = dataclasses.replace(record, name=spec.partition(":")[2])
    return record


@dataclass
class ReportContext:
    """What every section shares.

    Attributes
    ----------
    out_dir : pathlib.Path
        Folder of ``report.html``, ``summary.json`` and the CSV tables.
    quick : bool
        Fewer positions and trials (a smoke run of the whole pipeline).
    progress : bool
        Print one line per step to stderr.
    trace : spectheory.lm.Trace
    trace_file : str
        ``report --trace FILE``: the researcher's trace file; no model is
        loaded, and sections that need one are skipped (:meth:`skip`).
    verifiers : tuple of Verifier
        The user's verifiers (``report --verifier``), replayed and checked
        beside the built-in ones (in Python when they have no kernel).
    seconds : dict
        Wall time of each section.
    summary : dict
        JSON-serialisable results of each section.
    """

    out_dir: Path
    quick: bool
    progress: bool
    trace: object = None
    loaded: object = None
    trace_file: str = ""
    verifiers: tuple = ()
    seconds: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)

    def say(self, text: str) -> None:
        if self.progress:
            import sys

            print(f"[report] {text}", file=sys.stderr, flush=True)

    def skip(self, name: str, reason: str, page) -> None:
        """Record that ``name`` was skipped and why, in the HTML and in ``summary.json``."""
        self.summary.setdefault("skipped", {})[name] = reason
        page.paragraph(f"Skipped {name}: {reason}.")
        self.say(f"skipped {name}: {reason}")

    def csv(self, name: str, rows, columns) -> Path:
        """Write a table as ``out_dir/name`` and return its path."""
        return write_csv(rows, self.out_dir / name, columns)


def informative_rows(target, draft, k: int, low: float = 0.1, high: float = 0.9,
                     min_support: int = 1):
    """Positions worth testing: the ``k`` highest-entropy targets whose overlap is in (low, high).

    A verifier's bias shows only where the draft is neither useless nor perfect,
    and is easiest to see where the target spreads its mass; choosing rows by
    this rule (not by hand) keeps the checks honest.

    Parameters
    ----------
    target, draft : ndarray, shape (B, V)
    k : int
    min_support : int
        Fewest tokens of positive draft probability (``n`` for drafts without
        replacement or greedy drafts, which need ``n`` distinct tokens).

    Returns
    -------
    ndarray of int, at most ``k`` row indices

    >>> p = np.array([[0.5, 0.5], [1.0, 0.0], [0.9, 0.1]])
    >>> q = np.array([[0.9, 0.1], [0.0, 1.0], [0.5, 0.5]])
    >>> informative_rows(p, q, 1).tolist()
    [0]
    """
    overlap = np.minimum(target, draft).sum(axis=1)
    entropy = -(target * np.log(np.where(target > 0, target, 1.0))).sum(axis=1)
    support = np.count_nonzero(draft > 0, axis=1)
    candidates = np.flatnonzero((overlap > low) & (overlap < high) & (support >= min_support))
    return candidates[np.argsort(-entropy[candidates], kind="stable")[:k]]


def section_setup(ctx: ReportContext, page) -> None:
    """Versions, machine and the trace's settings."""
    import numba
    import scipy

    from .. import __version__

    tr = ctx.trace
    s = tr.settings
    rows = [
        {"item": "spectheory", "value": __version__},
        {"item": "python", "value": platform.python_version()},
        {"item": "numpy / scipy / numba", "value": f"{np.__version__} / {scipy.__version__} / "
         f"{numba.__version__}"},
        {"item": "machine", "value": f"{platform.machine()}, {_cores()} cores"},
        {"item": "model", "value": f"{s.model} ({_layers(tr)}, V = {tr.vocab_size})"},
        {"item": "drafts", "value": ", ".join(tr.drafts)},
        {"item": "trained adapters", "value": _adapters_line(tr, ctx.trace_file)},
        {"item": "prompts x tokens", "value": f"{len(s.prompts)} x {s.max_new_tokens} "
         f"({tr.num_positions} positions)"},
        {"item": "target sampling", "value": "none: the trace was built from arrays"
         if s.model.startswith("arrays:") else f"T = {s.temperature}, seed {s.seed}"},
        {"item": "trace key", "value": s.key()},
        {"item": "mode", "value": "quick" if ctx.quick else "full"},
    ]  # fmt: skip
    if ctx.trace_file:  # report --trace FILE: the researcher's own trace, no model loaded
        rows.insert(4, {"item": "trace file", "value": f"{ctx.trace_file} (model {s.model})"})
    page.section("Set-up", "setup")
    page.paragraph(
        f"Every number below is computed on this machine from the trace file {ctx.trace_file} "
        f"(model {s.model}; no model was loaded: sections that need one are skipped, with the "
        "reason)." if ctx.trace_file else
        "Every number below is computed on this machine from the recorded trace of the real "
        "model: the target's and each draft's full-vocabulary logits at every position of "
        "target-sampled continuations of the embedded prompts (`spectheory trace record`)."
    )  # fmt: skip
    page.table(rows, ["item", "value"])
    ctx.summary["setup"] = {r["item"]: r["value"] for r in rows}


def _adapters_line(trace, trace_file="") -> str:
    """Which trained adapters the trace has, or how to train one (the report then records it)."""
    have = [d for d in trace.drafts if d.startswith("adapter:")]
    if have:
        return ", ".join(have) + " (trained, from the adapter cache)"
    if trace_file:  # the researcher's own trace: the report records nothing
        return "none in this trace"
    return ("none in this trace (none cached): train one with `spectheory draft train --layer "
            "25` and the next report records `adapter:25` beside the exits")  # fmt: skip


def _every(stride: int) -> str:
    """``"every position"``, ``"every 2nd"``, ``"every 3rd"``, ``"every 11th"``, ... (of a trace).

    >>> [_every(k) for k in (1, 2, 3, 11, 21, 112)]
    ['every position', 'every 2nd', 'every 3rd', 'every 11th', 'every 21st', 'every 112th']
    """
    if stride == 1:
        return "every position"
    teen = 10 <= stride % 100 <= 20
    suffix = "th" if teen else {1: "st", 2: "nd", 3: "rd"}.get(stride % 10, "th")
    return f"every {stride}{suffix}"


def _layers(trace) -> str:
    """``"30 layers"`` from the trace's recorded model metadata, or says that it is missing."""
    layers = (trace.metadata.get("model") or {}).get("num_layers")
    return f"{layers} layers" if layers else "layer count not recorded in the trace"


#: Monte Carlo trials per position of the report's replay (full, quick).
REPLAY_TRIALS, REPLAY_TRIALS_QUICK = 200, 100


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def section_bounds_and_verifiers(ctx: ReportContext, page) -> None:
    """Optimal acceptance and every replayable verifier's acceptance on the trace."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..drafting import SAMPLINGS
    from ..sim._stats import chernoff_upper_tail
    from ..sim.replay import COLUMNS, REPLAY_VERIFIERS, common_positions, replay

    tr = ctx.trace
    stride = max(1, tr.num_positions // (24 if ctx.quick else 128))
    rows = np.arange(0, tr.num_positions, stride)
    temperatures, ns = (0.7, 1.0), (1, 2, 4)
    # Monte Carlo trials per position: the means over ~128 positions have a standard error
    # of at most 0.5 / sqrt(positions x trials), 0.003 at 200 (0.002 at 400, which cost a
    # quarter of the replay in the without-replacement RRS kernel alone).
    trials = REPLAY_TRIALS_QUICK if ctx.quick else REPLAY_TRIALS
    verifiers = (*REPLAY_VERIFIERS, *ctx.verifiers)
    ctx.say(f"replaying {rows.size} positions through {len(verifiers)} verifiers")
    table = replay(
        tr,
        temperatures=temperatures,
        ns=ns,
        samplings=SAMPLINGS,
        verifiers=verifiers,
        trials=trials,
        rows=rows,
        seed=0,
    )
    ctx.csv("replay.csv", table, COLUMNS)

    # Draft laws are compared on the same positions: those replayed under every law.
    common = common_positions(table)
    groups: dict = {}
    for r in table:
        if int(r["position"]) not in common[(r["draft"], r["temperature"], r["n"])]:
            continue
        key = (r["draft"], r["temperature"], r["n"], r["sampling"], r["verifier"])
        groups.setdefault(key, []).append(r)
    left_out = {k: rows.size - len(v) for k, v in common.items()}
    summary = []
    for (d, t, n, law, v), rs in groups.items():
        bound = float(np.mean([r["bound"] for r in rs]))
        mc = float(np.mean([r["mc"] for r in rs]))
        exact = [r["exact"] for r in rs if r["exact"] == r["exact"]]
        ex = float(np.mean(exact)) if exact else float("nan")
        # A lossless verifier's acceptance is at most the bound at every position, so an
        # excess of the accepted count over the summed bounds is proof of bias (Hoeffding).
        hits = sum(round(r["mc"] * r["trials"]) for r in rs)
        draws = sum(int(r["trials"]) for r in rs)
        excess_p = chernoff_upper_tail(hits, draws, float(np.mean([r["bound"] for r in rs])))
        summary.append({
            "draft": d, "T": t, "n": n, "draft law": law, "verifier": v,
            "bound": bound, "exact": ex, "monte carlo": mc,
            "gap to bound": bound - (ex if exact else mc), "positions": len(rs),
            "positions left out": left_out[(d, t, n)], "excess p": excess_p,
            "declared lossless": bool(rs[0]["lossless"]),
        })  # fmt: skip
    for s in summary:  # Bonferroni over the groups, at the checker's false-alarm rate
        s["above bound"] = s["excess p"] * len(summary) <= ABOVE_BOUND_ALPHA
    cols = ["draft", "T", "n", "draft law", "verifier", "bound", "exact", "monte carlo",
            "gap to bound", "above bound", "positions", "positions left out"]  # fmt: skip
    ctx.csv("verifiers_summary.csv", summary, [*cols, "excess p", "declared lossless"])

    # the same set for every n of a draft and temperature: one count per pair
    per_draft = {(d, t): len(v) for (d, t, _), v in common.items()}
    fewer = [(k, c) for k, c in sorted(per_draft.items()) if c < rows.size]
    page.section("Optimal acceptance and every verifier", "verifiers")
    page.paragraph(
        f"{rows.size} positions ({_every(stride)} of the trace), temperatures 0.7 and 1.0 applied "
        "to both models. `bound` is the optimal membership acceptance alpha* (OT dual, "
        "`spectheory.bound`), `exact` the verifier's closed-form acceptance where one exists, "
        "`monte carlo` the simulated acceptance (numba kernels, "
        f"{trials} trials per position). `above bound` flags a simulated acceptance "
        "significantly above alpha* (Hoeffding over the group's trials, false-alarm rate "
        f"{ABOVE_BOUND_ALPHA:g} over the whole table): proof that the verifier is not lossless "
        "under that draft law. Means over positions; full table in "
        "`replay.csv`. Draft laws are compared on the same positions: drafting without "
        "replacement (and greedy) needs n tokens in the draft's support, so for each draft and T "
        "only the positions replayed under every law and every n are averaged, so that the "
        "curves against n and between laws are over the same positions (`positions`; the rest, "
        "`positions left out`, are in `replay.csv`). "
        + ("Positions compared (every n): " if fewer else "Every position counts.")
        + "; ".join(f"{d}, T = {t:g}: {c} of {rows.size}" for (d, t), c in fewer)
    )
    fig, axes = plt.subplots(1, len(tr.drafts), figsize=(4.2 * len(tr.drafts), 3.4), squeeze=False)
    for ax, d in zip(axes[0], tr.drafts, strict=True):
        for law, style in zip(SAMPLINGS, ("-o", "-s", "-^"), strict=True):
            ys = [np.mean([s["bound"] for s in summary
                           if (s["draft"], s["T"], s["n"], s["draft law"]) == (d, 1.0, n, law)]
                          or [np.nan]) for n in ns]  # fmt: skip
            ax.plot(ns, ys, style, label=f"alpha*, {law}")
        for v, marker in (("rrs", "x"), ("kseq", "+"), ("spechub", "d")):
            # the closed form where there is one: a Monte Carlo mean of 100 trials per position
            # drew kseq 30% below alpha* at n = 1, where it equals alpha*
            ys = [np.mean([s["exact"] if s["exact"] == s["exact"] else s["monte carlo"]
                           for s in summary
                           if (s["draft"], s["T"], s["n"], s["verifier"], s["draft law"])
                           == (d, 1.0, n, v, "iid" if v != "spechub" else "greedy")] or [np.nan])
                  for n in ns]  # fmt: skip
            ax.plot(ns, ys, marker, ms=9, label=v)
        ys = [np.mean([s["exact"] for s in summary  # optimal: its exact acceptance, i.i.d.
                       if (s["draft"], s["T"], s["n"], s["verifier"], s["draft law"])
                       == (d, 1.0, n, "optimal", "iid")] or [np.nan]) for n in ns]  # fmt: skip
        ax.plot(ns, ys, "*", ms=11, mfc="none", label="optimal (exact)")
        ax.set_title(f"{d}, T = 1")
        ax.set_xlabel("number of drafts n")
        ax.set_xticks(ns)
    axes[0][0].set_ylabel("acceptance")
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))  # off the curves
    page.figure(fig, "Optimal acceptance against n for each draft law, with verifiers' "
                     "acceptance (closed forms; a Monte Carlo mean where a verifier has none).")
    page.paragraph(_optimal_note(summary))
    best = [s for s in summary if s["T"] == 1.0 and s["n"] == 4]
    page.table(best, cols)
    above = [s for s in summary if s["above bound"]]
    unexpected = [s for s in above if s["declared lossless"]]
    if unexpected:  # each one: the verifier is declared lossless, so this is a finding
        page.paragraph(
            "Verifiers declared lossless whose simulated acceptance is significantly above "
            "alpha* (proof of bias under that draft law): " + "; ".join(
                f"{s['verifier']} ({s['draft']}, T = {s['T']:g}, n = {s['n']}, "
                f"{s['draft law']}: {s['monte carlo']:.4f} against {s['bound']:.4f})"
                for s in unexpected)
        )
    if len(above) > len(unexpected):
        lossy = sorted({s["verifier"] for s in above if not s["declared lossless"]})
        page.paragraph(
            f"Verifiers lossy by design ({', '.join(lossy)}) exceed alpha* in "
            f"{len(above) - len(unexpected)} configurations, as they may (`verifiers_summary.csv`)."
        )
    worst = max(
        (s for s in summary if s["verifier"] != "typical"),
        key=lambda s: s["bound"] - (s["exact"] if s["exact"] == s["exact"] else s["monte carlo"]),
    )
    ctx.summary["verifiers"] = {
        "positions": int(rows.size),
        "positions_compared": {f"{d}/T={t:g}/n={n}": len(v) for (d, t, n), v in common.items()},
        "mean_bound_T1_n4": {f"{s['draft']}/{s['draft law']}": s["bound"] for s in best
                             if s["verifier"] in ("rrs", "rrs_wor", "greedy")},  # one a law
        "largest_gap": {k: worst[k] for k in ("draft", "T", "n", "draft law", "verifier",
                                              "gap to bound")},
        "optimal": _optimal_summary(summary),
        "above_bound": [{k: s[k] for k in ("draft", "T", "n", "draft law", "verifier",
                                           "monte carlo", "bound", "excess p")} for s in above],
        # a verifier declared lossless above the bound is a finding, not an expectation
        "all_as_expected": not unexpected,
    }  # fmt: skip


def _optimal_summary(summary) -> dict:
    """The ``optimal`` verifier's largest exact gap to the bound (i.i.d.), its Monte Carlo gaps
    without replacement (two drafts: the ramp score rule; more: the priority-coin rule), and
    the best other registered verifier's largest gap without replacement for ``n > 2``: the
    gap ``optimal`` closes there."""
    iid = [abs(s["gap to bound"]) for s in summary if s["verifier"] == "optimal"
           and s["draft law"] == "iid"]  # fmt: skip
    pairs = [s["gap to bound"] for s in summary if s["verifier"] == "optimal"
             and s["draft law"] == "without_replacement" and s["n"] == 2]  # fmt: skip
    more = [s["gap to bound"] for s in summary if s["verifier"] == "optimal"
            and s["draft law"] == "without_replacement" and s["n"] > 2]  # fmt: skip
    wor: dict = {}
    for s in summary:
        # lossless verifiers only: a lossy one (typical, or a user's above the bound) can
        # beat alpha* and would make "the best stays below" read as a negative gap
        if (s["draft law"] == "without_replacement" and s["n"] > 2
                and s["verifier"] != "optimal"
                and s.get("declared lossless", True) and not s.get("above bound", False)):
            key = (s["draft"], s["T"], s["n"])
            wor[key] = min(wor.get(key, np.inf), s["gap to bound"])
    return {
        "iid_largest_abs_gap": float(max(iid)) if iid else None,
        "iid_configurations": len(iid),
        "without_replacement_n2_largest_abs_mc_gap": float(max(map(abs, pairs))) if pairs else None,
        "without_replacement_n2_configurations": len(pairs),
        "without_replacement_more_largest_abs_mc_gap": (float(max(map(abs, more))) if more
                                                         else None),
        "without_replacement_more_configurations": len(more),
        "without_replacement": "n = 2: the ramp score rule of pair_scores (docs/theory.md "
        "§3.15); n > 2: the priority-coin rule (docs/theory.md §3.17); both computed at full "
        "vocabulary and certified per row in the without-replacement section",
        "without_replacement_best_other_gap": float(max(wor.values())) if wor else None,
    }


def _optimal_note(summary) -> str:
    """The report's sentence on ``optimal``: the gap it closes, with and without replacement."""
    o = _optimal_summary(summary)
    if o["iid_largest_abs_gap"] is None:
        return "The `optimal` verifier was not replayed (no i.i.d. configuration)."
    other = o["without_replacement_best_other_gap"]
    pairs = o["without_replacement_n2_largest_abs_mc_gap"]
    more = o["without_replacement_more_largest_abs_mc_gap"]
    return (
        "`optimal` (Thomas & Pal, arXiv:2511.15898; the polymatroid tier mixture of "
        "notebooks/05_optimal_verifier.py) reaches the bound for i.i.d. drafts: its exact "
        "acceptance (`exact`, from its own plan) differs from alpha* by at most "
        f"{o['iid_largest_abs_gap']:.1e} over the {o['iid_configurations']} i.i.d. "
        "configurations (draft, T, n); `monte carlo` is its simulated acceptance (numba "
        "kernel). With greedy drafts it is Hu et al.'s verifier, already optimal. With two "
        "drafts without replacement it runs the ramp score rule of `pair_scores` "
        "(docs/theory.md §3.15), and with more the priority-coin rule (§3.17, notebook 07); "
        "each plan says per row whether it reaches alpha* (the without-replacement section "
        "counts the rows reached)"
        + (f"; its simulated acceptance differs from alpha* by at most {pairs:.3f} over the "
           f"{o['without_replacement_n2_configurations']} two-draft configurations"
           if pairs is not None else "")
        + (f" and by at most {more:.3f} over the "
           f"{o['without_replacement_more_configurations']} configurations of more drafts "
           "(Monte Carlo error)" if more is not None else "")
        + (f". There the best other registered verifier stays up to {other:.3f} below "
           "alpha*: the gap `optimal` closes." if other is not None else ".")
    )


def section_lossless(ctx: ReportContext, page) -> None:
    """The checker on every replayable verifier and on the bug zoo, at real positions."""
    from ..distributions import process_logits
    from ..sim.bugzoo import BUGS
    from ..sim.check import check_lossless
    from ..verifiers import REGISTRY

    tr = ctx.trace
    draft = tr.drafts[-1] if not tr.drafts[-1].startswith("ngram") else tr.drafts[0]
    draft = max((d for d in tr.drafts if d.startswith(("exit", "adapter"))), default=draft,
                key=lambda d: int(d.split(":")[1]))  # fmt: skip
    p = process_logits(tr.target_logits.astype(np.float64), 1.0)
    q = process_logits(tr.draft_logits(draft), 1.0)
    # The checker's default power in quick mode too: it is cheap next to the replay.
    rows = informative_rows(p, q, 4, min_support=4)  # rrs_wor checks n = 4 distinct drafts
    trials = 20_000
    cases = []
    for name in ("sd", "rrs", "rrs_wor", "kseq", "spechub", "greedy", "nss", "naive", "optimal",
                 "typical"):  # fmt: skip
        v = REGISTRY[name]
        n = 1 if name == "sd" else (2 if name == "spechub" else 4)
        cases.append((name, name, n, v.samplings[0], v.lossless))
    # optimal's other rule: the pair-score rule, two drafts without replacement
    cases.append(("optimal [without_replacement]", "optimal", 2, "without_replacement", True))
    for name, (fn, n, law) in BUGS.items():
        cases.append((f"bug: {name}", fn, n, law, False))
    for v in ctx.verifiers:  # the user's own, under every draft law it claims (n = 2 if it can)
        for law in v.samplings:
            # the n it takes under this law (n_values_by_law too), or none was checked
            n = 2 if v.supports(2, law) else (v.n_values_for(law) or (1,))[0]
            if v.supports(n, law):
                label = f"yours: {v.name}" + (f" [{law}]" if len(v.samplings) > 1 else "")
                cases.append((label, v, n, law, v.lossless))
    out = []
    for label, fn, n, law, lossless in cases:
        ctx.say(f"checking {label}")
        t0 = time.perf_counter()
        r = check_lossless(fn, tr, draft, n=n, sampling=law, rows=rows, trials=trials, seed=0)
        out.append({
            "verifier": label, "n": n, "draft law": law, "declared lossless": lossless,
            "verdict": "lossy" if r.lossy else "consistent with lossless", "p-value": r.p_value,
            "acceptance": r.acceptance, "bound": r.bound, "above bound": r.exceeds_bound,
            "detectable TV": r.detectable_tv, "seconds": time.perf_counter() - t0,
            "as expected": r.lossy != lossless,
        })  # fmt: skip
    cols = [
        "verifier",
        "n",
        "draft law",
        "declared lossless",
        "verdict",
        "p-value",
        "acceptance",
        "bound",
        "above bound",
        "detectable TV",
        "seconds",
        "as expected",
    ]
    ctx.csv("lossless.csv", out, cols)
    page.section("Losslessness of every verifier, and the bug zoo", "lossless")
    page.paragraph(
        f"`spectheory.check_lossless` at {rows.size} real positions of draft {draft} at T = 1 "
        "(the highest-entropy targets whose overlap with the draft is between 0.1 and 0.9), "
        f"{trials:,} trials per position, false-alarm rate 1e-6. Correct verifiers must pass; "
        "typical acceptance (lossy by design) and every reproduced real bug "
        "(docs/theory.md §7.5) must be flagged. `detectable TV` is the smallest bias on one "
        "position found with probability 0.99, whatever tokens it moves (it includes the "
        "mass of the rare tokens that the row test pools into one cell, where a bias changes "
        "no pooled count). The `p-value` is a valid upper bound, not an exact p-value: each "
        "test's is a finite-sample tail bound (for the G statistic, Agrawal's), and the "
        "smallest is multiplied by the number of tests and capped at 1. Under losslessness it "
        "is at least uniform, so correct verifiers often read 1.0000: no rejection, and no "
        "more evidence than that."
    )
    page.table(out, cols, status_column="as expected")
    ctx.summary["lossless"] = {
        "draft": draft,
        "positions": rows.tolist(),
        "all_as_expected": all(r["as expected"] for r in out),
        "verdicts": {r["verifier"]: r["verdict"] for r in out},
    }
