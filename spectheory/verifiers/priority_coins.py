r"""``optimal`` for three or more drafts without replacement: a priority rule with coins, then SD.

:mod:`spectheory.solvers.priority_coins` computes per row a selection rule (a
preferred part ``T``, an order of each part and a coin :math:`\kappa_a` per
token) and its selection marginal ``y`` at full vocabulary; the verifier

1. takes the drafts in ``T`` if any (else all of them), lists them in the
   part's order :math:`x_1, \dots, x_m`, and selects :math:`x_j` with
   probability :math:`\kappa_{x_j} \prod_{i<j} (1 - \kappa_{x_i})`, the last
   with the rest (one ``coins.categorical``; for a plan that mixes rules, over the
   pairs of rule and draft, :func:`select_by_priority`);
2. accepts the selected ``x`` with probability :math:`\min(1, p_x / y_x)`
   (``coins.bernoulli``);
3. otherwise outputs a draw from :math:`\mathrm{norm}((p - y)_+)`
   (``coins.categorical``).

The output law is :math:`\min(p, y) + (p - y)_+ = p` for any order and coins
(Khisti et al.'s canonical decomposition).  Where the plan is ``reached``
(selection acceptance equal to :math:`\alpha^*_{\rm wor}(p, q, n)` to 1e-12,
exactly for Fraction input) the verifier reaches the bound; where it is not,
it stays lossless with the plan's acceptance, and the plan says by how much it
misses (docs/theory.md §3.17).

References
----------
Khisti et al., arXiv:2410.18234; Hu et al., arXiv:2502.18779.
"""

from __future__ import annotations

import numpy as np

from ..solvers.priority_coins import priority_coin_plan, selection_weights
from ._ops import accept_prob
from ._plan_cache import RowCache

__all__ = [
    "clear_coin_plan_cache", "coin_plan", "coin_plans", "coin_tables", "priority_coins",
    "select_by_priority",
]

_PLANS = RowCache(priority_coin_plan, maxsize=64)


def coin_plan(p, q, n):
    """The row's plan (:func:`spectheory.solvers.priority_coins.priority_coin_plan`), cached."""
    return _PLANS(p, q, int(n))


def coin_plans(p, q, n):
    """The plans of a batch's rows ``(B, V)``, each :func:`coin_plan`'s, in row order
    (:meth:`._plan_cache.RowCache.rows`: rows spread over threads, same plans to the bit)."""
    return _PLANS.rows(p, q, int(n))


def coin_tables(p, q, n):
    """The plans of a batch's rows ``(B, V)`` packed into arrays, for the batched forms.

    Returns
    -------
    dict
        ``pref`` (bool), ``y`` and ``residual``, each (B, V); ``lam`` (B, C), ``rank``
        (int64) and ``kappa`` (B, C, V): the rows' rules, padded to the batch's largest
        count ``C`` with rules of weight 0 (the first rule's ranks, coins 0).
    """
    plans = coin_plans(p, q, n)
    C = max(pl.weights.size for pl in plans)
    B, V = len(plans), plans[0].y.size
    lam = np.zeros((B, C))
    rank = np.empty((B, C, V), dtype=np.int64)
    kappa = np.zeros((B, C, V))
    for b, pl in enumerate(plans):
        c = pl.weights.size
        lam[b, :c] = pl.weights
        rank[b, :c] = pl.rank
        rank[b, c:] = pl.rank[0]
        kappa[b, :c] = pl.kappa
    return {
        "pref": np.array([pl.preferred for pl in plans], dtype=np.bool_),
        "lam": lam,
        "rank": rank,
        "kappa": kappa,
        "y": np.array([pl.y for pl in plans], dtype=np.float64),
        "residual": np.array([pl.residual for pl in plans], dtype=np.float64),
    }


def clear_coin_plan_cache():
    """Forget every cached plan (to time a plan's computation)."""
    _PLANS.clear()


def select_by_priority(plan_, drafts, coins):
    r"""The draft the plan's rule selects: one ``coins.categorical``, turned in every case.

    For a mixture of ``c`` rules (``plan_.weights``) the categorical runs over the
    pairs (rule ``i``, draft), component by component, with weight
    :math:`\lambda_i` times the rule's selection weight of the draft: drawing the rule
    and then the draft, with one uniform (for one rule the weights are the rule's own).
    Drafts the draft gives probability 0 (possible only without validation) are
    never selected; when no draft remains the coin still turns (on a single
    certain branch), so every backend reads the later coins from the same
    uniforms, and None is returned.
    """
    ranked = [int(x) for x in drafts if plan_.rank[0, x] >= 0]
    inside = [x for x in ranked if plan_.preferred[x]]
    members = inside or ranked
    if not members:
        coins.categorical([plan_.weights[0] * 0 + 1])
        return None
    picks, weights = [], []
    for lam, rank, kappa in zip(plan_.weights, plan_.rank, plan_.kappa):
        part = sorted(members, key=lambda x: rank[x])
        picks += part
        weights += [lam * w for w in selection_weights([kappa[x] for x in part])]
    return picks[coins.categorical(weights)]


def priority_coins(p, q, drafts, coins, *, sampling="without_replacement"):
    """Select by the row's priority-coin rule, then single-draft SD against its marginal.

    Parameters
    ----------
    p, q : ndarray, shape (V,)
        Target and draft (float64 or Fraction object arrays).
    drafts : tuple of int
        ``n >= 2`` distinct drafts drawn without replacement from ``q``.
    coins : Coins
    sampling : {"without_replacement"}

    Returns
    -------
    int

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> import numpy as np
    >>> from spectheory import acceptance
    >>> from spectheory.solvers import solve_bound
    >>> p = np.array([F(4, 10), F(3, 10), F(2, 10), F(1, 10)], dtype=object)
    >>> q = np.array([F(1, 10), F(2, 10), F(3, 10), F(4, 10)], dtype=object)
    >>> exact = solve_bound(p, q, 3, "without_replacement", method="enumerate").exact_value
    >>> acceptance("optimal", p, q, 3, "without_replacement") == exact
    True
    """
    from .._errors import InvalidParameterError

    if sampling != "without_replacement" or len(drafts) < 2:
        raise InvalidParameterError(
            "priority_coins is for n >= 2 drafts with sampling='without_replacement'; got "
            f"n={len(drafts)}, sampling={sampling!r}")
    pl = coin_plan(p, q, len(drafts))
    x = select_by_priority(pl, drafts, coins)
    if coins.bernoulli(accept_prob(p[x], pl.y[x]) if x is not None else 0 * p[0]):
        return x
    return coins.categorical(pl.residual)
