"""Exact (Fraction) input is ranked and sampled exactly.

Before the fixes:
- ``top_tokens`` ranked object arrays by ``float(v)``: Fractions closer than float
  resolution tied and went to the lowest id, and one below float's range tied with a true
  zero, so the greedy law fixed a token the draft never produces (``acceptance("greedy")``
  was 1 where the exact value is 1/2, ``nss`` 5/6);
- ``categorical`` on Fractions compared the uniform with rounded float partial sums
  (at ``u = float(1/3)``, ``bernoulli(1/3)`` said the first outcome and
  ``categorical([1/3, 2/3])`` the second), and let a NaN inside an object vector through.
"""

from fractions import Fraction as F

import numpy as np
import pytest

import spectheory as st
from spectheory import InvalidParameterError
from spectheory.coins import ReplayCoins
from spectheory.drafting import greedy_split, top_tokens


def test_top_tokens_ranks_fractions_exactly():
    eps = F(1, 10**30)
    q = np.array([F(1, 2) - eps, F(1, 2) + eps], dtype=object)
    assert list(top_tokens(q, 1)) == [1]
    tie = np.array([F(1, 3), F(1, 3), F(1, 3)], dtype=object)
    assert list(top_tokens(tie, 2)) == [0, 1]  # exact ties still go to the lowest id


def test_greedy_law_never_fixes_a_token_of_no_mass():
    tiny = F(1, 10**400)
    q = np.array([F(0), tiny, tiny, 1 - 2 * tiny], dtype=object)
    fixed, _ = greedy_split(q, 3)
    assert list(fixed) == [3, 1]
    p = np.array([F(1, 2), F(1, 6), F(1, 6), F(1, 6)], dtype=object)
    # the drafts are always {3, 1, 2}: only token 0 (p = 1/2) is never a draft
    assert st.acceptance("greedy", p, q, n=3, sampling="greedy") == F(1, 2)
    assert st.acceptance("nss", p, q, n=3, sampling="greedy") == F(1, 2)


def test_categorical_on_fractions_uses_exact_partial_sums():
    u = float(F(1, 3))  # just below 1/3
    assert ReplayCoins([u]).bernoulli(F(1, 3)) is True
    assert ReplayCoins([u]).categorical(np.array([F(1, 3), F(2, 3)], dtype=object)) == 0
    tenths = np.array([F(1, 10)] * 10, dtype=object)
    # the smallest i with 0.7 < (i + 1)/10 exactly: float(0.7) < 7/10, so i = 6
    assert ReplayCoins([0.7]).categorical(tenths) == 6


def test_categorical_refuses_nan_in_an_object_vector():
    probs = np.array([F(1, 2), float("nan"), F(1, 2)], dtype=object)
    with pytest.raises(InvalidParameterError, match="negative or NaN"):
        ReplayCoins([0.9]).categorical(probs)
