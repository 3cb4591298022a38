"""Draft trees: structure validation, exact draft laws, RSD-S by a Monte Carlo test."""

from fractions import Fraction as F
from functools import partial

import numpy as np
import pytest
from scipy import stats

from spectheory import InvalidParameterError
from spectheory.coins import RandomCoins, ReplayCoins, enumerate_outcomes
from spectheory.exact import ordered_draft_law
from spectheory.trees import (
    DraftTree,
    draft_chain,
    draft_fixed,
    draft_rsd_c,
    draft_rsd_s,
    draft_spectr,
    joint_law,
    random_markov_model,
    shape_from_branching,
    verify_tree,
)
from spectheory.trees.models import as_model

#: False-alarm rate of every Monte Carlo test in this file.
ALPHA = 1e-6

Q = np.array([F(1, 2), F(1, 3), F(1, 6)], dtype=object)


def const_q(prefix):
    return Q


def float_model(model):
    """A float64, cached copy of an exact model (one cache shared by every trial)."""
    return as_model(lambda prefix: model(prefix).astype(np.float64), "model")


def test_tree_validation_names_the_problem():
    with pytest.raises(InvalidParameterError, match="parents\\[2\\] = 2"):
        DraftTree((-1, 0, 2), (-1, 0, 1), ((1,), (), ()), "iid")
    with pytest.raises(InvalidParameterError, match="same token"):
        DraftTree((-1, 0, 0), (-1, 1, 1), ((1, 2), (), ()), "iid")
    with pytest.raises(InvalidParameterError, match="must list exactly the children"):
        DraftTree((-1, 0), (-1, 1), ((), ()), "iid")
    with pytest.raises(InvalidParameterError, match="cannot repeat a draw"):
        DraftTree((-1, 0), (-1, 1), ((1, 1), ()), "without_replacement")
    with pytest.raises(InvalidParameterError, match="at most one child"):
        DraftTree((-1, 0, 0), (-1, 0, 1), ((1, 2), (), ()), "chain")
    with pytest.raises(InvalidParameterError, match="kind"):
        DraftTree((-1,), (-1,), ((),), "beam")
    with pytest.raises(InvalidParameterError, match="root"):
        DraftTree((0,), (-1,), ((),), "iid")
    with pytest.raises(InvalidParameterError, match="gamma"):
        draft_chain(const_q, 0, None)
    with pytest.raises(InvalidParameterError, match="branching"):
        draft_rsd_c(const_q, 2, None)
    with pytest.raises(InvalidParameterError, match="shape"):
        draft_fixed(const_q, (-1, 1), None)
    with pytest.raises(InvalidParameterError, match="fill"):
        draft_fixed(const_q, (-1, 0), None, fill="beam")
    with pytest.raises(InvalidParameterError, match="RandomCoins"):
        draft_rsd_s(const_q, 2, 2, ReplayCoins([0.5]))


def test_chain_law_is_the_product_of_draft_conditionals():
    draft = random_markov_model(3, 1, seed=5, zero_prob=0.3)
    law = enumerate_outcomes(lambda c: draft_chain(draft, 3, c).path(3))
    assert law == joint_law(draft, 3)


def test_rsd_c_children_follow_the_without_replacement_law():
    law = enumerate_outcomes(lambda c: draft_rsd_c(const_q, (2, 1), c).draft_tokens(0))
    assert law == dict(ordered_draft_law(Q, 2, "without_replacement"))
    tree = draft_rsd_c(const_q, (2, 2), ReplayCoins([0.1] * 6))
    assert tree.size == 7 and tree.depth == 2 and tree.kind == "without_replacement"


def test_rsd_c_stops_at_the_support():
    q = np.array([F(1), F(0), F(0)], dtype=object)
    tree = draft_rsd_c(lambda s: q, (3,), ReplayCoins([0.5]))
    assert tree.draft_tokens(0) == (0,)


def test_spectr_merges_sequences_with_multiplicities():
    # Two sequences (a, b) and (a, c): a has multiplicity 2 and draws (b, c) in sequence order.
    u = [0.1, 0.6, 0.2, 0.9]  # a, b | a, c   on q = (1/2, 1/3, 1/6)
    tree = draft_spectr(const_q, 2, 2, ReplayCoins(u))
    assert tree.draft_tokens(0) == (0, 0) and tree.multiplicity(1) == 2
    assert tree.draft_tokens(1) == (1, 2)
    # Per node, the draws are i.i.d. from q.
    law = enumerate_outcomes(lambda c: draft_spectr(const_q, 3, 1, c).draft_tokens(0))
    assert law == dict(ordered_draft_law(Q, 3, "iid"))


def test_fixed_shapes():
    shape = shape_from_branching((2, 1))
    assert shape == (-1, 0, 0, 1, 2)
    wor = draft_fixed(const_q, shape, ReplayCoins([0.1, 0.1, 0.1, 0.1]))
    assert wor.draft_tokens(0) == (0, 1) and wor.size == 5
    # i.i.d.: a repeated child is merged and its shape below it is not drafted.
    iid = draft_fixed(const_q, shape, ReplayCoins([0.1, 0.2, 0.7]), fill="iid")
    assert iid.draft_tokens(0) == (0, 0) and iid.size == 3 and iid.kind == "iid"
    top = draft_fixed(const_q, shape, None, fill="top")
    assert top.draft_tokens(0) == (0, 1) and top.draft_tokens(1) == (0,)
    assert top.kind == "deterministic"


def test_rsd_s_structure():
    draft = random_markov_model(4, 1, seed=3)
    for seed in range(20):
        tree = draft_rsd_s(draft, 3, 3, RandomCoins(seed))
        assert tree.kind == "without_replacement"
        per_level = np.bincount([tree.node_depth(i) for i in range(tree.size)])
        assert per_level.tolist() == [1, 3, 3, 3]


def test_rsd_s_first_child_is_distributed_as_q():
    # The best perturbed child of the root is a Gumbel-max sample: law q (chi-square, ALPHA).
    n = 3000
    counts = np.zeros(3)
    coins = RandomCoins(2)
    q = float_model(const_q)
    for _ in range(n):
        counts[draft_rsd_s(q, 2, 1, coins).draft_tokens(0)[0]] += 1
    expected = n * Q.astype(float)
    assert stats.chisquare(counts, expected).pvalue > ALPHA


def test_rsd_s_with_rrs_without_replacement_is_lossless_monte_carlo():
    """Chi-square test of the extended block law against the target joint, ALPHA = 1e-6.

    Power (Pearson at 1e-6, 27 cells, 4,000 draws): a bias of total variation 0.08 in
    any direction is caught with probability 0.99 (noncentrality 4 n TV^2 >= 93);
    at TV 0.05 only with probability about 0.2 in the worst direction (mass moved in
    proportion to p), so smaller biases need more samples: it guards the claim that
    the random number of kept children leaves RRSw lossless against gross errors.
    """
    target = random_markov_model(3, 1, seed=11)
    draft = float_model(random_markov_model(3, 1, seed=12))
    joint = joint_law(target, 3)
    target = float_model(target)
    keys = sorted(joint)
    index = {k: i for i, k in enumerate(keys)}
    counts = np.zeros(len(keys))
    rng = np.random.default_rng(0)
    coins = RandomCoins(rng)
    n = 4000
    for _ in range(n):
        tree = draft_rsd_s(draft, 2, 2, coins)
        seq = verify_tree("rrs_wor", target, draft, tree, coins)
        while len(seq) < 3:
            seq = (*seq, coins.categorical(target(seq)))
        counts[index[seq]] += 1
    expected = n * np.array([float(joint[k]) for k in keys])
    assert stats.chisquare(counts, expected).pvalue > ALPHA


def test_rsd_s_monte_carlo_test_has_power():
    """The same test rejects a biased pairing: trees drafted from q verified as if from p."""
    target = random_markov_model(3, 1, seed=11)
    draft = float_model(random_markov_model(3, 1, seed=12))
    joint = joint_law(target, 2)
    target = float_model(target)
    keys = sorted(joint)
    index = {k: i for i, k in enumerate(keys)}
    counts = np.zeros(len(keys))
    coins = RandomCoins(1)
    n = 2000
    for _ in range(n):
        tree = draft_rsd_s(draft, 2, 1, coins)
        seq = verify_tree("rrs_wor", target, target, tree, coins)  # wrong q
        seq = (*seq, coins.categorical(target(seq))) if len(seq) < 2 else seq
        counts[index[seq]] += 1
    expected = n * np.array([float(joint[k]) for k in keys])
    assert stats.chisquare(counts, expected).pvalue < ALPHA


def test_partial_drafters_plug_into_block_law():
    from spectheory.trees import block_law

    target = random_markov_model(3, 1, seed=1)
    law = block_law("rrs_wor", target, target, partial(draft_rsd_c, branching=(2,)), 2)
    assert law.block_efficiency == 2  # draft = target: the root always accepts a child
