"""Turning user input into checked float64 (or exact rational) distributions.

Rules (docs/design.md, "Numerics and bad input"):

* float16, bfloat16 (torch), float32 and float64 are accepted and computed in
  float64; Python lists of numbers and integer arrays are accepted too.
* A row must be finite, non-negative and sum to 1 within a tolerance that
  depends on the input's precision (:data:`SUM_TOLERANCE`, or ``atol``).
  Within it the row is renormalised, unless its computed sum is already 1 to
  within that sum's own rounding bound (:func:`sum_rounding_bound`): dividing
  by such a sum cannot bring the row closer to 1, so it is left as it is.
  Outside the tolerance the call raises.
* Exact inputs (object arrays of :class:`fractions.Fraction` or ``int``) must
  sum to exactly 1 and are kept exact.

Every error names the argument, the row and the offending value.
"""

from __future__ import annotations

import math
import numbers
import operator
from fractions import Fraction

import numpy as np

from ._errors import (
    InstanceTooLargeError,
    InvalidDistributionError,
    InvalidParameterError,
    ShapeMismatchError,
)
from ._validate_kernels import row_stats

__all__ = [
    "SUM_TOLERANCE",
    "as_distribution",
    "as_distribution_pair",
    "check_choice",
    "check_limit",
    "check_positive_int",
    "check_positive_real",
    "check_rng",
    "check_uniforms",
    "real_array",
    "sum_rounding_bound",
]

#: Largest accepted ``|sum(row) - 1|`` by the input's floating-point type.  A
#: float64 row computed by a softmax sums to 1 within ~1e-15; float32 within
#: ~1e-6 at V = 152k; float16 rows lose up to ~3e-3 to underflow at V = 49k.
SUM_TOLERANCE = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}


def _to_numpy(x, name):
    """Convert ``x`` to a numpy array, accepting torch tensors (bfloat16 included)."""
    dtype_name = None
    if type(x).__module__.startswith("torch"):
        dtype_name = str(x.dtype).removeprefix("torch.")
        x = x.detach().cpu()
        if dtype_name == "bfloat16":
            x = x.float()
        x = x.numpy()
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged lists
        raise InvalidDistributionError(f"{name} cannot be read as an array: {exc}") from None
    return arr, dtype_name or arr.dtype.name


def sum_rounding_bound(V: int) -> float:
    r"""Largest rounding error of the row sum of :func:`row_stats` for ``V`` entries summing to 1.

    The sum runs in four sequential lanes of about ``V / 4`` additions, then
    two pairwise additions and up to three tail additions; each addition of
    non-negative terms whose total is at most 1 errs by at most
    :math:`u = 2^{-53}`, so the computed sum of an exactly normalised row lies
    within :math:`(V/4 + 8)\,u` of 1 (first order; :math:`1.4 \cdot 10^{-12}`
    at ``V`` = 49,152).  A row whose computed sum is that close to 1 cannot be
    told from a normalised one, and dividing by the sum would only move its
    entries by rounding.

    Examples
    --------
    >>> f"{sum_rounding_bound(49_152):.2e}"
    '1.37e-12'
    """
    return (V / 4 + 8) * 2.0**-53


def _row_label(batched: bool, row: int) -> str:
    return f" row {row}" if batched else ""


def as_distribution(
    x, name: str, *, atol: float | None = None, allow_exact: bool = False, copy: bool = True
):
    """Check one distribution or a batch of them.

    Parameters
    ----------
    x : array_like, shape (V,) or (B, V)
        Probabilities.  Floating point of any precision, integers, or (with
        ``allow_exact``) an object array of :class:`fractions.Fraction`.
    name : str
        Argument name used in error messages (``"target"``, ``"draft"``).
    atol : float, optional
        Accepted ``|sum - 1|``; default :data:`SUM_TOLERANCE` for the dtype.
    allow_exact : bool
        Keep Fraction/int object arrays exact instead of refusing them.
    copy : bool
        Return a copy when the rows are returned as they are (float64 input
        whose sums are 1 within :func:`sum_rounding_bound`), so that the
        caller may write to them.  ``False`` returns the input's own memory
        then: for callers that only read (``bound``), where the copy of a
        large batch costs more than the whole check (page faults of a fresh
        allocation).

    Returns
    -------
    ndarray, shape (B, V)
        float64 rows summing to 1: renormalised, or as given when the computed
        sum is 1 within its own rounding bound (or exact object rows).
    batched : bool
        Whether the input was 2-D.
    """
    arr, dtype_name = _to_numpy(x, name)
    if arr.ndim not in (1, 2):
        raise ShapeMismatchError(
            f"{name} must have shape (V,) or (B, V); got an array of shape {arr.shape}"
        )
    batched = arr.ndim == 2
    rows = arr.reshape(1, -1) if not batched else arr
    if rows.shape[1] == 0 or rows.shape[0] == 0:
        raise ShapeMismatchError(f"{name} is empty (shape {arr.shape})")

    if arr.dtype == object:
        if not allow_exact:
            raise InvalidDistributionError(
                f"{name} has dtype object; expected floating-point probabilities "
                "(exact Fraction arrays are accepted only by exact methods)"
            )
        return _check_exact(rows, name, batched), batched
    if arr.dtype.kind == "b" or arr.dtype.kind not in "fiu":
        raise InvalidDistributionError(
            f"{name} has dtype {dtype_name}; expected floating-point probabilities"
        )
    if atol is not None and not (isinstance(atol, numbers.Real) and 0 <= atol < 1):
        raise InvalidParameterError(f"atol must be a number in [0, 1); got {atol!r}")
    tol = SUM_TOLERANCE.get(dtype_name, SUM_TOLERANCE["float64"]) if atol is None else atol
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    first_bad, sums = row_stats(rows)
    bad_rows = np.flatnonzero(first_bad >= 0)
    if bad_rows.size:
        r = int(bad_rows[0])
        t = int(first_bad[r])
        v = float(rows[r, t])
        kind = "a negative" if v < 0 else "a non-finite"
        raise InvalidDistributionError(
            f"{name}{_row_label(batched, r)} has {kind} entry {v!r} at token {t}"
        )
    off = np.abs(sums - 1.0) > tol
    if off.any():
        r = int(np.argmax(off))
        raise InvalidDistributionError(
            f"{name}{_row_label(batched, r)} sums to {float(sums[r])!r}, not 1 "
            f"(tolerance {tol:g} for {dtype_name})"
        )
    if np.all(np.abs(sums - 1.0) <= sum_rounding_bound(rows.shape[1])):
        return (rows.copy() if copy and np.shares_memory(rows, arr) else rows), batched
    return rows / sums[:, None], batched


def _check_exact(rows, name, batched):
    out = np.empty(rows.shape, dtype=object)
    for r in range(rows.shape[0]):
        total = Fraction(0)
        for t in range(rows.shape[1]):
            v = rows[r, t]
            if isinstance(v, bool) or not isinstance(v, (Fraction, int)):
                raise InvalidDistributionError(
                    f"{name}{_row_label(batched, r)} token {t} holds {v!r} of type "
                    f"{type(v).__name__}; exact input needs Fraction or int entries"
                )
            v = Fraction(v)
            if v < 0:
                raise InvalidDistributionError(
                    f"{name}{_row_label(batched, r)} has a negative entry {v} at token {t}"
                )
            out[r, t] = v
            total += v
        if total != 1:
            raise InvalidDistributionError(
                f"{name}{_row_label(batched, r)} sums to {total}, not exactly 1"
            )
    return out


def _shape_of(x):
    """The vocabulary-bearing shape of an array-like, read without converting it (a list of
    floats would otherwise be converted twice); ``()`` when there is none to read."""
    shape = getattr(x, "shape", None)
    if shape is not None:
        return tuple(shape)
    if not isinstance(x, list | tuple) or not x:
        return ()
    inner = x[0]
    if isinstance(inner, list | tuple) or getattr(inner, "ndim", None) == 1:
        return (len(x), len(inner))  # rows
    return (len(x),) if getattr(inner, "ndim", 0) == 0 else ()  # one row of numbers


def as_distribution_pair(target, draft, *, atol=None, allow_exact=False, copy=True):
    """Check ``target`` and ``draft`` together: same shape, same vocabulary.

    Returns ``(p, q, batched)`` with ``p``, ``q`` of shape (B, V).  If either
    input is exact and ``allow_exact`` is set, both are returned exact.
    ``copy`` as for :func:`as_distribution`.
    """
    # Shapes first: a draft cut to the wrong vocabulary would otherwise be reported by
    # its sum ("draft sums to 0.9"), not as the mismatch it is.
    ts, ds = _shape_of(target), _shape_of(draft)
    if ts and ds and ts[-1] != ds[-1]:
        raise ShapeMismatchError(
            f"target and draft have different vocabularies: {ts[-1]} and {ds[-1]} tokens"
        )
    p, bp = as_distribution(target, "target", atol=atol, allow_exact=allow_exact, copy=copy)
    q, bq = as_distribution(draft, "draft", atol=atol, allow_exact=allow_exact, copy=copy)
    if p.shape[1] != q.shape[1]:
        raise ShapeMismatchError(
            f"target and draft have different vocabularies: {p.shape[1]} and {q.shape[1]} tokens"
        )
    if bp != bq or p.shape[0] != q.shape[0]:
        ts = p.shape if bp else p.shape[1:]
        ds = q.shape if bq else q.shape[1:]
        raise ShapeMismatchError(
            f"target and draft must have the same shape; got target {ts} and draft {ds}"
        )
    if (p.dtype == object) != (q.dtype == object):
        p = _as_exact(p) if p.dtype != object else p
        q = _as_exact(q) if q.dtype != object else q
    return p, q, bp


def _as_exact(rows):
    out = np.empty(rows.shape, dtype=object)
    for idx, v in np.ndenumerate(rows):
        out[idx] = Fraction(float(v))
    total = out.sum(axis=1)
    for r in range(out.shape[0]):  # dyadic float rows rarely sum to exactly 1
        out[r] = out[r] / total[r]
    return out


def check_positive_int(value, name: str) -> int:
    """Return ``value`` as an int >= 1, or raise naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InvalidParameterError(
            f"{name} must be a positive integer; got {value!r} of type {type(value).__name__}"
        )
    value = operator.index(value)
    if value < 1:
        raise InvalidParameterError(f"{name} must be >= 1; got {value}")
    return value


def check_limit(value: int, name: str, limit: int, why: str = "") -> int:
    """Return ``value`` if it is at most ``limit``, else raise :class:`InstanceTooLargeError`.

    The documented size limits (draft lengths, bootstrap resamples, state
    counts) refuse with a clear error instead of hanging or exhausting memory.
    """
    if value > limit:
        extra = f" ({why})" if why else ""
        raise InstanceTooLargeError(f"{name}={value} exceeds the limit {limit}{extra}")
    return value


def check_positive_real(value, name: str, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float > 0 (finite unless ``allow_inf``), or raise naming ``name``.

    Bools, strings, complex numbers and NaN are refused.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidParameterError(
            f"{name} must be a positive real number; got {value!r} of type {type(value).__name__}"
        )
    x = float(value)
    if not (x > 0) or (math.isinf(x) and not allow_inf):
        raise InvalidParameterError(f"{name} must be a finite number > 0; got {value!r}")
    return x


def check_choice(value, name: str, choices) -> str:
    """Return ``value`` if it is one of ``choices``, else raise listing them."""
    if not isinstance(value, str) or value not in choices:
        raise InvalidParameterError(
            f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}"
        )
    return value


def check_rng(rng, name: str = "rng") -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``rng``, or raise naming ``name``.

    Accepted: ``None`` (fresh OS entropy), a non-negative integer seed (Python or
    numpy integer, not bool), a :class:`numpy.random.SeedSequence` or a
    :class:`numpy.random.Generator` (returned as is, so a caller's stream is
    consumed, not copied).  Anything else (floats, strings, negative integers,
    sequences, legacy ``RandomState``) raises :class:`InvalidParameterError`:
    numpy would accept some of them (a list of ints) with a meaning the caller
    rarely intends, and reject others with a foreign error.

    Examples
    --------
    >>> int(check_rng(0).integers(10)) == int(np.random.default_rng(0).integers(10))
    True
    >>> check_rng(-1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spectheory._errors.InvalidParameterError: rng must be None, a non-negative ... got -1
    """
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    if (
        isinstance(rng, numbers.Integral)
        and not isinstance(rng, (bool, np.bool_))
        and operator.index(rng) >= 0
    ):
        return np.random.default_rng(operator.index(rng))
    raise InvalidParameterError(
        f"{name} must be None, a non-negative integer seed, a SeedSequence or a numpy "
        f"Generator; got {rng!r}"
    )


def real_array(v, name):
    """A float64 array (any shape) of real numbers, refusing bool, str and complex entries.

    Python and numpy integers and floats and other :class:`numbers.Real` objects
    (:class:`fractions.Fraction`) are accepted.  Lists are checked entry by
    entry: ``[True, 10]`` has dtype int64, which would hide the bool.  Errors
    name ``name``, the offending entry and its index.
    """
    try:
        arr = np.asarray(v)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"{name} cannot be read as an array: {exc}") from None
    if arr.dtype == object or not isinstance(v, np.ndarray):
        for idx, e in np.ndenumerate(arr if arr.dtype == object else np.asarray(v, dtype=object)):
            if isinstance(e, (bool, np.bool_)) or not isinstance(e, numbers.Real):
                where = f" at index {idx if len(idx) > 1 else idx[0]}" if idx else ""
                raise InvalidParameterError(
                    f"{name} must hold real numbers; got {e!r} of type {type(e).__name__}{where}"
                )
    elif arr.dtype.kind not in "iuf":
        raise InvalidParameterError(
            f"{name} must hold real numbers; got an array of dtype {arr.dtype} (bool, str and "
            "complex are refused)"
        )
    return arr.astype(np.float64)


def integer_vector(v, name):
    """A 1-D int64 array of integers (positions, token ids), refusing anything else.

    ``np.asarray(v, dtype=np.int64)`` would truncate ``1.7`` to 1, read ``True``
    as 1 (also inside a list, ``[0, True]`` having dtype int64) and flatten a
    nested sequence: each silently selects other entries than the ones meant.
    Torch tensors are accepted.  Errors name ``name`` and the offending entry.
    """
    if isinstance(v, str | bytes):
        raise InvalidParameterError(f"{name} must be a 1-D sequence of integers; got {v!r}")
    if type(v).__module__.startswith("torch"):
        v = v.detach().cpu().numpy()
    try:
        arr = np.asarray(v)
    except (TypeError, ValueError) as exc:  # ragged lists
        raise InvalidParameterError(f"{name} cannot be read as an array: {exc}") from None
    if arr.ndim != 1:
        raise InvalidParameterError(
            f"{name} must be a 1-D sequence of integers; got shape {arr.shape}"
        )
    bools = not isinstance(v, np.ndarray) and any(isinstance(x, bool | np.bool_) for x in v)
    if (arr.size and arr.dtype.kind not in "iu") or bools:
        bad = next(
            (x for x in np.asarray(v, dtype=object)
             if isinstance(x, bool | np.bool_) or not isinstance(x, int | np.integer)),
            v,
        )  # fmt: skip
        raise InvalidParameterError(
            f"{name} must be integers; got {bad!r} of type {type(bad).__name__}"
        )
    return arr.astype(np.int64)


def check_uniforms(u, shape, name):
    """``u`` as contiguous float64 of exactly ``shape`` with values in [0, 1), or raise.

    Raises
    ------
    ShapeMismatchError
        ``u`` has another shape (named ``name``).
    InvalidParameterError
        An entry outside [0, 1) (NaN included), named by its index.
    """
    arr = np.asarray(u, dtype=np.float64)
    if arr.shape != shape:
        raise ShapeMismatchError(f"{name} must have shape {shape}; got {arr.shape}")
    bad = ~((arr >= 0) & (arr < 1))
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidParameterError(f"{name}[{idx}] = {float(arr[idx])!r} is not in [0, 1)")
    return np.ascontiguousarray(arr)
