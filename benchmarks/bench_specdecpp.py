"""Benchmark of the exact SpecDec++ solver (Dinkelbach + backward induction) against the LP.

Prints, for each instance, the time of ``solve_specdecpp(method="dinkelbach")``
and of the independent semi-Markov LP (``method="lp"``, HiGHS) on the same
instance, their ratio, and the difference of the optimal cost per token.
Instances: docs/theory.md §8.7 (c = 0.2, K_max = 25), a 4-value law, and a
two-state Markov chain, at several K_max.

Run: ``python benchmarks/bench_specdecpp.py`` (``--quick`` for a smaller run).
"""

from __future__ import annotations

import argparse
import time

from spectheory.solvers.specdecpp import solve_specdecpp


def best_of(repeats, *args, **kwargs):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = solve_specdecpp(*args, **kwargs)
        times.append(time.perf_counter() - t0)
    return min(times), out


INSTANCES = [
    ("8.7 row 1", {0.95: 0.8, 0.3: 0.2}, None),
    ("8.7 row 2", {0.99: 0.6, 0.6: 0.3, 0.1: 0.1}, None),
    ("4 values", {0.98: 0.4, 0.9: 0.3, 0.6: 0.2, 0.2: 0.1}, None),
    ("Markov 2", {0.95: 0.5, 0.3: 0.5}, [[0.9, 0.1], [0.5, 0.5]]),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 2 if args.quick else 5
    k_values = (10, 25) if args.quick else (10, 18, 25)
    print(f"best of {repeats}; c = t_draft / t_target = 0.2")
    print(
        f"{'instance':<10} {'K':>3} {'states':>7} {'dinkelbach ms':>14} {'LP ms':>9} "
        f"{'LP/dink':>8} {'|dlambda|':>10} {'S*':>7}"
    )
    for name, law, T in INSTANCES:
        for k in k_values:
            td, rd = best_of(repeats, law, 0.2, transition=T, k_max=k)
            tl, rl = best_of(repeats, law, 0.2, transition=T, k_max=k, method="lp")
            diff = abs(rd.average_cost - rl.average_cost)
            print(
                f"{name:<10} {k:>3} {rd.n_states:>7} {td * 1e3:>14.2f} {tl * 1e3:>9.2f} "
                f"{tl / td:>8.1f} {diff:>10.1e} {rd.speedup:>7.4f}"
            )


if __name__ == "__main__":
    main()
