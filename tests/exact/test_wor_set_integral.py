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


def _first_marked_marginal(q, kappa, n):
    """Selection marginal of "the first draft in draw order whose coin kappa_x succeeds,
    else the last draft", summed over the enumerated ordered draws."""
    y = np.zeros(q.size)
    for draws, prob in ordered_draft_law(q, n, "without_replacement"):
        alive = prob
        for j, x in enumerate(draws):
            if j == n - 1:
                y[x] += alive
            else:
                y[x] += alive * kappa[x]
                alive *= 1.0 - kappa[x]
    return y


def _first_marked_integral(q, kappa, n, a):
    """q_a ∫ e^{-t} [kappa_a Σ_{k<n-1} e_k(r) + e_{n-1}(r)] dt, r_b = (1 - kappa_b)(e^{q_b t} - 1)
    over b != a, in the decaying form: a Poisson-binomial law of the unmarked clocks rung."""
    others = [b for b in range(q.size) if b != a]

    def weight(t):
        e = np.zeros(n)
        e[0] = 1.0
        for b in others:  # coefficients of Π (e^{-q_b t} + z (1 - kappa_b)(1 - e^{-q_b t}))
            stay, go = np.exp(-q[b] * t), (1.0 - kappa[b]) * -np.expm1(-q[b] * t)
            e[1:] = e[1:] * stay + e[:-1] * go
            e[0] *= stay
        return np.exp(-q[a] * t) * (kappa[a] * e[:-1].sum() + e[-1])

    return q[a] * quad(weight, 0.0, np.inf, limit=200, epsabs=1e-15, epsrel=1e-13)[0]


@pytest.mark.parametrize(("n", "seed"), [(2, 0), (3, 1), (4, 2)])
def test_a_rule_deciding_in_draw_order_has_a_one_integral_marginal(n, seed):
    """docs/theory.md §3.16, "Rules with a one-integral marginal": a draft is selected when
    its own coin succeeds and every earlier draft's failed (the last draft otherwise), so
    its marginal needs the clocks before its own alone.  A wrong factor (the earlier drafts'
    coins left out, or the last draft taken only on its coin) moves it by far more than
    the 1e-12 allowed."""
    rng = np.random.default_rng(seed)
    q, kappa = rng.dirichlet(np.ones(6)), rng.random(6)
    y = _first_marked_marginal(q, kappa, n)
    assert y.sum() == pytest.approx(1.0, abs=1e-14)
    for a in range(q.size):
        assert _first_marked_integral(q, kappa, n, a) == pytest.approx(y[a], abs=1e-12), a
