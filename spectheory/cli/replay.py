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
    rp.add_argument("--trace", type=existing_path, default="",
                    help="a saved trace file (else record or reuse)")  # fmt: skip
    add_recording_options(rp)
    add_grid_options(rp, drafts_flag="--replay-drafts")
    rp.add_argument("--out", default="replay.csv", help="CSV output path (default %(default)s)")
    # --seed is a recording option (the trace's sampling) and the replay's base seed
    rp.set_defaults(run=run)
    return rp


def run(args) -> int:
    import numpy as np

    from ..sim.replay import common_positions, replay, write_csv

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
    # Means over the positions replayed under every law and n of a draft and temperature
    # (without replacement and greedy need n tokens of support): averages over different
    # positions would show orderings the theory forbids (wor below i.i.d., alpha* falling in n).
    common = common_positions(table)
    groups: dict = {}
    for row in table:
        if int(row["position"]) not in common[(row["draft"], row["temperature"], row["n"])]:
            continue
        key = (row["draft"], row["temperature"], row["n"], row["sampling"], row["verifier"])
        groups.setdefault(key, []).append(row)
    print(
        f"{'draft':<9}{'T':>5}{'n':>3} {'law':<20}{'verifier':<9}{'bound':>7}{'exact':>7}{'mc':>7}"
        f"{'positions':>10}"
    )
    for (d, t, n, law, v), rows in groups.items():
        exact = [r["exact"] for r in rows if r["exact"] == r["exact"]]
        ex = f"{np.mean(exact):7.3f}" if exact else f"{'-':>7}"
        b = np.mean([r["bound"] for r in rows])
        mc = np.mean([r["mc"] for r in rows])
        print(f"{d:<9}{t:>5}{n:>3} {law:<20}{v:<9}{b:7.3f}{ex}{mc:7.3f}{len(rows):>10}")
    print(f"{len(table)} rows ({trace.num_positions} positions) in {seconds:.1f} s -> {path}")
    replayed = len({int(r["position"]) for r in table})
    per_draft = {(d, t): len(v) for (d, t, _), v in common.items()}  # the same set for every n
    fewer = [f"{d}, T = {t:g}: {c} of {replayed}" for (d, t), c in sorted(per_draft.items())
             if c < replayed]  # fmt: skip
    if fewer:
        print("means over the positions replayed under every law and n of that draft and T "
              "(the CSV keeps every row): " + "; ".join(fewer))  # fmt: skip
    return ExitCode.OK
