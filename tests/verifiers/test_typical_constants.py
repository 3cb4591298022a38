"""Typical acceptance (Medusa): the threshold min(0.09, 0.3 exp(-H(p))) on rows where each
constant decides the answer (kills: posterior_threshold or posterior_alpha changed, and a
tie p(x) == threshold accepted by the numba kernel only)."""

from __future__ import annotations

import numpy as np

from spectheory.sim import _kernels as K
from spectheory.verifiers import REGISTRY

TYPICAL = REGISTRY["typical"].function

# Row 0: H = 0.29, 0.3 exp(-H) = 0.22, threshold 0.09: p(x) = 0.085 is rejected (argmax 1).
# Row 1: H = 2.152, threshold 0.3 exp(-H) = 0.03489 < 0.09: p(x) = 0.03 rejected (argmax 1).
# Row 2: H = 2.160, threshold 0.03461: p(x) = 0.036 accepted.
# Row 3: p(x) = 0.09 exactly and threshold 0.09 exactly: "p > threshold" is strict: rejected.
ROWS = [
    [0.085, 0.915] + [0.0] * 7,
    [0.03] + [0.97 / 8] * 8,
    [0.036] + [0.964 / 8] * 8,
    [0.09, 0.91] + [0.0] * 7,
]
WANT = [1, 1, 0, 1]


def test_typical_threshold_constants_decide_on_hand_rows():
    p = np.array(ROWS)
    q = np.full_like(p, 1 / p.shape[1])
    d = np.zeros((len(ROWS), 1), dtype=np.int64)
    ref = [TYPICAL(p[b], q[b], (0,), None) for b in range(len(ROWS))]
    assert ref == WANT
    out = K.run_verifier("typical", p, q, d[:, None], np.zeros((len(ROWS), 1, 0)))
    assert out[:, 0].tolist() == WANT
