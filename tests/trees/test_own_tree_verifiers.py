"""A researcher's own models, drafter and tree verifiers in the exact path (``block_law``).

The models are context dependent (the row depends on the whole prefix) with Fraction
rows; the oracle for the target's joint law is a brute-force product over all sequences,
written here, not :func:`~spectheory.trees.joint_law`.
"""

import itertools
from fractions import Fraction as F
from functools import partial

import numpy as np
import pytest

from spectheory import InvalidParameterError, VerifierError
from spectheory.coins import NotDeterministicError, RandomCoins
from spectheory.trees import TreeBuilder, TreeVerifier, block_law, draft_chain, verify_tree

V = 3


def target(prefix):
    s = sum(prefix) + 2 * len(prefix)
    w = [F(1 + (s + i) % 3) for i in range(V)]
    w[len(prefix) % V] += F(1, 2)
    return np.array([x / sum(w) for x in w], dtype=object)


def draft(prefix):
    w = [F(2 + (sum(prefix) * (i + 1)) % 4) for i in range(V)]
    if len(prefix) == 1:
        w[0] = F(0)
    return np.array([x / sum(w) for x in w], dtype=object)


def brute_joint(length):
    law = {}
    for seq in itertools.product(range(V), repeat=length):
        pr = F(1)
        for k in range(length):
            pr *= target(seq[:k])[seq[k]]
        if pr:
            law[seq] = pr
    return law


def my_chain(draft, coins, gamma=2):
    b, u = TreeBuilder(), 0
    for _ in range(gamma):
        u = b.draw(u, coins.categorical(draft(b.path(u))))
    return b.build("chain")


def my_token(target, draft, tree, coins, wrong_at=None):
    out, u = [], 0
    while tree.children(u):
        c = tree.children(u)[0]
        p, q, x = target(tree.path(u)), draft(tree.path(u)), tree.tokens[c]
        if coins.bernoulli(min(F(1), p[x] / q[x])):
            out.append(x)
            u = c
            continue
        if len(out) + 1 == wrong_at:
            out.append(coins.categorical(p))  # the target instead of the residual
        else:
            r = np.array([max(F(0), a - b) for a, b in zip(p, q, strict=True)], dtype=object)
            out.append(coins.categorical(r / sum(r)))
        return tuple(out)
    return (*out, coins.categorical(target(tree.path(u))))


def test_own_lossless_verifier_matches_brute_force_and_hand_tau():
    law = block_law(my_token, target, draft, my_chain, 3)
    assert law.extended == brute_joint(3)
    # tau by hand: sum over chains of q(x1) q(x2|x1) E[len | x1, x2]
    tau = F(0)
    for x1, x2 in itertools.product(range(V), repeat=2):
        q12 = draft(())[x1] * draft((x1,))[x2]
        if q12:
            a1 = min(F(1), target(())[x1] / draft(())[x1])
            a2 = min(F(1), target((x1,))[x2] / draft((x1,))[x2])
            tau += q12 * ((1 - a1) + 2 * a1 * (1 - a2) + 3 * a1 * a2)
    assert law.block_efficiency == tau
    assert block_law("token", target, draft, partial(draft_chain, gamma=2), 3).block_efficiency \
        == tau


def test_own_verifier_with_a_wrong_residual_at_depth_two_only_is_lossy():
    lossy = partial(my_token, wrong_at=2)
    lossy.__name__ = "lossy"
    assert block_law(lossy, target, draft, my_chain, 3).extended != brute_joint(3)


def no_min(target, draft, tree, coins):
    x = tree.tokens[1]
    coins.bernoulli(target(())[x] / draft(())[x])  # forgot min(1, .): 3/2 for token 1
    return (x,)


def negative_residual(target, draft, tree, coins):
    return (coins.categorical(target(()) - draft(())),)  # forgot the positive part


@pytest.mark.parametrize(("fn", "what"), [(no_min, "bernoulli prob"),
                                          (negative_residual, "categorical probs")])
def test_a_coin_refusing_a_tree_verifiers_probability_names_the_verifier_and_tree(fn, what):
    """Audit: the exact tree path raised the coin's bare InvalidParameterError, naming neither
    the verifier nor the tree (the single-position exact paths name the verifier)."""
    p = lambda s: np.array([F(1, 3), F(2, 3)], dtype=object)  # noqa: E731
    q = lambda s: np.array([F(2, 3), F(1, 3)], dtype=object)  # noqa: E731
    match = rf"verifier '{fn.__name__}' raised InvalidParameterError: {what}.*'chain' tree with " \
        r"parents \(-1, 0\) and tokens \(-1, [01]\)"
    with pytest.raises(VerifierError, match=match) as info:
        block_law(fn, p, q, partial(draft_chain, gamma=1), 2)
    assert isinstance(info.value.__cause__, InvalidParameterError)


def test_other_exceptions_of_a_tree_verifier_are_named_and_a_models_pass_through():
    def crashes(target, draft, tree, coins):
        return (1 // 0,)

    with pytest.raises(VerifierError, match="verifier 'crashes' raised ZeroDivisionError"):
        block_law(crashes, target, draft, my_chain, 3)

    def partial_target(prefix):  # the user's model has no row for (1,): its own KeyError
        return {(): [F(1, 2), F(1, 2)], (0,): [F(1, 4), F(3, 4)]}[prefix]

    half = lambda s: [F(1, 2), F(1, 2)]  # noqa: E731
    with pytest.raises(KeyError):
        block_law("token", partial_target, half, partial(draft_chain, gamma=1), 2)


@pytest.mark.parametrize("block", [(), (0, 1, 3), (0.0,), 1, None, (True,)])
def test_a_block_that_is_not_one_to_depth_plus_one_tokens_of_v_is_refused(block):
    """Audit: a verifier returning () was enumerated as exactly the target's law (the
    extension samples the target from scratch) with block efficiency 0; a token outside
    the vocabulary entered the law silently; 1 or None gave a bare TypeError."""
    with pytest.raises(InvalidParameterError, match=r"returned .* on the 'chain' tree.*\[0, 3\)"):
        block_law(lambda t, d, tree, coins: block, target, draft, my_chain, 3)


def test_a_tree_verifier_not_deterministic_given_its_coins_is_named():
    kept = []

    def keeps_coins(target, draft, tree, coins):
        kept.append(coins)
        if len(kept) > 1:
            kept[0].bernoulli(F(1, 2))  # flips the coins of an earlier, finished run
        return (coins.categorical(target(())),)

    with pytest.raises(NotDeterministicError, match="verifier 'keeps_coins'"):
        block_law(keeps_coins, target, draft, my_chain, 3)


def test_verify_tree_names_a_registered_own_verifier_and_checks_its_block():
    """Audit: verify_tree ran a user's TreeVerifier record bare: a coin refusal named neither
    verifier nor tree, and a block () or with token V was returned as is."""
    chain = draft_chain(draft, 2, RandomCoins(0))
    record = TreeVerifier("mine", negative_residual, "me", "0000", ("chain",))
    with pytest.raises(VerifierError, match=r"verifier 'mine' raised .*'chain' tree"):
        verify_tree(record, target, draft, chain, RandomCoins(1))
    for block in [(), (V,)]:
        record = TreeVerifier("mine", lambda t, d, tree, coins, b=block: b, "me", "0", ("chain",))
        with pytest.raises(InvalidParameterError, match="verifier 'mine' returned"):
            verify_tree(record, target, draft, chain, RandomCoins(1))
