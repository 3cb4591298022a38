"""Batched torch verifiers (spectheory.torch.verify) against the numpy references.

* Replay: for every (verifier, draft law) with a batched form, the same
  uniforms give the same tokens as the registry verifier run with ReplayCoins,
  on hypothesis instances (V = 2..8, zeros in target and draft, n = 1..4,
  float64) and on full-vocabulary rows (V = 49,152) given in float32, with
  zero-probability runs (flat stretches of the CDF) and a near one-hot row.
* Law: tokens sampled with a torch.Generator against the exact law
  (spectheory.output_distribution), Pearson chi-square at false-alarm rate 1e-6.
* Uniform accounting, generator reproducibility, dtype/device, the zero coin,
  the inverse-CDF tie rules, and every validation error.
* GPU (marked ``gpu``): CUDA tokens equal CPU tokens for the same uniforms.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from scipy import stats

from spectheory import (
    InvalidDistributionError,
    InvalidParameterError,
    ShapeMismatchError,
    output_distribution,
    softmax,
)
from spectheory._validate import as_distribution_pair
from spectheory.coins import ReplayCoins
from spectheory.sim import _kernels as K
from spectheory.torch import TORCH_VERIFIERS, _ops, kseq_rho, verifier_uniforms, verify
from spectheory.torch._ops import inverse_cdf
from spectheory.verifiers import REGISTRY
from spectheory.verifiers import kseq_rho as kseq_rho_reference
from tests.budget import scaled
from tests.strategies import as_float, weights

PAIRS = [(name, s) for name in TORCH_VERIFIERS for s in REGISTRY[name].samplings]
ALPHA = 1e-6


def allowed_n(name, max_n, sampling):
    allowed = REGISTRY[name].n_values_for(sampling)
    return list(allowed) if allowed is not None else list(range(1, max_n + 1))


def reference_tokens(name, sampling, p, q, drafts, u):
    fn = REGISTRY[name].function
    return [
        fn(p[b], q[b], tuple(int(x) for x in drafts[b]), ReplayCoins(u[b]), sampling=sampling)
        for b in range(p.shape[0])
    ]


def assert_replay(name, sampling, p, q, n, seed, *, dtype=torch.float64):
    """Torch tokens equal the reference's, row by row, for the same drafts and uniforms.

    ``p``, ``q`` (B, V) are given to torch in ``dtype``; the reference gets
    the same tensors through spectheory's numpy checks (float64, renormalised).
    """
    tp, tq = torch.from_numpy(p).to(dtype), torch.from_numpy(q).to(dtype)
    p64, q64, _ = as_distribution_pair(tp, tq)
    rng = np.random.default_rng(seed)
    B = p.shape[0]
    du = rng.random((B, 1, K.draft_uniforms(n, sampling)))
    drafts = K.draw_drafts(q64, n, sampling, du)[:, 0]
    u = rng.random((B, verifier_uniforms(name, n)))
    out = verify(
        name,
        tp,
        tq,
        torch.from_numpy(drafts),
        uniforms=torch.from_numpy(u),
        sampling=sampling,
    )
    ref = reference_tokens(name, sampling, p64, q64, drafts, u)
    assert out.tokens.tolist() == ref, (name, sampling, n)
    assert out.tokens.dtype == torch.int64 and out.accepted.dtype == torch.bool
    member = [int(ref[b]) in set(drafts[b].tolist()) for b in range(B)]
    assert out.accepted.tolist() == member
    if name != "typical":
        assert (p64[np.arange(B), ref] > 0).all()


@st.composite
def small_case(draw, name, sampling):
    V = draw(st.integers(2, 8))
    n = draw(st.sampled_from(allowed_n(name, 4, sampling)))
    need = 1 if sampling == "iid" else n
    V = max(V, need)
    B = draw(st.integers(1, 3))
    p = np.stack([as_float(draw(weights(V))) for _ in range(B)])
    q = np.stack([as_float(draw(weights(V, min_support=need))) for _ in range(B)])
    reps = draw(st.integers(1, 6))  # several trials of each row in one batch
    return np.repeat(p, reps, 0), np.repeat(q, reps, 0), n, draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize(("name", "sampling"), PAIRS)
def test_replay_small(name, sampling):
    @scaled(  # a fifth of the profile: 12 per (verifier, law) under ci
        1 / 5,
        suppress_health_check=[HealthCheck.large_base_example, HealthCheck.too_slow],
    )
    @given(small_case(name, sampling))
    def check(case):
        p, q, n, seed = case
        assert_replay(name, sampling, p, q, n, seed)

    check()


@pytest.fixture(scope="module")
def full_rows():
    """V = 49,152 rows in float32: softmax(3 N(0,1)), half the target zeroed, a near one-hot row."""
    rng = np.random.default_rng(2025)
    V = 49_152
    z = 3.0 * rng.standard_normal((3, V))
    z[2, 17] = 40.0
    p = softmax(z)
    p[0, rng.random(V) < 0.5] = 0.0  # long flat stretches in the CDF of row 0
    p[0, 5] = 0.2
    p = p / p.sum(axis=1, keepdims=True)
    q = softmax(z + rng.standard_normal((3, V)))
    reps = 3
    return (
        np.repeat(p, reps, 0).astype(np.float32).astype(np.float64),
        np.repeat(q, reps, 0).astype(np.float32).astype(np.float64),
    )


@pytest.mark.parametrize(("name", "sampling"), PAIRS)
def test_replay_full_vocabulary_float32(full_rows, name, sampling):
    p, q = full_rows
    n = max(allowed_n(name, 3, sampling))
    assert_replay(name, sampling, p, q, n, seed=9, dtype=torch.float32)


def test_half_precision_inputs_are_accepted():
    rng = np.random.default_rng(3)
    p = softmax(rng.standard_normal((4, 300)))
    q = softmax(rng.standard_normal((4, 300)))
    for dtype in (torch.float16, torch.bfloat16):
        assert_replay("rrs", "iid", p, q, 3, seed=1, dtype=dtype)


# --------------------------------------------------------------------------- output law

LAW_P = np.array([0.30, 0.0, 0.25, 0.35, 0.10])
LAW_Q = np.array([0.15, 0.20, 0.45, 0.0, 0.20])


def chi2_pvalue(counts, law):
    """Pearson chi-square, bins with expected count < 5 merged (docs/theory.md §7.2)."""
    N = counts.sum()
    exp = N * law
    big = exp >= 5
    obs, e = list(counts[big]), list(exp[big])
    if exp[~big].sum() > 0:
        obs.append(counts[~big].sum())
        e.append(exp[~big].sum())
    if len(obs) == 1:  # a one-point law: all counts in that bin is the whole test
        return 1.0 if obs[0] == N else 0.0
    stat = float(((np.array(obs) - np.array(e)) ** 2 / np.array(e)).sum())
    return stats.chi2.sf(stat, len(obs) - 1)


#: The law test for one pair per verifier family (the replay tests carry it to the others).
LAW_PAIRS = [("rrs", "iid"), ("rrs_wor", "without_replacement"), ("kseq", "iid"),
             ("spechub", "greedy"), ("greedy", "greedy"), ("nss", "iid")]  # fmt: skip


@pytest.mark.parametrize(("name", "sampling"), LAW_PAIRS)
def test_output_law_matches_exact_law(name, sampling):
    n = max(allowed_n(name, 3, sampling))
    N = 10_000
    law = output_distribution(name, LAW_P, LAW_Q, n=n, sampling=sampling)
    p = torch.from_numpy(np.tile(LAW_P, (N, 1)))
    q = torch.from_numpy(np.tile(LAW_Q, (N, 1)))
    rng = np.random.default_rng(4)
    du = rng.random((N, 1, K.draft_uniforms(n, sampling)))
    drafts = torch.from_numpy(K.draw_drafts(q.numpy(), n, sampling, du)[:, 0])
    gen = torch.Generator().manual_seed(12)
    tokens = verify(name, p, q, drafts, generator=gen, sampling=sampling).tokens.numpy()
    counts = np.bincount(tokens, minlength=LAW_P.size)
    assert counts[law == 0].sum() == 0
    assert chi2_pvalue(counts, law) > ALPHA


def test_chi2_detects_a_biased_verifier():
    """Power check of the law test: K-SEQ with rho = 1 (pitfall P4) is rejected."""
    N = 10_000
    p = torch.from_numpy(np.tile(LAW_P, (N, 1)))
    q = torch.from_numpy(np.tile(LAW_Q, (N, 1)))
    du = np.random.default_rng(0).random((N, 1, 3))
    d = torch.from_numpy(K.draw_drafts(q.numpy(), 3, "iid", du)[:, 0])
    u = torch.rand((N, 4), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    out = torch.full((N,), -1)
    for k in range(3):  # accept x w.p. min(1, p/q): rho = 1 instead of rho*
        x = d[:, k]
        acc = (out < 0) & (u[:, k] < _ops.accept_prob(_ops.gather(p, x), _ops.gather(q, x)))
        out = torch.where(acc, d[:, k], out)
    res = _ops.normalise_or(torch.clamp_min(p - q, 0.0), p)
    out = torch.where(out < 0, _ops.inverse_cdf(res, u[:, 3]), out)
    counts = np.bincount(out.numpy(), minlength=LAW_P.size)
    assert chi2_pvalue(counts, LAW_P) < ALPHA


# --------------------------------------------------------------------------- protocol details


def test_uniform_counts_match_the_numba_kernels():
    for name, sampling in PAIRS:
        for n in allowed_n(name, 5, sampling):
            assert verifier_uniforms(name, n) == K.verifier_uniforms(name, n)


def test_kseq_rho_matches_reference():
    rng = np.random.default_rng(6)
    p = softmax(2 * rng.standard_normal((5, 40)))
    q = softmax(2 * rng.standard_normal((5, 40)))
    for n in (2, 3, 5):
        got = kseq_rho(torch.from_numpy(p), torch.from_numpy(q), n).numpy()
        want = np.array([kseq_rho_reference(p[b], q[b], n) for b in range(5)])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)


def test_kseq_rho_checks_its_input():
    p = torch.tensor([[0.3, 0.4, 0.3], [0.1, 0.1, 0.8]], dtype=torch.float64)
    q = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]], dtype=torch.float64)
    # Each returned a plausible rho before (1.0 for a NaN row, q broadcast over rows).
    with pytest.raises(InvalidDistributionError, match="non-finite"):
        kseq_rho(torch.tensor([[float("nan"), 0.5, 0.5]], dtype=torch.float64), q[:1], 2)
    with pytest.raises(InvalidDistributionError, match="sums to 3"):
        kseq_rho(p * 3, q, 2)
    with pytest.raises(InvalidParameterError, match="n must be"):
        kseq_rho(p, q, 2.5)
    with pytest.raises(ShapeMismatchError, match="same shape"):
        kseq_rho(p, q[:1], 2)
    with pytest.raises(ShapeMismatchError, match="2 axes"):
        kseq_rho(p[0], q[0], 2)
    got = kseq_rho(p.float(), q.float(), 2)  # float32 in, float64 arithmetic
    assert got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), kseq_rho(p, q, 2).numpy(), rtol=0, atol=1e-7)


def test_generator_reproducible_and_equal_to_injected_uniforms():
    rng = np.random.default_rng(7)
    p = torch.from_numpy(softmax(rng.standard_normal((50, 20))))
    q = torch.from_numpy(softmax(rng.standard_normal((50, 20))))
    d = torch.from_numpy(K.draw_drafts(q.numpy(), 3, "iid", rng.random((50, 1, 3)))[:, 0])
    a = verify("rrs", p, q, d, generator=torch.Generator().manual_seed(5)).tokens
    b = verify("rrs", p, q, d, generator=torch.Generator().manual_seed(5)).tokens
    u = torch.rand((50, 4), generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    c = verify("rrs", p, q, d, uniforms=u).tokens
    assert torch.equal(a, b) and torch.equal(a, c)


def test_inputs_untouched_and_device_preserved():
    p = torch.tensor([[0.3, 0.4, 0.3]], dtype=torch.float32)
    q = torch.tensor([[0.6, 0.3, 0.1]], dtype=torch.float32)
    p0, q0 = p.clone(), q.clone()
    out = verify("sd", p, q, torch.tensor([[0]], dtype=torch.int32))
    assert torch.equal(p, p0) and torch.equal(q, q0)
    assert out.tokens.device == p.device and out.tokens.shape == (1,)


def test_zero_coin_never_accepts_a_zero_probability_token():
    """u = 0 on a draft with p(x) = 0 (docs/theory.md §7.5, zero-coin class): rejected."""
    p = torch.tensor([[0.0, 0.5, 0.5]] * 2, dtype=torch.float64)
    q = torch.tensor([[0.5, 0.25, 0.25]] * 2, dtype=torch.float64)
    u = torch.zeros((2, 2), dtype=torch.float64)
    for name in ("sd", "naive"):
        out = verify(name, p, q, torch.tensor([[0], [0]]), uniforms=u)
        assert out.tokens.tolist() == [1, 1] and not out.accepted.any()
    out = verify("rrs", p, q, torch.tensor([[0, 0]] * 2), uniforms=torch.zeros((2, 3)))
    assert out.tokens.tolist() == [1, 1]


def test_inverse_cdf_ties_and_overflow():
    """Zero-mass tokens are never drawn; u beyond a sum rounded below 1 gives the last positive."""
    law = torch.tensor([[0.0, 0.5, 0.0, 0.0, 0.5, 0.0]] * 4, dtype=torch.float64)
    u = torch.tensor([0.0, 0.5, 0.49999999999999994, 0.9999999999999999], dtype=torch.float64)
    assert inverse_cdf(law, u).tolist() == [1, 4, 1, 4]
    short = torch.tensor([[0.25, 0.25, 0.25 - 1e-12, 0.0]], dtype=torch.float64)
    assert inverse_cdf(short, torch.tensor([0.9999], dtype=torch.float64)).tolist() == [2]


def test_identical_target_and_draft_accepts_everything():
    p = torch.from_numpy(softmax(np.random.default_rng(1).standard_normal((30, 50))))
    d = torch.multinomial(p, 1, generator=torch.Generator().manual_seed(0))
    out = verify("sd", p, p, d, generator=torch.Generator().manual_seed(1))
    assert out.accepted.all() and torch.equal(out.tokens, d[:, 0])


# --------------------------------------------------------------------------- validation

P = torch.tensor([[0.3, 0.4, 0.3]], dtype=torch.float64)
Q = torch.tensor([[0.6, 0.3, 0.1]], dtype=torch.float64)
NAN = float("nan")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"name": "khisti"}, InvalidParameterError, "name must be one of"),
        ({"target": P.numpy()}, InvalidDistributionError, "torch.Tensor"),
        ({"target": P.to(torch.int64)}, InvalidDistributionError, "dtype"),
        ({"target": P[0]}, ShapeMismatchError, "2 axes"),
        ({"target": torch.tensor([[0.3, NAN, 0.7]])}, InvalidDistributionError, "non-finite"),
        ({"target": torch.tensor([[0.5, -0.1, 0.6]])}, InvalidDistributionError, "negative.*n 1"),
        ({"draft": torch.tensor([[0.6, 0.3, 0.2]])}, InvalidDistributionError, "draft row .* to"),
        ({"draft": torch.tensor([[0.5, 0.5]])}, ShapeMismatchError, "same shape"),
        ({"drafts": torch.tensor([0])}, ShapeMismatchError, r"shape \(B, n\)"),
        ({"drafts": torch.tensor([[3]])}, InvalidParameterError, r"drafts\[0, 0\] = 3"),
        ({"drafts": torch.tensor([[0.5]])}, InvalidParameterError, "integer"),
        ({"drafts": torch.tensor([[0, 1]])}, InvalidParameterError, "needs n in"),
        ({"uniforms": torch.tensor([[0.5, 1.0]])}, InvalidParameterError, r"uniforms\[0, 1\]"),
        ({"uniforms": torch.tensor([[0.5]])}, ShapeMismatchError, "uniforms must have shape"),
        ({"generator": 3}, InvalidParameterError, "generator"),
        ({"sampling": "beam"}, InvalidParameterError, "sampling"),
    ],
)
def test_validation_errors(kwargs, error, match):
    args = {"name": "sd", "target": P, "draft": Q, "drafts": torch.tensor([[0]])} | kwargs
    name, target, draft, drafts = (args.pop(k) for k in ("name", "target", "draft", "drafts"))
    with pytest.raises(error, match=match):
        verify(name, target, draft, drafts, **args)


def test_drafts_impossible_under_their_law():
    q = torch.tensor([[0.5, 0.5, 0.0]], dtype=torch.float64)
    p = torch.tensor([[0.2, 0.3, 0.5]], dtype=torch.float64)
    with pytest.raises(InvalidParameterError, match="probability 0"):
        verify("rrs", p, q, torch.tensor([[0, 2]]))
    with pytest.raises(InvalidParameterError, match="probability 0"):
        verify("rrs_wor", p, q, torch.tensor([[1, 1]]))
    with pytest.raises(InvalidParameterError, match="probability 0"):
        verify("greedy", p, Q, torch.tensor([[1, 2]]))  # the fixed draft must be the top token 0
    with pytest.raises(InvalidParameterError, match="larger than the support"):
        verify("rrs_wor", p, q, torch.tensor([[0, 1, 2]]))
    # Point-mass verification takes any drafts, even of draft probability 0.
    out = verify("nss", p, q, torch.tensor([[2, 2]]), uniforms=torch.tensor([[0.1, 0.0, 0.0]]))
    assert out.tokens.tolist() == [2]


# --------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize(("name", "sampling"), PAIRS)
def test_cuda_equals_cpu(full_rows, name, sampling):
    p, q = full_rows
    n = max(allowed_n(name, 3, sampling))
    rng = np.random.default_rng(2)
    d = K.draw_drafts(q, n, sampling, rng.random((p.shape[0], 1, K.draft_uniforms(n, sampling))))
    d = torch.from_numpy(d[:, 0])
    u = torch.from_numpy(rng.random((p.shape[0], verifier_uniforms(name, n))))
    tp, tq = torch.from_numpy(p).float(), torch.from_numpy(q).float()
    cpu = verify(name, tp, tq, d, uniforms=u, sampling=sampling)
    gpu = verify(name, tp.cuda(), tq.cuda(), d.cuda(), uniforms=u.cuda(), sampling=sampling)
    assert gpu.tokens.device.type == "cuda"
    assert torch.equal(cpu.tokens, gpu.tokens.cpu())
