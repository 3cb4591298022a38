"""Benchmark of the ``optimal`` verifier (i.i.d.) per position, against np.argsort and the LP.

For V = 49,152 and 151,936 and n in {2, 4, 8} it prints, per position (one
row, one trial, as in decoding), the time of

* ``token``: :func:`spectheory.sim._optimal_kernel.optimal_token` (sort,
  scans, one concave-majorant pass; the rejection branch builds the residual),
* ``plan``: the full mixture plan with the merge sweep (what the coins
  reference and the many-trial kernel use; paid once per row),
* ``torch``: the batched torch form (:mod:`spectheory.torch._optimal`) on
  this one row, CPU, float64 (tables, secant bridge search, coins),

and their ratios to one ``np.argsort`` of the same row, measured interleaved
in the same run (best of ``repeats``), and the ratio of the one-position path
to the published figure of Thomas & Pal (arXiv:2511.15898, abstract: "under
100 ms of overhead per generated token", with top-k truncated drafts; here
the full vocabulary, no truncation).  Then the per-token overhead of the
transport-LP verifier ``optimal_lp`` where it can run at all (tiny V), beside
``optimal`` on the same rows.  Last, two drafts without replacement: ``optimal``
(the pair-score rule) per position, its plan uncached as at a new position,
against argsort, the published figure and the LP; with four and eight drafts ``optimal`` runs
the priority-coin rule (its greedy passes over the log-time grid, uncached likewise).

Run: ``python benchmarks/bench_optimal.py`` (``--quick``: fewer repeats).
Rows are softmax(3 z) targets with draft logits perturbed by N(0, 1).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import spectheory as stt
from spectheory.coins import RandomCoins
from spectheory.sim._optimal_kernel import optimal_token, plan_row
from spectheory.verifiers.coupling import clear_transport_cache, optimal_lp

#: Thomas & Pal (arXiv:2511.15898), abstract: under 100 ms of overhead per generated token.
PUBLISHED_MS = 100.0
WOR_ = "without_replacement"


def row(V, seed):
    rng = np.random.default_rng(seed)
    z = 3.0 * rng.standard_normal(V)
    return stt.softmax(z), stt.softmax(z + rng.standard_normal(V))


def timed(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _torch_call(tp, tq, td, tu):
    from spectheory.torch.verifiers import optimal_torch

    return optimal_torch(tp, tq, td, tu)


def bench(repeats, vocabs, ns):
    import torch

    print(f"{'V':>8} {'n':>2} {'argsort ms':>10} {'token ms':>9} {'token/sort':>10} "
          f"{'plan ms':>8} {'plan/sort':>9} {'torch ms':>9} {'torch/sort':>10} "
          f"{'token/published':>15}")  # fmt: skip
    rng = np.random.default_rng(0)
    for V in vocabs:
        p, q = row(V, V)
        tp, tq = torch.from_numpy(p)[None], torch.from_numpy(q)[None]
        for n in ns:
            drafts = rng.choice(V, size=n, p=q)
            td = torch.from_numpy(drafts)[None]
            optimal_token(p, q, drafts, rng.random(3))  # compile
            plan_row(p, q, n)
            ts, tt, tp_, tg = [], [], [], []
            for _ in range(repeats):  # interleaved, so load changes hit all four alike
                ts.append(timed(np.argsort, p))
                tt.append(timed(optimal_token, p, q, drafts, rng.random(3)))
                tp_.append(timed(plan_row, p, q, n))
                tg.append(timed(_torch_call, tp, tq, td, torch.from_numpy(rng.random((1, 3)))))
            s, t, pl, g = min(ts), min(tt), min(tp_), min(tg)
            print(f"{V:>8} {n:>2} {s * 1e3:>10.2f} {t * 1e3:>9.2f} {t / s:>10.2f} "
                  f"{pl * 1e3:>8.1f} {pl / s:>9.1f} {g * 1e3:>9.1f} {g / s:>10.1f} "
                  f"{t * 1e3 / PUBLISHED_MS:>15.4f}", flush=True)  # fmt: skip


def bench_lp(repeats):
    print("\noptimal_lp (transport LP over draft sets) vs optimal, i.i.d., per position:")
    print(f"  {'V':>3} {'n':>2} {'argsort ms':>10} {'LP ms':>9} {'LP/sort':>9} "
          f"{'optimal ms':>10} {'optimal/sort':>12} {'LP/optimal':>10}")  # fmt: skip
    for V, n in ((6, 2), (8, 3), (10, 3)):
        p, q = row(V, 7 * V + n)
        drafts = (0,) * n
        t_lp, t_opt, t_s = [], [], []
        for r in range(repeats):
            t_s.append(timed(np.argsort, p))
            clear_transport_cache()  # a fresh LP each time, as at a new position
            t0 = time.perf_counter()
            optimal_lp(p, q, drafts, RandomCoins(r), sampling="iid")
            t_lp.append(time.perf_counter() - t0)
            t_opt.append(timed(optimal_token, p, q, np.array(drafts), np.full(3, 0.5)))
        s, lp, opt = min(t_s), min(t_lp), min(t_opt)
        print(f"  {V:>3} {n:>2} {s * 1e3:>10.4f} {lp * 1e3:>9.2f} {lp / s:>9.0f} "
              f"{opt * 1e3:>10.3f} {opt / s:>12.1f} {lp / opt:>10.0f}", flush=True)  # fmt: skip


def _lp_wor(p, q, drafts, seed):
    return optimal_lp(p, q, drafts, RandomCoins(seed), sampling=WOR_)


def _verify_wor(p, q, drafts, seed):
    return stt.verify("optimal", p, q, drafts, seed, sampling=WOR_)


def bench_wor(repeats, vocabs):
    """Drafts without replacement: ``optimal`` runs the pair-score rule for two drafts and the
    priority-coin rule for more; the row's plan (uncached here, as at a new position) is the
    per-position cost."""
    from spectheory.verifiers.pair_scores import clear_score_plan_cache, score_plan
    from spectheory.verifiers.priority_coins import clear_coin_plan_cache, coin_plan

    def clear():
        clear_score_plan_cache()
        clear_coin_plan_cache()

    print("\noptimal, drafts without replacement (plan + one trial), per position:")
    print(f"  {'V':>8} {'n':>2} {'argsort ms':>10} {'optimal ms':>10} {'optimal/sort':>12} "
          f"{'reached':>7} {'optimal/published':>17}")  # fmt: skip
    rng = np.random.default_rng(1)
    for V in vocabs:
        p, q = row(V, V)
        for n in (2, 4, 8):
            drafts = tuple(int(x) for x in rng.choice(V, size=n, replace=False, p=q))
            small = tuple(range(n))
            _verify_wor(p[:64] / p[:64].sum(), q[:64] / q[:64].sum(), small, 0)  # compile
            ts, to = [], []
            for r in range(repeats):
                ts.append(timed(np.argsort, p))
                clear()
                to.append(timed(_verify_wor, p, q, drafts, r))
            reached = (score_plan(p, q) if n == 2 else coin_plan(p, q, n)).reached
            s, o = min(ts), min(to)
            print(f"  {V:>8} {n:>2} {s * 1e3:>10.2f} {o * 1e3:>10.1f} {o / s:>12.1f} "
                  f"{reached!s:>7} {o * 1e3 / PUBLISHED_MS:>17.3f}", flush=True)  # fmt: skip
    print("  optimal_lp, drafts without replacement (transport LP per position):")
    for n, vs in ((2, (6, 10, 20)), (3, (6, 10, 14))):
        for V in vs:
            p, q = row(V, 11 * V)
            t_lp, t_opt = [], []
            for r in range(repeats):
                clear_transport_cache()
                t_lp.append(timed(_lp_wor, p, q, tuple(range(n)), r))
                clear()
                t_opt.append(timed(_verify_wor, p, q, tuple(range(n)), r))
            print(f"  {V:>8} n={n} LP {min(t_lp) * 1e3:.2f} ms, optimal {min(t_opt) * 1e3:.2f} "
                  f"ms, LP/optimal {min(t_lp) / min(t_opt):.1f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    repeats = 3 if args.quick else 9
    import os

    import torch

    # One intra-op thread: on a shared 2-core machine OpenMP's spinning threads
    # otherwise dominate a single row's torch ops.
    torch.set_num_threads(1)
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"best of {repeats}", flush=True)
    bench(repeats, (49_152, 151_936), (2, 4, 8))
    bench_lp(repeats)
    bench_wor(repeats, (49_152, 151_936))


if __name__ == "__main__":
    main()
