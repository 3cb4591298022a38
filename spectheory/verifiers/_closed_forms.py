r"""Closed-form membership acceptances of docs/theory.md §3.0, one function per verifier.

Each ``fn(p, q, n, sampling)`` takes checked 1-D rows (float64 or Fraction
object arrays; exact in, exact out except K-SEQ, whose :math:`\rho^*` is
irrational in general) and returns the exact membership acceptance
:math:`P(y \in \{x_1..x_n\})`.  They are independent of the verifier code and
are checked against the enumerated laws of :mod:`spectheory.exact` in the
tests.  A draft law without a closed form raises
:class:`~spectheory.InvalidParameterError`.

Every function also takes a batch: target and draft of shape (B, V) give an
array of the B per-row acceptances (float64, or Fraction objects for exact
input), each equal to the function on that row alone.  Inputs are checked as
everywhere in spectheory (:func:`spectheory._validate.as_distribution_pair`).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .._errors import InstanceTooLargeError, InvalidParameterError
from .._validate import as_distribution_pair, check_positive_int
from ..drafting import greedy_split
from ._ops import positive_part, residual
from .kseq import kseq_rho

__all__ = [
    "greedy_acceptance",
    "kseq_acceptance",
    "naive_acceptance",
    "nss_acceptance",
    "rrs_acceptance",
    "sd_acceptance",
    "spechub_acceptance",
]


#: Largest ``n x V`` for the closed forms that loop over the ``n`` drafts (RRS):
#: about a second of numpy work.
MAX_LOOP_WORK = 10**8


def _rowwise(loops_over_n=False):
    """Make a closed form on one checked row (V,) accept (V,) or (B, V) input.

    A batch gives one value per row (the row function on each row); a single
    row gives a scalar.  ``loops_over_n``: the row function costs O(nV), so
    ``n x V`` above :data:`MAX_LOOP_WORK` is refused rather than run for hours.
    """

    def wrap(row_fn):
        params = inspect.signature(row_fn).parameters
        n_default, law_default = params["n"].default, params["sampling"].default

        @functools.wraps(row_fn)
        def public(p, q, n=None, sampling=None):
            if n is None and n_default is inspect.Parameter.empty:
                raise InvalidParameterError(f"{row_fn.__name__} needs n, the number of drafts")
            n = check_positive_int(n_default if n is None else n, "n")
            sampling = law_default if sampling is None else sampling
            P, Q, batched = as_distribution_pair(p, q, allow_exact=True)
            if loops_over_n and n * P.shape[1] > MAX_LOOP_WORK:
                raise InstanceTooLargeError(
                    f"{row_fn.__name__} loops over the n = {n} drafts at V = {P.shape[1]} "
                    f"(n x V > {MAX_LOOP_WORK:.0e}); use a smaller n"
                )
            values = [row_fn(P[b], Q[b], n, sampling) for b in range(P.shape[0])]
            if not batched:
                return values[0]
            exact = P.dtype == object and not isinstance(values[0], float | np.floating)
            return np.array(values, dtype=object if exact else np.float64)

        public.row = row_fn
        return public

    return wrap


def _need(sampling, allowed, name):
    if sampling not in allowed:
        raise InvalidParameterError(
            f"{name} has no closed form for sampling={sampling!r}; it has one for "
            f"{', '.join(map(repr, allowed))}"
        )


@_rowwise()
def sd_acceptance(p, q, n=1, sampling="iid"):
    r""":math:`\sum_x \min(p(x), q(x))` (docs/theory.md §1.2)."""
    return np.minimum(p, q).sum()


@_rowwise(loops_over_n=True)
def rrs_acceptance(p, q, n, sampling="iid"):
    r"""RRS: :math:`1 - \prod_{i=1}^n (1 - \sum \min(r_i, q))` (docs/theory.md §3.1).

    Here :math:`r_1 = p` and :math:`r_{i+1} = \mathrm{norm}((r_i - q)_+)`.

    Examples
    --------
    >>> import numpy as np
    >>> from fractions import Fraction as F
    >>> p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    >>> q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> rrs_acceptance(p, q, 2), rrs_acceptance(p, q, 3)
    (Fraction(41, 50), Fraction(106, 125))
    """
    _need(sampling, ("iid",), "rrs")
    r, miss = p, 1
    for _ in range(n):
        miss = miss * (1 - np.minimum(r, q).sum())
        r = residual(r, q)
    return 1 - miss


@_rowwise()
def kseq_acceptance(p, q, n, sampling="iid"):
    r"""K-SEQ (docs/theory.md §3.3).

    .. math::

        p_{\text{acc}} + (1 - p_{\text{acc}})\sum_t p_{\text{res}}(t)(1 - (1 - r(t))^n)


    ``r = (q - p/rho)_+ / (1 - beta)`` is the law of a rejected draft.  With
    Fraction input the rational :math:`\rho` of :func:`~.kseq.kseq_rho` is used.
    """
    _need(sampling, ("iid",), "kseq")
    rho = kseq_rho(p, q, n)
    first = np.minimum(q, p / rho)
    b = first.sum()
    p_acc = 1 - (1 - b) ** n
    if p_acc == 1:
        return p_acc
    scale = p_acc / b if b > 0 else 0 * b
    p_res = positive_part(p - scale * first)
    if not p_res.sum() > 0:  # float rounding made p_acc a few ulps below 1
        return p_acc
    p_res = p_res / p_res.sum()
    r = positive_part(q - p / rho) / (1 - b)
    return p_acc + (1 - p_acc) * (p_res * (1 - (1 - r) ** n)).sum()


def _hub_value(p, q, n):
    T, qt = greedy_split(q, n)
    inT = np.zeros(p.shape[0], dtype=bool)
    inT[T] = True
    z = 0 * p[0]
    return p[inT].sum() + np.where(inT, z, np.minimum(p, qt)).sum()


@_rowwise()
def greedy_acceptance(p, q, n, sampling="greedy"):
    r"""Greedy optimum :math:`p(T) + \sum_{i \notin T} \min(p(i), \tilde q(i))`.

    docs/theory.md §2.6.
    """
    _need(sampling, ("greedy",), "greedy")
    return _hub_value(p, q, n)


@_rowwise()
def spechub_acceptance(p, q, n=2, sampling="greedy"):
    r""":math:`p(a) + \sum_{i \ne a} \min(p(i), \tilde q(i))`, ``a = argmax q``.

    docs/theory.md §3.4.
    """
    _need(sampling, ("greedy",), "spechub")
    if n != 2:
        raise InvalidParameterError(f"spechub needs n=2; got n={n}")
    return _hub_value(p, q, 2)


@_rowwise()
def nss_acceptance(p, q, n, sampling="iid"):
    r"""NSS: :math:`\sum_t p(t)\,P(t \in \text{drafts})` (docs/theory.md §3.5).

    The inclusion probability is :math:`1 - (1 - q)^n` for i.i.d. drafts; for
    greedy drafts 1 on ``T`` and :math:`\tilde q` off it.
    """
    _need(sampling, ("iid", "greedy"), "nss")
    if sampling == "iid":
        return (p * (1 - (1 - q) ** n)).sum()
    T, qt = greedy_split(q, n)
    incl = qt.copy()
    incl[T] = 1 + 0 * p[0]
    return (p * incl).sum()


@_rowwise()
def naive_acceptance(p, q, n, sampling="iid"):
    r"""Naive, i.i.d. (3.6): :math:`\sum \min(p, q) + \sum (p - q)_+ (1 - (1 - q)^{n-1})`."""
    _need(sampling, ("iid",), "naive")
    return np.minimum(p, q).sum() + (positive_part(p - q) * (1 - (1 - q) ** (n - 1))).sum()
