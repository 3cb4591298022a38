"""The public-API fuzz catalogue of issue 22: input classes, calls and output checks.

Each :class:`Case` draws the arguments of one public function, argument by
argument, from a *good* pool (valid values, edge values included: tiny,
subnormal and zero probabilities, huge but allowed parameters) or a *bad*
pool (NaN, inf, negative, wrong types, bool, str, complex, 0-d and 3-D arrays,
huge integers, bad seeds).  A call must either return a value that passes
the case's check or raise a :class:`~spectheory.SpecTheoryError`; anything
else is a crash, a call past :data:`HANG_S` is a hang, a value returned for
an input with a bad argument is a silent accept, and a value failing the
check (or disagreeing with the exact oracle) is a wrong answer.

Used by ``tests/test_fuzz_api.py`` (hypothesis) and by
``benchmarks/fuzz_api_table.py`` (the before/after table).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

#: A call running longer than this (seconds) counts as a hang.
HANG_S = 20.0

NAN, INF = float("nan"), float("inf")

#: Values that are never a valid scalar parameter of the API.
BAD_SCALARS = [NAN, INF, -INF, -1, -1.5, "abc", 1j, None, [1, 2], {}, True, 10**30, -(10**30)]
#: Values that are never a valid seed.
BAD_SEEDS = ["abc", 1.5, -1, [1, 2], True, 1j, NAN]
#: Magnitudes of valid probabilities (before normalisation), edges included.
MAGNITUDES = [0.0, 5e-324, 1e-310, 1e-300, 1e-200, 1e-13, 0.3, 1.0, 7.0]


def _dist(draw_int, draw_choice, V):
    w = np.array([draw_choice(MAGNITUDES) for _ in range(V)])
    if not w.sum() > 0:
        w[draw_int(0, V - 1)] = 1.0
    return w / w.sum()


def _bad_dist(draw_int, draw_choice, V):
    kind = draw_choice(["nan", "inf", "neg", "sum", "0d", "3d", "str", "bool", "complex",
                        "ragged", "empty", "none"])
    p = np.full(V, 1.0 / V)
    if kind == "nan":
        p[draw_int(0, V - 1)] = NAN
    elif kind == "inf":
        p[draw_int(0, V - 1)] = INF
    elif kind == "neg":
        p[0], p[-1] = -0.5, p[-1] + 0.5
    elif kind == "sum":
        p = p * 1.5
    elif kind == "0d":
        return np.float64(1.0)
    elif kind == "3d":
        return np.full((1, 1, V), 1.0 / V)
    elif kind == "str":
        return ["0.5"] * V
    elif kind == "bool":
        return np.ones(V, dtype=bool)
    elif kind == "complex":
        return p.astype(complex)
    elif kind == "ragged":
        return [[0.5, 0.5], [1.0]]
    elif kind == "empty":
        return np.zeros(0)
    else:
        return None
    return p


@dataclass
class Draw:
    """The argument source: ``integer(lo, hi)`` and ``choice(seq)`` from hypothesis or numpy."""

    integer: object
    choice: object

    def dist(self, V, bad):
        return _bad_dist(self.integer, self.choice, V) if bad else _dist(
            self.integer, self.choice, V)

    def flag(self, p_bad=0.25):
        """True (use the bad pool) with probability about ``p_bad``."""
        return self.integer(0, 99) < 100 * p_bad


class Case:
    """One public function: ``args(draw) -> (args, kwargs, bad)`` and ``check(result, ...)``."""

    name = ""

    def args(self, d: Draw):
        raise NotImplementedError

    def call(self, args, kwargs):
        raise NotImplementedError

    def check(self, result, args, kwargs):
        """Return None if ``result`` is a valid answer, else a description of what is wrong."""
        raise NotImplementedError


def _finite_prob(x, tol=1e-12):
    x = np.asarray(x, dtype=float)
    return bool(np.all(np.isfinite(x)) and np.all(x >= -tol) and np.all(x <= 1 + tol))


class Bound(Case):
    name = "bound"

    def args(self, d):
        bad = {k: d.flag(0.15) for k in ("target", "draft", "n", "sampling")}
        V = d.integer(2, 5)
        p, q = d.dist(V, bad["target"]), d.dist(V, bad["draft"])
        n = d.choice([*BAD_SCALARS, 0]) if bad["n"] else d.choice([1, 2, 3, 10**9, 2**63])
        s = d.choice(["bogus", 1, None]) if bad["sampling"] else d.choice(
            ["iid", "without_replacement", "greedy"])
        return (p, q, n, s), {}, any(bad.values())

    def call(self, args, kwargs):
        from spectheory import bound

        return bound(*args)

    def check(self, result, args, kwargs):
        if not isinstance(result, float) or not _finite_prob(result):
            return f"value {result!r} is not a probability"
        p, q, n, s = args
        if n <= 3:
            from spectheory import solve_bound

            exact = solve_bound(p, q, n, s, "maxflow").value
            if abs(exact - result) > 1e-9:  # the dual's documented error is 1e-12
                return f"bound {result!r} but max-flow gives {exact!r}"
        return None


class Softmax(Case):
    name = "softmax"

    def args(self, d):
        bad = d.flag(0.4)
        V = d.integer(1, 5)
        if bad:
            z = d.choice([[NAN, 1.0], [INF, 0.0], [True, False], ["a", "b"], [1j, 2.0], 3.0,
                          np.zeros((2, 2, 2)), [[1.0, 2.0], [3.0]], [-INF, -INF], []])
        else:
            z = [d.choice([-INF, -1e308, -50.0, 0.0, 1.0, 1e300, 1.7e308]) for _ in range(V)]
            if all(v == -INF for v in z):
                z[0] = 0.0
        return (z,), {}, bad

    def call(self, args, kwargs):
        from spectheory import softmax

        return softmax(*args)

    def check(self, result, args, kwargs):
        if not (_finite_prob(result) and abs(float(np.sum(result)) - 1) <= 1e-12):
            return f"softmax returned {result!r}"
        return None


class ProcessLogits(Case):
    name = "process_logits"

    def args(self, d):
        bad = {k: d.flag(0.15) for k in ("logits", "temperature", "top_k", "top_p")}
        V = d.integer(1, 5)
        if bad["logits"]:
            z = d.choice([[NAN, 1.0], [INF, 0.0], [True], ["a"], [1j], 3.0, np.zeros((1, 1, 2))])
        else:
            z = [d.choice([-INF, -1e308, -3.0, 0.0, 2.5, 1e308]) for _ in range(V)]
            if all(v == -INF for v in z):
                z[0] = 0.0
        t = d.choice([v for v in BAD_SCALARS if v != 10**30] + [10**400]) if bad[
            "temperature"] else d.choice([0, 1e-310, 5e-324, 0.01, 1.0, 1e300, 10**30])
        k = d.choice([0, -1, 1.5, True, "2"]) if bad["top_k"] else d.choice([None, 1, 2, 10**30])
        tp = d.choice([0.0, 1.5, NAN, True, "x"]) if bad["top_p"] else d.choice(
            [None, 1e-300, 0.5, 1.0])
        return (z,), {"temperature": t, "top_k": k, "top_p": tp}, any(bad.values())

    def call(self, args, kwargs):
        from spectheory import process_logits

        return process_logits(*args, **kwargs)

    def check(self, result, args, kwargs):
        if not (_finite_prob(result) and abs(float(np.sum(result)) - 1) <= 1e-12):
            return f"process_logits returned {result!r}"
        return None


class DraftSetLaw(Case):
    name = "draft_set_law"

    def args(self, d):
        bad = {k: d.flag(0.15) for k in ("draft", "n")}
        V = d.integer(1, 5)
        q = d.dist(V, bad["draft"])
        n = d.choice([*BAD_SCALARS, 0]) if bad["n"] else d.choice([1, 2, 3, 10**6])
        s = d.choice(["iid", "without_replacement", "greedy"])
        return (q, n, s), {}, any(bad.values())

    def call(self, args, kwargs):
        from spectheory import draft_set_law

        return draft_set_law(*args)

    def check(self, result, args, kwargs):
        total = float(sum(result.values()))
        if not (abs(total - 1) <= 1e-12 and all(_finite_prob(v) for v in result.values())):
            return f"draft_set_law sums to {total!r}"
        return None


class DraftSetProbability(Case):
    name = "draft_set_probability"

    def args(self, d):
        bad = d.flag(0.4)
        V = d.integer(2, 5)
        q = d.dist(V, False)
        H = d.choice([[-1], [1.7], [[0], [1]], [V], ["0"], [True], None]) if bad else [
            i for i in range(V) if d.integer(0, 1)]
        n = d.choice([1, 2, 3])
        s = d.choice(["iid", "without_replacement", "greedy"])
        return (q, H, n, s), {}, bad

    def call(self, args, kwargs):
        from spectheory import draft_set_probability

        return draft_set_probability(*args)

    def check(self, result, args, kwargs):
        return None if _finite_prob(result) else f"Q(H) = {result!r}"


class SampleDrafts(Case):
    name = "sample_drafts"

    def args(self, d):
        bad = {k: d.flag(0.2) for k in ("draft", "rng")}
        V = d.integer(2, 5)
        q = d.dist(V, bad["draft"])
        rng = d.choice(BAD_SEEDS) if bad["rng"] else d.choice([None, 0, 2**64, np.uint8(3)])
        return (q, d.choice([1, 2])), {"sampling": "iid", "rng": rng}, any(bad.values())

    def call(self, args, kwargs):
        from spectheory import sample_drafts

        return sample_drafts(*args, **kwargs)

    def check(self, result, args, kwargs):
        q, n = args
        ok = result.shape == (n,) and all(0 <= t < len(q) and q[t] > 0 for t in result)
        return None if ok else f"drafts {result!r}"


class OptimalGamma(Case):
    name = "optimal_gamma"

    def args(self, d):
        bad = {k: d.flag(0.15) for k in ("alpha", "c", "gamma_max")}
        a = d.choice([NAN, 1.5, -0.1, "x", 1j]) if bad["alpha"] else d.choice(
            [0.0, 5e-324, 0.5, 0.999999, 1.0])
        c = d.choice([NAN, -1.0, INF, "x"]) if bad["c"] else d.choice([0.0, 1e-300, 0.05, 10.0])
        g = d.choice([0, -1, 1.5, True, 10**12]) if bad["gamma_max"] else d.choice(
            [1, 50, 1000])
        m = d.choice(["marginal", "lambertw", "enumerate"])
        if g == 10**12 and m == "lambertw":  # within lambertw's documented limit (2**53)
            bad["gamma_max"] = False
        return (a, c), {"gamma_max": g, "method": m}, any(bad.values())

    def call(self, args, kwargs):
        from spectheory.solvers.speedup import optimal_gamma

        return optimal_gamma(*args, **kwargs)

    def check(self, result, args, kwargs):
        g = result.gamma
        if not (0 <= g <= kwargs["gamma_max"] and math.isfinite(result.speedup)):
            return f"gamma {g!r}, speedup {result.speedup!r}"
        return None


class FitLogLinear(Case):
    name = "fit_log_linear"

    def args(self, d):
        bad = {k: d.flag(0.15) for k in ("x", "seed", "n_boot")}
        x = d.choice([["1", "10", "100"], [True, False, True], [1j, 10, 100],
                      [1.0, 1.0 + 2.3e-16, 1.0 + 4.5e-16], [0, 1, 2]]) if bad["x"] else d.choice(
            [[1, 10, 100], [1e-300, 1.0, 1e300], [2.0, 3.0, 5.0, 7.0]])
        y = list(range(len(x)))
        seed = d.choice(BAD_SEEDS) if bad["seed"] else d.choice([0, None, 12345])
        nb = d.choice([0, -5, 10**9, 1.5]) if bad["n_boot"] else d.choice([1, 20])
        return (x, y), {"seed": seed, "n_boot": nb}, any(bad.values())

    def call(self, args, kwargs):
        from spectheory import fit_log_linear

        return fit_log_linear(*args, **kwargs)

    def check(self, result, args, kwargs):
        ok = math.isfinite(result.slope) and math.isfinite(result.intercept)
        return None if ok else f"fit {result.slope!r}, {result.intercept!r}"


class DraftChain(Case):
    name = "trees.draft_chain"

    def args(self, d):
        bad = d.flag(0.4)
        g = d.choice([0, -1, 1.5, "3", True, 10**9]) if bad else d.choice([1, 3, 8])
        return (g,), {}, bad

    def call(self, args, kwargs):
        from spectheory.coins import RandomCoins
        from spectheory.trees import draft_chain

        return draft_chain(lambda prefix: [0.25, 0.75], args[0], RandomCoins(0))

    def check(self, result, args, kwargs):
        return None if result.size == args[0] + 1 else f"{result.size} nodes"


CASES = [Bound(), Softmax(), ProcessLogits(), DraftSetLaw(), DraftSetProbability(),
         SampleDrafts(), OptimalGamma(), FitLogLinear(), DraftChain()]

OUTCOMES = ("valid", "clear error", "crash", "hang", "silent accept", "wrong answer")


def run_case(case: Case, args, kwargs, bad: bool):
    """Call once and classify: returns ``(outcome, detail)`` with outcome in :data:`OUTCOMES`."""
    import warnings

    from spectheory import SpecTheoryError

    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # warnings are not the subject here
            result = case.call(args, kwargs)
    except SpecTheoryError as exc:
        out = ("clear error", str(exc))
    except Exception as exc:  # classifying foreign exceptions is the point
        out = ("crash", f"{type(exc).__name__}: {exc}")
    else:
        if bad:
            out = ("silent accept", repr(result)[:120])
        else:
            try:
                problem = case.check(result, args, kwargs)
            except Exception as exc:
                problem = f"check failed: {type(exc).__name__}: {exc}"
            out = ("wrong answer", problem) if problem else ("valid", "")
    if time.perf_counter() - start > HANG_S:
        out = ("hang", f"{time.perf_counter() - start:.1f} s")
    return out
