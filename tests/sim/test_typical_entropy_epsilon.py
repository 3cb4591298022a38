"""Typical acceptance's entropy H(p) = -sum p log(p + 1e-5) on a row with 5,000 tokens of
mass 1e-5, where the 1e-5 matters: threshold 0.3 exp(-H) = 0.03060 (with 1e-6 it would be
0.0297, with 1e-4 0.0334).  Draft 1 (p = 0.0302) is rejected, draft 2 (p = 0.031) accepted,
by the reference and by the numba kernel, which recomputes the threshold itself."""

from __future__ import annotations

import math

import numpy as np

from spectheory.sim import _kernels as K
from spectheory.verifiers import REGISTRY


def row():
    m, tiny = 5000, 1e-5
    head = [0.5, 0.0302, 0.031]
    rest = (1 - sum(head) - m * tiny) / 8
    return np.array(head + [rest] * 8 + [tiny] * m)


def test_entropy_epsilon_of_typical_acceptance():
    p = row()
    H = -float(np.sum(p * np.log(p + 1e-5)))
    assert abs(0.3 * math.exp(-H) - 0.0306) < 2e-4  # the design of the row
    q = np.full_like(p, 1 / p.size)
    fn = REGISTRY["typical"].function
    assert fn(p, q, (1,), None) == 0  # 0.0302 < 0.0306: argmax
    assert fn(p, q, (2,), None) == 2  # 0.031 > 0.0306: accepted
    d = np.array([[[1]], [[2]]], dtype=np.int64)
    out = K.run_verifier("typical", np.stack([p, p]), np.stack([q, q]), d, np.zeros((2, 1, 0)))
    assert out[:, 0].tolist() == [0, 2]
