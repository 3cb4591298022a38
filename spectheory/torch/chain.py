r"""Chain speculative sampling on a batch: one verification round of ``gamma`` chained drafts.

Leviathan, Kalman, Matias [1]_ and Chen et al. [2]_ (docs/theory.md §1.1): the draft
model proposed :math:`x_1..x_\gamma`, :math:`x_i \sim q_i = q(\cdot \mid x_{<i})`;
the target gives :math:`p_1..p_{\gamma+1}`.  For :math:`i = 1..\gamma`,
:math:`x_i` is accepted if :math:`u_i < \min(1, p_i(x_i)/q_i(x_i))`; at the
first rejection :math:`i = j + 1` the round emits :math:`x_1..x_j` and a
correction :math:`y \sim \mathrm{norm}((p_{j+1} - q_{j+1})_+)`; if all are
accepted it emits :math:`x_1..x_\gamma` and a bonus :math:`y \sim p_{\gamma+1}`.
Every emitted token has the law of target sampling (lossless), whatever
:math:`q`, as long as :math:`x_i` was drawn from :math:`q_i`.

Semantics of FlashInfer's ``flashinfer.sampling.chain_speculative_sampling``
(its documented interface), with these differences, all deliberate:

* ``target_probs`` comes first, as everywhere in spectheory.  The counters
  are ``output_accepted_token_num`` / ``output_emitted_draft_token_num``;
  FlashInfer's public keyword names ``maybe_output_accepted_token_num`` /
  ``maybe_output_emitted_draft_token_num`` are accepted as aliases.
* Uniforms follow :class:`spectheory.coins.ReplayCoins`: ``u`` of shape
  (B, gamma + 1) in [0, 1), read in order, ``u[:, i]`` for the accept test of
  position ``i`` (0-based) and ``u[:, min(j + 1, gamma)]`` for the correction
  or bonus draw, so the draw never reuses a coin that decided the emitted
  tokens (the RNG-reuse bug class, docs/theory.md §7.5): ``u[:, j + 1]`` is
  also position ``j + 1``'s accept coin, which emits nothing after a rejection
  at ``j`` but still counts in ``accepted_token_num`` (so that counter, not the
  tokens' law, is correlated with the correction draw).  The test is
  :math:`u < \min(1, p/q)`; it never accepts a token with :math:`p = 0`,
  even at :math:`u = 0`.  (FlashInfer
  uses :math:`u \cdot q < p` with :math:`u \in (0, 1]`: the same law.)
  A drafted token with :math:`q = 0` (which the draft cannot have proposed:
  padding, a mis-indexed row) is rejected on every backend, with or without
  ``validate``; vLLM rejects it too, and FlashInfer rejects it where
  :math:`p = 0` (with ``validate=True`` it is an error).
* Tokens are int64.  ``accepted_token_num`` counts the positions whose
  accept test passes when each is considered on its own, each with its own
  coin ``u[:, i]`` (a diagnostic of draft/target alignment; the rejected
  position never counts, since its coin already failed).  These are the
  counters of FlashInfer 0.1.6 to 0.2.2, whose kernel read an injected
  ``uniform_samples`` tensor.  From 0.2.3 (flashinfer PR #912: Philox
  uniforms drawn inside the kernel) FlashInfer re-tests every position from
  the first rejection on with a *fresh* uniform, the rejected one included,
  so its count has another law; the emitted tokens and
  ``emitted_draft_token_num`` are the same in both versions;
  ``emitted_draft_token_num`` is ``j``, the number of emitted draft tokens
  (the bonus or correction token not counted).  When the ``output_*`` tensors
  are given the counts are added to them in place, as FlashInfer does.

Two implementations of the same function, dispatched by ``backend``: a plain
torch one, vectorised over rows (the oracle and the baseline), and a fused
Triton kernel (:mod:`spectheory.torch._triton_chain`).  Both compute in
float64 (inputs of lower precision are converted on load).

References
----------
.. [1] Leviathan, Kalman, Matias. "Fast Inference from Transformers via
   Speculative Decoding". arXiv:2211.17192.
.. [2] Chen, Borgeaud, Irving, Lespiau, Sifre, Jumper. "Accelerating Large
   Language Model Decoding with Speculative Sampling". arXiv:2302.01318.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .._errors import InvalidParameterError, ShapeMismatchError
from . import _ops
from ._backend import resolve_backend
from ._checks import (
    check_device,
    check_probabilities,
    check_token_ids,
    check_uniforms,
    draw_uniforms,
)

__all__ = ["ChainSamplingResult", "chain_speculative_sampling", "chain_torch"]


class ChainSamplingResult(NamedTuple):
    """Result of :func:`chain_speculative_sampling`.

    Attributes
    ----------
    output_token_ids : torch.Tensor, int64, shape (B, gamma + 1)
        Emitted tokens of each row, then ``-1``.
    accepted_token_num : torch.Tensor, shape (B,)
        Accept tests passed over the ``gamma`` positions, each on its own
        (plus the given counter's previous value).
    emitted_draft_token_num : torch.Tensor, shape (B,)
        Draft tokens emitted, ``0..gamma`` (plus the given counter's previous value).
    """

    output_token_ids: torch.Tensor
    accepted_token_num: torch.Tensor
    emitted_draft_token_num: torch.Tensor


def chain_torch(p, q, x, u):
    """The plain torch chain round, vectorised over rows (no loop over rows or positions).

    Only the gathered probabilities and the two rows of position ``j`` are
    converted to float64, so the full tensors may stay in their dtype.

    Parameters
    ----------
    p : torch.Tensor, floating, shape (B, gamma + 1, V)
    q : torch.Tensor, floating, shape (B, gamma, V)
    x : torch.Tensor, int64, shape (B, gamma)
    u : torch.Tensor, float64, shape (B, gamma + 1)

    Returns
    -------
    tokens : int64 (B, gamma + 1); passed : int64 (B,); emitted : int64 (B,)
    """
    B, g1, _ = p.shape
    gamma = g1 - 1
    px = p[:, :gamma].gather(-1, x[..., None])[..., 0].to(torch.float64)
    qx = q.gather(-1, x[..., None])[..., 0].to(torch.float64)
    ok = _ops.bernoulli(u[:, :gamma], _ops.accept_prob(px, qx))
    passed = ok.sum(dim=-1)
    j = torch.cumprod(ok.to(torch.int64), dim=-1).sum(dim=-1)  # accepted prefix length
    rows = torch.arange(B, device=p.device)
    pj = p[rows, j].to(torch.float64)
    qj = q[rows, torch.clamp_max(j, gamma - 1)].to(torch.float64)
    law = torch.where((j < gamma)[:, None], _ops.residual(pj, qj), pj)
    y = _ops.inverse_cdf(law, u[rows, torch.clamp_max(j + 1, gamma)])
    pos = torch.arange(g1, device=p.device)[None, :]
    xs = torch.cat([x, x.new_full((B, 1), -1)], dim=-1)
    tokens = torch.where(pos < j[:, None], xs, torch.where(pos == j[:, None], y[:, None], -1))
    return tokens, passed, j


def _check_counter(t, name, B, device):
    if t is None:
        return
    if not isinstance(t, torch.Tensor) or tuple(t.shape) != (B,) or t.dtype not in (
        torch.int32,
        torch.int64,
    ):  # a bool or uint8 counter would saturate or wrap silently
        raise InvalidParameterError(
            f"{name} must be an int32 or int64 tensor of shape ({B},); got "
            + (f"{t.dtype} of shape {tuple(t.shape)}" if isinstance(t, torch.Tensor) else repr(t))
        )
    check_device(device, **{name: t})


def _alias(value, alias, stem):
    """The counter given as ``output_<stem>`` or as FlashInfer's ``maybe_output_<stem>``."""
    if alias is None:
        return value
    if value is not None:
        raise InvalidParameterError(
            f"give output_{stem} or its alias maybe_output_{stem}, not both"
        )
    return alias


def chain_speculative_sampling(
    target_probs,
    draft_probs,
    draft_token_ids,
    *,
    uniforms=None,
    generator=None,
    output_accepted_token_num=None,
    output_emitted_draft_token_num=None,
    backend="auto",
    validate=True,
    maybe_output_accepted_token_num=None,
    maybe_output_emitted_draft_token_num=None,
):
    r"""One round of chain speculative sampling per row (module docstring).

    Parameters
    ----------
    target_probs : torch.Tensor, floating, shape (B, gamma + 1, V)
        Target probabilities at the ``gamma`` draft positions and the bonus position.
    draft_probs : torch.Tensor, floating, shape (B, gamma, V)
        The draft laws the tokens were drawn from (after the draft's processing).
    draft_token_ids : torch.Tensor, integer, shape (B, gamma)
        The drafted tokens; ``draft_probs[b, i, draft_token_ids[b, i]] > 0`` is required.
    uniforms : torch.Tensor, floating, shape (B, gamma + 1), optional
        Injected uniforms in [0, 1) (module docstring for their order).
    generator : torch.Generator, optional
        Source of the uniforms when ``uniforms`` is not given.
    output_accepted_token_num, output_emitted_draft_token_num : torch.Tensor, shape (B,), optional
        Integer counters to which the counts are added in place.
    backend : {"auto", "torch", "triton"}
        ``"auto"``: the plain torch path (the Triton kernel is opt-in until it has
        been run on a GPU; it is verified under Triton's interpreter).
    validate : bool
        Check the inputs (distributions, shapes, ids, devices); with False,
        the caller guarantees valid inputs (rows summing to 1, ids in range)
        and no check runs, which keeps the call free of device-to-host
        synchronisation.  A drafted token with ``q = 0`` raises with True and
        is rejected with False.
    maybe_output_accepted_token_num, maybe_output_emitted_draft_token_num : torch.Tensor, optional
        FlashInfer's names of the two counters (aliases; give one name of each, not both).

    Returns
    -------
    ChainSamplingResult

    Examples
    --------
    docs/theory.md §8.1 at both positions: :math:`p/q = 1/2` at token 0.

    >>> import torch
    >>> p = torch.tensor([[[0.3, 0.4, 0.3]] * 3], dtype=torch.float64)
    >>> q = torch.tensor([[[0.6, 0.3, 0.1]] * 2], dtype=torch.float64)
    >>> x = torch.tensor([[0, 0]])
    >>> u = torch.tensor([[0.25, 0.75, 0.5]], dtype=torch.float64)
    >>> res = chain_speculative_sampling(p, q, x, uniforms=u, backend="torch")
    >>> res.output_token_ids.tolist()  # accept, reject, residual [0, .5, .5] at u = .5
    [[0, 2, -1]]
    >>> res.accepted_token_num.tolist(), res.emitted_draft_token_num.tolist()
    ([1], [1])
    """
    if not isinstance(target_probs, torch.Tensor):
        raise InvalidParameterError(
            f"target_probs must be a torch.Tensor; got {type(target_probs).__name__}"
        )
    device = target_probs.device
    output_accepted_token_num = _alias(
        output_accepted_token_num, maybe_output_accepted_token_num, "accepted_token_num"
    )
    output_emitted_draft_token_num = _alias(
        output_emitted_draft_token_num,
        maybe_output_emitted_draft_token_num,
        "emitted_draft_token_num",
    )
    if validate:
        p = check_probabilities(target_probs, "target_probs", 3)
        q = check_probabilities(draft_probs, "draft_probs", 3)
        B, g1, V = p.shape
        if g1 < 2 or tuple(q.shape) != (B, g1 - 1, V):
            raise ShapeMismatchError(
                f"draft_probs must have shape (B, gamma, V) = {(B, g1 - 1, V)} with gamma >= 1 "
                f"for target_probs of shape {(B, g1, V)}; got {tuple(q.shape)}"
            )
        check_device(device, draft_probs=q, draft_token_ids=draft_token_ids)
        x = check_token_ids(draft_token_ids, "draft_token_ids", (B, g1 - 1), V)
        qx = q.gather(-1, x[..., None])[..., 0]
        if bool((qx <= 0).any()):
            b, i = (int(k) for k in torch.nonzero(qx <= 0)[0])
            raise InvalidParameterError(
                f"draft_token_ids[{b}, {i}] = {int(x[b, i])} has draft probability 0: it cannot "
                "have been drawn from draft_probs (padding ids must not reach the verifier)"
            )
    else:
        p, q, x = target_probs, draft_probs, draft_token_ids.to(torch.int64)
        B, g1, V = p.shape
    _check_counter(output_accepted_token_num, "output_accepted_token_num", B, device)
    _check_counter(output_emitted_draft_token_num, "output_emitted_draft_token_num", B, device)
    if uniforms is None:
        u = draw_uniforms((B, g1), device, generator)
    else:
        u = check_uniforms(uniforms, (B, g1), device) if validate else uniforms.to(torch.float64)
    if resolve_backend(backend, device) == "triton":
        from ._triton_chain import chain_triton

        tokens, passed, emitted = chain_triton(p, q, x, u)
    else:
        tokens, passed, emitted = chain_torch(p, q, x, u)
    if output_accepted_token_num is not None:
        output_accepted_token_num += passed.to(output_accepted_token_num.dtype)
        passed = output_accepted_token_num
    if output_emitted_draft_token_num is not None:
        output_emitted_draft_token_num += emitted.to(output_emitted_draft_token_num.dtype)
        emitted = output_emitted_draft_token_num
    return ChainSamplingResult(tokens, passed, emitted)
