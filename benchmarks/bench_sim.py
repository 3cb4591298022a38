"""Benchmark of the numba simulation kernels against the Python reference verifiers.

For every verifier with a kernel (spectheory.sim._kernels.KERNEL_VERIFIERS), at
V = 49,152 and n in {1, 2, 4, 8} (where the verifier allows n), prints the
trials per second of

* kernel: drafts and verification of ``B x T`` trials by
  ``spectheory.sim.simulate`` (numba, all cores; per-row tables included),
* reference: the registry verifier run in Python with ``RandomCoins`` on
  kernel-drawn drafts, trial by trial (what simulate falls back to),

measured in the same run, and their ratio.  Rows are softmax(3 z) targets with
draft logits perturbed by N(0, 1), as in bench_bound.py.  Counts: the kernel
runs B = 4 rows x T = 5,000 trials (rrs_wor, O(nV) per trial: T = 500); the
reference runs B = 4 rows x 10 trials (it is slow: O(V) numpy work per coin).

Run: ``python benchmarks/bench_sim.py`` (``--quick``: n in {1, 4}, fewer trials).
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import spectheory as stt
from spectheory.coins import RandomCoins
from spectheory.sim import _kernels
from spectheory.sim.simulate import simulate
from spectheory.verifiers import REGISTRY


def rows(V, B, seed):
    rng = np.random.default_rng(seed)
    z = 3.0 * rng.standard_normal((B, V))
    return stt.softmax(z), stt.softmax(z + rng.standard_normal((B, V)))


def reference_rate(name, p, q, n, sampling, trials, seed):
    """Trials per second of the Python reference on kernel-drawn drafts."""
    fn = REGISTRY[name].function
    kd = _kernels.draft_uniforms(n, sampling)
    du = np.random.default_rng(seed).random((p.shape[0], trials, kd))
    drafts = _kernels.draw_drafts(q, n, sampling, du)
    coins = RandomCoins(seed)
    t0 = time.perf_counter()
    for b in range(p.shape[0]):
        for t in range(trials):
            fn(p[b], q[b], tuple(int(x) for x in drafts[b, t]), coins, sampling=sampling)
    return p.shape[0] * trials / (time.perf_counter() - t0)


def kernel_rate(name, p, q, n, sampling, trials, seed):
    simulate(name, p[:1], q[:1], n, sampling, trials=2, seed=seed)  # compile / warm up
    t0 = time.perf_counter()
    simulate(name, p, q, n, sampling, trials=trials, seed=seed)
    return p.shape[0] * trials / (time.perf_counter() - t0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    V, B = 49_152, 4
    ns = (1, 4) if args.quick else (1, 2, 4, 8)
    t_kernel, t_ref = (1000, 4) if args.quick else (5000, 10)
    p, q = rows(V, B, seed=0)
    print(f"V = {V}; B = {B} rows; numba threads: {numba.get_num_threads()}")
    print(f"trials/row: kernel {t_kernel} (rrs_wor {t_kernel // 10}), reference {t_ref}")
    print(f"{'verifier':<9} {'law':<20} {'n':>2} {'kernel/s':>11} {'reference/s':>12} {'ratio':>8}")
    for name in _kernels.KERNEL_VERIFIERS:
        v = REGISTRY[name]
        sampling = v.samplings[0]
        for n in ns:
            if v.n_values is not None and n not in v.n_values:
                continue
            tk = t_kernel // 10 if name == "rrs_wor" else t_kernel
            k = kernel_rate(name, p, q, n, sampling, tk, seed=n)
            r = reference_rate(name, p, q, n, sampling, t_ref, seed=n)
            print(f"{name:<9} {sampling:<20} {n:>2} {k:>11.0f} {r:>12.0f} {k / r:>8.0f}")


if __name__ == "__main__":
    main()
