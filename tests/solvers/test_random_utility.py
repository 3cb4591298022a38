"""The uniform random-utility rule: it reaches the bound for any n and draft law (§3.16).

Oracles: exact rational integration (the choice probabilities in Fractions),
finite differences (gradient and Hessian of the expected maximum), Monte Carlo of
the rule itself with U[0, 1] noise (chi-square and z tests at false-alarm rate
1e-6 each), and the bound by the dual (:func:`spectheory.solve_bound`, itself
tested against HiGHS and enumeration) and by enumeration over draft sets for
Fraction input.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from scipy import stats

from spectheory._errors import InstanceTooLargeError, InvalidParameterError
from spectheory.exact import ordered_draft_law
from spectheory.solvers import random_utility
from spectheory.solvers.random_utility import (
    _selection_sets,
    random_utility_marginal,
    random_utility_plan,
    uniform_choice,
    uniform_choice_jacobian,
    uniform_expected_max,
)

#: Per-test false-alarm rate of the Monte Carlo tests.
ALPHA = 1e-6
SAMPLINGS = ("iid", "without_replacement", "greedy")


def _triangular(d):
    """P(d + U_a > U_b) for U i.i.d. U[0, 1]: the distribution function of U_b - U_a at d."""
    if d >= 1:
        return F(1)
    if d <= -1:
        return F(0)
    return 1 - (1 - d) ** 2 / 2 if d >= 0 else (1 + d) ** 2 / 2


@pytest.mark.parametrize("d", [F(0), F(1, 3), F(-2, 5), F(1), F(7, 4), F(-1), F(-9, 8)])
def test_two_scores_give_the_triangular_distribution(d):
    w = uniform_choice([d, F(0)])
    assert w == [_triangular(d), 1 - _triangular(d)]


def test_choice_is_exact_and_sums_to_one():
    rng = np.random.default_rng(0)
    for k in range(1, 7):
        mu = [F(int(x), 7) for x in rng.integers(-12, 12, size=k)]
        w = uniform_choice(mu)
        assert sum(w) == 1
        assert all(x >= 0 for x in w)
        assert np.allclose([float(x) for x in w], uniform_choice([float(m) for m in mu]),
                           atol=1e-14)
    # a score at least 1 above every other is always selected
    assert uniform_choice([F(3), F(2), F(1, 2)]) == [1, 0, 0]


@pytest.mark.parametrize("seed", range(4))
def test_choice_matches_monte_carlo(seed):
    """Chi-square of 200,000 argmax draws against the exact probabilities."""
    rng = np.random.default_rng(seed)
    mu = rng.uniform(-1.0, 1.0, size=5)
    w = np.asarray(uniform_choice(list(mu)))
    draws = np.argmax(mu + rng.random((200_000, 5)), axis=1)
    counts = np.bincount(draws, minlength=5)
    keep = w > 0
    assert counts[~keep].sum() == 0
    assert stats.chisquare(counts[keep], 200_000 * w[keep]).pvalue > ALPHA


@pytest.mark.parametrize("seed", range(4))
def test_choice_is_the_gradient_of_the_expected_max_and_the_jacobian_its_hessian(seed):
    rng = np.random.default_rng(10 + seed)
    mu = rng.uniform(-1.5, 1.5, size=4)
    h = 1e-6
    w = np.asarray(uniform_choice(list(mu)))
    jac = np.asarray(uniform_choice_jacobian(list(mu)))
    for b in range(4):
        up, down = mu.copy(), mu.copy()
        up[b] += h
        down[b] -= h
        grad = (uniform_expected_max(list(up)) - uniform_expected_max(list(down))) / (2 * h)
        assert grad == pytest.approx(w[b], abs=1e-8)
        column = (np.asarray(uniform_choice(list(up))) - np.asarray(uniform_choice(list(down))))
        assert np.allclose(column / (2 * h), jac[:, b], atol=1e-7)
    assert np.allclose(jac, jac.T)
    assert np.linalg.eigvalsh(jac).min() > -1e-12


def _rows(n, count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        V = int(rng.integers(max(n, 2), 8))
        yield rng.dirichlet(np.full(V, 0.3)), rng.dirichlet(np.full(V, 0.3))


@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_rule_reaches_the_bound(sampling, n):
    """40 random rows, V = n..7: the selection acceptance equals the bound to 1e-12.

    Positive controls: on most rows the fair rule (all scores 0, the preference for
    T kept) misses the bound, and without replacement some rows need two scores of one
    draft set at least 1 apart (a draft selected with probability 0 or 1)."""
    fair_misses = wide = 0
    for p, q in _rows(n, 40, 100 * n + len(sampling)):
        plan = random_utility_plan(p, q, n, sampling)
        assert plan.reached, (p, q, plan.bound - plan.alpha_value)
        assert abs(plan.alpha_value - plan.bound) <= 1e-12
        assert np.all(plan.mu[plan.preferred] <= 0) and np.all(plan.mu[~plan.preferred] >= 0)
        sets = _selection_sets(q, n, sampling, plan.preferred)
        fair = np.minimum(p, random_utility_marginal(sets, [0.0] * p.size, p.size)).sum()
        fair_misses += plan.bound - fair > 1e-6
        wide += any(np.ptp(plan.mu[m]) >= 1 for m, _ in sets if len(m) > 1)
    assert fair_misses >= 10
    if sampling == "without_replacement" and n > 2:
        assert wide >= 1


#: Rows where projected Newton stalls (masses far below the others, scores of almost no
#: curvature), each missing the bound by 1e-9..1e-8 without the coordinate sweeps.
STALLING_ROWS = [
    (3, "without_replacement",
     [7.375018098263626e-10, 1.1178146315287847e-09, 0.7749341462368218, 0.22506585190786185],
     [0.0016615748728479886, 4.499863127781196e-08, 0.7443168285521002, 0.2540215515764206]),
    (3, "without_replacement",
     [2.08019789417966e-09, 0.002375110700137716, 0.41015563406477157, 4.607082464384995e-11,
      0.5874692531088219],
     [4.139255042027382e-05, 0.26767313026269, 0.10320303356157524, 4.822925839693047e-05,
      0.6290342143669175]),
    (3, "greedy",
     [0.8727554618010579, 3.7599002283552575e-15, 2.9598030935986563e-06,
      3.5041993808483805e-07, 0.00021497349487211868, 0.12702618954280656,
      6.493822800239918e-08],
     [0.2397227070751535, 3.0713413623217487e-12, 0.0003074117788076724,
      0.023318254155533555, 0.678896568679179, 0.05360781909662279, 0.00414723921163216]),
]


@pytest.mark.parametrize("n, sampling, p, q", STALLING_ROWS)
def test_coordinate_sweeps_finish_where_newton_stalls(n, sampling, p, q, monkeypatch):
    p, q = np.array(p), np.array(q)
    plan = random_utility_plan(p, q, n, sampling)
    assert plan.reached and abs(plan.bound - plan.alpha_value) <= 1e-12
    # Positive control: without the sweeps the same row is missed.
    monkeypatch.setattr(random_utility, "SWEEPS", 0)
    assert not random_utility_plan(p, q, n, sampling).reached


def test_exact_input_gives_an_exact_marginal_and_acceptance():
    """Fractions: the marginal sums to 1 exactly, the acceptance is a Fraction within
    1e-12 below the bound (enumerated over draft sets), and the residual is a law."""
    p = np.array([F(7, 16), F(8, 16), F(1, 16)], dtype=object)
    q = np.array([F(8, 18), F(5, 18), F(5, 18)], dtype=object)
    for n in (2, 3):
        plan = random_utility_plan(p, q, n)
        assert isinstance(plan.alpha_value, F) and isinstance(plan.bound, F)
        assert sum(plan.y) == 1
        assert 0 <= plan.bound - plan.alpha_value <= F(1, 10**12)
        assert sum(plan.residual) == 1 and all(x >= 0 for x in plan.residual)


def _simulate(plan, p, q, n, sampling, trials, rng):
    """The verifier itself: draft, select by argmax of score plus U[0, 1] noise within
    S' (T's drafts first), then single-draft SD against the marginal y."""
    tuples = ordered_draft_law(q, n, sampling)
    probs = np.array([w for _, w in tuples])
    picks = rng.choice(len(tuples), size=trials, p=probs / probs.sum())
    y, mu = np.asarray(plan.y, dtype=float), plan.mu
    out = np.empty(trials, dtype=np.int64)
    accepted = np.zeros(trials, dtype=bool)
    for i, k in enumerate(picks):
        members = sorted(set(tuples[k][0]))
        inside = [a for a in members if plan.preferred[a]]
        cand = np.asarray(inside or members)
        x = int(cand[np.argmax(mu[cand] + rng.random(cand.size))])
        if rng.random() < min(1.0, p[x] / y[x]):
            out[i], accepted[i] = x, True
        else:
            out[i] = rng.choice(p.size, p=plan.residual)
    return out, accepted


@pytest.mark.parametrize("n, sampling", [(3, "without_replacement"), (4, "without_replacement"),
                                         (3, "iid")])
def test_the_verifier_is_lossless_and_accepts_at_the_bound(n, sampling):
    """30,000 trials of the sampled rule: the output law is p (chi-square) and the
    acceptance is the bound (z test), each at false-alarm rate 1e-6."""
    rng = np.random.default_rng(n)
    p = np.array([0.30, 0.25, 0.2, 0.12, 0.08, 0.05])
    q = np.array([0.05, 0.1, 0.15, 0.2, 0.2, 0.3])
    plan = random_utility_plan(p, q, n, sampling)
    assert plan.reached
    trials = 30_000
    out, accepted = _simulate(plan, p, q, n, sampling, trials, rng)
    assert stats.chisquare(np.bincount(out, minlength=p.size), trials * p).pvalue > ALPHA
    a = float(plan.bound)
    z = (accepted.mean() - a) / np.sqrt(a * (1 - a) / trials)
    assert abs(z) < stats.norm.isf(ALPHA / 2)


def test_bad_input_is_refused_by_name():
    p, q = np.array([0.5, 0.5]), np.array([0.5, 0.5])
    with pytest.raises(InvalidParameterError, match="n"):
        random_utility_plan(p, q, 0)
    with pytest.raises(InvalidParameterError, match="sampling"):
        random_utility_plan(p, q, 2, "poisson")
    with pytest.raises(InvalidParameterError, match="one row"):
        random_utility_plan(np.tile(p, (2, 1)), np.tile(q, (2, 1)), 2)
    with pytest.raises(InvalidParameterError, match="draft"):
        random_utility_plan(np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.5, 0.0]), 3,
                            "without_replacement")
    with pytest.raises(InstanceTooLargeError):
        random_utility_plan(np.full(60, 1 / 60), np.full(60, 1 / 60), 4)
