"""Tests of spectheory._validate_kernels: the serial and parallel row passes agree with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from spectheory import _validate_kernels as vk


def numpy_row_stats(rows):
    """Oracle: first token failing 0 <= x < inf, and the left-to-right sum before it."""
    ok = (rows >= 0) & (rows < np.inf)
    bad = ~ok.all(axis=1)
    first = np.where(bad, np.argmin(ok, axis=1), -1)
    sums = np.empty(rows.shape[0])
    for b in range(rows.shape[0]):
        stop = first[b] if first[b] >= 0 else rows.shape[1]
        # cumsum adds left to right, as the kernel does: the sums agree exactly
        sums[b] = np.cumsum(rows[b, :stop])[-1] if stop > 0 else 0.0
    return first, sums


@pytest.mark.parametrize("V", [7, vk.PARALLEL_MIN_ENTRIES // 16])
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
    assert (rows.size >= vk.PARALLEL_MIN_ENTRIES) == (V > 7)
    first, sums = vk.row_stats(rows)  # the dispatched path
    np.testing.assert_array_equal(first, want_first)
    np.testing.assert_array_equal(sums, want_sums)
    for kernel in (vk._row_stats_serial, vk._row_stats_parallel):
        f2 = np.full(B, -1, dtype=np.int64)
        s2 = np.zeros(B)
        kernel(rows, f2, s2)
        np.testing.assert_array_equal(f2, want_first)
        np.testing.assert_array_equal(s2, want_sums)
