"""``spectheory bound``: the optimal multi-draft acceptance alpha* with its certificate."""

from __future__ import annotations

import json
import time

from ._common import ExitCode, log, nonnegative_int, positive_int, progress, usage_error

HELP = "optimal multi-draft acceptance alpha* (OT dual) with its certificate"

#: docs/theory.md §8.1, instance A: the Traversal-verification paper's example.
EXAMPLE_TARGET = (0.3, 0.4, 0.3)
EXAMPLE_DRAFT = (0.6, 0.3, 0.1)
#: Numbers of drafts of the default table.
DEFAULT_NS = (1, 2, 3, 4)
#: Largest synthetic batch (values per array) of ``--vocab x --batch``.
MAX_SYNTHETIC_VALUES = 2**28
#: The solver of :func:`spectheory.solve_bound` used unless ``--method`` says otherwise.
DEFAULT_METHOD = "dual"


def numbers(text, name, exact):
    """Parse "0.3,0.4,0.3"; as exact decimals (Fractions) for the exact methods."""
    from fractions import Fraction

    import numpy as np

    try:
        if exact:
            return np.array([Fraction(x.strip()) for x in text.split(",")], dtype=object)
        return np.array([float(x) for x in text.split(",")])
    except (ValueError, ZeroDivisionError):
        raise usage_error(f"{name} must be comma-separated numbers; got {text!r}") from None


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
                   help="also time a synthetic batch at this V (0: skip; default %(default)s)",
                   )  # fmt: skip
    b.add_argument("--batch", type=positive_int, default=16,
                   help="rows of the synthetic batch (default %(default)s)")  # fmt: skip
    b.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the synthetic batch")
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")
    b.set_defaults(run=run)
    return b


def run(args) -> int:
    import numpy as np

    from .._validate import check_choice
    from ..drafting import SAMPLINGS
    from ..solvers.ot_dual import METHODS, solve_bound

    if args.vocab * args.batch > MAX_SYNTHETIC_VALUES:
        raise usage_error(
            f"--vocab x --batch must be at most 2**28 values (2 GiB per float64 array); got "
            f"{args.vocab} x {args.batch}"
        )
    check_choice(args.sampling, "--sampling", (*SAMPLINGS, "all"))
    check_choice(args.method, "--method", METHODS)
    exact = args.method in ("maxflow", "enumerate")
    if (args.target is None) != (args.draft is None):
        # one alone would be paired with the example's other vector, silently
        given, missing = ("--target", "--draft") if args.draft is None else ("--draft", "--target")
        raise usage_error(
            f"{given} needs {missing}: give both, or neither for the built-in example"
        )
    if args.target is None:
        args.target = ",".join(map(str, EXAMPLE_TARGET))
        args.draft = ",".join(map(str, EXAMPLE_DRAFT))
    target = numbers(args.target, "--target", exact)
    draft = numbers(args.draft, "--draft", exact)
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
        fv = result["full_vocabulary"]
        print(
            f"\nsynthetic batch: B = {args.batch} rows, V = {args.vocab} "
            f"(softmax of N(0, 9) logits; draft logits + N(0, 1)), seed {args.seed}"
        )
        print(f"{'sampling':<22}{'n':>3}  {'mean alpha*':>12}  {'ms per row':>10}")
        for r in fv:
            print(f"{r['sampling']:<22}{r['n']:>3}  {r['mean']:>12.6f}  {r['ms_per_row']:>10.3f}")
    return ExitCode.OK


def _full_vocabulary_demo(args, samplings):
    import numpy as np

    from ..distributions import softmax
    from ..solvers.ot_dual import solve_bound

    V, B = args.vocab, args.batch
    rng = np.random.default_rng(args.seed)
    z = 3.0 * rng.standard_normal((B, V))
    p, q = softmax(z), softmax(z + rng.standard_normal((B, V)))
    out = []
    grid = [(s, n) for s in samplings for n in args.n if s == "iid" or n <= V]
    for sampling, n in progress(grid, args, "synthetic batch"):
        solve_bound(p[:1], q[:1], n, sampling)  # compile outside the timing
        t0 = time.perf_counter()
        res = solve_bound(p, q, n, sampling)
        ms = (time.perf_counter() - t0) / B * 1e3
        mean = float(res.value.mean())
        out.append({"sampling": sampling, "n": n, "mean": mean, "ms_per_row": ms})
    return out
