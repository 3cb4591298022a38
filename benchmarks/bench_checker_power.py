"""Power and false-alarm tables of the losslessness checkers (docs/checker.md).

0. Validity: the exact false-alarm rate (binomial sums, no sampling) of a
   row with one small cell, for Pearson's chi-square p-value and for the
   checker's test (G with Agrawal's bound), at the levels a verdict uses.
1. check_lossless's per-row test: a one-row check (tests: the row's
   G test, the pooled PIT, the bound; Bonferroni over m = 3) of outputs
   drawn from a biased law p + tv (e_0 - e_1) of total variation ``tv``, for
   a grid of ``tv`` and trials; detection rate over ``--reps`` repetitions
   at alpha = 1e-6, next to the stated ``detectable_tv``.  The outputs are
   drawn directly (multinomial) and scored with check_lossless's own
   statistics (spectheory.sim._stats), so the table costs seconds.
2. The audit of logged samples (check_lossless_from_samples) on the logs of
   tests/audit_logs.py: correct chain and multi-draft samplers (false-alarm
   rate at alpha = 0.05 and 1e-6) and the buggy samplers (b)-(d) (power at
   alpha = 1e-6) for several log sizes.

Run from the repository root: ``python benchmarks/bench_checker_power.py``
(``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spectheory.sim import _stats
from spectheory.sim.audit import check_lossless_from_samples
from tests.audit_logs import chain_log, multidraft_log

P = np.array([0.3, 0.4, 0.3])


def checker_detects(counts, p, rng, alpha):
    """check_lossless's verdict on one row's counts (row test, PIT, no bound excess)."""
    ys = np.repeat(np.arange(p.size), counts)
    row = _stats.multinomial_gof(counts, p).pvalue
    pit = _stats.uniformity_gof(_stats.randomised_pit(p, ys, rng)).pvalue
    return _stats.bonferroni([row, pit, 1.0]) <= alpha


def power_table(tvs, trials_grid, reps, alpha=1e-6, seed=0):
    rng = np.random.default_rng(seed)
    lines = ["| TV bias \\ trials | " + " | ".join(f"{t:,}" for t in trials_grid) + " |",
             "|---|" + "---|" * len(trials_grid)]  # fmt: skip
    for tv in tvs:
        biased = P + np.array([tv, -tv, 0.0])
        cells = []
        for T in trials_grid:
            hits = sum(
                checker_detects(rng.multinomial(T, biased), P, rng, alpha) for _ in range(reps)
            )
            cells.append(f"{hits / reps:.2f}")
        lines.append(f"| {tv:.3f} | " + " | ".join(cells) + " |")
    lines.append(
        "| stated detectable TV (power 0.99) | "
        + " | ".join(f"{_stats.detectable_tv(T, 3, alpha / 3):.3f}" for T in trials_grid)
        + " |"
    )
    return "\n".join(lines)


def exact_rate(test, lam, N, level):
    """P(test's p-value <= level) for the row p = (1 - lam/N, lam/N) with N draws, exactly."""
    from scipy import stats

    e = lam / N
    k = np.arange(0, int(20 * lam + 60))
    p = np.array([1 - e, e])
    pv = np.array([test(np.array([N - x, x], float), p).pvalue for x in k])
    return float(stats.binom.pmf(k, N, e)[pv <= level].sum())


def validity_table(lams=(5, 10, 20, 50, 200), N=20_000, levels=(1e-6 / 3, 1e-9)):
    lines = ["| expected count of the small cell | "
             + " | ".join(f"Pearson at {a:.1e} | G bound at {a:.1e}" for a in levels) + " |",
             "|---|" + "---|" * (2 * len(levels))]  # fmt: skip
    for lam in lams:
        cells = []
        for a in levels:
            cells += [f"{exact_rate(_stats.chisquare_gof, lam, N, a):.1e}",
                      f"{exact_rate(_stats.multinomial_gof, lam, N, a):.1e}"]  # fmt: skip
        lines.append(f"| {lam} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def audit_rate(make, sizes, seeds, alpha):
    out = []
    for N in sizes:
        hits = sum(
            check_lossless_from_samples(make(np.random.default_rng(10_000 + s), N), alpha=alpha,
                                        rng=s).lossy
            for s in range(seeds)
        )  # fmt: skip
        out.append(f"{hits}/{seeds}")
    return out


def audit_tables(sizes, seeds, fa_seeds):
    cases = {
        "(a) correct chain": lambda r, N: chain_log(r, N),
        "(a') correct multi-draft RRS, n = 3": lambda r, N: multidraft_log(r, N),
        "(b) recorded q is not the draft's law": lambda r, N: chain_log(r, N, bug="recorded_q"),
        "(c) draft law != law of the acceptance test": lambda r, N: chain_log(
            r, N, bug="mismatched_q"
        ),
        "(d) multi-draft RRS de-duplicating drafts": lambda r, N: multidraft_log(r, N, dedup=True),
    }
    lines = ["| log (alpha = 1e-6) | " + " | ".join(f"N = {N:,}" for N in sizes) + " |",
             "|---|" + "---|" * len(sizes)]  # fmt: skip
    for name, make in cases.items():
        lines.append(f"| {name} | " + " | ".join(audit_rate(make, sizes, seeds, 1e-6)) + " |")
    fa = ["", "| correct log, alpha = 0.05 | false alarms |", "|---|---|"]
    for name in ("(a) correct chain", "(a') correct multi-draft RRS, n = 3"):
        rate = audit_rate(cases[name], [1000], fa_seeds, 0.05)[0]
        fa.append(f"| {name}, N = 1,000 | {rate} |")
    return "\n".join(lines + fa)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small grids (smoke run)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    print(validity_table(lams=(5, 50) if args.quick else (5, 10, 20, 50, 200)))
    print()
    if args.quick:
        print(power_table([0.02, 0.05], [1000, 5000], reps=20))
        print()
        print(audit_tables([2000], seeds=2, fa_seeds=20))
    else:
        print(power_table([0.01, 0.02, 0.03, 0.05, 0.1], [1000, 5000, 20000, 100000], reps=200))
        print()
        print(audit_tables([2000, 5000, 20000], seeds=10, fa_seeds=200))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
