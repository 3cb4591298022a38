r"""Fused Triton kernel of multi-draft recursive rejection sampling (private).

One program per row ``b`` runs RRS (i.i.d. drafts, ``WOR = False``) or RRS
without replacement (``WOR = True``) on the row's ``N`` drafts, with the
reference's coin order (:mod:`spectheory.torch.verifiers`): ``u[b, k]`` is
the accept coin of draft ``k``, ``u[b, N]`` the residual draw.

For draft ``k``: accept if :math:`u_k < \min(1, r_k(x_k)/q_k(x_k))` (``q_k = q``
for i.i.d. drafts).  After a rejection, two passes over the vocabulary: the
masses of :math:`(r_k - q_k)_+` and (without replacement) of :math:`q_k` with
:math:`x_k` removed, then the renormalised :math:`r_{k+1}` and
:math:`q_{k+1}` written to the float64 scratch rows ``r_buf[b]`` and
``qc_buf[b]`` (a law with no mass left keeps its previous value, as
:func:`spectheory.verifiers._ops.normalise_or`).  After ``N`` rejections one
inverse-CDF pass over ``r_{N+1}``.  A row that accepts skips its remaining
passes.  Probabilities are loaded in their dtype; all arithmetic is float64.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._backend import jit

__all__ = ["rrs_triton"]


def _rrs_kernel(
    p_ptr,  # (B, V) target
    q_ptr,  # (B, V) draft
    d_ptr,  # (B, N) int64 drafts
    u_ptr,  # (B, N + 1) float64 uniforms
    r_ptr,  # (B, V) float64 scratch: current residual r_k (k >= 2)
    qc_ptr,  # (B, V) float64 scratch: current draft law q_k (k >= 2, WOR only)
    out_ptr,  # (B,) int64 output tokens
    V,
    N: tl.constexpr,
    WOR: tl.constexpr,
    BLOCK: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    p_row = p_ptr + b * V
    q_row = q_ptr + b * V
    r_row = r_ptr + b * V
    qc_row = qc_ptr + b * V
    offs = tl.arange(0, BLOCK)
    y = tl.full((), -1, dtype=tl.int64)
    for k in tl.static_range(N):
        # A row that has accepted reads nothing more (the scratch rows are not written).
        if y < 0:
            x = tl.load(d_ptr + b * N + k)
            # r_1 = p and q_1 = q are read from the inputs; later laws from the scratch rows.
            if k == 0:
                rx = tl.load(p_row + x).to(tl.float64)
                qx = tl.load(q_row + x).to(tl.float64)
            else:
                rx = tl.load(r_row + x)
                if WOR:
                    qx = tl.load(qc_row + x)
                else:
                    qx = tl.load(q_row + x).to(tl.float64)
            u = tl.load(u_ptr + b * (N + 1) + k)
            ratio = rx / tl.where(qx > 0, qx, 1.0)
            prob = tl.where(qx > 0, tl.minimum(ratio, 1.0), 0.0)  # q = 0: rejected
            y = tl.where((y < 0) & (u < prob), x, y)
            if y < 0:
                tot_r = tl.zeros((), dtype=tl.float64)
                tot_q = tl.zeros((), dtype=tl.float64)
                for start in range(0, V, BLOCK):
                    idx = start + offs
                    m = idx < V
                    if k == 0:
                        rv = tl.load(p_row + idx, mask=m, other=0.0).to(tl.float64)
                        qv = tl.load(q_row + idx, mask=m, other=0.0).to(tl.float64)
                    else:
                        rv = tl.load(r_row + idx, mask=m, other=0.0)
                        if WOR:
                            qv = tl.load(qc_row + idx, mask=m, other=0.0)
                        else:
                            qv = tl.load(q_row + idx, mask=m, other=0.0).to(tl.float64)
                    tot_r += tl.sum(tl.maximum(rv - qv, 0.0), axis=0)
                    if WOR:
                        tot_q += tl.sum(tl.where(idx == x, 0.0, qv), axis=0)
                tl.debug_barrier()
                for start in range(0, V, BLOCK):
                    idx = start + offs
                    m = idx < V
                    if k == 0:
                        rv = tl.load(p_row + idx, mask=m, other=0.0).to(tl.float64)
                        qv = tl.load(q_row + idx, mask=m, other=0.0).to(tl.float64)
                    else:
                        rv = tl.load(r_row + idx, mask=m, other=0.0)
                        if WOR:
                            qv = tl.load(qc_row + idx, mask=m, other=0.0)
                        else:
                            qv = tl.load(q_row + idx, mask=m, other=0.0).to(tl.float64)
                    # Safe divisors: an empty residual (after a rejected q = 0 draft) keeps r.
                    r_new = tl.where(
                        tot_r > 0, tl.maximum(rv - qv, 0.0) / tl.where(tot_r > 0, tot_r, 1.0), rv
                    )
                    tl.store(r_row + idx, r_new, mask=m)
                    if WOR:
                        q_den = tl.where(tot_q > 0, tot_q, 1.0)
                        q_new = tl.where(tot_q > 0, tl.where(idx == x, 0.0, qv) / q_den, qv)
                        tl.store(qc_row + idx, q_new, mask=m)
                tl.debug_barrier()
    if y < 0:
        u_draw = tl.load(u_ptr + b * (N + 1) + N)
        carry = tl.zeros((), dtype=tl.float64)
        found = tl.zeros((), dtype=tl.int64) + V
        last = tl.full((), -1, dtype=tl.int64)
        for start in range(0, V, BLOCK):
            idx = start + offs
            m = idx < V
            law = tl.load(r_row + idx, mask=m, other=0.0)
            cum = tl.cumsum(law, axis=0) + carry
            hit = (cum > u_draw) & m
            found = tl.minimum(found, tl.min(tl.where(hit, idx, V), axis=0).to(tl.int64))
            last = tl.maximum(last, tl.max(tl.where(law > 0, idx, -1), axis=0).to(tl.int64))
            carry += tl.sum(law, axis=0)
        y = tl.where(found < V, found, last)
    tl.store(out_ptr + b, y)


def rrs_triton(p, q, d, u, *, without_replacement, block=1024):
    """Launch the RRS kernel; returns tokens (B,) int64.

    ``p``, ``q`` (B, V) contiguous floating rows, ``d`` (B, n) int64 valid
    drafts, ``u`` (B, n + 1) float64 in [0, 1), on one device.
    """
    B, V = p.shape
    n = d.shape[1]
    out = torch.empty(B, dtype=torch.int64, device=p.device)
    r_buf = torch.empty((B, V), dtype=torch.float64, device=p.device)
    qc_buf = r_buf if not without_replacement else torch.empty_like(r_buf)
    jit(_rrs_kernel)[(B,)](
        p.contiguous(),
        q.contiguous(),
        d.contiguous(),
        u.contiguous(),
        r_buf,
        qc_buf,
        out,
        V,
        N=n,
        WOR=bool(without_replacement),
        BLOCK=min(block, triton.next_power_of_2(V)),
    )
    return out
