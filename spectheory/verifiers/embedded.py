r"""``embedded_iid``: the optimal i.i.d. verifier on the i.i.d. sample inside WOR drafts.

Drafts without replacement from ``q`` are the first ``n`` *distinct* values of
an i.i.d. stream :math:`Z_1, Z_2, \dots \sim q` (sequential sampling without
replacement is "draw from ``q``, skip repeats"; docs/theory.md §3.13).  Given
the drafts in draw order :math:`x_1, \dots, x_n`, the stream's first ``n``
values can be drawn again from their conditional law: ``Z_1 = x_1``, and each
next value repeats an earlier draft with probability :math:`s_m = q(x_1..x_m)`
(which one: proportional to ``q``), else is the next draft :math:`x_{m+1}`.
So :math:`(Z_1, \dots, Z_n)` is exactly an i.i.d. sample of size ``n`` from
``q`` whose values are all drafts, and

1. the optimal i.i.d. verifier (:mod:`.optimal`, acceptance
   :math:`\alpha^*_{\rm iid}(p, q, n)`) runs on it;
2. on a rejection, its residual :math:`r = \mathrm{norm}((p - y)_+)` is the
   new target, and the drafts the stream has not reached yet
   (:math:`x_{m+1}, \dots, x_n`) are, given the stream so far, drawn without
   replacement from ``q`` restricted to the tokens not yet seen: the same
   problem again, on which the verifier recurses (one draft left: standard
   speculative sampling).

Every stage is lossless for its target and its drafts' law, so the output law
is ``p`` exactly, and the membership acceptance is at least
:math:`\alpha^*_{\rm iid}(p, q, n)` (the first stage alone) and at most the
bound without replacement, :math:`\alpha^*_{\rm wor}(p, q, n)`.  It is *not*
optimal without replacement: it reaches :math:`\alpha^*_{\rm wor}` only on
some instances (``notebooks/05_optimal_verifier.py``, which derives it and
measures the gap); no sampler reaching :math:`\alpha^*_{\rm wor}` at full
vocabulary is known to this package.

Cost: one i.i.d. plan per stage reached (:math:`O(V \log V)`, cached per
instance), at most ``n`` stages; the first stage's plan is shared by all
trials of a row.
"""

from __future__ import annotations

import numpy as np

from .._errors import InvalidParameterError
from .optimal import optimal_plan, select_and_test
from .single import sd

__all__ = ["embedded_iid", "stream_prefix"]


def stream_prefix(q, drafts, coins):
    """The first ``len(drafts)`` values of the i.i.d. stream behind drafts without replacement.

    Parameters
    ----------
    q : ndarray, shape (V,)
        The draft law (float64 or Fraction objects).
    drafts : tuple of int
        Distinct drafts in draw order.
    coins : Coins
        One ``bernoulli`` per value after the first, and one ``categorical``
        per repeat.

    Returns
    -------
    z : list of int
        :math:`Z_1..Z_n`: exactly i.i.d. from ``q`` when ``drafts`` is drawn
        without replacement from ``q`` (the tests check the law by
        enumeration).
    m : int
        How many distinct drafts ``z`` holds (they are ``drafts[:m]``).

    Examples
    --------
    >>> from spectheory.coins import ReplayCoins
    >>> q = np.array([0.5, 0.3, 0.2])
    >>> stream_prefix(q, (0, 2), ReplayCoins([0.4, 0.0]))  # 0.4 < q_0: a repeat of 0
    ([0, 0], 1)
    """
    z = [drafts[0]]
    m, seen = 1, q[drafts[0]]
    for _ in range(1, len(drafts)):
        if coins.bernoulli(seen):
            z.append(drafts[coins.categorical(np.array([q[x] / seen for x in drafts[:m]]))])
        else:
            z.append(drafts[m])
            seen = seen + q[drafts[m]]
            m += 1
    return z, m


def embedded_iid(p, q, drafts, coins, *, sampling="without_replacement"):
    """The optimal i.i.d. verifier on the embedded i.i.d. sample, recursively (module docstring).

    Parameters
    ----------
    p, q : ndarray, shape (V,)
        Target and draft (float64 or Fraction object arrays).
    drafts : tuple of int
        Distinct drafts in draw order, drawn without replacement from ``q``.
    coins : Coins
    sampling : {"without_replacement"}

    Returns
    -------
    int

    Raises
    ------
    InvalidParameterError
        For any other draft law: i.i.d. drafts have ``optimal`` itself.

    Examples
    --------
    docs/theory.md §8.1, instance A: 937/1025 = 0.914, between RRS without
    replacement (7/8) and the bound without replacement (139/140); the i.i.d.
    bound is 89/100.

    >>> from fractions import Fraction as F
    >>> from spectheory import acceptance
    >>> p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    >>> q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> acceptance("embedded_iid", p, q, 2, "without_replacement")
    Fraction(937, 1025)
    """
    if sampling != "without_replacement":
        raise InvalidParameterError(
            f"sampling must be 'without_replacement' for embedded_iid; got {sampling!r} "
            "(i.i.d. drafts: use 'optimal')"
        )
    drafts = tuple(int(x) for x in drafts)
    if len(drafts) == 1:
        return sd(p, q, drafts, coins, sampling=sampling)
    z, m = stream_prefix(q, drafts, coins)
    pl = optimal_plan(p, q, len(z))
    x = select_and_test(pl, p, z, coins)
    if x is not None:
        return x
    rest = drafts[m:]
    if not rest:
        return coins.categorical(pl.residual)
    # The stream's future is i.i.d. q and independent of its past: the drafts it
    # has not reached are drawn without replacement from q off the tokens seen.
    unseen = q.copy()
    for y in drafts[:m]:
        unseen[y] = 0 * q[y]
    return embedded_iid(pl.residual, unseen / unseen.sum(), rest, coins, sampling=sampling)
