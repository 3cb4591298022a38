"""Benchmark of sweeps on Dask: a local cluster of 2 workers against the serial run.

Builds a synthetic sharded trace at the embedded model's vocabulary
(V = 49,152; target logits 3 N(0, 1), an early-exit draft with N(0, 1) noise
added; float16 as in a real trace), then runs the same sweep
(:func:`spectheory.sim.sweeps.sweep`) three ways and prints the wall times and
the speed-ups over the serial run:

* serial: Dask's synchronous scheduler in this process (numba's parallel
  kernels use every core);
* local: ``scheduler="local"``, a ``distributed.LocalCluster`` of 2 worker
  processes (:func:`spectheory.sim.sweeps.local_cluster`; numba threads per
  worker: the cores divided among the workers), cluster start-up included;
* local, warm: the same on a cluster started beforehand (start-up excluded).

The three tables are checked to be identical (same seed).  No cache is used,
so every run computes every piece.

Run: ``python benchmarks/bench_sweep.py`` (needs dask and distributed).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import time

import numpy as np

from spectheory.lm import Trace, TraceSettings
from spectheory.lm.shards import shard_trace
from spectheory.sim.sweeps import SweepGrid, local_cluster, sweep


def synthetic_trace(vocab, prompts, steps, seed=0):
    """A trace of ``prompts x steps`` positions with random logits (no model needed)."""
    rng = np.random.default_rng(seed)
    N = prompts * steps
    z = 3.0 * rng.standard_normal((N, vocab))
    settings = TraceSettings(
        model="synthetic", drafts=("exit:2",), prompts=tuple(range(prompts)), seed=seed
    )
    meta = {
        "format": 1,
        "settings": dataclasses.asdict(settings),
        "key": settings.key(),
        "model": {"name": "synthetic", "source": "none", "num_layers": 4, "vocab_size": vocab},
        "prompt_order": list(range(prompts)),
    }
    return Trace(
        target_logits=z.astype(np.float16),
        exit_logits={"exit:2": (z + rng.standard_normal((N, vocab))).astype(np.float16)},
        tokens=rng.integers(0, vocab, N),
        prompt_ids=np.repeat(np.arange(prompts), steps),
        steps=np.tile(np.arange(steps), prompts),
        prompt_tokens=rng.integers(0, vocab, 4 * prompts),
        prompt_offsets=np.arange(0, 4 * prompts + 1, 4),
        metadata=json.loads(json.dumps(meta)),
    )


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--steps", type=int, default=12, help="positions per prompt")
    ap.add_argument("--max-shard-mb", type=float, default=5.0)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    from distributed import Client

    trace = synthetic_trace(args.vocab, args.prompts, args.steps)
    grid = SweepGrid(
        temperatures=(1.0,),
        ns=(2, 4),
        samplings=("iid", "without_replacement"),
        verifiers=("rrs", "kseq", "rrs_wor", "naive"),
        trials=args.trials,
    )
    with tempfile.TemporaryDirectory() as folder:
        shards = shard_trace(trace, folder, int(args.max_shard_mb * 2**20))
        tasks = len(shards) * 4
        print(
            f"sweep of {trace.num_positions} positions x V = {args.vocab} in {len(shards)} "
            f"shards; {tasks} tasks (shard x (n, law)), verifiers {', '.join(grid.verifiers)}, "
            f"{args.trials} trials; {os.cpu_count()} cores"
        )
        sweep(shards, dataclasses.replace(grid, trials=2), seed=0)  # numba compile, file cache
        serial, t_serial = timed(lambda: sweep(shards, grid, seed=0))
        local, t_local = timed(
            lambda: sweep(shards, grid, seed=0, scheduler="local", local_workers=args.workers)
        )
        threads = max(1, (os.cpu_count() or 1) // args.workers)
        with (
            local_cluster(args.workers) as cluster,
            Client(cluster) as client,
        ):
            # warm the workers (imports, numba's cached kernels) on a tiny sweep
            sweep(shards, dataclasses.replace(grid, trials=2), scheduler=client)
            warm, t_warm = timed(
                lambda: sweep(shards, grid, seed=0, scheduler=client, numba_threads=threads)
            )
    same = json.dumps(serial) == json.dumps(local) == json.dumps(warm)
    print(f"{len(serial)} rows; tables identical: {same}")
    print(f"{'run':<34}{'seconds':>9}{'speed-up':>10}")
    print(f"{'serial (in-process)':<34}{t_serial:9.2f}{1.0:10.2f}")
    print(f"{f'local cluster, {args.workers} workers':<34}{t_local:9.2f}{t_serial / t_local:10.2f}")
    print(f"{'  same, cluster already started':<34}{t_warm:9.2f}{t_serial / t_warm:10.2f}")
    if not same:
        raise SystemExit("the tables differ")


if __name__ == "__main__":
    main()
