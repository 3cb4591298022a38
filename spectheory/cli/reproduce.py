"""``spectheory reproduce PAPER``: the papers' figures and tables, checked against their numbers.

Exit codes: 0 every required check passed; 3 a required check failed (the
figures and tables are still written); 2 bad input or usage (an unknown
paper name is reported with the list of known ones).
"""

from __future__ import annotations

from pathlib import Path

from ._common import ExitCode, existing_path, progress, usage_error

HELP = "regenerate a paper's figures and tables and check them against its numbers"


def add_parser(subparsers):
    """Register ``spectheory reproduce``."""
    r = subparsers.add_parser(
        "reproduce",
        help=HELP,
        description=(
            "Runs one reproduction (or 'all'): exact solvers where the paper's numbers are "
            "theoretical, the real model's trace (SmolLM2-135M-Instruct, early-exit drafts) "
            "where it measured models. Writes CSV tables, PNG figures and checks.csv into "
            "--out and prints every check. Exit code 3 if a required check fails."
        ),
    )
    r.add_argument("paper", nargs="?", default="", help="paper name, or 'all' (see --list)")
    r.add_argument("--list", action="store_true", help="list the reproductions and exit")
    r.add_argument(
        "--out", default=None, help="output folder (default papers-out/PAPER; with 'all', one "
        "sub-folder per paper)"
    )  # fmt: skip
    r.add_argument(
        "--quick",
        action="store_true",
        help="small trace (6 prompts x 8 tokens) and smaller sweeps: about a minute each",
    )
    r.add_argument("--trace", type=existing_path, default=None,
                   help="a saved trace file (default: the default trace)")  # fmt: skip
    r.set_defaults(run=run)
    return r


def run(args) -> int:
    from ..papers import PAPERS, get_paper

    if args.list:
        # they would be ignored: --list only lists
        used = {"PAPER": args.paper, "--out": args.out is not None, "--quick": args.quick,
                "--trace": args.trace}
        given = [o for o, u in used.items() if u]
        if given:
            raise usage_error(f"{', '.join(given)} cannot be combined with --list (which lists "
                              "the reproductions and exits)")  # fmt: skip
        width = max(map(len, PAPERS))
        for name, paper in PAPERS.items():
            print(f"{name:<{width}}  arXiv {paper.arxiv:<12} [{paper.setting}]  {paper.title}")
            print(f"{'':<{width}}  {paper.regenerates}")
        return ExitCode.OK
    if not args.paper:
        raise usage_error(
            f"PAPER is required (one of {', '.join(sorted(PAPERS))}, or 'all'); "
            "see 'spectheory reproduce --list'"
        )
    if args.out is not None and not args.out.strip():
        raise usage_error("argument --out: expected a folder; got ''")
    out_root = Path(args.out if args.out is not None else Path("papers-out") / args.paper)
    for parent in (out_root, *out_root.parents):
        if parent.exists():
            if not parent.is_dir():
                raise usage_error(f"argument --out: {str(parent)!r} is a file, not a folder")
            break
    names = list(PAPERS) if args.paper == "all" else [get_paper(args.paper).name]
    trace = args.trace or None
    if trace is not None:
        # Before loading the model: a trace of another model or without the
        # drafts a paper analyses is refused, naming what it lacks.
        from ..lm import load_trace
        from ..lm._loader import SMOLLM2
        from ..papers._common import check_trace_suits

        trace = load_trace(trace)
        for name in names:
            if PAPERS[name].uses_trace:
                check_trace_suits(trace, name, SMOLLM2)
    loaded = None
    if any(PAPERS[n].needs_model for n in names) or (trace is None and len(names) > 1):
        from ..papers._common import get_model

        loaded = get_model()  # load once for every paper of the run
    status = ExitCode.OK
    for name in progress(names, args, "papers") if len(names) > 1 else names:
        out = out_root / name if args.paper == "all" else out_root
        result = PAPERS[name].reproduce(
            out, quick=args.quick, trace=trace, loaded=loaded, progress=not args.quiet
        )
        print(result.summary())
        if not result.ok:
            status = ExitCode.CHECK_FAILED
    return status
