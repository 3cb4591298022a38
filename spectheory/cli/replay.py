"""``spectheory replay``: a trace through every verifier (bound, exact and Monte Carlo)."""

from __future__ import annotations

import time

from ._common import ExitCode, existing_path
from ._grid import add_grid_options, grid_from_args
from ._recording import add_recording_options, load_or_record

HELP = "replay a trace through every verifier: bound, exact and Monte Carlo acceptance"


def add_parser(subparsers):
    """Register ``spectheory replay``."""
    rp = subparsers.add_parser(
        "replay",
        help=HELP,
        description=(
            "Reads a trace (--trace FILE) or records/reuses one with the recording options, "
            "and writes the tidy table (one row per position, draft, temperature, n, draft "
            "law and verifier) as CSV."
        ),
    )
    rp.add_argument("--trace", type=existing_path, default=None,
                    help="a saved trace file (else record or reuse)")  # fmt: skip
    add_recording_options(rp)
    add_grid_options(rp, drafts_flag="--replay-drafts")
    rp.add_argument("--out", default="replay.csv", help="CSV output path (default %(default)s)")
    # --seed is a recording option (the trace's sampling) and the replay's base seed
    rp.set_defaults(run=run)
    return rp


def run(args) -> int:
    from ..sim.replay import replay, write_csv
    from ._summary import print_means

    grid = grid_from_args(args)
    trace = load_or_record(args)
    extra = {"seed": args.seed} if "seed" in vars(args) else {}
    t0 = time.perf_counter()
    table = replay(
        trace,
        drafts=grid.drafts,
        temperatures=grid.temperatures,
        ns=grid.ns,
        samplings=grid.samplings,
        verifiers=grid.verifiers,
        trials=grid.trials,
        progress=not args.quiet,
        **extra,
    )
    seconds = time.perf_counter() - t0
    path = write_csv(table, args.out)
    print_means(table, grid, trace.drafts)
    print(f"{len(table)} rows ({trace.num_positions} positions) in {seconds:.1f} s -> {path}")
    return ExitCode.OK
