"""simulate runs the kernels in chunks of rows (about 2**24 // ((n + 4) V) rows each); every
chunk must read its own rows' given uniforms: a row's tokens do not depend on the batch.  Given
both kinds of uniforms, rng has nothing to draw and is refused."""

from __future__ import annotations

import numpy as np
import pytest

from spectheory import InvalidParameterError, softmax
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


def test_rng_beside_both_uniforms_is_refused_not_ignored():
    """Audit: with ``uniforms`` and ``draft_uniforms`` both given, ``rng`` (or ``seed``) drew
    nothing: ``rng=5`` and ``rng=6`` returned the same tokens, and ``inputs`` recorded
    ``rng=5`` as if it had mattered.  With one kind of uniforms given, rng draws the other."""
    p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    rng = np.random.default_rng(1)
    u, du = rng.random((1, 40, 3)), rng.random((1, 40, 2))  # rrs, n = 2: 3 uniforms a trial
    for kwargs in ({"rng": 5}, {"seed": 5}, {"rng": np.random.default_rng(5)}):
        with pytest.raises(InvalidParameterError, match="would be ignored"):
            simulate("rrs", p, q, n=2, trials=40, uniforms=u, draft_uniforms=du, **kwargs)
    given = simulate("rrs", p, q, n=2, trials=40, uniforms=u, draft_uniforms=du)
    assert "rng" not in given.inputs
    # one kind given: rng draws the other, so it is used (drafts drawn from it differ)
    a = simulate("rrs", p, q, n=2, trials=40, uniforms=u, rng=5)
    b = simulate("rrs", p, q, n=2, trials=40, uniforms=u, rng=6)
    assert not np.array_equal(a.drafts, b.drafts)
