"""The ``spectheory draft`` command: train, list and evaluate early-exit adapters.

``spectheory draft train --layer L``
    Builds the offline corpus (:mod:`spectheory.lm.corpus`), runs one
    teacher pass, trains the adapter (:func:`spectheory.lm.adapters.train_adapter`),
    evaluates it on the held-out prompts and saves it as the draft
    ``"adapter:L"`` in ``$SPECTHEORY_CACHE_DIR/adapters/``.
``spectheory draft list``
    The cached adapters with their training data and held-out metrics.
``spectheory draft evaluate NAME``
    Held-out acceptance at the given temperatures and the measured cost
    ratio on this CPU; ``NAME`` is ``adapter:L``, a cached adapter's name, or
    ``quant:TYPE``.

Exit codes: 0 success, 1 refused (an adapter exists; use ``--force``),
2 error (bad input, missing adapter, corrupted file).
"""

from __future__ import annotations

import json
import sys
import time

__all__ = ["add_draft_parser"]


def _say(args, msg):
    if not getattr(args, "quiet", False):
        print(msg, file=sys.stderr, flush=True)


def _cmd_train(args) -> int:
    from .lm import adapters as A
    from .lm._loader import load_model
    from .lm.corpus import CorpusSettings, build_corpus

    settings = A.TrainSettings(
        arch=args.arch,
        depth=args.depth,
        vocab=args.vocab or None,
        tokens=args.tokens,
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        seed=args.seed,
    )
    corpus_settings = CorpusSettings(doc_sequences=args.doc_sequences, seed=args.seed)
    loaded = None
    name = args.name or None
    if name is not None:
        path = A.adapter_path(name)
    else:
        from .lm._loader import SMOLLM2

        path = A.adapter_path(int(args.layer), args.model or SMOLLM2)
    if path.exists() and not args.force:
        print(
            f"spectheory draft train: {str(path)!r} exists; pass --force to retrain it",
            file=sys.stderr,
        )
        return 1
    t0 = time.perf_counter()
    _say(args, f"loading {args.model or 'smollm2-135m-instruct'} ...")
    loaded = load_model(args.model) if args.model else load_model()
    A._check_layer(int(args.layer), loaded.num_layers, args.depth)
    _say(args, "building the corpus (the target samples its training continuations once) ...")
    corpus = build_corpus(loaded, corpus_settings, progress=not args.quiet)
    _say(
        args,
        f"corpus: {len(corpus.sequences)} sequences, {corpus.num_loss_tokens} training positions, "
        f"sha256 {corpus.sha256[:16]}",
    )
    states = A.teacher_states(loaded, corpus, [int(args.layer)], progress=not args.quiet)
    _say(args, f"teacher pass done ({time.perf_counter() - t0:.0f} s); training ...")
    adapter = A.train_adapter(loaded, states, int(args.layer), settings, progress=not args.quiet)
    meta = adapter.metadata
    _say(
        args,
        f"validation KL {meta['validation_kl_initial']:.4f} -> {meta['validation_kl']:.4f} "
        f"({meta['train_seconds']:.0f} s)",
    )
    extra = {
        "corpus_settings": corpus_settings.__dict__,
        "corpus_positions": corpus.num_loss_tokens,
    }
    if not args.no_eval:
        _say(args, "evaluating on the 38 held-out prompts ...")
        ev = A.evaluate_adapter(loaded, adapter, args.temperatures)
        extra["held_out"] = _evaluation_dict(ev)
    path = A.save_adapter(adapter, path, extra=extra)
    print(
        json.dumps(
            {"path": str(path), **{k: adapter.metadata.get(k) for k in _SUMMARY_KEYS}}, indent=1
        )
    )
    return 0


_SUMMARY_KEYS = (
    "layer",
    "arch",
    "depth",
    "vocab_size",
    "train_tokens",
    "validation_kl_initial",
    "validation_kl",
    "train_seconds",
    "held_out",
)


def _evaluation_dict(ev):
    cis = ev.acceptance_ci() if ev.per_prompt else [(float("nan"),) * 2] * len(ev.temperatures)
    return {
        f"T={T:g}": {
            "acceptance": round(a, 4),
            "ci95_prompts": [round(lo, 4), round(hi, 4)],
            "raw_exit": round(r, 4),
            "coverage": round(c, 4),
            "positions": n,
        }
        for T, a, r, c, n, (lo, hi) in zip(
            ev.temperatures, ev.acceptance, ev.raw_exit, ev.coverage, ev.positions, cis
        )
    }


def _cmd_list(args) -> int:
    from .lm import adapters as A
    from .lm.trace import cache_dir

    rows = A.list_adapters()
    if not rows:
        print(
            f"no adapters in {cache_dir() / 'adapters'}; train one with: "
            "spectheory draft train --layer 12"
        )
        return 0
    for name, meta in rows:
        if "error" in meta:
            print(f"{name}: UNREADABLE ({meta['error']})")
            continue
        held = meta.get("held_out") or {}
        acc = ", ".join(f"{k}: {v['acceptance']:.3f}" for k, v in held.items()) or "not evaluated"
        print(
            f"{name}: layer {meta.get('layer')}, {meta.get('arch')} x{meta.get('depth', 1)}, vocab "
            f"{meta.get('vocab_size') or 'full'}, {meta.get('train_tokens')} training positions, "
            f"validation KL {meta.get('validation_kl', float('nan')):.4f}, held-out {acc}"
        )
    return 0


def _cmd_evaluate(args) -> int:
    from .lm import adapters as A
    from .lm._loader import load_model
    from .lm.acceptance import measure_cost_ratio
    from .lm.drafts import parse_draft

    _say(args, "loading the target ...")
    loaded = load_model(args.model) if args.model else load_model()
    name = args.name
    out = {"draft": name}
    if name.startswith("quant:"):
        from .lm.quantised import bits_per_weight, evaluate_quantised, memory_ratio

        qtype = parse_draft(name)[1]
        ev = evaluate_quantised(loaded, qtype, args.temperatures)
        out["held_out"] = _evaluation_dict(ev)
        out["bits_per_weight"] = bits_per_weight(qtype)
        out["memory_ratio_vs_bf16"] = round(memory_ratio(loaded, qtype), 4)
        cost_of = name
    else:
        if name.startswith("adapter:"):
            adapter = A.resolve_adapter(loaded, int(parse_draft(name, loaded.num_layers)[1]))
        else:
            adapter = A.load_adapter(loaded, A.adapter_path(name))
        _say(args, f"evaluating {adapter.path} on the 38 held-out prompts ...")
        ev = A.evaluate_adapter(loaded, adapter, args.temperatures)
        out["held_out"] = _evaluation_dict(ev)
        cost_of = adapter
    if not args.no_cost:
        _say(args, "measuring the cost ratio on this CPU ...")
        cr = measure_cost_ratio(loaded, cost_of, repeats=args.repeats)
        out["cost_ratio"] = {
            "c": round(cr.c, 4),
            "t_draft_ms": round(1e3 * cr.t_draft, 3),
            "t_target_ms": round(1e3 * cr.t_target, 3),
            "threads": cr.threads,
        }
    print(json.dumps(out, indent=1))
    return 0


def add_draft_parser(subparsers):
    """Register ``spectheory draft`` (train / list / evaluate) on an argparse ``subparsers``.

    Returns
    -------
    argparse.ArgumentParser
        The ``draft`` parser.
    """
    d = subparsers.add_parser(
        "draft",
        help="train, list and evaluate early-exit adapter drafts",
        description=(
            "Trained early-exit drafts ('adapter:L'): a small adapter on layer L's hidden state, "
            "trained by self-distillation on an offline corpus, stored in the cache."
        ),
    )
    sub = d.add_subparsers(dest="draft_command", required=True)
    t = sub.add_parser("train", help="train the adapter of one exit layer")
    t.add_argument("--layer", type=int, required=True, help="exit layer L")
    t.add_argument("--tokens", type=int, default=None, help="training positions at most")
    t.add_argument("--steps", type=int, default=800, help="optimiser steps")
    t.add_argument("--batch-size", type=int, default=8, help="sequences per step")
    t.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    t.add_argument("--arch", choices=("layer", "linear"), default="layer")
    t.add_argument("--depth", type=int, default=1, help="decoder layers of a 'layer' adapter")
    t.add_argument("--vocab", type=int, default=8192, help="draft vocabulary (0: full)")
    t.add_argument("--doc-sequences", type=int, default=120, help="documentation sequences")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--name", default="", help="save under this name instead of 'adapter:L'")
    t.add_argument("--model", default="", help="a local model folder (default SmolLM2)")
    t.add_argument("--temperatures", type=float, nargs="+", default=[0.7, 1.0])
    t.add_argument("--no-eval", action="store_true", help="skip the held-out evaluation")
    t.add_argument("--force", action="store_true", help="overwrite an existing adapter")
    t.add_argument("--quiet", action="store_true", help="no progress output")
    t.set_defaults(func=_cmd_train)
    ls = sub.add_parser("list", help="list the cached adapters")
    ls.set_defaults(func=_cmd_list)
    e = sub.add_parser("evaluate", help="held-out acceptance and cost ratio of a draft")
    e.add_argument("name", help="'adapter:L', a cached adapter name, or 'quant:TYPE'")
    e.add_argument("--temperatures", type=float, nargs="+", default=[0.7, 1.0])
    e.add_argument("--repeats", type=int, default=30, help="timed steps of the cost ratio")
    e.add_argument("--no-cost", action="store_true", help="skip the cost-ratio measurement")
    e.add_argument("--model", default="", help="a local model folder (default SmolLM2)")
    e.add_argument("--quiet", action="store_true", help="no progress output")
    e.set_defaults(func=_cmd_evaluate)
    return d
