"""``optimal_token`` (the one-position hull path of ``optimal``) on rows whose tail masses tie.

A token whose draft mass is below the rounding of the tail mass ``R`` beside it
(``q`` ~ 1e-30 next to ``R`` ~ 1, about 30% of a real trace's rows) leaves
``R[t] == R[t + 1]``: the hull divided by ``R[i] - R[j]`` and raised
ZeroDivisionError, while the reference (the merge sweep, where such a tier has
mass 0) and ``run_optimal`` returned a token.  The hull must select as the sweep
does, so every check is token for token against both on the same uniforms.
Half the trials accept whatever is selected (``u[1] = 0``), so the selection
itself is compared and not hidden behind a rejection.
"""

from __future__ import annotations

import numpy as np
import pytest

from spectheory.coins import ReplayCoins
from spectheory.distributions import softmax
from spectheory.sim._optimal_kernel import optimal_token, run_optimal
from spectheory.solvers._polymatroid_kernels import row_tables
from spectheory.verifiers import REGISTRY

NS = (2, 4, 8)


def _base(rng, k=16):
    return rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))


def _equal_tiny_row():
    """24 tokens of equal tiny q and larger p (top of T, flat density, like a real row's
    tail of the vocabulary) and 24 of equal tiny p and q (ratio 1, inside the order)."""
    p, q = _base(np.random.default_rng(2024))
    p = np.concatenate([p, np.full(24, 1e-9), np.full(24, 1e-30)])
    q = np.concatenate([q, np.full(24, 1e-30), np.full(24, 1e-30)])
    return p / p.sum(), q / q.sum(), np.arange(16, 64)


def _distinct_tiny_row():
    """30 tokens of tiny q whose ratios p/q spread among the others': tiers of mass 0
    with distinct densities, some adjacent (the sweep merges those at W = 0)."""
    p, q = _base(np.random.default_rng(2024))
    qt = 1e-30 * (1 + np.arange(30) % 3)
    p = np.concatenate([p, qt * np.geomspace(0.05, 1.0, 30)])
    q = np.concatenate([q, qt])
    return p / p.sum(), q / q.sum(), np.arange(16, 46)


def _real_like_row():
    """Softmax rows whose draft is four times sharper: most of the vocabulary has q far
    below the rounding of R, in runs of ties across T (as the recorded trace's rows)."""
    rng = np.random.default_rng(2024)
    V = 2048
    z = 3.0 * rng.standard_normal(V)
    p = softmax(z)
    q = softmax(4.0 * (z + 0.5 * rng.standard_normal(V)))
    return p, q, None


def _tiny_tail_row():
    """Tiny q at the lowest ratios (below every other token's): no tie, R is tiny there
    too, but tiers of mass far below the rounding of a prefix sum of y (~1e-16), which
    the hull's slopes must not lose."""
    p, q = _base(np.random.default_rng(7))
    qt = 1e-25 * np.array([1.0, 2.0, 3.0, 1.0])
    p = np.concatenate([p, qt * np.array([1e-4, 2e-4, 1e-3, 3e-3])])
    q = np.concatenate([q, qt])
    return p / p.sum(), q / q.sum(), np.arange(16, 20)


def _check_row(p, q, tiny, n, trials=200, seed=0):
    order, _, R, *_ = row_tables(p, q, n)
    if tiny is None:  # the tokens inside a stretch of tied tail masses
        tiny = order[np.flatnonzero(R[:-2] == R[1:-1])]
    rng = np.random.default_rng(seed + n)
    V = p.shape[0]
    drafts = np.empty((1, trials, n), dtype=np.int64)
    for t in range(trials):
        d = rng.choice(V, size=n, p=q)
        k = int(rng.integers(0, n + 1))  # some drafts among the tiny tokens
        d[:k] = rng.choice(tiny, size=k)
        rng.shuffle(d)
        drafts[0, t] = d
    u = rng.random((1, trials, 3))
    u[0, ::2, 1] = 0.0
    kernel = run_optimal(p[None], q[None], drafts, u)[0]
    ref = REGISTRY["optimal"].function
    for t in range(trials):
        d, ut = drafts[0, t], u[0, t]
        want = ref(p, q, tuple(int(x) for x in d), ReplayCoins(ut), sampling="iid")
        assert kernel[t] == want, (n, d, ut)
        assert optimal_token(p, q, d, ut) == want, (n, d, ut)


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("make", [_equal_tiny_row, _distinct_tiny_row, _real_like_row],
                         ids=["equal", "distinct", "real_like"])  # fmt: skip
def test_optimal_token_tied_tail_masses_match_reference(make, n):
    p, q, tiny = make()
    R = row_tables(p, q, n)[2]
    assert (R[:-1] == R[1:]).sum() >= 20  # the rows do tie, inside the segments
    _check_row(p, q, tiny, n)


@pytest.mark.parametrize("n", NS)
def test_optimal_token_tiny_tail_masses_match_reference(n):
    p, q, tiny = _tiny_tail_row()
    R = row_tables(p, q, n)[2]
    assert not (R[:-1] == R[1:]).any()
    _check_row(p, q, tiny, n)
