"""The SpecDec++ decision process (docs/theory.md §5.4, 8.7): Dinkelbach vs LP vs brute force."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spectheory import InstanceTooLargeError, InvalidParameterError
from spectheory.solvers import speedup as sp
from spectheory.solvers.specdecpp import evaluate_threshold_policy, solve_specdecpp

# docs/theory.md §8.7 (c = 0.2, K_max = 25): D, E[a], S*, lambda*, h interval, myopic P >, gamma, S.
TABLE_8_7 = [
    ({0.95: 0.8, 0.3: 0.2}, "0.82", "2.221", "0.4502", ("0.4312", "0.4596"), "0.5418", 4, "1.942"),
    (
        {0.99: 0.6, 0.6: 0.3, 0.1: 0.1},
        "0.784",
        "2.020",
        "0.4951",
        ("0.4840", "0.4891"),
        "0.5153",
        4,
        "1.810",
    ),
]


def fmt(x, text):
    return f"{x:.{len(text.split('.')[1])}f}"


@pytest.mark.parametrize(("D", "mean", "S", "lam", "interval", "myopic", "g", "Sg"), TABLE_8_7)
def test_theory_8_7_table(D, mean, S, lam, interval, myopic, g, Sg):
    r = solve_specdecpp(D, 0.2, k_max=25)
    assert r.status == "optimal" and r.is_threshold
    assert fmt(sum(v * p for v, p in D.items()), mean) == mean
    assert fmt(r.speedup, S) == S and fmt(r.average_cost, lam) == lam
    lo, hi = r.threshold_interval
    assert (fmt(lo, interval[0]), fmt(hi, interval[1])) == interval
    assert r.threshold == (lo + hi) / 2  # inside the interval: robust to an ulp either way
    assert fmt(1 - r.myopic_threshold, myopic) == myopic  # continue iff P > 1 - h_myopic
    assert (r.fixed_gamma, fmt(r.fixed_speedup, Sg)) == (g, Sg)
    # The adaptive gain over the best fixed length is +12-14% (docs/theory.md §5.4).
    assert 1.11 < r.speedup / r.fixed_speedup < 1.15
    # Bookkeeping: lambda* = E[cost/round] / E[tokens/round].
    assert r.cost_per_round / r.tokens_per_round == pytest.approx(r.average_cost, rel=1e-12)
    assert r.cost_per_round == pytest.approx(1 + 0.2 * r.drafts_per_round, rel=1e-14)
    assert r.iterations <= 20


@pytest.mark.parametrize("row", range(len(TABLE_8_7)))
def test_theory_8_7_against_lp(row):
    D = TABLE_8_7[row][0]
    dk = solve_specdecpp(D, 0.2, k_max=25)
    lp = solve_specdecpp(D, 0.2, k_max=25, method="lp")
    # HiGHS solves to ~1e-9 feasibility/optimality: 1e-8 relative on lambda and per-round values.
    assert lp.average_cost == pytest.approx(dk.average_cost, rel=1e-8)
    assert lp.tokens_per_round == pytest.approx(dk.tokens_per_round, rel=1e-7)
    assert lp.drafts_per_round == pytest.approx(dk.drafts_per_round, rel=1e-7)
    # The LP's policy on the states it visits lies inside the exact interval.
    assert lp.threshold_interval[0] <= dk.threshold_interval[0] + 1e-12
    assert lp.threshold_interval[1] >= dk.threshold_interval[1] - 1e-12


def brute_force_lambda(D, t_draft, k_max):
    """min over every deterministic stopping rule of E[cost]/E[tokens], exact rationals."""
    values = [Fraction(v) for v in D]
    probs = [Fraction(p) for p in D.values()]
    states = [()]  # sequences of value indices seen so far (histories, not merged)
    for k in range(k_max):
        states += [(*s, i) for s in states if len(s) == k for i in range(len(values))]
    deciding = [s for s in states if len(s) < k_max]
    best = None
    for bits in itertools.product([False, True], repeat=len(deciding)):
        cont = dict(zip(deciding, bits))
        tokens, cost = Fraction(1), Fraction(1)
        frontier = [((), Fraction(1), Fraction(1))]  # history, probability, P
        while frontier:
            s, prob, P = frontier.pop()
            if len(s) < k_max and cont[s]:
                cost += prob * Fraction(t_draft)
                for i, (v, q) in enumerate(zip(values, probs)):
                    tokens += prob * q * P * v
                    frontier.append(((*s, i), prob * q, P * v))
        lam = cost / tokens
        best = lam if best is None or lam < best else best
    return best


@pytest.mark.parametrize(
    ("D", "t_draft", "k_max"),
    [
        ({Fraction(9, 10): Fraction(2, 3), Fraction(1, 5): Fraction(1, 3)}, Fraction(1, 5), 3),
        ({Fraction(1, 2): Fraction(1, 2), Fraction(1): Fraction(1, 2)}, Fraction(1, 10), 3),
        ({Fraction(7, 10): Fraction(1)}, Fraction(1, 20), 4),
    ],
)
def test_against_brute_force_over_all_policies(D, t_draft, k_max):
    exact = brute_force_lambda(D, t_draft, k_max)
    Df = {float(v): float(p) for v, p in D.items()}
    r = solve_specdecpp(Df, float(t_draft), k_max=k_max)
    # Only float rounding separates the two: 1e-13 relative.
    assert r.average_cost == pytest.approx(float(exact), rel=1e-13)


@st.composite
def discrete_laws(draw, max_m=3):
    m = draw(st.integers(1, max_m))
    values = draw(
        st.lists(st.integers(1, 100), min_size=m, max_size=m, unique=True).map(
            lambda xs: [x / 100 for x in xs]
        )
    )
    weights = draw(st.lists(st.integers(1, 20), min_size=m, max_size=m))
    total = sum(weights)
    return dict(zip(values, [w / total for w in weights]))


@pytest.mark.parametrize(
    ("value", "c", "k_max", "method"), [(0.574, 0.2, 3, "lp"), (0.532, 0.1, 25, "dinkelbach")]
)
def test_threshold_on_a_boundary_state_is_not_reported(value, c, k_max, method):
    # The right end of the interval is a state's 1 - P; reported as h it made
    # the decision there depend on the order of a product (audit, D2/D3).
    r = solve_specdecpp({value: 1.0}, c, k_max=k_max, method=method)
    lo, hi = r.threshold_interval
    assert lo < r.threshold < hi
    assert evaluate_threshold_policy({value: 1.0}, c, r.threshold, k_max=k_max) == pytest.approx(
        r.speedup, rel=1e-12
    )
    P, g = 1.0, 0
    while g < k_max and not (1 - P >= r.threshold):
        P, g = P * value, g + 1
    tau = sum(value**j for j in range(g + 1))
    assert tau / (1 + g * c) == pytest.approx(r.speedup, rel=1e-12)


@given(discrete_laws(), st.floats(0.01, 0.6), st.integers(1, 8))
def test_dinkelbach_equals_lp_and_is_threshold(D, c, k_max):
    r = solve_specdecpp(D, c, k_max=k_max)
    lp = solve_specdecpp(D, c, k_max=k_max, method="lp")
    assert r.status == "optimal"
    assert lp.average_cost == pytest.approx(r.average_cost, rel=1e-8)
    # Threshold structure: one h on 1 - P reproduces the optimal action on every reachable state.
    assert r.is_threshold
    # ...and running that threshold rule gives the optimal speedup.
    assert evaluate_threshold_policy(D, c, r.threshold, k_max=k_max) == pytest.approx(
        r.speedup, rel=1e-12
    )
    # Optimality against the two baselines (both are policies of the same process).
    assert r.speedup >= r.fixed_speedup * (1 - 1e-12)
    assert r.speedup >= r.myopic_speedup * (1 - 1e-12)


@given(st.floats(0.05, 1.0), st.floats(0.0, 0.5), st.integers(1, 30))
def test_deterministic_acceptance_reduces_to_fixed_gamma(a, c, k_max):
    """One value: nothing to learn, so the optimum is the best fixed gamma (docs/theory.md §1.5)."""
    r = solve_specdecpp({a: 1.0}, c, k_max=k_max)
    best = sp.optimal_gamma(a, c, gamma_max=k_max, method="enumerate")
    assert r.speedup == pytest.approx(best.speedup, rel=1e-12)
    assert r.fixed_speedup == pytest.approx(best.speedup, rel=1e-12)


def test_markov_chain():
    T = np.array([[0.9, 0.1], [0.5, 0.5]])
    D = {0.95: 0.5, 0.3: 0.5}
    r = solve_specdecpp(D, 0.2, transition=T, k_max=20)
    lp = solve_specdecpp(D, 0.2, transition=T, k_max=20, method="lp")
    assert lp.average_cost == pytest.approx(r.average_cost, rel=1e-8)
    assert r.is_threshold and r.threshold_interval.shape == (2, 2)
    # Rows equal to the initial law: the chain is i.i.d. and the answers coincide.
    iid = solve_specdecpp(D, 0.2, k_max=20)
    same = solve_specdecpp(D, 0.2, transition=[[0.5, 0.5], [0.5, 0.5]], k_max=20)
    assert same.average_cost == pytest.approx(iid.average_cost, rel=1e-13)
    assert same.fixed_gamma == iid.fixed_gamma
    # Positive correlation of acceptance makes adaptivity worth more than under i.i.d. (same
    # stationary law (5/6, 1/6) as T's): the gain over the best fixed length is larger.
    stat = {0.95: 5 / 6, 0.3: 1 / 6}
    r_stat = solve_specdecpp(D, 0.2, transition=T, k_max=20)
    r_iid = solve_specdecpp(stat, 0.2, k_max=20)
    assert r_stat.speedup / r_stat.fixed_speedup > r_iid.speedup / r_iid.fixed_speedup


def test_fixed_baseline_matches_theorem_3_8():
    # i.i.d.: E[P_j] = E[a]^j, so the fixed baseline is Theorem 3.8 at alpha = E[a].
    r = solve_specdecpp({0.95: 0.8, 0.3: 0.2}, 0.2)
    assert r.fixed_speedup == pytest.approx(sp.speedup(0.82, 4, 0.2), rel=1e-13)


def test_threshold_policy_sweep():
    D = {0.95: 0.8, 0.3: 0.2}
    r = solve_specdecpp(D, 0.2)
    lo, hi = r.threshold_interval
    for h in np.linspace(0.0, 1.0, 41):
        s = evaluate_threshold_policy(D, 0.2, h)
        assert s <= r.speedup * (1 + 1e-12)
        if lo < h <= hi:
            assert s == pytest.approx(r.speedup, rel=1e-12)
    # h = 0 stops at once: target-only decoding.
    assert evaluate_threshold_policy(D, 0.2, 0.0) == 1.0


def test_t_target_scaling():
    a = solve_specdecpp({0.9: 0.7, 0.4: 0.3}, 0.1, k_max=12)
    b = solve_specdecpp({0.9: 0.7, 0.4: 0.3}, 0.5, t_target=5.0, k_max=12)
    assert b.average_cost == pytest.approx(5 * a.average_cost, rel=1e-13)
    assert b.speedup == pytest.approx(a.speedup, rel=1e-13)
    z = solve_specdecpp({0.9: 0.7, 0.4: 0.3}, 0.0, k_max=12)  # free drafts: always draft K
    assert z.drafts_per_round == pytest.approx(12.0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"acceptance": {1.2: 1.0}}, InvalidParameterError, r"value 0 must lie in \[0, 1\]"),
        ({"acceptance": {0.5: 0.6}}, InvalidParameterError, "sum to 1"),
        ({"acceptance": {0.5: -0.1, 0.6: 1.1}}, InvalidParameterError, "probability 0"),
        ({"acceptance": ([0.5, 0.5], [0.5, 0.5])}, InvalidParameterError, "distinct"),
        ({"acceptance": 0.5}, InvalidParameterError, "mapping"),
        ({"t_draft": -0.1}, InvalidParameterError, "t_draft must be >= 0; got -0.1"),
        ({"t_target": 0.0}, InvalidParameterError, "t_target must be > 0"),
        ({"k_max": 0}, InvalidParameterError, "k_max must be >= 1"),
        ({"method": "vi"}, InvalidParameterError, "method must be one of"),
        ({"transition": [[1.0]]}, InvalidParameterError, r"shape \(2, 2\)"),
        ({"transition": [[0.5, 0.6], [0.5, 0.5]]}, InvalidParameterError, "row 0 must sum"),
        (
            {"acceptance": {i / 10: 0.1 for i in range(10)}, "k_max": 25},
            InstanceTooLargeError,
            "states",
        ),
    ],
)
def test_bad_inputs(kwargs, error, match):
    args = {"acceptance": {0.9: 0.5, 0.5: 0.5}, "t_draft": 0.2} | kwargs
    with pytest.raises(error, match=match):
        solve_specdecpp(**args)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"acceptance": {True: 1.0}}, "acceptance values must hold real numbers; got True"),
        ({"acceptance": (["0.5"], [1.0])}, "acceptance values must hold real numbers; got '0.5'"),
        ({"acceptance": {0.5: True}}, "acceptance probabilities must hold real numbers; got True"),
        (
            {"acceptance": ([0.5, 0.9], [0.5, "0.5"])},
            "acceptance probabilities must hold real numbers; got '0.5' of type str at index 1",
        ),
        (
            {"acceptance": ([0.5 + 0j], [1.0])},
            r"acceptance values must hold real numbers; got \(0.5\+0j\)",
        ),
        (
            {"transition": [[True, False], [False, True]]},
            r"transition must hold real numbers; got True of type bool at index \(0, 0\)",
        ),
        ({"transition": np.eye(2, dtype=bool)}, "transition must hold real numbers; got an array"),
    ],
)
def test_bools_and_strings_are_refused_not_coerced(kwargs, match):
    # As spectheory.solvers.speedup refuses them; np.asarray(..., dtype=float) took them.
    args = {"acceptance": {0.9: 0.5, 0.5: 0.5}, "t_draft": 0.2} | kwargs
    with pytest.raises(InvalidParameterError, match=match):
        solve_specdecpp(**args)
    h_args = {k: v for k, v in args.items() if k != "t_draft"}
    with pytest.raises(InvalidParameterError, match=match):
        evaluate_threshold_policy(t_draft=0.2, h=0.5, **h_args)


def test_exact_numbers_are_still_accepted():
    r = solve_specdecpp({Fraction(1, 2): Fraction(1)}, 0.2, k_max=4)
    assert round(r.speedup, 12) == 1.25
    markov = solve_specdecpp({0.5: 0.5, 0.9: 0.5}, 0.2, transition=[[1, 0], [0, 1]], k_max=4)
    assert markov.speedup > 1


def test_threshold_policy_refuses_nan_and_takes_infinite_h():
    # NaN compares False: the rule never stopped before k_max and returned a number.
    with pytest.raises(InvalidParameterError, match=r"h must be a real number .*not NaN; got nan"):
        evaluate_threshold_policy({0.5: 1.0}, 0.2, float("nan"))
    with pytest.raises(InvalidParameterError, match="h must be a real number; got True"):
        evaluate_threshold_policy({0.5: 1.0}, 0.2, True)
    assert evaluate_threshold_policy({0.5: 1.0}, 0.2, -np.inf) == 1.0  # stops at once
    never = evaluate_threshold_policy({0.5: 1.0}, 0.2, np.inf, k_max=3)  # drafts k_max = 3
    assert never == pytest.approx((1 + 0.5 + 0.25 + 0.125) / (1 + 3 * 0.2), rel=1e-12)


@pytest.mark.filterwarnings("error")
def test_myopic_threshold_when_no_token_is_ever_accepted():
    # E[a] = 0: "continue iff lambda P E[a] > t_draft" never holds, so the myopic rule stops at
    # once: h = -inf, also at t_draft = 0 (there 1 - t_d / (lambda E[a]) was 0/0: nan + warning).
    for t_draft in (0.0, 0.2):
        r = solve_specdecpp({0.0: 1.0}, t_draft, k_max=3)
        assert r.myopic_threshold == -np.inf
        assert r.myopic_speedup == 1.0
    r = solve_specdecpp(
        {0.0: 0.5, 0.9: 0.5}, 0.0, transition=[[1.0, 0.0], [0.5, 0.5]], k_max=3
    )
    assert r.myopic_threshold[0] == -np.inf and r.myopic_threshold[1] == 1.0
