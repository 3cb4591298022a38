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

import functools
import math
import os
import time

import numba

__all__ = [
    "PARALLEL_MIN_WORK",
    "TORCH_THREADS_ENV",
    "load_average",
    "own_cpu_rate",
    "run_parallel",
    "torch_threads",
    "with_torch_threads",
]

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


# ----------------------------------------------------------------- torch's threads
#
# The same wait hits torch's OpenMP threads, harder: every small operator of a
# decoder step forks and joins.  Measured on 2 cores with two other busy
# processes, one batch-64 decoding step of the 135M target took 6.4 s on two
# threads against 1.0 s on one; on a quiet machine two threads are faster.

#: Environment variable that fixes the thread count of the model loops.
TORCH_THREADS_ENV = "SPECTHEORY_TORCH_THREADS"

_state = {"depth": 0, "end": None, "threads": 0}
_START = (time.monotonic(), time.process_time())


def own_cpu_rate() -> float:
    """This process's mean busy cores since this module was imported (0 in the first 5 s).

    Part of the load average is this process's own work (a test session, a
    notebook cell that just ran): it must not count as another process's.
    """
    wall = time.monotonic() - _START[0]
    return (time.process_time() - _START[1]) / wall if wall > 5.0 else 0.0


def torch_threads(limit: int) -> int:
    """Threads for a torch loop: the cores the load average leaves idle, 1 to ``limit``.

    ``SPECTHEORY_TORCH_THREADS`` fixes the count.  This process's own work is
    taken out of the one-minute load average: its mean busy cores since import
    (:func:`own_cpu_rate`), or a model loop that ended less than a few minutes
    ago (the average decays with a one-minute time constant), whichever is
    larger.
    """
    env = os.environ.get(TORCH_THREADS_ENV, "").strip()
    if env:
        if not (env.isascii() and env.isdigit()) or int(env) < 1:
            from ._errors import InvalidParameterError

            raise InvalidParameterError(
                f"{TORCH_THREADS_ENV} must be a positive integer; got {env!r}"
            )
        return int(env)
    own = own_cpu_rate()
    if _state["end"] is not None:
        recent = _state["threads"] * math.exp(-(time.monotonic() - _state["end"]) / 60.0)
        own = max(own, recent)
    others = max(0.0, load_average() - own)
    idle = int((os.cpu_count() or 1) - others + 0.5)
    return max(1, min(limit, idle))


def with_torch_threads(fn):
    """Run ``fn`` with :func:`torch_threads` threads (the caller's count restored after).

    Nested calls keep the outer choice: the load then includes this process.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _state["depth"]:
            return fn(*args, **kwargs)
        import torch

        before = torch.get_num_threads()
        threads = torch_threads(before)
        torch.set_num_threads(threads)
        _state["depth"] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            _state["depth"] -= 1
            _state["end"], _state["threads"] = time.monotonic(), threads
            torch.set_num_threads(before)

    return wrapper
