"""Input handling of the speedup formulas, the draft-length simulator, SpecDec++ and the
log-linear fit: coercions refused, errors naming the argument, fits independent of order."""

from fractions import Fraction

import numpy as np
import pytest

from spectheory._errors import InvalidParameterError
from spectheory.sim.draft_length import Fixed, Threshold, compare_policies, simulate_policy
from spectheory.solvers import speedup as sp
from spectheory.solvers.scaling import fit_log_linear
from spectheory.solvers.specdecpp import evaluate_threshold_policy, solve_specdecpp


# D1: strings and bools in beta were coerced silently by np.asarray(dtype=float64)
@pytest.mark.parametrize("beta", [[["0.5", "0.5", "0.5"]], [[True, False, True]]])
def test_d1_beta_refuses_str_and_bool(beta):
    with pytest.raises(InvalidParameterError, match=r"beta\[0\]"):
        simulate_policy(beta, Fixed(1), 0.1)


def test_d1_predicted_refuses_str():
    with pytest.raises(InvalidParameterError, match="predicted"):
        compare_policies([[0.5, 0.5, 0.5]], 0.1, gammas=[1], oracle_h=0.5,
                         predicted=[["0.1", "0.2", "0.3"]], h_grid=[0.5])


# D2: a Fraction c or h passed the numbers.Real check, then np.isfinite raised a bare TypeError
def test_d2_fraction_cost_and_threshold():
    r = simulate_policy([[0.5, 0.5, 0.5]], Fixed(1), Fraction(1, 10))
    assert r.speedup == pytest.approx(simulate_policy([[0.5, 0.5, 0.5]], Fixed(1), 0.1).speedup)
    assert Threshold(Fraction(1, 3)).h == Fraction(1, 3)


# D3: shape mismatches surfaced as numpy's ValueError naming no argument
@pytest.mark.parametrize(
    "call",
    [
        lambda: sp.speedup([0.5, 0.6], [1, 2, 3], 0.1),
        lambda: sp.tokens_per_round([0.5, 0.6], [1, 2, 3]),
        lambda: sp.optimal_gamma([0.5, 0.6], [0.1, 0.2, 0.3]),
        lambda: sp.optimal_gamma_positional([[0.9, 0.8], [0.5, 0.5]], [0.1, 0.2, 0.3]),
        lambda: sp.continuous_optimal_gamma([0.5, 0.6], [0.1, 0.2, 0.3]),
    ],
)
def test_d3_shape_mismatch_names_arguments(call):
    with pytest.raises(InvalidParameterError, match="must broadcast"):
        call()


# D4: gamma=[True, 2] was read as [1, 2] although gamma=True is refused
def test_d4_gamma_list_with_bool_refused():
    with pytest.raises(InvalidParameterError, match="gamma"):
        sp.tokens_per_round(0.5, [True, 2])


# D5: Fractions refused with "must be a real number; got Fraction(...)"
def test_d5_fractions_accepted():
    assert sp.tokens_per_round(Fraction(1, 2), 2) == 1.75
    assert sp.speedup([Fraction(1, 2)], 1, Fraction(1, 5)).tolist() == pytest.approx([1.25])
    assert solve_specdecpp({0.5: 1.0}, Fraction(1, 5)).speedup == pytest.approx(1.25)
    assert evaluate_threshold_policy({0.5: 1.0}, 0.2, Fraction(3, 5)) == pytest.approx(1.25)
    with pytest.raises(InvalidParameterError, match="alpha cannot be read"):
        sp.tokens_per_round([[0.5], [0.5, 0.6]], 2)


# D6: the same data and seed, listed in another order, gave other bootstrap intervals
def test_d6_bootstrap_order_invariant():
    x = np.array([77e6, 250e6, 800e6, 3e9, 1e10])
    y = np.array([0.5, 0.55, 0.6, 0.66, 0.7])
    perm = [3, 0, 4, 1, 2]
    a, b = fit_log_linear(x, y, seed=0), fit_log_linear(x[perm], y[perm], seed=0)
    np.testing.assert_allclose(a.slope_ci, b.slope_ci, rtol=1e-12)
    np.testing.assert_allclose(a.intercept_ci, b.intercept_ci, rtol=1e-12)
