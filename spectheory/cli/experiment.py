"""``spectheory experiment draft-scaling|draft-length|trees``: the studies on the real model.

``spectheory experiment draft-scaling``
    The three scaling laws of adapter drafts
    (:func:`spectheory.experiments.draft_scaling.run_scaling`): CSV tables,
    PNG figures and ``comparison.txt`` in ``--out``.
``spectheory experiment draft-length``
    Cost ratios, the capacity law and the draft-length policies on held-out
    prompts (:func:`spectheory.experiments.draft_length.run_draft_length`),
    printed; options from
    :class:`~spectheory.experiments.draft_length.DraftLengthSettings`.
``spectheory experiment trees``
    Block efficiency of every chain and tree method and the papers' orderings
    (:func:`spectheory.experiments.trees.run_trees`): ``tau.csv``,
    ``orderings.csv``, ``tau.png`` in ``--out``; options from
    :class:`~spectheory.experiments.trees.TreesSettings`.

Exit codes as every command (:class:`~spectheory.cli.ExitCode`): 0 done, 2 bad
input.  The studies measure; they check nothing, so they never exit with 3.
"""

from __future__ import annotations

import dataclasses

from ._common import (
    ExitCode,
    dataclass_options,
    existing_path,
    id_list,
    log,
    nonnegative_int,
    positive_int,
    usage_error,
)

HELP = "the scripted studies on the real model (draft scaling, draft length, trees)"

#: The trace options of ``draft-length`` (fields of spectheory.lm.TraceSettings).
TRACE_FIELDS = ("prompts", "max_new_tokens")


def _given(cls, args, names=None) -> dict:
    """The options among ``cls``'s fields (or ``names``) that the user gave."""
    names = set(names or (f.name for f in dataclasses.fields(cls)))
    return {k: tuple(v) if isinstance(v, list) else v for k, v in vars(args).items() if k in names}


def _load_model():
    from ..lm import load_model

    log.info("loading smollm2-135m-instruct ...")
    return load_model()


# --------------------------------------------------------------------------- draft-scaling


def run_draft_scaling(args) -> int:
    from pathlib import Path

    from ..experiments.draft_scaling import run_scaling

    loaded = _load_model()
    run_scaling(loaded, args.out, quick=args.quick, seed=args.seed, progress=not args.quiet)
    print((Path(args.out) / "comparison.txt").read_text(), end="")
    print(f"tables and figures in {args.out}")
    return ExitCode.OK


def _add_draft_scaling(sub):
    p = sub.add_parser(
        "draft-scaling",
        help="scaling laws of adapter drafts: capacity, training tokens, batch size",
        description=(
            "Trains early-exit adapters on the offline corpus at several exit layers and corpus "
            "sizes, measures their held-out acceptance, fits the capacity and token laws "
            "(a + b log10 x, with t and prompt-bootstrap intervals of the slope) and the "
            "optimal number of drafts against the batch size under a roofline cost model. "
            "The full run takes about 30 minutes on 2 cores."
        ),
    )
    p.add_argument("--out", default="draft_scaling", help="output folder (default %(default)s)")
    p.add_argument("--quick", action="store_true",
                   help="smoke settings (about a minute; not a measurement)")  # fmt: skip
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of corpus, training, bootstrap (default %(default)s)")  # fmt: skip
    p.set_defaults(run=run_draft_scaling)


# --------------------------------------------------------------------------- draft-length


def run_draft_length(args) -> int:
    from ..experiments import draft_length as D
    from ..lm import load_trace, record_trace
    from ..lm.trace import TraceSettings

    settings = D.DraftLengthSettings(**_given(D.DraftLengthSettings, args))
    trace_options = _given(TraceSettings, args, TRACE_FIELDS)
    if getattr(args, "trace", "") and trace_options:
        flags = ", ".join("--" + f.replace("_", "-") for f in trace_options)
        raise usage_error(f"{flags} cannot be combined with --trace (the trace file has its own)")
    loaded = _load_model()
    if getattr(args, "trace", ""):
        trace = load_trace(args.trace)
    else:
        trace = record_trace(TraceSettings(**trace_options), loaded=loaded,
                             progress=not args.quiet)  # fmt: skip
    result = D.run_draft_length(loaded, trace, settings)
    print("\n".join(D.summary_lines(result)))
    return ExitCode.OK


def _add_draft_length(sub):
    p = sub.add_parser(
        "draft-length",
        help="cost ratios, capacity law and draft-length policies (SpecDec++) on held-out prompts",
        description=(
            "Records (or reuses) a trace of SmolLM2-135M-Instruct, measures the cost ratio of "
            "early-exit drafts on this CPU and the capacity law, trains an acceptance head, and "
            "compares the best fixed draft length, the heuristic, the oracle threshold and the "
            "head on held-out prompts at the measured and a sweep of cost ratios."
        ),
    )
    dataclass_options(
        p.add_argument_group("study (spectheory.experiments.draft_length.DraftLengthSettings)"),
        "spectheory.experiments.draft_length:DraftLengthSettings",
        types={"layer": positive_int, "epochs": positive_int, "repeats": positive_int,
               "holdout": _probability},
    )  # fmt: skip
    trace = p.add_argument_group("trace (default: the default trace, recorded or reused)")
    trace.add_argument("--trace", type=existing_path, default=None, help="a saved trace file")
    dataclass_options(trace, "spectheory.lm.trace:TraceSettings", TRACE_FIELDS,
                      types={"prompts": id_list, "max_new_tokens": positive_int})  # fmt: skip
    p.set_defaults(run=run_draft_length)


def _probability(text):
    from ._common import probability

    return probability(text)


# --------------------------------------------------------------------------- trees


def run_trees(args) -> int:
    from pathlib import Path

    from ..experiments import trees as E

    given = _given(E.TreesSettings, args)
    settings = E.TreesSettings.quick(**given) if args.quick else E.TreesSettings(**given)
    loaded = _load_model()
    rows, order = E.run_trees(loaded, settings, args.out)
    print("\n".join(E.summary_lines(rows, order)))
    out = Path(args.out)
    written = [out / n for n in ("tau.csv", "orderings.csv", "tau.png") if (out / n).exists()]
    print(f"\nwrote {', '.join(map(str, written))}")
    return ExitCode.OK


def _add_trees(sub):
    p = sub.add_parser(
        "trees",
        help="block efficiency of chain and tree methods, and the papers' orderings",
        description=(
            "Draws trees of every drafting scheme (chain, SpecTr, RSD-C, RSD-S, Sequoia, EAGLE) "
            "from an early-exit draft of SmolLM2 at a few prompt positions, verifies each with "
            "its verifiers many times, and tests the orderings the papers claim by paired or "
            "Welch differences. Writes tau.csv, orderings.csv and tau.png."
        ),
    )
    p.add_argument("--out", default="trees_report", help="output folder (default %(default)s)")
    p.add_argument("--quick", action="store_true",
                   help="2 positions, budget 8, 2 trees each, 40 reference draws (options "
                        "given beside it still apply)")  # fmt: skip
    dataclass_options(
        p.add_argument_group("study (spectheory.experiments.trees.TreesSettings)"),
        "spectheory.experiments.trees:TreesSettings",
        types={"draft": str, "prompts": positive_int, "trees": positive_int,
               "trials": positive_int, "ref_trials": positive_int},
    )  # fmt: skip
    p.set_defaults(run=run_trees)


# --------------------------------------------------------------------------- registration


def add_parser(subparsers):
    """Register ``spectheory experiment`` (draft-scaling / draft-length / trees)."""
    e = subparsers.add_parser(
        "experiment",
        help=HELP,
        description=(
            "The scripted studies on SmolLM2-135M-Instruct (spectheory.experiments): each "
            "measures, writes or prints its tables, and checks nothing."
        ),
    )
    sub = e.add_subparsers(dest="experiment_command", required=True,
                           metavar="{draft-scaling,draft-length,trees}")  # fmt: skip
    _add_draft_scaling(sub)
    _add_draft_length(sub)
    _add_trees(sub)
    return e
