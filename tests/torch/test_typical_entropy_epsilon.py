"""As test_typical_entropy_epsilon.py, for the torch form of typical acceptance."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory.torch.verifiers import _FUNCTIONS  # noqa: E402


def row():
    m, tiny = 5000, 1e-5
    head = [0.5, 0.0302, 0.031]
    rest = (1 - sum(head) - m * tiny) / 8
    return np.array(head + [rest] * 8 + [tiny] * m)


def test_torch_entropy_epsilon_of_typical_acceptance():
    p = torch.from_numpy(np.stack([row(), row()]))
    q = torch.full_like(p, 1 / p.shape[1])
    d = torch.tensor([[1], [2]])
    assert _FUNCTIONS["typical"](p, q, d, None).tolist() == [0, 2]
