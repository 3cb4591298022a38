r"""Batched arithmetic of the verifiers on float64 tensors (private).

The row-wise operations of :mod:`spectheory.verifiers._ops` and of
:class:`spectheory.coins.ReplayCoins`, vectorised over a batch of rows of shape
(B, V): every function applies the reference's formula with the same
elementwise operations in float64.  Only reductions differ in order
(:func:`torch.sum` against numpy's pairwise sum), so normalisers agree to a few
ulps, not always bit for bit.
"""

from __future__ import annotations

import torch

__all__ = [
    "accept_prob",
    "bernoulli",
    "gather",
    "greedy_split",
    "inverse_cdf",
    "normalise_or",
    "residual",
]


def gather(rows, idx):
    """``rows[b, idx[b]]`` for every ``b``; rows (B, V), idx (B,) -> (B,)."""
    return rows.gather(-1, idx[:, None])[:, 0]


def accept_prob(num, den):
    r""":math:`\min(1, \text{num}/\text{den})`, and 0 where ``den <= 0`` (``_ops.accept_prob``).

    A drafted token of draft probability 0 is rejected, with or without
    validation of the inputs.

    Parameters
    ----------
    num, den : torch.Tensor, shape (B,)

    Examples
    --------
    >>> import torch
    >>> accept_prob(torch.tensor([0.3, 0.6, 0.0]), torch.tensor([0.6, 0.3, 0.0])).tolist()
    [0.5, 1.0, 0.0]
    """
    safe = torch.where(den > 0, den, torch.ones_like(den))
    ratio = num / safe
    return torch.where(den > 0, torch.clamp_max(ratio, 1.0), torch.zeros_like(ratio))


def bernoulli(u, prob):
    """The coin of :class:`~spectheory.coins.ReplayCoins`: ``u < prob``; (B,) bool."""
    return u < prob


def normalise_or(v, fallback):
    """Rows ``v / v.sum()``, or the row of ``fallback`` where ``v`` has no mass; (B, V)."""
    total = v.sum(dim=-1, keepdim=True)
    has_mass = total > 0
    return torch.where(has_mass, v / torch.where(has_mass, total, torch.ones_like(total)), fallback)


def residual(r, q):
    r"""Rows :math:`\mathrm{norm}((r - q)_+)`, or ``r`` where ``r - q`` has no positive part."""
    return normalise_or(torch.clamp_min(r - q, 0.0), r)


def inverse_cdf(law, u):
    r"""Inverse-CDF draw per row: the smallest ``i`` with :math:`u < \sum_{j \le i} r_j`.

    The rule of :class:`~spectheory.coins.ReplayCoins`: when rounding leaves
    ``u`` beyond the last partial sum, the last token of positive mass is
    returned, so a token of zero mass never is (the first partial sum above
    ``u`` belongs to a token of positive mass, since adding zero leaves a
    partial sum unchanged).  The partial sums are :func:`torch.cumsum`, which
    adds left to right on the CPU, as the reference does.

    Parameters
    ----------
    law : torch.Tensor, float64, shape (B, V)
        Non-negative rows summing to 1 up to rounding.
    u : torch.Tensor, float64, shape (B,)

    Returns
    -------
    torch.Tensor, int64, shape (B,)

    Examples
    --------
    >>> import torch
    >>> law = torch.tensor([[0.5, 0.0, 0.5], [0.25, 0.75, 0.0]], dtype=torch.float64)
    >>> inverse_cdf(law, torch.tensor([0.5, 0.9999999999], dtype=torch.float64)).tolist()
    [2, 1]
    """
    cum = torch.cumsum(law, dim=-1)
    idx = torch.searchsorted(cum, u[:, None].contiguous(), right=True)[:, 0]
    V = law.shape[-1]
    last = V - 1 - torch.argmax(torch.flip(law > 0, dims=(-1,)).to(torch.int8), dim=-1)
    return torch.where(idx >= V, last, idx)


def greedy_split(q, n):
    r"""The greedy law of :func:`spectheory.drafting.greedy_split`, batched.

    ``T``: the ``n - 1`` most likely tokens (descending ``q``, ties to the
    lowest id, by a stable sort); :math:`\tilde q`: ``q`` zeroed on ``T`` and
    renormalised.

    Parameters
    ----------
    q : torch.Tensor, float64, shape (B, V)
    n : int

    Returns
    -------
    T : torch.Tensor, int64, shape (B, n - 1)
    q_tilde : torch.Tensor, float64, shape (B, V)

    Examples
    --------
    >>> import torch
    >>> T, qt = greedy_split(torch.tensor([[0.25, 0.5, 0.25]], dtype=torch.float64), 2)
    >>> T.tolist(), qt.tolist()
    ([[1]], [[0.5, 0.0, 0.5]])
    """
    T = torch.sort(q, dim=-1, descending=True, stable=True).indices[:, : n - 1]
    rest = q.scatter(-1, T, 0.0)
    return T, rest / rest.sum(dim=-1, keepdim=True)
