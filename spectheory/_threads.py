"""When a batched numba kernel runs its rows on several threads (private).

The batched kernels (the input checks, :func:`spectheory.bound`'s i.i.d. and
without-replacement scans, the RRS-without-replacement replay) compute each
row the same way in their serial and their row-parallel loop, so this choice
moves only the time, never a result.  Measured on 2 cores (README,
"Benchmark"): on a quiet machine two threads take ``bound`` on 16 rows of
49,152 tokens from 0.56x to 0.37x of one ``np.argsort`` per row (i.i.d.) and
from 3.8x to 2.3x (without replacement); with both cores already busy the
same parallel loop took 1.9x against 0.50x serially, because numba's threads
then wait for a core at every fork and join.  Hence parallel only where there
is enough work and, by the one-minute load average, a core to spare.
"""

from __future__ import annotations

import os

import numba

__all__ = ["PARALLEL_MIN_WORK", "load_average", "run_parallel"]

#: Entries (rows x tokens) below which a batch runs serially: under ~0.3 ms of
#: work the fork-join is not worth it.
PARALLEL_MIN_WORK = 1 << 18


def load_average() -> float:
    """The one-minute load average, or 0 where the platform has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def run_parallel(entries: int, rows: int) -> bool:
    """Whether a batch of ``rows`` rows and ``entries`` entries runs its rows in parallel.

    True when there are at least two rows, at least :data:`PARALLEL_MIN_WORK`
    entries, numba has more than one thread (``NUMBA_NUM_THREADS``,
    ``numba.set_num_threads``) and the load average, this process included,
    is below the thread count less one half, so that the other threads find
    an idle core.
    """
    if rows < 2 or entries < PARALLEL_MIN_WORK:
        return False
    threads = numba.get_num_threads()
    return threads > 1 and load_average() < threads - 0.5
