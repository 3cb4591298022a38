"""The exact (Fraction) optimal plan orders tokens of equal ratio p/q by id, as the float plan does.

The prefix lemma's order (docs/theory.md §2.4) is p/q ascending with ties to
the lowest id; the plan lists T (ratios above the optimal prefix H*) then H*,
each by p/q descending, i.e. the ascending order reversed, so inside a run of
equal ratios the higher id comes first.  Fraction input is planned in Python
(``plan_python``), float64 input by the numba kernel, which sorts every run of
equal ratios by id; the two must give the same order, positions and tier
ranks.  (Tokens of equal ratio always share a tier, so the verifier's tokens do
not depend on their order: a reversed tie rule shows only in the plan's tables,
which the first test checks; the second pins that exact and float verifiers
agree on the same coins.)

Instance: p = (1/8, 1/8, 1/4, 1/2), q = (1/4, 1/4, 1/4, 1/4), n = 2 (all dyadic,
so the float plan is exact too).  Ratios 1/2, 1/2, 1, 2.  The optimal prefix
minimises p(H) - q(H)^2 over H = {0}, {0,1}, {0,1,2}, {0,1,2,3}: values
1/8 - 1/16, 1/4 - 1/4, 1/2 - 9/16 = -1/16, 1 - 1 = 0 (and 0 for the empty set), so
H* = {0, 1, 2}, T = {3}, and the order is (3, 2, 1, 0).  A tie rule reversed
in the Python plan gives (3, 2, 0, 1).

Oracle: the order derived by hand above, and the float64 plan.  The second
check runs the optimal verifier on exact and float rows with the same coins
(every ordered draft pair, a grid of uniforms) and asks for the same token.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np

from spectheory.coins import ReplayCoins
from spectheory.solvers.polymatroid import plan
from spectheory.verifiers.optimal import clear_plan_cache, optimal

P = [F(1, 8), F(1, 8), F(1, 4), F(1, 2)]
Q = [F(1, 4)] * 4


def test_exact_plan_breaks_ratio_ties_by_id():
    pe = np.array(P, dtype=object)
    qe = np.array(Q, dtype=object)
    exact = plan(pe, qe, 2)
    flt = plan(pe.astype(float), qe.astype(float), 2)
    assert exact.n_top == 1
    assert exact.alpha == F(15, 16)  # 1 + min_H (p(H) - q(H)^2) = 1 - 1/16
    assert exact.order.tolist() == [3, 2, 1, 0]
    assert exact.order.tolist() == flt.order.tolist()
    assert exact.pos.tolist() == flt.pos.tolist()
    assert exact.rank.tolist() == flt.rank.tolist()


def test_exact_and_float_optimal_verifier_agree_on_the_same_coins():
    pe = np.array(P, dtype=object)
    qe = np.array(Q, dtype=object)
    pf, qf = pe.astype(float), qe.astype(float)
    clear_plan_cache()
    grid = [0.03, 0.3, 0.55, 0.8, 0.97]
    for drafts in itertools.product(range(4), repeat=2):
        for u in itertools.product(grid, repeat=3):
            a = optimal(pe, qe, drafts, ReplayCoins(list(u)))
            b = optimal(pf, qf, drafts, ReplayCoins(list(u)))
            assert a == b, (drafts, u, a, b)
