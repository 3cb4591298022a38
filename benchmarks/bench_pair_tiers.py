"""``pair_tiers`` on a recorded trace: how often it reaches the bound, and what it costs.

For every draft of the trace, T in {0.7, 1}, n = 2 drafts without replacement, at
every ``--step``-th position, it prints

* how many rows the plan reaches :math:`\\alpha^*_{\\rm wor}` on (``reached``: the
  plan's exact selection acceptance equals the bound to 1e-12), and the mean gap
  bound minus selection acceptance (0 where reached);
* the Monte Carlo acceptance of ``rrs_wor``, ``embedded_iid`` and ``pair_tiers`` on
  the same drafts (shared draft uniforms), against the exact bounds;
* the plan's cost per row (median and largest), as a ratio to one ``np.argsort``
  of the row, interleaved in the same run.

Run: ``python benchmarks/bench_pair_tiers.py TRACE.safetensors [--step 16] [--trials 200]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from spectheory import bound, simulate
from spectheory.distributions import process_logits
from spectheory.lm import load_trace
from spectheory.solvers.pair_tiers import pair_tier_plan

WOR = "without_replacement"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--step", type=int, default=16)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--drafts", nargs="*", default=None)
    args = ap.parse_args(argv)
    tr = load_trace(args.trace)
    rows = np.arange(0, tr.num_positions, args.step)
    print(f"trace {args.trace}: {rows.size} positions, V = {tr.vocab_size}, n = 2 without "
          f"replacement, {args.trials} trials")
    for draft in args.drafts or tr.drafts:
        for T in (0.7, 1.0):
            p = process_logits(tr.target_logits[rows].astype(np.float64), T)
            q = process_logits(tr.draft_logits(draft)[rows].astype(np.float64), T)
            keep = np.count_nonzero(q, axis=1) >= 2
            p, q = p[keep], q[keep]
            plans, ratios = [], []
            for i in range(p.shape[0]):
                t0 = time.perf_counter()
                np.argsort(p[i] / np.maximum(q[i], 1e-300))
                t1 = time.perf_counter()
                plans.append(pair_tier_plan(p[i], q[i]))
                t2 = time.perf_counter()
                ratios.append((t2 - t1) / (t1 - t0))
            reached = sum(pl.reached for pl in plans)
            gap = float(np.mean([pl.bound - pl.alpha_value for pl in plans]))
            rng = np.random.default_rng(7)
            du = rng.random((p.shape[0], args.trials, 2))
            mc = {v: simulate(v, p, q, 2, WOR, trials=args.trials, draft_uniforms=du,
                              rng=rng).mean_acceptance
                  for v in ("rrs_wor", "embedded_iid", "pair_tiers")}
            iid, wor = float(np.mean(bound(p, q, 2, "iid"))), float(np.mean(bound(p, q, 2, WOR)))
            print(f"{draft:>11} T={T:<3} rows {p.shape[0]:>3}  reached {reached:>3}  "
                  f"gap {gap:.1e}  alpha*_iid {iid:.4f}  rrs_wor {mc['rrs_wor']:.4f}  "
                  f"embedded_iid {mc['embedded_iid']:.4f}  pair_tiers {mc['pair_tiers']:.4f}  "
                  f"alpha*_wor {wor:.4f}  plan {np.median(ratios):.0f}x argsort "
                  f"(largest {np.max(ratios):.0f}x)")


if __name__ == "__main__":
    main()
