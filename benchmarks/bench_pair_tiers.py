"""``pair_tiers`` and ``pair_scores`` on a recorded trace: how often each reaches the bound,
and what it costs.

For every draft of the trace, T in {0.7, 1}, n = 2 drafts without replacement, at
every ``--step``-th position, it prints

* for each of the two plans, how many rows it reaches :math:`\\alpha^*_{\\rm wor}` on
  (``reached``: the plan's exact selection acceptance equals the bound to 1e-12), and
  the mean gap bound minus selection acceptance (0 where reached);
* the Monte Carlo acceptance of ``rrs_wor``, ``embedded_iid``, ``pair_tiers`` and
  ``pair_scores`` on the same drafts (shared draft uniforms), against the exact bounds;
* each plan's cost per row (median and largest), as a ratio to one ``np.argsort``
  of the row, interleaved in the same run;
* the pair-score plans of all the rows as one batch (``score_plans``: the rows on
  numba's threads when a core is idle), per row, as a ratio to one ``np.argsort``
  of each row timed just before, beside the same ratio of totals for the plans
  computed one at a time above.

Run: ``python benchmarks/bench_pair_tiers.py TRACE.safetensors [--step 16] [--trials 200]``.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from spectheory import bound, simulate
from spectheory._threads import load_average
from spectheory.distributions import process_logits
from spectheory.lm import load_trace
from spectheory.solvers.pair_scores import pair_score_plan
from spectheory.solvers.pair_tiers import pair_tier_plan
from spectheory.verifiers.pair_scores import clear_score_plan_cache, score_plans

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
            plans = {"pair_tiers": [], "pair_scores": []}
            ratios = {name: [] for name in plans}
            totals = {name: np.zeros(2) for name in plans}  # plan, argsort seconds
            for i in range(p.shape[0]):
                for name, plan in (("pair_tiers", pair_tier_plan),
                                   ("pair_scores", pair_score_plan)):
                    t0 = time.perf_counter()
                    np.argsort(p[i] / np.maximum(q[i], 1e-300))
                    t1 = time.perf_counter()
                    plans[name].append(plan(p[i], q[i]))
                    t2 = time.perf_counter()
                    ratios[name].append((t2 - t1) / (t1 - t0))
                    totals[name] += np.array([t2 - t1, t1 - t0])
            t0 = time.perf_counter()
            for i in range(p.shape[0]):
                np.argsort(p[i] / np.maximum(q[i], 1e-300))
            t1 = time.perf_counter()
            clear_score_plan_cache()
            score_plans(p, q)
            batch = (time.perf_counter() - t1) / (t1 - t0)
            rng = np.random.default_rng(7)
            du = rng.random((p.shape[0], args.trials, 2))
            mc = {v: simulate(v, p, q, 2, WOR, trials=args.trials, draft_uniforms=du,
                              rng=rng).mean_acceptance
                  for v in ("rrs_wor", "embedded_iid", "pair_tiers", "pair_scores")}
            iid, wor = float(np.mean(bound(p, q, 2, "iid"))), float(np.mean(bound(p, q, 2, WOR)))
            print(f"{draft:>11} T={T:<3} rows {p.shape[0]:>3}  alpha*_iid {iid:.4f}  "
                  f"alpha*_wor {wor:.4f}  rrs_wor {mc['rrs_wor']:.4f}  "
                  f"embedded_iid {mc['embedded_iid']:.4f}", flush=True)
            for name, pl in plans.items():
                reached = sum(x.reached for x in pl)
                gap = float(np.mean([x.bound - x.alpha_value for x in pl]))
                print(f"{'':>18} {name:<12} reached {reached:>3}/{len(pl)}  gap {gap:.1e}  "
                      f"acceptance {mc[name]:.4f}  plan {np.median(ratios[name]):.0f}x argsort "
                      f"(largest {np.max(ratios[name]):.0f}x)", flush=True)
            print(f"{'':>18} pair_scores as one batch of {p.shape[0]} rows "
                  f"({numba.get_num_threads()} threads, load {load_average():.1f}): "
                  f"{batch:.1f}x argsort per row (one at a time: "
                  f"{totals['pair_scores'][0] / totals['pair_scores'][1]:.1f}x)", flush=True)


if __name__ == "__main__":
    main()
