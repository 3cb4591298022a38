r"""``optimal``: a lossless verifier whose membership acceptance is the bound :math:`\alpha^*`.

i.i.d. drafts (docs/theory.md §2.3, §3.12; derivation in
``notebooks/05_optimal_verifier.py``): from the per-row plan of
:mod:`spectheory.solvers.polymatroid`,

1. if some draft lies in ``T`` (the complement of the optimal dual set
   :math:`H^*`) draw a component ``k`` of the ``T`` mixture, else of the
   :math:`H^*` mixture (``coins.categorical``);
2. select the draft in the lowest tier of component ``k`` that the drafts
   meet, the first in draw order within it (deterministic);
3. accept it with probability :math:`\min(1, p_x / y_x)` (``coins.bernoulli``);
4. otherwise output a draw from :math:`\mathrm{norm}((p - y)_+)`
   (``coins.categorical``).

A drafted token with ``q = 0`` (possible only without validation; the
validating entry points refuse it) is never selected, so it is rejected, as
by every verifier of the registry.

The selection has marginal ``y`` exactly, so the output law is
:math:`\min(p, y) + (p - y)_+ = p` and the acceptance is
:math:`\sum_i \min(p_i, y_i) = \alpha^*`.  Greedy drafts: Hu et al.'s
verifier is already optimal (docs/theory.md §2.6), ``optimal`` delegates to
it; one draft: standard speculative sampling.

Two drafts without replacement: the ramp score rule of ``pair_scores``
(:mod:`spectheory.solvers.pair_scores`, docs/theory.md §3.15), which reaches
:math:`\alpha^*_{\rm wor}` on every row where its plan is ``reached``
(certified per row: to 1e-12 for floats, exactly for Fractions); its coins are
the selection coin, the accept coin and the residual draw.  More than two
drafts without replacement are refused: a rule reaching the bound exists
(§3.15-3.16) but its marginal at full vocabulary is not computed, and the i.i.d.
tier rule's marginal is not proportional to ``q`` beyond the first tier there
(see the notebook); ``khisti``, ``optimal_lp`` and ``random_utility`` reach the
bound for small draft supports.

References
----------
Thomas, Pal, arXiv:2511.15898; Khisti et al., arXiv:2410.18234; Hu et al.,
arXiv:2502.18779.
"""

from __future__ import annotations

import numpy as np

from .._errors import InvalidParameterError
from ..solvers.polymatroid import plan
from ._closed_forms import _hub_value, _need, _rowwise
from ._ops import accept_prob
from ._plan_cache import RowCache
from .hub import greedy
from .pair_scores import pair_scores
from .priority_coins import priority_coins
from .single import sd

__all__ = [
    "SAMPLINGS",
    "clear_plan_cache",
    "optimal",
    "optimal_acceptance",
    "optimal_plan",
    "select",
    "select_and_test",
]

#: Draft laws ``optimal`` reaches the bound for.
SAMPLINGS = ("iid", "greedy", "without_replacement")
#: Plans by row (:class:`._plan_cache.RowCache`: float rows by a digest
#: confirmed by the rows, Fraction rows by value).
_PLANS = RowCache(plan, maxsize=64)


def clear_plan_cache():
    """Forget every cached plan (to time a plan's computation, as in decoding)."""
    _PLANS.clear()


def optimal_plan(p, q, n):
    """The plan of one row (:func:`spectheory.solvers.polymatroid.plan`), cached per instance.

    The cache (:class:`spectheory.verifiers._plan_cache.RowCache`) looks float
    rows up by a digest of their bits and confirms a hit by comparing the rows,
    so a collision can cost a recomputation but never return another row's
    plan; a coins-protocol verifier looks the plan up once per trial and stage.
    """
    return _PLANS(p, q, int(n))


def select(plan_, drafts, k, top):
    """The selected draft: lowest tier of component ``k`` met, first in draw order.

    Drafts the draft gives probability 0 (possible only without validation)
    are never selected.

    Parameters
    ----------
    plan_ : OptimalPlan
    drafts : sequence of int, in draw order
    k : int
        Component of the segment's mixture.
    top : bool
        Whether the segment is ``T`` (else :math:`H^*`).

    Returns
    -------
    int or None
        None when no draft of positive probability lies in the segment.
    """
    pos = [int(plan_.pos[x]) for x in drafts]
    inside = [t for t in pos if t >= 0 and (t < plan_.n_top) == top]
    if not inside:
        return None
    a = min(inside)
    for x, t in zip(drafts, pos):
        if t >= 0 and (t < plan_.n_top) == top and (
            t == a or plan_.rank[a + 1 : t + 1].max() <= k
        ):
            return int(x)
    raise AssertionError("unreachable: the lowest position is a draft")


def optimal(p, q, drafts, coins, *, sampling="iid"):
    """Optimal-acceptance verifier (acceptance :math:`\\alpha^*`, output law ``p``).

    Parameters
    ----------
    p, q : ndarray, shape (V,)
        Target and draft (float64 or Fraction object arrays).
    drafts : tuple of int
        Draft tokens in draw order.
    coins : Coins
    sampling : {"iid", "greedy", "without_replacement"}
        Without replacement, two drafts use the ramp score rule and more the
        priority-coin rule (module docstring).

    Returns
    -------
    int

    Raises
    ------
    InvalidParameterError
        An unknown ``sampling``.

    Examples
    --------
    >>> from spectheory.coins import ReplayCoins
    >>> p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    >>> optimal(p, q, (0, 1), ReplayCoins([0.0, 0.0, 0.0]))
    1

    Without replacement, docs/theory.md §8.1 instance A reaches its bound 139/140:

    >>> from fractions import Fraction as F
    >>> from spectheory import acceptance
    >>> pf = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    >>> qf = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> acceptance("optimal", pf, qf, 2, "without_replacement")
    Fraction(139, 140)
    """
    n = len(drafts)
    if sampling == "greedy":
        return greedy(p, q, drafts, coins, sampling=sampling)
    if sampling not in SAMPLINGS:
        raise InvalidParameterError(
            f"sampling must be one of {SAMPLINGS} for the optimal verifier; got {sampling!r}"
        )
    if n == 1:
        return sd(p, q, drafts, coins, sampling=sampling)
    if sampling == "without_replacement":
        if n == 2:
            return pair_scores(p, q, drafts, coins, sampling=sampling)
        return priority_coins(p, q, drafts, coins, sampling=sampling)
    pl = optimal_plan(p, q, n)
    x = select_and_test(pl, p, drafts, coins)
    return x if x is not None else coins.categorical(pl.residual)


def select_and_test(plan_, p, drafts, coins):
    r"""The plan's selection and its accept test: the accepted draft, or None on a rejection.

    Draws the mixture component (``coins.categorical``), selects with
    :func:`select` and accepts with probability :math:`\min(1, p_x / y_x)`
    (``coins.bernoulli``); the caller draws the residual ``plan_.residual``
    after a rejection.
    """
    top = any(0 <= plan_.pos[x] < plan_.n_top for x in drafts)
    k = coins.categorical(plan_.w_top if top else plan_.w_h)
    x = select(plan_, drafts, k, top)
    # No draft of positive probability (unvalidated input): the coin still
    # turns, so every backend reads the residual draw from the same uniform.
    if coins.bernoulli(accept_prob(p[x], plan_.y[x]) if x is not None else 0 * p[0]):
        return x
    return None


@_rowwise()
def optimal_acceptance(p, q, n, sampling="iid"):
    r"""Exact membership acceptance of ``optimal``: :math:`\sum_i \min(p_i, y_i)` of its plan.

    ``y`` is the selection marginal of the plan (i.i.d. drafts,
    :func:`spectheory.solvers.polymatroid.plan`; exact for Fraction input), so
    this is the verifier's own acceptance, computed from its tables; the
    notebook proves it equals :math:`\alpha^*` and the tests check it against
    the OT dual, max-flow, the LP and the enumerated law.  Greedy drafts: Hu et
    al.'s value :math:`p(T) + \sum_{i \notin T} \min(p_i, \tilde q_i)`; one
    draft: :math:`\sum \min(p, q)`.

    Examples
    --------
    docs/theory.md §8.1, instance A:

    >>> from fractions import Fraction as F
    >>> p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    >>> q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> optimal_acceptance(p, q, 2), optimal_acceptance(p, q, 2, "greedy")
    (Fraction(89, 100), Fraction(19, 20))
    """
    # Without replacement the membership acceptance equals the plan's selection acceptance
    # only where the plan is reached; `acceptance` enumerates it exactly instead.
    _need(sampling, ("iid", "greedy"), "optimal")
    if sampling == "greedy":
        return _hub_value(p, q, n)
    if n == 1:
        return np.minimum(p, q).sum()
    return optimal_plan(p, q, n).alpha
