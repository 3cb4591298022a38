"""Speedup theory and the optimal draft length (docs/theory.md §1.3-1.5, 4.4, 8.5)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import brentq, minimize_scalar

from spectheory import InstanceTooLargeError, InvalidParameterError
from spectheory.solvers import speedup as sp

# docs/theory.md §1.5(c): integer gamma* and S(gamma*) from Theorem 3.8.
ALPHAS = [0.50, 0.60, 0.70, 0.75, 0.80, 0.85, 0.90, 0.95]
COSTS = [0.01, 0.05, 0.10, 0.20]
TABLE_C = {
    0.50: [(5, "1.875"), (3, "1.630"), (2, "1.458"), (1, "1.250")],
    0.60: [(7, "2.297"), (4, "1.921"), (3, "1.674"), (2, "1.400")],
    0.70: [(9, "2.972"), (6, "2.353"), (4, "1.981"), (3, "1.583")],
    0.75: [(11, "3.489"), (7, "2.666"), (5, "2.192"), (3, "1.709")],
    0.80: [(14, "4.232"), (8, "3.092"), (6, "2.470"), (4, "1.868")],
    0.85: [(17, "5.392"), (10, "3.701"), (7, "2.853"), (5, "2.076")],
    0.90: [(24, "7.486"), (13, "4.674"), (10, "3.431"), (7, "2.373")],
    0.95: [(40, "12.54"), (21, "6.600"), (15, "4.479"), (10, "2.875")],
}
CELLS = [(a, c, *TABLE_C[a][j]) for a in ALPHAS for j, c in enumerate(COSTS)]


def printed(x, text):
    """x rounds to the printed decimal string (same number of decimals)."""
    decimals = len(text.split(".")[1])
    return f"{x:.{decimals}f}" == text


@pytest.mark.parametrize("method", sp.GAMMA_METHODS)
@pytest.mark.parametrize(("alpha", "c", "gamma", "S"), CELLS)
def test_gamma_table_cell(alpha, c, gamma, S, method):
    r = sp.optimal_gamma(alpha, c, method=method)
    assert r.gamma == gamma
    assert printed(r.speedup, S), (r.speedup, S)
    assert r.status == "optimal" and not r.capped
    # The bracket of docs/theory.md §1.5(a) at the optimum.
    P = alpha ** np.arange(gamma + 2)
    assert P[gamma + 1] <= c * r.speedup * (1 + 1e-12)
    assert c * r.speedup <= P[gamma]


def test_gamma_table_vectorised():
    r = sp.optimal_gamma(np.array(ALPHAS)[:, None], np.array(COSTS)[None, :])
    want = np.array([[g for g, _ in TABLE_C[a]] for a in ALPHAS])
    np.testing.assert_array_equal(r.gamma, want)
    assert r.speedup.shape == (8, 4) and r.gamma_continuous.shape == (8, 4)


def test_theory_8_5_vectors():
    assert f"{sp.continuous_optimal_gamma(0.8, 0.05):.3f}" == "7.857"
    assert f"{sp.continuous_optimal_gamma(0.6, 0.1):.3f}" == "2.978"
    assert f"{sp.continuous_optimal_gamma(0.9, 0.01):.3f}" == "24.099"
    r = sp.optimal_gamma(0.8, 0.05, method="lambertw")
    assert (r.gamma, f"{r.speedup:.3f}") == (8, "3.092")
    assert f"{sp.oracle_speedup(0.8, 0.05) / r.speedup:.3f}" == "1.348"
    assert f"{sp.oracle_speedup(0.9, 0.05) / sp.optimal_gamma(0.9, 0.05).speedup:.2f}" == "1.48"
    # Leviathan Table 2: alpha .75, gamma 7, 3.4x implies c = 0.008 (docs/theory.md §1.6, 8.5).
    assert f"{sp.implied_cost_ratio(0.75, 7, 3.4):.3f}" == "0.008"
    # T5-large (alpha .82, gamma 7, 1.7x): c ~ 0.23; alpha .65, gamma 5, 3.1x: above the ceiling.
    assert f"{sp.implied_cost_ratio(0.82, 7, 1.7):.2f}" == "0.23"
    assert sp.implied_cost_ratio(0.65, 5, 3.1) < 0
    assert f"{sp.tokens_per_round(0.65, 5):.2f}" == "2.64"


def test_oracle_ratio_maximum():
    # docs/theory.md §1.5(d): max over alpha <= .95, c in [.005, .2] of S_oracle/S(gamma*) is ~1.56
    # at alpha = .95, c ~ .06.
    c = np.linspace(0.005, 0.2, 391)
    alpha = np.linspace(0.5, 0.95, 91)[:, None]
    ratio = sp.oracle_speedup(alpha, c) / sp.optimal_gamma(alpha, c).speedup
    i, j = np.unravel_index(np.argmax(ratio), ratio.shape)
    assert f"{ratio[i, j]:.2f}" == "1.56"
    assert alpha[i, 0] == pytest.approx(0.95) and abs(c[j] - 0.06) < 0.01


def brute_force_gamma(alpha, c, gamma_max):
    """Argmax of Theorem 3.8 by direct summation, shortest on ties within 1e-12."""
    S = [sum(alpha**j for j in range(g + 1)) / (g * c + 1) for g in range(gamma_max + 1)]
    best = max(S)
    return next(g for g, s in enumerate(S) if s >= best * (1 - 1e-12)), S


@given(
    st.floats(0.0, 0.99),
    st.floats(0.001, 1.5),
)
def test_marginal_rule_equals_brute_force(alpha, c):
    g_bf, S = brute_force_gamma(alpha, c, 400)
    for method in sp.GAMMA_METHODS:
        r = sp.optimal_gamma(alpha, c, method=method, gamma_max=400)
        assert not r.capped
        # S(gamma) within 1e-12 of the maximum, and the same gamma unless S ties there.
        assert r.speedup >= max(S) * (1 - 1e-12)
        if abs(S[r.gamma] - S[g_bf]) > 1e-10 * S[g_bf]:
            pytest.fail(f"{method}: gamma {r.gamma} vs brute force {g_bf}")


@pytest.mark.parametrize(
    ("alpha", "c"), list(itertools.product([0.3, 0.55, 0.8, 0.9, 0.97], [0.002, 0.03, 0.2, 0.6]))
)
def test_lambertw_matches_numeric_maximisation(alpha, c):
    got = sp.continuous_optimal_gamma(alpha, c)

    def minus_s(g):
        return -(1 - alpha ** (g + 1)) / ((1 - alpha) * (g * c + 1))

    res = minimize_scalar(minus_s, bounds=(0.0, 3000.0), method="bounded", options={"xatol": 1e-11})
    # Brent's method on function values resolves a flat maximum only to ~sqrt(eps) relative
    # to gamma (observed up to 4e-8 * gamma on this grid), hence 1e-6 * max(1, gamma).
    assert abs(res.x - got) < 1e-6 * max(1.0, got) if res.x > 1e-6 else got == 0.0

    # Sharper: the root of dS/dgamma (quotient rule, not THEORY's simplified form) to 1e-9.
    def dS(g):
        num, den = 1 - alpha ** (g + 1), g * c + 1
        return (-math.log(alpha) * alpha ** (g + 1) * den - c * num) / den**2

    if dS(0.0) > 0:
        root = brentq(dS, 0.0, 1e4, xtol=1e-13, rtol=1e-15)
        assert abs(root - got) < 1e-9 * max(1.0, root)
    else:
        assert got == 0.0


def test_continuous_optimum_edge_cases():
    g = sp.continuous_optimal_gamma([0.0, 1.0, 1.0, 0.5, 0.5, 0.5], [0.1, 0.5, 1.0, 0.0, 1.0, 2.0])
    assert g.tolist() == [0.0, math.inf, 0.0, math.inf, 0.0, 0.0]
    # Large t = L(1 - c)/c, where exp(-1 - t) underflows: gamma = ln(s)/L - 1, s - ln s = 1 + t.
    alpha, c = 0.3, 1e-300
    L = -math.log(alpha)
    t = L * (1 - c) / c
    s = brentq(lambda s: s - math.log(s) - 1 - t, t, 2 * t, rtol=1e-15)
    assert sp.continuous_optimal_gamma(alpha, c) == pytest.approx(math.log(s) / L - 1, rel=1e-12)
    # Subnormal c: t overflows, ln s = ln t = ln(L (1 - c)) - ln c.
    c = 5e-320
    want = (math.log(L) - math.log(c)) / L - 1
    assert sp.continuous_optimal_gamma(alpha, c) == pytest.approx(want, rel=1e-12)
    # Near alpha = 1: gamma ~ sqrt(2(1 - c)/(c L)) for small t.
    alpha, c = 1 - 1e-12, 1e-3
    L = -math.log1p(-1e-12)
    assert sp.continuous_optimal_gamma(alpha, c) == pytest.approx(
        math.sqrt(2 * (1 - c) / (c * L)), rel=1e-3
    )


def test_tokens_per_round_exact_cases():
    assert sp.tokens_per_round(1.0, 7) == 8.0
    assert sp.tokens_per_round(0.0, 7) == 1.0
    assert sp.tokens_per_round(0.3, 0) == 1.0
    assert sp.speedup(0.7, 3, 0.0) == sp.tokens_per_round(0.7, 3)
    np.testing.assert_allclose(
        sp.tokens_per_round(1 - 1e-13, [1, 10, 100]), [2, 11, 101], rtol=1e-10
    )
    # Broadcasting over alpha, gamma and c.
    S = sp.speedup(np.array([0.5, 0.9])[:, None, None], np.arange(4)[None, :, None], [0.0, 0.1])
    assert S.shape == (2, 4, 2)
    assert S[1, 3, 1] == pytest.approx((1 + 0.9 + 0.81 + 0.729) / 1.3, rel=1e-15)


@given(st.floats(0.0, 1.0), st.integers(0, 30))
def test_pmf_matches_enumeration(alpha, gamma):
    """P(A = l) from the formula vs exact enumeration of accept/reject paths."""
    pmf = sp.acceptance_count_pmf(alpha, gamma)
    enum = np.zeros(gamma + 1)
    for ell in range(gamma + 1):  # accept ell tokens then reject (or reach gamma)
        enum[ell] = math.prod([alpha] * ell) * ((1 - alpha) if ell < gamma else 1.0)
    np.testing.assert_allclose(pmf, enum, rtol=1e-12, atol=1e-15)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    mean = float(np.dot(np.arange(gamma + 1), pmf))
    assert mean + 1 == pytest.approx(sp.tokens_per_round(alpha, gamma), rel=1e-12, abs=1e-12)


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12))
def test_positional_against_path_enumeration(alphas):
    """tau, the pmf and S from P_j vs summing over all accept/reject paths."""
    K = len(alphas)
    pmf = np.zeros(K + 1)
    for path in itertools.product([0, 1], repeat=K):  # 1 = accepted, evaluated left to right
        prob, accepted = 1.0, 0
        for k, acc in enumerate(path):
            if accepted < k:  # an earlier rejection ended the round: later bits are free
                prob *= 0.5
                continue
            prob *= alphas[k] if acc else 1 - alphas[k]
            accepted += acc
        pmf[accepted] += prob
    np.testing.assert_allclose(sp.acceptance_count_pmf_positional(alphas), pmf, atol=1e-12)
    tau = sp.tokens_per_round_positional(alphas)
    assert tau[-1] == pytest.approx(1 + np.dot(np.arange(K + 1), pmf), abs=1e-12)
    # i.i.d. special case and prefix input give the same curves.
    P = sp.prefix_probs(alphas)
    np.testing.assert_allclose(sp.tokens_per_round_positional(P, kind="prefix"), tau, rtol=1e-15)
    S = sp.speedup_positional(alphas, 0.1)
    np.testing.assert_allclose(S, tau / (np.arange(K + 1) * 0.1 + 1), rtol=1e-15)


def test_positional_reduces_to_iid():
    a = np.array([0.6, 0.85])[:, None]
    curve = sp.speedup_positional(np.repeat(a, 20, axis=1), 0.05)
    np.testing.assert_allclose(curve, sp.speedup(a, np.arange(21), 0.05), rtol=1e-13)
    r = sp.optimal_gamma_positional(np.full(40, 0.8), [0.01, 0.05, 0.1, 0.2])
    assert r.gamma.tolist() == [14, 8, 6, 4]
    assert not r.capped.any() and r.gamma_continuous is None


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=25), st.floats(0.0, 0.5))
def test_positional_marginal_equals_enumerate(alphas, c):
    m = sp.optimal_gamma_positional(alphas, c)
    e = sp.optimal_gamma_positional(alphas, c, method="enumerate")
    S = sp.speedup_positional(alphas, c)
    assert m.speedup >= S.max() * (1 - 1e-12)
    assert bool(m.capped) == bool(e.capped) or abs(S[-1] - S[-2]) <= 1e-12 * S[-1]
    if not m.capped:
        assert abs(S[m.gamma] - S[e.gamma]) <= 1e-12 * S.max()


def test_inversion_vllm_example():
    """docs/theory.md §4.4: tau(1..8) of Qwen3-1.7B -> 32B, c ~ 0.096."""
    tau = [1.80, 2.40, 2.87, 3.28, 3.53, 3.70, 3.90, 4.04]
    a = sp.conditional_from_tokens_per_round(tau)
    assert [f"{x:.2f}" for x in a] == [
        "0.80",
        "0.75",
        "0.78",
        "0.87",
        "0.61",
        "0.68",
        "1.18",
        "0.70",
    ]
    P = np.diff(np.concatenate([[1.0], tau]))
    r = sp.optimal_gamma_positional(P, 2.27 / 23.65, kind="prefix", method="enumerate")
    assert (r.gamma, f"{r.speedup:.2f}") == (5, "2.39")
    with pytest.raises(InvalidParameterError, match="non-increasing"):
        sp.optimal_gamma_positional(P, 0.096, kind="prefix")


@given(st.lists(st.floats(0.01, 1.0), min_size=1, max_size=10))
def test_inversion_round_trip(alphas):
    tau = sp.tokens_per_round_positional(alphas)[1:]
    back = sp.conditional_from_tokens_per_round(tau)
    # alpha_k = P_k / P_{k-1} with P_k a difference of tau values ~ K: its absolute error is
    # ~K eps / P_{k-1}, so the tolerance scales with 1 / P_{k-1}.
    P_prev = np.concatenate([[1.0], sp.prefix_probs(alphas)[:-1]])
    assert np.all(np.abs(back - alphas) <= 1e-13 / P_prev)


@given(st.floats(0.0, 1.0), st.integers(1, 40))
def test_alpha_from_tau_round_trip(alpha, gamma):
    tau = sp.tokens_per_round(alpha, gamma)
    back = sp.alpha_from_tokens_per_round(tau, gamma)
    # tau is flat in alpha near 0 for gamma >= 1 only through alpha itself (d tau/d alpha >= 1),
    # so the inverse is well conditioned: 1e-12 absolute.
    assert abs(back - alpha) < 1e-12 or abs(sp.tokens_per_round(back, gamma) - tau) < 1e-14


def test_arithmetic_increase():
    # docs/theory.md §1.4: (1 - alpha)(gamma c_hat + gamma + 1)/(1 - alpha^(gamma+1)).
    got = sp.arithmetic_increase(0.8, 4, 0.05)
    assert got == pytest.approx(0.2 * (0.2 + 4 + 1) / (1 - 0.8**5), rel=1e-14)
    assert sp.arithmetic_increase(0.0, 3, 0.0) == 4.0
    assert sp.arithmetic_increase(1.0, 3, 1.0) == pytest.approx(7 / 4)


def test_oracle_bound_edges_and_dominance():
    assert sp.oracle_speedup(1.0, 0.0) == math.inf
    assert sp.oracle_speedup(0.0, 0.3) == 1.0
    alpha = np.linspace(0, 0.99, 34)[:, None]
    c = np.array([0.0, 0.01, 0.1, 0.5])
    # The oracle never drafts a rejected token, so it beats every fixed gamma.
    best = sp.optimal_gamma(alpha, c, gamma_max=3000)
    assert np.all(sp.oracle_speedup(alpha, c) >= best.speedup * (1 - 1e-12))


def test_bools_among_numbers_are_refused():
    # [True, 0.5] reads as float64 [1.0, 0.5]: the bool was taken as alpha = 1.
    with pytest.raises(sp.InvalidParameterError, match=r"alpha must be a real number .* True"):
        sp.tokens_per_round([True, 0.5], 3)
    with pytest.raises(sp.InvalidParameterError, match="c must be a real number"):
        sp.optimal_gamma(0.5, [0.1, False])


def test_pmf_refuses_rising_prefix_probabilities():
    with pytest.raises(sp.InvalidParameterError, match=r"got P_2 = 0\.9 > P_1 = 0\.5"):
        sp.acceptance_count_pmf_positional([0.5, 0.9], kind="prefix")  # was [0.5, -0.4, 0.9]
    assert sp.acceptance_count_pmf_positional([0.5, 0.9], 1, kind="prefix").tolist() == [0.5, 0.5]


def test_unsigned_gamma_beyond_int64_is_refused_not_wrapped():
    # np.uint64(2**64 - 1).astype(int64) is -1: the message said "got -1.0".
    with pytest.raises(sp.InvalidParameterError, match=r"gamma must be at most .*1\.8446"):
        sp.tokens_per_round(0.5, np.uint64(2**64 - 1))
    assert sp.tokens_per_round(0.5, np.uint64(2)) == 1.75


def test_pmf_size_is_limited():
    with pytest.raises(InstanceTooLargeError, match=r"alpha.size \* \(gamma \+ 1\)"):
        sp.acceptance_count_pmf(0.5, 10**9)  # 8 GB of float64 before the check


def test_positional_optimum_needs_a_position():
    with pytest.raises(sp.InvalidParameterError, match=r"at least one draft position.*\(0,\)"):
        sp.optimal_gamma_positional([], 0.1)  # was numpy's "argmax of an empty sequence"
    assert sp.optimal_gamma_positional([0.9], 0.1).gamma == 1


def test_capped_and_degenerate():
    r = sp.optimal_gamma([0.0, 1.0, 0.5, 1.0], [0.0, 0.0, 0.0, 1.0], gamma_max=30)
    assert r.gamma.tolist() == [0, 30, 30, 0]
    assert r.capped.tolist() == [False, True, True, False]
    assert r.status == "capped" and "2 entries" in r.message
    assert r.speedup.tolist()[:2] == [1.0, 31.0]
    for method in sp.GAMMA_METHODS:
        assert sp.optimal_gamma(0.5, 0.0, gamma_max=30, method=method).capped
        # Beyond the gamma where alpha^gamma falls below an ulp (about 53 here)
        # or underflows (1074), tau no longer rises in floats: c = 0 is still capped.
        for g_max in (100, 5000):
            r = sp.optimal_gamma([0.5, 0.0], 0.0, gamma_max=g_max, method=method)
            assert r.gamma.tolist() == [g_max, 0] and r.capped.tolist() == [True, False]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: sp.tokens_per_round(1.2, 3), r"alpha must lie in \[0, 1\]; got 1.2"),
        (lambda: sp.tokens_per_round([0.5, -0.1], 3), r"alpha .* -0.1 at index 1"),
        (lambda: sp.tokens_per_round(float("nan"), 3), "alpha must be finite"),
        (lambda: sp.tokens_per_round(0.5, -1), "gamma must be >= 0; got -1"),
        (lambda: sp.tokens_per_round(0.5, 2.5), "gamma must be an integer"),
        (lambda: sp.tokens_per_round(0.5, True), "gamma must be an integer"),
        (lambda: sp.speedup(0.5, 2, -0.1), r"c must be >= 0; got -0.1"),
        (lambda: sp.speedup("a", 2, 0.1), "alpha must be a real number"),
        (lambda: sp.optimal_gamma(0.5, 0.1, method="newton"), "method must be one of"),
        (lambda: sp.optimal_gamma(0.5, 0.1, gamma_max=0), "gamma_max must be >= 1"),
        (lambda: sp.speedup_positional([0.5], 0.1, kind="joint"), "kind must be one of"),
        (lambda: sp.speedup_positional(0.5, 0.1), "alphas must have a last axis"),
        (lambda: sp.acceptance_count_pmf_positional([0.5], 2), "gamma must be <= K = 1"),
        (lambda: sp.acceptance_count_pmf(0.5, [1, 2]), "gamma must be a single integer"),
        (lambda: sp.alpha_from_tokens_per_round(3.5, 2), r"tau must lie in \[1, gamma \+ 1\]"),
        (lambda: sp.alpha_from_tokens_per_round(1.5, 0), "gamma must be >= 1"),
        (lambda: sp.implied_cost_ratio(0.5, 1, 0.0), "measured_speedup must be > 0"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(InvalidParameterError, match=match):
        call()


def test_capped_means_the_optimum_lies_beyond_the_cap_for_every_method():
    """Capped iff S(gamma_max + 1) > S(gamma_max), exact in Fractions, for all three methods.

    (0.8, 0.05) has its optimum at 8: with gamma_max = 8 it is no cap (two methods called it
    capped before), with gamma_max = 7 it is."""
    from fractions import Fraction as F

    def S(a, c, g):
        return sum(a**j for j in range(g + 1)) / (g * c + 1)

    cases = [(F(4, 5), F(1, 20), 8), (F(4, 5), F(1, 20), 7), (F(9, 10), F(1, 100), 5),
             (F(1, 2), F(1, 10), 1), (F(95, 100), F(1, 50), 30), (F(3, 10), F(1, 5), 2)]
    for a, c, gmax in cases:
        beyond = S(a, c, gmax + 1) > S(a, c, gmax)
        best = max(range(gmax + 1), key=lambda g: (S(a, c, g), -g))
        for method in ("marginal", "lambertw", "enumerate"):
            r = sp.optimal_gamma(float(a), float(c), gamma_max=gmax, method=method)
            assert r.gamma == best, (a, c, gmax, method)
            assert bool(r.capped) == beyond, (a, c, gmax, method)
            assert (r.status == "capped") == beyond
