"""Tree and chain verification in exact arithmetic (docs/theory.md §3.9, 3.10, 4, 7.1, 8.3, 8.4).

Every drafter and verifier draws through the coins protocol, so the exact law
of the emitted block, extended to a fixed length by target sampling, is
compared with the target's joint law in Fractions: equality is losslessness.
"""

from fractions import Fraction as F
from functools import partial

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spectheory import InvalidParameterError
from spectheory.coins import enumerate_outcomes
from spectheory.exact import acceptance
from spectheory.trees import (
    TREE_REGISTRY,
    DraftTree,
    block_law,
    block_weights,
    draft_chain,
    draft_fixed,
    draft_rsd_c,
    draft_spectr,
    joint_law,
    random_markov_model,
    traversal_update,
    verify_tree,
)
from spectheory.trees.verify import _chain
from spectheory.verifiers._ops import accept_prob, normalise_or, positive_part, residual
from tests.budget import scaled


def const(*values):
    row = np.array([F(v) for v in values], dtype=object)
    return lambda prefix: row


CHAIN3 = partial(draft_chain, gamma=3)
CHAIN2 = partial(draft_chain, gamma=2)
SPECTR = partial(draft_spectr, num_sequences=2, length=2)
RSD_C = partial(draft_rsd_c, branching=(2, 1))
EAGLE_WOR = partial(draft_fixed, shape=(-1, 0, 0, 1))
EAGLE_IID = partial(draft_fixed, shape=(-1, 0, 0, 1), fill="iid")
EAGLE_TOP = partial(draft_fixed, shape=(-1, 0, 0, 1, 1), fill="top")

# (verifier, drafter, extended length): every registered verifier on every drafting scheme
# it is valid for, at depth <= 3 and V = 3.
CASES = [
    ("token", CHAIN3, 4),
    ("block", CHAIN3, 4),
    ("traversal", CHAIN3, 4),
    ("rrs", CHAIN3, 4),
    ("rrs_wor", CHAIN3, 4),
    ("kseq", CHAIN2, 3),
    ("nss", CHAIN2, 3),
    ("rrs", SPECTR, 3),
    ("kseq", SPECTR, 3),
    ("nss", SPECTR, 3),
    ("rrs_wor", RSD_C, 3),
    ("traversal", RSD_C, 3),
    ("nss", RSD_C, 3),
    ("rrs_wor", EAGLE_WOR, 3),
    ("traversal", EAGLE_WOR, 3),
    ("rrs", EAGLE_IID, 3),
    ("nss", EAGLE_TOP, 3),
]


def models(seed, vocab=3, order=1, zero_prob=0.25):
    return (
        random_markov_model(vocab, order, seed=2 * seed, zero_prob=zero_prob),
        random_markov_model(vocab, order, seed=2 * seed + 1, zero_prob=zero_prob),
    )


@pytest.mark.parametrize(("verifier", "drafter", "length"), CASES)
@scaled(1 / 30)  # 2 under ci: each example enumerates every tree
@given(seed=st.integers(0, 10**6), order=st.integers(1, 2))
def test_every_tree_verifier_is_exactly_lossless(verifier, drafter, length, seed, order):
    target, draft = models(seed, order=order)
    law = block_law(verifier, target, draft, drafter, length)
    assert law.extended == joint_law(target, length)
    assert sum(law.lengths.values()) == 1
    assert 1 <= law.block_efficiency <= length


@scaled(1 / 60)  # 1 under ci
@given(seed=st.integers(0, 10**6))
def test_chains_at_vocabulary_five(seed):
    target, draft = models(seed, vocab=5, zero_prob=0.0)
    for verifier in ("token", "block"):
        assert block_law(verifier, target, draft, CHAIN2, 3).extended == joint_law(target, 3)


@scaled(1 / 20)  # 3 under ci
@given(seed=st.integers(0, 10**6), order=st.integers(1, 2))
def test_block_dominates_token_and_traversal_equals_block_on_chains(seed, order):
    target, draft = models(seed, order=order)
    token = block_law("token", target, draft, CHAIN3, 4)
    block = block_law("block", target, draft, CHAIN3, 4)
    trav = block_law("traversal", target, draft, CHAIN3, 4)
    assert block.block_efficiency >= token.block_efficiency
    assert trav.lengths == block.lengths

    # Traversal and block verification flip the same coins on a chain: same block per branch.
    def both(coins):
        tree = draft_chain(draft, 3, coins)
        return verify_tree("block", target, draft, tree, coins)

    def trav_fn(coins):
        tree = draft_chain(draft, 3, coins)
        return verify_tree("traversal", target, draft, tree, coins)

    assert enumerate_outcomes(both) == enumerate_outcomes(trav_fn)


def test_block_verification_vector_theory_8_3():
    p, q = const("1/3", "2/3"), const("2/3", "1/3")
    token = block_law("token", p, q, CHAIN2, 3)
    block = block_law("block", p, q, CHAIN2, 3)
    assert token.block_efficiency - 1 == F(10, 9)  # alpha + alpha^2, alpha = 2/3
    assert block.block_efficiency - 1 == F(11, 9)
    assert block_law("traversal", p, q, CHAIN2, 3).block_efficiency - 1 == F(11, 9)


def test_token_level_chain_matches_the_capped_geometric_law():
    # Context-independent p, q: tau = (1 - alpha^(gamma+1)) / (1 - alpha) (docs/theory.md §1.3).
    p, q = const("3/10", "4/10", "3/10"), const("6/10", "3/10", "1/10")
    alpha = F(7, 10)
    for gamma in (1, 2, 3):
        law = block_law("token", p, q, partial(draft_chain, gamma=gamma), gamma + 1)
        assert law.block_efficiency == (1 - alpha ** (gamma + 1)) / (1 - alpha)
        for k in range(gamma):
            assert law.lengths[k + 1] == alpha**k * (1 - alpha)


@pytest.mark.parametrize(("verifier", "n"), [("rrs", 2), ("rrs", 3), ("kseq", 2), ("kseq", 3)])
def test_star_trees_reduce_to_the_single_position_verifiers(verifier, n):
    p, q = const("3/10", "4/10", "3/10"), const("6/10", "3/10", "1/10")
    law = block_law(verifier, p, q, partial(draft_spectr, num_sequences=n, length=1), 2)
    pr, qr = p(()), q(())
    assert law.block_efficiency == 1 + acceptance(verifier, pr, qr, n=n, sampling="iid")
    wor = block_law("rrs_wor", p, q, partial(draft_rsd_c, branching=(2,)), 2)
    assert wor.block_efficiency == 1 + F(7, 8)  # docs/theory.md §8.1, RRSw n = 2


def test_traversal_worked_example_theory_8_4():
    p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    w_x1 = accept_prob(1 * p[0], q[0])
    assert w_x1 == F(1, 2)
    assert accept_prob(w_x1 * p[1], q[1]) == F(2, 3)  # w(X1 X3)
    assert list(positive_part(w_x1 * p - q)) == [0, 0, F(1, 20)]
    w1, p1, q1 = traversal_update(w_x1, p, q, 1, True)
    assert (w1, list(p1), list(q1)) == (F(1, 11), [0, 0, 1], [F(6, 7), 0, F(1, 7)])
    assert accept_prob(w1 * p1[2], q1[2]) == F(7, 11)  # w(X1 X4)
    w2, _, _ = traversal_update(w1, p1, q1, 2, True)
    assert w2 == 0


def test_traversal_on_the_instance_a_tree_is_lossless():
    # Root -> a; a -> (b, c) without replacement, context-independent Instance A.
    p, q = const("3/10", "4/10", "3/10"), const("6/10", "3/10", "1/10")
    law = block_law("traversal", p, q, partial(draft_fixed, shape=(-1, 0, 1, 1)), 3)
    assert law.extended == joint_law(p, 3)


def test_block_weights_follow_the_definition():
    p, q = const("1/3", "2/3"), const("2/3", "1/3")
    chain = DraftTree((-1, 0, 1), (-1, 0, 0), ((1,), (2,), ()), "chain")
    w, h = block_weights(p, q, chain)
    assert w == [1, F(1, 2), F(1, 4)]
    z = positive_part(F(1, 2) * p(()) - q(())).sum()  # = 0
    assert h == [1, z / (z + 1 - F(1, 2)), F(1, 4)]


# --- deliberately wrong variants are biased -------------------------------------------------


def block_with_h_equal_w(target, draft, tree, coins):
    """Block verification with the stopping probability h_i replaced by w_i (wrong)."""
    nodes = _chain(tree)
    w, _ = block_weights(target, draft, tree)
    a = next((i for i in range(len(nodes), 0, -1) if coins.bernoulli(w[i])), 0)
    path = tree.path(nodes[a - 1]) if a else ()
    p = target(path)
    tail = p if a == len(nodes) else normalise_or(positive_part(w[a] * p - draft(path)), p)
    return (*tuple(tree.tokens[c] for c in nodes[:a]), coins.categorical(tail))


def rrs_dedup(target, draft, tree, coins):
    """Per-node RRS that tests a repeated i.i.d. draft only once (pitfall P1, wrong)."""
    u, out = 0, []
    while True:
        path = tree.path(u)
        p = target(path)
        if not tree.draws[u]:
            return (*out, coins.categorical(p))
        q, r = draft(path), p
        y = None
        for x in dict.fromkeys(tree.draft_tokens(u)):
            if coins.bernoulli(accept_prob(r[x], q[x])):
                y = x
                break
            r = residual(r, q)
        y = coins.categorical(r) if y is None else y
        out.append(y)
        u = tree.child_with_token(u, y)
        if u is None:
            return tuple(out)


def total_variation(a, b):
    keys = set(a) | set(b)
    return sum(abs(a.get(k, 0) - b.get(k, 0)) for k in keys) / 2


@pytest.mark.parametrize(
    ("wrong", "drafter", "length"),
    [
        (block_with_h_equal_w, CHAIN2, 3),
        (rrs_dedup, partial(draft_spectr, num_sequences=3, length=1), 2),
    ],
)
def test_wrong_variants_are_exactly_biased(wrong, drafter, length):
    p, q = const("3/10", "4/10", "3/10"), const("6/10", "3/10", "1/10")
    law = block_law(wrong, p, q, drafter, length)
    assert total_variation(law.extended, joint_law(p, length)) > F(1, 1000)


# --- registry and bad input -------------------------------------------------------------------


def test_registry_metadata_and_kind_checks():
    assert set(TREE_REGISTRY) == {"token", "block", "traversal", "rrs", "rrs_wor", "kseq", "nss"}
    assert all(v.lossless and v.arxiv for v in TREE_REGISTRY.values())
    p, q = const("1/2", "1/2"), const("1/2", "1/2")
    tree = DraftTree((-1, 0, 0), (-1, 0, 1), ((1, 2), (), ()), "without_replacement")
    for name in ("block", "token", "rrs", "kseq"):
        with pytest.raises(InvalidParameterError, match="valid for trees of kind"):
            verify_tree(name, p, q, tree, None)
    with pytest.raises(InvalidParameterError, match="verifier must be"):
        verify_tree("bogus", p, q, tree, None)
    with pytest.raises(InvalidParameterError, match="shorter than an emitted block"):
        block_law("block", p, q, CHAIN2, 2)


def test_bad_model_rows_raise():
    from spectheory import InvalidDistributionError

    chain = DraftTree((-1, 0), (-1, 0), ((1,), ()), "chain")
    with pytest.raises(InvalidDistributionError, match=r"target\[\]"):
        verify_tree("token", lambda s: [0.5, 0.6], lambda s: [0.5, 0.5], chain, None)
    with pytest.raises(InvalidDistributionError, match="tokens for prefix"):
        calls = iter([[0.5, 0.5], [0.2, 0.3, 0.5]])
        verify_tree("token", lambda s: next(calls), lambda s: [0.5, 0.5], chain, _Always0())


class _Always0:
    def bernoulli(self, prob):
        return True

    def categorical(self, probs):
        return 0
