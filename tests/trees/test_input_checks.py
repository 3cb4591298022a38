"""Input checks of spectheory.trees: bad trees, drafters, models and parameters are refused."""

from fractions import Fraction as F
from functools import partial

import numpy as np
import pytest

from spectheory import InvalidParameterError
from spectheory.coins import RandomCoins
from spectheory.trees import (
    CachedModel,
    DraftTree,
    MarkovModel,
    block_law,
    draft_chain,
    draft_fixed,
    draft_rsd_c,
    draft_spectr,
    joint_law,
    random_markov_model,
)

P3 = lambda s: np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)  # noqa: E731


def _chain_to(token):
    return lambda draft, coins: DraftTree((-1, 0), (-1, token), ((1,), ()), "chain")


def test_block_law_refuses_a_tree_token_of_draft_probability_zero():
    # Before: tau = 2 and an extended law other than the target's, silently.
    q = lambda s: np.array([F(1, 2), F(1, 2), F(0)], dtype=object)  # noqa: E731
    with pytest.raises(InvalidParameterError, match="draft probability 0"):
        block_law("rrs", P3, q, _chain_to(2), 2)
    with pytest.raises(InvalidParameterError, match="draft probability 0"):
        block_law(lambda t, d, tree, c: (0, 0), P3, q, _chain_to(2), 2)  # plain functions too


def test_block_law_refuses_different_vocabularies_and_tokens_outside_them():
    p2 = lambda s: [0.5, 0.5]  # noqa: E731
    q3 = lambda s: [0.6, 0.3, 0.1]  # noqa: E731
    with pytest.raises(InvalidParameterError, match="different vocabularies: 2 and 3"):
        block_law("token", p2, q3, partial(draft_chain, gamma=1), 2)
    with pytest.raises(InvalidParameterError, match="outside the vocabulary"):
        block_law("token", p2, p2, _chain_to(5), 2)


def test_block_law_still_exact_on_valid_trees():
    t, d = random_markov_model(3, 1, seed=1), random_markov_model(3, 1, seed=2)
    law = block_law("rrs", t, d, partial(draft_spectr, num_sequences=2, length=2), 3)
    assert law.extended == joint_law(t, 3)


@pytest.mark.parametrize("bad", ["x", 0, -1, 2.5, True])
def test_block_law_names_max_leaves(bad):
    with pytest.raises(InvalidParameterError, match="max_leaves"):
        block_law("token", P3, P3, partial(draft_chain, gamma=1), 2, max_leaves=bad)


def test_block_law_refuses_a_drafter_that_returns_no_tree():
    with pytest.raises(InvalidParameterError, match="DraftTree"):
        block_law("token", P3, P3, lambda draft, coins: (0, 1), 2)
    with pytest.raises(InvalidParameterError, match="drafter"):
        block_law("token", P3, P3, None, 2)


@pytest.mark.parametrize(
    "parents, tokens",
    [
        ((-1, 0, 0.9), (-1, 0, 1)),  # int(0.9) = 0 before
        ((-1, 0, 0), (-1, 0, 1.9)),
        ((-1, 0, 0), (-1, True, 1)),
        ((-1, 0, 0), (-1, "0", 1)),
        ((-1, 0, 0), (-1, 0, np.float64(1.0))),
    ],
)
def test_draft_tree_refuses_non_integer_parents_and_tokens(parents, tokens):
    with pytest.raises(InvalidParameterError, match=r"(parents|tokens)\[\d\] must be an int"):
        DraftTree(parents, tokens, ((1, 2), (), ()), "iid")


def test_draft_tree_refuses_non_integer_draws_and_accepts_numpy_ints():
    with pytest.raises(InvalidParameterError, match=r"draws\[0\]\[1\] must be an int"):
        DraftTree((-1, 0, 0), (-1, 0, 1), ((1, 2.0), (), ()), "iid")
    with pytest.raises(InvalidParameterError, match="draws"):
        DraftTree((-1, 0, 0), (-1, 0, 1), 5, "iid")
    t = DraftTree(np.array([-1, 0, 0]), (np.int64(-1), np.int32(0), 1), ((1, 2), (), ()), "iid")
    assert t.parents == (-1, 0, 0) and all(type(x) is int for x in t.tokens)


def test_draft_tree_message_names_the_node():
    with pytest.raises(InvalidParameterError, match="of node 0"):
        DraftTree((-1, 0), (-1, 1), ((1, 0), ()), "iid")


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"order": True}, "order"),
        ({"order": -1}, "order"),
        ({"order": 1.0}, "order"),
        ({"denominator": 2.5}, "denominator"),
        ({"denominator": 0}, "denominator"),
        ({"denominator": -3}, "denominator"),
        ({"denominator": True}, "denominator"),
        ({"zero_prob": float("nan")}, "zero_prob"),
        ({"zero_prob": "0.1"}, "zero_prob"),
    ],
)
def test_random_markov_model_checks_its_parameters(kw, match):
    with pytest.raises(InvalidParameterError, match=match):
        random_markov_model(3, **kw)


def test_random_markov_model_accepts_numpy_order():
    assert random_markov_model(2, np.int64(1)).order == 1


def test_markov_model_refuses_a_negative_order():
    with pytest.raises(InvalidParameterError, match="order"):
        MarkovModel({(): [1.0]}, -1, ())


@pytest.mark.parametrize("prefix", [(1.7,), (True,), ("1",), (0, 1.0)])
def test_cached_model_refuses_non_integer_prefix_tokens(prefix):
    m = CachedModel(lambda s: [0.5, 0.5], "draft")
    m((1,))
    m((0, 1))
    with pytest.raises(InvalidParameterError, match="prefix"):
        m(prefix)


def test_cached_model_accepts_numpy_and_list_prefixes():
    m = CachedModel(lambda s: [0.5, 0.5], "draft")
    assert m([np.int64(1)]).tolist() == m((1,)).tolist() == [0.5, 0.5]


@pytest.mark.parametrize(
    "call",
    [
        lambda q: draft_chain(q, 2, None),
        lambda q: draft_chain(q, 2, 0),
        lambda q: draft_spectr(q, 2, 2, None),
        lambda q: draft_rsd_c(q, (2,), None),
        lambda q: draft_fixed(q, (-1, 0, 0), None),
        lambda q: draft_fixed(q, (-1, 0, 0), None, fill="iid"),
    ],
)
def test_drafters_name_the_coins_argument(call):
    with pytest.raises(InvalidParameterError, match="coins"):
        call(lambda s: [0.5, 0.5])


def test_draft_fixed_top_needs_no_coins():
    assert draft_fixed(lambda s: [0.2, 0.8], (-1, 0), None, fill="top").tokens == (-1, 1)


@pytest.mark.parametrize("branching", [{2: 1}, {2}, "21", np.array(2), 2, None])
def test_draft_rsd_c_refuses_a_non_sequence_branching(branching):
    with pytest.raises(InvalidParameterError, match="branching"):
        draft_rsd_c(lambda s: [0.5, 0.5], branching, RandomCoins(0))


def test_draft_rsd_c_accepts_a_numpy_branching():
    t = draft_rsd_c(lambda s: [0.5, 0.5], np.array([2]), RandomCoins(0))
    assert t.size == 3
