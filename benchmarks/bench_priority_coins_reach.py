"""Reach of the priority-coin rule (docs/theory.md §3.17) on random small rows, with and
without mixtures.

For float rows (V = 4..8, n = 3..min(5, V - 1), target and draft from softmaxed Gaussian
logits, a third of the targets flattened so that the bound is 1) and rational rows (the same,
cut to V <= 6 and rounded to multiples of 1/32, Fractions: the draft sets are enumerated and
the plan is exact), it
prints how many rows one rule reaches (mixing switched off), how many the plan reaches
(mixing on), how many needed a mixture, the most rules in a mixture, the largest
``|alpha - bound|`` of a reached float row, and the time per plan.

With ``--trace [PATH]`` it also runs the plan on every position of a recorded trace
(``spectheory.lm``'s cache, the first complete one unless PATH names a ``.safetensors``
file): every draft of the trace against the target, T = 0.7 and 1, n = 4 and 8, and prints
how many rows reach the bound, how many needed a mixture, the largest ``|sum(y) - 1|`` (the
quadrature's certificate) and each miss.

Run: ``python benchmarks/bench_priority_coins_reach.py [--rows 600] [--rational 740]
[--seed 0] [--trace [PATH]]``.
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

import numpy as np

from spectheory.solvers import priority_coins
from spectheory.solvers.priority_coins import priority_coin_plan


def float_rows(count, rng):
    for i in range(count):
        V = int(rng.integers(4, 9))
        n = int(rng.integers(3, min(5, V - 1) + 1))
        scale = 3.0 if i % 3 else 0.3  # flat targets: bound 1, every coin forced
        lp = scale * rng.standard_normal(V)
        lq = 2.0 * rng.standard_normal(V)
        p, q = np.exp(lp - lp.max()), np.exp(lq - lq.max())
        yield p / p.sum(), q / q.sum(), n


def rational_rows(count, rng):
    """The float rows' construction, V = 4..6, rounded to multiples of 1/32 (a target weight
    may round to 0; a draft weight rounds up to at least 1/32) and renormalised exactly."""
    for p, q, n in float_rows(count, rng):
        if p.size > 6:
            p, q = p[:6] / p[:6].sum(), q[:6] / q[:6].sum()
            n = min(n, 5)
        pw = [Fraction(round(32 * x)) for x in p]
        pw[int(np.argmax(p))] += 1
        qw = [Fraction(max(1, round(32 * x))) for x in q]
        yield (np.array([x / sum(pw) for x in pw], dtype=object),
               np.array([x / sum(qw) for x in qw], dtype=object), n)


def measure(label, rows):
    single = reached = mixed = most = 0
    worst = 0.0
    elapsed = 0.0
    keep = priority_coins.MIX_MAX_TOKENS
    for p, q, n in rows:
        priority_coins.MIX_MAX_TOKENS = 0  # mixing off: one rule
        single += priority_coin_plan(p, q, n).reached
        priority_coins.MIX_MAX_TOKENS = keep
        t0 = time.perf_counter()
        plan = priority_coin_plan(p, q, n)
        elapsed += time.perf_counter() - t0
        reached += plan.reached
        if plan.weights.size > 1:
            mixed += 1
            most = max(most, plan.weights.size)
        if plan.reached:
            worst = max(worst, abs(float(plan.alpha_value - plan.bound)))
    total = len(rows)
    print(f"{label:<9} {total:>5} {single:>11} {reached:>8} {mixed:>6} {most:>10} "
          f"{worst:>12.1e} {elapsed / total * 1e3:>8.2f}")


def trace_file(path):
    """The trace to read: ``path``, or the first complete cached one (None if there is none)."""
    if path:
        return path
    from spectheory.lm import cache_entries

    for entry in cache_entries("traces"):
        if not entry.partial and entry.name.endswith(".safetensors"):
            return str(entry.path)
    return None


def measure_trace(path):
    from safetensors.numpy import load_file

    import spectheory as stt

    data = load_file(path)
    drafts = sorted(k for k in data if k.startswith("exit_logits/"))
    print(f"\ntrace {path}: {data['target_logits'].shape[0]} positions, drafts {drafts}")
    for n in (4, 8):
        reached = total = mixed = 0
        worst = 0.0
        t0 = time.perf_counter()
        for key in drafts:
            for temp in (0.7, 1.0):
                for i in range(data["target_logits"].shape[0]):
                    p = stt.softmax(data["target_logits"][i].astype(np.float64) / temp)
                    q = stt.softmax(data[key][i].astype(np.float64) / temp)
                    if (q > 0).sum() < n:
                        continue
                    plan = priority_coin_plan(p, q, n)
                    total += 1
                    reached += plan.reached
                    mixed += plan.weights.size > 1
                    worst = max(worst, abs(plan.total - 1.0))
                    if not plan.reached:
                        print(f"  miss: n = {n}, {key}, T = {temp}, position {i}: "
                              f"{plan.bound - plan.alpha_value:.2e} below {plan.bound:.6f}")
        print(f"n = {n}: reached {reached} of {total}, mixtures {mixed}, "
              f"max |sum(y) - 1| {worst:.1e}, {time.perf_counter() - t0:.0f} s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=600, help="float rows")
    ap.add_argument("--rational", type=int, default=740, help="rational rows")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--trace", nargs="?", const="", default=None,
                    help="also every position of a recorded trace (default: the first cached)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"{'rows':<9} {'count':>5} {'one rule':>11} {'reached':>8} {'mixed':>6} "
          f"{'most rules':>10} {'max |a-b|':>12} {'ms/plan':>8}")
    measure("float", list(float_rows(args.rows, rng)))
    measure("rational", list(rational_rows(args.rational, rng)))
    if args.trace is not None:
        path = trace_file(args.trace)
        if path is None:
            print("\nno cached trace (spectheory report records one)")
        else:
            measure_trace(path)


if __name__ == "__main__":
    main()
