"""Logits to processed next-token distributions: temperature, top-k, top-p.

Losslessness is relative to the *processed* target (docs/theory.md §0, the
processing rule), and the draft's ``q`` must be exactly the law its tokens were
sampled from.  :func:`process_pair` therefore applies one set of settings to
both models.  Order of operations (as in Hugging Face and vLLM): temperature,
then top-k, then top-p.  Ties are broken towards the lowest token id
everywhere, so the result is a deterministic function of the logits.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ._errors import InvalidDistributionError, InvalidParameterError, ShapeMismatchError

__all__ = ["process_logits", "process_pair", "softmax"]


def softmax(logits, axis=-1):
    """Numerically stable softmax in float64 (``-inf`` logits give probability 0).

    ``logits`` is checked like :func:`process_logits`: shape (V,) or (B, V),
    real (not bool, str or complex), no NaN or ``+inf``, and not every logit
    of a row ``-inf``.  ``axis`` must be a valid axis of that shape.

    >>> softmax([0.0, np.log(3.0)]).round(6).tolist()
    [0.25, 0.75]
    >>> softmax([1e308, -1e308, 1e308]).tolist()  # no overflow: the max is subtracted first
    [0.5, 0.0, 0.5]
    """
    try:
        z = np.asarray(logits)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise InvalidDistributionError(f"logits cannot be read as an array: {exc}") from None
    ndim = z.ndim
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not (
        -max(ndim, 1) <= axis < max(ndim, 1)
    ):
        raise InvalidParameterError(f"axis must be an integer axis of the logits; got {axis!r}")
    moved = np.moveaxis(z, axis, -1) if ndim == 2 else z
    checked, batched = _check_logits(moved, "logits")
    out = _softmax_rows(checked)
    out = out if batched else out[0]
    return np.moveaxis(out, -1, axis) if ndim == 2 else out


def _softmax_rows(z):
    """Softmax of checked (B, V) float64 rows (each with a finite maximum)."""
    m = np.max(z, axis=1, keepdims=True)
    with np.errstate(over="ignore"):  # -1e308 - 1e308 is -inf: exp gives 0 as it should
        e = np.exp(z - m)
    return e / e.sum(axis=1, keepdims=True)


def _check_logits(logits, name):
    try:
        z = np.asarray(logits)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise InvalidDistributionError(f"{name} cannot be read as an array: {exc}") from None
    if z.dtype.kind not in "fiu" or z.dtype.kind == "b":
        raise InvalidDistributionError(
            f"{name} has dtype {z.dtype}; expected floating-point logits"
        )
    if z.ndim not in (1, 2) or z.shape[-1] == 0:
        raise ShapeMismatchError(f"{name} must have shape (V,) or (B, V); got {z.shape}")
    batched = z.ndim == 2
    z = np.atleast_2d(z).astype(np.float64)
    bad = np.isnan(z) | (z == np.inf)
    if bad.any():
        r, t = np.argwhere(bad)[0]
        where = f" row {r}" if batched else ""
        raise InvalidDistributionError(f"{name}{where} has logit {z[r, t]} at token {t}")
    dead = np.all(z == -np.inf, axis=1)
    if dead.any():
        r = int(np.argmax(dead))
        where = f" row {r}" if batched else ""
        raise InvalidDistributionError(f"{name}{where} has every logit equal to -inf")
    return z, batched


def _check_settings(temperature, top_k, top_p, vocab):
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise InvalidParameterError(f"temperature must be a real number >= 0; got {temperature!r}")
    try:  # a huge Python int (10**400) does not fit a float; numpy's isfinite raises TypeError
        finite = math.isfinite(float(temperature))
    except OverflowError:
        finite = False
    if not finite or temperature < 0:
        raise InvalidParameterError(f"temperature must be finite and >= 0; got {temperature!r}")
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1:
            raise InvalidParameterError(f"top_k must be None or an integer >= 1; got {top_k!r}")
    if top_p is not None:
        if isinstance(top_p, bool) or not isinstance(top_p, numbers.Real):
            raise InvalidParameterError(f"top_p must be None or a number in (0, 1]; got {top_p!r}")
        if not 0 < top_p <= 1:
            raise InvalidParameterError(f"top_p must be in (0, 1]; got {top_p!r}")


def _descending_order(z):
    # Stable sort of -z: equal logits keep ascending token id.
    return np.argsort(-z, axis=1, kind="stable")


def process_logits(logits, temperature=1.0, top_k=None, top_p=None):
    r"""Turn logits into the distribution that tokens are sampled from.

    .. math::

        p_i \propto \exp(z_i / T)\,\mathbb 1[i \in K]\,\mathbb 1[i \in P]

    where :math:`K` holds the ``top_k`` largest logits and :math:`P` is the
    smallest set of most likely tokens (after temperature and top-k) whose
    probability reaches ``top_p``.  ``temperature=0`` gives the one-hot
    argmax, ties going to the lowest token id.

    Parameters
    ----------
    logits : array_like, shape (V,) or (B, V)
        Real logits; ``-inf`` marks a masked token.  NaN and ``+inf`` raise.
    temperature : float, >= 0
    top_k : int >= 1, optional
        Exactly ``top_k`` tokens are kept (ties by lowest id).
    top_p : float in (0, 1], optional
        Nucleus threshold; at least one token is always kept.

    Returns
    -------
    ndarray, float64, same shape as ``logits``
        Rows summing to 1.

    Examples
    --------
    >>> process_logits([1.0, 3.0, 3.0], temperature=0).tolist()
    [0.0, 1.0, 0.0]
    >>> process_logits([0.0, 0.0, np.log(2.0)], top_k=2).round(4).tolist()
    [0.3333, 0.0, 0.6667]
    """
    z, batched = _check_logits(logits, "logits")
    _check_settings(temperature, top_k, top_p, z.shape[1])
    if temperature == 0:
        out = np.zeros_like(z)
        out[np.arange(z.shape[0]), np.argmax(z, axis=1)] = 1.0  # argmax: first maximum
        return out if batched else out[0]
    # Shift by the row maximum before dividing: z / T overflows for T = 1e-310
    # or logits near 1e308 (inf - inf = NaN), z - max <= 0 cannot overflow to +inf.
    # Orders come from the raw logits: the shift and the division are monotone
    # but may round distinct logits together.
    raw = z
    with np.errstate(over="ignore"):
        z = (z - np.max(z, axis=1, keepdims=True)) / temperature
    if top_k is not None and top_k < z.shape[1]:
        drop = _descending_order(raw)[:, top_k:]
        np.put_along_axis(z, drop, -np.inf, axis=1)
    probs = _softmax_rows(z)
    if top_p is not None and top_p < 1:
        order = _descending_order(raw)
        sorted_p = np.take_along_axis(probs, order, axis=1)
        mass_before = np.cumsum(sorted_p, axis=1) - sorted_p
        drop_sorted = mass_before >= top_p  # keep tokens until the mass reaches top_p
        drop_sorted[:, 0] = False
        drop = np.zeros_like(drop_sorted)
        np.put_along_axis(drop, order, drop_sorted, axis=1)
        probs = np.where(drop, 0.0, probs)
        probs /= probs.sum(axis=1, keepdims=True)
    return probs if batched else probs[0]


def process_pair(target_logits, draft_logits, temperature=1.0, top_k=None, top_p=None):
    """Process target and draft logits with the same settings.

    Returns ``(target, draft)`` probabilities; see :func:`process_logits`.
    Vocabulary and batch shapes must agree.
    """
    t = np.asarray(target_logits)
    d = np.asarray(draft_logits)
    if t.shape != d.shape:
        raise ShapeMismatchError(
            f"target_logits and draft_logits must have the same shape; got {t.shape} and {d.shape}"
        )
    return (
        process_logits(t, temperature, top_k, top_p),
        process_logits(d, temperature, top_k, top_p),
    )
