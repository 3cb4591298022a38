r"""Train early-exit adapter drafts on a GPU with a large corpus, and rank them on held-out prompts.

The CPU pipeline of ``spectheory draft train`` (:mod:`spectheory.lm.corpus`,
:func:`spectheory.lm.adapters.teacher_states`, :func:`~spectheory.lm.adapters.
train_adapter`) runs unchanged on the model's device; on a GPU the target
samples a corpus an order of magnitude larger than the CPU can in the same
time.  One corpus and one teacher pass serve every variant; each variant
(``LAYER:DEPTH:LOSS``, e.g. ``12:2:kl``) is trained with the same steps, batch,
learning rate and seed, then evaluated on the held-out positions that
``--held-out`` holds (:func:`spectheory.lm.draft_eval.held_out_table`, written
on the CPU from the recorded default traces, as ``spectheory draft evaluate``
uses them: the held-out acceptance is the README's figure, computed on the GPU).

Writes ``OUT/summary.json`` (corpus size, timings, each variant's settings,
validation KL and held-out acceptance with its 95% prompt-bootstrap interval)
and the adapter of largest mean held-out acceptance as ``OUT/best.safetensors``
cut into 15 MB pieces (``best.safetensors.part00`` ...; join them with ``cat``;
their SHA-256 is in the summary), so that it can come back from a machine
that returns files of at most 16 MiB.  Variants that would not finish within
``--budget`` seconds (from the time the previous one took) are skipped and
listed as such.

Run on a machine with CUDA (the held-out table first, on the CPU)::

    python -c "from spectheory.lm import load_model; from spectheory.lm import draft_eval as E; \
E.save_held_out(E.held_out_table(load_model()), 'heldout.npz')"
    python benchmarks/train_adapter_gpu.py --held-out heldout.npz --out OUT \
        --samples-per-prompt 48 --sampled-tokens 96 --steps 3000 --batch-size 64 \
        --variants 12:2:kl 12:2:tv 12:2:kl+tv
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--held-out", required=True, help="table of spectheory.lm.draft_eval.save_held_out"
    )
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--variants", nargs="+", default=["12:2:kl", "12:2:tv", "12:2:kl+tv"],
                    help="LAYER:DEPTH:LOSS, trained in this order")  # fmt: skip
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--doc-sequences", type=int, default=400)
    ap.add_argument("--prompts", type=int, default=None)
    ap.add_argument("--samples-per-prompt", type=int, default=48)
    ap.add_argument("--sampled-tokens", type=int, default=96)
    ap.add_argument("--max-len", type=int, default=192)
    ap.add_argument("--teacher-batch", type=int, default=None,
                    help="teacher batch (default 8 on the CPU, 64 on a GPU)")  # fmt: skip
    ap.add_argument("--budget", type=float, default=420.0,
                    help="seconds after which no further variant is started")  # fmt: skip
    ap.add_argument("--piece-mb", type=int, default=15)
    return ap.parse_args(argv)


def _variant(text):
    layer, depth, loss = text.split(":", 2)
    return int(layer), int(depth), loss


def _log(msg, t0):
    print(f"[{time.perf_counter() - t0:6.1f} s] {msg}", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    import torch

    from spectheory.lm import adapters as A
    from spectheory.lm import draft_eval as E
    from spectheory.lm._loader import load_model
    from spectheory.lm.corpus import CorpusSettings, build_corpus

    args = parse_args(argv)
    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = E.load_held_out(args.held_out)
    variants = [_variant(v) for v in args.variants]
    loaded = load_model(device=args.device)
    summary = {
        "argv": sys.argv,
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
        "torch": torch.__version__,
        "load_seconds": round(time.perf_counter() - t0, 1),
        "held_out_positions": {str(T): sum(len(i) - b for i, b in v) for T, v in table.items()},
    }
    _log(f"model on {args.device}", t0)
    corpus_settings = CorpusSettings(
        max_len=args.max_len,
        doc_sequences=args.doc_sequences,
        prompts=args.prompts,
        samples_per_prompt=args.samples_per_prompt,
        sampled_tokens=args.sampled_tokens,
        seed=args.seed,
    )
    t1 = time.perf_counter()
    corpus = build_corpus(loaded, corpus_settings, cache=False)
    summary["corpus"] = {
        "settings": dataclasses.asdict(corpus_settings),
        "sequences": len(corpus.sequences),
        "positions": corpus.num_loss_tokens,
        "sha256": corpus.sha256,
        "seconds": round(time.perf_counter() - t1, 1),
    }
    _log(f"corpus: {len(corpus.sequences)} sequences, {corpus.num_loss_tokens} positions", t0)
    t1 = time.perf_counter()
    layers = sorted({layer for layer, _, _ in variants})
    states = A.teacher_states(loaded, corpus, layers, batch_size=args.teacher_batch)
    summary["teacher_seconds"] = round(time.perf_counter() - t1, 1)
    _log("teacher pass done", t0)
    results, best, last = [], None, 0.0
    for layer, depth, loss in variants:
        name = f"{layer}:{depth}:{loss}"
        if time.perf_counter() - t0 + 1.2 * last > args.budget:
            results.append({"variant": name, "skipped": "time budget"})
            _log(f"{name}: skipped (budget)", t0)
            continue
        t1 = time.perf_counter()
        settings = A.TrainSettings(
            depth=depth,
            vocab=args.vocab,
            steps=args.steps,
            batch_size=args.batch_size,
            lr=args.lr,
            seed=args.seed,
            loss=loss,
        )
        adapter = A.train_adapter(loaded, states, layer, settings)
        ev = E.evaluate_adapter(loaded, adapter, tuple(table), sequences=table)
        cis = ev.acceptance_ci()
        meta = adapter.metadata
        row = {
            "variant": name,
            "train_seconds": meta["train_seconds"],
            "validation_kl": [meta["validation_kl_initial"], meta["validation_kl"]],
            "validation_loss": [meta["validation_loss_initial"], meta["validation_loss"]],
            "train_tokens": meta["train_tokens"],
            "tokens_seen": meta["tokens_seen"],
            "held_out": {
                f"T={T:g}": {"acceptance": a, "ci95": list(ci), "raw_exit": r, "coverage": c}
                for T, a, ci, r, c in zip(
                    ev.temperatures, ev.acceptance, cis, ev.raw_exit, ev.coverage
                )
            },
            "mean_acceptance": sum(ev.acceptance) / len(ev.acceptance),
        }
        results.append(row)
        last = time.perf_counter() - t1
        _log(f"{name}: held-out {[round(float(a), 4) for a in ev.acceptance]} ({last:.0f} s)", t0)
        if best is None or row["mean_acceptance"] > best[0]["mean_acceptance"]:
            extra = {
                "corpus_settings": summary["corpus"]["settings"],
                "corpus_positions": corpus.num_loss_tokens,
                "held_out": row["held_out"],
                "trained_on": summary["device"],
            }
            path = A.save_adapter(adapter, out / "best.safetensors", extra=extra)
            best = (row, path)
        summary["variants"] = results
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
        del adapter
        torch.cuda.empty_cache() if args.device.startswith("cuda") else None
    if best is not None:
        blob = best[1].read_bytes()
        size = args.piece_mb * 1_000_000
        pieces = []
        for k in range(0, len(blob), size):
            piece = out / f"best.safetensors.part{k // size:02d}"
            piece.write_bytes(blob[k : k + size])
            pieces.append(piece.name)
        best[1].unlink()
        summary["best"] = {
            "variant": best[0]["variant"],
            "sha256": hashlib.sha256(blob).hexdigest(),
            "bytes": len(blob),
            "pieces": pieces,
        }
    summary["variants"] = results
    summary["total_seconds"] = round(time.perf_counter() - t0, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    _log("done", t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
