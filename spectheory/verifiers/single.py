r"""Single-draft speculative sampling and its naive multi-draft use.

Standard SD (Leviathan, Kalman, Matias [1]_; Chen et al. [2]_; docs/theory.md §1.1):
accept the draft :math:`x \sim q` with probability :math:`\min(1, p(x)/q(x))`,
else output :math:`y \sim \mathrm{norm}((p - q)_+)`.  Its output law is ``p`` and
its acceptance :math:`\sum_x \min(p(x), q(x))`.

Naive (Thomas et al., Alg. 7; docs/theory.md §3.6): run SD on the first of ``n``
drafts and ignore the others, except that a residual may land on one of them.
For i.i.d. drafts

.. math::

    \alpha_{\text{naive}} = \sum \min(p, q) + \sum (p - q)_+\,(1 - (1 - q)^{n-1}).

References
----------
.. [1] Leviathan, Kalman, Matias. "Fast Inference from Transformers via
   Speculative Decoding". arXiv:2211.17192.
.. [2] Chen, Borgeaud, Irving, Lespiau, Sifre, Jumper. "Accelerating Large
   Language Model Decoding with Speculative Sampling". arXiv:2302.01318.
"""

from __future__ import annotations

from ._ops import accept_prob, residual

__all__ = ["naive", "sd"]


def sd(p, q, drafts, coins, *, sampling="iid"):
    """Standard speculative sampling on ``drafts[0]`` (``n = 1``).

    Parameters
    ----------
    p, q : ndarray, shape (V,)
        Target and draft distributions (float64 or Fraction object arrays).
    drafts : tuple of int
        Draft tokens in draw order; only the first is used.
    coins : Coins
        Source of randomness (:mod:`spectheory.coins`).
    sampling : str
        Draft law; unused (one draft from ``q`` under every law).

    Returns
    -------
    int
        The output token.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.coins import ReplayCoins
    >>> p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    >>> sd(p, q, (0,), ReplayCoins([0.4]))  # u = 0.4 < p/q = 0.5: accept
    0
    >>> sd(p, q, (0,), ReplayCoins([0.6, 0.1]))  # reject; residual [0, .5, .5]
    1
    """
    x = drafts[0]
    if coins.bernoulli(accept_prob(p[x], q[x])):
        return x
    return coins.categorical(residual(p, q))


def naive(p, q, drafts, coins, *, sampling="iid"):
    """SD on the first draft; the residual may land on a later draft (docs/theory.md §3.6).

    Lossless whenever the first draft is distributed as ``q``: i.i.d. and
    without-replacement drafts.  Same parameters as :func:`sd`.
    """
    return sd(p, q, drafts, coins, sampling=sampling)
