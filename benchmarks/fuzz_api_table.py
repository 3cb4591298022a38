"""The issue-22 table: inputs tried, clear errors, crashes, hangs, silent accepts, wrong answers.

Draws ``--per-case`` random argument sets for every case of
``tests/fuzz_catalogue.py`` (seeded, so two runs, or two checkouts, see the
same inputs), calls the public function, and prints one row per function and
a total.  To compare with an older checkout, point ``--source`` at its tree::

    python benchmarks/fuzz_api_table.py                     # this checkout
    git archive 2136825 | tar -x -C /tmp/before
    python benchmarks/fuzz_api_table.py --source /tmp/before  # before issue 22

The catalogue itself is always read from this checkout.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-case", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--source", default=str(ROOT), help="tree whose spectheory is called")
    ap.add_argument("--examples", type=int, default=0, help="print this many failures per case")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # tests.fuzz_catalogue
    sys.path.insert(0, a.source)  # spectheory from the tree under test
    from tests.fuzz_catalogue import CASES, OUTCOMES, Draw, run_case

    rng = np.random.default_rng(a.seed)
    draw = Draw(integer=lambda lo, hi: int(rng.integers(lo, hi + 1)),
                choice=lambda seq: seq[int(rng.integers(len(seq)))])
    total = collections.Counter()
    print(f"{'function':24s} {'tried':>6s} " + " ".join(f"{o:>13s}" for o in OUTCOMES))
    for case in CASES:
        counts = collections.Counter()
        shown = 0
        for _ in range(a.per_case):
            args, kwargs, bad = case.args(draw)
            outcome, detail = run_case(case, args, kwargs, bad)
            counts[outcome] += 1
            if outcome not in ("valid", "clear error") and shown < a.examples:
                shown += 1
                print(f"  {case.name}: {outcome}: {detail[:150]}  <- {args!r:.150} {kwargs!r:.80}")
        total.update(counts)
        print(f"{case.name:24s} {a.per_case:6d} " + " ".join(f"{counts[o]:13d}" for o in OUTCOMES))
    n = a.per_case * len(CASES)
    print(f"{'total':24s} {n:6d} " + " ".join(f"{total[o]:13d}" for o in OUTCOMES))


if __name__ == "__main__":
    main()
