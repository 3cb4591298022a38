"""numba replay of chain and tree verification, token for token against the reference."""

import numpy as np
import pytest

from spectheory import InvalidParameterError, ShapeMismatchError
from spectheory.coins import RandomCoins
from spectheory.sim.tree_replay import (
    pack_trees,
    reference_blocks,
    replay_blocks,
    replay_uniforms,
)
from spectheory.trees import draft_chain, draft_fixed, draft_rsd_c, draft_spectr
from spectheory.trees.models import as_model


def random_model(vocab, seed, zero_prob=0.3, peaked=False):
    rng = np.random.default_rng(seed)
    cache = {}

    def model(prefix):
        if prefix not in cache:
            w = rng.gamma(0.3 if peaked else 1.0, size=vocab)
            w[rng.random(vocab) < zero_prob] = 0.0
            w[rng.integers(vocab)] += 0.1
            cache[prefix] = w / w.sum()
        return cache[prefix]

    return as_model(model, "model")


def instances(drafter, n, vocab, seed, same_draft=False):
    target = random_model(vocab, seed, peaked=True)
    draft = target if same_draft else random_model(vocab, seed + 1000)
    coins = RandomCoins(seed)
    trees = [drafter(draft, coins=coins) for _ in range(n)]
    rows_p = [np.array([target(t.path(j)) for j in range(t.size)]) for t in trees]
    rows_q = [np.array([draft(t.path(j)) for j in range(t.size)]) for t in trees]
    return pack_trees(trees, rows_p, rows_q)


def uniforms(batch, verifier, trials, seed):
    k = replay_uniforms(verifier, batch)
    u = np.random.default_rng(seed).random((len(batch.trees), trials, k))
    # Boundary values: exactly 0 and the largest double below 1.
    u[:, 0, :] = 0.0
    u[:, 1, :] = np.nextafter(1.0, 0.0)
    return u


CASES = [
    ("token", lambda d, coins: draft_chain(d, 4, coins)),
    ("block", lambda d, coins: draft_chain(d, 4, coins)),
    ("rrs_wor", lambda d, coins: draft_chain(d, 3, coins)),
    ("rrs", lambda d, coins: draft_spectr(d, 3, 3, coins)),
    ("rrs", lambda d, coins: draft_fixed(d, (-1, 0, 0, 0, 1, 1, 2), coins, fill="iid")),
    ("rrs_wor", lambda d, coins: draft_rsd_c(d, (3, 2), coins)),
    ("rrs_wor", lambda d, coins: draft_fixed(d, (-1, 0, 0, 1, 1, 3), coins)),
]


@pytest.mark.parametrize(("verifier", "drafter"), CASES)
@pytest.mark.parametrize("vocab", [5, 300])
def test_kernels_match_the_reference_token_for_token(verifier, drafter, vocab):
    batch = instances(drafter, 12, vocab, seed=vocab)
    u = uniforms(batch, verifier, 40, seed=1)
    fast_tokens, fast_len = replay_blocks(verifier, batch, u)
    ref_tokens, ref_len = reference_blocks(verifier, batch, u)
    np.testing.assert_array_equal(fast_len, ref_len)
    np.testing.assert_array_equal(fast_tokens, ref_tokens)
    assert (fast_len >= 1).all() and (fast_len <= batch.depth + 1).all()


@pytest.mark.parametrize("verifier", ["token", "block", "rrs_wor"])
def test_draft_equal_to_target_accepts_everything(verifier):
    batch = instances(lambda d, coins: draft_chain(d, 3, coins), 5, 7, seed=3, same_draft=True)
    _, length = replay_blocks(verifier, batch, uniforms(batch, verifier, 20, seed=2))
    assert (length == 4).all()


def test_bad_input():
    batch = instances(lambda d, coins: draft_spectr(d, 2, 2, coins), 2, 4, seed=0)
    with pytest.raises(InvalidParameterError, match="verifier"):
        replay_blocks("kseq", batch, np.zeros((2, 1, 9)))
    with pytest.raises(InvalidParameterError, match="valid for"):
        replay_blocks("block", batch, np.zeros((2, 1, 9)))
    with pytest.raises(ShapeMismatchError, match="uniforms"):
        replay_blocks("rrs", batch, np.zeros((3, 1, 9)))
    with pytest.raises(InvalidParameterError, match=r"\[0, 1\)"):
        replay_blocks("rrs", batch, np.ones((2, 1, 9)))
    with pytest.raises(ShapeMismatchError, match="target_rows"):
        pack_trees(batch.trees, [np.zeros((1, 4))] * 2, [np.zeros((1, 4))] * 2)
