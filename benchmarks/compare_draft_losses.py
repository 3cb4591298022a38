r"""Draft-training losses compared at equal budget on held-out prompts.

Trains the same early-exit adapter (:mod:`spectheory.lm.adapters`: exit layer
``--layer``, ``--depth`` decoder layers, 8,192-token head) once per training
loss (:mod:`spectheory.torch.losses`: ``kl``, ``tv``, ``alpha:N:LAW``, mixtures)
with the same corpus, teacher pass, steps, batch size, learning rate and seed,
then evaluates all of them on the same held-out positions (the target's
continuations of the 38 evaluation prompts, :func:`spectheory.lm.draft_eval.
evaluate_multidraft`): the single-draft acceptance :math:`\sum_x \min(p, q)`
(n = 1) and the optimal multi-draft acceptance :math:`\alpha^*(n)` (docs/theory.md
§2.3) for each ``n`` and draft law, with 95% prompt-bootstrap intervals and
paired intervals of the differences against the first loss (resampling the
same prompts for both adapters).

Each trained adapter is cached under its own key (``<model>-L<L>-<loss>``,
``kl`` under the key of ``adapter:L``) and reused when its recorded settings
and corpus hash match, so an interrupted run resumes and separate processes
can train the losses side by side (``--train-only``).  ``--install-best``
copies the adapter of largest mean n = 1 acceptance over the temperatures to
the key of ``adapter:L`` (what ``spectheory report`` and live generation load).

Writes ``OUT/comparison.csv`` (one row per loss, temperature, n and law),
``OUT/comparison.md`` (the tables) and ``OUT/summary.json`` (settings, timings,
training metrics).  ``--merge DIR... OUT`` joins runs that evaluated the same
adapters (checked by weight hashes) on other ``n`` or laws into one table.

Run, for example (a small corpus: 192 sampled answers and 48 documentation
sequences; ``--train-only`` / ``--eval-only --wait`` split it over processes)::

    python benchmarks/compare_draft_losses.py --layer 12 --depth 2 --steps 300 \
        --losses kl tv alpha:4:iid --doc-sequences 48 --prompts 192 \
        --samples-per-prompt 1 --sampled-tokens 48 --out docs/draft_losses
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from spectheory.lm import adapters as A
from spectheory.lm.corpus import CorpusSettings


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layer", type=int, default=12)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--losses", nargs="+", default=["kl", "tv", "alpha:4:iid"],
                    help="training losses; the first is the reference")  # fmt: skip
    ap.add_argument("--doc-sequences", type=int, default=120)
    ap.add_argument("--prompts", type=int, default=None)
    ap.add_argument("--samples-per-prompt", type=int, default=4)
    ap.add_argument("--sampled-tokens", type=int, default=64)
    ap.add_argument("--temperatures", type=float, nargs="+", default=[1.0, 0.7])
    ap.add_argument("--ns", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--laws", nargs="+", default=["iid", "without_replacement"])
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--states", default="",
                    help="teacher states file: read if present, else written")  # fmt: skip
    ap.add_argument("--train-only", action="store_true", help="train (or find) and stop")
    ap.add_argument("--eval-only", action="store_true",
                    help="never train: wait for the adapters that other runs train")  # fmt: skip
    ap.add_argument("--wait", action="store_true",
                    help="wait for --states (written by another run) before training")  # fmt: skip
    ap.add_argument("--held-out", choices=("sampled", "trace"), default="sampled",
                    help="held-out continuations: one batched sample (default) or the "
                         "recorded trace (slow: prompt by prompt, with drafts)")  # fmt: skip
    ap.add_argument("--held-out-seed", type=int, default=0)
    ap.add_argument("--more-doc-sequences", type=int, default=0,
                    help="append this many further documentation sequences (teacher "
                         "forcing only: the cached sampled part is reused)")  # fmt: skip
    ap.add_argument("--max-sequences", type=int, default=0,
                    help="train on a seeded subset of this many sequences (0: all)")  # fmt: skip
    ap.add_argument("--wait-corpus", action="store_true",
                    help="wait until another run has cached the sampled corpus")  # fmt: skip
    ap.add_argument("--install-best", action="store_true",
                    help="also save the best adapter as the draft 'adapter:L'")  # fmt: skip
    ap.add_argument("--out", default="docs/draft_losses")
    return ap.parse_args(argv)


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def train_settings(args, loss):
    return A.TrainSettings(
        arch="layer",
        depth=args.depth,
        vocab=args.vocab,
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        seed=args.seed,
        loss=loss,
    )


def corpus_settings(args):
    return CorpusSettings(
        doc_sequences=args.doc_sequences,
        prompts=args.prompts,
        samples_per_prompt=args.samples_per_prompt,
        sampled_tokens=args.sampled_tokens,
    )


def cached(loaded, path, settings, corpus_sha):
    """The cached adapter at ``path`` if it was trained with these settings on this corpus."""
    if not path.is_file():
        return None
    ad = A.load_adapter(loaded, path)
    same = A.TrainSettings(**ad.metadata.get("settings", {})) == settings
    return ad if same and ad.metadata.get("corpus_sha256") == corpus_sha else None


def teacher(loaded, corpus, layer, states_path):
    """Teacher states of ``corpus`` at ``layer``, from ``states_path`` when it matches."""
    import torch

    if states_path and Path(states_path).is_file():
        d = torch.load(states_path, weights_only=False)
        if d["corpus_sha256"] == corpus.sha256 and layer in d["hidden"]:
            log(f"teacher states read from {states_path}")
            return A.TeacherStates(
                hidden={k: tuple(v) for k, v in d["hidden"].items()},
                final=tuple(d["final"]),
                loss_start=np.asarray(d["loss_start"], dtype=np.int64),
                mass=np.asarray(d["mass"], dtype=np.float64),
                corpus_sha256=d["corpus_sha256"],
            ), float(d.get("teacher_seconds", float("nan")))
        log(f"{states_path} holds another corpus or layer; recomputing")
    t0 = time.perf_counter()
    st = A.teacher_states(loaded, corpus, [layer], progress=True)
    secs = time.perf_counter() - t0
    if states_path:  # written whole, then renamed: a waiting run never reads a partial file
        tmp = Path(str(states_path) + ".tmp")
        torch.save(
            {
                "hidden": {k: list(v) for k, v in st.hidden.items()},
                "final": list(st.final),
                "loss_start": st.loss_start,
                "mass": np.asarray(st.mass),
                "corpus_sha256": st.corpus_sha256,
                "teacher_seconds": secs,
            },
            tmp,
        )
        tmp.replace(states_path)
    return st, secs


def with_more_docs(corpus, docs):
    """``corpus`` with the documentation sequences of ``docs`` it lacks, before its sampled ones.

    ``docs`` is a documentation-only corpus (``samples_per_prompt=0``) with more
    documentation sequences; the documentation sequences come in a fixed order,
    so its first ones must be exactly those of ``corpus`` (checked).  The
    sampled part of a corpus is cached under a key of all its settings, so this
    grows a corpus without sampling it again.
    """
    from spectheory.lm.corpus import Corpus

    own = [i for i, src in enumerate(corpus.sources) if src == "doc"]
    sampled = [i for i, src in enumerate(corpus.sources) if src != "doc"]
    if any(src != "doc" for src in docs.sources):
        raise SystemExit("the documentation corpus holds sampled sequences")
    if len(docs.sequences) < len(own) or any(
        not np.array_equal(corpus.sequences[i], docs.sequences[k]) for k, i in enumerate(own)
    ):
        raise SystemExit("the documentation corpus does not extend the corpus's documentation")
    extra = range(len(own), len(docs.sequences))
    seqs = [corpus.sequences[i] for i in own] + [docs.sequences[k] for k in extra]
    starts = [int(corpus.loss_start[i]) for i in own] + [int(docs.loss_start[k]) for k in extra]
    seqs += [corpus.sequences[i] for i in sampled]
    starts += [int(corpus.loss_start[i]) for i in sampled]
    return Corpus(
        sequences=tuple(seqs),
        loss_start=np.asarray(starts, dtype=np.int64),
        sources=("doc",) * (len(own) + len(extra)) + ("sampled",) * len(sampled),
        settings=corpus.settings,
    )


def corpus_path(loaded, cs):
    """Where :func:`spectheory.lm.corpus.build_corpus` caches the sampled part."""
    from spectheory.lm.cache import cache_dir
    from spectheory.lm.corpus import _model_slug

    return cache_dir() / "corpus" / f"{_model_slug(loaded)}-{cs.key()}.npz"


def train_all(loaded, args):
    from spectheory.lm.corpus import build_corpus

    cs = corpus_settings(args)
    while args.wait and args.states and not Path(args.states).is_file():
        time.sleep(20)  # another run samples the corpus and writes the teacher states
    while args.wait_corpus and cs.samples_per_prompt and not corpus_path(loaded, cs).is_file():
        time.sleep(20)
    t0 = time.perf_counter()
    corpus = build_corpus(loaded, cs, progress=True)
    if args.more_doc_sequences:
        docs = dataclasses.replace(
            cs, doc_sequences=cs.doc_sequences + args.more_doc_sequences, samples_per_prompt=0
        )
        corpus = with_more_docs(corpus, build_corpus(loaded, docs, cache=False))
    if args.max_sequences and args.max_sequences < len(corpus.sequences):
        rng = np.random.default_rng([args.seed, 23])
        keep = np.sort(rng.choice(len(corpus.sequences), args.max_sequences, replace=False))
        corpus = corpus.select(keep)
    corpus_s = time.perf_counter() - t0
    log(f"corpus: {len(corpus.sequences)} sequences, {corpus.num_loss_tokens} positions")
    out, states, teacher_s = {}, None, float("nan")
    for loss in args.losses:
        settings = train_settings(args, loss)
        path = A.adapter_path(args.layer, loaded.name, settings.loss)
        ad = cached(loaded, path, settings, corpus.sha256)
        while ad is None and args.eval_only:
            log(f"waiting for {path.name} ...")
            time.sleep(30)
            ad = cached(loaded, path, settings, corpus.sha256)
        if ad is None:
            if states is None:
                states, teacher_s = teacher(loaded, corpus, args.layer, args.states)
            log(f"training {settings.loss} ({settings.steps} steps) ...")
            ad = A.train_adapter(loaded, states, args.layer, settings, progress=True)
            extra = {
                "corpus_settings": dataclasses.asdict(cs),
                "more_doc_sequences": args.more_doc_sequences,
                "corpus_positions": corpus.num_loss_tokens,
            }
            A.save_adapter(ad, path, extra=extra)
            log(f"saved {path} ({ad.metadata['train_seconds']:.0f} s)")
        else:
            log(f"reusing {path}")
        out[settings.loss] = ad
    timings = {"corpus_seconds_this_run": round(corpus_s, 1), "teacher_seconds": teacher_s}
    return out, corpus, timings


def rows_of(ev, names, args):
    ref = names[0]
    rows = []
    for name in names:
        for T in ev.temperatures:
            for n in ev.ns:
                for law in ["iid"] if n == 1 else ev.laws:
                    (lo, hi), v = ev.interval(name, T, n, law, n_boot=args.n_boot)
                    row = {
                        "loss": name,
                        "T": T,
                        "n": n,
                        "law": "-" if n == 1 else law,
                        "value": round(v, 4),
                        "ci_lo": round(lo, 4),
                        "ci_hi": round(hi, 4),
                    }
                    if name != ref:
                        (dlo, dhi), d = ev.interval(name, T, n, law, versus=ref, n_boot=args.n_boot)
                        row.update(diff=round(d, 4), diff_lo=round(dlo, 4), diff_hi=round(dhi, 4))
                    else:
                        row.update(diff="", diff_lo="", diff_hi="")
                    t = ev.tables[(name, T, n, "iid" if n == 1 else law)]
                    row.update(positions=int(t[:, 1].sum()), prompts=int(t.shape[0]))
                    rows.append(row)
    return rows


def markdown(rows, names, summary):
    ref = names[0]
    args = argparse.Namespace(**summary["args"])
    lines = [
        "# Draft-training losses at equal budget",
        "",
        f"Adapter: exit layer {args.layer}, depth {args.depth}, {args.vocab}-token head; "
        f"{args.steps} steps of {args.batch_size} sequences, lr {args.lr:g}, seed {args.seed}, "
        f"same corpus ({summary['corpus_positions']} training positions) and teacher pass for "
        "every loss.",
        f"Held-out: the target's continuations of the 38 evaluation prompts (24 tokens, "
        f"{'one batched sample' if summary['held_out'] == 'sampled' else 'the recorded trace'});"
        " "
        "95% prompt-bootstrap intervals in brackets; differences against "
        f"`{ref}` are paired (the same resampled prompts for both).",
        "",
        "## Training",
        "",
        "| loss | train s | validation KL (start -> end) | own validation loss (start -> end) |",
        "|---|---|---|---|",
    ]
    for name in names:
        m = summary["training"][name]
        lines.append(
            f"| `{name}` | {m['train_seconds']:.0f} | {m['validation_kl_initial']:.3f} -> "
            f"{m['validation_kl']:.3f} | {m['validation_loss_initial']:.4f} -> "
            f"{m['validation_loss']:.4f} |"
        )
    cols = sorted({(r["n"], r["law"]) for r in rows}, key=lambda c: (c[0], c[1]))
    head = " | ".join("n = 1 (acceptance)" if n == 1 else f"alpha*({n}) {law}" for n, law in cols)
    for T in sorted({r["T"] for r in rows}, reverse=True):
        lines += ["", f"## T = {T:g}", "", f"| loss | {head} |", "|---" * (len(cols) + 1) + "|"]
        for name in names:
            cells = []
            for n, law in cols:
                key = (name, T, n, law)
                found = [x for x in rows if (x["loss"], x["T"], x["n"], x["law"]) == key]
                if not found:  # merged runs may evaluate some n only at some temperatures
                    cells.append("-")
                    continue
                (r,) = found
                cell = f"{r['value']:.3f} [{r['ci_lo']:.3f}, {r['ci_hi']:.3f}]"
                if name != ref:
                    cell += f"<br>{r['diff']:+.3f} [{r['diff_lo']:+.3f}, {r['diff_hi']:+.3f}]"
                cells.append(cell)
            lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
        lines.append("")
        lines.append(f"Second line of a cell: the difference against `{ref}`, paired interval.")
    return "\n".join(lines) + "\n"


def merge(dirs, out):
    """One table from runs that evaluated the same adapters on other n / laws (same positions)."""
    rows, summaries = [], [json.loads((Path(d) / "summary.json").read_text()) for d in dirs]
    for d in dirs:
        with open(Path(d) / "comparison.csv", newline="") as f:
            for r in csv.DictReader(f):
                r["T"], r["n"] = float(r["T"]), int(r["n"])
                for k in ("value", "ci_lo", "ci_hi", "diff", "diff_lo", "diff_hi"):
                    r[k] = float(r[k]) if r[k] != "" else ""
                rows.append(r)
    for s in summaries:  # runs of an older version of this script recorded only the command
        s.setdefault("args", vars(parse_args(shlex.split(s["command"])[2:])))
    first = summaries[0]
    for other in summaries[1:]:
        for k in ("corpus_sha256", "train_settings", "held_out"):
            if other[k] != first[k]:
                raise SystemExit(f"{k} differs between the merged runs")
        for name, m in other["training"].items():
            if m["weights_sha256"] != first["training"][name]["weights_sha256"]:
                raise SystemExit(f"the {name} adapters differ between the merged runs")
    names = list(first["training"])
    keys = [(r["loss"], r["T"], r["n"], r["law"]) for r in rows]
    if len(set(keys)) != len(keys):
        raise SystemExit("the merged runs evaluated the same (loss, T, n, law) twice")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows.sort(key=lambda r: (names.index(r["loss"]), -r["T"], r["n"], r["law"]))
    with open(out / "comparison.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    summary = {**first, "merged_from": [s["command"] for s in summaries]}
    summary["timings"] = {s["command"]: s["timings"] for s in summaries}
    (out / "comparison.md").write_text(markdown(rows, names, summary))
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    log(f"merged {len(dirs)} runs into {out}")


def main(argv=None):
    import torch

    from spectheory.lm._loader import load_model
    from spectheory.lm.draft_eval import evaluate_multidraft, sampled_held_out_sequences

    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--merge":
        merge(sys.argv[2:-1], sys.argv[-1])
        return 0
    args = parse_args(argv)
    t_start = time.perf_counter()
    log("loading the target ...")
    loaded = load_model()
    held, sequences = {}, None
    if args.held_out == "sampled" and not args.train_only:
        t0 = time.perf_counter()
        for T in args.temperatures:
            held[T] = sampled_held_out_sequences(loaded, T, 24, seed=args.held_out_seed)
            log(f"sampled the held-out continuations at T = {T:g}")
        held_s = round(time.perf_counter() - t0, 1)

        def sequences(loaded, T, max_new_tokens, prompts):
            return held[T]

    adapters, corpus, timings = train_all(loaded, args)
    if args.train_only:
        return 0
    if held:
        timings["held_out_sampling_seconds"] = held_s
    names = list(adapters)
    log(f"evaluating {names} on the held-out prompts ...")
    t0 = time.perf_counter()
    ev = evaluate_multidraft(
        loaded, adapters, args.temperatures, args.ns, args.laws, progress=log, sequences=sequences
    )
    timings["evaluation_seconds"] = round(time.perf_counter() - t0, 1)
    rows = rows_of(ev, names, args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "comparison.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    summary = {
        "command": "python benchmarks/compare_draft_losses.py " + " ".join(sys.argv[1:]),
        "layer": args.layer,
        "depth": args.depth,
        "train_settings": {n: dataclasses.asdict(train_settings(args, n)) for n in names},
        "corpus_settings": dataclasses.asdict(corpus_settings(args)),
        "more_doc_sequences": args.more_doc_sequences,
        "corpus_sha256": corpus.sha256,
        "corpus_positions": corpus.num_loss_tokens,
        "held_out": args.held_out,
        "training": {
            n: {
                k: adapters[n].metadata.get(k)
                for k in (
                    "train_seconds",
                    "train_tokens",
                    "tokens_seen",
                    "validation_kl_initial",
                    "validation_kl",
                    "validation_loss_initial",
                    "validation_loss",
                    "threads",
                    "weights_sha256",
                )
            }
            for n in names
        },
        "timings": timings,
        "torch_threads": int(torch.get_num_threads()),
    }
    if args.install_best:
        best = max(names, key=lambda n: np.mean([ev.value(n, T, 1) for T in ev.temperatures]))
        path = A.save_adapter(adapters[best], A.adapter_path(args.layer, loaded.name))
        summary["installed"] = {"loss": best, "path": str(path)}
        log(f"installed {best} as adapter:{args.layer} ({path})")
    summary["total_seconds"] = round(time.perf_counter() - t_start, 1)
    summary["args"] = vars(args)
    (out / "comparison.md").write_text(markdown(rows, names, summary))
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    log(f"wrote {out}/comparison.csv, comparison.md, summary.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
