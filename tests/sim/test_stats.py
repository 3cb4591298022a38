"""Tests of spectheory.sim._stats: every statistic against scipy or its closed formula.

Deterministic comparisons carry an explicit rtol (float64 arithmetic of the
same formula: 1e-12; scipy's root search for the exact interval: 1e-9).
The calibration tests draw from the null with fixed seeds and compare the
rejection count with binomial quantiles at a stated false-alarm rate.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import permutations

import numpy as np
import pytest
from scipy import stats

from spectheory import InvalidParameterError
from spectheory.sim import _stats as S

#: Each calibration assertion fails for a correct implementation with probability <= 1e-6.
FA = 1e-6


def binomial_bounds(n, rate, fa=FA):
    """Two-sided acceptance region of Binomial(n, rate) with total false-alarm rate <= fa."""
    return stats.binom.ppf(fa / 2, n, rate), stats.binom.isf(fa / 2, n, rate)


@pytest.mark.parametrize("confidence", [0.5, 0.95, 1 - 1e-6])
def test_wilson_equals_scipy(confidence):
    for n in (1, 2, 7, 50, 1000):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            ci = stats.binomtest(k, n).proportion_ci(confidence, method="wilson")
            lo, hi = S.wilson_interval(k, n, confidence)
            np.testing.assert_allclose([lo, hi], [ci.low, ci.high], rtol=1e-12, atol=1e-15)


def test_wilson_closed_formula_and_vectorisation():
    # (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n), z = Phi^{-1}(0.975)
    k, n, z = np.array([3, 40, 77]), np.array([10, 100, 80]), 1.959963984540054
    a = k / n
    centre = (a + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(a * (1 - a) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo, hi = S.wilson_interval(k, n)
    np.testing.assert_allclose(lo, centre - half, rtol=1e-12)
    np.testing.assert_allclose(hi, centre + half, rtol=1e-12)
    assert S.z_two_sided(0.95) == pytest.approx(z, rel=1e-15)


@pytest.mark.parametrize("confidence", [0.9, 0.99])
def test_clopper_pearson_equals_scipy(confidence):
    for n in (1, 5, 60):
        for k in range(n + 1):
            ci = stats.binomtest(k, n).proportion_ci(confidence, method="exact")
            lo, hi = S.clopper_pearson_interval(k, n, confidence)
            # scipy finds the ends by root search (xtol ~ 1e-12)
            np.testing.assert_allclose([lo, hi], [ci.low, ci.high], rtol=1e-9, atol=1e-12)


def test_clopper_pearson_coverage_is_at_least_the_confidence():
    """Exact coverage by summing the binomial pmf over the k whose interval holds a."""
    n = 30
    k = np.arange(n + 1)
    lo, hi = S.clopper_pearson_interval(k, n, 0.9)
    for a in np.linspace(0.01, 0.99, 41):
        cover = stats.binom.pmf(k, n, a)[(lo <= a) & (a <= hi)].sum()
        assert cover >= 0.9 - 1e-12


def test_interval_bad_counts():
    with pytest.raises(InvalidParameterError, match="0 <= k <= n"):
        S.wilson_interval(5, 4)
    with pytest.raises(InvalidParameterError, match="confidence must be a float"):
        S.wilson_interval(1, 4, 1.5)


def test_mean_interval_equals_scipy_t():
    x = np.array([1.0, 4.0, 2.0, 2.0, 7.0, 3.0])
    m, lo, hi = S.mean_interval(x, 0.9)
    ref = stats.ttest_1samp(x, 0.0).confidence_interval(0.9)
    np.testing.assert_allclose([m, lo, hi], [x.mean(), ref.low, ref.high], rtol=1e-12)


def test_chisquare_gof_equals_scipy_without_pooling():
    counts = np.array([28, 45, 27])
    p = np.array([0.3, 0.4, 0.3])
    r = S.chisquare_gof(counts, p)
    ref = stats.chisquare(counts, 100 * p)
    assert r.df == 2 and r.cells == 3
    np.testing.assert_allclose([r.statistic, r.pvalue], [ref.statistic, ref.pvalue], rtol=1e-12)
    # df = cells - 1: the p-value is chi2_2's survival function, not chi2_1's or chi2_3's
    np.testing.assert_allclose(r.pvalue, stats.chi2.sf(r.statistic, 2), rtol=1e-12)


def test_chisquare_gof_pooling_rule():
    # expected: 40, 30, 20, 4, 3, 2, 1 (N = 100): the four small cells pool to 10 >= 5
    p = np.array([0.4, 0.3, 0.2, 0.04, 0.03, 0.02, 0.01])
    counts = np.array([38, 33, 17, 5, 4, 2, 1])
    r = S.chisquare_gof(counts, p)
    ref = stats.chisquare([38, 33, 17, 12], [40, 30, 20, 10])
    assert (r.cells, r.df) == (4, 3)
    np.testing.assert_allclose(r.pvalue, ref.pvalue, rtol=1e-12)
    # small cells pooling to 3 < 5: merged into the smallest remaining cell (20)
    p2 = np.array([0.5, 0.27, 0.2, 0.02, 0.01])
    c2 = np.array([52, 25, 19, 3, 1])
    r2 = S.chisquare_gof(c2, p2)
    ref2 = stats.chisquare([52, 25, 23], [50, 27, 23])
    assert (r2.cells, r2.df) == (3, 2)
    np.testing.assert_allclose(r2.pvalue, ref2.pvalue, rtol=1e-12)
    # one cell left: nothing to test
    assert S.chisquare_gof([3, 0], [0.99, 0.01]).pvalue == 1.0


def test_chisquare_gof_refuses_outputs_of_probability_zero():
    with pytest.raises(InvalidParameterError, match="token 2, whose probability is 0"):
        S.chisquare_gof([10, 10, 1], [0.5, 0.5, 0.0])


@pytest.mark.parametrize(("V", "N"), [(2, 60), (3, 200), (40, 100)])
def test_chisquare_gof_is_calibrated(V, N):
    """Under the null the test at level 0.05 rejects at rate ~0.05.

    20,000 repetitions: the rejection count is Binomial(20000, r) with r the
    true size; the asymptotic chi-square size at these expected counts lies
    in [0.04, 0.06] (Cochran's rule), and the assertion allows a further
    false-alarm rate 1e-6 (rates [0.033, 0.068]).  A df off by one moves the
    size to 0.0143 or 0.146 (V = 2) and 0.020 or 0.146 (V = 3): outside.
    """
    rng = np.random.default_rng(V)
    p = rng.dirichlet(np.ones(V))
    reps = 20_000
    draws = rng.multinomial(N, p, size=reps)
    rejections = sum(S.chisquare_gof(c, p).pvalue <= 0.05 for c in draws)
    lo, _ = binomial_bounds(reps, 0.04)
    _, hi = binomial_bounds(reps, 0.06)
    assert lo <= rejections <= hi, rejections / reps


def test_pit_against_enumeration():
    """u is uniform on [F(y^-), F(y^-) + p(y)) with F in decreasing-p order, ties by id."""
    p = np.array([[0.2, 0.5, 0.2, 0.1]])
    starts = {1: 0.0, 0: 0.5, 2: 0.7, 3: 0.9}  # order 1, 0, 2 (tie with 0, larger id), 3
    rng = np.random.default_rng(0)
    for y, start in starts.items():
        u = S.randomised_pit(np.repeat(p, 200, 0), np.full(200, y), rng)
        assert np.all((u >= start) & (u < start + p[0, y]))
    key = np.array([[1.0, 0.1, 3.0, 3.0]])  # decreasing key: 2 (p 0.2), 3 (p 0.1), 0, 1
    u = S.randomised_pit(p, [0], np.random.default_rng(1), key=key)
    assert 0.3 <= u[0] < 0.5
    assert np.isnan(S.randomised_pit([[1.0, 0.0]], [1], rng))[0]


def test_pit_is_exactly_uniform_under_the_null():
    """Exact law of u by enumeration: for each y, u ~ U[F(y^-), F(y^-)+p(y)) with prob p(y).

    The mixture's CDF at every grid point equals the identity exactly (Fractions).
    """
    p = [Fraction(1, 6), Fraction(1, 2), Fraction(1, 3)]
    order = sorted(range(3), key=lambda i: (-p[i], i))
    start, acc = {}, Fraction(0)
    for i in order:
        start[i], acc = acc, acc + p[i]
    for t in [Fraction(j, 12) for j in range(13)]:
        cdf = sum(p[y] * min(max((t - start[y]) / p[y], 0), 1) for y in range(3))
        assert cdf == t


def test_pit_of_one_law_equals_the_row_form():
    rng = np.random.default_rng(9)
    p = rng.dirichlet(np.ones(12) * 0.3)
    p[[2, 7]] = p[3]  # ties, broken by id
    p /= p.sum()
    ys = rng.choice(12, size=500, p=p)
    one = S.randomised_pit(p, ys, np.random.default_rng(1))
    rows = S.randomised_pit(np.tile(p, (500, 1)), ys, np.random.default_rng(1))
    np.testing.assert_allclose(one, rows, rtol=1e-12, atol=1e-15)


def test_pooled_pit_is_calibrated_and_sees_a_bias():
    """Rows with different laws: pooled u uniform under the null, not under a tempered law."""
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(8) * 0.5, size=5000)
    ys = np.array([rng.choice(8, p=row) for row in P])
    assert S.uniformity_gof(S.randomised_pit(P, ys, rng)).pvalue > FA
    hot = P**0.7
    hot /= hot.sum(1, keepdims=True)
    yh = np.array([rng.choice(8, p=row) for row in hot])
    assert S.uniformity_gof(S.randomised_pit(P, yh, rng)).pvalue < FA


def test_uniformity_gof_is_the_g_test_of_equiprobable_bins():
    u = np.random.default_rng(4).random(1000)
    r = S.uniformity_gof(u)
    counts = np.histogram(u, bins=50, range=(0, 1))[0]
    g = stats.power_divergence(counts, lambda_="log-likelihood").statistic  # scipy's G
    assert (r.df, r.cells) == (49, 50)
    np.testing.assert_allclose(r.statistic, g, rtol=1e-12)
    assert r.pvalue == S.kl_tail_bound(g / 2, 50)
    assert S.uniformity_gof(u[:30]).cells == 6
    assert S.uniformity_gof(u[:9]).pvalue == 1.0


# --- the verdicts' goodness of fit: valid at every level (audit of the row tests) -------------


def _exact_two_cell_rate(pvalue, lam, N, level):
    """P(pvalue(row) <= level) for p = (1 - lam/N, lam/N) and N draws, summed exactly."""
    e = lam / N
    k = np.arange(0, int(20 * lam + 60))  # the binomial pmf beyond is below 1e-30
    pv = np.array([pvalue(np.array([N - x, x], float), np.array([1 - e, e])) for x in k])
    return float(stats.binom.pmf(k, N, e)[pv <= level].sum())


@pytest.mark.parametrize("N", [2000, 20_000])
@pytest.mark.parametrize("lam", [5, 6, 8, 20, 50])
def test_multinomial_gof_false_alarm_is_at_most_its_level(lam, N):
    """Exact false-alarm rates (no sampling) of a row with one small cell, down to 1e-10.

    Pearson's chi-square tail, which the verdicts used before, gives 2.0e-5 at level 3.3e-7
    for lam = 5 (60 times the level): checked too, so that this test cannot pass trivially.
    """
    for level in (1e-2, 1e-4, 1e-6 / 3, 1e-8, 1e-10):
        rate = _exact_two_cell_rate(lambda c, p: S.multinomial_gof(c, p).pvalue, lam, N, level)
        assert rate <= level
    if (lam, N) == (5, 20_000):
        pearson = _exact_two_cell_rate(lambda c, p: S.chisquare_gof(c, p).pvalue, lam, N, 1e-6 / 3)
        assert pearson > 10 * 1e-6 / 3


def test_multinomial_gof_three_cells_exactly_valid():
    """Every count vector of N = 60 draws on three cells enumerated: rate <= level."""
    p = np.array([0.85, 0.1, 0.05])
    N = 60
    for level in (1e-2, 1e-4, 1e-6):
        rate = 0.0
        for a in range(N + 1):
            for b in range(N + 1 - a):
                c = np.array([a, b, N - a - b], float)
                if S.multinomial_gof(c, p, 0.0).pvalue <= level:
                    rate += stats.multinomial.pmf(c, N, p)
        assert rate <= level


def test_kl_tail_bound_and_critical_value():
    assert S.kl_tail_bound(0.9, 2) == 1.0 and S.kl_tail_bound(5.0, 1) == 1.0
    # closed form at k = 2: e^{-t} e t
    assert S.kl_tail_bound(20.0, 2) == pytest.approx(math.exp(-20.0) * math.e * 20.0, rel=1e-14)
    for cells in (2, 3, 50, 1000):
        for alpha in (1e-3, 1e-9):
            t = S.kl_critical(cells, alpha)
            assert S.kl_tail_bound(t, cells) == pytest.approx(alpha, rel=1e-9)
    assert S.kl_critical(1, 1e-6) == math.inf


def test_nested_partitions_catch_a_bias_on_the_likely_tokens():
    """A TV bias of 0.02 moved between the two likeliest of 1,000 Zipf tokens (20,000 draws).

    The counts are set to their expectations (no sampling).  Over all 135 pooled cells the
    bound cannot see it (p = 1), nor can Pearson's test (p = 0.9997); the partition that keeps
    the likeliest cells apart gives p below 1e-11.
    """
    V, N = 1000, 20_000
    p = np.arange(1, V + 1) ** -1.5
    p /= p.sum()
    biased = p.copy()
    biased[:2] += [0.02, -0.02]
    counts = np.round(N * biased)
    r = S.multinomial_gof(counts, p)
    assert r.cells == 135 and r.pvalue < 1e-11
    assert S.kl_tail_bound(r.statistic / 2, r.cells) == 1.0
    assert S.chisquare_gof(counts, p).pvalue > 0.99
    assert S.nested_partition_sizes(135) == [1, 3, 7, 15, 31, 63, 127, 135]


def test_multinomial_gof_pools_as_stated():
    """The pooling of pool_cells (fewer cells, a smaller threshold: the power of the bound)."""
    r = S.multinomial_gof([50, 45, 3, 2], [0.5, 0.44, 0.03, 0.03])
    assert (r.cells, r.df) == (3, 2)
    obs, exp = np.array([50.0, 45.0, 5.0]), np.array([50.0, 44.0, 6.0])
    assert r.statistic == pytest.approx(2 * float((obs * np.log(obs / exp)).sum()), rel=1e-12)


def test_bonferroni_and_holm_closed_formula():
    p = np.array([0.04, 0.001, 0.3, 0.012, 0.02])
    assert S.bonferroni(p) == pytest.approx(0.005, rel=1e-12)
    assert S.bonferroni({"a": 0.5, "b": 0.4}) == 0.8
    assert S.bonferroni([0.9, 0.8]) == 1.0
    # Holm by its definition: max over j <= i of (m - j + 1) p_(j), capped at 1
    srt = np.sort(p)
    m = p.size
    ref_sorted = [min(1.0, max((m - j) * srt[j] for j in range(i + 1))) for i in range(m)]
    adj = S.holm(p)
    np.testing.assert_allclose(np.sort(adj), ref_sorted, rtol=1e-12)
    np.testing.assert_allclose(adj, [0.08, 0.005, 0.3, 0.048, 0.06], rtol=1e-12)
    assert adj.min() == pytest.approx(S.bonferroni(p), rel=1e-12)
    # the running maximum: 2 * 0.011 = 0.022 < 3 * 0.01 = 0.03, so the second is raised to 0.03
    np.testing.assert_allclose(S.holm([0.011, 0.01, 0.5]), [0.03, 0.03, 0.5], rtol=1e-12)


def test_holm_controls_the_family_wise_rate_exactly_on_small_families():
    """P(Holm rejects any | all nulls true) for independent uniform p-values equals Bonferroni's.

    For m independent uniforms, P(min p <= a/m) = 1 - (1 - a/m)^m; simulated
    with 40,000 families of 4, within binomial bounds at false-alarm 1e-6.
    """
    rng = np.random.default_rng(5)
    m, a, reps = 4, 0.05, 40_000
    P = rng.random((reps, m))
    rejected = sum(S.holm(row).min() <= a for row in P)
    rate = 1 - (1 - a / m) ** m
    lo, hi = binomial_bounds(reps, rate)
    assert lo <= rejected <= hi
    unadjusted = int((P.min(axis=1) <= a).sum())  # no correction: rate 1 - 0.95^4 = 0.185
    assert unadjusted > hi


def test_chernoff_and_azuma_closed_forms():
    k, N, mu = 70, 100, 0.5
    kl = 0.7 * math.log(0.7 / 0.5) + 0.3 * math.log(0.3 / 0.5)
    assert S.chernoff_upper_tail(k, N, mu) == pytest.approx(math.exp(-N * kl), rel=1e-12)
    # a valid bound: above scipy's exact binomial tail
    assert S.chernoff_upper_tail(k, N, mu) >= stats.binom.sf(k - 1, N, mu)
    assert S.chernoff_upper_tail(40, 100, 0.5) == 1.0
    assert S.azuma_upper_tail(5.0, 50) == pytest.approx(math.exp(-1.0), rel=1e-12)
    assert S.azuma_upper_tail(-1.0, 50) == 1.0


def test_detectable_tv_reaches_its_power():
    """At TV = detectable_tv the row test rejects with probability about 0.99.

    Checked on the exact binomial law (bins = 2: the count of one cell is
    Binomial(N, 1/2 + tv)) with the test itself (G and its bound): power within
    [0.985, 0.995] up to the noncentral approximation of G.
    """
    N, alpha = 20_000, 1e-6
    tv = S.detectable_tv(N, 2, alpha)
    k = np.arange(N + 1)
    half = np.array([0.5, 0.5])
    reject = np.array([S.multinomial_gof([x, N - x], half).pvalue <= alpha for x in k])
    power = stats.binom.pmf(k, N, 0.5 + tv)[reject].sum()
    assert 0.985 <= power <= 0.995
    assert S.detectable_tv(20_000, 10, alpha) == pytest.approx(0.0371, abs=5e-4)


def test_check_alpha():
    assert S.check_alpha(0.05) == 0.05
    for bad in (0.0, 1.0, 1, True, "0.1"):
        with pytest.raises(InvalidParameterError, match="alpha must be a float in"):
            S.check_alpha(bad)


def test_permutation_invariance_of_gof():
    """Pearson's statistic does not depend on the order of the cells."""
    p = np.array([0.1, 0.2, 0.3, 0.4])
    c = np.array([12, 18, 33, 37])
    ref = S.chisquare_gof(c, p).pvalue
    for perm in permutations(range(4)):
        perm = list(perm)
        np.testing.assert_allclose(S.chisquare_gof(c[perm], p[perm]).pvalue, ref, rtol=1e-12)
