"""``pair_tiers``: the closed-form marginal, exact losslessness, and reaching the bound.

Oracles: exact enumeration of every ordered draw and coin in Fractions
(:func:`spectheory.exact.exact_row`, ``ordered_draft_law``), the bound
without replacement by enumeration over draft sets and by HiGHS
(:func:`spectheory.solve_bound`), and ``check_lossless`` at V = 49,152 with its
stated false-alarm rate.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from spectheory._errors import InvalidDistributionError, InvalidParameterError
from spectheory.exact import exact_row
from spectheory.exact._tuples import ordered_draft_law
from spectheory.solvers.ot_dual import bound, solve_bound
from spectheory.solvers.pair_tiers import pair_marginal, pair_tier_plan
from spectheory.verifiers.pair_tiers import pair_tiers

from ._rows import peaked_pair


def _fractions(w):
    w = [int(x) for x in w]
    return np.array([F(x, sum(w)) for x in w], dtype=object)


def _marginal_by_enumeration(q, tier, alpha):
    """P(selected = a), summing the rule over every ordered pair without replacement."""
    g = np.array([F(0)] * len(q), dtype=object)
    for (a, b), prob in ordered_draft_law(q, 2, "without_replacement"):
        if tier[a] != tier[b]:
            g[a if tier[a] < tier[b] else b] += prob
        else:
            g[a] += prob * alpha[a]
            g[b] += prob * (1 - alpha[a])
    return g


@pytest.mark.parametrize("seed", range(6))
def test_closed_form_marginal_equals_enumeration_exactly(seed):
    rng = np.random.default_rng(seed)
    V = int(rng.integers(2, 7))
    q = _fractions(rng.integers(1, 9, V))
    tier = rng.integers(0, 3, V)
    alpha = np.array([F(int(k), 7) for k in rng.integers(0, 8, V)], dtype=object)
    assert list(pair_marginal(q, tier, alpha)) == list(_marginal_by_enumeration(q, tier, alpha))


def _instances(count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        V = int(rng.integers(3, 6))
        yield _fractions(rng.integers(0, 6, V) + (np.arange(V) == 0)), _fractions(
            rng.integers(1, 7, V)
        )


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_law_is_p_and_acceptance_between_selection_and_bound(seed):
    reached = 0
    for p, q in _instances(10, seed):
        law, acc = exact_row(pair_tiers, p, q, 2, "without_replacement")
        assert list(law) == list(p)
        plan = pair_tier_plan(p, q)
        hi = solve_bound(p, q, 2, "without_replacement", method="enumerate").exact_value
        assert plan.bound == hi
        assert plan.alpha_value <= acc <= hi
        if plan.reached:
            assert acc == hi
            reached += 1
    assert reached >= 7  # most small rational rows; the others still exact and lossless


def test_instance_a_reaches_the_bound_exactly():
    """docs/theory.md §8.1, instance A, n = 2 without replacement: 139/140 (RRS: 7/8)."""
    p = _fractions([3, 4, 3])
    q = _fractions([6, 3, 1])
    plan = pair_tier_plan(p, q)
    assert plan.reached and plan.alpha_value == F(139, 140)
    assert exact_row(pair_tiers, p, q, 2, "without_replacement")[1] == F(139, 140)


def test_reached_rows_equal_the_lp_bound():
    """Float rows: where the plan says reached, its acceptance is HiGHS's optimum to 1e-9;
    where it does not, it is below (and at least the plain rule's)."""
    rng = np.random.default_rng(4)
    reached = 0
    for _ in range(120):
        V = int(rng.integers(3, 8))
        p, q = rng.dirichlet(np.full(V, 0.6)), rng.dirichlet(np.full(V, 0.6))
        plan = pair_tier_plan(p, q)
        lp = solve_bound(p, q, 2, "without_replacement", method="lp").value
        assert plan.alpha_value <= lp + 1e-9
        if plan.reached:
            reached += 1
            assert abs(plan.alpha_value - lp) < 1e-9
        else:
            h = np.asarray(solve_bound(p, q, 2, "without_replacement").certificate).reshape(-1)
            plain = pair_marginal(q, h.astype(int), np.ones(V))
            assert plan.alpha_value >= np.minimum(p, plain).sum() - 1e-15
    # A measurement on this seed (about 93% of such rows), kept as a regression check.
    assert reached >= 105


def test_check_lossless_at_full_vocabulary():
    """check_lossless at V = 49,152, n = 2 without replacement, false-alarm rate 1e-6; the Monte
    Carlo acceptance lies within 5 standard errors of [selection acceptance, bound]."""
    from spectheory.sim.check import check_lossless

    p, q = peaked_pair(49_152, seed=17)
    p, q = p[0], q[0]
    plan = pair_tier_plan(p, q)
    trials = 3000
    report = check_lossless(
        pair_tiers, p, q, n=2, sampling="without_replacement", trials=trials, rng=1
    )
    assert not report.lossy and not report.exceeds_bound
    se = 0.5 / np.sqrt(trials)
    assert plan.alpha_value - 5 * se <= report.acceptance <= float(plan.bound) + 5 * se
    assert plan.bound == pytest.approx(bound(p, q, 2, "without_replacement"), abs=1e-15)


def test_bad_input_is_refused_by_name():
    p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    from spectheory.coins import ReplayCoins

    with pytest.raises(InvalidParameterError, match=r"n=3, sampling='without_replacement'"):
        pair_tiers(p, q, (0, 1, 2), ReplayCoins([0.5] * 4))
    with pytest.raises(InvalidParameterError, match=r"n=2, sampling='iid'"):
        pair_tiers(p, q, (0, 1), ReplayCoins([0.5] * 4), sampling="iid")
    with pytest.raises(InvalidParameterError, match="at least two tokens; q has 1"):
        pair_tier_plan(p, np.array([1.0, 0.0, 0.0]))


def test_plan_checks_its_rows_as_every_entry_point():
    """A row off by 1e-10 in sum is renormalised, so the plan is that of the rows simulate
    sees; a batch or a negative entry is refused by name."""
    rng = np.random.default_rng(2)
    p, q = rng.dirichlet(np.ones(30)), rng.dirichlet(np.ones(30))
    from spectheory._validate import as_distribution_pair

    P, Q, _ = as_distribution_pair(p * (1 + 1e-10), q)
    off, clean = pair_tier_plan(p * (1 + 1e-10), q), pair_tier_plan(P[0], Q[0])
    assert off.alpha_value == clean.alpha_value and off.bound == clean.bound
    np.testing.assert_array_equal(off.y, clean.y)
    with pytest.raises(InvalidParameterError, match="one row"):
        pair_tier_plan(np.tile(p, (2, 1)), np.tile(q, (2, 1)))
    bad = q.copy()
    bad[0], bad[1] = -bad[0], bad[1] + 2 * bad[0]
    with pytest.raises(InvalidDistributionError, match="draft has a negative entry"):
        pair_tier_plan(p, bad)
