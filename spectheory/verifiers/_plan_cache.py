"""A cache of per-row plans keyed by the rows themselves (``optimal``, ``khisti``, ``optimal_lp``).

A coins-protocol verifier is called once per trial with the same target and
draft rows, and its plan (a sort, or a transport LP) costs far more than the
trial.  The plan is cached by the rows' *values*:

* float rows by two word-sized digests of their bits, a hint only: a hit is
  confirmed by comparing the rows, so a collision costs a recomputation but
  never returns another row's plan (hashing a 49,152-entry row's bytes cost
  0.3 ms a lookup);
* Fraction (object) rows by their values, a hit confirmed by the entries'
  types (``Fraction(1, 2) == 0.5`` and both hash alike).

The cached rows are copies, so a caller that writes to its rows later gets a
fresh plan; the plan's arrays are made read-only, since every later caller with
the same rows gets the same object.  The cache is shared by the threads of a
sweep's worker, hence the lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from .._threads import run_parallel

__all__ = ["RowCache", "fingerprint"]


def fingerprint(x):
    """Two word-sized digests of a float64 row's bits (a hint: hits are verified)."""
    w = x.view(np.uint64)
    return int(np.bitwise_xor.reduce(w)), int(w.sum(dtype=np.uint64))


def _freeze(plan):
    """Make the plan's arrays (attributes, and arrays in list or tuple attributes) read-only.

    The plan object is shared by every caller with the same rows: a caller that
    wrote to one of its arrays changed the plan all later callers were served.
    """
    for value in getattr(plan, "__dict__", {}).values():
        for arr in value if isinstance(value, list | tuple) else (value,):
            if isinstance(arr, np.ndarray):
                arr.flags.writeable = False
    return plan


def _same_types(a, b):
    """Whether two object rows of equal values hold the same types entry by entry."""
    return all(type(x) is type(y) for x, y in zip(a, b))


class RowCache:
    """``compute(p, q, *extra)`` cached by ``(p, q, *extra)``, most recent ``maxsize`` kept.

    Parameters
    ----------
    compute : callable
        ``compute(p, q, *extra) -> plan``; it receives private copies (float64
        rows, or the object rows as given).
    maxsize : int
        Number of distinct keys kept (least recently used evicted first).
    """

    def __init__(self, compute, maxsize=64):
        self.compute = compute
        self.maxsize = int(maxsize)
        self._plans: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def clear(self):
        """Forget every cached plan."""
        with self._lock:
            self._plans.clear()

    def __len__(self):
        return len(self._plans)

    def rows(self, p, q, *extra):
        """The plans of a batch's rows ``(B, V)``, each ``self(p[b], q[b], *extra)``, in order.

        A plan is a sequential solve per row, so a batch spreads its rows over threads
        (as many as numba's, when :func:`spectheory._threads.run_parallel` finds enough
        work and an idle core; the compiled passes and numpy's sort release the GIL).
        Each row is solved alone either way, so the plans are the same to the bit.
        """
        count = p.shape[0]
        workers = min(count, numba.get_num_threads()) if run_parallel(p.size, count) else 1
        if workers <= 1:
            return [self(p[b], q[b], *extra) for b in range(count)]
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(lambda b: self(p[b], q[b], *extra), range(count)))

    def __call__(self, p, q, *extra):
        if p.dtype == object or q.dtype == object:
            pc = np.array(p, dtype=object)
            qc = np.array(q, dtype=object)
            key = ("exact", tuple(pc.tolist()), tuple(qc.tolist()), *extra)
            # The key holds the values, but Fraction(1, 2) == 0.5 and both hash alike: a
            # plan of float entries (float arithmetic) was served for Fraction rows.
            same = _same_types
        else:
            pc = np.array(p, dtype=np.float64)  # a copy: the caller may write to its rows
            qc = np.array(q, dtype=np.float64)
            key = ("float", *fingerprint(pc), *fingerprint(qc), *extra)
            same = np.array_equal
        with self._lock:
            for pe, qe, plan in self._plans.get(key, []):
                if same(pe, pc) and same(qe, qc):
                    self._plans.move_to_end(key)
                    return plan
        pc.flags.writeable = qc.flags.writeable = False  # a plan may keep them (coupling's p)
        plan = _freeze(self.compute(pc, qc, *extra))
        with self._lock:
            self._plans.setdefault(key, []).append((pc, qc, plan))
            self._plans.move_to_end(key)
            while len(self._plans) > self.maxsize:
                self._plans.popitem(last=False)
        return plan
