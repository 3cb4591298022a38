r"""K-SEQ, the sequential selection verifier of SpecTr (Sun et al. [1]_; docs/theory.md §3.3).

With :math:`\beta(\rho) = \sum_x \min(p(x)/\rho,\, q(x))` and
:math:`p_{\text{acc}}(\rho) = 1 - (1 - \beta(\rho))^n`, the drafts
:math:`x_1..x_n` (i.i.d. from ``q``) are tested in order and :math:`x_i` is
accepted with probability :math:`\min(1, p(x_i)/(\rho\,q(x_i)))`.  The first
acceptance has law :math:`\min(q, p/\rho)\,p_{\text{acc}}/\beta`, which is at
most ``p`` exactly when

.. math::

    g(\rho) = p_{\text{acc}}(\rho) - \rho\,\beta(\rho) \le 0 ,

so every :math:`\rho \in [\rho^*, n]` gives a lossless verifier, with
:math:`\rho^*` the root of the non-increasing ``g`` on :math:`[1, n]`
(:math:`g(1) \ge 0 \ge g(n)`), which maximises the acceptance.  After ``n``
rejections the output is drawn from

.. math::

    p_{\text{res}} = \mathrm{norm}\big(p - \tfrac{p_{\text{acc}}}{\beta}\min(q, p/\rho)\big),

which at the root is :math:`\mathrm{norm}((p - \rho^* q)_+)`.

Exactness: :math:`\rho^*` is irrational in general.  Float input uses the
bisection root (the upper end of the final bracket, checked to satisfy
:math:`g(\rho) \le 0`).  Fraction input uses a rational :math:`\rho \ge \rho^*`:
the smallest of a few simple fractions near the float root (and the float root
itself, stepped up by a few ulps if needed) for which :math:`g(\rho) \le 0` holds
in exact arithmetic (it is the exact root when that is rational, e.g.
:math:`\rho^* = 7/5` on docs/theory.md §8.1).  The verifier is then exactly
lossless for that :math:`\rho`; its acceptance is below the optimum by at most
about 1e-15 when the true root is irrational.  Using a wrong
:math:`\rho < \rho^*` (for example 1) is pitfall P4 (biased).

References
----------
.. [1] Sun, Suresh, Ro, Beirami, Jain, Yu. "SpecTr: Fast Speculative Decoding
   via Optimal Transport". arXiv:2310.15141.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np

from .._errors import InvalidParameterError, ShapeMismatchError
from .._validate import as_distribution_pair, check_positive_int, check_positive_real
from ._ops import accept_prob, normalise_or, positive_part

__all__ = ["kseq", "kseq_rho"]


def _beta(p, q, rho):
    return np.minimum(p / rho, q).sum()


def _g(p, q, n, rho):
    b = _beta(p, q, rho)
    return 1 - (1 - b) ** n - rho * b


def _float_root(p, q, n):
    lo, hi = 1.0, float(n)
    if _g(p, q, n, lo) <= 0:
        return lo
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _g(p, q, n, mid) <= 0:
            hi = mid
        else:
            lo = mid
    return hi


@lru_cache(maxsize=512)
def _rho_float_cached(p_bytes, q_bytes, n):
    # Keyed on the raw bytes: hashing them is ~50x cheaper than a tuple of V floats.
    return _float_root(np.frombuffer(p_bytes), np.frombuffer(q_bytes), n)


@lru_cache(maxsize=512)
def _rho_cached(p_key, q_key, n):
    p = np.array(p_key, dtype=object)
    q = np.array(q_key, dtype=object)
    root = _float_root(p.astype(float), q.astype(float), n)
    # g is non-increasing: any rational with g <= 0 is valid, the smallest is best.
    simple = {Fraction(root).limit_denominator(d) for d in (10, 100, 1000, 10**6)}
    valid = [c for c in simple if 1 <= c <= n and _g(p, q, n, c) <= 0]
    hi, step = Fraction(root), Fraction(1, 2**50)
    while hi < n and _g(p, q, n, hi) > 0:  # float rounding left the root a few ulps low
        hi, step = min(hi + step, Fraction(n)), 2 * step
    return min([*valid, hi])


def kseq_rho(p, q, n):
    """K-SEQ's :math:`\\rho^*` (float input) or a rational :math:`\\rho \\ge \\rho^*` (Fraction).

    Parameters
    ----------
    p, q : ndarray, shape (V,)
        Target and draft (float64, or Fraction object arrays).
    n : int
        Number of i.i.d. drafts.

    Examples
    --------
    >>> import numpy as np
    >>> from fractions import Fraction as F
    >>> p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    >>> q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> kseq_rho(p, q, 2), kseq_rho(p, q, 3)
    (Fraction(7, 5), Fraction(7, 4))
    """
    n = check_positive_int(n, "n")
    # A NaN row gave rho = 1 silently: check the pair (renormalised float64 or exact rows).
    pc, qc, batched = as_distribution_pair(p, q, allow_exact=True)
    if batched:
        raise ShapeMismatchError(f"kseq_rho takes one row of shape (V,); got {np.shape(p)}")
    p, q = pc[0], qc[0]
    if p.dtype != object:
        return _rho_float_cached(p.tobytes(), q.tobytes(), n)
    return _rho_cached(tuple(p.tolist()), tuple(q.tolist()), n)


def kseq(p, q, drafts, coins, *, sampling="iid", rho=None):
    """K-SEQ on i.i.d. drafts with the optimal :math:`\\rho^*` (or a given ``rho``).

    Parameters
    ----------
    p, q : ndarray, shape (V,)
    drafts : tuple of int
        i.i.d. draft tokens.
    coins : Coins
    sampling : str
        Must be ``"iid"`` (checked by the registry).
    rho : float or Fraction, optional
        Override :math:`\\rho`: a finite real number > 0; lossless only for
        :math:`\\rho \\in [\\rho^*, n]` (not checked here: that needs
        :math:`\\rho^*`).

    Returns
    -------
    int

    Raises
    ------
    InvalidParameterError
        A draft that is not a token id in ``[0, V)``, or a ``rho`` that is not
        a finite real number > 0 (bool, NaN, inf, <= 0).  ``p`` and ``q`` are
        checked only when ``rho`` is computed here (by :func:`kseq_rho`).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.coins import ReplayCoins
    >>> p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    >>> kseq(p, q, (0, 1), ReplayCoins([0.2, 0.99, 0.5]))  # p/(1.4 q) = 5/14 at a
    0
    >>> kseq(p, q, (0, 0), ReplayCoins([0.5, 0.5, 0.3]))  # both rejected: residual is c
    2
    """
    n = len(drafts)
    V = len(p)
    for x in drafts:  # bounds only (cheap, per token): a negative id would wrap around
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not 0 <= x < V:
            raise InvalidParameterError(
                f"drafts must hold token ids, integers in [0, {V}); got {x!r}"
            )
    if rho is None:
        rho = kseq_rho(p, q, n)
    else:
        check_positive_real(rho, "rho")  # kept as given: a Fraction stays exact
    for x in drafts:
        if coins.bernoulli(accept_prob(p[x], rho * q[x])):
            return x
    first = np.minimum(q, p / rho)
    b = first.sum()
    p_acc = 1 - (1 - b) ** n
    scale = p_acc / b if b > 0 else 0 * b
    return coins.categorical(normalise_or(positive_part(p - scale * first), p))
