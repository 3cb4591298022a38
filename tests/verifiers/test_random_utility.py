"""``random_utility``: exactly lossless, and at the bound, for any n and draft law.

Oracles: exact enumeration of every draft tuple and every coin in Fractions
(:func:`spectheory.exact.output_distribution`, :func:`spectheory.exact.acceptance`,
:func:`spectheory.testing.assert_exactly_lossless`), the bound by enumeration over
draft sets (``solve_bound(method="enumerate")``), and ``khisti`` (the transport LP)
on the same rows.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

import spectheory
from spectheory.exact import acceptance, output_distribution
from spectheory.solvers.ot_dual import solve_bound
from spectheory.testing import assert_exactly_lossless
from spectheory.verifiers.random_utility import utility_plan

SAMPLINGS = ("iid", "without_replacement", "greedy")


def _fractions(w):
    w = [int(x) for x in w]
    return np.array([F(x, sum(w)) for x in w], dtype=object)


@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("n", [2, 3])
def test_exact_law_is_the_target_and_acceptance_the_bound(sampling, n):
    """Rational rows, V = 4: the output law is p exactly, and the exact acceptance lies
    within 1e-12 below the bound (the scores are solved in floats) and at or above
    the selection acceptance the plan reports."""
    rng = np.random.default_rng(7 * n + len(sampling))
    for _ in range(3):
        p, q = _fractions(rng.integers(1, 20, 4)), _fractions(rng.integers(1, 20, 4))
        law = output_distribution("random_utility", p, q, n, sampling)
        assert list(law) == list(p)
        acc = acceptance("random_utility", p, q, n, sampling)
        best = solve_bound(p, q, n, sampling, method="enumerate").exact_value
        assert isinstance(acc, F)
        assert best - F(1, 10**12) <= acc <= best
        plan = utility_plan(p, q, n, sampling)
        assert acc >= plan.alpha_value  # membership acceptance >= selection acceptance


@pytest.mark.parametrize("sampling", SAMPLINGS)
def test_assert_exactly_lossless_searches_without_a_counterexample(sampling):
    assert_exactly_lossless("random_utility", n=3, sampling=sampling, max_examples=15,
                            max_vocab=4)


def test_float_rows_reach_khisti_and_the_bound():
    """Float rows with a small draft support inside V = 40: the acceptance equals the
    transport LP's (khisti) and the bound, n = 4 without replacement."""
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.full(40, 0.5))
    q = np.zeros(40)
    q[rng.choice(40, 6, replace=False)] = rng.dirichlet(np.full(6, 0.5))
    a = acceptance("random_utility", p, q, 4, "without_replacement")
    assert a == pytest.approx(spectheory.bound(p, q, 4, "without_replacement"), abs=1e-12)
    assert a == pytest.approx(acceptance("khisti", p, q, 4, "without_replacement"), abs=1e-12)


def test_simulate_runs_it_at_the_bound_and_a_large_support_is_refused_by_name():
    """``simulate`` with its default law (without replacement, the function's and the
    plan's too): the membership acceptance of 4,000 trials against alpha*, which it
    equals where the plan is reached (z test, false-alarm rate 1e-6)."""
    from scipy import stats

    p = np.array([0.5, 0.3, 0.15, 0.05])
    q = np.array([0.1, 0.2, 0.3, 0.4])
    res = spectheory.simulate("random_utility", p, q, 3, trials=4000, seed=0)
    assert res.sampling == "without_replacement"
    a = float(spectheory.bound(p, q, 3, "without_replacement"))
    z = (res.mean_acceptance - a) / np.sqrt(a * (1 - a) / 4000)
    assert abs(z) < stats.norm.isf(1e-6 / 2)
    big = np.full(200, 1 / 200)
    with pytest.raises(spectheory.InstanceTooLargeError, match="draft-set law"):
        spectheory.verify("random_utility", big, big, [0, 1, 2, 3], rng=0,
                          sampling="without_replacement")
