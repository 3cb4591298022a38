r"""Recursive rejection sampling (RRS), with and without replacement.

With replacement, SpecInfer's multi-step speculative sampling [1]_ (docs/theory.md
3.1): the drafts are i.i.d. from ``q``; with :math:`r_1 = p`, draft
:math:`x_i` is accepted with probability :math:`\min(1, r_i(x_i)/q(x_i))`,
else :math:`r_{i+1} = \mathrm{norm}((r_i - q)_+)`; after ``n`` rejections
:math:`y \sim r_{n+1}`.  Acceptance

.. math::

    \alpha_{\text{RRS}} = 1 - \prod_{i=1}^n \Big(1 - \sum_x \min(r_i(x), q(x))\Big).

Without replacement (RSD [2]_, Sequoia [3]_, EAGLE; docs/theory.md §3.2): the
drafts are drawn sequentially without replacement, and both laws move: the
residual subtracts the *current* renormalised draft law :math:`q_i`, and
:math:`q_{i+1}` is :math:`q_i` with :math:`x_i` removed and renormalised.
Subtracting the original ``q`` instead is pitfall P3 (biased).

References
----------
.. [1] Miao et al. "SpecInfer: Accelerating Generative Large Language Model
   Serving with Tree-based Speculative Inference and Verification".
   arXiv:2305.09781.
.. [2] Jeon et al. "Recursive Speculative Decoding: Accelerating LLM Inference
   via Sampling Without Replacement". arXiv:2402.14160.
.. [3] Chen et al. "Sequoia: Scalable, Robust, and Hardware-aware Speculative
   Decoding". arXiv:2402.12374.
"""

from __future__ import annotations

from ._ops import accept_prob, normalise_or, residual

__all__ = ["rrs", "rrs_wor"]


def rrs(p, q, drafts, coins, *, sampling="iid"):
    """RRS with replacement (SpecInfer), for i.i.d. drafts.

    Every draft is tested in order, duplicates included: skipping a repeated
    draft without updating the residual is pitfall P1 (biased).

    Parameters
    ----------
    p, q : ndarray, shape (V,)
        Target and draft distributions (float64 or Fraction object arrays).
    drafts : tuple of int
        i.i.d. draft tokens in draw order.
    coins : Coins
    sampling : str
        Must be ``"iid"`` (checked by the registry).

    Returns
    -------
    int

    Examples
    --------
    docs/theory.md §8.1: after rejecting ``a``, ``r_2 = [0, 1/3, 2/3]``.

    >>> import numpy as np
    >>> from spectheory.coins import ReplayCoins
    >>> p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    >>> rrs(p, q, (0, 2), ReplayCoins([0.7, 0.3]))  # reject a; accept c w.p. 1
    2
    """
    r = p
    for x in drafts:
        if coins.bernoulli(accept_prob(r[x], q[x])):
            return x
        r = residual(r, q)
    return coins.categorical(r)


def rrs_wor(p, q, drafts, coins, *, sampling="without_replacement"):
    """RRS without replacement (RSD / Sequoia / EAGLE), for distinct sequential drafts.

    Parameters
    ----------
    p, q : ndarray, shape (V,)
    drafts : tuple of int
        Distinct draft tokens in draw order, drawn without replacement from ``q``.
    coins : Coins
    sampling : str
        Must be ``"without_replacement"`` (checked by the registry).

    Returns
    -------
    int

    Examples
    --------
    docs/theory.md §3.2: after rejecting ``a``, ``q_2 = [0, 3/4, 1/4]`` and ``b`` is
    accepted with probability 4/9.

    >>> import numpy as np
    >>> from spectheory.coins import ReplayCoins
    >>> p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    >>> rrs_wor(p, q, (0, 1), ReplayCoins([0.9, 0.44]))
    1
    >>> rrs_wor(p, q, (0, 1), ReplayCoins([0.9, 0.45, 0.0]))  # residual is c
    2
    """
    r, qc = p, q
    for x in drafts:
        if coins.bernoulli(accept_prob(r[x], qc[x])):
            return x
        r = residual(r, qc)
        removed = qc.copy()
        removed[x] = 0 * removed[x]
        qc = normalise_or(removed, qc)
    return coins.categorical(r)
