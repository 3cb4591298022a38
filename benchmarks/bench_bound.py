"""Benchmark of spectheory.bound against np.argsort of the same rows, and against the LP.

Prints, for B = 64 rows at V = 49,152 and 151,936 and n in {2, 4, 8}, the time
per row of ``bound`` for each draft law and its ratio to one ``np.argsort`` of
the same (target) rows, measured in the same run.  Then the speed-up of the
dual over the primal LP (HiGHS) on instances the LP can solve.

Run: ``python benchmarks/bench_bound.py`` (``--quick`` for a smaller run).
Rows are softmax(3 z) targets with draft logits perturbed by N(0, 1), a stand-in
with the spread of real next-token distributions.  ``bound`` runs its numba
kernels on all cores (``NUMBA_NUM_THREADS``), ``np.argsort`` on one.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import spectheory as stt


def best_of(repeats, fn, *args):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return min(times)


def rows(V, B, seed):
    rng = np.random.default_rng(seed)
    z = 3.0 * rng.standard_normal((B, V))
    return stt.softmax(z), stt.softmax(z + rng.standard_normal((B, V)))


def bench_vocabulary(B, repeats, vocabs):
    print(f"numba threads: {numba.get_num_threads()}; B = {B}; best of {repeats}")
    print(f"{'V':>7} {'n':>2} {'law':<20} {'ms/row':>8} {'argsort ms/row':>15} {'ratio':>6}")
    for V in vocabs:
        p, q = rows(V, B, seed=V)
        t_sort = best_of(repeats, np.argsort, p, 1) / B
        for n in (2, 4, 8):
            for sampling in stt.SAMPLINGS:
                stt.bound(p[:2], q[:2], n, sampling)  # compile and warm up
                t = best_of(repeats, stt.bound, p, q, n, sampling) / B
                print(
                    f"{V:>7} {n:>2} {sampling:<20} {t * 1e3:>8.3f} {t_sort * 1e3:>15.3f} "
                    f"{t / t_sort:>6.2f}"
                )


def bench_lp(repeats):
    print("\ndual vs primal LP (HiGHS), one instance per row, V = 8")
    print(f"{'n':>2} {'law':<20} {'dual ms':>8} {'LP ms':>8} {'speed-up':>9} {'|diff|':>9}")
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(8)), rng.dirichlet(np.ones(8))
    for n in (2, 3, 4):
        for sampling in stt.SAMPLINGS:
            d = stt.bound(p, q, n, sampling)
            lp = stt.solve_bound(p, q, n, sampling, "lp").value
            td = best_of(repeats, stt.bound, p, q, n, sampling)
            tl = best_of(repeats, stt.solve_bound, p, q, n, sampling, "lp")
            print(
                f"{n:>2} {sampling:<20} {td * 1e3:>8.3f} {tl * 1e3:>8.1f} {tl / td:>9.0f} "
                f"{abs(d - lp):>9.1e}"
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="B = 8, V = 49,152 only")
    args = ap.parse_args()
    if args.quick:
        bench_vocabulary(8, 2, (49152,))
    else:
        bench_vocabulary(64, 3, (49152, 151936))
    bench_lp(3)


if __name__ == "__main__":
    main()
