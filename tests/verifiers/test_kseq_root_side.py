"""kseq_rho on float input returns the upper end of the bisection bracket, where
g(rho) = 1 - (1 - beta)^n - rho beta <= 0 (docs: "checked to satisfy g(rho) <= 0"),
so K-SEQ is lossless for it; the lower end has g > 0 (first acceptance above p)."""

from __future__ import annotations

import numpy as np
import pytest

from spectheory._validate import as_distribution_pair
from spectheory.verifiers.kseq import _g, kseq_rho

ROWS = [
    (np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])),
    (np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1])),
    (np.array([0.05, 0.15, 0.5, 0.3]), np.array([0.5, 0.2, 0.2, 0.1])),
]


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("row", range(len(ROWS)))
def test_float_rho_is_on_the_lossless_side_of_the_root(row, n):
    P, Q, _ = as_distribution_pair(*ROWS[row])  # the rows kseq_rho works on
    p, q = P[0], Q[0]
    assert _g(p, q, n, 1.0) > 0  # a proper root in (1, n]
    rho = kseq_rho(p, q, n)
    assert _g(p, q, n, rho) <= 0
