"""numba kernel of the input checks (private): one pass per row, parallel over rows."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
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
    B, V = rows.shape
    first_bad = np.full(B, -1, dtype=np.int64)
    sums = np.zeros(B)
    for b in prange(B):
        s = 0.0
        for i in range(V):
            x = rows[b, i]
            if not (x >= 0.0 and x < np.inf):  # NaN fails both comparisons
                first_bad[b] = i
                break
            s += x
        sums[b] = s
    return first_bad, sums
