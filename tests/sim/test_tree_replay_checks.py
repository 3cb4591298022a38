"""pack_trees checks every node row as a distribution once, at pack time."""

import numpy as np
import pytest

from spectheory import InvalidDistributionError, ShapeMismatchError
from spectheory.coins import RandomCoins
from spectheory.sim.tree_replay import pack_trees, replay_blocks, replay_uniforms
from spectheory.trees import block_law, draft_chain

P = np.array([0.3, 0.4, 0.3])
Q = np.array([0.6, 0.3, 0.1])


def _chain():
    return draft_chain(lambda s: Q, 2, RandomCoins(0))


@pytest.mark.parametrize(
    "rows, match",
    [
        (np.array([2 * P] * 3), r"target_rows\[0\] row 0 sums to 2"),  # tau 3.0 before
        (np.array([P, P, 0.5 * P]), r"target_rows\[0\] row 2 sums to 0.5"),
        (np.array([[np.nan, 0.5, 0.5]] * 3), r"target_rows\[0\] row 0 has a non-finite"),
        (np.array([[-0.1, 0.6, 0.5]] * 3), r"target_rows\[0\] row 0 has a negative"),
        (np.array([P] * 3).astype(bool), r"target_rows\[0\] has dtype bool"),
    ],
)
def test_pack_trees_refuses_target_rows_that_are_not_distributions(rows, match):
    with pytest.raises(InvalidDistributionError, match=match):
        pack_trees([_chain()], [rows], [np.array([Q] * 3)])


def test_pack_trees_names_draft_rows_and_the_instance():
    tree = _chain()
    good_p, good_q = np.array([P] * 3), np.array([Q] * 3)
    with pytest.raises(InvalidDistributionError, match=r"draft_rows\[1\] row 1 sums to 1.99"):
        pack_trees([tree, tree], [good_p, good_p], [good_q, np.array([Q, 2 * Q, Q])])


def test_pack_trees_tolerance_follows_the_dtype():
    tree = _chain()
    off = np.array([[0.3, 0.4, 0.30005]] * 3)  # |sum - 1| = 5e-5
    with pytest.raises(InvalidDistributionError, match="tolerance 1e-09 for float64"):
        pack_trees([tree], [off], [np.array([Q] * 3)])
    batch = pack_trees([tree], [off.astype(np.float32)], [np.array([Q] * 3, np.float32)])
    assert batch.target.dtype == np.float64
    np.testing.assert_allclose(batch.target.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_pack_trees_shape_errors_come_before_row_checks():
    with pytest.raises(ShapeMismatchError, match=r"target_rows\[0\] has shape \(2, 3\)"):
        pack_trees([_chain()], [np.array([2 * P] * 2)], [np.array([Q] * 2)])
    with pytest.raises(ShapeMismatchError, match=r"draft_rows\[0\] has shape \(3, 4\)"):
        pack_trees([_chain()], [np.array([P] * 3)], [np.full((3, 4), 0.25)])


def test_replay_on_checked_rows_matches_the_exact_block_efficiency():
    tree = _chain()
    batch = pack_trees([tree], [np.array([P] * 3)], [np.array([Q] * 3)])
    u = np.random.default_rng(0).random((1, 20000, replay_uniforms("token", batch)))
    mean = replay_blocks("token", batch, u)[1].mean()
    law = block_law("token", lambda s: P, lambda s: Q, lambda d, coins: tree, 3)
    assert abs(mean - float(law.block_efficiency)) < 0.03


def test_pack_trees_refuses_a_tree_not_drawn_from_the_draft_rows():
    # Token 1 drafted where the draft row gives it probability 0: the kernels rejected it
    # surely and sampled (p - q)_+ = token 1, emitting token 1 with probability 1 against
    # p = (1/2, 1/2); verify_tree and block_law refuse such a tree.
    from spectheory import InvalidParameterError
    from spectheory.trees import DraftTree

    chain = DraftTree((-1, 0), (-1, 1), ((1,), ()), "chain")
    p, q = np.array([[0.5, 0.5]] * 2), np.array([[1.0, 0.0], [0.5, 0.5]])
    with pytest.raises(InvalidParameterError, match=r"tree 0 node 1 \(token 1 after \[\]\)"):
        pack_trees([chain], [p], [q])
    # the draft row of a leaf is not used: a zero there is fine
    batch = pack_trees([chain], [p], [np.array([[0.5, 0.5], [1.0, 0.0]])])
    assert batch.root.tolist() == [0]
