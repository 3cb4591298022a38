"""Benchmark of chain and tree replay: numba kernels vs the reference verifiers.

For each kernel verifier (token-level and block verification on chains of
``--gamma`` tokens; RRS and RRS without replacement per node on trees), packs
``--instances`` drafted instances over a vocabulary of ``--vocab`` tokens
(random peaked rows, the size of a real model's is 49,152) and replays
``--trials`` coin draws per instance, first with the kernels
(:func:`spectheory.sim.tree_replay.replay_blocks`, after one warm-up call for
compilation), then with the reference verifiers fed the same uniforms through
ReplayCoins (:func:`reference_blocks`, on ``--ref-instances`` instances).  It
prints trials per second of each, their ratio, and checks that the blocks agree.

Run: ``python benchmarks/bench_trees.py [--vocab 49152] [--trials 200]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from spectheory.coins import RandomCoins
from spectheory.sim.tree_replay import (
    pack_trees,
    reference_blocks,
    replay_blocks,
    replay_uniforms,
)
from spectheory.trees import draft_chain, draft_fixed, draft_rsd_c
from spectheory.trees.models import as_model


def model(vocab, seed):
    rng = np.random.default_rng(seed)
    cache = {}

    def fn(prefix):
        if prefix not in cache:
            w = rng.gamma(0.2, size=vocab)
            cache[prefix] = w / w.sum()
        return cache[prefix]

    return as_model(fn, "model")


def batch(drafter, n, vocab, seed):
    target, draft = model(vocab, seed), model(vocab, seed + 1)
    coins = RandomCoins(seed)
    trees = [drafter(draft, coins) for _ in range(n)]
    p = [np.array([target(t.path(j)) for j in range(t.size)]) for t in trees]
    q = [np.array([draft(t.path(j)) for j in range(t.size)]) for t in trees]
    return pack_trees(trees, p, q)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--instances", type=int, default=32)
    ap.add_argument("--ref-instances", type=int, default=2)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--gamma", type=int, default=5)
    args = ap.parse_args()
    cases = {
        "token": lambda d, c: draft_chain(d, args.gamma, c),
        "block": lambda d, c: draft_chain(d, args.gamma, c),
        "rrs": lambda d, c: draft_fixed(d, (-1, 0, 0, 0, 1, 1, 2, 4), c, fill="iid"),
        "rrs_wor": lambda d, c: draft_rsd_c(d, (2, 2, 1), c),
    }
    print(f"V = {args.vocab}, {args.trials} trials per instance")
    print(f"{'verifier':>8} {'kernel trials/s':>16} {'reference trials/s':>19} {'ratio':>8}")
    for name, drafter in cases.items():
        b = batch(drafter, args.instances, args.vocab, seed=7)
        rng = np.random.default_rng(0)
        u = rng.random((args.instances, args.trials, replay_uniforms(name, b)))
        replay_blocks(name, b, u[:, :2])  # compile / load the cache
        t0 = time.perf_counter()
        fast, fast_len = replay_blocks(name, b, u)
        t_fast = time.perf_counter() - t0
        small = pack_trees(b.trees[: args.ref_instances],
                           [b.target[b.root[i]: b.root[i] + b.trees[i].size]
                            for i in range(args.ref_instances)],
                           [b.draft[b.root[i]: b.root[i] + b.trees[i].size]
                            for i in range(args.ref_instances)])  # fmt: skip
        t0 = time.perf_counter()
        ref, _ = reference_blocks(name, small, u[: args.ref_instances])
        t_ref = time.perf_counter() - t0
        agree = np.array_equal(ref, fast[: args.ref_instances])
        fast_rate = args.instances * args.trials / t_fast
        ref_rate = args.ref_instances * args.trials / t_ref
        print(f"{name:>8} {fast_rate:16.0f} {ref_rate:19.0f} {fast_rate / ref_rate:7.1f}x"
              f"   blocks agree: {agree}; mean block {fast_len.mean():.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
