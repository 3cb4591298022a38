"""``embedded_iid`` on a recorded trace: acceptance against the bounds and RRS, cost per position.

For every draft of the trace (``--drafts``), T in {0.7, 1}, n in {2, 4, 8},
drafts without replacement, it prints the mean over ``--rows`` positions of

* the bounds :math:`\\alpha^*_{\\rm iid}(n)` and :math:`\\alpha^*_{\\rm wor}(n)` (exact, ``bound``),
* the Monte Carlo acceptance of ``rrs_wor`` (numba kernel) and of ``embedded_iid``
  (coins reference), with its standard error,
* the share of the gap :math:`\\alpha^*_{\\rm wor} - {\\rm RRS}` that ``embedded_iid`` closes;

then ``check_lossless`` at the full vocabulary on the report's informative rows
(false-alarm rate 1e-6), and the cost of one ``embedded_iid`` call per position (one
trial, plans not cached, as in decoding) as a ratio to one ``np.argsort`` of the row,
measured interleaved in the same run.

Run: ``python benchmarks/bench_embedded.py TRACE.safetensors`` (a trace from
``spectheory trace record``; ``--quick``: fewer rows and trials; ``--cost``: only the
cost, per trial of ``simulate`` with its plans cached as in a replay, and per call).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from spectheory import bound, check_lossless, simulate
from spectheory.coins import RandomCoins
from spectheory.distributions import process_logits
from spectheory.lm import load_trace
from spectheory.report._core import informative_rows
from spectheory.verifiers.embedded import embedded_iid
from spectheory.verifiers.optimal import clear_plan_cache


def _acceptance(tr, draft, rows, trials, ns, temperatures):
    for T in temperatures:
        p = process_logits(tr.target_logits[rows].astype(np.float64), T)
        q = process_logits(tr.draft_logits(draft)[rows].astype(np.float64), T)
        for n in ns:
            lo = float(np.mean(bound(p, q, n, "iid")))
            hi = float(np.mean(bound(p, q, n, "without_replacement")))
            rrs = simulate("rrs_wor", p, q, n, "without_replacement", trials=20 * trials, rng=1)
            emb = simulate(embedded_iid, p, q, n, "without_replacement", trials=trials, rng=2)
            a, r = emb.mean_acceptance, rrs.mean_acceptance
            # Monte Carlo standard error of the mean over positions (positions fixed)
            se = float(np.sqrt(np.sum(emb.acceptance * (1 - emb.acceptance)) / trials) / len(rows))
            closed = (a - r) / (hi - r) if hi > r else float("nan")
            print(f"{draft:>11} T={T:<3} n={n}  alpha*_iid {lo:.4f}  alpha*_wor {hi:.4f}  "
                  f"rrs_wor {r:.4f}  embedded_iid {a:.4f} (se {se:.4f})  "
                  f"gap closed {closed:+.2f}", flush=True)  # fmt: skip


def _cost(tr, draft, rows, ns, repeats):
    p = process_logits(tr.target_logits[rows].astype(np.float64), 1.0)
    q = process_logits(tr.draft_logits(draft)[rows].astype(np.float64), 1.0)
    for n in ns:
        ratios = []
        for b in range(len(rows)):
            best_sort, best_call = np.inf, np.inf
            for rep in range(repeats):
                # Gumbel top-n: n draws without replacement, in draw order
                g = np.log(q[b]) + np.random.default_rng(rep).gumbel(size=q.shape[1])
                d = np.argpartition(-g, n)[:n]
                d = d[np.argsort(-g[d])]
                t0 = time.perf_counter()
                np.argsort(p[b] / q[b])
                t1 = time.perf_counter()
                clear_plan_cache()
                embedded_iid(p[b], q[b], tuple(d), RandomCoins(rep))
                t2 = time.perf_counter()
                best_sort, best_call = min(best_sort, t1 - t0), min(best_call, t2 - t1)
            ratios.append(best_call / best_sort)
        print(f"cost n={n}: embedded_iid / argsort per position, median over {len(rows)} "
              f"positions {np.median(ratios):.1f}x (range {min(ratios):.1f}-{max(ratios):.1f}), "
              f"V = {p.shape[1]:,}", flush=True)  # fmt: skip


def _trial_cost(tr, draft, rows, ns, trials):
    """Milliseconds per trial of ``simulate`` (coins reference, plans cached per row and
    stage as in a replay), at T = 1."""
    p = process_logits(tr.target_logits[rows].astype(np.float64), 1.0)
    q = process_logits(tr.draft_logits(draft)[rows].astype(np.float64), 1.0)
    for n in ns:
        simulate(embedded_iid, p[:1], q[:1], n, "without_replacement", trials=2, seed=1)
        t0 = time.perf_counter()
        r = simulate(embedded_iid, p, q, n, "without_replacement", trials=trials, seed=0)
        ms = (time.perf_counter() - t0) / (len(rows) * trials) * 1e3
        print(f"simulate {draft} n={n}: {ms:.2f} ms a trial ({len(rows)} positions x {trials} "
              f"trials, acceptance {r.mean_acceptance:.4f}), V = {p.shape[1]:,}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--drafts", nargs="*", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cost", action="store_true",
                    help="only the cost per trial (simulate) and per position (one call)")
    args = ap.parse_args(argv)
    tr = load_trace(args.trace)
    n_rows, trials = (24, 200) if args.quick else (64, 500)
    rows = np.linspace(0, tr.num_positions - 1, n_rows).astype(int)
    drafts = args.drafts or [d for d in tr.drafts if d.startswith(("exit", "adapter"))]
    if args.cost:
        for draft in drafts:
            _trial_cost(tr, draft, rows[:8], (2, 4, 8), 100)
        _cost(tr, drafts[-1], rows[:8], (2, 4, 8), 3)
        return
    for draft in drafts:
        _acceptance(tr, draft, rows, trials, (2, 4, 8), (0.7, 1.0))
    draft = drafts[-1]
    p = process_logits(tr.target_logits.astype(np.float64), 1.0)
    q = process_logits(tr.draft_logits(draft), 1.0)
    check_rows = informative_rows(p, q, 4, min_support=4)
    t0 = time.perf_counter()
    rep = check_lossless(embedded_iid, tr, draft, n=4, sampling="without_replacement",
                         rows=check_rows, trials=2000 if args.quick else 5000, seed=0)  # fmt: skip
    print(f"check_lossless {draft} n=4 at V = {p.shape[1]:,}, {check_rows.size} positions: "
          f"{'LOSSY' if rep.lossy else 'consistent with lossless'} (p = {rep.p_value:.3g}, "
          f"acceptance {rep.acceptance:.4f}, bound {rep.bound:.4f}, detectable TV "
          f"{rep.detectable_tv:.4f}; {time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
    _cost(tr, draft, rows[:8], (2, 4, 8), 3 if args.quick else 5)


if __name__ == "__main__":
    main()
