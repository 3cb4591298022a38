"""A uniform at or beyond the last partial sum of a law that rounding left below 1: the
reference (coins._inverse_cdf) returns the last token of positive mass; the numba kernels'
binary search must too, never a trailing zero-mass token.  The existing replay tests draw
uniforms at random and never land in the last ulp."""

from __future__ import annotations

import numpy as np

from spectheory.coins import ReplayCoins
from spectheory.sim import _kernels as K
from spectheory.verifiers import REGISTRY
from spectheory.verifiers._ops import residual

P = np.array([1, 12, 3, 2]) / 18
Q = np.array([19, 17, 7, 19]) / 62
U_TOP = np.nextafter(1.0, 0.0)  # 1 - 2**-53, the largest uniform


def test_sd_kernel_residual_draw_at_the_top_uniform():
    r = residual(P, Q)  # [0, .88, .12, 0]: token 3 has no residual mass
    assert r[3] == 0 and r[2] > 0 and np.cumsum(r)[-1] <= U_TOP
    u = np.array([0.99, U_TOP])  # reject draft 0 (accept prob 0.18), then the residual
    ref = REGISTRY["sd"].function(P, Q, (0,), ReplayCoins(u))
    assert ref == 2
    out = K.run_verifier("sd", P[None], Q[None], np.zeros((1, 1, 1), np.int64), u[None, None])
    assert out.tolist() == [[2]]


def test_optimal_kernel_residual_draw_at_the_top_uniform():
    from spectheory.sim._optimal_kernel import run_optimal
    from spectheory.solvers.polymatroid import plan_row

    p = np.array([17, 16, 19, 19]) / 71
    q = np.array([18, 3, 1, 10]) / 32
    r = plan_row(p, q, 2).residual  # [0, .19, .81, 0]
    assert r[3] == 0 and r[2] > 0 and np.cumsum(r)[-1] <= U_TOP
    u = np.array([0.5, U_TOP, U_TOP])  # component, reject, the residual at the top uniform
    ref = REGISTRY["optimal"].function(p, q, (0, 0), ReplayCoins(u))
    assert ref == 2
    out = run_optimal(p[None], q[None], np.zeros((1, 1, 2), np.int64), u[None, None])
    assert out.tolist() == [[2]]
