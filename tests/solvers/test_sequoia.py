"""Sequoia's tree DP against brute force over every tree, and docs/theory.md §8.6."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spectheory import InvalidParameterError
from spectheory.solvers.sequoia import sequoia_tree, sequoia_values, tree_value
from tests.budget import scaled

# docs/theory.md §8.6 (Sequoia's acceptance-rate-vector.pt, the leading 0 and trailing P(none)
# dropped).
ACC_86 = [.6342, .1079, .0570, .0225, .0195, .0150, .0045, .0030, .0120, .0045, .0075, .0045,
          .0060, .0030, .0015, .0030, .0015, .0030, 0, .0030, .0030, .0030, 0, .0015, 0, .0015,
          0, 0, 0, .0015, .0015, .0015]  # fmt: skip


def ordered_trees(m):
    """Every ordered rooted tree with m nodes, as nested tuples of children."""
    if m == 1:
        return [()]
    out = []
    # The first child subtree has k nodes, the rest of the root's children m - 1 - k.
    for k in range(1, m):
        for first in ordered_trees(k):
            for rest in ordered_trees(m - k):
                out.append((first, *rest))
    return out


def value(tree, acc):
    return 1.0 + sum((acc[b] if b < len(acc) else 0.0) * value(c, acc) for b, c in enumerate(tree))


def levels(tree):
    return 1 + max((levels(c) for c in tree), default=0)


def test_enumeration_counts_are_catalan():
    assert [len(ordered_trees(m)) for m in range(1, 8)] == [1, 1, 2, 5, 14, 42, 132]


@scaled(5 / 12)  # 25 under ci
@given(
    raw=st.lists(st.integers(0, 20), min_size=1, max_size=5),
    budget=st.integers(1, 8),
    max_levels=st.integers(2, 8),
)
def test_dp_equals_brute_force_over_all_trees(raw, budget, max_levels):
    acc = np.array(raw, dtype=float) / (sum(raw) + 3)
    best = max(value(t, acc) for t in ordered_trees(budget) if levels(t) <= max_levels)
    result = sequoia_tree(acc, budget, max_levels)
    assert abs(result.value - best) <= 1e-12
    assert abs(tree_value(result.parents, acc) - best) <= 1e-12
    assert len(result.parents) == budget
    depth = [0] * budget
    for i in range(1, budget):
        depth[i] = depth[result.parents[i]] + 1
    assert max(depth) + 1 <= max_levels
    assert abs(sequoia_values(acc, budget, max_levels)[-1] - best) <= 1e-12


def test_theory_8_6_values():
    g = sequoia_values(ACC_86, 64, 10)
    got = [round(float(g[m - 1]), 3) for m in (1, 2, 4, 8, 16, 32, 64)]
    assert got == [1, 1.634, 2.291, 2.732, 3.130, 3.501, 3.852]


def test_high_first_rank_gives_a_chain_and_flat_ranks_a_star():
    assert sequoia_tree([0.9, 0.05], 4).parents == (-1, 0, 1, 2)
    assert sequoia_tree([0.3, 0.3, 0.3], 4).parents == (-1, 0, 0, 0)
    assert sequoia_tree([0.9, 0.05], 4, max_levels=2).parents == (-1, 0, 0, 0)


def test_bad_input():
    with pytest.raises(InvalidParameterError, match="acceptance\\[1\\]"):
        sequoia_tree([0.5, -0.1], 3)
    with pytest.raises(InvalidParameterError, match="sums to"):
        sequoia_tree([0.7, 0.6], 3)
    with pytest.raises(InvalidParameterError, match="budget"):
        sequoia_tree([0.5], 0)
    with pytest.raises(InvalidParameterError, match="max_levels=1"):
        sequoia_tree([0.5], 3, max_levels=1)
    with pytest.raises(InvalidParameterError, match="parents"):
        tree_value((0, 0), [0.5])
