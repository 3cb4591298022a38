r"""The coins protocol's two primitives in numba, shared by the verifier kernels (private).

* :func:`_accept`: the accept probability :math:`\min(1, \text{num}/\text{den})`,
  0 for ``den <= 0`` (a drafted token of draft probability 0 is rejected), as
  :func:`spectheory.verifiers._ops.accept_prob`;
* :func:`_search` over :func:`_cdf_rows`: the inverse CDF of
  :class:`spectheory.coins.ReplayCoins` (the smallest ``i`` with ``u <`` the
  ``i``-th partial sum, partial sums added in sequence as the reference's scan
  adds them; the last token of positive mass when rounding leaves ``u`` beyond
  the total).

:mod:`spectheory.sim._kernels` and :mod:`spectheory.sim._pair_scores_kernel`
import them from here, so neither imports the other.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["_accept", "_cdf", "_cdf_rows", "_search"]


@njit(cache=True)
def _accept(num, den):
    """``min(1, num / den)``; 0 when ``den <= 0``, a q = 0 draft (``_ops.accept_prob``)."""
    if den > 0:
        ratio = num / den
        return ratio if ratio < 1.0 else 1.0
    return 0.0


@njit(cache=True)
def _search(cum, u, last):
    """Smallest ``i`` with ``u < cum[i]``; ``last`` if there is none."""
    lo = 0
    hi = cum.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if cum[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return last if lo == cum.shape[0] else lo


def _cdf(r):
    """Sequential cumulative sums of a 1-D law and its last index of positive mass."""
    return np.cumsum(r), int(np.flatnonzero(r > 0)[-1])


def _cdf_rows(laws):
    cums = np.empty((len(laws), laws[0].shape[0]))
    last = np.empty(len(laws), dtype=np.int64)
    for b, r in enumerate(laws):
        cums[b], last[b] = _cdf(r)
    return cums, last
