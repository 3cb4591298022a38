"""The bound without replacement at large n, against exact values.

With three log-time nodes per octave the exponential-clock integral lost accuracy as n
grew (1e-11 at n = 13, 3e-7 at n = 33, 1e-3 at n = 133) while the result still claimed an
error below 1e-12: the Poisson-binomial count's switch from "at most n - 1" to "more"
sharpens like 1/sqrt(n) in log time.  The grid now grows with n
(``_bound_kernels.wor_per_octave``); these rows have exact or independently computed
values.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import spectheory as stt
from spectheory.solvers._bound_kernels import wor_per_octave, wor_t0

WOR = "without_replacement"


def uniform_draft_case(V, n, top=Fraction(999, 1000)):
    """q uniform: the drafts are a uniform n-subset, Q(H) = C(|H|, n) / C(V, n) exactly.

    p puts ``top`` on token 0 and the rest evenly; every prefix of the p/q order is a
    set of k low tokens, possibly with token 0 last, and the exact minimum is over those.
    """
    rest = (1 - top) / (V - 1)
    p = [top] + [rest] * (V - 1)
    total = math.comb(V, n)
    best = min(
        min(k * rest - Fraction(math.comb(k, n), total) for k in range(V)),
        Fraction(1) - 1,  # H = V: p(V) - Q(V) = 0
    )
    return np.array([float(x) for x in p]), np.full(V, 1.0 / V), float(1 + best)


@pytest.mark.parametrize("V,n", [(20, 13), (50, 33), (100, 66), (200, 133), (300, 250)])
def test_uniform_draft_exact_at_large_n(V, n):
    p, q, exact = uniform_draft_case(V, n)
    assert abs(stt.bound(p, q, n, WOR) - exact) <= 1e-12


def two_class_objective(p, q, n, H):
    """1 + p(H) - Q(H) for a draft with two masses, Q by the draw-count recursion.

    Drawing without replacement from q, only the numbers i, j of tokens of each mass
    drawn so far matter: the next draw is a token of H of the first mass with
    probability (h1 - i) a / (1 - i a - j b).  All terms are positive: no cancellation.
    """
    a, b = np.unique(q)
    h1 = int(np.sum(H & (q == a)))
    h2 = int(np.sum(H & (q == b)))
    m1, m2 = int(np.sum(q == a)), int(np.sum(q == b))
    D = np.zeros((n + 1, n + 1))
    D[0, 0] = 1.0
    for s in range(n):
        for i in range(max(0, s - n), s + 1):
            j = s - i
            if D[i, j] == 0.0:
                continue
            left = (m1 - i) * a + (m2 - j) * b  # the undrawn mass, summed, not 1 - drawn
            if i < h1:
                D[i + 1, j] += D[i, j] * (h1 - i) * a / left
            if j < h2:
                D[i, j + 1] += D[i, j] * (h2 - j) * b / left
    Q = sum(D[i, n - i] for i in range(n + 1))
    return 1.0 + p[H].sum() - Q


@pytest.mark.parametrize("n", [16, 40, 100])
def test_two_mass_draft_against_the_draw_count_recursion(n):
    rng = np.random.default_rng(n)
    V = 240
    heavy = rng.permutation(V) < 40
    q = np.where(heavy, 3.0, 1.0)
    q /= q.sum()
    # a dominant light token: the optimal H holds almost every other token, where the
    # three-node grid erred by 2e-11, 1.5e-6 and 1.3e-4 at n = 16, 40, 100
    p = rng.dirichlet(np.full(V, 1.0)) * 0.2
    p[np.flatnonzero(~heavy)[0]] += 0.8
    # the prefix lemma (docs/theory.md §2.4, proved): the minimum over the V + 1 prefixes
    order = np.lexsort((np.arange(V), p / q))
    values = [1.0]
    for k in range(1, V + 1):
        H = np.zeros(V, dtype=bool)
        H[order[:k]] = True
        values.append(two_class_objective(p, q, n, H))
    assert abs(stt.bound(p, q, n, WOR) - min(values)) <= 1e-12


def test_grid_unchanged_up_to_n8_and_no_overflow_beyond_170():
    assert [wor_per_octave(n) for n in (2, 4, 8, 9, 32, 33, 128)] == [3, 3, 3, 6, 6, 9, 12]
    for n in (169, 170, 171, 400, 10_000):
        t0 = wor_t0(n)
        assert 0 < t0 <= 1 and math.log2(t0) == int(math.log2(t0))
    p, q, exact = uniform_draft_case(300, 200)
    assert abs(stt.bound(p, q, 200, WOR) - exact) <= 1e-12


@pytest.mark.parametrize("V,n", [(50, 33), (200, 133)])
def test_torch_bound_exact_at_large_n(V, n):
    torch = pytest.importorskip("torch")
    from spectheory.torch import bound as torch_bound

    p, q, exact = uniform_draft_case(V, n)
    value = torch_bound(torch.tensor(p), torch.tensor(q), n, WOR).item()
    assert abs(value - exact) <= 1e-12
