"""Mutation kills for spectheory.trees and the tree replay kernels.

Each test is deterministic and cheap, and names in its docstring the bug it
catches; expected values come from hand computation or the documented
contract (docs/theory.md, the module docstrings), never from the code under test.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from spectheory import InvalidParameterError
from spectheory.coins import ReplayCoins
from spectheory.sim.tree_replay import pack_trees, reference_blocks, replay_blocks
from spectheory.trees import DraftTree, block_law, draft_fixed, verify_tree

P3 = lambda s: np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)  # noqa: E731
Q3 = lambda s: np.array([F(1, 2), F(1, 2), F(0)], dtype=object)  # noqa: E731


# --------------------------------------------------------------------------- exact.py


def test_block_law_checks_every_distinct_tree_not_only_every_shape():
    """Bug: block_law cached its tree check by the parent array alone, so a second tree of the
    same shape but another token escaped the check.

    The drafter draws one fair coin: a chain to token 0 (draft probability 1/2)
    or a chain to token 2, which the draft gives probability 0 (the tree was not
    drawn from it).  Both trees have parents (-1, 0); the second must still be
    refused, whichever branch the enumeration visits first.
    """

    def drafter(draft, coins):
        tok = (0, 2)[coins.categorical(np.array([F(1, 2), F(1, 2)], dtype=object))]
        return DraftTree((-1, 0), (-1, tok), ((1,), ()), "chain")

    with pytest.raises(InvalidParameterError, match="draft probability 0"):
        block_law("rrs", P3, Q3, drafter, 2)


def test_block_law_refuses_a_tree_kind_the_registered_verifier_is_not_valid_for():
    """Bug: block_law skipped the registry's kind check, so block verification (chains only)
    silently ran on an i.i.d. tree and returned a law for a method that is not defined there.

    The tree has two root children (tokens 0 and 1), kind ``"iid"``; ``"block"``
    is registered for ``("chain",)`` only.
    """
    tree = DraftTree((-1, 0, 0), (-1, 0, 1), ((1, 2), (), ()), "iid")
    with pytest.raises(InvalidParameterError, match="not valid for 'iid'"):
        block_law("block", P3, P3, lambda d, coins: tree, 2)


# --------------------------------------------------------------------------- _tree.py


def test_a_chain_cannot_repeat_a_draw():
    """Bug: the no-repeat check covered only without-replacement trees, so a ``"chain"`` whose
    root lists its one child twice (two draws, i.e. not one draw per node) was accepted.
    """
    with pytest.raises(InvalidParameterError, match="cannot repeat a draw"):
        DraftTree((-1, 0), (-1, 0), ((1, 1), ()), "chain")
    with pytest.raises(InvalidParameterError, match="cannot repeat a draw"):
        DraftTree((-1, 0, 0), (-1, 0, 1), ((1, 2, 1), (), ()), "without_replacement")
    DraftTree((-1, 0), (-1, 0), ((1, 1), ()), "iid")  # i.i.d. draws may repeat


# --------------------------------------------------------------------------- _registry.py


def test_verify_tree_names_bad_coins():
    """Bug: verify_tree dropped its coins check, so ``coins=None`` failed deep inside a
    verifier with an AttributeError instead of an InvalidParameterError naming coins.
    """
    chain = DraftTree((-1, 0), (-1, 0), ((1,), ()), "chain")
    with pytest.raises(InvalidParameterError, match="coins"):
        verify_tree("token", P3, P3, chain, None)


def test_verify_tree_refuses_a_token_equal_to_the_vocabulary_size():
    """Bug: the vocabulary check was ``t <= V`` (off by one), so token ``V`` passed it and the
    draft row lookup raised a bare IndexError instead of naming the vocabulary.
    """
    chain = DraftTree((-1, 0), (-1, 3), ((1,), ()), "chain")
    with pytest.raises(InvalidParameterError, match="outside the vocabulary of 3"):
        verify_tree("token", P3, P3, chain, ReplayCoins([0.5, 0.5]))


# --------------------------------------------------------------------------- drafting.py


def test_draft_fixed_iid_drops_the_shape_below_a_merged_duplicate():
    """Bug: draft_fixed(fill="iid") kept the shape below a duplicate draw, mapping it onto the
    merged node, so that node got the children of both shape nodes (two draws instead of one).

    Shape (-1, 0, 0, 1, 2): two root draws, one child under each.  The draft puts
    all its mass on token 0, so both root draws give token 0 (merged, multiplicity
    2) and only shape node 1's child is drafted: draws ((1, 1), (2,), ()).
    """
    q = lambda s: [1.0, 0.0]  # noqa: E731
    t = draft_fixed(q, (-1, 0, 0, 1, 2), ReplayCoins([0.3, 0.6, 0.1, 0.9]), fill="iid")
    assert t.draws == ((1, 1), (2,), ())
    assert t.tokens == (-1, 0, 0)


def test_draft_fixed_top_stops_at_the_support():
    """Bug: draft_fixed(fill="top") asked for ``k`` top tokens even when the draft has fewer
    tokens of positive mass, drafting a token of draft probability 0.

    q = (0.7, 0.3, 0): three children asked for, two possible.
    """
    t = draft_fixed(lambda s: [0.7, 0.3, 0.0], (-1, 0, 0, 0), None, fill="top")
    assert t.draft_tokens(0) == (0, 1)


# --------------------------------------------------------------------------- replay kernels


def _chain_batch(p_rows, q_rows, tokens):
    g = len(tokens)
    draws = (*((i + 1,) for i in range(g)), ())
    tree = DraftTree(tuple(range(-1, g)), (-1, *tokens), draws, "chain")
    return pack_trees([tree], [np.array(p_rows)], [np.array(q_rows)])


@pytest.mark.parametrize("verifier", ["token", "rrs", "rrs_wor", "block"])
def test_a_zero_uniform_never_accepts_a_draft_of_target_probability_zero(verifier):
    """Bug: a kernel accepted with ``u <= prob`` instead of ``u < prob`` (ReplayCoins'
    ``bernoulli``), so a uniform of exactly 0 accepted a drafted token the target gives
    probability 0: the emitted token then has target probability 0.

    One-token chain, p = (0, 1), q = (1/2, 1/2), drafted token 0.  By hand:
    acceptance probability min(1, 0 / (1/2)) = 0 (block: w_1 = h_1 = 0), so the
    draft is rejected and the residual (p - q)_+ / Z = (0, 1) gives token 1.
    """
    batch = _chain_batch([[0.0, 1.0], [0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]], (0,))
    u = np.zeros((1, 1, 4))
    for out, length in (replay_blocks(verifier, batch, u), reference_blocks(verifier, batch, u)):
        assert length.tolist() == [[1]]
        assert out[0, 0, 0] == 1


def test_block_weights_define_zero_over_zero_as_one():
    """Bug: block_weights set ``h_i = 0`` instead of 1 when ``Z_i + 1 - w_i = 0`` (docs/theory.md
    §3.9: ``0/0 := 1``).  verify_block never reads such an ``h_i`` (a later ``h`` equals 1
    and fires first), so only the returned weights show it.

    p = q = (1/2, 1/2) at every node, chain (0, 0): w = (1, 1, 1); Z_1 = 0 and
    1 - w_1 = 0, so h_1 = 1; h_2 = w_2 = 1.
    """
    from spectheory.trees import block_weights

    half = lambda s: np.array([F(1, 2), F(1, 2)], dtype=object)  # noqa: E731
    chain = DraftTree((-1, 0, 1), (-1, 0, 0), ((1,), (2,), ()), "chain")
    w, h = block_weights(half, half, chain)
    assert w == [1, 1, 1]
    assert h == [1, 1, 1]


def test_cached_model_keeps_its_own_copy_of_a_checked_row():
    """Bug: CachedModel cached the caller's float64 array itself (no copy) when it already
    summed to 1, so a later in-place change by the caller (here to a row summing to 1.4)
    was served from the cache unchecked.
    """
    from spectheory.trees import CachedModel

    row = np.array([0.5, 0.5])
    m = CachedModel(lambda s: row, "target")
    assert m(()).tolist() == [0.5, 0.5]
    row[0] = 0.9
    assert m(()).tolist() == [0.5, 0.5]


def test_pack_trees_refuses_a_token_equal_to_the_vocabulary_size():
    """Bug: pack_trees' vocabulary check was ``> V`` (off by one), so token ``V`` passed it and
    the draft-row lookup raised a bare IndexError instead of an InvalidParameterError.
    """
    tree = DraftTree((-1, 0), (-1, 2), ((1,), ()), "chain")
    rows = np.full((2, 2), 0.5)
    with pytest.raises(InvalidParameterError, match="token >= V = 2"):
        pack_trees([tree], [rows], [rows])


def test_block_replay_refuses_chains_of_different_lengths():
    """Bug: the one-length check for block replay let two distinct lengths through; chains of
    lengths 3, 1, 1 (4 + 2 + 2 = 8 nodes) then reshape silently into two chains of 3.
    """

    def chain(g):
        return DraftTree(tuple(range(-1, g)), (-1, *[0] * g), (*((i + 1,) for i in range(g)), ()),
                         "chain")  # fmt: skip

    trees = [chain(3), chain(1), chain(1)]
    rows = [np.full((t.size, 2), 0.5) for t in trees]
    batch = pack_trees(trees, rows, rows)
    with pytest.raises(InvalidParameterError, match="chains of one length"):
        replay_blocks("block", batch, np.zeros((3, 1, 4)))
