"""The prefix lemma without replacement, in exact arithmetic (docs/theory.md §2.4).

The proof rests on the exchange inequality between two tokens i != j outside a set G,

    q_i [Q(G+i+j) - Q(G+i)] >= q_j [Q(G+i) - Q(G)],

which follows from a sandwich: the gain of adding i and j merged into one token of mass
q_i + q_j, per unit of mass, lies between the two sides' gains per unit of mass.  Both are
checked here on every (G, i, j) of random rational rows, and the lemma's conclusion with
ties (the largest optimal set is a prefix of every p/q order, however ties are broken)
against the minimum over all 2^V sets.  Q is the package's exact draft-set law
(``set_law_row``, ordered draws in Fractions).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

import spectheory as stt
from spectheory.drafting import set_law_row

WOR = "without_replacement"


def rational_row(V, rng, high=12):
    w = [int(x) for x in rng.integers(1, high, size=V)]
    return np.array([Fraction(x, sum(w)) for x in w], dtype=object)


def all_sets(tokens):
    tokens = list(tokens)
    return [frozenset(c) for k in range(len(tokens) + 1)
            for c in itertools.combinations(tokens, k)]


def q_table(q, n):
    """Q(A) = P(all n drafts lie in A) for every A, from the exact set law."""
    law = set_law_row(q, n, WOR)
    return {A: sum((w for S, w in law.items() if S <= A), Fraction(0))
            for A in all_sets(range(len(q)))}


def merged(q, i, j):
    """The draft with i and j merged into one last token of mass q_i + q_j."""
    rest = [x for x in range(len(q)) if x not in (i, j)]
    row = np.array([q[x] for x in rest] + [q[i] + q[j]], dtype=object)
    return row, {x: k for k, x in enumerate(rest)}


def exchange_violations(Q, q):
    """Every (G, i, j) where q_i [Q(G+i+j) - Q(G+i)] < q_j [Q(G+i) - Q(G)]."""
    V = len(q)
    return [(sorted(G), i, j)
            for i, j in itertools.permutations(range(V), 2)
            for G in all_sets(x for x in range(V) if x not in (i, j))
            if q[i] * (Q[G | {i, j}] - Q[G | {i}]) < q[j] * (Q[G | {i}] - Q[G])]


@pytest.mark.parametrize("seed", range(6))
def test_merged_token_sandwich_and_exchange_inequality(seed):
    rng = np.random.default_rng(seed)
    V = int(rng.integers(3, 6))
    n = int(rng.integers(1, V))  # n < V: the merged row still has n tokens
    q = rational_row(V, rng)
    Q = q_table(q, n)
    cases = 0
    for i, j in itertools.permutations(range(V), 2):
        qm, index = merged(q, i, j)
        Qm = q_table(qm, n)
        rho = len(qm) - 1
        for G in all_sets(x for x in range(V) if x not in (i, j)):
            gain_i = (Q[G | {i}] - Q[G]) / q[i]
            gain_j = (Q[G | {i, j}] - Q[G | {i}]) / q[j]
            Gm = frozenset(index[x] for x in G)
            gain_rho = (Qm[Gm | {rho}] - Qm[Gm]) / (q[i] + q[j])
            assert gain_i <= gain_rho <= gain_j, (list(q), n, sorted(G), i, j)
            cases += 1
    assert cases == V * (V - 1) * 2 ** (V - 2)
    assert exchange_violations(Q, q) == []
    assert exchange_violations(q_table(q, V), q) == []  # n = V: every token drafted


def test_exchange_check_can_fail():
    """A monotone modular set function that is no draft law's (Q(A) = [0 in A], as if the
    draft were always token 0 although q_1 > 0) breaks the inequality, and the check says so:
    with G = {}, i = 0, j = 1, q_0 [Q({0, 1}) - Q({0})] = 0 < q_1 [Q({0}) - Q({})] = q_1."""
    q = np.array([Fraction(1, 2), Fraction(1, 2)], dtype=object)
    Q = {A: Fraction(int(0 in A)) for A in all_sets(range(2))}
    assert exchange_violations(Q, q) == [([], 0, 1)]


@pytest.mark.parametrize("seed", range(8))
def test_largest_minimiser_is_a_prefix_of_every_tie_break(seed):
    rng = np.random.default_rng(100 + seed)
    V = int(rng.integers(3, 6))
    n = int(rng.integers(2, V + 1))
    q = rational_row(V, rng)
    while True:  # p/q takes at most three values: many ties
        ratio = [Fraction(int(k), 2) for k in rng.integers(0, 3, size=V)]
        if any(ratio):
            break
    raw = [r * x for r, x in zip(ratio, q)]
    p = np.array([x / sum(raw) for x in raw], dtype=object)
    Q = q_table(q, n)
    phi = {H: sum((p[x] for x in H), Fraction(0)) - Q[H] for H in Q}
    best = min(phi.values())
    largest = max((H for H, v in phi.items() if v == best), key=len)
    for flip in (False, True):
        order = sorted(range(V), key=lambda x: (p[x] / q[x], -x if flip else x))
        assert largest == frozenset(order[: len(largest)])
    # every minimiser lies below the largest one's ratios: max_H r <= min_outside r
    for H in (H for H, v in phi.items() if v == best):
        inside = [p[x] / q[x] for x in H]
        outside = [p[x] / q[x] for x in range(V) if x not in H]
        assert not inside or not outside or max(inside) <= min(outside)
    assert stt.solve_bound(p, q, n=n, sampling=WOR, method="enumerate").exact_value == 1 + best
