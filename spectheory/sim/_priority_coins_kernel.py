r"""numba form of the priority-coin rule (three or more drafts without replacement): batched trials.

The plan of each row (the preferred part ``T``, each token's rank in its
part's order, the coins :math:`\kappa`, the selection marginal ``y`` and the
residual) comes from the same cached solve as the coins reference
(:func:`spectheory.verifiers.priority_coins.coin_plan`), so reference and
kernel share every table; :func:`run_priority_coins` then runs the trials on
pre-drawn uniforms with the reference's coin order:

* ``u[b, t, 0]``: the selection among the drafts of the part selected from,
  listed by rank, with weights :math:`\kappa_{x_j} \prod_{i<j}(1 - \kappa_{x_i})`
  (the last: the product alone), times the component's weight for a plan that
  mixes rules (component by component), by the reference's linear inverse-CDF scan
  (:func:`spectheory.coins._inverse_cdf`), the same float operations in the
  same order;
* ``u[b, t, 1]``: accept the selected ``x`` when below :math:`\min(1, p_x / y_x)`;
* ``u[b, t, 2]``: otherwise the residual by inverse CDF
  (:mod:`spectheory.sim._coin_kernels`).

Cost: the plan per row (greedy passes, :func:`spectheory.solvers.priority_coins`),
then :math:`O(n^2)` per trial.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._coin_kernels import _accept, _cdf_rows, _search

__all__ = ["priority_coin_tables", "run_priority_coins"]


@njit(cache=True)
def _select(pref, lam, rank, kappa, drafts, u):
    """The selected draft, or -1 when no draft has a rank (q = 0, unvalidated input).

    One inverse-CDF scan over the pairs (component ``c``, draft), component by
    component, with weights ``lam[c]`` times the component's selection weights:
    the reference's order of operations (components of weight 0 pad a batch).
    """
    n = drafts.shape[0]
    top = False
    for i in range(n):
        x = drafts[i]
        if rank[0, x] >= 0 and pref[x]:
            top = True
    part = np.empty(n, dtype=np.int64)
    acc = 0.0
    chosen = -1
    for c in range(lam.shape[0]):
        if lam[c] == 0.0:
            continue
        m = 0
        for i in range(n):
            x = drafts[i]
            if rank[c, x] >= 0 and (pref[x] or not top):
                # insertion by rank: the part's order
                j = m
                while j > 0 and rank[c, part[j - 1]] > rank[c, x]:
                    part[j] = part[j - 1]
                    j -= 1
                part[j] = x
                m += 1
        if m == 0:
            return -1
        fail = 1.0
        for j in range(m):
            k = kappa[c, part[j]]
            if j == m - 1:
                w = fail
            else:
                w = fail * k
                fail = fail * (1.0 - k)
            w = lam[c] * w
            if w > 0.0:
                acc += w
                chosen = part[j]
                if u < acc:
                    return chosen
    return chosen


@njit(cache=True)
def _trial(p, pref, lam, rank, kappa, y, cres, last, drafts, u):
    x = _select(pref, lam, rank, kappa, drafts, u[0])
    if x >= 0 and u[1] < _accept(p[x], y[x]):
        return x
    return _search(cres, u[2], last)


@njit(cache=True, parallel=True)
def _run(p, pref, lam, rank, kappa, y, cres, last, drafts, u, out):
    B, T, _ = drafts.shape
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        out[b, t] = _trial(p[b], pref[b], lam[b], rank[b], kappa[b], y[b], cres[b], last[b],
                           drafts[b, t], u[b, t])


def priority_coin_tables(p, q, n):
    """Per-row plans of a batch (B, V), packed for :func:`run_priority_coins`.

    Returns
    -------
    dict
        :func:`spectheory.verifiers.priority_coins.coin_tables`'s arrays (``pref``,
        ``lam``, ``rank``, ``kappa``, ``y``), with ``cres`` (B, V), the sequential
        cumulative sums of the residual, and ``last`` (B,), its last index of positive
        mass.
    """
    from ..verifiers.priority_coins import coin_tables

    tb = coin_tables(p, q, n)
    tb["cres"], tb["last"] = _cdf_rows(list(tb["residual"]))
    return tb


def run_priority_coins(p, q, drafts, u):
    """Tokens (B, T) of the priority-coin rule: drafts (B, T, n) without replacement,
    uniforms (B, T, 3).

    ``p`` and ``q`` are checked float64 rows (B, V); the drafts distinct, in draw order.
    """
    p = np.ascontiguousarray(p, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64)
    B, T, n = drafts.shape
    tb = priority_coin_tables(p, q, n)
    out = np.empty((B, T), dtype=np.int64)
    _run(p, tb["pref"], tb["lam"], tb["rank"], tb["kappa"], tb["y"], tb["cres"], tb["last"],
         np.ascontiguousarray(drafts), np.ascontiguousarray(u), out)
    return out
