"""Tests of spectheory._validate_kernels: the serial and parallel row passes agree with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from spectheory import _threads
from spectheory import _validate_kernels as vk


def numpy_row_stats(rows):
    """Oracle: first token failing 0 <= x < inf, and the row sum in the kernel's order.

    The kernel keeps four partial sums (tokens i = j mod 4, each added left to right over
    the first V - V mod 4 tokens), adds them as (s0 + s1) + (s2 + s3), then the last
    V mod 4 tokens left to right; cumsum adds left to right, so the sums agree exactly.
    Sums of rows with a bad token are not compared (the caller refuses those rows first).
    """
    ok = (rows >= 0) & (rows < np.inf)
    bad = ~ok.all(axis=1)
    first = np.where(bad, np.argmin(ok, axis=1), -1)
    B, V = rows.shape
    V4 = V - V % 4
    sums = np.empty(B)
    for b in range(B):
        lanes = [np.cumsum(rows[b, j:V4:4])[-1] if V4 else 0.0 for j in range(4)]
        s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
        for x in rows[b, V4:]:
            s += x
        sums[b] = s
    return first, sums


@pytest.mark.parametrize("V", [7, _threads.PARALLEL_MIN_WORK // 16])
def test_serial_and_parallel_paths_equal_the_numpy_oracle(V):
    rng = np.random.default_rng(V)
    B = 16 if V > 7 else 5
    rows = rng.dirichlet(np.ones(V), size=B)
    rows[1, 3] = np.nan
    rows[2, 0] = -0.0  # negative zero is a valid probability
    rows[3, V - 1] = np.inf
    rows[4, 2] = -1e-300
    want_first, want_sums = numpy_row_stats(rows)
    assert want_first.tolist()[:5] == [-1, 3, -1, V - 1, 2]
    assert (rows.size >= _threads.PARALLEL_MIN_WORK) == (V > 7)
    good = want_first < 0
    first, sums = vk.row_stats(rows)  # the dispatched path
    np.testing.assert_array_equal(first, want_first)
    np.testing.assert_array_equal(sums[good], want_sums[good])
    for kernel in (vk._row_stats_serial, vk._row_stats_parallel):
        f2 = np.full(B, -1, dtype=np.int64)
        s2 = np.zeros(B)
        kernel(rows, f2, s2)
        np.testing.assert_array_equal(f2, want_first)
        np.testing.assert_array_equal(s2[good], want_sums[good])


def test_a_sum_that_overflows_is_refused_by_the_sum_check():
    """Finite entries whose sum overflows: no bad token, an infinite sum, refused by name."""
    from spectheory import InvalidDistributionError
    from spectheory._validate import as_distribution

    rows = np.array([[1e308, 1e308, 0.0, 0.0, 0.0]])
    first, sums = vk.row_stats(rows)
    assert first.tolist() == [-1] and np.isinf(sums[0])
    with pytest.raises(InvalidDistributionError, match="target sums to inf, not 1"):
        as_distribution(rows[0], "target")
