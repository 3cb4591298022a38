r"""Roofline cost of a batched forward pass, and the optimal number of i.i.d. drafts per batch.

One round of multi-draft speculative decoding at decoding batch size :math:`B`
drafts :math:`n` i.i.d. tokens per sequence from one draft forward and verifies
them in one target forward over :math:`B (n + 1)` tokens, yielding
:math:`1 + \alpha(n)` tokens per sequence, where :math:`\alpha(n)` is the
optimal multi-draft acceptance (:func:`spectheory.bound`, i.i.d. drafts).
Under the roofline model [1]_ a forward of a :math:`P`-parameter model over
:math:`x` tokens takes

.. math::

    t(x) = \max\Big(\frac{P\,s}{W},\; \frac{2 P x}{F}\Big),

with :math:`s` bytes per parameter, :math:`W` the memory bandwidth and
:math:`F` the compute rate, so the throughput gain over plain decoding is

.. math::

    S(n, B) = \frac{(1 + \alpha(n))\, t_t(B)}{t_d(B) + t_t\big(B (n + 1)\big)}.

While the target's forward is memory-bound, extra drafts are verified for
free and :math:`n^*(B) = \arg\max_n S(n, B)` is large; far above the knee
:math:`x = F s / (2 W)` one draft is best.  Scylla [2]_ (docs/theory.md §6.1)
reports :math:`n^*` decreasing log-linearly in :math:`B`.

References
----------
.. [1] Williams, Waterman, Patterson. "Roofline: an insightful visual
   performance model". CACM 2009.
.. [2] Yan et al. "Scaling Laws for Speculative Decoding". arXiv:2505.07858.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError
from .._validate import check_positive_int, check_positive_real, real_array

__all__ = ["Roofline", "batch_speedup", "optimal_width"]


@dataclass(frozen=True)
class Roofline:
    r"""Roofline time of a forward pass over ``x`` tokens: :math:`\max(P s / W, 2 P x / F)`.

    Attributes
    ----------
    bandwidth : float > 0
        Bytes per second (default 3.35e12, H100 SXM HBM3).
    flops : float > 0
        Sustained FLOP/s (default half of 989e12, dense bf16).
    bytes_per_param : float > 0
        2 for bf16 weights.

    Raises
    ------
    InvalidParameterError
        An attribute that is not a finite real number > 0 (bools, strings,
        NaN and infinities are refused).
    """

    bandwidth: float = 3.35e12
    flops: float = 0.5 * 989e12
    bytes_per_param: float = 2.0

    def __post_init__(self):
        for name in ("bandwidth", "flops", "bytes_per_param"):
            check_positive_real(getattr(self, name), name)

    def time(self, params, tokens):
        """Seconds of one forward of a ``params``-parameter model over ``tokens`` tokens.

        Parameters
        ----------
        params : float > 0
            Parameter count :math:`P` (finite).
        tokens : int >= 1 or array_like of them
            Tokens in the forward; bools, floats and strings are refused.

        Returns
        -------
        float or ndarray (the shape of ``tokens``)

        Raises
        ------
        InvalidParameterError
            ``params`` not a finite real > 0, or a ``tokens`` entry that is not
            an integer >= 1.

        >>> r = Roofline(bandwidth=1.0, flops=4.0, bytes_per_param=1.0)
        >>> r.time(10, 1), r.time(10, 4)
        (10.0, 20.0)
        """
        params = check_positive_real(params, "params")
        if isinstance(tokens, np.ndarray) and tokens.dtype.kind in "iu":
            if tokens.size and tokens.min() < 1:
                raise InvalidParameterError(f"tokens must be >= 1; got {int(tokens.min())}")
        else:  # entry by entry: a list [True, 2] has an integer dtype
            for t in np.asarray(tokens, dtype=object).flat:
                check_positive_int(t, "tokens")
        tokens = np.asarray(tokens, dtype=np.float64)
        memory = params * self.bytes_per_param / self.bandwidth
        out = np.maximum(memory, 2 * params * tokens / self.flops)
        return out.item() if out.ndim == 0 else out


def batch_speedup(alpha, batch, target_params, draft_params, roofline=None):
    r"""Throughput gain :math:`S(n, B)` for ``n = 1 .. len(alpha)`` i.i.d. drafts (ndarray).

    Parameters
    ----------
    alpha : array_like, (n_max,)
        ``alpha[n - 1]`` is :math:`\alpha(n)`, a real number in [0, 1].
    batch : int >= 1
        The decoding batch size :math:`B` (bools and floats are refused).
    target_params, draft_params : float > 0
        Parameter counts :math:`P_t`, :math:`P_d` (finite).
    roofline : Roofline, optional
        Default ``Roofline()``.

    Raises
    ------
    InvalidParameterError
        ``alpha`` empty, not 1-D, or with an entry that is NaN, outside
        [0, 1], a bool, a string or complex; ``batch`` not an integer >= 1;
        a parameter count that is not a finite real > 0.

    Examples
    --------
    >>> r = Roofline(bandwidth=1.0, flops=1e9, bytes_per_param=1.0)  # memory-bound
    >>> batch_speedup([0.5, 0.7], 1, 100, 10, r).round(4).tolist()
    [1.3636, 1.5455]
    """
    roofline = roofline or Roofline()
    a = real_array(alpha, "alpha")
    if a.ndim != 1 or a.size == 0:
        raise InvalidParameterError(
            f"alpha must be a non-empty 1-D array in [0, 1]; got shape {a.shape}"
        )
    bad = ~((a >= 0) & (a <= 1))  # NaN fails both comparisons
    if bad.any():
        i = int(np.argmax(bad))
        raise InvalidParameterError(f"alpha must lie in [0, 1]; got {float(a[i])!r} at index {i}")
    batch = check_positive_int(batch, "batch")
    target_params = check_positive_real(target_params, "target_params")
    draft_params = check_positive_real(draft_params, "draft_params")
    n = np.arange(1, a.size + 1)
    tt = roofline.time(target_params, batch)
    td = roofline.time(draft_params, batch)
    return (1 + a) * tt / (td + roofline.time(target_params, batch * (n + 1)))


def optimal_width(alpha, batches, target_params, draft_params, roofline=None):
    """``(n*, S(n*, B))`` per batch size: the first maximiser of :func:`batch_speedup`.

    Parameters
    ----------
    alpha, target_params, draft_params, roofline
        As in :func:`batch_speedup`.
    batches : iterable of int >= 1
        Batch sizes :math:`B`.

    Raises
    ------
    InvalidParameterError
        As :func:`batch_speedup`, for the first bad input.

    Examples
    --------
    >>> r = Roofline(bandwidth=1.0, flops=1e9, bytes_per_param=1.0)
    >>> n_star, s_star = optimal_width([0.5, 0.7], [1, 2], 100, 10, r)
    >>> n_star.tolist(), s_star.round(4).tolist()
    ([2, 2], [1.5455, 1.5455])
    """
    ns, ss = [], []
    for B in batches:
        s = batch_speedup(alpha, B, target_params, draft_params, roofline)
        k = int(np.argmax(s))
        ns.append(k + 1)
        ss.append(float(s[k]))
    return np.asarray(ns), np.asarray(ss)
