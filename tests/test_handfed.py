"""Hand-fed uniforms: every verifier on every backend returns the hand-computed token.

The cases (tests/handfed_cases.py) walk named paths (accept, reject then accept
a later draft, repeated drafts, two rejections then the residual, drafted tokens
with ``q = 0``) and state the answer worked out by hand.  Here the coins
reference (:class:`~spectheory.coins.ReplayCoins`), the numba kernels
(:mod:`spectheory.sim._kernels`) and the torch verifiers (:mod:`spectheory.torch`)
must each return exactly that token; the Triton kernels run the same cases
under the interpreter (tests/triton_handfed.py, in a subprocess: the
interpreter must be on before triton is first imported).

A drafted token with ``q = 0`` cannot have been drawn from the draft: the
validating entry points refuse it, and without validation every backend
rejects it, whatever its coin (vLLM's rule; FlashInfer's where ``p = 0``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import spectheory
from spectheory import InvalidParameterError
from spectheory.coins import ReplayCoins
from spectheory.sim import _kernels as K
from spectheory.torch import chain_speculative_sampling, recursive_rejection_sampling
from spectheory.torch import verify as torch_verify
from spectheory.torch.verifiers import _FUNCTIONS, _LAW_AWARE, verifier_uniforms
from spectheory.verifiers import REGISTRY

from .handfed_cases import CASES, CHAIN_CASES

ROOT = Path(__file__).resolve().parent.parent
IDS = [c.label for c in CASES]


def padded(case, k):
    """The case's uniforms padded with zeros to ``k`` (coins past the path are never read)."""
    u = np.zeros(max(k, len(case.u)))
    u[: len(case.u)] = case.u
    return u[:k]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_reference(case):
    fn = REGISTRY[case.name].function
    coins = ReplayCoins(case.u)
    assert fn(case.p, case.q, case.drafts, coins, sampling=case.sampling) == case.token


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_numba_kernel(case):
    n = len(case.drafts)
    u = padded(case, K.verifier_uniforms(case.name, n))[None, None]
    drafts = np.array(case.drafts, dtype=np.int64)[None, None]
    out = K.run_verifier(case.name, case.p[None], case.q[None], drafts, u, case.sampling)
    assert out.tolist() == [[case.token]]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_torch_verifier(case):
    n = len(case.drafts)
    p, q = torch.from_numpy(case.p)[None], torch.from_numpy(case.q)[None]
    d = torch.tensor([case.drafts])
    u = torch.from_numpy(padded(case, verifier_uniforms(case.name, n)))[None]
    form = _FUNCTIONS[case.name]  # no validation; a law-aware form is told the law
    law = {"sampling": case.sampling} if case.name in _LAW_AWARE else {}
    assert form(p, q, d, u, **law).tolist() == [case.token]
    if case.invalid:
        with pytest.raises(InvalidParameterError, match="probability 0"):
            torch_verify(case.name, p, q, d, uniforms=u, sampling=case.sampling)
    else:
        out = torch_verify(case.name, p, q, d, uniforms=u, sampling=case.sampling)
        assert out.tokens.tolist() == [case.token]
        assert out.accepted.tolist() == [case.token in case.drafts]


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.name in ("rrs", "rrs_wor")], ids=lambda c: c.label
)
def test_torch_rrs_entry_point(case):
    """recursive_rejection_sampling, validated and with validate=False."""
    p, q = torch.from_numpy(case.p)[None], torch.from_numpy(case.q)[None]
    d = torch.tensor([case.drafts])
    u = torch.from_numpy(padded(case, len(case.drafts) + 1))[None]
    kw = {"sampling": case.sampling, "uniforms": u, "backend": "torch"}
    assert recursive_rejection_sampling(p, q, d, validate=False, **kw).tokens.tolist() == [
        case.token
    ]
    if case.invalid:
        with pytest.raises(InvalidParameterError, match="probability 0"):
            recursive_rejection_sampling(p, q, d, **kw)
    else:
        assert recursive_rejection_sampling(p, q, d, **kw).tokens.tolist() == [case.token]


@pytest.mark.parametrize("case", [c for c in CASES if c.invalid], ids=lambda c: c.label)
def test_validated_reference_refuses_q_zero_drafts(case):
    with pytest.raises(InvalidParameterError, match="probability 0"):
        spectheory.verify(
            case.name, case.p, case.q, list(case.drafts), rng=0, sampling=case.sampling
        )


def test_every_kernel_verifier_has_a_case_and_a_q_zero_case():
    """The table covers every batched verifier, and a q = 0 draft for each that reads q."""
    names = {c.name for c in CASES}
    assert set(K.KERNEL_VERIFIERS) - {"typical"} <= names
    q_zero = {c.name for c in CASES if c.invalid}
    assert q_zero == set(K.KERNEL_VERIFIERS) - {"typical", "nss"}  # nss and typical ignore q


def test_typical_has_no_coin():
    """Medusa's typical acceptance (lossy): a draft with p above the threshold, else argmax p.

    The threshold is min(0.09, 0.3 exp(-H(p))): 0.09 on every row here (row 2 has
    0.3 exp(-H) = 0.21, so a draft of p = 0.095 passes min and would fail max).
    """
    p = np.array([[0.02, 0.96, 0.02], [0.3, 0.4, 0.3], [0.095, 0.9, 0.005]])
    q = np.full((3, 3), 1 / 3)
    d = np.array([[0], [0], [0]])
    want = [1, 0, 0]  # 0.02 < 0.09: fallback argmax; 0.3 and 0.095 > 0.09: accepted
    assert [REGISTRY["typical"].function(p[b], q[b], tuple(d[b]), None) for b in range(3)] == want
    assert K.run_verifier("typical", p, q, d[:, None], np.zeros((3, 1, 0)))[:, 0].tolist() == want
    out = _FUNCTIONS["typical"](torch.from_numpy(p), torch.from_numpy(q), torch.from_numpy(d), None)
    assert out.tolist() == want


# --------------------------------------------------------------------------- chain rounds


@pytest.mark.parametrize("case", CHAIN_CASES, ids=[c.label for c in CHAIN_CASES])
@pytest.mark.parametrize("validate", [True, False])
def test_chain_round(case, validate):
    invalid = bool((case.q[np.arange(len(case.x)), list(case.x)] == 0).any())
    args = (
        torch.from_numpy(case.p)[None],
        torch.from_numpy(case.q)[None],
        torch.tensor([case.x]),
    )
    u = torch.tensor([case.u], dtype=torch.float64)
    if validate and invalid:
        with pytest.raises(InvalidParameterError, match="draft probability 0"):
            chain_speculative_sampling(*args, uniforms=u, backend="torch")
        return
    res = chain_speculative_sampling(*args, uniforms=u, backend="torch", validate=validate)
    assert res.output_token_ids.tolist() == [list(case.tokens)]
    assert res.accepted_token_num.tolist() == [case.passed]
    assert res.emitted_draft_token_num.tolist() == [case.emitted]


def test_chain_flashinfer_keyword_aliases():
    case = CHAIN_CASES[0]
    args = (torch.from_numpy(case.p)[None], torch.from_numpy(case.q)[None], torch.tensor([case.x]))
    u = torch.tensor([case.u], dtype=torch.float64)
    acc = torch.tensor([3], dtype=torch.int32)
    emit = torch.tensor([5], dtype=torch.int32)
    res = chain_speculative_sampling(
        *args,
        uniforms=u,
        maybe_output_accepted_token_num=acc,
        maybe_output_emitted_draft_token_num=emit,
    )
    assert res.accepted_token_num is acc and acc.tolist() == [3 + case.passed]
    assert res.emitted_draft_token_num is emit and emit.tolist() == [5 + case.emitted]
    with pytest.raises(InvalidParameterError, match="not both"):
        chain_speculative_sampling(
            *args,
            uniforms=u,
            output_accepted_token_num=acc,
            maybe_output_accepted_token_num=acc,
        )


# --------------------------------------------------------------------------- Triton


def test_triton_kernels_handfed_interpreted():
    """tests/triton_handfed.py under TRITON_INTERPRET=1 in a fresh interpreter."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
            str(ROOT / "tests" / "triton_handfed.py"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout
