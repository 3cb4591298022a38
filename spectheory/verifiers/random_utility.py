r"""``random_utility``: any n and draft law, a random-utility selection, then SD: at the bound.

:mod:`spectheory.solvers.random_utility` solves per row a preferred part ``T``
and a score :math:`\mu_a` per token such that the rule below has a selection
marginal ``y`` reaching :math:`\alpha^*` (docs/theory.md §3.16); the verifier

1. takes the distinct drafts in ``T`` if there are any, else all distinct drafts,
   and selects one with the probabilities :math:`w(\mu)` of the largest
   :math:`\mu_a + U_a`, ``U`` i.i.d. U[0, 1]
   (:func:`spectheory.solvers.random_utility.uniform_choice`, exact for Fraction
   input; one ``coins.categorical``);
2. accepts the selected ``x`` with probability :math:`\min(1, p_x / y_x)`
   (``coins.bernoulli``);
3. otherwise outputs a draw from :math:`\mathrm{norm}((p - y)_+)`
   (``coins.categorical``).

The output law is :math:`\min(p, y) + (p - y)_+ = p` exactly, for any scores.
The plan enumerates the draft sets, which lie in the support of ``q``: like
``khisti`` it runs at any vocabulary when the draft's support is small, and is
refused (:class:`~spectheory.InstanceTooLargeError`) beyond
:data:`spectheory.drafting.MAX_ENUMERATION` draws.  Plans are cached per
``(p, q, n, sampling)``.

References
----------
Khisti et al., arXiv:2410.18234 (the decomposition); Hu et al., arXiv:2502.18779
(the bound).
"""

from __future__ import annotations

from fractions import Fraction

from ..solvers.random_utility import random_utility_plan, uniform_choice
from ._ops import accept_prob
from ._plan_cache import RowCache

__all__ = ["clear_random_utility_cache", "random_utility", "utility_plan"]

_PLANS = RowCache(random_utility_plan, maxsize=64)


def utility_plan(p, q, n, sampling):
    """The row's plan (:func:`spectheory.solvers.random_utility.random_utility_plan`), cached."""
    return _PLANS(p, q, n, sampling)


def clear_random_utility_cache():
    """Forget every cached plan."""
    _PLANS.clear()


def random_utility(p, q, drafts, coins, *, sampling="without_replacement"):
    """Select by the row's random-utility rule, then single-draft SD against its marginal.

    Parameters
    ----------
    p, q : ndarray, shape (V,)
        Target and draft (float64 or Fraction object arrays).
    drafts : tuple of int
        The drafts in draw order, drawn from ``q`` under ``sampling``.
    coins : Coins
    sampling : {"iid", "without_replacement", "greedy"}

    Returns
    -------
    int

    Examples
    --------
    Three drafts without replacement from four tokens: exactly lossless, and the
    acceptance is the bound to 1e-12.

    >>> from fractions import Fraction as F
    >>> import numpy as np
    >>> from spectheory import acceptance, bound
    >>> p = np.array([F(5, 10), F(3, 10), F(15, 100), F(5, 100)], dtype=object)
    >>> q = np.array([F(1, 10), F(2, 10), F(3, 10), F(4, 10)], dtype=object)
    >>> a = acceptance("random_utility", p, q, 3, "without_replacement")
    >>> abs(float(a) - bound(p.astype(float), q.astype(float), 3, "without_replacement")) < 1e-12
    True
    """
    plan = utility_plan(p, q, len(drafts), sampling)
    members = sorted({int(x) for x in drafts})
    candidates = [a for a in members if plan.preferred[a]] or members
    exact = plan.y.dtype == object
    scores = [Fraction(float(plan.mu[a])) if exact else float(plan.mu[a]) for a in candidates]
    x = candidates[coins.categorical(uniform_choice(scores))]
    if coins.bernoulli(accept_prob(p[x], plan.y[x])):
        return x
    return coins.categorical(plan.residual)
