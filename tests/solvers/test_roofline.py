"""Input checks of the roofline cost model (spectheory.solvers.roofline).

Its formulas are tested against a brute force in tests/experiments/test_draft_scaling.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from spectheory import InvalidParameterError
from spectheory.solvers.roofline import Roofline, batch_speedup, optimal_width

R = Roofline(bandwidth=1.0, flops=1e9, bytes_per_param=1.0)
NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bandwidth": -1.0}, "bandwidth must be a finite number > 0; got -1.0"),
        ({"bandwidth": 0}, "bandwidth must be a finite number > 0; got 0"),  # was ZeroDivision
        ({"flops": NAN}, "flops must be a finite number > 0; got nan"),
        ({"flops": INF}, "flops must be a finite number > 0; got inf"),
        ({"bytes_per_param": True}, "bytes_per_param must be a positive real number; got True"),
        ({"bandwidth": "3e12"}, "bandwidth must be a positive real number; got '3e12'"),
    ],
)
def test_roofline_refuses_non_positive_or_non_finite_constants(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        Roofline(**kwargs)


@pytest.mark.parametrize(
    ("params", "tokens", "match"),
    [
        (10, -5, "tokens must be >= 1; got -5"),
        (10, 0, "tokens must be >= 1; got 0"),
        (10, np.array([2, 0]), "tokens must be >= 1; got 0"),
        (10, [1, True], "tokens must be a positive integer; got True"),
        (10, 2.5, "tokens must be a positive integer; got 2.5"),
        (-10, 1, "params must be a finite number > 0; got -10"),
        (NAN, 1, "params must be a finite number > 0; got nan"),
    ],
)
def test_time_refuses_bad_params_and_token_counts(params, tokens, match):
    with pytest.raises(InvalidParameterError, match=match):
        R.time(params, tokens)


def test_time_takes_integer_scalars_and_arrays():
    r = Roofline(bandwidth=1.0, flops=4.0, bytes_per_param=1.0)
    assert r.time(10, np.int64(4)) == 20.0
    assert r.time(10, np.array([1, 4])).tolist() == [10.0, 20.0]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([0.5], 1, 100, -10), "draft_params must be a finite number > 0; got -10"),
        (([0.5], 1, 100, NAN), "draft_params must be a finite number > 0; got nan"),
        (([0.5], 1, -100, 10), "target_params must be a finite number > 0; got -100"),
        (([0.5], 1, NAN, 10), "target_params must be a finite number > 0; got nan"),
        (([0.5], True, 100, 10), "batch must be a positive integer; got True"),
        (([0.5], INF, 100, 10), "batch must be a positive integer; got inf"),
        (([0.5], 2.0, 100, 10), "batch must be a positive integer; got 2.0"),
        (([0.5], 0, 100, 10), "batch must be >= 1; got 0"),
        (([np.nan, 0.5], 1, 100, 10), r"alpha must lie in \[0, 1\]; got nan at index 0"),
        (([0.5, 1.5], 1, 100, 10), r"alpha must lie in \[0, 1\]; got 1.5 at index 1"),
        (([True, 0.5], 1, 100, 10), "alpha must hold real numbers; got True"),
        ((["0.5"], 1, 100, 10), "alpha must hold real numbers; got '0.5'"),
        (([], 1, 100, 10), "alpha must be a non-empty 1-D array"),
    ],
)
def test_batch_speedup_refuses_bad_input(args, match):
    with pytest.raises(InvalidParameterError, match=match):
        batch_speedup(*args, R)


def test_optimal_width_refuses_nan_alpha_and_bad_batches():
    # NaN used to pass the range check and give n* = 1 with a NaN speedup.
    with pytest.raises(InvalidParameterError, match="alpha must lie in"):
        optimal_width([np.nan, 0.5], [1], 100, 10, R)
    with pytest.raises(InvalidParameterError, match="batch must be a positive integer"):
        optimal_width([0.5, 0.7], [1, 2.5], 100, 10, R)
    n_star, _ = optimal_width([0.5, 0.7], np.array([1, 2]), 100, 10, R)  # numpy ints are fine
    assert n_star.tolist() == [2, 2]
