"""Block and traversal verification where the draft equals the target up to rounding; inputs
of the draft-length comparison and of Markov models.

Before the fixes:
- the stopping probability h = z / (z + 1 - w) was evaluated as ``(z + 1) - w``, which
  rounds ``z`` away: with rows agreeing to 1e-15, ``w`` was exactly 1 and ``h`` came out
  as 1.4375, so ``block_law`` raised "bernoulli prob must lie in [0, 1]" on valid input
  and the numba replay treated h > 1 as 1;
- ``compare_policies(gammas=[2.7, 0.5, True])`` ran fixed lengths 2, 0 and 1 under those
  names (``int(g)``), where ``Fixed(2.7)`` is refused;
- a Markov table missing a reached state, or a context shorter than the order, raised a
  bare ``KeyError``.
"""

from functools import partial

import numpy as np
import pytest

from spectheory import InvalidParameterError
from spectheory.sim.draft_length import compare_policies
from spectheory.trees import DraftTree, as_model, block_law, block_weights, draft_chain
from spectheory.trees.models import MarkovModel
from spectheory.trees.verify import traversal_update


def _near_equal_models(seed=3):
    rng = np.random.default_rng(seed)
    P = {s: rng.dirichlet(np.ones(4) * 0.5) for s in range(4)}
    Q = {s: P[s] * (1 + 1e-15 * rng.standard_normal(4)) for s in range(4)}
    Q = {s: v / v.sum() for s, v in Q.items()}
    p = as_model(lambda s: P[s[-1] if s else 0], "target")
    q = as_model(lambda s: Q[s[-1] if s else 0], "draft")
    return p, q


def test_stopping_probabilities_stay_in_the_unit_interval():
    p, q = _near_equal_models()
    for x1 in range(4):
        for x2 in range(4):
            tree = DraftTree((-1, 0, 1), (-1, x1, x2), ((1,), (2,), ()), "chain")
            w, h = block_weights(p, q, tree)
            assert all(0.0 <= float(v) <= 1.0 for v in h), (x1, x2, h)
            # h = z / (z + (1 - w)) is exactly 1 where w == 1
            for wi, hi in zip(w[1:-1], h[:-1], strict=False):
                if wi == 1.0:
                    assert hi == 1.0


def test_block_law_on_rows_equal_up_to_rounding():
    p, q = _near_equal_models()
    law = block_law("block", p, q, partial(draft_chain, gamma=2), 3)
    assert 0.0 < float(law.block_efficiency) <= 3.0


def test_traversal_update_with_w_one_and_a_tiny_excess():
    """Rows equal but for the last ulps (found by search): ``(z + 1) - w`` gave 1.015625."""
    p = np.array([float.fromhex(x) for x in
                  ("0x1.9e0362617a161p-1", "0x1.07ae7276f4a92p-7", "0x1.77778f52a85d6p-3")])
    q = np.array([float.fromhex(x) for x in
                  ("0x1.9e0362617a15fp-1", "0x1.07ae7276f4a90p-7", "0x1.77778f52a85dbp-3")])
    w_new, *_ = traversal_update(1.0, p, q, 1, False)
    assert float(w_new) == 1.0  # z / (z + (1 - 1)) = 1


def test_compare_policies_refuses_fractional_fixed_lengths():
    beta = [[0.9, 0.8, 0.7, 0.6, 0.5, 0.9, 0.9]]
    with pytest.raises(InvalidParameterError, match=r"2\.7"):
        compare_policies(beta, 0.1, gammas=[2.7], h_grid=[0.5])


def test_markov_model_names_a_missing_state_and_a_short_context():
    rows = {(0,): np.array([0.5, 0.5])}
    with pytest.raises(InvalidParameterError, match=r"context must hold at least order = 2"):
        MarkovModel({(0, 0): np.array([1.0, 0.0])}, 2, (0,))
    model = MarkovModel(rows, 1, (0,))
    with pytest.raises(InvalidParameterError, match=r"no row for state \(1,\)"):
        model((1,))
