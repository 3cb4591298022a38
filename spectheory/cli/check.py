"""``spectheory check VERIFIER``: test a verifier's losslessness by sampling.

``VERIFIER`` is a registry name, ``package.module:function`` (the current
folder is importable, as with ``python -m``) or ``bug:NAME`` (the bug zoo).
Exit code 0: consistent with lossless; 3: lossy at the stated false-alarm rate.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys

from .._errors import InvalidParameterError
from ._common import (
    ExitCode,
    existing_path,
    given_kwargs,
    id_list,
    json_safe,
    nonnegative_float,
    positive_int,
    probability,
    signature_options,
    usage_error,
)
from ._recording import FIELDS as RECORDING_FIELDS
from ._recording import add_recording_options, load_or_record

HELP = "test a verifier's losslessness (registry name, module:function or bug:NAME)"

#: The trace draft checked against unless ``--on`` names another.
DEFAULT_ON = "exit:25"
#: Informative trace positions chosen by rule unless ``--rows``/``--positions`` say otherwise.
DEFAULT_ROWS = 4
#: Options that only apply to trace positions (not to ``--target``/``--draft``).
_TRACE_ONLY = ("trace", "on", "positions", "rows", "check_temperature")


def add_parser(subparsers):
    """Register ``spectheory check``."""
    ck = subparsers.add_parser(
        "check",
        help=HELP,
        description=(
            "Samples the verifier many times per row and tests its outputs against the target "
            "(G test per row, pooled randomised PIT, acceptance above the optimal bound). "
            "Rows: --target/--draft numbers, or real trace positions (a saved --trace, else the "
            "trace of the recording options, recorded or reused). Exit code 0: consistent with "
            "lossless; 3: lossy at the stated false-alarm rate."
        ),
    )
    ck.add_argument("verifier", help="registry name, 'package.module:function' or 'bug:NAME'")
    ck.add_argument("--n", type=positive_int, default=None,
                    help="number of drafts (default: the bug's, else check_lossless's)",
                    )  # fmt: skip
    ck.add_argument("--sampling", default=None,
                    help="draft law (default: every law the verifier claims, each at alpha / laws)",
                    )  # fmt: skip
    ck.add_argument("--target", default=None, help="p, comma-separated (instead of a trace)")
    ck.add_argument("--draft", default=None, help="q, comma-separated (with --target; default p)")
    ck.add_argument("--trace", type=existing_path, default=argparse_suppress(),
                    help="a saved trace file")  # fmt: skip
    add_recording_options(ck)
    ck.add_argument("--on", default=argparse_suppress(),
                    help=f"the trace's draft to check against (default {DEFAULT_ON})")  # fmt: skip
    ck.add_argument("--positions", type=id_list, default=argparse_suppress(),
                    help="trace positions, e.g. '0-3,9'")  # fmt: skip
    ck.add_argument("--rows", type=positive_int, default=argparse_suppress(),
                    help=f"informative positions chosen by rule (default {DEFAULT_ROWS})",
                    )  # fmt: skip
    signature_options(ck, "spectheory.sim.check:check_lossless", {
        "temperature": ("--check-temperature", nonnegative_float,
                        "temperature applied to the trace's logits", "check_temperature"),
        "trials": ("--trials", positive_int, "trials per row"),
        "alpha": ("--alpha", probability, "false-alarm rate"),
    })  # fmt: skip
    # --seed (a recording option) also seeds the checker, as it always has
    ck.add_argument("--json", action="store_true", help="print JSON")
    ck.set_defaults(run=run)
    return ck


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


@contextlib.contextmanager
def _cwd_importable():
    """The current folder first on ``sys.path`` while importing, as ``python -m`` does."""
    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def load_callable(spec):
    """``"package.module:function"`` -> ``(function, None, None)``; ``"bug:NAME"`` -> zoo entry.

    Raises
    ------
    InvalidParameterError
        Unknown bug, a module or attribute that cannot be imported, an object
        that is not callable or cannot take a verifier's four arguments.
    """
    import importlib
    import inspect

    from ..sim.bugzoo import BUGS

    if spec.startswith("bug:"):
        if spec[4:] not in BUGS:
            raise usage_error(f"unknown bug {spec[4:]!r}; known: {', '.join(BUGS)}")
        return BUGS[spec[4:]]
    module, _, name = spec.partition(":")
    try:
        with _cwd_importable():
            fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise usage_error(f"verifier {spec!r} cannot be imported: {exc}") from None
    if not callable(fn):
        raise usage_error(f"verifier {spec!r} is not a function; got {type(fn).__name__}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have no signature: let the call decide
        return fn, None, None
    # the coins protocol takes the draft law as a keyword: fn(p, q, drafts, coins, *, sampling)
    keyword = {"sampling": None} if "sampling" in sig.parameters else {}
    try:
        sig.bind(None, None, None, None, **keyword)
    except TypeError:
        raise usage_error(
            f"verifier {spec!r} must take four arguments, (target, draft, drafts, rng) or "
            f"(p, q, drafts, coins); its signature is {sig}"
        ) from None
    return fn, None, None


def _resolve_verifier(args):
    """(verifier, n or None, law or None) from the positional argument and --n/--sampling."""
    from ..verifiers import REGISTRY

    n, law = args.n, args.sampling
    if args.verifier in REGISTRY:
        return args.verifier, n, law  # None: every law it claims
    if ":" in args.verifier:
        verifier, n0, law0 = load_callable(args.verifier)
        return verifier, n if n is not None else n0, law or law0
    raise usage_error(
        f"verifier must be a registry name ({', '.join(REGISTRY)}), 'module:function' or "
        f"'bug:NAME'; got {args.verifier!r}"
    )


def _check_rows(args):
    """Which rows: --target/--draft numbers, or trace positions; refuse mixed options."""
    given = vars(args)
    # None when not given: an empty value (an unset shell variable) is refused by the parser
    # of numbers, not read as "no target" (which recorded the model) or "q = p"
    if args.draft is not None and args.target is None:
        raise usage_error("--draft needs --target (a trace has its own drafts; see --on)")
    if args.target is not None:
        mixed = [o for o in (*_TRACE_ONLY, *RECORDING_FIELDS) if o in given and o != "seed"]
        if mixed:
            flags = ", ".join("--" + o.replace("_", "-") for o in mixed)
            raise usage_error(f"{flags} cannot be combined with --target (they select trace rows)")
    if "positions" in given and "rows" in given:  # --rows would be ignored without a word
        raise usage_error("--rows cannot be combined with --positions (both choose the "
                          "trace positions: --rows by rule, --positions by number)")


def run(args) -> int:
    import inspect

    import numpy as np

    from .._validate import check_choice
    from ..drafting import SAMPLINGS
    from ..sim.check import check_lossless
    from .bound import numbers

    _check_rows(args)
    verifier, n, law = _resolve_verifier(args)
    defaults = inspect.signature(check_lossless).parameters
    n = defaults["n"].default if n is None else n
    law = law or defaults["sampling"].default  # None: the verifier's own default
    common = dict(n=n, **given_kwargs(args, ("trials", "alpha")))
    if law is not None:
        common["sampling"] = check_choice(law, "--sampling", SAMPLINGS)
    if "seed" in vars(args):  # the checker's seed keyword: rng (seed in older versions)
        common["rng" if "rng" in defaults else "seed"] = args.seed
    if args.target is not None:
        q_text = args.target if args.draft is None else args.draft
        where = f"p = {args.target}, q = {q_text}"
        target = numbers(args.target, "--target", False)
        draft = numbers(q_text, "--draft", False)
        report = check_lossless(verifier, target, draft, **common)
    else:
        from ..distributions import process_logits
        from ..report import informative_rows

        trace = load_or_record(args)
        on = vars(args).get("on", DEFAULT_ON)
        if on not in trace.drafts:
            got = repr(on) if "on" in vars(args) else f"the default {on!r}"  # not given: say so
            raise usage_error(f"--on must be one of the trace's drafts {trace.drafts}; got {got}")
        temperature = vars(args).get("check_temperature", defaults["temperature"].default)
        if "positions" in vars(args):
            rows = np.array(args.positions)
            bad = rows[rows >= trace.num_positions]
            if bad.size:
                raise usage_error(
                    f"--positions must be in 0-{trace.num_positions - 1} (the trace's positions); "
                    f"got {bad.tolist()}"
                )
        else:
            p = process_logits(trace.target_logits.astype(np.float64), temperature)
            q = process_logits(trace.draft_logits(on), temperature)
            from ..verifiers._api import laws_to_check

            _, laws = laws_to_check(verifier, n, common.get("sampling"))
            # Distinct drafts need n tokens in the draft's support at the chosen rows.
            need = n if {"without_replacement", "greedy"} & set(laws) else 1
            rows = informative_rows(p, q, vars(args).get("rows", DEFAULT_ROWS), min_support=need)
            if rows.size == 0:
                raise usage_error(
                    f"no position of the trace has an overlap sum(min(p, q)) in (0.1, 0.9) with "
                    f"draft {on} at temperature {temperature:g}"
                    + (f" and at least {need} tokens in the draft's support" if need > 1 else "")
                    + " (a draft equal to the target, or disjoint from it, tells nothing): "
                    "choose rows with --positions"
                )
        where = f"trace positions {rows.tolist()} with draft {on}"
        try:
            report = check_lossless(verifier, trace, on, rows=rows, temperature=temperature,
                                    **common)  # fmt: skip
        except InvalidParameterError as exc:
            # The library numbers the rows it was given; name the trace positions instead.
            m = re.search(r"\brow (\d+)\b", str(exc))
            if m is None or int(m.group(1)) >= rows.size:
                raise
            raise InvalidParameterError(
                f"{exc} (row {m.group(1)} is trace position {int(rows[int(m.group(1))])})"
            ) from None
    if args.json:
        fields = ("verifier", "lossy", "verdict", "p_value", "alpha", "impossible_outputs",
                  "acceptance", "acceptance_interval", "bound", "exceeds_bound", "detectable_tv",
                  "rows", "trials")  # fmt: skip
        by_law = getattr(report, "by_law", None) or {}
        out = {k: getattr(report, k) for k in fields}
        # the acceptance interval is Wilson's at 1 - (its law's alpha), not 95%
        out["acceptance_interval_confidence"] = 1.0 - _interval_alpha(report, by_law)
        out["sampling"] = getattr(report, "sampling", None)
        if by_law:  # every law checked, each at alpha / laws
            out["by_law"] = {
                law: {k: getattr(r, k) for k in fields[1:]}
                | {"acceptance_interval_confidence": 1.0 - _interval_alpha(r, {})}
                for law, r in by_law.items()
            }
        # detectable_tv is infinite where no bias can show (a one-token target): null, not
        # Infinity, which is not JSON
        print(json.dumps(json_safe(out), indent=2, default=float))
    else:
        law = law or " and ".join(getattr(report, "by_law", None) or ()) or getattr(
            report, "sampling", None) or "default draft law"  # fmt: skip
        print(f"{report.verifier} (n = {n}, {law}) on {where}:")
        print(f"  {report.verdict}")
        by_law = getattr(report, "by_law", None) or {}
        print(f"  p-value {report.p_value:.3g} (false-alarm rate {report.alpha:g}"
              + (f", {report.alpha / len(by_law):g} per law" if by_law else "") + ")")
        for name, r in by_law.items() or [(None, report)]:  # one line per law checked
            lo, hi = r.acceptance_interval
            print(("  " + name + ": " if name else "  ") + (f"p-value {r.p_value:.3g}, " if name
                  else "") + f"acceptance {r.acceptance:.4f} in [{lo:.4f}, {hi:.4f}] (Wilson "
                  f"interval, confidence 1 - {_interval_alpha(r, {}):g}), bound "
                  f"{r.bound:.4f}")  # fmt: skip
        if math.isfinite(report.detectable_tv):  # inf: no bias can show (one token, too few)
            print(f"  detects a TV bias >= {report.detectable_tv:.3f} on one row with prob. 0.99")
    return ExitCode.CHECK_FAILED if report.lossy else ExitCode.OK


def _interval_alpha(report, by_law) -> float:
    """``a`` such that ``report.acceptance_interval`` is Wilson's at confidence ``1 - a``.

    ``a`` is the alpha of the interval's law: a report combining several laws
    carries the interval of one of them, each checked at ``alpha / laws``
    (:func:`spectheory.sim.check.check_lossless`).
    """
    return report.alpha / len(by_law) if by_law else report.alpha
