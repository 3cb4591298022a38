"""Time the target's batched sampling (the corpus loop) at fixed and load-chosen thread counts.

    python benchmarks/bench_torch_threads.py [--prompts 64] [--tokens 16] [--modes 2,auto,2,auto]

Each mode samples the same continuations (64 training prompts, one answer of
``--tokens`` tokens each, batch 64, key-value cache): ``N`` fixes
``SPECTHEORY_TORCH_THREADS=N``; ``auto`` lets
:func:`spectheory._threads.torch_threads` choose from the one-minute load average.
Modes alternate so that both see the same load; the table prints the load at
the start of each run and the ratio of each run to the first fixed mode.
"""

from __future__ import annotations

import argparse
import os
import time

from spectheory._threads import TORCH_THREADS_ENV, load_average


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--modes", default="2,auto,2,auto")
    args = ap.parse_args(argv)

    from spectheory.lm import load_model
    from spectheory.lm.corpus import CorpusSettings, _sample_continuations

    loaded = load_model()
    settings = CorpusSettings(
        prompts=args.prompts, samples_per_prompt=1, sampled_tokens=args.tokens
    )
    base = None
    print(f"{'mode':>6} {'load':>6} {'seconds':>8} {'ratio':>6}")
    for mode in args.modes.split(","):
        if mode == "auto":
            os.environ.pop(TORCH_THREADS_ENV, None)
        else:
            os.environ[TORCH_THREADS_ENV] = mode
        load = load_average()
        t0 = time.perf_counter()
        _sample_continuations(loaded, settings, False)
        dt = time.perf_counter() - t0
        base = base or (dt if mode != "auto" else None)
        ratio = f"{dt / base:.2f}" if base else "-"
        print(f"{mode:>6} {load:6.2f} {dt:8.1f} {ratio:>6}", flush=True)


if __name__ == "__main__":
    main()
