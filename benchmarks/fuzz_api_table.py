"""The issue-22 table: inputs tried, clear errors, crashes, hangs, silent accepts, wrong answers.

Draws ``--per-case`` random argument sets for every case of
``tests/fuzz_catalogue.py`` (seeded, so two runs, or two checkouts, see the
same inputs), calls the public function, and prints one row per function and
a total.  To compare with an older checkout, point ``--source`` at its tree::

    python benchmarks/fuzz_api_table.py                     # this checkout
    git archive 2136825 | tar -x -C /tmp/before
    (ulimit -v 6000000; python benchmarks/fuzz_api_table.py --source /tmp/before)

The memory cap matters for old trees: there ``fit_log_linear(n_boot=10**9)``
allocates a 24 GB index table (counted as a crash, MemoryError, under the cap).
A call past ``HANG_S`` is stopped by an alarm (Python-level loops) and counted
as a hang.  The catalogue itself is always read from this checkout.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import pathlib
import signal
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


class _Hang(BaseException):
    """Raised by the alarm: a BaseException, so the catalogue's ``except Exception`` misses it."""


def _alarm(signum, frame):
    raise _Hang


def timed(run_case, limit):
    """``run_case`` under a wall-clock alarm of ``limit`` seconds (Python-level loops stop)."""

    def run(case, args, kwargs, bad):
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            return run_case(case, args, kwargs, bad)
        except _Hang:
            return "hang", f"stopped after {limit} s"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-case", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--source", default=str(ROOT), help="tree whose spectheory is called")
    ap.add_argument("--examples", type=int, default=0, help="print this many failures per case")
    a = ap.parse_args(argv)
    sys.path.insert(0, a.source)  # spectheory from the tree under test
    # The catalogue from this checkout, by path (an older tree has its own tests/).
    spec = importlib.util.spec_from_file_location("fuzz_catalogue", ROOT / "tests" /
                                                  "fuzz_catalogue.py")
    cat = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_catalogue"] = cat  # dataclasses look their module up
    spec.loader.exec_module(cat)
    CASES, OUTCOMES, Draw = cat.CASES, cat.OUTCOMES, cat.Draw
    signal.signal(signal.SIGALRM, _alarm)
    run_case = timed(cat.run_case, cat.HANG_S)
    import spectheory

    print(f"spectheory from {pathlib.Path(spectheory.__file__).parent}")

    # Warm-up: numba compiles on first calls (tens of seconds in a fresh tree);
    # that is not a hang.  These calls are not counted.
    warm = np.random.default_rng(a.seed + 1)
    wdraw = Draw(integer=lambda lo, hi: int(warm.integers(lo, hi + 1)),
                 choice=lambda seq: seq[int(warm.integers(len(seq)))])
    for case in CASES:
        for _ in range(10):
            run_case(case, *case.args(wdraw))
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
