"""Boundary cases of the optimal kernel's input checks.

Oracle: the documented contract of ``_checked`` -- draft ids in ``[0, V)`` (so ``V`` itself
is outside), rows of shape ``(V,)`` for ``optimal_token`` and ``(B, V)`` for ``run_optimal``,
and one drafts row per target row.  Before each check numba read out of bounds or a row was
silently dropped.
"""

import numpy as np
import pytest

from spectheory import InvalidParameterError, ShapeMismatchError
from spectheory.sim._optimal_kernel import optimal_token, run_optimal

P = np.array([0.3, 0.4, 0.3])
Q = np.array([0.6, 0.3, 0.1])
HALF = np.full(3, 0.5)


def test_draft_id_equal_to_the_vocabulary_size_is_refused():
    # V = 3: id 3 is the first id outside [0, 3)   (mutant: drafts >= V -> drafts > V)
    with pytest.raises(InvalidParameterError, match=r"drafts\[1\] = 3 is outside \[0, 3\)"):
        optimal_token(P, Q, [0, 3], HALF)
    with pytest.raises(InvalidParameterError, match=r"= 3 is outside \[0, 3\)"):
        run_optimal(P[None], Q[None], np.array([[[0, 3]]]), np.full((1, 1, 3), 0.5))


def test_optimal_token_refuses_a_batch_of_rows_and_run_optimal_a_single_row():
    # mutant: the was_batched != batched check dropped (a (1, V) row ran as a single row)
    with pytest.raises(ShapeMismatchError, match=r"shape \(V,\)"):
        optimal_token(P[None], Q[None], [0, 1], HALF)
    with pytest.raises(ShapeMismatchError, match=r"shape \(B, V\)"):
        run_optimal(P, Q, np.array([[[0, 1]]]), np.full((1, 1, 3), 0.5))


def test_run_optimal_refuses_fewer_draft_rows_than_target_rows():
    # mutant: B != p.shape[0] -> B > p.shape[0] (the target's second row was silently dropped)
    p2, q2 = np.stack([P, P[::-1]]), np.stack([Q, Q[::-1]])
    with pytest.raises(ShapeMismatchError, match="drafts has 1 rows and target has 2"):
        run_optimal(p2, q2, np.array([[[0, 1]]]), np.full((1, 1, 3), 0.5))
