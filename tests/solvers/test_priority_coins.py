"""The priority-coin rule (n >= 3 drafts without replacement): its marginal, reach and refusals.

Oracles: the draft-set law enumerated (:func:`spectheory.drafting.set_law_row`, exact in
Fractions) for the marginal of the one-integral kernel; the bound by enumeration and by the
dual's own integral (:func:`spectheory.solve_bound`) for the acceptance; and the fact that
every draft set selects exactly one token (the marginal sums to 1) for the quadrature at
vocabularies too large to enumerate.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from spectheory._errors import InvalidParameterError
from spectheory.drafting import set_law_row
from spectheory.exact import exact_row
from spectheory.solvers import _coin_mixture as _mix
from spectheory.solvers import priority_coins as pc
from spectheory.solvers.ot_dual import solve_bound
from spectheory.solvers.priority_coins import (
    priority_coin_marginal,
    priority_coin_plan,
    selection_weights,
)
from spectheory.verifiers.optimal import optimal

from ..verifiers._rows import peaked_pair


def _random_rows(count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        V = int(rng.integers(4, 9))
        n = int(rng.integers(3, min(6, V)))
        c = float(rng.choice([0.1, 0.3, 1.0]))
        p = rng.dirichlet([c] * V)
        q = rng.dirichlet([c] * V)
        q = np.maximum(q, 1e-7)  # n distinct drafts need n tokens of positive mass
        yield p, q / q.sum(), n


def _rational_rows(count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        V = int(rng.integers(4, 7))
        n = int(rng.integers(3, V))
        pw = rng.integers(0, 9, V)
        pw[0] += 1
        qw = rng.integers(1, 9, V)
        yield (np.array([F(int(x), int(pw.sum())) for x in pw], dtype=object),
               np.array([F(int(x), int(qw.sum())) for x in qw], dtype=object), n)


def test_selection_weights_are_first_success_else_last():
    w = selection_weights([F(1, 2), F(1, 3), F(1, 4)])
    assert w == [F(1, 2), F(1, 6), F(1, 3)] and sum(w) == 1
    assert selection_weights([F(1, 5)]) == [1]  # a lone draft is selected


def test_integral_marginal_matches_the_enumerated_law():
    """The kernel's marginal (one integral over the clock time) against the sum over every
    draft set of its probability times the rule's selection weights, at the plan's own order
    and coins: equal to 1e-13 on 80 random rows, and summing to 1."""
    worst = 0.0
    for p, q, n in _random_rows(80, seed=11):
        plan = priority_coin_plan(p, q, n)
        law = {k: float(v) for k, v in set_law_row(q, n, "without_replacement").items()}
        y = priority_coin_marginal(law, plan.preferred, plan.rank, plan.kappa, p.size,
                                   plan.weights)
        worst = max(worst, float(np.abs(y - plan.y).max()))
        assert abs(plan.total - 1.0) <= 1e-13
    assert worst <= 1e-13, worst


def test_integral_marginal_on_a_peaked_draft():
    """A draft with 1 - 1e-9 on one token: the grid must reach times of order 1e10."""
    p = np.array([0.2, 0.3, 0.1, 0.25, 0.15])
    q = np.array([1 - 4e-9, 1e-9, 1e-9, 1e-9, 1e-9])
    plan = priority_coin_plan(p, q, 3)
    law = {k: float(v) for k, v in set_law_row(q, 3, "without_replacement").items()}
    y = priority_coin_marginal(law, plan.preferred, plan.rank, plan.kappa, 5,
                                   plan.weights)
    np.testing.assert_allclose(plan.y, y, rtol=0, atol=1e-13)


def test_reaches_the_bound_on_random_rows():
    """Reach on 120 random rows with V <= 8 and n = 3..5: every row (selection acceptance
    equal to the bound to 1e-12).  The single-rule search misses one row of bound 1 (``T`` is
    every token and the marginal must equal ``p`` exactly); column generation over the
    priority orders reaches it with a mixture, whose marginal is checked by enumeration."""
    tight = mixed = 0
    for p, q, n in _random_rows(120, seed=4):
        plan = priority_coin_plan(p, q, n)
        alpha = float(np.asarray(solve_bound(p, q, n, "without_replacement").value)[()])
        assert plan.bound == pytest.approx(alpha, abs=1e-15)
        assert plan.reached and plan.alpha_value == pytest.approx(alpha, abs=1e-12), (p, q, n)
        assert plan.shortfall <= 1e-12
        if plan.weights.size > 1:
            mixed += 1
            assert plan.preferred.all() and alpha == pytest.approx(1.0, abs=1e-12), (p, q, n)
            law = {k: float(v) for k, v in set_law_row(q, n, "without_replacement").items()}
            y = priority_coin_marginal(law, plan.preferred, plan.rank, plan.kappa, p.size,
                                       plan.weights)
            np.testing.assert_allclose(y, plan.y, rtol=0, atol=1e-13)
            np.testing.assert_allclose(y, p, rtol=0, atol=1e-12)
        tight += bool(plan.preferred.all())
    assert tight >= 25 and mixed == 1, (tight, mixed)


#: A row (V = 6, n = 4, bound 1) that no order of the priority-coin rule reaches.
NO_ORDER_P = [0.3591840758117434, 0.001361368592851779, 0.6354523131933472,
              7.223122266412505e-10, 0.003206088787953182, 0.0007961528917923398]
NO_ORDER_Q = [0.007393207964735896, 0.8747583795491694, 0.012711095596483913,
              0.017568150429409315, 0.0001496606414291932, 0.08741950581877242]


def test_a_row_that_no_order_reaches_is_reached_by_a_mixture():
    """The single rule's limit, by brute force over every order: on this row the greedy coins
    of all 720 orders leave the marginal at least 1.9e-3 from the bound (the coins are forced:
    with bound 1 every token needs y = p exactly).  A mixture of priority rules reaches it
    (docs/theory.md §3.17): its enumerated marginal is p to 1e-12, and its weights are a
    probability vector.  The uniform random-utility rule (§3.16) reaches it too."""
    import itertools

    from spectheory.solvers.random_utility import random_utility_plan

    p, q = np.array(NO_ORDER_P), np.array(NO_ORDER_Q)
    law = {k: float(v) for k, v in set_law_row(q, 4, "without_replacement").items()}
    preferred = np.ones(6, dtype=bool)
    best = np.inf
    for order in itertools.permutations(range(6)):
        kappa, y = np.zeros(6), np.zeros(6)
        pc._greedy_enumerated(law, np.array(order), p, preferred, kappa, y)
        best = min(best, float(np.maximum(y - p, 0).sum()))
    assert best > 1.9e-3
    plan = priority_coin_plan(p, q, 4)
    assert plan.reached and plan.bound == pytest.approx(1.0, abs=1e-12)
    assert plan.weights.size > 1 and "mixture" in plan.message
    assert (plan.weights > 0).all() and plan.weights.sum() == pytest.approx(1.0, abs=1e-15)
    for rank in plan.rank:  # each component orders the whole part
        assert sorted(rank.tolist()) == list(range(6))
    y = priority_coin_marginal(law, plan.preferred, plan.rank, plan.kappa, 6, plan.weights)
    np.testing.assert_allclose(y, plan.y, rtol=0, atol=1e-13)
    np.testing.assert_allclose(y, p, rtol=0, atol=1e-12)
    assert random_utility_plan(p, q, 4).reached


def test_mixture_needs_its_weights():
    from spectheory._errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="weights"):
        priority_coin_marginal({}, np.ones(2, dtype=bool), np.zeros((2, 2), dtype=int),
                               np.zeros((2, 2)), 2)


def test_exact_plan_and_verifier_in_fractions():
    """Fraction rows: the plan's marginal is the enumerated one exactly, the plan reaches the
    exact bound, and ``optimal`` is exactly lossless with acceptance alpha*_wor (its coins
    enumerated by ``exact_row``)."""
    checked = 0
    for p, q, n in _rational_rows(24, seed=2):
        plan = priority_coin_plan(p, q, n)
        law = set_law_row(q, n, "without_replacement")
        y = priority_coin_marginal(law, plan.preferred, plan.rank, plan.kappa, p.size,
                                   plan.weights)
        assert list(y) == list(plan.y)
        exact = solve_bound(p, q, n, "without_replacement", method="enumerate").exact_value
        assert plan.reached and plan.alpha_value == exact, (p, q, n)
        out, acc = exact_row(optimal, p, q, n, "without_replacement")
        assert list(out) == list(p) and acc == exact
        checked += 1
    assert checked == 24


def test_a_plan_that_misses_stays_lossless_and_says_so(monkeypatch):
    """With the order search cut to one pass on one order and mixing off, a row the first pass
    misses is reported (``reached`` False, the gap in the message); the verifier stays exactly
    lossless at the plan's own (lower) acceptance."""
    from spectheory.verifiers.priority_coins import clear_coin_plan_cache

    monkeypatch.setattr(pc, "MAX_PASSES", 1)
    monkeypatch.setattr(pc, "MIX_MAX_TOKENS", 0)
    monkeypatch.setattr(pc, "_INITIAL_ORDERS", (("p", 1),))
    clear_coin_plan_cache()
    missed = None
    for p, q, n in _rational_rows(60, seed=9):
        plan = priority_coin_plan(p, q, n)
        if not plan.reached:
            missed = (p, q, n, plan)
            break
    assert missed is not None
    p, q, n, plan = missed
    exact = solve_bound(p, q, n, "without_replacement", method="enumerate").exact_value
    assert plan.alpha_value < exact and plan.status == "exact" and "below the bound" in (
        plan.message)
    out, acc = exact_row(optimal, p, q, n, "without_replacement")
    assert list(out) == list(p) and acc >= plan.alpha_value
    clear_coin_plan_cache()


@pytest.mark.parametrize("n", [4, 8])
def test_full_vocabulary_rows(n):
    """V = 5,000 peaked rows: reached, the marginal sums to 1 to 1e-13 (every draft set
    selects one token, so the quadrature's error shows there), and the inequalities that
    make the selection acceptance the bound hold: y <= p on T, y >= p on H*."""
    p, q = peaked_pair(5_000, seed=n)
    plan = priority_coin_plan(p[0], q[0], n)
    assert plan.reached, plan.message
    assert abs(plan.total - 1.0) <= 1e-13
    T, H = plan.preferred, ~plan.preferred
    assert np.all(plan.y[T] <= p[0][T] * (1 + 1e-12) + 1e-20)
    assert np.all(plan.y[H] >= p[0][H] * (1 - 1e-12) - 1e-20)
    assert plan.bound == pytest.approx(
        float(np.asarray(solve_bound(p, q, n, "without_replacement").value).reshape(-1)[0]),
        abs=1e-15)


def test_bad_input_is_refused_by_name():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.5, 0.5, 0.0])
    with pytest.raises(InvalidParameterError, match="n >= 2"):
        priority_coin_plan(p, q, 1)
    with pytest.raises(InvalidParameterError, match="at least 3 tokens; q has 2"):
        priority_coin_plan(p, q, 3)
    with pytest.raises(InvalidParameterError, match="one row"):
        priority_coin_plan(np.tile(p, (2, 1)), np.tile([0.4, 0.3, 0.3], (2, 1)), 2)
    tiny = np.array([0.5, 0.5 - 1e-300, 1e-300, 0.0])
    with pytest.raises(InvalidParameterError, match="outside its 2 largest tokens is 1e-300"):
        priority_coin_plan(np.full(4, 0.25), tiny, 3)


def test_reached_means_equal_to_the_bound_to_1e_12():
    """The certificate's tolerance: a gap of 2e-12 is a miss, whichever side; Fractions
    must be equal."""
    assert pc._reached(0.5 + 1e-12, 0.5, False) and pc._reached(0.5 - 9e-13, 0.5, False)
    assert not pc._reached(0.5 - 2e-12, 0.5, False)
    assert not pc._reached(0.5 + 2e-12, 0.5, False)
    assert pc._reached(F(1, 3), F(1, 3), True)
    assert not pc._reached(F(1, 3), F(1, 3) - F(1, 10**30), True)


def test_the_order_repair_reaches_where_the_first_pass_misses(monkeypatch):
    """From the ascending p / P(a in S') order alone, this 2,000-token row misses on the
    first pass (about 4e-3 short) and the repairs (misses moved to the front, twice)
    reach the bound: the search is what reaches, not the initial order."""
    monkeypatch.setattr(pc, "_INITIAL_ORDERS", (("p/inclusion", pc.MAX_PASSES),))
    shortfalls = []
    real = pc._part_shortfall

    def spy(y, p, top):
        shortfalls.append(real(y, p, top))
        return shortfalls[-1]

    monkeypatch.setattr(pc, "_part_shortfall", spy)
    p, q = peaked_pair(2_000, seed=0)
    plan = priority_coin_plan(p[0], q[0], 4)
    assert plan.reached, plan.message
    assert max(shortfalls) > 1e-3 and plan.passes >= 4


def test_a_row_of_bound_1_needs_its_short_tokens_moved_first(monkeypatch):
    """Bound 1 (T is every token, y must equal p): a token short of its target makes a later
    one overfed, so the repair must move the short tokens, not the overfed ones.  From the
    ascending p / P(a in S') order alone, this row (the 42nd of the seeded sample) is reached
    after one repair; moving the overfed tokens first never reaches it with a single rule (the
    mixture, switched off here, would then reach it after 24 wasted passes)."""
    monkeypatch.setattr(pc, "_INITIAL_ORDERS", (("p/inclusion", pc.MAX_PASSES),))
    monkeypatch.setattr(pc, "MIX_MAX_TOKENS", 0)
    p, q, n = list(_random_rows(42, seed=100))[41]
    plan = priority_coin_plan(p, q, n)
    assert plan.bound == pytest.approx(1.0, abs=1e-12) and plan.preferred.all()
    assert plan.reached and plan.passes == 2
    real = pc._violations
    monkeypatch.setattr(pc, "_violations", lambda *args: real(*args)[::-1])
    assert not priority_coin_plan(p, q, n).reached


def test_exact_mixtures_in_fractions():
    """Fraction rows that one rule misses (the V = 6 row, rationalised, and two seeded rational
    rows of bound 1): the LP's float solution is made exact (the rows it meets with equality
    solved in Fractions), so the mixture's weights are Fractions summing to 1, its enumerated
    marginal is p exactly, and ``optimal``'s exact law is p with acceptance exactly 1."""
    from spectheory.exact._law import exact_row
    from spectheory.verifiers.optimal import optimal

    p6 = np.array([F(x) for x in NO_ORDER_P], dtype=object)
    q6 = np.array([F(x) for x in NO_ORDER_Q], dtype=object)
    rows = [(p6 / p6.sum(), q6 / q6.sum(), 4)]
    rows += [[r for r in _rational_rows(20, seed)][i] for seed, i in ((35, 11), (38, 18))]
    for p, q, n in rows:
        plan = priority_coin_plan(p, q, n)
        assert plan.reached and plan.bound == 1 and plan.weights.size > 1, plan.message
        assert all(isinstance(w, F) and w > 0 for w in plan.weights) and sum(plan.weights) == 1
        law = set_law_row(q, n, "without_replacement")
        y = priority_coin_marginal(law, plan.preferred, plan.rank, plan.kappa, p.size,
                                   plan.weights)
        assert list(y) == list(plan.y) == list(p)
        if p.size == 6 and n == 4:
            continue  # the rationalised row's huge denominators: the law below is slow
        out, acc = exact_row(optimal, p, q, n, "without_replacement")
        assert list(out) == list(p) and acc == 1


def test_a_mixture_cut_short_keeps_the_single_rule_and_says_so(monkeypatch):
    """With no round of column generation the mixture cannot beat the single rule: the plan
    keeps it (one component), misses, and says that a mixture was tried."""
    monkeypatch.setattr(_mix, "MIX_ROUNDS", 0)
    plan = priority_coin_plan(np.array(NO_ORDER_P), np.array(NO_ORDER_Q), 4)
    assert not plan.reached and plan.weights.tolist() == [1.0] and plan.rank.shape == (1, 6)
    assert "nor a mixture" in plan.message


def test_exact_weights_solve_the_tight_rows_or_refuse():
    """Two columns (1/2, 1/2) and (1, 0) of a part T: the target (3/4, 1/4) is met exactly by
    weights (1/2, 1/2), found from the rows the float mixture meets; the target (1/4, 3/4)
    is met by no mixture (every column puts 1/2 or more on the first token): None."""
    ys = [np.array([F(1, 2), F(1, 2)], dtype=object), np.array([F(1), F(0)], dtype=object)]
    assert _mix.exact_weights(ys, np.array([F(3, 4), F(1, 4)]), True,
                              np.array([0.5, 0.5])) == [F(1, 2), F(1, 2)]
    assert _mix.exact_weights(ys, np.array([F(1, 4), F(3, 4)]), True,
                              np.array([1.0, 0.0])) is None
    # H*: the mixture must reach at least the target; (3/4, 1/4) again, from above
    assert _mix.exact_weights(ys, np.array([F(3, 4), F(1, 4)]), False,
                              np.array([0.5, 0.5])) == [F(1, 2), F(1, 2)]


def test_a_stalled_mixture_lp_keeps_the_single_rule(monkeypatch):
    """HiGHS stopped at its iteration limit (here one simplex iteration): column generation
    stops, the plan keeps its single rule, misses, and says a mixture was tried; no error."""
    real = _mix.linprog

    def one_iteration(*args, **kwargs):
        return real(*args, **{**kwargs, "options": {"maxiter": 1}})

    monkeypatch.setattr(_mix, "linprog", one_iteration)
    plan = priority_coin_plan(np.array(NO_ORDER_P), np.array(NO_ORDER_Q), 4)
    assert not plan.reached and plan.weights.tolist() == [1.0] and "nor a mixture" in plan.message
