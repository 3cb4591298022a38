"""The two-draft pair-score rule on float rows.

* Output law of the ``pair_scores`` verifier, enumerated pair by pair from its own
  selection weight (``first_draft_weight``), accept test and residual: it must be ``p``
  (losslessness), and its acceptance the plan's ``alpha_value``.  Oracle: exact enumeration
  of the ordered draws without replacement; tolerance 1e-12.  A float ramp of another slope
  than the plan's compiled window sums is not lossless.
* The refusal of a subnormal rest: ``1 / rest`` overflows for every rest below
  ``1 / DBL_MAX ~ 5.6e-309``, not only below 5.6e-310.
* ``reached`` means ``alpha_value`` within 1e-12 of the bound: a plan left 5e-12 below
  it is not reached, one left 5e-14 below it is.
"""

import numpy as np
import pytest

import spectheory as st
import spectheory.solvers.pair_scores as ps
from spectheory import InvalidParameterError
from spectheory.verifiers._ops import accept_prob
from spectheory.verifiers.pair_scores import first_draft_weight

WOR = "without_replacement"


def _rows(seed, count):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        V = int(rng.integers(3, 7))
        yield rng.dirichlet(np.full(V, 0.8)), rng.dirichlet(np.full(V, 0.8))


def test_verifier_output_law_is_the_target_on_float_rows():
    checked = 0
    for p, q in _rows(5, 25):
        if q.max() > 0.97:
            continue
        pl = ps.pair_score_plan(p, q)
        V = p.size
        law, acc = np.zeros(V), 0.0
        for a in range(V):
            for b in range(V):
                if a == b:
                    continue
                pr = q[a] * q[b] / (1.0 - q[a])
                wa = float(first_draft_weight(pl, a, b))
                for x, wx in ((a, wa), (b, 1.0 - wa)):
                    c = float(accept_prob(p[x], pl.y[x]))
                    law[x] += pr * wx * c
                    law += pr * wx * (1.0 - c) * pl.residual
                    acc += pr * wx * c
        assert law == pytest.approx(p, abs=1e-12), (p, q)
        assert acc == pytest.approx(float(pl.alpha_value), abs=1e-12)
        checked += 1
    assert checked >= 15


@pytest.mark.parametrize("rest", [1e-309, 5e-309, 2e-310])
def test_two_draft_plans_refuse_every_rest_whose_inverse_overflows(rest):
    assert 1.0 / rest == np.inf
    p, q = np.array([0.2, 0.1, 0.7]), np.array([1.0, 0.6 * rest, 0.4 * rest])
    with pytest.raises(InvalidParameterError, match="khisti or optimal_lp"):
        st.acceptance("optimal", p, q, 2, WOR)


def _row_with_two_preferred_tokens():
    for p, q in _rows(9, 200):
        pl = ps.pair_score_plan(p, q)
        if pl.reached and pl.preferred.sum() >= 2 and q.max() < 0.9:
            return p, q
    raise AssertionError("no row found")


@pytest.mark.parametrize(("gap", "reached"), [(5e-12, False), (5e-14, True)])
def test_reached_means_within_1e_12_of_the_bound(monkeypatch, gap, reached):
    p, q = _row_with_two_preferred_tokens()
    solve = ps._solve_part

    def short_by_gap(qs, e, base, pp, sign):
        mu, y, short = solve(qs, e, base, pp, sign)
        if sign < 0:  # preferred part: y <= p there, so alpha drops by exactly what y drops
            y = y.copy()
            y[int(np.argmax(y))] -= gap
        return mu, y, short

    monkeypatch.setattr(ps, "_solve_part", short_by_gap)
    pl = ps.pair_score_plan(p, q)
    left = float(pl.bound) - float(pl.alpha_value)
    assert left == pytest.approx(gap, rel=0.05, abs=2e-15)
    assert pl.reached is reached
