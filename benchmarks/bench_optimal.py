"""Benchmark of the ``optimal`` verifier (i.i.d.) per position, against np.argsort and the LP.

For V = 49,152 and 151,936 and n in {2, 4, 8} it prints, per position (one
row, one trial, as in decoding), the time of

* ``token``: :func:`spectheory.sim._optimal_kernel.optimal_token` (sort,
  scans, one concave-majorant pass; the rejection branch builds the residual),
* ``plan``: the full mixture plan with the merge sweep (what the coins
  reference and the many-trial kernel use; paid once per row),

and their ratios to one ``np.argsort`` of the same row, measured interleaved
in the same run (best of ``repeats``).  Then the per-token overhead of the
transport-LP verifier ``optimal_lp`` where it can run at all (tiny V).

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
from spectheory.verifiers.coupling import _plan_cached, optimal_lp


def row(V, seed):
    rng = np.random.default_rng(seed)
    z = 3.0 * rng.standard_normal(V)
    return stt.softmax(z), stt.softmax(z + rng.standard_normal(V))


def timed(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def bench(repeats, vocabs, ns):
    print(f"{'V':>8} {'n':>2} {'argsort ms':>10} {'token ms':>9} {'token/sort':>10} "
          f"{'plan ms':>8} {'plan/sort':>9}")  # fmt: skip
    rng = np.random.default_rng(0)
    for V in vocabs:
        p, q = row(V, V)
        for n in ns:
            drafts = rng.choice(V, size=n, p=q)
            optimal_token(p, q, drafts, rng.random(3))  # compile
            plan_row(p, q, n)
            ts, tt, tp = [], [], []
            for _ in range(repeats):  # interleaved, so load changes hit all three alike
                ts.append(timed(np.argsort, p))
                tt.append(timed(optimal_token, p, q, drafts, rng.random(3)))
                tp.append(timed(plan_row, p, q, n))
            s, t, pl = min(ts), min(tt), min(tp)
            print(f"{V:>8} {n:>2} {s * 1e3:>10.2f} {t * 1e3:>9.2f} {t / s:>10.2f} "
                  f"{pl * 1e3:>8.1f} {pl / s:>9.1f}", flush=True)  # fmt: skip


def bench_lp(repeats):
    print("\noptimal_lp (transport LP over draft sets) vs optimal, i.i.d., per position:")
    for V, n in ((6, 2), (8, 3), (10, 3)):
        p, q = row(V, 7 * V + n)
        drafts = (0,) * n
        t_lp, t_opt = [], []
        for r in range(repeats):
            pp = p
            _plan_cached.cache_clear()  # a fresh LP each time, as at a new position
            t0 = time.perf_counter()
            optimal_lp(pp, q, drafts, RandomCoins(r), sampling="iid")
            t_lp.append(time.perf_counter() - t0)
            t_opt.append(timed(optimal_token, pp, q, np.array(drafts), np.full(3, 0.5)))
        lp_ms, opt_ms = min(t_lp) * 1e3, min(t_opt) * 1e3
        print(f"  V={V:>3} n={n}: LP {lp_ms:8.2f} ms   optimal {opt_ms:6.3f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    repeats = 3 if args.quick else 9
    bench(repeats, (49_152, 151_936), (2, 4, 8))
    bench_lp(repeats)


if __name__ == "__main__":
    main()
