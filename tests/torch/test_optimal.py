"""The batched torch form of ``optimal`` against the coins reference and the numba kernel.

Oracles: the coins reference :func:`spectheory.verifiers.optimal.optimal` run
with ``ReplayCoins`` (its tiers come from the merge sweep, the torch form's
from a bridge search on the concave majorant: two different algorithms), the
numba kernel :func:`spectheory.sim._optimal_kernel.run_optimal` and its row
tables (:func:`spectheory.solvers._polymatroid_kernels.row_tables`), and the
exact law (:func:`spectheory.output_distribution`) for a chi-square test at
false-alarm rate 1e-6.  Token equality is exact: the forms may differ only
when a uniform lies within rounding of a decision boundary (probability of
order 1e-15 per draw), so any difference here is a bug.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from spectheory import output_distribution, softmax
from spectheory.coins import ReplayCoins
from spectheory.sim._optimal_kernel import run_optimal
from spectheory.solvers._polymatroid_kernels import row_tables
from spectheory.torch import TORCH_VERIFIERS, verifier_uniforms, verify
from spectheory.torch._optimal import optimal_tables
from spectheory.torch.verifiers import optimal_torch
from spectheory.verifiers import REGISTRY
from spectheory.verifiers.optimal import optimal

ALPHA = 1e-6


def _instances(count, seed, max_v=30):
    """Random rows; every third with zeros in p and q and tied ratios (q on a 1/8 grid)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        V = int(rng.integers(2, max_v))
        n = int(rng.integers(2, 7))
        p = rng.dirichlet(np.full(V, 0.5))
        q = rng.dirichlet(np.full(V, 0.5))
        if len(out) % 3 == 0:
            p[rng.integers(V)] = 0.0
            p[rng.random(V) < 0.2] = 0.0
            if p.sum() == 0:
                continue
            p /= p.sum()
            q = np.round(q * 8) / 8
            q[np.argmax(q)] += 1.0 - q.sum()
        if len(out) % 3 == 1:  # equal ratios by construction: p proportional to q on a block
            k = int(rng.integers(1, V + 1))
            p[:k] = q[:k] * (p[:k].sum() / q[:k].sum())
            p /= p.sum()
        out.append((p, q, n))
    return out


def _edge_uniforms(rng, T):
    u = rng.random((T, 3))
    u[: T // 4] = rng.choice([0.0, 0.5, 1.0 - 2.0**-40], size=(T // 4, 3))  # hand-fed edges
    return u


def test_tables_are_the_kernels_bit_for_bit():
    """order, |T|, R, densities, y and positions equal the numba row tables exactly (CPU)."""
    for p, q, n in _instances(150, 0):
        order, nT, R, g, y, pos = row_tables(p, q, n)
        tb = optimal_tables(torch.from_numpy(p)[None], torch.from_numpy(q)[None], n)
        m = order.size
        assert int(tb["m"][0]) == m and int(tb["n_top"][0]) == nT
        assert np.array_equal(tb["order"][0, :m].numpy(), order)
        assert np.array_equal(tb["R"][0, : m + 1].numpy(), R)
        assert np.array_equal(tb["g"][0, :m].numpy(), g)
        assert np.array_equal(tb["y"][0].numpy(), y)
        assert np.array_equal(tb["pos"][0].numpy(), pos)


@pytest.mark.parametrize("seed", [1, 2])
def test_same_token_as_reference_and_kernel(seed):
    rng = np.random.default_rng(100 + seed)
    T = 48
    for p, q, n in _instances(120, seed):
        drafts = rng.choice(p.size, size=(T, n), p=q)
        u = _edge_uniforms(rng, T)
        out = optimal_torch(
            torch.from_numpy(np.repeat(p[None], T, 0)),
            torch.from_numpy(np.repeat(q[None], T, 0)),
            torch.from_numpy(drafts),
            torch.from_numpy(u),
        ).tolist()
        kern = run_optimal(p[None], q[None], drafts[None], u[None])[0].tolist()
        ref = [optimal(p, q, tuple(int(x) for x in drafts[t]), ReplayCoins(u[t])) for t in range(T)]
        assert out == ref == kern, (p, q, n)


def test_full_vocabulary_rows_equal_the_kernel():
    """V = 49,152: peaked rows, a target with half its tokens zero, a near one-hot target."""
    rng = np.random.default_rng(7)
    V, T = 49_152, 12
    z = 3.0 * rng.standard_normal((4, V))
    p = softmax(z)
    q = softmax(z + rng.standard_normal((4, V)))
    p[1, rng.random(V) < 0.5] = 0.0
    p[1] /= p[1].sum()
    p[2] = 1e-12
    p[2, 17] = 1.0
    p[2] /= p[2].sum()
    for n in (2, 4, 8):
        drafts = np.stack([rng.choice(V, size=(T, n), p=q[b]) for b in range(4)])
        u = np.stack([_edge_uniforms(rng, T) for _ in range(4)])
        kern = run_optimal(p, q, drafts, u)
        out = verify(
            "optimal",
            torch.from_numpy(np.repeat(p, T, 0)),
            torch.from_numpy(np.repeat(q, T, 0)),
            torch.from_numpy(drafts.reshape(-1, n)),
            uniforms=torch.from_numpy(u.reshape(-1, 3)),
        )
        assert np.array_equal(out.tokens.numpy().reshape(4, T), kern), n
        member = (drafts == kern[:, :, None]).any(axis=2)
        assert np.array_equal(out.accepted.numpy().reshape(4, T), member)
    b, t = 0, 0  # and the reference on a few of them
    assert kern[b, t] == optimal(p[b], q[b], tuple(drafts[b, t].tolist()), ReplayCoins(u[b, t]))


def test_registered_with_kernel_and_torch_form():
    v = REGISTRY["optimal"]
    assert v.torch_form == "optimal" and v.kernel == "optimal" and "optimal" in TORCH_VERIFIERS
    assert [verifier_uniforms("optimal", n) for n in (1, 2, 5)] == [2, 3, 3]


def test_greedy_drafts_and_one_draft_delegate():
    """verify('optimal', sampling='greedy') is verify('greedy'); n = 1 is verify('sd')."""
    rng = np.random.default_rng(3)
    B, V = 40, 12
    p = torch.from_numpy(rng.dirichlet(np.full(V, 0.5), size=B))
    q = torch.from_numpy(rng.dirichlet(np.full(V, 0.5), size=B))
    u = torch.from_numpy(rng.random((B, 3)))
    top = torch.sort(q, dim=-1, descending=True, stable=True).indices[:, :2]
    last = torch.multinomial(q.scatter(-1, top, 0.0), 1, generator=torch.Generator().manual_seed(0))
    d = torch.cat([top, last], dim=-1)
    a = verify("optimal", p, q, d, uniforms=u, sampling="greedy").tokens
    assert torch.equal(a, verify("greedy", p, q, d, uniforms=u[:, :2], sampling="greedy").tokens)
    d1 = torch.multinomial(q, 1, generator=torch.Generator().manual_seed(1))
    a1 = verify("optimal", p, q, d1, uniforms=u[:, :2]).tokens
    assert torch.equal(a1, verify("sd", p, q, d1, uniforms=u[:, :2]).tokens)


def test_output_law_is_the_target():
    """Chi-square of 200,000 torch outputs (drafts and coins from a torch.Generator) against p."""
    from spectheory.torch._checks import draw_uniforms

    p = np.array([0.3, 0.4, 0.3, 0.0, 0.0])
    q = np.array([0.5, 0.1, 0.05, 0.35, 0.0])
    assert np.allclose(output_distribution("optimal", p, q, n=3), p, rtol=0, atol=1e-12)
    N = 200_000
    gen = torch.Generator().manual_seed(9)
    P = torch.from_numpy(p).expand(N, 5).contiguous()
    Q = torch.from_numpy(q).expand(N, 5).contiguous()
    d = torch.multinomial(Q, 3, replacement=True, generator=gen)
    out = verify("optimal", P, Q, d, uniforms=draw_uniforms((N, 3), P.device, gen))
    counts = np.bincount(out.tokens.numpy(), minlength=5)
    assert counts[3] == counts[4] == 0  # tokens the target never emits
    chi2 = (((counts[:3] - N * p[:3]) ** 2) / (N * p[:3])).sum()
    assert stats.chi2.sf(chi2, df=2) > ALPHA
    # acceptance against the exact alpha* (z-test at 1e-6)
    from spectheory import bound

    acc = out.accepted.double().mean().item()
    a = float(bound(p, q, 3))
    assert abs(acc - a) / np.sqrt(a * (1 - a) / N) < stats.norm.isf(ALPHA / 2)


def test_q_zero_drafts_are_never_selected():
    """Without validation a q = 0 draft is rejected (the reference's rule), else refused."""
    from spectheory import InvalidParameterError

    p = torch.tensor([[0.2, 0.3, 0.5]] * 2, dtype=torch.float64)
    q = torch.tensor([[0.0, 0.9, 0.1]] * 2, dtype=torch.float64)
    d = torch.tensor([[0, 1], [0, 0]])
    u = torch.tensor([[0.0, 0.0, 0.5], [0.0, 0.0, 0.5]], dtype=torch.float64)
    # y = [0, .81, .19], residual [20, 0, 31] / 51
    assert optimal_torch(p, q, d, u).tolist() == [1, 2]
    with pytest.raises(InvalidParameterError, match="probability 0"):
        verify("optimal", p, q, d, uniforms=u)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("V", [49_152, 151_936])
def test_cuda_tokens_equal_cpu_tokens(V):
    rng = np.random.default_rng(11)
    B = 64
    z = 3.0 * rng.standard_normal((B, V))
    p = torch.from_numpy(softmax(z))
    q = torch.from_numpy(softmax(z + rng.standard_normal((B, V))))
    for n in (2, 4, 8):
        d = torch.multinomial(q, n, replacement=True, generator=torch.Generator().manual_seed(n))
        u = torch.from_numpy(rng.random((B, 3)))
        cpu = verify("optimal", p, q, d, uniforms=u).tokens
        gpu = verify("optimal", p.cuda(), q.cuda(), d.cuda(), uniforms=u.cuda()).tokens
        assert gpu.device.type == "cuda" and torch.equal(gpu.cpu(), cpu)


def test_a_subnormal_draft_entry_raises_no_warning():
    """A draft entry below the smallest normal double (softmax with a logit gap past ~708):
    the host plan's p / q overflows to inf.  Regression: numpy's overflow warning escaped
    the torch form (an error under warnings as errors).  Same tokens as the reference."""
    import warnings

    p = softmax(np.array([0.0, -1.0, -2.0, -3.0]))
    q = softmax(np.array([0.0, -1.0, -2.0, -740.0]))
    assert 0 < q[3] < np.finfo(np.float64).tiny
    rng = np.random.default_rng(4)
    d = np.array([[3, 3], [3, 0], [0, 3]] + [list(rng.choice(4, 2, p=q)) for _ in range(13)])
    u = rng.random((d.shape[0], 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = verify("optimal", torch.from_numpy(np.repeat(p[None], d.shape[0], 0)),
                     torch.from_numpy(np.repeat(q[None], d.shape[0], 0)), torch.from_numpy(d),
                     uniforms=torch.from_numpy(u)).tokens.tolist()
        ref = [optimal(p, q, tuple(int(x) for x in d[t]), ReplayCoins(u[t]))
               for t in range(d.shape[0])]
    assert out == ref
