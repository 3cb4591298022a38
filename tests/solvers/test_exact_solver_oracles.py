"""The draft-length solvers against oracles written here: exact rationals, brute force.

Each test recomputes the promised number without the solver's own code path:
Theorem 3.8's speedup in :class:`fractions.Fraction` for every draft length,
and every history-dependent stopping rule of the SpecDec++ process
(i.i.d. and Markov acceptance) enumerated on a tree of histories, not on the
solver's merged ``(P, k)`` states.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from spectheory import InvalidParameterError
from spectheory.solvers import speedup as sp
from spectheory.solvers.specdecpp import evaluate_threshold_policy, solve_specdecpp

# --------------------------------------------------------------------------- speedup


def exact_speedups(alpha, c, gamma_max):
    """S(gamma) = tau(gamma) / (gamma c + 1) for gamma = 0..gamma_max, in Fractions."""
    a, c = Fraction(alpha), Fraction(c)
    return [sum(a**j for j in range(g + 1)) / (g * c + 1) for g in range(gamma_max + 1)]


# (alpha, c, gamma) with S(gamma) = S(gamma + 1) in exact arithmetic: c = a^(g+1) / (tau(g) -
# g a^(g+1)).  The float c is one rounding away from the tie, on the side where the plain
# marginal test alpha^(g+1) (g c + 1) > c tau(g) (no tolerance) goes on to gamma + 1.
EXACT_TIES = [
    (Fraction(1, 2), Fraction(1, 12), 2),
    (Fraction(1, 5), Fraction(1, 29), 1),
    (Fraction(2, 5), Fraction(4, 31), 1),
    (Fraction(1, 2), Fraction(1, 503), 7),
]


@pytest.mark.parametrize(("alpha", "c", "gamma"), EXACT_TIES)
@pytest.mark.parametrize("method", sp.GAMMA_METHODS)
def test_an_exact_tie_goes_to_the_shorter_draft_for_every_method(alpha, c, gamma, method):
    S = exact_speedups(alpha, c, 40)
    assert S[gamma] == S[gamma + 1] == max(S)  # the oracle: a tie, and the optimum
    r = sp.optimal_gamma(float(alpha), float(c), method=method, gamma_max=40)
    assert r.gamma == gamma  # "ties go to the shorter draft"
    assert r.speedup == pytest.approx(float(S[gamma]), rel=1e-15)
    assert not r.capped


@pytest.mark.parametrize("method", ["marginal", "enumerate"])
@pytest.mark.parametrize("kind", ["conditional", "prefix"])
def test_a_tie_at_the_last_position_is_neither_taken_nor_capped(method, kind):
    # alphas (1/2, 1/2), c = 1/5: S = (1, 5/4, 5/4) exactly.  The shorter draft wins the tie,
    # and S does not rise into K = 2, so nothing suggests a longer draft would gain.
    S = exact_speedups(Fraction(1, 2), Fraction(1, 5), 2)
    assert S == [1, Fraction(5, 4), Fraction(5, 4)]
    acceptance = [0.5, 0.5] if kind == "conditional" else [0.5, 0.25]  # P_2 = 1/4
    r = sp.optimal_gamma_positional(acceptance, 0.2, kind=kind, method=method)
    assert (r.gamma, bool(r.capped), r.status) == (1, False, "optimal")
    assert r.speedup == pytest.approx(1.25, rel=1e-15)


def test_conditional_acceptance_from_tau_around_a_zero_prefix():
    # tau = (1.5, 1.5, 1.5): P = (1, 1/2, 0, 0), so alpha = (1/2, 0/(1/2) = 0, 0/0 = nan); and a
    # noisy measurement (1.0, 1.2) has P_1 = 0 < P_2 = 0.2: nan after the zero, not inf.
    out = sp.conditional_from_tokens_per_round([1.5, 1.5, 1.5])
    assert out[:2].tolist() == [0.5, 0.0] and np.isnan(out[2])
    noisy = sp.conditional_from_tokens_per_round([1.0, 1.2])
    assert noisy[0] == 0.0 and np.isnan(noisy[1])


def test_accepted_count_law_refuses_a_prefix_that_rises_by_a_little():
    # P(A = 1) = P_1 - P_2 = 0.5 - 0.5005 < 0 is no probability, however small the rise.
    with pytest.raises(InvalidParameterError, match="must not increase"):
        sp.acceptance_count_pmf_positional([0.5, 0.5005], kind="prefix")
    # A flat prefix is a law: P(A = 0) = 1/2, P(A = 1) = 0, P(A = 2) = 1/2.
    law = sp.acceptance_count_pmf_positional([0.5, 0.5], kind="prefix")
    assert law.tolist() == [0.5, 0.0, 0.5]


@pytest.mark.parametrize("gamma", [1, 3, 40])
def test_alpha_from_tau_at_the_ends_is_exactly_zero_and_one(gamma):
    # tau = 1: nothing ever accepted, alpha = 0 (not the bisection's last midpoint, ~1e-25);
    # tau = gamma + 1: everything accepted, alpha = 1.  Inside: Eq. 1 inverted, in Fractions.
    assert sp.alpha_from_tokens_per_round(1.0, gamma) == 0.0
    assert sp.alpha_from_tokens_per_round(gamma + 1.0, gamma) == 1.0
    a = sp.alpha_from_tokens_per_round(
        float(sum(Fraction(3, 4) ** j for j in range(gamma + 1))), gamma
    )
    assert a == pytest.approx(0.75, rel=1e-14)


def test_speedup_positional_names_arguments_that_do_not_broadcast():
    # numpy's "operands could not be broadcast together with shapes (2,3) (3,3)" named
    # neither argument; optimal_gamma_positional already named them.
    acceptance = [[0.8, 0.5], [0.5, 0.5]]
    with pytest.raises(InvalidParameterError, match=r"acceptance.shape\[:-1\] and c .*c \(3,\)"):
        sp.speedup_positional(acceptance, [0.1, 0.2, 0.3])
    with pytest.raises(InvalidParameterError, match=r"acceptance.shape\[:-1\] and c"):
        sp.optimal_gamma_positional(acceptance, [0.1, 0.2, 0.3])
    # What does broadcast still does, entry by entry as Theorem 3.8 in Fractions.
    out = sp.speedup_positional(acceptance, [0.1, 0.2])
    for row, c in enumerate((0.1, 0.2)):
        P = np.cumprod(acceptance[row])
        S = [(1 + P[:g].sum()) / (g * c + 1) for g in range(3)]
        np.testing.assert_allclose(out[row], S, rtol=1e-15)


# --------------------------------------------------------------------------- SpecDec++


def histories(values, probs, T, k_max):
    """Every history of drawn value indices with positive probability: (history, prob, P)."""
    out = []

    def walk(h, prob, P):
        out.append((h, prob, P))
        if len(h) == k_max:
            return
        row = probs if T is None or not h else T[h[-1]]
        for i, v in enumerate(values):
            if row[i]:
                walk((*h, i), prob * row[i], P * v)

    walk((), Fraction(1), Fraction(1))
    return out


def rule_speedup(nodes, go_on, t_draft, t_target):
    """Exact t_t E[tokens] / E[cost] of the rule that drafts on from the histories in go_on."""
    tokens, cost = Fraction(1), Fraction(t_target)
    for h, prob, P in nodes:
        if h and all(h[:i] in go_on for i in range(len(h))):  # drafted: every prefix went on
            tokens += prob * P
            cost += prob * t_draft
    return t_target * tokens / cost


def brute_force(values, probs, t_draft, t_target, T, k_max):
    """Best speedup over every history-dependent stopping rule, and every fixed length."""
    nodes = histories(values, probs, T, k_max)
    deciding = [h for h, _, _ in nodes if len(h) < k_max]
    best = max(
        rule_speedup(nodes, {h for h, b in zip(deciding, bits) if b}, t_draft, t_target)
        for bits in itertools.product([False, True], repeat=len(deciding))
    )
    fixed = [
        rule_speedup(nodes, {h for h in deciding if len(h) < g}, t_draft, t_target)
        for g in range(k_max + 1)
    ]
    return nodes, best, fixed


F = Fraction
# values, probabilities, transition (None: i.i.d.), t_draft, t_target, k_max
SPECDECPP_CASES = [
    ([F(1, 5), F(9, 10)], [F(1, 3), F(2, 3)], None, F(1, 5), F(1), 3),
    ([F(1, 2), F(1)], [F(1, 2), F(1, 2)], None, F(1, 10), F(3), 3),
    ([F(0), F(3, 5), F(19, 20)], [F(1, 4), F(1, 4), F(1, 2)], None, F(1, 20), F(1), 2),
    # Markov chains: sticky, anti-correlated, and one whose initial law differs from both rows.
    (
        [F(3, 10), F(19, 20)],
        [F(1, 2), F(1, 2)],
        [[F(9, 10), F(1, 10)], [F(1, 5), F(4, 5)]],
        F(3, 20),
        F(1),
        3,
    ),
    (
        [F(1, 10), F(9, 10)],
        [F(1, 4), F(3, 4)],
        [[F(1, 5), F(4, 5)], [F(7, 10), F(3, 10)]],
        F(1, 10),
        F(2),
        3,
    ),
    ([F(2, 5), F(1)], [F(1), F(0)], [[F(1, 2), F(1, 2)], [F(0), F(1)]], F(1, 4), F(1), 3),
]


@pytest.mark.parametrize(("values", "probs", "T", "t_draft", "t_target", "k_max"), SPECDECPP_CASES)
@pytest.mark.parametrize("method", ["dinkelbach", "lp"])
def test_specdecpp_against_every_history_dependent_rule(
    values, probs, T, t_draft, t_target, k_max, method
):
    nodes, best, fixed = brute_force(values, probs, t_draft, t_target, T, k_max)
    acceptance = ([float(v) for v in values], [float(p) for p in probs])
    transition = None if T is None else [[float(x) for x in row] for row in T]
    r = solve_specdecpp(
        acceptance,
        float(t_draft),
        t_target=float(t_target),
        transition=transition,
        k_max=k_max,
        method=method,
    )
    # HiGHS solves to ~1e-9; Dinkelbach's backward induction is exact up to rounding.
    rel = 1e-8 if method == "lp" else 1e-13
    assert r.speedup == pytest.approx(float(best), rel=rel)
    assert r.average_cost == pytest.approx(float(t_target / best), rel=rel)
    assert r.cost_per_round == pytest.approx(
        float(t_target) + float(t_draft) * r.drafts_per_round, rel=1e-12
    )
    assert float(t_target) * r.tokens_per_round / r.cost_per_round == pytest.approx(
        float(best), rel=rel
    )
    # Best fixed draft length, shortest on ties.
    g = max(range(k_max + 1), key=lambda k: (fixed[k], -k))
    assert (r.fixed_gamma, r.fixed_speedup) == (g, pytest.approx(float(fixed[g]), rel=1e-13))
    # The myopic rule "continue iff lambda* P E[next a | history] > t_draft", run on the tree.
    lam = Fraction(r.average_cost)

    def mean_next(h):
        row = probs if T is None or not h else T[h[-1]]
        return sum(w * v for w, v in zip(row, values))

    myopic = {h for h, _, P in nodes if len(h) < k_max and lam * P * mean_next(h) > t_draft}
    assert r.myopic_speedup == pytest.approx(
        float(rule_speedup(nodes, myopic, t_draft, t_target)), rel=1e-12
    )
    # The reported threshold(s) reproduce the optimum: stop iff 1 - P >= h (per last value).
    # i.i.d.: a threshold policy is optimal (docs/theory.md §5.4); these chains have one too.
    assert r.is_threshold
    h = np.atleast_1d(r.threshold)

    def goes_on(hist, P):
        # Markov: one h per last value; the root belongs to every group, so any h decides it.
        hh = h[hist[-1]] if T is not None and hist else h[0]
        return bool(np.isposinf(hh)) or 1 - P < F(hh)

    go_on = {hist for hist, _, P in nodes if len(hist) < k_max and goes_on(hist, P)}
    assert float(rule_speedup(nodes, go_on, t_draft, t_target)) == pytest.approx(
        float(best), rel=rel
    )
    if T is None:
        assert evaluate_threshold_policy(
            acceptance, float(t_draft), float(h[0]), t_target=float(t_target), k_max=k_max
        ) == pytest.approx(float(best), rel=rel)


def test_threshold_rule_stops_at_a_state_whose_rejection_probability_equals_h():
    # "stop iff 1 - P >= h": with a = 1/2 and h = 1/2 the rule stops after one draft
    # (1 - P = 1/2), so S = (1 + 1/2) / (1 + 0.1); going on to two would give 1.75 / 1.2.
    assert evaluate_threshold_policy({0.5: 1.0}, 0.1, 0.5, k_max=5) == pytest.approx(
        1.5 / 1.1, rel=1e-15
    )
    assert evaluate_threshold_policy({0.5: 1.0}, 0.1, 0.75, k_max=5) == pytest.approx(
        1.75 / 1.2, rel=1e-15
    )


@pytest.mark.parametrize("unit", [1e-15, 1e-3, 1e3, 1e12])
def test_specdecpp_does_not_depend_on_the_unit_of_time(unit):
    # Costs in seconds, milliseconds or hours describe the same process; Dinkelbach's stop
    # rule is relative to t_target (an absolute 1e-12 stopped at once when t_target ~ 1e-15).
    D = {0.95: 0.8, 0.3: 0.2}
    ref = solve_specdecpp(D, 0.2, k_max=10)
    r = solve_specdecpp(D, 0.2 * unit, t_target=unit, k_max=10)
    assert r.speedup == pytest.approx(ref.speedup, rel=1e-12)
    assert r.average_cost == pytest.approx(ref.average_cost * unit, rel=1e-12)
    assert r.drafts_per_round == pytest.approx(ref.drafts_per_round, rel=1e-12)
    assert (r.fixed_gamma, r.status) == (ref.fixed_gamma, "optimal")


def test_specdecpp_refuses_probabilities_that_sum_to_one_only_roughly():
    # 1e-9 is the stated tolerance: 1 + 1e-6 is a typo or a truncated table, not rounding.
    with pytest.raises(InvalidParameterError, match=r"must sum to 1; they sum to 1\.000001"):
        solve_specdecpp(([0.3, 0.9], [0.5, 0.500001]), 0.1)
    with pytest.raises(InvalidParameterError, match="row 1 must sum to 1"):
        solve_specdecpp(([0.3, 0.9], [0.5, 0.5]), 0.1, transition=[[0.5, 0.5], [0.2, 0.800001]])
    # Within it: accepted (and renormalised: the same answer as the exact law).
    a = solve_specdecpp(([0.3, 0.9], [0.5, 0.5 + 1e-12]), 0.1, k_max=5)
    b = solve_specdecpp(([0.3, 0.9], [0.5, 0.5]), 0.1, k_max=5)
    assert a.speedup == pytest.approx(b.speedup, rel=1e-11)
