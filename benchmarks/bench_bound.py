"""Benchmark of spectheory.bound against np.argsort of the same rows, and against the LP.

Prints, for V = 49,152 and 151,936 and n in {2, 4, 8}, the time per row
(per position) of ``bound`` for i.i.d. drafts and drafts without replacement,
each by its fast path (what ``bound`` runs) and by its reference path (the
full-sort prefix scan, ``iid_reference`` and ``_wor_reference``), side by
side, with the ratio of each to one ``np.argsort`` of the same row.  All are
measured in one run, interleaved (argsort, then every path, repeated), and
each ratio is the median over the repetitions of the pairwise ratio, so that
a drift of the (shared) machine's speed cancels; the load average is printed
with every block.  Then the speed-up of the dual over the primal LP (HiGHS)
on instances the LP can solve.

Rows: softmax of Zipf-like logits at temperature T in [0.7, 1] for the
target, the draft's logits perturbed by N(0, 1) noise; and, when a real
trace is cached (``spectheory.lm``, ``traces/``), its target rows against its
first early-exit draft at T = 1 and 0.7 (V = 49,152).

Run: ``python benchmarks/bench_bound.py`` (``--quick`` for a smaller run).
``bound`` runs the rows of a batch on all of numba's threads when the batch
has at least ``spectheory._threads.PARALLEL_MIN_WORK`` entries (2^18: every
batch here) and the load average leaves a core idle
(``spectheory._threads.run_parallel``), else on one; ``np.argsort`` runs on
one.  ``--threads 1`` measures ``bound`` on one core (the ratio per core).
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

import spectheory as stt
from spectheory.solvers.ot_dual import _wor_reference, iid_reference

PATHS = (
    ("iid", "fast", lambda p, q, n: stt.bound(p, q, n, "iid")),
    ("iid", "ref", lambda p, q, n: iid_reference(p, q, n)),
    ("without_replacement", "fast", lambda p, q, n: stt.bound(p, q, n, "without_replacement")),
    ("without_replacement", "ref", lambda p, q, n: _wor_reference(p, q, n)),
)


def timed(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def load():
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} {five:.1f} {fifteen:.1f}"


def zipf_rows(V, B, seed):
    """Zipf-like logits (log-rank slope 1.1 plus N(0, 1)), T in [0.7, 1]."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, V + 1)
    z = -1.1 * np.log(ranks)[None, :] + rng.standard_normal((B, V))
    for b in range(B):
        z[b] = z[b, rng.permutation(V)]
    temp = rng.uniform(0.7, 1.0, (B, 1))
    return stt.softmax(z / temp), stt.softmax((z + rng.standard_normal((B, V))) / temp)


def trace_rows(temperature):
    """Target and first early-exit draft rows of the first cached real trace, or None."""
    try:
        from safetensors.numpy import load_file

        from spectheory.lm import cache_entries
    except ImportError:
        return None
    for entry in cache_entries("traces"):
        if entry.partial or not entry.name.endswith(".safetensors"):
            continue
        data = load_file(str(entry.path))
        drafts = sorted(k for k in data if k.startswith("exit_logits/"))
        if "target_logits" not in data or not drafts:
            continue
        zt = data["target_logits"].astype(np.float64) / temperature
        zd = data[drafts[0]].astype(np.float64) / temperature
        return stt.softmax(zt), stt.softmax(zd)
    return None


def bench_rows(label, p, q, repeats, ns=(2, 4, 8)):
    B, V = p.shape
    print(f"\n{label}: V = {V}, B = {B} rows, {repeats} interleaved repetitions; {load()}")
    print(
        f"{'n':>2} {'law':<20} {'argsort ms':>10} {'fast ms':>8} {'ratio':>6} "
        f"{'ref ms':>8} {'ratio':>6} {'speed-up':>8}"
    )
    for n in ns:
        for _, _, fn in PATHS:
            fn(p[:2], q[:2], n)  # compile and warm up
        t_sort, t = [], {key[:2]: [] for key in PATHS}
        for _ in range(repeats):
            t_sort.append(timed(np.argsort, p, 1))
            for law, path, fn in PATHS:
                t[law, path].append(timed(fn, p, q, n))
        ts = np.array(t_sort)
        for law in ("iid", "without_replacement"):
            fast, ref = np.array(t[law, "fast"]), np.array(t[law, "ref"])
            print(
                f"{n:>2} {law:<20} {np.median(ts) / B * 1e3:>10.3f} "
                f"{np.median(fast) / B * 1e3:>8.3f} {np.median(fast / ts):>6.2f} "
                f"{np.median(ref) / B * 1e3:>8.3f} {np.median(ref / ts):>6.2f} "
                f"{np.median(ref / fast):>8.1f}"
            )
    print(f"  ({load()} after)")


def bench_lp(repeats):
    print("\ndual vs primal LP (HiGHS), one instance per row, V = 8")
    print(f"{'n':>2} {'law':<20} {'dual ms':>8} {'LP ms':>8} {'speed-up':>9} {'|diff|':>9}")
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(8)), rng.dirichlet(np.ones(8))
    for n in (2, 3, 4):
        for sampling in stt.SAMPLINGS:
            d = stt.bound(p, q, n, sampling)
            lp = stt.solve_bound(p, q, n, sampling, "lp").value
            td = min(timed(stt.bound, p, q, n, sampling) for _ in range(repeats))
            tl = min(timed(stt.solve_bound, p, q, n, sampling, "lp") for _ in range(repeats))
            print(
                f"{n:>2} {sampling:<20} {td * 1e3:>8.3f} {tl * 1e3:>8.1f} {tl / td:>9.0f} "
                f"{abs(d - lp):>9.1e}"
            )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="B = 4, 3 repetitions, V = 49,152 only")
    ap.add_argument("--repeats", type=int, default=7, help="interleaved repetitions (default 7)")
    ap.add_argument("--no-lp", action="store_true", help="skip the LP comparison")
    ap.add_argument(
        "--threads", type=int, default=None, help="numba threads for bound (default: all)"
    )
    args = ap.parse_args()
    if args.threads is not None:
        numba.set_num_threads(args.threads)
    print(f"numba threads: {numba.get_num_threads()}; cpus: {os.cpu_count()}")
    repeats = 3 if args.quick else args.repeats
    vocabs = (49152,) if args.quick else (49152, 151936)
    B = 4 if args.quick else 16
    for V in vocabs:
        p, q = zipf_rows(V, B, seed=V)
        bench_rows("Zipf-like rows", p, q, repeats)
    for temperature in (1.0, 0.7):
        rows = trace_rows(temperature)
        if rows is not None:
            p, q = rows
            bench_rows(f"real trace, T = {temperature}", p[: 2 * B], q[: 2 * B], repeats)
    if not args.no_lp:
        bench_lp(3)


if __name__ == "__main__":
    main()
