"""The ``spectheory`` command line.

Exit codes: 0 success; 2 bad input or usage (the message names the argument);
1 an unexpected failure.
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

#: THEORY.md 8.1, instance A: the Traversal-verification paper's example.
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
            "Without --target/--draft it runs the built-in example (THEORY.md 8.1)."
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
    return ap


def main(argv=None) -> int:
    """Entry point of the ``spectheory`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except SpecTheoryError as exc:
        print(f"spectheory {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
