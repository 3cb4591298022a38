"""Chain speculative sampling and fused multi-draft RRS: torch path, Triton kernels, oracles.

In this process (no interpreter):

* the plain torch chain round against the numpy oracle (the registry's ``sd``
  with ReplayCoins, tests/torch_oracles.py) on hypothesis instances (V = 2..8,
  gamma = 1..4, float64) and on V = 49,152 rows given in float32;
* its exact output law, integrated over every draft tuple and uniform cell,
  equal to the target's joint law (to 1e-12), and the same integration
  catching a round that reuses the accept coin for the residual draw;
* counters, generator, validation and backend selection.

The Triton kernels: tests/triton_cases.py, run in a subprocess with
``TRITON_INTERPRET=1`` (the interpreter must be on before triton is imported,
which this process has already done), and on CUDA in the ``gpu`` tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from spectheory import InvalidDistributionError, InvalidParameterError, ShapeMismatchError, softmax
from spectheory._validate import as_distribution
from spectheory.torch import chain_speculative_sampling, recursive_rejection_sampling
from spectheory.torch.chain import chain_torch
from tests.budget import scaled
from tests.strategies import as_float, weights
from tests.torch_oracles import chain_cells, chain_reference, extended_law_error

ROOT = Path(__file__).resolve().parents[2]


def assert_chain_matches_reference(p, q, x, u):
    """Torch round == numpy oracle on every row; ``p`` (B, g+1, V), ``q`` (B, g, V) float64."""
    res = chain_speculative_sampling(
        torch.from_numpy(p),
        torch.from_numpy(q),
        torch.from_numpy(x),
        uniforms=torch.from_numpy(u),
        backend="torch",
    )
    for b in range(p.shape[0]):
        tokens, passed, emitted = chain_reference(p[b], q[b], x[b], u[b])
        assert res.output_token_ids[b].tolist() == tokens, b
        assert int(res.accepted_token_num[b]) == passed
        assert int(res.emitted_draft_token_num[b]) == emitted


@st.composite
def chain_case(draw):
    V = draw(st.integers(2, 8))
    gamma = draw(st.integers(1, 4))
    B = draw(st.integers(1, 4))
    p = np.array([[as_float(draw(weights(V))) for _ in range(gamma + 1)] for _ in range(B)])
    q = np.array([[as_float(draw(weights(V))) for _ in range(gamma)] for _ in range(B)])
    if draw(st.booleans()):
        q[:, : gamma // 2] = p[:, : gamma // 2]  # p == q at some positions
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = np.array([[rng.choice(V, p=q[b, i]) for i in range(gamma)] for b in range(B)])
    u = rng.random((B, gamma + 1))
    if draw(st.booleans()):
        u[:, 0] = 0.0  # the zero coin
    return p, q, x.astype(np.int64), u


@scaled(2 / 3, suppress_health_check=[HealthCheck.too_slow])  # 40 under ci
@given(chain_case())
def test_chain_torch_matches_reference(case):
    assert_chain_matches_reference(*case)


def test_chain_torch_full_vocabulary_float32():
    """V = 49,152 float32 rows, half the target zeroed (flat CDF stretches), a near one-hot row."""
    rng = np.random.default_rng(11)
    B, gamma, V = 6, 4, 49_152
    z = 3.0 * rng.standard_normal((B, gamma + 1, V))
    z[1, :, 17] = 40.0
    p = softmax(z.reshape(-1, V))
    p[::2][rng.random(p[::2].shape) < 0.5] = 0.0
    p[:, 3] += 0.1
    p = (p / p.sum(1, keepdims=True)).astype(np.float32)
    q = softmax((z[:, :gamma] + rng.standard_normal((B, gamma, V))).reshape(-1, V))
    q = q.astype(np.float32)
    # The numpy oracle reads the float32 rows as spectheory's checks do: float64, renormalised.
    p64 = as_distribution(torch.from_numpy(p), "target")[0].reshape(B, gamma + 1, V)
    q64 = as_distribution(torch.from_numpy(q), "draft")[0].reshape(B, gamma, V)
    x = np.array([[rng.choice(V, p=q64[b, i]) for i in range(gamma)] for b in range(B)])
    u = rng.random((B, gamma + 1))
    u[0, :gamma] = 1 - 2.0**-53  # row 0 rejects at its first position with p < q
    res = chain_speculative_sampling(
        torch.from_numpy(p).reshape(B, gamma + 1, V),
        torch.from_numpy(q).reshape(B, gamma, V),
        torch.from_numpy(x),
        uniforms=torch.from_numpy(u),
        backend="torch",
    )
    for b in range(B):
        tokens, passed, emitted = chain_reference(p64[b], q64[b], x[b], u[b])
        assert res.output_token_ids[b].tolist() == tokens
        assert (int(res.accepted_token_num[b]), int(res.emitted_draft_token_num[b])) == (
            passed,
            emitted,
        )


LAW_CASES = [
    # docs/theory.md §8.1 at position 1; zeros at position 2; the bonus row has a zero.
    (
        np.array([[0.3, 0.4, 0.3], [0.5, 0.0, 0.5], [0.2, 0.2, 0.6]]),
        np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]]),
    ),
    # gamma = 3, V = 2, p == q at position 2, one-hot draft at position 3.
    (
        np.array([[0.25, 0.75], [0.5, 0.5], [0.9, 0.1], [0.0, 1.0]]),
        np.array([[0.75, 0.25], [0.5, 0.5], [0.0, 1.0]]),
    ),
]


def run_torch_cells(p, q, d, u):
    M = len(d)
    return chain_torch(
        torch.from_numpy(p).expand(M, -1, -1),
        torch.from_numpy(q).expand(M, -1, -1),
        torch.from_numpy(d),
        torch.from_numpy(u),
    )[0].numpy()


@pytest.mark.parametrize(("p", "q"), LAW_CASES)
def test_chain_exact_law(p, q):
    d, u, w = chain_cells(p, q, np.random.default_rng(0))
    assert abs(w.sum() - 1) < 1e-12
    assert extended_law_error(p, run_torch_cells(p, q, d, u), w) < 1e-12


def test_exact_law_catches_coin_reuse():
    """Drawing the correction with the rejected position's coin (FlashInfer PR #424): biased."""
    p, q = LAW_CASES[0]
    d, u, w = chain_cells(p, q, np.random.default_rng(0))
    reuse = u.copy()
    reuse[:, 1:] = u[:, :-1]  # coin j also drives the draw that follows a rejection at j
    reuse[:, 0] = u[:, 0]
    tokens = run_torch_cells(p, q, d, reuse)
    assert extended_law_error(p, tokens, w) > 0.01


def test_counters_accumulate_in_place():
    p = torch.tensor([[[0.3, 0.4, 0.3]] * 3] * 2, dtype=torch.float64)
    q = torch.tensor([[[0.6, 0.3, 0.1]] * 2] * 2, dtype=torch.float64)
    x = torch.tensor([[0, 1], [2, 0]])
    u = torch.tensor([[0.25, 0.75, 0.5], [0.9, 0.1, 0.5]], dtype=torch.float64)
    acc = torch.tensor([5, 7], dtype=torch.int32)
    emit = torch.tensor([1, 1])
    res = chain_speculative_sampling(
        p,
        q,
        x,
        uniforms=u,
        backend="torch",
        output_accepted_token_num=acc,
        output_emitted_draft_token_num=emit,
    )
    # Row 0: accept 0 (u = .25 < .5), accept 1 (p > q); bonus at u = .5 of [.3,.4,.3] -> 1.
    # Row 1: accept 2 (p > q), accept 0 (u = .1 < .5); bonus at u = .5 -> 1.
    assert res.output_token_ids.tolist() == [[0, 1, 1], [2, 0, 1]]
    assert res.accepted_token_num is acc and acc.tolist() == [7, 9]
    assert emit.tolist() == [3, 3]


def test_generator_reproducible():
    rng = np.random.default_rng(3)
    # spectheory's softmax takes (V,) or (B, V) rows: flatten the steps, then restore them.
    p = torch.from_numpy(softmax(rng.standard_normal((80, 30)))).reshape(20, 4, 30)
    q = torch.from_numpy(softmax(rng.standard_normal((60, 30)))).reshape(20, 3, 30)
    gen = torch.Generator().manual_seed(2)
    x = torch.multinomial(q.reshape(-1, 30), 1, generator=gen).reshape(20, 3)
    runs = [
        chain_speculative_sampling(
            p, q, x, generator=torch.Generator().manual_seed(8), backend="torch"
        ).output_token_ids
        for _ in range(2)
    ]
    u = torch.rand((20, 4), generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    fixed = chain_speculative_sampling(p, q, x, uniforms=u, backend="torch").output_token_ids
    assert torch.equal(runs[0], runs[1]) and torch.equal(runs[0], fixed)


P3 = torch.tensor([[[0.3, 0.4, 0.3]] * 3], dtype=torch.float64)
Q3 = torch.tensor([[[0.6, 0.3, 0.1], [0.0, 0.5, 0.5]]], dtype=torch.float64)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((P3, Q3, torch.tensor([[0, 0]])), {}, InvalidParameterError, r"\[0, 1\] = 0 has draft"),
        ((P3, Q3, torch.tensor([[0, -1]])), {}, InvalidParameterError, "not a token id"),
        ((P3, Q3[:, :1], torch.tensor([[0]])), {}, ShapeMismatchError, "gamma"),
        ((P3[:, :1], Q3[:, :0], torch.tensor([[0]])), {}, ShapeMismatchError, "non-empty"),
        ((P3 * 2, Q3, torch.tensor([[0, 1]])), {}, InvalidDistributionError, "target_probs row"),
        ((P3.numpy(), Q3, torch.tensor([[0, 1]])), {}, InvalidParameterError, "torch.Tensor"),
        (
            (P3, Q3, torch.tensor([[0, 1]])),
            {"uniforms": torch.zeros((1, 2))},
            ShapeMismatchError,
            "uniforms must have shape",
        ),
        (
            (P3, Q3, torch.tensor([[0, 1]])),
            {"output_accepted_token_num": torch.zeros(1)},
            InvalidParameterError,
            "int32 or int64 tensor",
        ),
        (  # a bool counter saturated at True (the count 2 was lost), uint8 wraps at 256
            (P3, Q3, torch.tensor([[0, 1]])),
            {"output_accepted_token_num": torch.zeros(1, dtype=torch.bool)},
            InvalidParameterError,
            "int32 or int64 tensor",
        ),
        (
            (P3, Q3, torch.tensor([[0, 1]])),
            {"output_emitted_draft_token_num": torch.zeros(1, dtype=torch.uint8)},
            InvalidParameterError,
            "int32 or int64 tensor",
        ),
        ((P3, Q3, torch.tensor([[0, 1]])), {"backend": "cuda"}, InvalidParameterError, "backend"),
    ],
)
def test_chain_validation(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        chain_speculative_sampling(*args, **kwargs)


def test_triton_backend_on_cpu_needs_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(InvalidParameterError, match="TRITON_INTERPRET"):
        chain_speculative_sampling(P3, Q3, torch.tensor([[0, 1]]), backend="triton")
    p = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    with pytest.raises(InvalidParameterError, match="TRITON_INTERPRET"):
        recursive_rejection_sampling(p, p, torch.tensor([[0]]), backend="triton")
    # "auto" on CPU tensors is the torch path.
    out = recursive_rejection_sampling(p, p, torch.tensor([[0]]), uniforms=torch.zeros((1, 2)))
    assert out.tokens.tolist() == [0]


def test_rrs_public_matches_verify():
    from spectheory.torch import verify

    rng = np.random.default_rng(5)
    p = torch.from_numpy(softmax(rng.standard_normal((30, 12))))
    q = torch.from_numpy(softmax(rng.standard_normal((30, 12))))
    d = torch.multinomial(q, 3, replacement=False, generator=torch.Generator().manual_seed(1))
    u = torch.from_numpy(rng.random((30, 4)))
    for sampling, name in (("iid", "rrs"), ("without_replacement", "rrs_wor")):
        a = recursive_rejection_sampling(p, q, d, sampling=sampling, uniforms=u)
        b = verify(name, p, q, d, uniforms=u, sampling=sampling)
        assert torch.equal(a.tokens, b.tokens)
    with pytest.raises(InvalidParameterError, match="sampling"):
        recursive_rejection_sampling(p, q, d, sampling="greedy")


# --------------------------------------------------------------------------- Triton


def test_triton_kernels_interpreted():
    """tests/triton_cases.py under TRITON_INTERPRET=1, in a fresh interpreter (see module doc)."""
    env = dict(os.environ, TRITON_INTERPRET="1", SPECTHEORY_TRITON_DEVICE="cpu")
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider"]
    proc = subprocess.run(
        [*cmd, str(ROOT / "tests" / "triton_cases.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout


requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


#: The module the CUDA tests run; it lives beside tests/torch, not in it.
CASES_MODULE = "tests.triton_cases"


def test_cuda_cases_module_resolves():
    """The CUDA tests' import resolves without CUDA (a wrong path once hid every CUDA test).

    Found, not imported: importing it here would import triton in this process.
    """
    import importlib.util

    assert importlib.util.find_spec(CASES_MODULE) is not None


@pytest.fixture
def cuda_cases(monkeypatch):
    import importlib

    triton_cases = importlib.import_module(CASES_MODULE)
    monkeypatch.setattr(triton_cases, "DEVICE", "cuda")
    return triton_cases


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("V", [49_152, 151_936])
@pytest.mark.parametrize("gamma", [1, 4, 8])
def test_cuda_chain_full_vocabulary(cuda_cases, V, gamma):
    cuda_cases.check_chain(B=16, gamma=gamma, V=V, seed=gamma, dtype=torch.float32)
    cuda_cases.check_chain(B=8, gamma=gamma, V=V, seed=gamma + 100)


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("sampling", ["iid", "without_replacement"])
@pytest.mark.parametrize("V", [49_152, 151_936])
def test_cuda_rrs_full_vocabulary(cuda_cases, sampling, V):
    cuda_cases.check_rrs(sampling, B=16, n=4, V=V, seed=1, dtype=torch.float32)
    cuda_cases.check_rrs(sampling, B=8, n=3, V=V, seed=2)


@pytest.mark.gpu
@requires_cuda
def test_cuda_small_cases(cuda_cases):
    for name in dir(cuda_cases):
        if name.startswith("test_"):
            getattr(cuda_cases, name)()
