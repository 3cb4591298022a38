"""``spectheory bound``: the optimal multi-draft acceptance alpha* with its certificate."""

from __future__ import annotations

import argparse
import json
import time

from ._common import ExitCode, log, nonnegative_int, positive_int, progress, usage_error

HELP = "optimal multi-draft acceptance alpha* (OT dual) with its certificate"

#: docs/theory.md §8.1, instance A: the Traversal-verification paper's example.
EXAMPLE_TARGET = (0.3, 0.4, 0.3)
EXAMPLE_DRAFT = (0.6, 0.3, 0.1)
#: Numbers of drafts of the default table.
DEFAULT_NS = (1, 2, 3, 4)
#: Rows and seed of the synthetic batch unless ``--batch``/``--seed`` say otherwise.
DEFAULT_BATCH = 16
DEFAULT_SEED = 0
#: Largest synthetic batch (values per array) of ``--vocab x --batch``.
MAX_SYNTHETIC_VALUES = 2**28
#: The solver of :func:`spectheory.solve_bound` used unless ``--method`` says otherwise.
DEFAULT_METHOD = "dual"
#: The methods of :func:`spectheory.solve_bound` that take exact fractions such as 1/3.
EXACT_METHODS = ("maxflow", "enumerate")
#: Longest time (s) another method than the dual may take on the synthetic batch, estimated
#: from one row; beyond it (or where the method refuses the size) the dual is timed, and named.
MAX_ORACLE_SECONDS = 30.0


def _fractions(text):
    from fractions import Fraction

    try:
        return [Fraction(x.strip()) for x in text.split(",")]
    except (ValueError, ZeroDivisionError):
        return None


def numbers(text, name, exact, method=None):
    """Parse "0.3,0.4,0.3"; as exact decimals (Fractions) for the exact methods.

    Fractions such as "1/3" parse only when ``exact``; otherwise the message says
    that they need an exact method, naming ``method`` (the ``--method`` given),
    or, with ``method=None`` (a command without exact methods), that they are
    not accepted.
    """
    import numpy as np

    if exact:
        values = _fractions(text)
        if values is not None:
            return np.array(values, dtype=object)
    else:
        try:
            return np.array([float(x) for x in text.split(",")])
        except ValueError:
            pass
        if _fractions(text) is not None:
            if method is None:
                raise usage_error(
                    f"{name} {text!r}: fractions are not accepted here; write decimals (0.5)"
                )
            exact_methods = " or ".join(f"--method {m}" for m in EXACT_METHODS)
            raise usage_error(
                f"{name} {text!r}: fractions need an exact method: {exact_methods} "
                f"(--method {method} takes decimal numbers)"
            )
    raise usage_error(f"{name} must be comma-separated numbers; got {text!r}")


def add_parser(subparsers):
    """Register ``spectheory bound``."""
    b = subparsers.add_parser(
        "bound",
        help=HELP,
        description=(
            "Optimal membership acceptance of n drafts for a target p and a draft q. "
            "Without --target/--draft it runs the built-in example (docs/theory.md §8.1)."
        ),
    )
    b.add_argument("--target", default=None, help="p, comma-separated (with --draft)")
    b.add_argument("--draft", default=None, help="q, comma-separated (with --target)")
    b.add_argument("--n", type=positive_int, nargs="+", default=list(DEFAULT_NS),
                   help="numbers of drafts (default: %(default)s)")  # fmt: skip
    b.add_argument("--sampling", default="all",
                   help="draft law: one of spectheory.SAMPLINGS, or 'all' (default)")  # fmt: skip
    b.add_argument("--method", default=DEFAULT_METHOD,
                   help="solver: one of spectheory.METHODS (default: %(default)s)")  # fmt: skip
    b.add_argument("--vocab", type=nonnegative_int, default=49152,
                   help="also time --method on a synthetic batch at this V, or the dual where the "
                        "method cannot run there (0: skip; default %(default)s)",
                   )  # fmt: skip
    # left out of the namespace unless given, so that --vocab 0 can refuse them (they would be
    # ignored without a word)
    b.add_argument("--batch", type=positive_int, default=argparse.SUPPRESS,
                   help=f"rows of the synthetic batch (default {DEFAULT_BATCH})")  # fmt: skip
    b.add_argument("--seed", type=nonnegative_int, default=argparse.SUPPRESS,
                   help=f"seed of the synthetic batch (default {DEFAULT_SEED})")  # fmt: skip
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.set_defaults(run=run)
    return b


def run(args) -> int:
    import numpy as np

    from .._validate import check_choice
    from ..drafting import SAMPLINGS
    from ..solvers.ot_dual import METHODS, solve_bound

    given = [f"--{k}" for k in ("batch", "seed") if k in vars(args)]
    if not args.vocab and given:
        raise usage_error(f"{', '.join(given)} cannot be combined with --vocab 0 (--vocab 0 skips "
                          "the synthetic batch that --batch and --seed set)")  # fmt: skip
    args.batch = vars(args).get("batch", DEFAULT_BATCH)
    args.seed = vars(args).get("seed", DEFAULT_SEED)
    if args.vocab * args.batch > MAX_SYNTHETIC_VALUES:
        raise usage_error(
            f"--vocab x --batch must be at most 2**28 values (2 GiB per float64 array); got "
            f"{args.vocab} x {args.batch}"
        )
    check_choice(args.sampling, "--sampling", (*SAMPLINGS, "all"))
    check_choice(args.method, "--method", METHODS)
    exact = args.method in EXACT_METHODS
    if (args.target is None) != (args.draft is None):
        # one alone would be paired with the example's other vector, silently
        given, missing = ("--target", "--draft") if args.draft is None else ("--draft", "--target")
        raise usage_error(
            f"{given} needs {missing}: give both, or neither for the built-in example"
        )
    if args.target is None:
        args.target = ",".join(map(str, EXAMPLE_TARGET))
        args.draft = ",".join(map(str, EXAMPLE_DRAFT))
    target = numbers(args.target, "--target", exact, args.method)
    draft = numbers(args.draft, "--draft", exact, args.method)
    samplings = SAMPLINGS if args.sampling == "all" else (args.sampling,)
    support = int(np.count_nonzero(draft))
    rows, skipped = [], []
    for sampling in samplings:
        for n in args.n:
            if sampling != "iid" and n > support:
                skipped.append(f"{sampling} n={n}")
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
    if skipped:
        msg = (f"n drafts without replacement or greedy need n <= {support}, the draft's "
               f"support; skipped {', '.join(skipped)}")  # fmt: skip
        if not rows:
            raise usage_error(f"--n: nothing to compute: {msg}")
        log.warning(msg)
    result = {"target": args.target, "draft": args.draft, "bounds": rows}
    if args.vocab:
        result["full_vocabulary"] = _full_vocabulary_demo(args, samplings)
    if args.json:
        print(json.dumps(result, indent=2))
        return ExitCode.OK
    print(f"target p = {args.target}\ndraft  q = {args.draft}")
    print(f"{'sampling':<22}{'n':>3}  {'alpha*':>12}  {'certificate H':<14} exact")
    for r in rows:
        line = f"{r['sampling']:<22}{r['n']:>3}  {r['alpha_star']:>12.9f}  {r['H']!s:<14}"
        print(f"{line} {r['exact'] or ''}".rstrip())
    if args.vocab:
        _print_full_vocabulary(args, result["full_vocabulary"])
    return ExitCode.OK


def _print_full_vocabulary(args, fv):
    """The synthetic batch's table, naming the method that solved each row and why."""
    fallback = [r for r in fv if r["fallback_reason"]]
    everywhere = bool(fv) and len(fallback) == len(fv) and args.method != DEFAULT_METHOD
    label = (f" (method {DEFAULT_METHOD}: --method {args.method} cannot run at V = {args.vocab})"
             if everywhere else "")  # fmt: skip
    print(
        f"\nsynthetic batch{label}: B = {args.batch} rows, V = {args.vocab} "
        f"(softmax of N(0, 9) logits; draft logits + N(0, 1)), seed {args.seed}"
    )
    if everywhere:
        first = fallback[0]
        print(f"  e.g. {first['sampling']} n={first['n']}: {first['fallback_reason']}")
    print(f"{'sampling':<22}{'n':>3}  {'mean alpha*':>12}  {'ms per row':>10}  method")
    for r in fv:
        star = "*" if r["fallback_reason"] and not everywhere else ""
        print(f"{r['sampling']:<22}{r['n']:>3}  {r['mean']:>12.6f}  {r['ms_per_row']:>10.3f}  "
              f"{r['method']}{star}")  # fmt: skip
    if fallback and not everywhere:
        print(f"* the {DEFAULT_METHOD} solver was timed where --method {args.method} cannot run:")
        for r in fallback:
            print(f"  {r['sampling']} n={r['n']}: {r['fallback_reason']}")


def _full_vocabulary_demo(args, samplings):
    """Time ``--method`` on a random (B, V) batch, per law and n.

    Where the method refuses the size (the oracles are for small instances) or
    one row shows that the batch would take over :data:`MAX_ORACLE_SECONDS`,
    the dual solver is timed instead: each row names the ``method`` used and,
    then, the ``fallback_reason``.
    """
    import numpy as np

    from .._errors import InstanceTooLargeError
    from ..distributions import softmax
    from ..solvers.ot_dual import solve_bound

    V, B = args.vocab, args.batch
    rng = np.random.default_rng(args.seed)
    z = 3.0 * rng.standard_normal((B, V))
    p, q = softmax(z), softmax(z + rng.standard_normal((B, V)))
    out = []
    grid = [(s, n) for s in samplings for n in args.n if s == "iid" or n <= V]
    skipped = [f"{s} n={n}" for s in samplings for n in args.n if (s, n) not in grid]
    if skipped:  # else the batch's table lacked them without a word
        log.warning(f"synthetic batch: n drafts without replacement or greedy need n <= {V}, "
                    f"the vocabulary --vocab; skipped {', '.join(skipped)}")  # fmt: skip
    for sampling, n in progress(grid, args, "synthetic batch"):
        method, reason = args.method, None
        t0 = time.perf_counter()
        try:  # one row: compiles (dual) or probes the size and the time (the others)
            solve_bound(p[:1], q[:1], n, sampling, method)
        except InstanceTooLargeError as exc:
            method, reason = DEFAULT_METHOD, str(exc)
        else:
            row_s = time.perf_counter() - t0
            if method != DEFAULT_METHOD and row_s * B > MAX_ORACLE_SECONDS:
                method = DEFAULT_METHOD
                reason = (f"--method {args.method} took {row_s:.2g} s on one row: {B} rows "
                          f"would take over {MAX_ORACLE_SECONDS:g} s")  # fmt: skip
        if reason is not None:
            solve_bound(p[:1], q[:1], n, sampling, method)  # compile outside the timing
        t0 = time.perf_counter()
        res = solve_bound(p, q, n, sampling, method)
        ms = (time.perf_counter() - t0) / B * 1e3
        mean = float(res.value.mean())
        out.append({"sampling": sampling, "n": n, "mean": mean, "ms_per_row": ms,
                    "method": method, "fallback_reason": reason})  # fmt: skip
    return out
