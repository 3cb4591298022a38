"""Input checks of the torch backend (private): the rules of :mod:`spectheory._validate` on tensors.

* Probabilities: a floating tensor (float16, bfloat16, float32, float64) of the
  stated shape, finite, non-negative, each row summing to 1 within
  :data:`spectheory._validate.SUM_TOLERANCE` of its dtype.  Rows are returned
  in float64 and renormalised unless every row's sum is 1 within its rounding
  bound (:func:`spectheory._validate.sum_rounding_bound`).  The row sum adds
  four sequential lanes as :func:`spectheory._validate_kernels.row_stats` does,
  so on the CPU both checks keep or renormalise a row identically.
* Token ids: an integer tensor of the stated shape with values in ``[0, V)``.
* Uniforms: a floating tensor of the stated shape with values in ``[0, 1)``.
* Every tensor on one device.

Every error names the argument, the row and the offending value.  Nothing is
clipped.
"""

from __future__ import annotations

import torch

from .._errors import InvalidDistributionError, InvalidParameterError, ShapeMismatchError
from .._validate import SUM_TOLERANCE, sum_rounding_bound

__all__ = [
    "FLOAT_DTYPES",
    "check_device",
    "check_probabilities",
    "check_token_ids",
    "check_uniforms",
    "draw_uniforms",
]

#: Accepted floating dtypes of probability tensors.
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _index_str(flat_index, shape):
    """``(i, j, ...)`` of a flat index into ``shape``."""
    idx = []
    for size in reversed(shape):
        idx.append(flat_index % size)
        flat_index //= size
    return tuple(reversed(idx))


def check_probabilities(x, name, ndim, *, atol=None):
    """Check a probability tensor whose last axis is the vocabulary.

    Parameters
    ----------
    x : torch.Tensor, shape (..., V) with ``ndim`` axes
    name : str
        Argument name for error messages.
    ndim : int
        Required number of axes (2 for (B, V), 3 for (B, gamma, V)).
    atol : float, optional
        Accepted ``|sum - 1|``; default the tolerance of ``x.dtype``.

    Returns
    -------
    torch.Tensor, float64, same shape and device as ``x``
        Rows summing to 1 (renormalised where their sum is not exactly 1).
    """
    if not isinstance(x, torch.Tensor):
        raise InvalidDistributionError(
            f"{name} must be a torch.Tensor; got an object of type {type(x).__name__}"
        )
    if x.dtype not in FLOAT_DTYPES:
        raise InvalidDistributionError(
            f"{name} has dtype {x.dtype}; expected a floating dtype "
            f"({', '.join(str(d) for d in FLOAT_DTYPES)})"
        )
    if x.ndim != ndim or x.numel() == 0:
        raise ShapeMismatchError(
            f"{name} must be a non-empty tensor with {ndim} axes; got shape {tuple(x.shape)}"
        )
    rows = x.detach().to(torch.float64)
    bad = ~((rows >= 0) & (rows < torch.inf))  # NaN fails both comparisons
    if bool(bad.any()):
        flat = int(torch.nonzero(bad.reshape(-1))[0, 0])
        where = _index_str(flat, tuple(x.shape))
        v = float(rows.reshape(-1)[flat])
        kind = "a negative" if v < 0 else "a non-finite"
        raise InvalidDistributionError(
            f"{name} has {kind} entry {v!r} at index {where} (row {where[:-1]}, token {where[-1]})"
        )
    tol = SUM_TOLERANCE[str(x.dtype).removeprefix("torch.")] if atol is None else atol
    sums = _row_sums(rows)
    off = (sums - 1.0).abs() > tol
    if bool(off.any()):
        flat = int(torch.nonzero(off.reshape(-1))[0, 0])
        where = _index_str(flat, tuple(x.shape[:-1]))
        raise InvalidDistributionError(
            f"{name} row {where} sums to {float(sums.reshape(-1)[flat])!r}, not 1 "
            f"(tolerance {tol:g} for {x.dtype})"
        )
    if bool(((sums - 1.0).abs() <= sum_rounding_bound(rows.shape[-1])).all()):
        # as_distribution's rule: a sum within its own rounding bound of 1 is left alone
        return rows  # never written to: sharing memory with a float64 input is safe
    return rows / sums[..., None]


def _row_sums(rows):
    """Row sums added as :func:`spectheory._validate_kernels.row_stats` adds them.

    Four sequential lanes over the first ``V - V % 4`` entries, ``(s0 + s1) + (s2 + s3)``,
    then the tail in sequence: on the CPU (sequential :func:`torch.cumsum`) the sum, and so
    the renormalised rows, are those of :func:`spectheory._validate.as_distribution`.
    """
    V = rows.shape[-1]
    V4 = V - V % 4
    lanes = torch.cumsum(rows[..., :V4].reshape(*rows.shape[:-1], V4 // 4, 4), dim=-2)
    if V4:
        last = lanes[..., -1, :]
        total = (last[..., 0] + last[..., 1]) + (last[..., 2] + last[..., 3])
    else:
        total = torch.zeros(rows.shape[:-1], dtype=rows.dtype, device=rows.device)
    for i in range(V4, V):
        total = total + rows[..., i]
    return total


def check_device(device, **tensors):
    """Raise unless every tensor lies on ``device``."""
    for name, t in tensors.items():
        if t is not None and t.device != device:
            raise InvalidParameterError(
                f"{name} is on device {t.device}, but target is on {device}; "
                "put every tensor on one device"
            )


def check_token_ids(x, name, shape, V):
    """Check an integer tensor of token ids of shape ``shape`` with values in ``[0, V)``.

    Returns the ids as int64 (same device).
    """
    if not isinstance(x, torch.Tensor):
        raise InvalidParameterError(
            f"{name} must be a torch.Tensor of token ids; got {type(x).__name__}"
        )
    if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
        raise InvalidParameterError(f"{name} must hold integer token ids; got dtype {x.dtype}")
    if tuple(x.shape) != tuple(shape):
        raise ShapeMismatchError(f"{name} must have shape {tuple(shape)}; got {tuple(x.shape)}")
    ids = x.to(torch.int64)
    bad = (ids < 0) | (ids >= V)
    if bool(bad.any()):
        flat = int(torch.nonzero(bad.reshape(-1))[0, 0])
        where = _index_str(flat, tuple(shape))
        raise InvalidParameterError(
            f"{name}{list(where)} = {int(ids.reshape(-1)[flat])} is not a token id in [0, {V})"
        )
    return ids


def check_uniforms(u, shape, device):
    """Check injected uniforms: floating, shape ``shape``, values in ``[0, 1)``; float64 copy."""
    if not isinstance(u, torch.Tensor) or not u.dtype.is_floating_point:
        raise InvalidParameterError(
            f"uniforms must be a floating torch.Tensor; got {type(u).__name__}"
            + (f" of dtype {u.dtype}" if isinstance(u, torch.Tensor) else "")
        )
    if tuple(u.shape) != tuple(shape):
        raise ShapeMismatchError(f"uniforms must have shape {tuple(shape)}; got {tuple(u.shape)}")
    check_device(device, uniforms=u)
    u = u.detach().to(torch.float64)
    bad = ~((u >= 0) & (u < 1))
    if bool(bad.any()):
        flat = int(torch.nonzero(bad.reshape(-1))[0, 0])
        where = _index_str(flat, tuple(shape))
        raise InvalidParameterError(
            f"uniforms{list(where)} = {float(u.reshape(-1)[flat])!r} is not in [0, 1)"
        )
    return u


def draw_uniforms(shape, device, generator):
    """float64 uniforms in ``[0, 1)`` from ``generator`` (or torch's default generator)."""
    if generator is not None:
        if not isinstance(generator, torch.Generator):
            raise InvalidParameterError(
                f"generator must be a torch.Generator or None; got {type(generator).__name__}"
            )
        if generator.device.type != device.type:
            raise InvalidParameterError(
                f"generator is on device {generator.device}, tensors on {device}"
            )
    return torch.rand(shape, generator=generator, dtype=torch.float64, device=device)
