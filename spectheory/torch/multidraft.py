r"""Multi-draft recursive rejection sampling on a batch, plain torch or one fused Triton kernel.

RRS with replacement (SpecInfer's multi-step speculative sampling [1]_;
docs/theory.md §3.1) for i.i.d. drafts, and RRS without replacement (RSD [2]_,
Sequoia [3]_; docs/theory.md §3.2) for drafts drawn without replacement: with
:math:`r_1 = p`, :math:`q_1 = q`, draft :math:`x_k` is accepted if
:math:`u_k < \min(1, r_k(x_k)/q_k(x_k))`, else
:math:`r_{k+1} = \mathrm{norm}((r_k - q_k)_+)` and, without replacement,
:math:`q_{k+1} = \mathrm{norm}(q_k \text{ with } x_k \text{ removed})`
(:math:`q_{k+1} = q` with replacement); after ``n`` rejections
:math:`y \sim r_{n+1}` with :math:`u_n`.

The same function as ``spectheory.torch.verify("rrs" | "rrs_wor", ...)``, with
a ``backend`` choice: ``"torch"`` runs that vectorised torch code (the oracle
and the baseline); ``"triton"`` runs one program per row
(:mod:`spectheory.torch._triton_rrs`).

References
----------
.. [1] Miao et al. "SpecInfer". arXiv:2305.09781.
.. [2] Jeon et al. "Recursive Speculative Decoding". arXiv:2402.14160.
.. [3] Chen et al. "Sequoia". arXiv:2402.12374.
"""

from __future__ import annotations

import torch

from .._errors import InvalidParameterError
from ._backend import resolve_backend
from ._checks import draw_uniforms
from .verifiers import _FUNCTIONS, TorchVerification, prepare

__all__ = ["recursive_rejection_sampling"]

_NAMES = {"iid": "rrs", "without_replacement": "rrs_wor"}


def recursive_rejection_sampling(
    target,
    draft,
    drafts,
    *,
    sampling="iid",
    uniforms=None,
    generator=None,
    backend="auto",
    validate=True,
):
    """RRS (``sampling="iid"``) or RRS without replacement on every row.

    Parameters
    ----------
    target, draft : torch.Tensor, floating, shape (B, V)
        Target ``p`` and draft ``q``.
    drafts : torch.Tensor, integer, shape (B, n)
        Drafts in draw order: i.i.d. from ``q``, or distinct and drawn without replacement.
    sampling : {"iid", "without_replacement"}
    uniforms : torch.Tensor, floating, shape (B, n + 1), optional
        Injected uniforms in [0, 1): ``u[:, k]`` for draft ``k``, ``u[:, n]`` for the residual.
    generator : torch.Generator, optional
        Source of the uniforms when ``uniforms`` is not given.
    backend : {"auto", "torch", "triton"}
        ``"auto"``: the plain torch path (the Triton kernel is opt-in; see
        :func:`spectheory.torch.chain_speculative_sampling`).
    validate : bool
        With False no check runs (no device-to-host synchronisation): the
        caller guarantees rows summing to 1 and drafts valid for ``sampling``.

    Returns
    -------
    TorchVerification
        ``tokens`` (B,) int64 and ``accepted`` (B,) bool (membership).

    Examples
    --------
    docs/theory.md §3.2: after rejecting token 0, ``q_2 = [0, 3/4, 1/4]`` and token 1
    is accepted with probability 4/9.

    >>> import torch
    >>> p = torch.tensor([[0.3, 0.4, 0.3]] * 2, dtype=torch.float64)
    >>> q = torch.tensor([[0.6, 0.3, 0.1]] * 2, dtype=torch.float64)
    >>> d = torch.tensor([[0, 1], [0, 1]])
    >>> u = torch.tensor([[0.9, 0.44, 0.0], [0.9, 0.45, 0.0]], dtype=torch.float64)
    >>> recursive_rejection_sampling(
    ...     p, q, d, sampling="without_replacement", uniforms=u, backend="torch"
    ... ).tokens.tolist()
    [1, 2]
    """
    if sampling not in _NAMES:
        raise InvalidParameterError(
            f"sampling must be 'iid' or 'without_replacement'; got {sampling!r}"
        )
    name = _NAMES[sampling]
    if validate:
        p, q, d, u = prepare(name, target, draft, drafts, generator, uniforms, sampling)
    else:
        p, q, d = target, draft, drafts.to(torch.int64)
        shape = (p.shape[0], d.shape[1] + 1)
        u = (
            draw_uniforms(shape, p.device, generator)
            if uniforms is None
            else uniforms.to(torch.float64)
        )
    device = p.device
    if resolve_backend(backend, device) == "triton":
        from ._triton_rrs import rrs_triton

        tokens = rrs_triton(p, q, d, u, without_replacement=sampling == "without_replacement")
    else:
        tokens = _FUNCTIONS[name](p, q, d, u)  # converts only the rows it works on
    return TorchVerification(tokens, (d == tokens[:, None]).any(dim=-1))
