"""Mutation testing of spectheory's core modules with a catalogue of realistic mutants.

Usage (from the repository root; not part of CI)::

    python tools/mutation/run.py --list
    python tools/mutation/run.py --module verifiers/rrs.py
    python tools/mutation/run.py --id k-kseq-one-coin --id t-kseq-coin-twice
    python tools/mutation/run.py --jobs 2 --json mutation.json      # everything

Each mutant of tools/mutation/catalogue.py is applied, one at a time, to a
scratch copy of ``spectheory/`` and ``tests/`` (the working tree is never
touched), and the tests that cover its module run there under the ``ci``
hypothesis profile with ``-x``, at ``nice 10``.  A mutant is *killed* when those
tests fail (or time out), *survives* when they pass.  First the same test
selections run unmutated (the baseline): a selection that fails unmutated
makes its mutants "unknown", never "killed".  The score is killed /
(non-equivalent mutants with a verdict); equivalent mutants (their reason is
in the catalogue) are run and reported but not scored.

Why not mutmut or cosmic-ray (both on PyPI: mutmut 3.8.1, cosmic-ray 8.7.0):
both generate every operator mutant of every line (thousands for these
modules) and mutmut first runs the whole test suite to map coverage; at
20 s to 2 min per covering test run on two shared cores that is days.  A
catalogue of bug classes seen in real systems is both cheaper and a better
measure of what the tests are for.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalogue import MUTANTS  # noqa: E402

COPY = ("spectheory", "tests", "pyproject.toml")


def make_scratch(base):
    """A copy of the package and the tests (no caches) in a fresh folder under ``base``."""
    work = Path(tempfile.mkdtemp(prefix="mutation-", dir=base))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=ignore)
        else:
            shutil.copy2(src, work / name)
    env = scratch_env(work)
    found = subprocess.run(
        [sys.executable, "-c", "import spectheory; print(spectheory.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not found.startswith(str(work)):
        raise SystemExit(f"the scratch copy does not shadow the installed package: {found}")
    return work


def scratch_env(work):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(work) + os.pathsep + env.get("PYTHONPATH", "")
    env["SPECTHEORY_HYPOTHESIS_PROFILE"] = "ci"
    env["NUMBA_CACHE_DIR"] = str(work / ".numba_cache")
    env.pop("TRITON_INTERPRET", None)
    return env


def run_tests(work, tests, timeout):
    """(status, seconds, tail): 'pass', 'fail' or 'timeout'."""
    cmd = [
        "nice",
        "-n",
        "10",
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "--no-header",
        *tests,
    ]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, cwd=work, env=scratch_env(work), capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - start, ""
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    status = "pass" if proc.returncode == 0 else "fail"
    if proc.returncode == 5:  # no tests collected: a broken selection, never a kill
        status = "error"
    return status, time.monotonic() - start, " | ".join(tail)


def apply(work, m):
    path = work / m.module
    text = path.read_text()
    if text.count(m.old) != 1:
        return None
    path.write_text(text.replace(m.old, m.new))
    return text


def check_catalogue():
    stale = []
    for m in MUTANTS:
        n = (ROOT / m.module).read_text().count(m.old)
        if n != 1:
            stale.append(f"{m.id}: the edit matches {n} times in {m.module}")
    return stale


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--module",
        action="append",
        default=[],
        help="run the mutants of modules whose path contains this (repeatable)",
    )
    ap.add_argument("--id", action="append", default=[], help="run this mutant (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the catalogue and exit")
    ap.add_argument("--jobs", type=int, default=1, help="scratch copies run in parallel")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per test run")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmutated runs")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)

    chosen = [
        m
        for m in MUTANTS
        if (not args.module or any(s in m.module for s in args.module))
        and (not args.id or m.id in args.id)
    ]
    if args.list:
        for m in chosen:
            eq = f"  [equivalent: {m.equivalent}]" if m.equivalent else ""
            print(f"{m.id:32s} {m.module:38s} {m.why}{eq}")
        return 0
    stale = check_catalogue()
    if stale:
        print("stale catalogue entries (the module changed):\n  " + "\n  ".join(stale))
    chosen = [m for m in chosen if not any(s.startswith(m.id + ":") for s in stale)]
    if not chosen:
        print("no mutant selected")
        return 1

    base = Path(tempfile.mkdtemp(prefix="spectheory-mutation-"))
    works = [make_scratch(base) for _ in range(max(1, args.jobs))]
    print(f"{len(chosen)} mutants, {len(works)} scratch copies under {base}", flush=True)

    baseline = {}
    if not args.no_baseline:
        selections = sorted({m.tests for m in chosen})
        with ThreadPoolExecutor(len(works)) as pool:
            futs = {
                sel: pool.submit(run_tests, works[i % len(works)], sel, args.timeout)
                for i, sel in enumerate(selections)
            }
        for sel, fut in futs.items():
            baseline[sel] = fut.result()[0]
            print(f"baseline {baseline[sel]:7s} {' '.join(sel)}", flush=True)

    results = []
    queue = list(chosen)

    def worker(work):
        while queue:
            try:
                m = queue.pop(0)
            except IndexError:
                return
            original = apply(work, m)
            if original is None:
                results.append((m, "stale", 0.0, ""))
                continue
            try:
                status, secs, tail = run_tests(work, m.tests, args.timeout)
            finally:
                (work / m.module).write_text(original)
            if baseline.get(m.tests, "pass") != "pass":
                verdict = "unknown"
            else:
                verdict = {"fail": "killed", "timeout": "killed", "pass": "survived"}.get(
                    status, "unknown"
                )
            results.append((m, verdict, secs, tail))
            print(f"{verdict:9s} {secs:6.1f}s {m.id:32s} {m.why}", flush=True)

    with ThreadPoolExecutor(len(works)) as pool:
        list(pool.map(worker, works))
    shutil.rmtree(base, ignore_errors=True)

    scored = [(m, v) for m, v, _, _ in results if not m.equivalent and v in ("killed", "survived")]
    killed = sum(v == "killed" for _, v in scored)
    print()
    print(
        f"score: {killed}/{len(scored)} non-equivalent mutants killed"
        + (f" ({100 * killed / len(scored):.1f}%)" if scored else "")
    )
    for m, v, _, _ in results:
        if v == "survived" and not m.equivalent:
            print(f"  SURVIVED {m.id}: {m.why} ({m.module})")
        elif m.equivalent:
            print(f"  equivalent {m.id} ({v}): {m.equivalent}")
        elif v in ("unknown", "stale"):
            print(f"  {v.upper()} {m.id}")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                [
                    {
                        "id": m.id,
                        "module": m.module,
                        "verdict": v,
                        "seconds": round(s, 1),
                        "equivalent": m.equivalent,
                        "why": m.why,
                        "tail": t,
                    }
                    for m, v, s, t in results
                ],
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
