r"""``pair_tiers``: two drafts without replacement, a tier rule with a first-draft coin, then SD.

For two drafts drawn without replacement, :mod:`spectheory.solvers.pair_tiers`
builds a selection rule per row (tiers, and per token a coin
:math:`\alpha_a`) whose selection marginal ``y`` is known in closed form;
the verifier

1. selects the draft of the preferred tier, or, when both drafts share a
   tier, the first draft ``a`` with probability :math:`\alpha_a`
   (``coins.bernoulli``) and the second otherwise;
2. accepts the selected ``x`` with probability :math:`\min(1, p_x / y_x)`
   (``coins.bernoulli``);
3. otherwise outputs a draw from :math:`\mathrm{norm}((p - y)_+)`
   (``coins.categorical``).

The output law is :math:`\min(p, y) + (p - y)_+ = p` exactly, for any rule
(Khisti et al.'s canonical decomposition).  The selection is accepted with
probability :math:`\sum_a \min(p_a, y_a)` (the plan's ``alpha_value``, exact
for Fraction input); the membership acceptance is that plus the chance that
a residual draw lands on a draft, so it lies in
:math:`[\sum_a \min(p_a, y_a), \alpha^*_{\rm wor}(p, q, 2)]`.  Where the
plan's search finds tiers within the bounds of docs/theory.md §3.14 (the
plan's ``reached``), both ends are equal: the verifier reaches the bound.
Elsewhere the plan keeps the best rule it found (the README gives how often
each happens on the recorded trace).

References
----------
Khisti et al., arXiv:2410.18234; Hu et al., arXiv:2502.18779.
"""

from __future__ import annotations

from .._errors import InvalidParameterError
from ..solvers.pair_tiers import pair_tier_plan
from ._ops import accept_prob
from ._plan_cache import RowCache

__all__ = ["clear_pair_plan_cache", "pair_plan", "pair_tiers"]

_PLANS = RowCache(lambda p, q: pair_tier_plan(p, q), maxsize=64)


def pair_plan(p, q):
    """The row's plan (:func:`spectheory.solvers.pair_tiers.pair_tier_plan`), cached per row."""
    return _PLANS(p, q)


def clear_pair_plan_cache():
    """Forget every cached plan (to time a plan's computation)."""
    _PLANS.clear()


def _check(n, sampling):
    if sampling != "without_replacement" or n != 2:
        raise InvalidParameterError(
            "pair_tiers is for n=2 drafts with sampling='without_replacement'; got "
            f"n={n}, sampling={sampling!r}"
        )


def pair_tiers(p, q, drafts, coins, *, sampling="without_replacement"):
    """Select by the row's pair-tier rule, then single-draft SD against its marginal.

    Parameters
    ----------
    p, q : ndarray, shape (V,)
        Target and draft (float64 or Fraction object arrays).
    drafts : tuple of two int
        Distinct drafts in draw order, drawn without replacement from ``q``.
    coins : Coins
    sampling : {"without_replacement"}

    Returns
    -------
    int

    Examples
    --------
    docs/theory.md §8.1, instance A: the bound without replacement, 139/140.

    >>> from fractions import Fraction as F
    >>> import numpy as np
    >>> from spectheory import acceptance
    >>> p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    >>> q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> acceptance("pair_tiers", p, q, 2, "without_replacement")
    Fraction(139, 140)
    """
    _check(len(drafts), sampling)
    a, b = (int(x) for x in drafts)
    pl = pair_plan(p, q)
    if pl.tier[a] != pl.tier[b]:
        x = a if pl.tier[a] < pl.tier[b] else b
    else:
        x = a if coins.bernoulli(pl.alpha[a]) else b
    if coins.bernoulli(accept_prob(p[x], pl.y[x])):
        return x
    return coins.categorical(pl.residual)
