"""The shared fields of every solver result (spectheory.solvers.SolverResult).

Each case calls one solver and checks that ``method`` names the algorithm that
ran, that ``status`` is the documented outcome, that ``message`` says
something, and that ``inputs`` round-trips: calling the solver again with
its arrays and ``**inputs`` (and ``method=``) repeats the result exactly.
The failure cases are real ones: Dinkelbach stopped by its iteration limit,
and a draft-length search whose optimum lies beyond its range.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction as F

import numpy as np
import pytest

from spectheory._errors import InvalidParameterError
from spectheory.sim.draft_length import Fixed, Heuristic, PolicyResult, Threshold, simulate_policy
from spectheory.sim.simulate import SimulationResult, simulate
from spectheory.solvers import (
    STATUSES,
    BoundResult,
    LogLinearFit,
    OptimalGammaResult,
    SequoiaResult,
    SolverResult,
    SpecDecPPResult,
    fit_log_linear,
    optimal_gamma,
    optimal_gamma_positional,
    sequoia_tree,
    solve_bound,
    solve_specdecpp,
)
from spectheory.solvers.polymatroid import OptimalPlan, plan

P = np.array([0.3, 0.4, 0.3])
Q = np.array([0.6, 0.3, 0.1])
PF = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
QF = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
LAW = {0.9: 0.5, 0.5: 0.3, 0.1: 0.2}  # SpecDec++ acceptance law
BETA = [[0.9, 0.5, 0.8, 0.3, 0.7, 0.95], [0.6, 0.6, 0.2, 0.9]]


def _bound_again(r):
    return solve_bound(P, Q, method=r.method, **r.inputs)


def _same_bound(a, b):
    return a.value == b.value and np.array_equal(a.certificate, b.certificate)


# (id, call, class, method, status, inputs, call again with the inputs, same outcome)
CASES = [
    ("bound dual iid", lambda: solve_bound(P, Q, 2), BoundResult, "dual", "optimal",
     {"n": 2, "sampling": "iid", "atol": None}, _bound_again, _same_bound),
    ("bound dual wor", lambda: solve_bound(P, Q, 2, "without_replacement"), BoundResult, "dual",
     "optimal", {"n": 2, "sampling": "without_replacement", "atol": None}, _bound_again,
     _same_bound),
    ("bound lp greedy", lambda: solve_bound(P, Q, 2, "greedy", "lp"), BoundResult, "lp",
     "optimal", {"n": 2, "sampling": "greedy", "atol": None}, _bound_again, _same_bound),
    ("bound enumerate", lambda: solve_bound(PF, QF, 2, method="enumerate"), BoundResult,
     "enumerate", "optimal", {"n": 2, "sampling": "iid", "atol": None},
     lambda r: solve_bound(PF, QF, method=r.method, **r.inputs),
     lambda a, b: a.exact_value == b.exact_value == F(89, 100)),
    ("sequoia", lambda: sequoia_tree([0.8, 0.1], 4), SequoiaResult, "sequoia_dp", "optimal",
     {"budget": 4, "max_levels": 4}, lambda r: sequoia_tree([0.8, 0.1], **r.inputs),
     lambda a, b: a.parents == b.parents and a.value == b.value),
    ("specdecpp dinkelbach", lambda: solve_specdecpp(LAW, 0.2, k_max=6), SpecDecPPResult,
     "dinkelbach", "optimal",
     {"t_draft": 0.2, "t_target": 1.0, "k_max": 6, "tol": 1e-12, "max_iter": 100},
     lambda r: solve_specdecpp(LAW, method=r.method, **r.inputs),
     lambda a, b: a.speedup == b.speedup and a.iterations == b.iterations),
    ("specdecpp lp", lambda: solve_specdecpp(LAW, 0.2, k_max=6, method="lp"), SpecDecPPResult,
     "lp", "optimal",
     {"t_draft": 0.2, "t_target": 1.0, "k_max": 6, "tol": 1e-12, "max_iter": 100},
     lambda r: solve_specdecpp(LAW, method=r.method, **r.inputs),
     lambda a, b: a.speedup == b.speedup),
    ("optimal gamma", lambda: optimal_gamma(0.8, 0.05, method="lambertw"), OptimalGammaResult,
     "lambertw", "optimal", {"gamma_max": 1000},
     lambda r: optimal_gamma(0.8, 0.05, method=r.method, **r.inputs),
     lambda a, b: a.gamma == b.gamma == 8),
    ("optimal gamma positional",
     lambda: optimal_gamma_positional([0.9, 0.5, 0.1], 0.1, kind="prefix", method="enumerate"),
     OptimalGammaResult, "enumerate", "optimal", {"kind": "prefix"},
     lambda r: optimal_gamma_positional([0.9, 0.5, 0.1], 0.1, method=r.method, **r.inputs),
     lambda a, b: a.gamma == b.gamma == 2 and a.speedup == b.speedup),
    ("log-linear fit", lambda: fit_log_linear([1, 10, 100, 1000], [1, 3.1, 4.9, 7], n_boot=50,
                                              seed=3),
     LogLinearFit, "ols", "optimal", {"base": 10.0, "n_boot": 50, "confidence": 0.95, "seed": 3},
     lambda r: fit_log_linear([1, 10, 100, 1000], [1, 3.1, 4.9, 7], **r.inputs),
     lambda a, b: a.slope == b.slope and np.array_equal(a.slope_ci, b.slope_ci)),
    ("simulate", lambda: simulate("rrs", P, Q, n=2, trials=300, rng=4), SimulationResult,
     "monte_carlo", "sampled", {"n": 2, "sampling": "iid", "trials": 300, "rng": 4},
     lambda r: simulate("rrs", P, Q, **r.inputs),
     lambda a, b: np.array_equal(a.tokens, b.tokens) and a.engine == b.engine == "numba"),
    ("policy fixed", lambda: simulate_policy(BETA, Fixed(2), 0.1, k_max=3), PolicyResult,
     "position_dp", "exact", {"c": 0.1, "k_max": 3},
     lambda r: simulate_policy(BETA, Fixed(2), **r.inputs),
     lambda a, b: a.speedup == b.speedup),
    ("policy threshold", lambda: simulate_policy(BETA, Threshold(0.5), 0.1), PolicyResult,
     "position_dp", "exact", {"c": 0.1, "k_max": 25},
     lambda r: simulate_policy(BETA, Threshold(0.5), **r.inputs),
     lambda a, b: a.speedup == b.speedup),
    ("policy heuristic", lambda: simulate_policy(BETA, Heuristic(), 0.1), PolicyResult,
     "position_gamma_dp", "exact", {"c": 0.1, "k_max": 25},
     lambda r: simulate_policy(BETA, Heuristic(), **r.inputs),
     lambda a, b: a.speedup == b.speedup),
    ("optimal plan float", lambda: plan(P, Q, 2), OptimalPlan, "tier_sweep", "optimal",
     {"n": 2}, lambda r: plan(P, Q, **r.inputs),
     lambda a, b: a.alpha == b.alpha and abs(a.alpha - 0.89) < 1e-12),
    ("optimal plan exact", lambda: plan(PF, QF, 2), OptimalPlan, "tier_sweep", "optimal",
     {"n": 2}, lambda r: plan(PF, QF, **r.inputs), lambda a, b: a.alpha == b.alpha == F(89, 100)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "cls", "method", "status", "inputs", "again", "same"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_every_solver_fills_the_shared_fields(call, cls, method, status, inputs, again, same):
    r = call()
    assert type(r) is cls and isinstance(r, SolverResult)
    assert r.method == method
    assert r.status == status and status in STATUSES and r.success
    assert isinstance(r.message, str) and len(r.message) > 10
    assert r.inputs == inputs
    assert same(r, again(r))  # the inputs repeat the computation
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.status = "optimal"
    text = r.summary()
    assert text.splitlines()[0] == f"{cls.__name__}: {status} (method {method!r})"
    assert r.message in text
    own = [f.name for f in dataclasses.fields(r) if f.name not in ("method", "status", "message",
                                                                    "inputs")]  # fmt: skip
    assert all(f"  {name}: " in text for name in own)


def test_dinkelbach_stopped_by_its_iteration_limit_says_so():
    r = solve_specdecpp(LAW, 0.2, k_max=6, max_iter=1)
    assert r.status == "max_iter" and not r.success
    assert r.iterations == 1 and "did not converge in 1 iterations" in r.message
    assert r.inputs["max_iter"] == 1
    full = solve_specdecpp(LAW, 0.2, k_max=6)
    assert full.iterations > 1 and full.success  # so one iteration was really too few


def test_a_draft_length_optimum_beyond_the_range_is_capped():
    # alpha = 0.999, c = 1e-4: the optimum is about 150 tokens, far beyond gamma_max = 5.
    r = optimal_gamma(0.999, 1e-4, gamma_max=5)
    assert r.status == "capped" and not r.success and r.capped and r.gamma == 5
    assert r.inputs == {"gamma_max": 5} and "gamma_max = 5" in r.message
    assert optimal_gamma(0.999, 1e-4).gamma > 5
    rp = optimal_gamma_positional([0.99, 0.99], 0.01)
    assert rp.status == "capped" and not rp.success and rp.gamma == 2


def test_the_base_checks_its_fields():
    with pytest.raises(InvalidParameterError, match=r"status.*'done'"):
        SequoiaResult((-1,), 1.0, 1, 1, method="sequoia_dp", status="done")
    with pytest.raises(InvalidParameterError, match="method"):
        SequoiaResult((-1,), 1.0, 1, 1, method="", status="optimal")
    with pytest.raises(InvalidParameterError, match="inputs"):
        SequoiaResult((-1,), 1.0, 1, 1, method="m", status="optimal", inputs=[("budget", 1)])


def test_own_fields_stay_positional_and_the_shared_ones_are_keywords():
    r = SequoiaResult((-1, 0), 1.5, 2, 2, method="sequoia_dp", status="optimal")
    assert (r.parents, r.value, r.budget, r.max_levels) == ((-1, 0), 1.5, 2, 2)
    assert r.message == "" and r.inputs == {}
    # The old positional form of BoundResult (method third) fails loudly, never misassigns.
    with pytest.raises(TypeError):
        BoundResult(0.89, np.ones(3, bool), "dual", "iid", 2, "optimal", "", None)
    with pytest.raises(TypeError):
        BoundResult(0.89, np.ones(3, bool), "iid", 2)  # method and status are required


def test_inputs_are_a_copy():
    given = {"budget": 2}
    r = SequoiaResult((-1, 0), 1.5, 2, 2, method="sequoia_dp", status="optimal", inputs=given)
    given["budget"] = 99
    assert r.inputs == {"budget": 2}
