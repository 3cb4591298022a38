r"""Verifiers for the greedy draft law: Hu et al.'s greedy verifier and SpecHub.

Greedy law (Hu et al. [1]_; docs/theory.md §2.1, 2.6): the drafts are the ``n - 1``
most likely draft tokens ``T`` (descending ``q``, ties to the lowest id) and
one token :math:`x \sim \tilde q = q\,\mathbb 1[\cdot \notin T]/(1 - q(T))`.
The verifier runs single-draft SD of ``p`` against :math:`\tilde q` on ``x``;
on ``T`` the residual :math:`(p - \tilde q)_+` equals ``p``, so a residual in
``T`` hits a (deterministic) draft.  It attains the optimum of its law,

.. math::

    \alpha^*_{\text{greedy}} = p(T) + \sum_{i \notin T} \min(p(i), \tilde q(i)).

SpecHub (Sun et al. [2]_; docs/theory.md §3.4), ``n = 2``: the hub
:math:`a = \arg\max q`; drafting draws :math:`x_1 \sim q`; if
:math:`x_1 = i \ne a` the pair is :math:`(i, a)`, else :math:`x_2 \sim \tilde q`
and the pair is :math:`(a, i)`.  As a set this is the greedy law with
``n = 2``, and SpecHub's acceptance :math:`p(a) + \sum_{i \ne a}\min(p, \tilde q)`
is the optimum of that law.

References
----------
.. [1] Hu, Zheng, Viswanathan, Chen, Rossi, Wu, Manocha, Huang.
   "Towards Optimal Multi-draft Speculative Decoding". ICLR 2025, arXiv:2502.18779.
.. [2] R. Sun et al. "SpecHub: Provable Acceleration to Multi-Draft
   Speculative Decoding". EMNLP 2024, arXiv:2411.05289.
"""

from __future__ import annotations

import numpy as np

from .._errors import InvalidParameterError
from ..drafting import greedy_split
from ._ops import accept_prob, positive_part, residual, zero

__all__ = ["greedy", "spechub"]


def _check_fixed(drafts, T):
    if tuple(int(t) for t in drafts[: len(T)]) != tuple(int(t) for t in T):
        raise InvalidParameterError(
            f"drafts={tuple(drafts)!r} do not follow the greedy law: its first n - 1 "
            f"drafts must be the top tokens of draft {tuple(int(t) for t in T)!r}"
        )


def greedy(p, q, drafts, coins, *, sampling="greedy"):
    """Hu et al.'s greedy verifier: SD of ``p`` against :math:`\\tilde q` on the last draft.

    Parameters
    ----------
    p, q : ndarray, shape (V,)
    drafts : tuple of int
        ``n - 1`` top tokens of ``q`` (descending ``q``, ties lowest id) then ``x``.
    coins : Coins
    sampling : str
        Must be ``"greedy"`` (checked by the registry).

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.coins import ReplayCoins
    >>> p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    >>> greedy(p, q, (0, 1), ReplayCoins([0.9, 0.95]))  # accept b w.p. 8/15; residual [6/7, 0, 1/7]
    2
    """
    T, qt = greedy_split(q, len(drafts))
    _check_fixed(drafts, T)
    x = drafts[-1]
    if coins.bernoulli(accept_prob(p[x], qt[x])):
        return x
    return coins.categorical(residual(p, qt))


def spechub(p, q, drafts, coins, *, sampling="greedy"):
    """SpecHub's verifier for two drafts drawn through the hub ``a = argmax q``.

    ``drafts`` is ``(a, i)`` in the greedy law's order.  Given the set
    ``{a, i}``, SpecHub's drafting produced the pair ``(i, a)`` with
    probability :math:`q(i)/\\tilde q(i) = 1 - q(a)` and ``(a, i)`` otherwise;
    the verifier flips that coin first, so that its joint law with the pair
    type is exactly SpecHub's.  Then (docs/theory.md §3.4, ``i != a``):

    * :math:`p_1 = (p - q)_+`, :math:`e_{ia} = (q - p)_+`,
      :math:`Q_{ai} = q(a)\\tilde q`, :math:`e_{ai} = (Q_{ai} - p_1)_+`,
      :math:`p_2(a) = (p(a) - \\sum e_{ai})_+`;
    * pair ``(i, a)``: accept ``i`` w.p. :math:`\\min(1, p(i)/q(i))`, else ``a``
      w.p. :math:`\\min(1, p_2(a)/\\sum e_{ia})`;
    * pair ``(a, i)``: accept ``i`` w.p. :math:`\\min(1, p_1(i)/Q_{ai}(i))`, else
      ``a`` w.p. :math:`\\min(1, p(a)/\\sum e_{ai})`;
    * otherwise :math:`y \\sim \\mathrm{norm}(p'')` with
      :math:`p''(i) = (p_1(i) - Q_{ai}(i))_+` and :math:`p''(a) = (p_2(a) - \\sum e_{ia})_+`.

    Parameters
    ----------
    p, q : ndarray, shape (V,)
    drafts : tuple of int, length 2
    coins : Coins
    sampling : str
        Must be ``"greedy"`` with ``n = 2`` (checked by the registry).

    Returns
    -------
    int
    """
    T, qt = greedy_split(q, 2)
    _check_fixed(drafts, T)
    a, i = int(T[0]), int(drafts[1])
    z = zero(p)
    off = np.ones(p.shape[0], dtype=bool)
    off[a] = False
    p1 = np.where(off, positive_part(p - q), z)
    e_ia = np.where(off, positive_part(q - p), z)
    q_ai = q[a] * qt
    e_ai = np.where(off, positive_part(q_ai - p1), z)
    s_ia, s_ai = e_ia.sum(), e_ai.sum()
    p2a = max(p[a] - s_ai, z)
    if coins.bernoulli(1 - q[a]):  # pair (i, a): i was the first draft, a ~ q
        if coins.bernoulli(accept_prob(p[i], q[i])):
            return i
        if coins.bernoulli(accept_prob(p2a, s_ia)):
            return a
    else:  # pair (a, i): a was drawn first, then i ~ q_tilde
        if coins.bernoulli(accept_prob(p1[i], q_ai[i])):
            return i
        if coins.bernoulli(accept_prob(p[a], s_ai)):
            return a
    rest = np.where(off, positive_part(p1 - q_ai), z)
    rest[a] = max(p2a - s_ia, z)
    total = rest.sum()
    return coins.categorical(rest / total if total > 0 else p)
