r"""Point-mass verification (NSS): lossless for any drafter (docs/theory.md §3.5).

The draft probabilities are ignored.  With :math:`r = p`, for each *distinct*
draft ``x`` in order: accept ``x`` with probability :math:`r(x)`, else zero
:math:`r(x)` and renormalise; finally :math:`y \sim r`.  The output is ``p``
conditionally on the drafted tokens, whatever produced them (argmax, top-k,
n-gram, beam), which is what EAGLE-2 (``qx = 1``), vLLM (``NO_DRAFT_PROBS``)
and SGLang (``target_only``) do, and has the law of naive sampling
:math:`y \sim p` (SpecInfer [1]_).  Acceptance
:math:`\sum_t p(t)\,P(t \in \{x_1..x_n\})`; for i.i.d. drafts
:math:`\sum_t p(t)(1 - (1 - q(t))^n)`.

References
----------
.. [1] Miao et al. "SpecInfer". arXiv:2305.09781.
"""

from __future__ import annotations

from ._ops import normalise_or

__all__ = ["nss"]


def nss(p, q, drafts, coins, *, sampling="iid"):
    """Point-mass recursion over the distinct drafts; ``q`` is unused.

    Parameters
    ----------
    p, q : ndarray, shape (V,)
    drafts : tuple of int
        Any draft tokens; repeats are tested once.
    coins : Coins
    sampling : str
        Unused: valid under every draft law.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.coins import ReplayCoins
    >>> p = np.array([0.5, 0.25, 0.25])
    >>> nss(p, None, (1, 1, 0), ReplayCoins([0.3, 0.7, 0.9]))  # reject b, reject a, y = c
    2
    """
    r = p
    seen = set()
    for x in drafts:
        if x in seen:
            continue
        seen.add(x)
        if coins.bernoulli(r[x]):
            return x
        rest = r.copy()
        rest[x] = 0 * rest[x]
        r = normalise_or(rest, r)
    return coins.categorical(r)
