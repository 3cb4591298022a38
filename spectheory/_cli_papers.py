"""``spectheory reproduce PAPER``: the papers' figures and tables.

Exit codes: 0 every required check passed; 3 a required check failed (the
figures and tables are still written); 2 bad input or usage (an unknown
paper name is reported with the list of known ones).

``python -m spectheory._cli_papers ...`` runs the same command on its own.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._errors import SpecTheoryError

__all__ = ["EXIT_CHECK_FAILED", "add_reproduce_parser", "main"]

#: Exit code when a required check against a published number fails.
EXIT_CHECK_FAILED = 3


def _cmd_reproduce(args) -> int:
    from .papers import PAPERS, get_paper

    if args.list:
        width = max(map(len, PAPERS))
        for name, paper in PAPERS.items():
            model = "real model" if paper.needs_model else "trace only"
            print(f"{name:<{width}}  arXiv {paper.arxiv:<12} [{model}]  {paper.title}")
            print(f"{'':<{width}}  {paper.regenerates}")
        return 0
    if not args.paper:
        raise SpecTheoryError(
            f"PAPER is required (one of {', '.join(sorted(PAPERS))}, or 'all'); "
            "see 'spectheory reproduce --list'"
        )
    names = list(PAPERS) if args.paper == "all" else [get_paper(args.paper).name]
    trace = args.trace or None
    loaded = None
    if any(PAPERS[n].needs_model for n in names) or (trace is None and len(names) > 1):
        from .papers._common import get_model

        loaded = get_model()  # load once for every paper of the run
    status = 0
    for name in names:
        out = Path(args.out) / name if args.paper == "all" else Path(args.out)
        result = PAPERS[name].reproduce(
            out, quick=args.quick, trace=trace, loaded=loaded, progress=not args.quiet
        )
        print(result.summary())
        if not result.ok:
            status = EXIT_CHECK_FAILED
    return status


def add_reproduce_parser(subparsers):
    """Register ``spectheory reproduce`` on an argparse ``subparsers`` object.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From ``ArgumentParser.add_subparsers``; the command's function is set
        as ``func`` (called with the parsed arguments, returns the exit code).

    Returns
    -------
    argparse.ArgumentParser
        The ``reproduce`` parser.
    """
    r = subparsers.add_parser(
        "reproduce",
        help="regenerate a paper's figures and tables and check them against its numbers",
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
        "--out", default="", help="output folder (default papers-out/PAPER; with 'all', one "
        "sub-folder per paper)"
    )  # fmt: skip
    r.add_argument(
        "--quick",
        action="store_true",
        help="small trace (6 prompts x 8 tokens) and smaller sweeps: about a minute each",
    )
    r.add_argument("--trace", default="", help="a saved trace file (default: the default trace)")
    r.add_argument("--quiet", action="store_true", help="no progress output")
    r.set_defaults(func=_run_reproduce)
    return r


def _run_reproduce(args) -> int:
    if not args.out:
        args.out = str(Path("papers-out") / (args.paper or "all"))
    return _cmd_reproduce(args)


def main(argv=None) -> int:
    """``python -m spectheory._cli_papers [PAPER] [--out DIR] [--quick] [--list]``."""
    ap = argparse.ArgumentParser(prog="spectheory")
    sub = ap.add_subparsers(dest="command", required=True)
    add_reproduce_parser(sub)
    args = ap.parse_args(["reproduce", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except (SpecTheoryError, OSError) as exc:
        print(f"spectheory reproduce: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
