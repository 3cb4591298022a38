"""nss's numba kernel hands a trial to its exact O(nV) replica when the mass left after a
rejection is below EXACT_MASS; that replica must skip repeated drafts without reading a
coin, as the reference does (the existing full-vocabulary test draws its later drafts from
49,151 tokens, so they never repeat)."""

from __future__ import annotations

import numpy as np

from spectheory.coins import ReplayCoins
from spectheory.sim import _kernels as K
from spectheory.verifiers import REGISTRY


def test_nss_exact_replica_skips_repeated_drafts():
    rng = np.random.default_rng(3)
    V = 40
    p = rng.random(V)
    p[0] = 0.0
    p *= 4e-4 / p.sum()
    p[0] = 1 - 4e-4  # rejecting token 0 leaves Z = 4e-4 < EXACT_MASS: the exact replica runs
    assert 4e-4 < K.EXACT_MASS
    q = np.full(V, 1 / V)
    T = 60
    o = rng.integers(1, V, size=(T, 2))
    # (0, a, a, b) and (0, a, b, a): the repeats of a must read no coin
    drafts = np.where(
        (np.arange(T) % 2 == 0)[:, None],
        np.stack([np.zeros(T, int), o[:, 0], o[:, 0], o[:, 1]], axis=1),
        np.stack([np.zeros(T, int), o[:, 0], o[:, 1], o[:, 0]], axis=1),
    ).astype(np.int64)[None]
    u = rng.random((1, T, 5))
    u[0, :, 0] = 0.99999  # reject token 0 in every trial
    tokens = K.run_verifier("nss", p[None], q[None], drafts, u)
    fn = REGISTRY["nss"].function
    for t in range(T):
        d = tuple(int(x) for x in drafts[0, t])
        assert tokens[0, t] == fn(p, q, d, ReplayCoins(u[0, t])), t
