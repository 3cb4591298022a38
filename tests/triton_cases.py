"""Checks of the fused Triton kernels, run on CUDA or under Triton's CPU interpreter.

This module is not collected by the main test run (its name does not match
``test_*.py``).  tests/torch/test_triton.py runs it in a subprocess with
``TRITON_INTERPRET=1`` set before triton is imported (the interpreter cannot be
switched on later in a process), and calls the same ``check_*`` functions on
CUDA in its ``gpu`` tests.  Interpreted programs take ~50 ms each, so the
batches here are small.

Every check compares the kernel with the plain torch path and with the numpy
reference (registry verifiers run with ReplayCoins) on the same uniforms, or
integrates the kernel exactly over its uniforms (tests/torch_oracles.py).
"""

from __future__ import annotations

import os

import numpy as np
import torch

from spectheory import softmax
from spectheory.coins import ReplayCoins
from spectheory.sim import _kernels as K
from spectheory.torch import chain_speculative_sampling, recursive_rejection_sampling
from spectheory.torch._triton_chain import chain_triton
from spectheory.torch._triton_rrs import rrs_triton
from spectheory.torch.chain import chain_torch
from spectheory.torch.verifiers import _FUNCTIONS
from spectheory.verifiers import REGISTRY

from .torch_oracles import chain_cells, chain_reference, extended_law_error

DEVICE = os.environ.get("SPECTHEORY_TRITON_DEVICE", "cpu")


def chain_instance(rng, B, gamma, V, dtype=torch.float64):
    """Rows with zeros, a one-hot target, disjoint supports and ``p == q`` among them."""
    p = rng.random((B, gamma + 1, V)) ** 3
    p[rng.random(p.shape) < 0.3] = 0.0
    p[..., 0] += 1e-3  # every row keeps some mass
    q = rng.random((B, gamma, V)) ** 3
    q[rng.random(q.shape) < 0.3] = 0.0
    q[..., 1] += 1e-3
    p[0] = 0.0
    p[0, :, 2] = 1.0  # one-hot target
    if B > 1:
        q[1] = 0.0
        q[1, :, 1] = 1.0  # one-hot draft, so supports are disjoint from p[1] where p = 0 at 1
        p[1, :, 1] = 0.0
    if B > 2:
        q[2] = p[2, :gamma]  # p == q: every draft accepted, no residual is ever normalised
    p = p / p.sum(-1, keepdims=True)
    q = q / q.sum(-1, keepdims=True)
    x = np.array(
        [[rng.choice(V, p=q[b, i]) for i in range(gamma)] for b in range(B)], dtype=np.int64
    )
    u = rng.random((B, gamma + 1))
    if B > 3:
        u[3] = 0.0  # zero coins: accept wherever p > 0
    if B > 4:
        u[4] = 1 - 2.0**-53  # largest uniform: reject unless p >= q, draw the last token
    tp = torch.from_numpy(p).to(dtype).to(DEVICE)
    tq = torch.from_numpy(q).to(dtype).to(DEVICE)
    return tp, tq, torch.from_numpy(x).to(DEVICE), torch.from_numpy(u).to(DEVICE)


def check_chain(B, gamma, V, seed, *, block=1024, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    p, q, x, u = chain_instance(rng, B, gamma, V, dtype)
    tri = chain_triton(p, q, x, u, block=block)
    p64, q64 = p.double(), q.double()
    tor = chain_torch(p64, q64, x, u)
    for a, b in zip(tri, tor, strict=True):
        assert torch.equal(a.cpu(), b.cpu()), (a, b)
    if dtype != torch.float64:
        return  # float32 rows sum to 1 only within ~1e-7: ReplayCoins refuses them (1e-9)
    pn, qn, xn, un = (t.cpu().double().numpy() for t in (p, q, x, u))
    for b in range(B):
        tokens, passed, emitted = chain_reference(pn[b], qn[b], xn[b].astype(np.int64), un[b])
        assert tri[0][b].tolist() == tokens, b
        assert int(tri[1][b]) == passed and int(tri[2][b]) == emitted


def check_chain_exact_law(p, q):
    """The kernel's exact output law, over every draft tuple and uniform cell, is the target's."""
    d, u, w = chain_cells(p, q, np.random.default_rng(0))
    M = len(w)
    tp = torch.from_numpy(p).expand(M, -1, -1).contiguous().to(DEVICE)
    tq = torch.from_numpy(q).expand(M, -1, -1).contiguous().to(DEVICE)
    tokens = chain_triton(tp, tq, torch.from_numpy(d).to(DEVICE), torch.from_numpy(u).to(DEVICE))
    assert extended_law_error(p, tokens[0].cpu().numpy(), w) < 1e-12


def check_rrs(sampling, B, n, V, seed, *, block=1024, dtype=torch.float64):
    name = {"iid": "rrs", "without_replacement": "rrs_wor"}[sampling]
    rng = np.random.default_rng(seed)
    p = softmax(2 * rng.standard_normal((B, V)))
    p[rng.random((B, V)) < 0.3] = 0.0
    p[:, 0] += 0.05
    q = softmax(2 * rng.standard_normal((B, V)))
    q[1 % B] = p[1 % B]  # p == q: every residual is empty and keeps r
    p = p / p.sum(1, keepdims=True)
    q = q / q.sum(1, keepdims=True)
    d = K.draw_drafts(q, n, sampling, rng.random((B, 1, K.draft_uniforms(n, sampling))))[:, 0]
    u = rng.random((B, n + 1))
    u[0, :n] = 1 - 2.0**-53  # row 0 rejects every draft it can and draws the final residual
    tp = torch.from_numpy(p).to(dtype).to(DEVICE)
    tq = torch.from_numpy(q).to(dtype).to(DEVICE)
    td, tu = torch.from_numpy(d).to(DEVICE), torch.from_numpy(u).to(DEVICE)
    tri = rrs_triton(tp, tq, td, tu, without_replacement=sampling != "iid", block=block)
    tor = _FUNCTIONS[name](tp.double(), tq.double(), td, tu)
    assert torch.equal(tri.cpu(), tor.cpu())
    if dtype != torch.float64:
        return  # as in check_chain
    pn, qn = tp.double().cpu().numpy(), tq.double().cpu().numpy()
    fn = REGISTRY[name].function
    ref = [fn(pn[b], qn[b], tuple(d[b].tolist()), ReplayCoins(u[b])) for b in range(B)]
    assert tri.cpu().tolist() == ref


# --------------------------------------------------------------------------- tests


def test_chain_single_tile():
    check_chain(B=8, gamma=3, V=6, seed=1)


def test_chain_many_tiles_ragged_last_tile():
    check_chain(B=6, gamma=2, V=37, seed=2, block=16)


def test_chain_gamma_one_float32_input():
    check_chain(B=6, gamma=1, V=20, seed=3, dtype=torch.float32)


def test_chain_exact_law():
    p = np.array([[0.3, 0.4, 0.3], [0.5, 0.0, 0.5], [0.2, 0.2, 0.6]])
    q = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]])
    check_chain_exact_law(p, q)


def test_chain_public_api_counters():
    rng = np.random.default_rng(4)
    p, q, x, u = chain_instance(rng, 5, 2, 9)
    acc = torch.full((5,), 10, dtype=torch.int32, device=DEVICE)
    emit = torch.zeros(5, dtype=torch.int64, device=DEVICE)
    res = chain_speculative_sampling(
        p,
        q,
        x,
        uniforms=u,
        backend="triton",
        output_accepted_token_num=acc,
        output_emitted_draft_token_num=emit,
    )
    ref = chain_torch(p, q, x, u)
    assert torch.equal(res.output_token_ids, ref[0])
    assert res.accepted_token_num is acc and torch.equal(acc.long(), 10 + ref[1])
    assert torch.equal(emit, ref[2])


def test_rrs_iid():
    check_rrs("iid", B=6, n=3, V=7, seed=5)


def test_rrs_iid_many_tiles():
    check_rrs("iid", B=4, n=2, V=37, seed=6, block=16)


def test_rrs_without_replacement():
    check_rrs("without_replacement", B=6, n=3, V=7, seed=7)


def test_rrs_without_replacement_many_tiles_float32():
    check_rrs("without_replacement", B=4, n=2, V=37, seed=8, block=16, dtype=torch.float32)


def test_rrs_public_api():
    rng = np.random.default_rng(9)
    p = torch.from_numpy(softmax(rng.standard_normal((4, 11)))).to(DEVICE)
    q = torch.from_numpy(softmax(rng.standard_normal((4, 11)))).to(DEVICE)
    gen = torch.Generator().manual_seed(9)
    d = torch.multinomial(q.cpu(), 3, replacement=False, generator=gen).to(DEVICE)
    u = torch.from_numpy(rng.random((4, 4))).to(DEVICE)
    for sampling in ("iid", "without_replacement"):
        a = recursive_rejection_sampling(p, q, d, sampling=sampling, uniforms=u, backend="triton")
        b = recursive_rejection_sampling(p, q, d, sampling=sampling, uniforms=u, backend="torch")
        assert torch.equal(a.tokens, b.tokens) and torch.equal(a.accepted, b.accepted)
