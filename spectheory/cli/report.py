"""``spectheory report``: the whole pipeline on the real model, written as one HTML report."""

from __future__ import annotations

from ._common import ExitCode, existing_path, log, positive_int, usage_error
from ._recording import FIELDS, add_recording_options, reject_with_trace, trace_settings

HELP = "the whole pipeline on the real model, written as one HTML report (+ CSV, JSON)"


def add_parser(subparsers):
    """Register ``spectheory report``."""
    r = subparsers.add_parser(
        "report",
        help=HELP,
        description=(
            "Records (or reuses) the default trace of SmolLM2-135M-Instruct and its drafts, "
            "replays it through every verifier and the optimal bound, checks every verifier's "
            "losslessness, reproduces the papers, and writes report.html, summary.json and CSV "
            "tables. Exit code 3 if a check does not come out as expected."
        ),
    )
    r.add_argument("--out", default="spectheory-report", help="output folder (default %(default)s)")
    r.add_argument("--quick", action="store_true", help="small trace, fewer trials (minutes)")
    r.add_argument("--sections", nargs="+", default=None,
                   help="run only these (of spectheory.report.SECTIONS; default all)")  # fmt: skip
    r.add_argument("--verifier", action="append", default=[], metavar="MODULE:FUNCTION",
                   help="your own verifier (coins protocol or black box, or a Verifier record), "
                        "replayed and checked beside the built-in ones; repeatable")  # fmt: skip
    r.add_argument("--trace", type=existing_path, default=None,
                   help="your own trace file (spectheory trace record, or Trace.from_arrays("
                        "...).save): the report runs on it without loading any model")  # fmt: skip
    r.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="processes: with 2 or more the papers run in a second process beside "
                        "the replay and the checks (default 2 where there are 2 cores or more)")
    add_recording_options(r)
    r.set_defaults(run=run)
    return r


def run(args) -> int:
    from ..report import SECTIONS, build_report
    from ..report._background import BACKGROUND_SECTIONS
    from ..report._core import _cores

    chosen = args.sections or ()
    if args.jobs is not None and args.jobs >= 2 and chosen and set(chosen) <= set(SECTIONS):
        # --jobs N runs the papers in a second process beside the other sections: with only
        # one kind selected, every section runs in this process and N would go unused
        background = [s for s in chosen if s in BACKGROUND_SECTIONS]
        if not background or len(background) == len(chosen):
            raise usage_error(
                f"--jobs {args.jobs} cannot be combined with --sections "
                f"{' '.join(args.sections)} (--jobs runs {', '.join(BACKGROUND_SECTIONS)} in a "
                "second process beside the other sections; these leave nothing to run beside it)"
            )
    if args.trace:
        # --seed too: the report replays a trace file with its own seeds
        reject_with_trace(args, seed_used=False)
    settings = None
    if any(f in vars(args) for f in FIELDS):
        # the options given change the report's own trace (quick or full, the report's drafts),
        # not TraceSettings' defaults (38 prompts x 24 tokens, no quant:Q4_0 nor adapters)
        import dataclasses

        from ..report import _full_settings, _quick_settings

        base = _quick_settings() if args.quick else _full_settings()
        given = vars(trace_settings(args))
        settings = dataclasses.replace(base, **{f: given[f] for f in FIELDS if f in vars(args)})
    if settings is not None:
        log.info(f"report on model {settings.model}, drafts {', '.join(settings.drafts)}")
    jobs = args.jobs if args.jobs is not None else min(2, _cores())
    res = build_report(args.out, quick=args.quick, sections=args.sections,
                       progress=not args.quiet, settings=settings,
                       verifiers=tuple(args.verifier), trace=args.trace or None,
                       jobs=jobs)  # fmt: skip
    print(f"report: {res.html} ({res.seconds:.0f} s); tables and summary.json in {res.html.parent}")
    if args.trace:
        print(f"trace: {args.trace} (model {res.summary['trace_file']['model']})")
        for name, why in res.summary.get("skipped", {}).items():
            print(f"skipped {name}: {why}")
    else:
        print(f"model: {settings.model if settings else 'smollm2-135m-instruct (default)'}")
    if not res.ok:
        log.warning("some checks did not come out as expected: see summary.json")
        return ExitCode.CHECK_FAILED
    return ExitCode.OK
