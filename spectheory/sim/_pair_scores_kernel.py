r"""numba form of the ``pair_scores`` rule (two drafts without replacement): batched trials.

The plan of each row (the preferred part ``T``, the scores :math:`\mu`, the
selection marginal ``y`` and the residual) comes from the same cached solve as
the coins reference (:func:`spectheory.verifiers.pair_scores.score_plan`), so
reference and kernel share every table; :func:`run_pair_scores` then runs the
trials on pre-drawn uniforms with the reference's coin order:

* ``u[b, t, 0]``: select the first draft ``a`` when it is below its weight
  (1 if only ``a`` lies in ``T``, 0 if only ``b`` does, else
  :math:`\min(1, \max(0, 1/2 + (\mu_a - \mu_b)/2))`, the same float
  operations as :func:`spectheory.solvers.pair_scores.ramp`);
* ``u[b, t, 1]``: accept the selected ``x`` when below
  :math:`\min(1, p_x / y_x)`;
* ``u[b, t, 2]``: otherwise the residual by inverse CDF (binary search on
  sequential partial sums, equal to the reference's linear scan bit for bit,
  :mod:`spectheory.sim._coin_kernels`).

Cost: the plan per row (a projected Newton solve, :math:`O(V \log V)` a step),
then :math:`O(\log V)` per trial.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._errors import InvalidParameterError
from ._coin_kernels import _accept, _cdf_rows, _search

__all__ = ["pair_score_tables", "run_pair_scores"]


@njit(cache=True)
def _first_weight(pref, mu, a, b):
    if pref[a] != pref[b]:
        return 1.0 if pref[a] else 0.0
    w = 0.5 + 0.5 * (mu[a] - mu[b])
    return min(max(w, 0.0), 1.0)


@njit(cache=True)
def _trial(p, pref, mu, y, cres, last, drafts, u):
    a = drafts[0]
    b = drafts[1]
    x = a if u[0] < _first_weight(pref, mu, a, b) else b
    if u[1] < _accept(p[x], y[x]):  # a q = 0 draft has y = 0: rejected, as by the reference
        return x
    return _search(cres, u[2], last)


@njit(cache=True, parallel=True)
def _run(p, pref, mu, y, cres, last, drafts, u, out):
    B, T, _ = drafts.shape
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        out[b, t] = _trial(p[b], pref[b], mu[b], y[b], cres[b], last[b], drafts[b, t], u[b, t])


def pair_score_tables(p, q):
    """Per-row plans of a batch (B, V), packed for :func:`run_pair_scores`.

    Returns
    -------
    dict
        ``pref`` (bool), ``mu``, ``y``, ``cres`` (sequential cumulative sums of
        the residual), each (B, V), and ``last`` (B,), the residual's last
        index of positive mass.
    """
    from ..verifiers.pair_scores import score_plans

    plans = score_plans(p, q)
    cres, last = _cdf_rows([pl.residual for pl in plans])
    return {
        "cres": cres,
        "last": last,
        "pref": np.array([pl.preferred for pl in plans], dtype=np.bool_),
        "mu": np.array([pl.mu for pl in plans], dtype=np.float64),
        "y": np.array([pl.y for pl in plans], dtype=np.float64),
    }


def run_pair_scores(p, q, drafts, u):
    """Tokens (B, T) of ``pair_scores``: drafts (B, T, 2) without replacement, uniforms (B, T, 3).

    ``p`` and ``q`` are checked float64 rows (B, V); the drafts distinct, in draw order.
    """
    p = np.ascontiguousarray(p, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64)
    B, T, n = drafts.shape
    if n != 2:
        raise InvalidParameterError(f"run_pair_scores needs two drafts per trial; got n={n}")
    tb = pair_score_tables(p, q)
    out = np.empty((B, T), dtype=np.int64)
    _run(p, tb["pref"], tb["mu"], tb["y"], tb["cres"], tb["last"], np.ascontiguousarray(drafts),
         np.ascontiguousarray(u), out)
    return out
