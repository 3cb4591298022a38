"""``spectheory draft train|list|evaluate``: early-exit adapter drafts.

``spectheory draft train --layer L [--loss SPEC]``
    Builds the offline corpus (:mod:`spectheory.lm.corpus`), runs one
    teacher pass, trains the adapter (:func:`spectheory.lm.adapters.train_adapter`),
    evaluates it on the held-out prompts and saves it as the draft
    ``"adapter:L"`` in ``$SPECTHEORY_CACHE_DIR/adapters/`` (a loss other than
    ``kl`` saves under its own key, ``<model>-L<L>-<loss>``, unless
    ``--as-draft``).  The training
    options are generated from :class:`spectheory.lm.adapters.TrainSettings`
    and :class:`spectheory.lm.corpus.CorpusSettings`.
``spectheory draft list``
    The cached adapters with their training data and held-out metrics.
``spectheory draft evaluate NAME``
    Held-out acceptance at the given temperatures and the measured cost
    ratio on this CPU; ``NAME`` is ``adapter:L``, a cached adapter's name, or
    ``quant:TYPE``.

Exit codes as every command (:class:`~spectheory.cli.ExitCode`): an existing
adapter without ``--force`` is a usage error (2).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

from ._common import (
    ExitCode,
    dataclass_options,
    log,
    nonnegative_float,
    nonnegative_int,
    positive_int,
    settings_from_args,
    usage_error,
)

HELP = "train, list and evaluate early-exit adapter drafts"

#: Temperatures of the held-out evaluation unless ``--temperatures`` says otherwise.
EVAL_TEMPERATURES = (0.7, 1.0)
#: Timed steps of ``draft evaluate``'s cost ratio unless ``--repeats`` says otherwise.
EVAL_REPEATS = 30


def vocab_size(text: str):
    """The draft vocabulary: an integer >= 1, or 0 or 'None' for the full vocabulary (None)."""
    return None if text == "None" else (nonnegative_int(text) or None)


def optional_positive_int(text: str):
    """An integer >= 1, or 'None' (what the help of --tokens and --prompts offers)."""
    return None if text == "None" else positive_int(text)


def loss_spec(text: str) -> str:
    """A training loss (``kl``, ``tv``, ``alpha:N:LAW`` or a weighted sum), in normal form."""
    from .._errors import InvalidParameterError
    from ..lm.adapters import normal_loss

    try:
        return normal_loss(text)
    except InvalidParameterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _refuse_skipped(args, option, switch, what) -> None:
    """Refuse ``option`` (its dest) given with ``switch``, which skips ``what`` that it sets."""
    if option in vars(args):
        flag = "--" + option.replace("_", "-")
        raise usage_error(f"{flag} cannot be combined with {switch} ({flag} sets {what}, which "
                          f"{switch} skips)")  # fmt: skip


def run_train(args) -> int:
    if args.no_eval:
        _refuse_skipped(args, "temperatures", "--no-eval", "the held-out evaluation")
    if args.name and args.as_draft:  # --name chooses the file; --as-draft was ignored
        raise usage_error("--as-draft cannot be combined with --name (both choose where the "
                          "adapter is saved: 'adapter:L' or the name given)")  # fmt: skip

    from .._errors import InvalidParameterError
    from ..lm import adapters as A
    from ..lm._loader import SMOLLM2, check_device, load_model
    from ..lm.corpus import CorpusSettings, build_corpus

    settings = settings_from_args(A.TrainSettings, args)
    # --seed is TrainSettings.seed (data order, split, initialisation): the corpus keeps its own
    corpus_settings = settings_from_args(CorpusSettings, args, seed=CorpusSettings.seed)
    loaded = None
    name = args.name or None
    if name is not None:
        path = A.adapter_path(name)
    else:
        loss = "kl" if args.as_draft else settings.loss  # kl: the key of 'adapter:L'
        path = A.adapter_path(int(args.layer), args.model or SMOLLM2, loss)
    if path.exists() and not args.force:
        raise usage_error(f"{str(path)!r} exists; pass --force to retrain it")
    try:
        device = check_device(args.device)
    except InvalidParameterError as exc:
        raise usage_error(f"--device: {exc}") from None
    if device.type != "cpu" and not args.no_eval:
        raise usage_error(
            f"--device {args.device}: the held-out evaluation replays the default trace, which is "
            "recorded on the CPU; pass --no-eval and run 'spectheory draft evaluate' afterwards"
        )
    t0 = time.perf_counter()
    log.info(f"loading {args.model or 'smollm2-135m-instruct'} on {args.device} ...")
    loaded = load_model(args.model or SMOLLM2, device=args.device)
    A._check_layer(int(args.layer), loaded.num_layers, settings.depth)
    log.info("building the corpus (the target samples its training continuations once) ...")
    corpus = build_corpus(loaded, corpus_settings, progress=not args.quiet)
    log.info(
        f"corpus: {len(corpus.sequences)} sequences, {corpus.num_loss_tokens} assistant tokens, "
        f"sha256 {corpus.sha256[:16]}",
    )
    states = A.teacher_states(loaded, corpus, [int(args.layer)], progress=not args.quiet)
    # One more position per sequence than assistant tokens: the last one, after the reply.
    log.info(
        f"teacher pass done ({time.perf_counter() - t0:.0f} s): {states.num_positions} "
        "training positions; training ...",
    )
    adapter = A.train_adapter(loaded, states, int(args.layer), settings, progress=not args.quiet)
    meta = adapter.metadata
    log.info(
        f"validation KL {meta['validation_kl_initial']:.4f} -> {meta['validation_kl']:.4f}, "
        f"{meta['loss']} {meta['validation_loss_initial']:.4f} -> {meta['validation_loss']:.4f} "
        f"({meta['train_seconds']:.0f} s)",
    )
    extra = {
        "corpus_settings": dataclasses.asdict(corpus_settings),
        "corpus_positions": corpus.num_loss_tokens,
        "corpus_training_positions": states.num_positions,
    }
    if not args.no_eval:
        log.info("evaluating on the 38 held-out prompts ...")
        ev = _evaluate_adapter(loaded, adapter, _eval_temperatures(args))
        extra["held_out"] = _evaluation_dict(ev)
    path = A.save_adapter(adapter, path, extra=extra)
    print(
        json.dumps(
            {"path": str(path), **{k: adapter.metadata.get(k) for k in _SUMMARY_KEYS}}, indent=1
        )
    )
    return ExitCode.OK


_SUMMARY_KEYS = (
    "layer",
    "arch",
    "depth",
    "vocab_size",
    "train_tokens",
    "validation_kl_initial",
    "validation_kl",
    "loss",
    "validation_loss_initial",
    "validation_loss",
    "train_seconds",
    "held_out",
)


def _rounded(x, digits=4):
    """``round(x, digits)``, or None for NaN: ``json.dumps`` writes NaN, which is not JSON."""
    return None if x != x else round(x, digits)


def _evaluation_dict(ev):
    cis = ev.acceptance_ci() if ev.per_prompt else [(float("nan"),) * 2] * len(ev.temperatures)
    return {
        f"T={T:g}": {
            "acceptance": _rounded(a),
            "ci95_prompts": [_rounded(lo), _rounded(hi)],
            "raw_exit": _rounded(r),  # None for quant:TYPE (no exit to compare with)
            "coverage": _rounded(c),
            "positions": n,
        }
        for T, a, r, c, n, (lo, hi) in zip(
            ev.temperatures, ev.acceptance, ev.raw_exit, ev.coverage, ev.positions, cis
        )
    }


def run_list(args) -> int:
    from ..lm import adapters as A
    from ..lm.trace import cache_dir

    rows = A.list_adapters()
    if not rows:
        print(
            f"no adapters in {cache_dir() / 'adapters'}; train one with: "
            "spectheory draft train --layer 12"
        )
        return ExitCode.OK
    for name, meta in rows:
        if "error" in meta:
            print(f"{name}: UNREADABLE ({meta['error']})")
            continue
        held = meta.get("held_out") or {}
        acc = ", ".join(f"{k}: {v['acceptance']:.3f}" for k, v in held.items()) or "not evaluated"
        print(
            f"{name}: layer {meta.get('layer')}, {meta.get('arch')} x{meta.get('depth', 1)}, vocab "
            f"{meta.get('vocab_size') or 'full'}, loss {meta.get('loss', 'kl')}, "
            f"{meta.get('train_tokens')} training positions, "
            f"validation KL {meta.get('validation_kl', float('nan')):.4f}, held-out {acc}"
        )
    return ExitCode.OK


def run_evaluate(args) -> int:
    if args.no_cost:
        _refuse_skipped(args, "repeats", "--no-cost", "the cost-ratio measurement")

    from ..lm import adapters as A
    from ..lm._loader import load_model
    from ..lm.acceptance import measure_cost_ratio
    from ..lm.drafts import parse_draft

    log.info("loading the target ...")
    loaded = load_model(args.model) if args.model else load_model()
    name = args.name
    out = {"draft": name}
    if name.startswith("quant:"):
        from ..lm.draft_eval import evaluate_quantised
        from ..lm.quantised import bits_per_weight, memory_ratio

        qtype = parse_draft(name)[1]
        ev = evaluate_quantised(loaded, qtype, _eval_temperatures(args))
        out["held_out"] = _evaluation_dict(ev)
        out["bits_per_weight"] = bits_per_weight(qtype)
        out["memory_ratio_vs_bf16"] = round(memory_ratio(loaded, qtype), 4)
        cost_of = name
    else:
        if name.startswith("adapter:"):
            adapter = A.resolve_adapter(loaded, int(parse_draft(name, loaded.num_layers)[1]))
        else:
            adapter = A.load_adapter(loaded, A.adapter_path(name))
        log.info(f"evaluating {adapter.path} on the 38 held-out prompts ...")
        ev = _evaluate_adapter(loaded, adapter, _eval_temperatures(args))
        out["held_out"] = _evaluation_dict(ev)
        cost_of = adapter
    if not args.no_cost:
        log.info("measuring the cost ratio on this CPU ...")
        cr = measure_cost_ratio(loaded, cost_of, repeats=vars(args).get("repeats", EVAL_REPEATS))
        out["cost_ratio"] = {
            "c": round(cr.c, 4),
            "t_draft_ms": round(1e3 * cr.t_draft, 3),
            "t_target_ms": round(1e3 * cr.t_target, 3),
            "threads": cr.threads,
        }
    print(json.dumps(out, indent=1))
    return ExitCode.OK


def add_parser(subparsers):
    """Register ``spectheory draft`` (train / list / evaluate)."""
    d = subparsers.add_parser(
        "draft",
        help=HELP,
        description=(
            "Trained early-exit drafts ('adapter:L'): a small adapter on layer L's hidden state, "
            "trained by self-distillation on an offline corpus, stored in the cache."
        ),
    )
    sub = d.add_subparsers(dest="draft_command", required=True, metavar="{train,list,evaluate}")
    t = sub.add_parser("train", help="train the adapter of one exit layer")
    t.add_argument("--layer", type=positive_int, required=True, help="exit layer L")
    dataclass_options(
        t.add_argument_group("training (spectheory.lm.adapters.TrainSettings)"),
        "spectheory.lm.adapters:TrainSettings",
        ("tokens", "steps", "batch_size", "lr", "arch", "depth", "vocab", "seed", "loss"),
        types={"tokens": optional_positive_int, "steps": positive_int, "batch_size": positive_int,
               "lr": _positive_float, "arch": str, "depth": positive_int, "vocab": vocab_size,
               "loss": loss_spec},
    )  # fmt: skip
    dataclass_options(
        t.add_argument_group("corpus (spectheory.lm.corpus.CorpusSettings)"),
        "spectheory.lm.corpus:CorpusSettings",
        ("max_len", "doc_sequences", "prompts", "samples_per_prompt", "sampled_tokens"),
        types={"max_len": positive_int, "prompts": optional_positive_int,
               "sampled_tokens": positive_int},
    )
    t.add_argument("--name", default="", help="save under this name instead of 'adapter:L'")
    t.add_argument("--as-draft", action="store_true",
                   help="save as the draft 'adapter:L' whatever the loss (by default a loss "
                        "other than kl gets its own key, e.g. <model>-L12-tv)")  # fmt: skip
    t.add_argument("--model", default="", help="a local model folder (default SmolLM2)")
    t.add_argument("--device", default="cpu",
                   help="where the corpus sampling, teacher pass and training run: 'cpu' "
                        "(default) or 'cuda' (needs --no-eval; the corpus of a GPU has its own "
                        "cache key, its generator draws other tokens)")  # fmt: skip
    _temperatures(t)
    t.add_argument("--no-eval", action="store_true", help="skip the held-out evaluation")
    t.add_argument("--force", action="store_true", help="overwrite an existing adapter")
    t.set_defaults(run=run_train)
    ls = sub.add_parser("list", help="list the cached adapters")
    ls.set_defaults(run=run_list)
    e = sub.add_parser("evaluate", help="held-out acceptance and cost ratio of a draft")
    e.add_argument("name", help="'adapter:L', a cached adapter name, or 'quant:TYPE'")
    _temperatures(e)
    e.add_argument("--repeats", type=positive_int, default=argparse.SUPPRESS,
                   help=f"timed steps of the cost ratio (default {EVAL_REPEATS})")  # fmt: skip
    e.add_argument("--no-cost", action="store_true", help="skip the cost-ratio measurement")
    e.add_argument("--model", default="", help="a local model folder (default SmolLM2)")
    e.set_defaults(run=run_evaluate)
    return d


def _positive_float(text):
    from ._common import positive_float

    return positive_float(text)


def _temperatures(parser):
    # left out unless given, so that train --no-eval can refuse it (it would be ignored)
    parser.add_argument("--temperatures", type=nonnegative_float, nargs="+",
                        default=argparse.SUPPRESS,
                        help="held-out evaluation temperatures (default "
                             f"{' '.join(map(str, EVAL_TEMPERATURES))})")  # fmt: skip


def _eval_temperatures(args):
    """The held-out evaluation temperatures: ``--temperatures``, else :data:`EVAL_TEMPERATURES`."""
    return list(vars(args).get("temperatures", EVAL_TEMPERATURES))


def _evaluate_adapter(*args, **kwargs):
    from ..lm.draft_eval import evaluate_adapter

    return evaluate_adapter(*args, **kwargs)
