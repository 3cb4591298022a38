"""``spectheory.solvers.ratio_order`` against its documented contract.

"Tokens of each row sorted by p/q ascending (q = 0 last, p = q = 0 first)."  Oracle: the
exact ratio (0 for p = q = 0) in Fractions of every token along the returned order must
be non-decreasing (float ratios are correctly rounded, so a float sort never inverts two
exact ratios), with the p = q = 0 tokens first and the q = 0 < p tokens last.  Rows hold
subnormal draft masses, whose ratios p/q overflow to inf in float64, beside large finite
ratios (about 1e300).
"""

import itertools
from fractions import Fraction

import numpy as np

from spectheory.solvers import ratio_order


def _check(p, q):
    order = ratio_order(p[None], q[None])[0]
    assert sorted(order.tolist()) == list(range(p.size))
    inf = [(q[i] == 0 and p[i] > 0) for i in order]
    k1 = sum(inf)
    assert all(inf[p.size - k1:]) and not any(inf[: p.size - k1]), ("q = 0 < p last", order)
    # p = q = 0 sorts with ratio 0, the smallest ("first"; ties with p = 0 < q by token id)
    r = [Fraction(0) if q[i] == 0 else Fraction(float(p[i])) / Fraction(float(q[i]))
         for i in order[: p.size - k1]]
    assert all(a <= b for a, b in itertools.pairwise(r)), (order, [float(x) for x in r])


def test_overflowing_ratios_follow_finite_ones_in_their_true_order():
    p = np.array([0.3, 0.2, 0.1, 0.15, 0.25, 0.0, 0.0])
    q = np.array([1e-310, 3e-310, 1.0 - 3e-300, 1e-300, 2e-300, 0.0, 2e-300])
    # exact ratios: 3e309, 6.7e308 (both overflow), 0.1, 1.5e299, 1.25e299, (0/0), 0
    _check(p, q)
    _check(p[::-1].copy(), q[::-1].copy())


def test_random_rows_with_subnormal_and_zero_masses():
    rng = np.random.default_rng(11)
    for _ in range(200):
        V = int(rng.integers(3, 9))
        p = rng.dirichlet(np.full(V, 0.7))
        q = rng.dirichlet(np.full(V, 0.7))
        kind = rng.integers(0, 5, V)
        q[kind == 1] = 10.0 ** rng.uniform(-323, -308, (kind == 1).sum())  # overflowing
        q[kind == 2] = 10.0 ** rng.uniform(-305, -290, (kind == 2).sum())  # huge finite
        q[kind == 3] = 0.0
        both = kind == 4
        p[both], q[both] = 0.0, 0.0
        _check(p, q)
