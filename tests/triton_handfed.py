"""Hand-fed uniforms through the Triton kernels (run under TRITON_INTERPRET=1 only).

Not collected by the main run (its name does not match ``test_*.py``):
tests/test_handfed.py runs it in a subprocess with the interpreter on.  The
cases and their hand-computed answers are tests/handfed_cases.py; here the
fused RRS kernel (``rrs``, ``rrs_wor``) and the fused chain kernel must return
them token for token, drafted tokens with ``q = 0`` included (rejected).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spectheory.torch._triton_chain import chain_triton
from spectheory.torch._triton_rrs import rrs_triton

try:  # run as a module of the tests package (pytest rootdir) or as a file
    from .handfed_cases import CASES, CHAIN_CASES
except ImportError:  # pragma: no cover
    from handfed_cases import CASES, CHAIN_CASES

RRS = [c for c in CASES if c.name in ("rrs", "rrs_wor")]


@pytest.mark.parametrize("case", RRS, ids=[c.label for c in RRS])
def test_rrs_kernel(case):
    n = len(case.drafts)
    u = np.zeros(n + 1)
    u[: len(case.u)] = case.u[: n + 1]
    out = rrs_triton(
        torch.from_numpy(case.p)[None],
        torch.from_numpy(case.q)[None],
        torch.tensor([case.drafts]),
        torch.from_numpy(u)[None],
        without_replacement=case.name == "rrs_wor",
    )
    assert out.tolist() == [case.token]


@pytest.mark.parametrize("case", CHAIN_CASES, ids=[c.label for c in CHAIN_CASES])
def test_chain_kernel(case):
    tokens, passed, emitted = chain_triton(
        torch.from_numpy(case.p)[None],
        torch.from_numpy(case.q)[None],
        torch.tensor([case.x]),
        torch.tensor([case.u], dtype=torch.float64),
    )
    assert tokens.tolist() == [list(case.tokens)]
    assert (passed.tolist(), emitted.tolist()) == ([case.passed], [case.emitted])


def test_rrs_kernel_batch_of_all_cases():
    """All RRS cases of one law in one launch: rows never read each other's scratch."""
    for name in ("rrs", "rrs_wor"):
        rows = [c for c in RRS if c.name == name and len(c.drafts) == 2]
        u = np.array([list(c.u[:3]) + [0.0] * (3 - len(c.u[:3])) for c in rows])
        out = rrs_triton(
            torch.from_numpy(np.array([c.p for c in rows])),
            torch.from_numpy(np.array([c.q for c in rows])),
            torch.tensor([c.drafts for c in rows]),
            torch.from_numpy(u),
            without_replacement=name == "rrs_wor",
        )
        assert out.tolist() == [c.token for c in rows]
