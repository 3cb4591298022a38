"""The uniform random-utility rule (docs/theory.md §3.16) on random small rows.

For each draft law and n in {2, 3, 4, 5} it solves the rule's scores on random
rows (V = n..7, target and draft Dirichlet with concentrations 0.1, 0.3 and 1) and
prints how many rows reach the bound to 1e-12, the largest gap where one does
not, and the time of a plan per row beside the transport LP's bound on the same
row (``solve_bound(method="lp")``, HiGHS), as a ratio of totals.

Run: ``python benchmarks/bench_random_utility.py [--rows 60] [--seed 5]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from spectheory.solvers import solve_bound
from spectheory.solvers.random_utility import random_utility_plan

SAMPLINGS = ("without_replacement", "iid", "greedy")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=60, help="rows per concentration")
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"{'law':20s} {'n':>2s} {'rows':>5s} {'reached':>8s} {'largest gap':>12s} "
          f"{'plan ms':>8s} {'/ LP':>6s}")
    for sampling in SAMPLINGS:
        for n in (2, 3, 4, 5):
            count = reached = 0
            worst = 0.0
            plan_s = lp_s = 0.0
            for conc in (0.1, 0.3, 1.0):
                for _ in range(args.rows):
                    V = int(rng.integers(max(n, 2), 8))
                    p = rng.dirichlet(np.full(V, conc))
                    q = rng.dirichlet(np.full(V, conc))
                    if sampling != "iid" and np.count_nonzero(q) < n:
                        continue
                    t0 = time.perf_counter()
                    plan = random_utility_plan(p, q, n, sampling)
                    t1 = time.perf_counter()
                    solve_bound(p, q, n, sampling, method="lp")
                    t2 = time.perf_counter()
                    plan_s += t1 - t0
                    lp_s += t2 - t1
                    count += 1
                    reached += plan.reached
                    if not plan.reached:
                        worst = max(worst, float(plan.bound - plan.alpha_value))
            print(f"{sampling:20s} {n:2d} {count:5d} {reached:8d} {worst:12.1e} "
                  f"{1e3 * plan_s / count:8.1f} {plan_s / lp_s:6.1f}")


if __name__ == "__main__":
    main()
