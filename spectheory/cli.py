"""The ``spectheory`` command line.

Exit codes: 0 success; 1 an unexpected failure; 2 bad input or usage (the
message names the argument); 3 a check failed (``check`` found a verifier
lossy, a ``reproduce`` or ``report`` check did not come out as expected).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from fractions import Fraction

import numpy as np

from ._errors import SpecTheoryError
from .distributions import softmax
from .drafting import SAMPLINGS
from .solvers.ot_dual import METHODS, solve_bound

__all__ = ["main"]

#: docs/theory.md §8.1, instance A: the Traversal-verification paper's example.
EXAMPLE_TARGET = (0.3, 0.4, 0.3)
EXAMPLE_DRAFT = (0.6, 0.3, 0.1)


def _numbers(text, name, exact):
    """Parse "0.3,0.4,0.3"; as exact decimals (Fractions) for the exact methods."""
    try:
        if exact:
            return np.array([Fraction(x.strip()) for x in text.split(",")], dtype=object)
        return np.array([float(x) for x in text.split(",")])
    except ValueError:
        raise SpecTheoryError(f"{name} must be comma-separated numbers; got {text!r}") from None


def _cmd_bound(args):
    exact = args.method in ("maxflow", "enumerate")
    target = _numbers(args.target, "--target", exact)
    draft = _numbers(args.draft, "--draft", exact)
    samplings = SAMPLINGS if args.sampling == "all" else (args.sampling,)
    rows = []
    for sampling in samplings:
        for n in args.n:
            if sampling != "iid" and n > np.count_nonzero(draft):
                continue
            res = solve_bound(target, draft, n, sampling, args.method)
            rows.append(
                {
                    "sampling": sampling,
                    "n": n,
                    "alpha_star": res.value,
                    "exact": None if res.exact_value is None else str(res.exact_value),
                    "H": np.flatnonzero(res.certificate).tolist(),
                    "method": res.method,
                }
            )
    result = {"target": args.target, "draft": args.draft, "bounds": rows}
    if args.vocab:
        result["full_vocabulary"] = _full_vocabulary_demo(args.vocab, args.batch, args.seed, args.n)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"target p = {args.target}\ndraft  q = {args.draft}")
    print(f"{'sampling':<22}{'n':>3}  {'alpha*':>12}  {'certificate H':<14} exact")
    for r in rows:
        line = f"{r['sampling']:<22}{r['n']:>3}  {r['alpha_star']:>12.9f}  {r['H']!s:<14}"
        print(f"{line} {r['exact'] or ''}".rstrip())
    if args.vocab:
        fv = result["full_vocabulary"]
        print(
            f"\nsynthetic batch: B = {args.batch} rows, V = {args.vocab} "
            f"(softmax of N(0, 9) logits; draft logits + N(0, 1)), seed {args.seed}"
        )
        print(f"{'sampling':<22}{'n':>3}  {'mean alpha*':>12}  {'ms per row':>10}")
        for r in fv:
            print(f"{r['sampling']:<22}{r['n']:>3}  {r['mean']:>12.6f}  {r['ms_per_row']:>10.3f}")
    return 0


def _full_vocabulary_demo(V, B, seed, ns):
    rng = np.random.default_rng(seed)
    z = 3.0 * rng.standard_normal((B, V))
    p, q = softmax(z), softmax(z + rng.standard_normal((B, V)))
    out = []
    for sampling in SAMPLINGS:
        for n in ns:
            solve_bound(p[:1], q[:1], n, sampling)  # compile outside the timing
            t0 = time.perf_counter()
            res = solve_bound(p, q, n, sampling)
            ms = (time.perf_counter() - t0) / B * 1e3
            out.append(
                {"sampling": sampling, "n": n, "mean": float(res.value.mean()), "ms_per_row": ms}
            )
    return out


def _prompt_ids(text):
    """Parse "0-5,9" into (0, 1, 2, 3, 4, 5, 9)."""
    ids = []
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            ids.extend(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise SpecTheoryError(f"--prompts must look like '0-5,9'; got {text!r}") from None
    return tuple(ids)


def _settings(args):
    from .lm import TraceSettings
    from .lm.prompts import PROMPTS

    prompts = _prompt_ids(args.prompts) if args.prompts else tuple(range(len(PROMPTS)))
    return TraceSettings(
        model=args.model,
        drafts=tuple(args.drafts),
        prompts=prompts,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        seed=args.seed,
    )


def _cmd_trace_record(args):
    from .lm import cache_dir, record_trace

    settings = _settings(args)
    t0 = time.perf_counter()
    trace = record_trace(settings, cache=not args.no_cache, progress=not args.quiet)
    seconds = time.perf_counter() - t0
    path = cache_dir() / "traces" / f"{settings.key()}.safetensors"
    if args.out:
        path = trace.save(args.out)
    elif args.no_cache:
        path = None
    size = path.stat().st_size / 2**20 if path else float("nan")
    print(
        f"trace {settings.key()}: {trace.num_positions} positions x {trace.vocab_size} tokens, "
        f"drafts {', '.join(trace.drafts)}\n"
        f"file {path} ({size:.1f} MiB); {seconds:.1f} s "
        f"(recording {trace.metadata['recording_seconds']} s)"
    )
    return 0


def _cmd_replay(args):
    from .lm import load_trace, record_trace
    from .sim.replay import replay, write_csv

    if args.trace:
        trace = load_trace(args.trace)
    else:
        trace = record_trace(_settings(args), progress=not args.quiet)
    samplings = SAMPLINGS if args.samplings == ["all"] else tuple(args.samplings)
    t0 = time.perf_counter()
    table = replay(
        trace,
        drafts=args.replay_drafts or None,
        temperatures=tuple(args.temperatures),
        ns=tuple(args.n),
        samplings=samplings,
        verifiers=tuple(args.verifiers),
        trials=args.trials,
        seed=args.seed,
        progress=not args.quiet,
    )
    seconds = time.perf_counter() - t0
    path = write_csv(table, args.out)
    groups: dict = {}
    for row in table:
        key = (row["draft"], row["temperature"], row["n"], row["sampling"], row["verifier"])
        groups.setdefault(key, []).append(row)
    print(
        f"{'draft':<9}{'T':>5}{'n':>3} {'law':<20}{'verifier':<9}{'bound':>7}{'exact':>7}{'mc':>7}"
    )
    for (d, t, n, law, v), rows in groups.items():
        exact = [r["exact"] for r in rows if r["exact"] == r["exact"]]
        ex = f"{np.mean(exact):7.3f}" if exact else f"{'-':>7}"
        b = np.mean([r["bound"] for r in rows])
        mc = np.mean([r["mc"] for r in rows])
        print(f"{d:<9}{t:>5}{n:>3} {law:<20}{v:<9}{b:7.3f}{ex}{mc:7.3f}")
    print(f"{len(table)} rows ({trace.num_positions} positions) in {seconds:.1f} s -> {path}")
    return 0


def _load_callable(spec):
    """``"package.module:function"`` -> the function; ``"bug:NAME"`` -> a bug-zoo verifier."""
    import importlib

    from .sim.bugzoo import BUGS

    if spec.startswith("bug:"):
        if spec[4:] not in BUGS:
            raise SpecTheoryError(f"unknown bug {spec[4:]!r}; known: {', '.join(BUGS)}")
        fn, n, law = BUGS[spec[4:]]
        return fn, n, law
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name), None, None
    except (ImportError, AttributeError) as exc:
        raise SpecTheoryError(f"verifier {spec!r} cannot be imported: {exc}") from None


def _cmd_check(args):
    from .sim.check import check_lossless
    from .verifiers import REGISTRY

    n, law = args.n, args.sampling
    if args.verifier in REGISTRY:
        verifier = args.verifier
        law = law or REGISTRY[verifier].samplings[0]
    elif ":" in args.verifier:
        verifier, n0, law0 = _load_callable(args.verifier)
        n, law = n or n0, law or law0
    else:
        raise SpecTheoryError(
            f"verifier must be a registry name ({', '.join(REGISTRY)}), 'module:function' or "
            f"'bug:NAME'; got {args.verifier!r}"
        )
    n, law = n or 2, law or "iid"
    common = dict(n=n, sampling=law, trials=args.trials, alpha=args.alpha, seed=args.seed)
    if args.target:
        where = f"p = {args.target}, q = {args.draft}"
        target = _numbers(args.target, "--target", False)
        draft = _numbers(args.draft or args.target, "--draft", False)
        report = check_lossless(verifier, target, draft, **common)
    else:
        from .distributions import process_logits
        from .lm import load_trace, record_trace
        from .report import informative_rows

        trace = load_trace(args.trace) if args.trace else record_trace(
            _settings(args), progress=not args.quiet
        )  # fmt: skip
        if args.on not in trace.drafts:
            raise SpecTheoryError(f"--on must be one of the trace's drafts {trace.drafts}; got "
                                  f"{args.on!r}")  # fmt: skip
        if args.positions:
            rows = np.array(_prompt_ids(args.positions))
        else:
            p = process_logits(trace.target_logits.astype(np.float64), args.check_temperature)
            q = process_logits(trace.draft_logits(args.on), args.check_temperature)
            rows = informative_rows(p, q, args.rows)
        where = f"trace positions {rows.tolist()} with draft {args.on}"
        report = check_lossless(verifier, trace, args.on, rows=rows,
                                temperature=args.check_temperature, **common)  # fmt: skip
    if args.json:
        fields = ("verifier", "lossy", "verdict", "p_value", "alpha", "impossible_outputs",
                  "acceptance", "acceptance_interval", "bound", "exceeds_bound", "detectable_tv",
                  "rows", "trials")  # fmt: skip
        print(json.dumps({k: getattr(report, k) for k in fields}, indent=2, default=float))
    else:
        print(f"{report.verifier} (n = {n}, {law}) on {where}:")
        print(f"  {report.verdict}")
        print(f"  p-value {report.p_value:.3g} (false-alarm rate {report.alpha:g}); acceptance "
              f"{report.acceptance:.4f} in [{report.acceptance_interval[0]:.4f}, "
              f"{report.acceptance_interval[1]:.4f}], bound {report.bound:.4f}")  # fmt: skip
        print(f"  detects a TV bias >= {report.detectable_tv:.3f} on one row with prob. 0.99")
    return 3 if report.lossy else 0


def _recording_options(r):
    r.add_argument("--model", default="smollm2-135m-instruct", help="model name or local folder")
    r.add_argument(
        "--drafts",
        nargs="+",
        default=["exit:15", "exit:25", "ngram:3"],
        help="'exit:L' / 'ngram:K'",
    )
    r.add_argument("--prompts", default="", help="prompt ids, e.g. '0-5,9' (default: all)")
    r.add_argument("--max-new-tokens", type=int, default=24, help="continuation length")
    r.add_argument("--temperature", type=float, default=1.0, help="target sampling temperature")
    r.add_argument("--seed", type=int, default=0, help="sampling seed")
    r.add_argument("--quiet", action="store_true", help="no progress output")


def _parser():
    ap = argparse.ArgumentParser(
        prog="spectheory",
        description="The theory of speculative decoding: exact optimal acceptance and more.",
    )
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser(
        "bound",
        help="optimal multi-draft acceptance alpha* (OT dual) with its certificate",
        description=(
            "Optimal membership acceptance of n drafts for a target p and a draft q. "
            "Without --target/--draft it runs the built-in example (docs/theory.md §8.1)."
        ),
    )
    b.add_argument(
        "--target", default=",".join(map(str, EXAMPLE_TARGET)), help="p, comma-separated"
    )
    b.add_argument("--draft", default=",".join(map(str, EXAMPLE_DRAFT)), help="q, comma-separated")
    b.add_argument("--n", type=int, nargs="+", default=[1, 2, 3, 4], help="numbers of drafts")
    b.add_argument("--sampling", choices=(*SAMPLINGS, "all"), default="all", help="draft law")
    b.add_argument("--method", choices=METHODS, default="dual", help="solver")
    b.add_argument(
        "--vocab", type=int, default=49152, help="also time a synthetic batch at this V (0: skip)"
    )
    b.add_argument("--batch", type=int, default=16, help="rows of the synthetic batch")
    b.add_argument("--seed", type=int, default=0, help="seed of the synthetic batch")
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.set_defaults(func=_cmd_bound)

    t = sub.add_parser("trace", help="record real-model traces (needs the models extra)")
    tsub = t.add_subparsers(dest="trace_command", required=True)
    r = tsub.add_parser(
        "record",
        help="record (or reuse from the cache) a trace of the target and its drafts",
        description=(
            "Samples continuations of the embedded prompts from the target and stores the "
            "target's and each early-exit draft's full-vocabulary logits (float16) with "
            "the tokens, as safetensors with JSON metadata and checksums."
        ),
    )
    _recording_options(r)
    r.add_argument("--no-cache", action="store_true", help="neither reuse nor store in the cache")
    r.add_argument("--out", default="", help="also write the trace to this file")
    r.set_defaults(func=_cmd_trace_record)

    from .lm.shards import add_shard_parser

    add_shard_parser(tsub)

    from .sim.replay import REPLAY_VERIFIERS

    rp = sub.add_parser(
        "replay",
        help="replay a trace through every verifier: bound, exact and Monte Carlo acceptance",
        description=(
            "Reads a trace (--trace FILE) or records/reuses one with the recording options, "
            "and writes the tidy table (one row per position, draft, temperature, n, draft "
            "law and verifier) as CSV."
        ),
    )
    rp.add_argument("--trace", default="", help="a saved trace file (else record or reuse)")
    _recording_options(rp)
    rp.add_argument("--replay-drafts", nargs="*", default=[], help="drafts to replay (default all)")
    rp.add_argument("--temperatures", type=float, nargs="+", default=[1.0], help="temperatures")
    rp.add_argument("--n", type=int, nargs="+", default=[1, 2, 4], help="numbers of drafts")
    rp.add_argument(
        "--samplings", nargs="+", default=["all"], choices=(*SAMPLINGS, "all"), help="draft laws"
    )
    rp.add_argument(
        "--verifiers", nargs="+", default=list(REPLAY_VERIFIERS), choices=REPLAY_VERIFIERS
    )
    rp.add_argument("--trials", type=int, default=200, help="Monte Carlo trials per row")
    rp.add_argument("--out", default="replay.csv", help="CSV output path")
    rp.set_defaults(func=_cmd_replay)

    ck = sub.add_parser(
        "check",
        help="test a verifier's losslessness (registry name, module:function or bug:NAME)",
        description=(
            "Samples the verifier many times per row and tests its outputs against the target "
            "(chi-square per row, pooled randomised PIT, acceptance above the optimal bound). "
            "Rows: --target/--draft numbers, or real trace positions (a saved --trace, else the "
            "trace of the recording options, recorded or reused). Exit code 0: consistent with "
            "lossless; 3: lossy at the stated false-alarm rate."
        ),
    )
    ck.add_argument("verifier", help="registry name, 'package.module:function' or 'bug:NAME'")
    ck.add_argument("--n", type=int, default=None, help="number of drafts (default 2)")
    ck.add_argument("--sampling", choices=SAMPLINGS, default=None, help="draft law")
    ck.add_argument("--target", default="", help="p, comma-separated (instead of a trace)")
    ck.add_argument("--draft", default="", help="q, comma-separated (with --target)")
    ck.add_argument("--trace", default="", help="a saved trace file")
    _recording_options(ck)
    ck.add_argument("--on", default="exit:25", help="the trace's draft to check against")
    ck.add_argument("--positions", default="", help="trace positions, e.g. '0-3,9'")
    ck.add_argument("--rows", type=int, default=4, help="informative positions chosen by rule")
    ck.add_argument("--check-temperature", type=float, default=1.0, help="for trace logits")
    ck.add_argument("--trials", type=int, default=20_000, help="trials per row")
    ck.add_argument("--alpha", type=float, default=1e-6, help="false-alarm rate")
    ck.add_argument("--json", action="store_true", help="print JSON")
    ck.set_defaults(func=_cmd_check)

    from .report import add_report_parser

    add_report_parser(sub)

    from .sim.sweeps import add_sweep_parser

    add_sweep_parser(sub)

    from ._cli_draft import add_draft_parser

    add_draft_parser(sub)

    from ._cli_papers import add_reproduce_parser

    add_reproduce_parser(sub)
    return ap


def main(argv=None) -> int:
    """Entry point of the ``spectheory`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except (SpecTheoryError, OSError) as exc:
        print(f"spectheory {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
