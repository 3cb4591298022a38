"""numba kernel of the input checks (private): one pass per row, parallel over large batches."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

#: Entries below which :func:`row_stats` runs serially: the pass costs ~0.1 ms
#: per 50k tokens, less than the fork-join of a parallel loop on a busy
#: 2-core machine (measured 0.75 ms per row with 2 threads under load 6).
PARALLEL_MIN_ENTRIES = 1 << 22


@njit(cache=True)
def _row(rows, b, first_bad, sums):
    s = 0.0
    for i in range(rows.shape[1]):
        x = rows[b, i]
        if not (x >= 0.0 and x < np.inf):  # NaN fails both comparisons
            first_bad[b] = i
            break
        s += x
    sums[b] = s


@njit(cache=True, parallel=True)
def _row_stats_parallel(rows, first_bad, sums):
    for b in prange(rows.shape[0]):
        _row(rows, b, first_bad, sums)


@njit(cache=True)
def _row_stats_serial(rows, first_bad, sums):
    for b in range(rows.shape[0]):
        _row(rows, b, first_bad, sums)


def row_stats(rows):
    """Per row: the first non-finite or negative token (-1 if none) and the row sum.

    Parameters
    ----------
    rows : float64 (B, V)

    Returns
    -------
    first_bad : int64 (B,)
    sums : float64 (B,)
    """
    B = rows.shape[0]
    first_bad = np.full(B, -1, dtype=np.int64)
    sums = np.zeros(B)
    kernel = _row_stats_parallel if rows.size >= PARALLEL_MIN_ENTRIES else _row_stats_serial
    kernel(rows, first_bad, sums)
    return first_bad, sums
