"""Tests of the draft laws: set laws, Q(H), and sampling (chi-square tests)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import spectheory as stt
from spectheory.drafting import greedy_split, top_tokens

from .strategies import instances

# Each chi-square test below rejects a correct sampler with probability 1e-6.
FALSE_ALARM = 1e-6


@given(instances(max_V=5, max_n=3, exact=True))
def test_set_law_is_a_distribution_and_gives_Q(inst):
    _, q, n, sampling = inst
    law = stt.draft_set_law(q, n, sampling)
    assert sum(law.values()) == 1
    V = q.size
    for r in range(V + 1):
        for H in itertools.combinations(range(V), r):
            inside = sum((v for c, v in law.items() if c <= set(H)), Fraction(0))
            assert stt.draft_set_probability(q, list(H), n, sampling) == inside


def test_Q_closed_forms():
    q = np.array([Fraction(6, 10), Fraction(3, 10), Fraction(1, 10)], dtype=object)
    # docs/theory.md §8.1: without replacement, n = 2, H = {a, b}: 0.45 + 9/35
    assert stt.draft_set_probability(q, [0, 1], 2, "without_replacement") == Fraction(
        9, 20
    ) + Fraction(9, 35)
    assert stt.draft_set_probability(q, [0, 1], 2, "iid") == Fraction(81, 100)
    assert stt.draft_set_probability(q, [0, 1], 2, "greedy") == Fraction(3, 4)
    assert stt.draft_set_probability(q, [1, 2], 2, "greedy") == 0


def chi_square_pvalue(counts, probs):
    probs = np.asarray(probs, dtype=float)
    keep = probs > 0
    assert counts[~keep].sum() == 0, "an impossible outcome was drawn"
    return stats.chisquare(counts[keep], probs[keep] * counts.sum()).pvalue


@pytest.mark.parametrize("sampling", stt.SAMPLINGS)
def test_sampled_tuples_follow_the_law(sampling):
    q = np.array([0.45, 0.3, 0.15, 0.1, 0.0])
    n = 3
    rng = np.random.default_rng(1234)
    draws = stt.sample_drafts(np.tile(q, (20000, 1)), n, sampling, rng)
    tuples = list(itertools.product(range(5), repeat=n))
    index = {t: i for i, t in enumerate(tuples)}
    counts = np.zeros(len(tuples))
    for row in map(tuple, draws):
        counts[index[row]] += 1
    probs = np.zeros(len(tuples))
    for t in tuples:
        if sampling == "iid":
            probs[index[t]] = np.prod(q[list(t)])
        elif sampling == "without_replacement":
            if len(set(t)) == n:
                used, pr = 0.0, 1.0
                for i in t:
                    pr *= q[i] / (1 - used)
                    used += q[i]
                probs[index[t]] = pr
        else:
            T, qt = greedy_split(q, n)
            if list(t[: n - 1]) == T.tolist():
                probs[index[t]] = qt[t[-1]]
    assert chi_square_pvalue(counts, probs) > FALSE_ALARM


def test_greedy_split_ties_to_lowest_id():
    T, qt = greedy_split(np.array([0.3, 0.3, 0.3, 0.1]), 3)
    assert T.tolist() == [0, 1]
    np.testing.assert_allclose(qt, [0, 0, 0.75, 0.25])


def test_greedy_split_renormalises_by_the_tail_not_by_one_minus_the_head():
    """q[0] rounds to exactly 1.0: 1 - q(T) is 0 but the tail is not (mutation audit).

    The tail law must come from the tail's own sum (0/0 otherwise); by hand:
    q_tail = e^{-40}, e^{-41} renormalised = 1/(1 + e^{-1}), e^{-1}/(1 + e^{-1}).
    """
    q = stt.softmax(np.array([0.0, -40.0, -41.0]))
    assert q[0] == 1.0
    T, qt = greedy_split(q, 2)
    assert list(T) == [0]
    want = np.array([0.0, 1.0, np.exp(-1.0)]) / (1.0 + np.exp(-1.0))
    np.testing.assert_allclose(qt, want, rtol=1e-12)


def test_sample_shapes_and_seeding():
    q = np.array([0.2, 0.3, 0.5])
    a = stt.sample_drafts(q, 2, "without_replacement", 7)
    b = stt.sample_drafts(q, 2, "without_replacement", 7)
    assert a.shape == (2,) and (a == b).all() and a[0] != a[1]
    assert stt.sample_drafts(np.tile(q, (4, 1)), 3, "iid", 0).shape == (4, 3)


@given(st.lists(st.integers(0, 3), min_size=1, max_size=12), st.integers(0, 12))
def test_top_tokens_is_a_stable_descending_sort(values, m):
    q = np.array(values, dtype=float)
    expected = np.argsort(-q, kind="stable")[:m]  # ties to the lowest id
    np.testing.assert_array_equal(top_tokens(q, m), expected)
