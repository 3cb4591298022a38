"""The draft-set law without replacement as an integral of per-token products
(docs/theory.md §3.15, "The set law as an integral of products").

P(S = A) = ∫_0^∞ e^{-t} Σ_{x∈A} q_x Π_{y∈A∖x} (e^{q_y t} − 1) dt, integrated by
adaptive quadrature (scipy's QUADPACK, in the equivalent form with decaying
exponentials), against the set law summed from the enumerated ordered draws
(:func:`spectheory.exact._tuples.ordered_draft_law`, float64).  A wrong factor
(the clock of the last draft counted in the product, or the outside mass's rate
taken as 1) moves the integral by far more than the 1e-12 allowed.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from scipy.integrate import quad

from spectheory.exact._tuples import ordered_draft_law


def _set_law(q, n):
    law = defaultdict(float)
    for draws, prob in ordered_draft_law(q, n, "without_replacement"):
        law[frozenset(draws)] += prob
    return law


def _integral(q, members):
    members = list(members)
    inside = q[members].sum()

    def weight(t):  # e^{-t} Π (e^{q_y t} - 1) = e^{-(1 - q(A∖x)) t} Π (1 - e^{-q_y t})
        total = 0.0
        for x in members:
            rest = [y for y in members if y != x]
            total += (q[x] * np.exp(-(1.0 - (inside - q[x])) * t)
                      * np.prod(-np.expm1(-q[rest] * t)))
        return total

    return quad(weight, 0.0, np.inf, epsabs=1e-15, epsrel=1e-13, limit=400)[0]


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("seed", range(3))
def test_set_law_is_the_integral_of_products(n, seed):
    rng = np.random.default_rng(10 * n + seed)
    q = rng.dirichlet(np.full(6, 0.7))
    law = _set_law(q, n)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-14)
    for members, prob in law.items():
        assert _integral(q, members) == pytest.approx(prob, abs=1e-12), sorted(members)


def test_two_drafts_give_the_closed_form():
    """n = 2: the integral is q_a q_b (e_a + e_b), e = 1/(1 - q) (§3.14)."""
    q = np.array([0.5, 0.3, 0.15, 0.05])
    e = 1.0 / (1.0 - q)
    for a in range(4):
        for b in range(a + 1, 4):
            want = q[a] * q[b] * (e[a] + e[b])
            assert _integral(q, (a, b)) == pytest.approx(want, abs=1e-14)
