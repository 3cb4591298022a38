r"""``pair_scores``: two drafts without replacement, a ramp score rule, then SD: reaches the bound.

For two drafts drawn without replacement, :mod:`spectheory.solvers.pair_scores`
solves per row a selection rule (a preferred part ``T`` and a score
:math:`\mu_a` per token) whose selection marginal ``y`` reaches the bound
(docs/theory.md §3.15); the verifier

1. selects the first draft ``a`` with probability 1 when only ``a`` lies in
   ``T``, 0 when only ``b`` does, and else :math:`w(\mu_a - \mu_b) =
   \min(1, \max(0, 1/2 + (\mu_a - \mu_b)/2))` (one ``coins.bernoulli``,
   turned in every case, so the numba kernel and the torch form read the same
   uniform for the same coin), and ``b`` otherwise;
2. accepts the selected ``x`` with probability :math:`\min(1, p_x / y_x)`
   (``coins.bernoulli``);
3. otherwise outputs a draw from :math:`\mathrm{norm}((p - y)_+)`
   (``coins.categorical``).

The output law is :math:`\min(p, y) + (p - y)_+ = p` exactly, for any scores
(Khisti et al.'s canonical decomposition).  Where the plan's Newton method
meets its tolerance (``reached``: selection acceptance equal to
:math:`\alpha^*_{\rm wor}(p, q, 2)` to 1e-12, exactly for Fraction input),
the verifier reaches the bound; a ramp rule that does exists for every row
(§3.15), so a miss is the solver's, and the plan says so.

References
----------
Khisti et al., arXiv:2410.18234; Hu et al., arXiv:2502.18779.
"""

from __future__ import annotations

from .._errors import InvalidParameterError
from ..solvers.pair_scores import pair_score_plan, ramp
from ._ops import accept_prob
from ._plan_cache import RowCache

__all__ = [
    "clear_score_plan_cache", "first_draft_weight", "pair_scores", "score_plan", "score_plans",
    "select_pair",
]

_PLANS = RowCache(lambda p, q: pair_score_plan(p, q), maxsize=64)


def score_plan(p, q):
    """The row's plan (:func:`spectheory.solvers.pair_scores.pair_score_plan`), cached per row."""
    return _PLANS(p, q)


def score_plans(p, q):
    """The plans of a batch's rows ``(B, V)``, each :func:`score_plan`'s, in row order
    (:meth:`._plan_cache.RowCache.rows`: rows spread over threads, same plans to the bit)."""
    return _PLANS.rows(p, q)


def clear_score_plan_cache():
    """Forget every cached plan (to time a plan's computation)."""
    _PLANS.clear()


def pair_scores(p, q, drafts, coins, *, sampling="without_replacement"):
    """Select by the row's ramp score rule, then single-draft SD against its marginal.

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
    >>> acceptance("pair_scores", p, q, 2, "without_replacement")
    Fraction(139, 140)
    """
    if sampling != "without_replacement" or len(drafts) != 2:
        raise InvalidParameterError(
            "pair_scores is for n=2 drafts with sampling='without_replacement'; got "
            f"n={len(drafts)}, sampling={sampling!r}"
        )
    pl = score_plan(p, q)
    x = select_pair(pl, drafts, coins)
    if coins.bernoulli(accept_prob(p[x], pl.y[x])):
        return x
    return coins.categorical(pl.residual)


def first_draft_weight(plan_, a, b):
    """Probability that the plan's rule selects ``a`` from the drafts ``(a, b)``.

    1 or 0 when exactly one draft lies in the preferred part, else the ramp of
    the score gap (exact for a Fraction plan, float64 otherwise).
    """
    if plan_.preferred[a] != plan_.preferred[b]:
        one = plan_.mu[a] * 0 + 1  # 1 of the scores' type: Fraction or float
        return one if plan_.preferred[a] else one * 0
    return ramp(plan_.mu[a] - plan_.mu[b])


def select_pair(plan_, drafts, coins):
    """The draft the plan's rule selects from ``drafts = (a, b)``: one ``coins.bernoulli``."""
    a, b = (int(x) for x in drafts)
    return a if coins.bernoulli(first_draft_weight(plan_, a, b)) else b
