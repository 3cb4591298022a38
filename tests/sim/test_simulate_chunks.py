"""simulate runs the kernels in chunks of rows (about 2**24 // ((n + 4) V) rows each); every
chunk must read its own rows' given uniforms: a row's tokens do not depend on the batch."""

from __future__ import annotations

import numpy as np

from spectheory import softmax
from spectheory.sim.simulate import simulate


def test_each_chunk_reads_its_own_uniforms():
    V, B, T = 2**20, 4, 8  # n = 1: chunks of 2**24 // (5 V) = 3 rows, so two chunks
    rng = np.random.default_rng(0)
    z = rng.standard_normal((B, V))
    p = softmax(z)
    q = softmax(z + rng.standard_normal((B, V)))
    u = rng.random((B, T, 2))
    du = rng.random((B, T, 1))
    whole = simulate("sd", p, q, n=1, trials=T, uniforms=u, draft_uniforms=du)
    last = simulate("sd", p[3:], q[3:], n=1, trials=T, uniforms=u[3:], draft_uniforms=du[3:])
    assert np.array_equal(whole.drafts[3:], last.drafts)
    assert np.array_equal(whole.tokens[3:], last.tokens)
