"""``spectheory audit FILE``: test an engine's logged samples against its logged targets.

``FILE`` is a log in the format of :mod:`spectheory.sim.samplelog` (``.npz``,
``.safetensors`` or ``.jsonl``).  Prints the verdict, the tests' p-values,
the most suspicious positions and the acceptance table (``--csv`` writes the
table).  Exit code 0: consistent with lossless; 3: lossy at the stated
false-alarm rate; 2: a bad log (the message names the row).
"""

from __future__ import annotations

import json

from ._common import (
    ExitCode,
    existing_path,
    given_kwargs,
    json_safe,
    nonnegative_int,
    positive_int,
    probability,
    signature_options,
)

HELP = "audit an engine's logged samples (npz/safetensors/JSON lines) for losslessness"


def add_parser(subparsers):
    """Register ``spectheory audit``."""
    a = subparsers.add_parser(
        "audit",
        help=HELP,
        description=(
            "Tests whether the logged outputs follow the logged targets: impossible outputs, "
            "the pooled conditional randomised PIT, per-position G test where positions "
            "repeat, acceptance above the optimal bound. Exit code 0: consistent with lossless; "
            "3: lossy at the stated false-alarm rate."
        ),
    )
    a.add_argument("file", type=existing_path, help="the log (.npz, .safetensors or .jsonl)")
    signature_options(a, "spectheory.sim.audit:check_lossless_from_samples", {
        "alpha": ("--alpha", probability, "false-alarm rate"),
        "sampling": ("--sampling", str, "draft law, for the acceptance bound"),
        "top": ("--top", positive_int, "suspicious positions listed"),
        "min_repeats": ("--min-repeats", positive_int, "fewest repeats tested per position"),
    })  # fmt: skip
    a.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the PIT's uniforms (default 0)")  # fmt: skip
    a.add_argument("--csv", default=None, help="write the acceptance table to this CSV file")
    a.add_argument("--json", action="store_true", help="print JSON")
    a.set_defaults(run=run)
    return a


def run(args) -> int:
    from ..sim.audit import check_lossless_from_samples
    from ..sim.log_metrics import acceptance_table, write_csv
    from ..sim.samplelog import load_log

    log = load_log(args.file)
    kwargs = given_kwargs(args, ("alpha", "sampling", "top", "min_repeats"))
    r = check_lossless_from_samples(log, rng=args.seed, **kwargs)
    table = acceptance_table(log)
    if args.csv:
        write_csv(table, args.csv)
    if args.json:
        # NaN (no rows with drafts, no depth reached) as null: json.dumps writes NaN, not JSON
        # the acceptance-above-the-bound test (rows with drafts) and the power, as in
        # ``spectheory check --json``; "acceptance" stays the table (confidence 0.95)
        print(json.dumps(json_safe({
            "file": args.file, "lossy": r.lossy, "verdict": r.verdict, "p_value": r.p_value,
            "alpha": r.alpha, "sampling": r.sampling, "seed": args.seed, "rows": r.rows,
            "impossible_outputs": r.impossible_outputs, "accepted": r.acceptance,
            "accepted_interval": list(r.acceptance_interval),
            "accepted_interval_confidence": 1.0 - r.alpha, "bound": r.bound,
            "bound_rows": r.bound_samples, "exceeds_bound": r.exceeds_bound,
            "excess_p_value": r.excess_p_value, "detectable_tv": r.detectable_tv,
            "tests": r.tests, "suspicious": list(r.suspicious), "acceptance": table,
        }), indent=2, allow_nan=False))  # fmt: skip
    else:
        print(f"{args.file}: {r.rows} rows, vocabulary {log.vocab}")
        print(f"verdict: {r.verdict} (false-alarm rate {r.alpha:g})")
        if r.bound_samples:
            lo, hi = r.acceptance_interval
            print(f"  output among the drafts: {r.acceptance:.4f} in [{lo:.4f}, {hi:.4f}] "
                  f"over {r.bound_samples} rows with drafts, optimal bound {r.bound:.4f} "
                  f"(sampling={r.sampling})")  # fmt: skip
        for name, p in sorted(r.tests.items(), key=lambda kv: kv[1])[:10]:
            print(f"  {name:<16} p = {p:.3g}")
        if r.suspicious:
            print("most suspicious positions (Holm-adjusted p):")
            for s in r.suspicious:
                print(f"  row {s['row']:>7} x{s['repeats']:<6} {s['test']:<20} "
                      f"{s['adjusted_p_value']:.3g}")  # fmt: skip
        print("acceptance:")
        for t in table:
            idx = "" if t["index"] < 0 else f" {t['index']}"
            print(f"  {t['quantity']}{idx}: {t['value']:.4f} [{t['low']:.4f}, {t['high']:.4f}] "
                  f"({t['count']}/{t['total']})")  # fmt: skip
    return ExitCode.CHECK_FAILED if r.lossy else ExitCode.OK
