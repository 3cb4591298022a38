"""``spectheory sweep``: a sharded trace through a grid of configurations, on Dask."""

from __future__ import annotations

import argparse
import re
import time

from ._common import (
    ExitCode,
    existing_path,
    given_kwargs,
    nonnegative_int,
    positive_int,
    signature_options,
    usage_error,
)
from ._grid import add_grid_options, grid_from_args
from ._summary import print_means

HELP = "replay a sharded trace through a grid of configurations on Dask"

#: The named schedulers of :func:`spectheory.sim.sweeps.sweep` (else an address).
SCHEDULERS = ("serial", "threads", "local")
_ADDRESS = re.compile(r"^[a-z][a-z0-9+]*://\S+$")


def scheduler(text: str) -> str:
    """'serial', 'threads', 'local' or a scheduler address such as ``tcp://host:8786``.

    >>> scheduler("tcp://10.0.0.1:8786")
    'tcp://10.0.0.1:8786'
    >>> scheduler("bogus")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be 'serial', 'threads' or 'local' or an address ...
    """
    if text in SCHEDULERS or _ADDRESS.match(text):
        return text
    raise argparse.ArgumentTypeError(
        f"must be {', '.join(map(repr, SCHEDULERS[:-1]))} or {SCHEDULERS[-1]!r} or an address "
        f"such as tcp://host:8786; got {text!r}"
    )


def add_parser(subparsers):
    """Register ``spectheory sweep``."""
    s = subparsers.add_parser(
        "sweep",
        help=HELP,
        description=(
            "Replays every shard of a sharded trace (spectheory trace shard) through every "
            "(draft, temperature, n, draft law) with the chosen verifiers, on Dask (in-process, "
            "a local cluster or a scheduler address), and writes one tidy CSV table. Finished "
            "pieces are cached, so an interrupted sweep resumes."
        ),
    )
    s.add_argument("--shards", type=existing_path, required=True,
                   help="folder of a sharded trace")  # fmt: skip
    add_grid_options(s)
    signature_options(s, "spectheory.sim.sweeps:sweep", {
        "seed": ("--seed", nonnegative_int, "base seed of every random stream"),
        "local_workers": ("--workers", positive_int, "workers of --scheduler local"),
        "retries": ("--retries", nonnegative_int, "retries of a failing task"),
        "chunk": ("--chunk", positive_int, "positions processed together"),
    })  # fmt: skip
    s.add_argument(
        "--scheduler",
        type=scheduler,
        default="serial",
        help="'serial' (in-process, the default), 'threads', 'local' (a local Dask cluster) "
        "or a scheduler address such as tcp://host:8786",
    )
    s.add_argument(
        "--cache-dir",
        default="",
        help="folder of finished pieces (default $SPECTHEORY_CACHE_DIR/sweeps); "
        "must be visible to the workers",
    )
    s.add_argument("--no-cache", action="store_true", help="neither reuse nor store pieces")
    s.add_argument(
        "--bounds-only", action="store_true", help="only the optimal acceptance (no simulation)"
    )
    s.add_argument("--out", default="sweep.csv", help="CSV output path (default %(default)s)")
    s.set_defaults(run=run)
    return s


def _check_combinations(args) -> None:
    """Refuse options that the other options given make ignored (they would be, without a word)."""
    given = vars(args)
    if args.bounds_only:
        unused = [f for f, d in (("--seed", "seed"), ("--trials", "trials"),
                                 ("--verifiers", "verifiers")) if d in given]  # fmt: skip
        if unused:
            raise usage_error(f"{', '.join(unused)} cannot be combined with --bounds-only (the "
                              "optimal acceptance runs no verifier and draws nothing)")  # fmt: skip
    if "local_workers" in given and args.scheduler != "local":
        raise usage_error(f"--workers needs --scheduler local (the workers of a local Dask "
                          f"cluster); got --scheduler {args.scheduler}")  # fmt: skip
    if args.no_cache and args.cache_dir:
        raise usage_error("--cache-dir cannot be combined with --no-cache (which neither reuses "
                          "nor stores pieces)")  # fmt: skip


def run(args) -> int:
    from ..lm import cache_dir as default_cache
    from ..sim.sweeps import BOUND_COLUMNS, SWEEP_COLUMNS, sweep, sweep_bounds, write_table

    _check_combinations(args)
    grid = grid_from_args(args)
    cache = None if args.no_cache else (args.cache_dir or default_cache() / "sweeps")
    t0 = time.perf_counter()
    common = dict(
        scheduler=None if args.scheduler == "serial" else args.scheduler,
        cache_dir=cache,
        progress=not args.quiet,
        **given_kwargs(args, ("local_workers", "retries", "chunk")),
    )
    if args.bounds_only:
        table = sweep_bounds(args.shards, grid, **common)
        path = write_table(table, args.out, BOUND_COLUMNS)
    else:
        table = sweep(args.shards, grid, **given_kwargs(args, ("seed",)), **common)
        path = write_table(table, args.out, SWEEP_COLUMNS)
    seconds = time.perf_counter() - t0
    print_means(table, grid)
    print(f"{len(table)} rows in {seconds:.1f} s -> {path}")
    return ExitCode.OK
