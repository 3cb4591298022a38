"""The p-value of :func:`spectheory.sim._stats.multinomial_gof` is the documented Bonferroni bound.

Documented definition: cells pooled by Cochran's rule, then for every nested
partition j (the m = 1, 3, 7, ... cells of largest expected count kept apart,
the rest merged; then all k cells) Agrawal's bound
b_j = e^{-t} (e t / d)^d at t = G_j / 2, d = cells_j - 1 (1 when t <= d), and,
when pooling merged cells, one more partition: the unpooled cells of positive
probability.  The p-value is min(1, J min_j b_j) with J the number of
partitions.

Oracle: G from ``scipy.stats.power_divergence(lambda_="log-likelihood")`` and
the bound's formula written out here; the partitions are listed by hand.

Bugs caught: dropping the Bonferroni factor J (the p-value is then
anti-conservative: a check at level alpha raises false alarms more often than
alpha), and skipping the unpooled partition when pooling removed exactly one
cell (a bias among the rare tokens is then invisible).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spectheory.sim._stats import multinomial_gof


def agrawal(t, cells):
    d = cells - 1
    if d < 1 or t <= d:
        return 1.0
    return min(1.0, math.exp(-t + d * (1.0 + math.log(t / d))))


def g_stat(obs, exp):
    obs = np.asarray(obs, float)
    exp = np.asarray(exp, float)
    return float(stats.power_divergence(obs, exp, lambda_="log-likelihood").statistic)


def test_pvalue_carries_the_bonferroni_factor_over_the_partitions():
    # 4 cells, no pooling (expected 100, 60, 30, 10): partitions m = 1 (2 cells) and all 4.
    counts = np.array([130.0, 50.0, 15.0, 5.0])
    probs = np.array([0.5, 0.3, 0.15, 0.05])
    exp = counts.sum() * probs
    b1 = agrawal(g_stat([130, 70], [exp[0], exp[1:].sum()]) / 2, 2)
    b2 = agrawal(g_stat(counts, exp) / 2, 4)
    expected = min(1.0, 2 * min(b1, b2))
    assert 0 < expected < 0.5  # the factor 2 matters
    r = multinomial_gof(counts, probs)
    assert r.cells == 4
    assert r.pvalue == pytest.approx(expected, rel=1e-9)


def test_unpooled_partition_when_pooling_merged_two_rare_cells():
    # N = 400, expected (392, 4, 4): the two rare cells are pooled into one of expectation 8.
    # All 8 rare outputs fall on token 1: the pooled cells fit exactly (G = 0, bound 1);
    # only the unpooled partition (3 cells) sees the bias.
    counts = np.array([392.0, 8.0, 0.0])
    probs = np.array([0.98, 0.01, 0.01])
    exp = counts.sum() * probs
    pooled = agrawal(g_stat([392, 8], [exp[0], exp[1] + exp[2]]) / 2, 2)
    assert pooled == 1.0
    raw = agrawal(g_stat(counts, exp) / 2, 3)  # zero counts contribute 0 to G
    expected = min(1.0, 2 * min(pooled, raw))
    assert expected < 0.5
    r = multinomial_gof(counts, probs)
    assert r.cells == 2
    assert r.pvalue == pytest.approx(expected, rel=1e-9)
