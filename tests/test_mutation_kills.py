"""Tests written to kill the survivors of tools/mutation/run.py (one per bug class).

Each test names the catalogue entry (tools/mutation/catalogue.py) it was written
against; all are exact (hand-computed answers or reference equality).
"""

from __future__ import annotations

import numpy as np
import pytest

from spectheory.sim.tree_replay import pack_trees, reference_blocks, replay_blocks
from spectheory.trees import DraftTree


@pytest.mark.parametrize("verifier", ["token", "block"])
def test_tree_kernels_reject_a_q_zero_chain_token(verifier):
    """treek-q0-accept: the chain (2, 0) drafts token 2 with q = p = 0.

    The reference (trees.verify, accept_prob) rejects it at the first position
    whatever the coin: block weights w = (1, 0, 0), so h_1 = h_2 = 0 and the
    block is one token from p (the residual (p - q)_+ is empty); accepting it
    would emit token 2, of target probability 0.
    """
    import dataclasses

    chain = DraftTree((-1, 0, 1), (-1, 2, 0), ((1,), (2,), ()), "chain")
    row = np.array([0.5, 0.5, 0.0])
    # pack_trees refuses a tree not drawn from its draft rows, so the kernels' own guard
    # is reached by packing valid draft rows and swapping in the q = 0 ones afterwards.
    ok = np.array([[0.25, 0.25, 0.5]] * 3)
    batch = pack_trees([chain], [np.array([row] * 3)], [ok])
    batch = dataclasses.replace(batch, draft=np.array([row] * 3))
    # Token level reads (accept coin, y); block (h_2, h_1, y): y at 0 -> 0, y at .7 -> 1.
    u = np.array([[[0.0, 0.0, 0.0], [0.0, 0.7, 0.7]]])
    fast_tokens, fast_len = replay_blocks(verifier, batch, u)
    ref_tokens, ref_len = reference_blocks(verifier, batch, u)
    np.testing.assert_array_equal(fast_tokens, ref_tokens)
    np.testing.assert_array_equal(fast_len, ref_len)
    assert fast_len.tolist() == [[1, 1]]
    assert fast_tokens[0, :, 0].tolist() == [0, 1]


def test_exact_membership_acceptance_counts_every_draft():
    """law-acceptance-first-draft: RRS with n = 2 on docs/theory.md §8.1, exactly.

    alpha = 1 - (1 - sum min(p, q)) (1 - sum min(r_2, q)) with r_2 = [0, 1/3, 2/3]:
    1 - (3/10)(3/5) = 41/50.  Counting only the first draft would give 7/10 + (drafts
    whose second copy is accepted missing), strictly less.
    """
    from fractions import Fraction as F

    import spectheory as stt

    p = np.array([F(3, 10), F(2, 5), F(3, 10)], dtype=object)
    q = np.array([F(3, 5), F(3, 10), F(1, 10)], dtype=object)
    assert stt.acceptance("rrs", p, q, 2) == F(41, 50)
