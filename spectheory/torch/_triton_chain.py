r"""Fused Triton kernel of chain speculative sampling (private; see :mod:`spectheory.torch.chain`).

One program per row ``b`` does the whole round:

1. the ``gamma`` accept tests :math:`u_i < \min(1, p_i(x_i)/q_i(x_i))` (two
   gathers each), giving the accepted prefix length ``j`` (the first failed
   test, ``gamma`` if none) and the count of passed tests;
2. one pass over the vocabulary of position ``j``: the mass of
   :math:`(p_j - q_j)_+` after a rejection, and the last token of positive
   mass of the law to draw from;
3. the inverse-CDF draw with :math:`u_{\min(j + 1, \gamma)}` from
   :math:`\mathrm{norm}((p_j - q_j)_+)` (rejection; ``p_j`` if that has no
   mass) or from :math:`p_\gamma` (bonus), scanning tiles of ``BLOCK`` tokens
   with a running offset and stopping at the first tile that crosses ``u``;
4. the output row: ``x_0..x_{j-1}``, the drawn token, then ``-1``.

Probabilities are loaded in their dtype and every sum, ratio and partial sum
is float64, so the CDF is never float32.  Partial sums are a tile scan plus a
running offset, a different order of addition from :func:`torch.cumsum`:
identical tokens to the plain torch path except when ``u`` lies within a few
ulps of a CDF boundary.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._backend import jit

__all__ = ["chain_triton"]


def _chain_kernel(
    p_ptr,  # (B, GAMMA + 1, V) target
    q_ptr,  # (B, GAMMA, V) draft
    x_ptr,  # (B, GAMMA) int64 draft tokens
    u_ptr,  # (B, GAMMA + 1) float64 uniforms
    out_ptr,  # (B, GAMMA + 1) int64 output tokens
    acc_ptr,  # (B,) int64 passed accept tests
    emit_ptr,  # (B,) int64 accepted prefix length
    V,
    GAMMA: tl.constexpr,
    OUT_BLOCK: tl.constexpr,  # power of two >= GAMMA + 1
    BLOCK: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    p_row = p_ptr + b * (GAMMA + 1) * V
    q_row = q_ptr + b * GAMMA * V
    j = tl.full((), GAMMA, dtype=tl.int64)
    passed = tl.zeros((), dtype=tl.int64)
    for i in tl.static_range(GAMMA):
        x = tl.load(x_ptr + b * GAMMA + i)
        px = tl.load(p_row + i * V + x).to(tl.float64)
        qx = tl.load(q_row + i * V + x).to(tl.float64)
        u = tl.load(u_ptr + b * (GAMMA + 1) + i)
        ratio = px / tl.where(qx > 0, qx, 1.0)
        prob = tl.where(qx > 0, tl.minimum(ratio, 1.0), 0.0)  # q = 0: rejected
        ok = u < prob
        passed += ok.to(tl.int64)
        j = tl.where((j == GAMMA) & (ok == 0), i, j)

    rejected = j < GAMMA
    pj = p_row + j * V
    qj = q_row + tl.minimum(j, GAMMA - 1) * V
    offs = tl.arange(0, BLOCK)
    # Masks built by comparison (the interpreter refuses scalar-and-block `&` masks).
    v_q = tl.where(rejected, V, 0)  # q_j is read only after a rejection

    # Pass 1: mass of the residual; last token of positive mass of both candidate laws.
    total = tl.zeros((), dtype=tl.float64)
    last_res = tl.full((), -1, dtype=tl.int64)
    last_p = tl.full((), -1, dtype=tl.int64)
    for start in range(0, V, BLOCK):
        idx = start + offs
        m = idx < V
        pv = tl.load(pj + idx, mask=m, other=0.0).to(tl.float64)
        qv = tl.load(qj + idx, mask=idx < v_q, other=0.0).to(tl.float64)
        v = tl.maximum(pv - qv, 0.0)
        total += tl.sum(v, axis=0)
        last_res = tl.maximum(last_res, tl.max(tl.where(v > 0, idx, -1), axis=0))
        last_p = tl.maximum(last_p, tl.max(tl.where(pv > 0, idx, -1), axis=0))
    use_res = rejected & (total > 0)
    scale = tl.where(use_res, total, 1.0)
    v_q = tl.where(use_res, V, 0)
    u_draw = tl.load(u_ptr + b * (GAMMA + 1) + tl.minimum(j + 1, GAMMA))

    # Pass 2: inverse CDF, stopping at the first tile whose partial sums cross u.
    carry = tl.zeros((), dtype=tl.float64)
    found = tl.zeros((), dtype=tl.int64) + V
    start = tl.zeros((), dtype=tl.int32)
    while (start < V) & (found == V):
        idx = start + offs
        m = idx < V
        pv = tl.load(pj + idx, mask=m, other=0.0).to(tl.float64)
        qv = tl.load(qj + idx, mask=idx < v_q, other=0.0).to(tl.float64)
        law = tl.where(use_res, tl.maximum(pv - qv, 0.0) / scale, pv)
        cum = tl.cumsum(law, axis=0) + carry
        hit = (cum > u_draw) & m
        found = tl.minimum(found, tl.min(tl.where(hit, idx, V), axis=0).to(tl.int64))
        carry += tl.sum(law, axis=0)
        start += BLOCK
    y = tl.where(found < V, found, tl.where(use_res, last_res, last_p))

    # Output row: accepted drafts, the drawn token, then -1.
    o = tl.arange(0, OUT_BLOCK)
    xs = tl.load(x_ptr + b * GAMMA + o, mask=o < tl.minimum(j, GAMMA), other=-1)
    row = tl.where(o < j, xs, tl.where(o == j, y, -1))
    tl.store(out_ptr + b * (GAMMA + 1) + o, row, mask=o < GAMMA + 1)
    tl.store(acc_ptr + b, passed)
    tl.store(emit_ptr + b, j)


def chain_triton(p, q, x, u, *, block=1024):
    """Launch the chain kernel; returns (tokens (B, g+1), passed (B,), emitted (B,)) int64.

    ``p`` (B, g+1, V) and ``q`` (B, g, V) contiguous floating, ``x`` (B, g)
    int64 valid token ids, ``u`` (B, g+1) float64 in [0, 1), all on one device.
    """
    B, g1, V = p.shape
    gamma = g1 - 1
    out = torch.empty((B, g1), dtype=torch.int64, device=p.device)
    passed = torch.empty(B, dtype=torch.int64, device=p.device)
    emitted = torch.empty(B, dtype=torch.int64, device=p.device)
    block = min(block, triton.next_power_of_2(V))
    jit(_chain_kernel)[(B,)](
        p.contiguous(),
        q.contiguous(),
        x.contiguous(),
        u.contiguous(),
        out,
        passed,
        emitted,
        V,
        GAMMA=gamma,
        OUT_BLOCK=triton.next_power_of_2(g1),
        BLOCK=block,
    )
    return out, passed, emitted
