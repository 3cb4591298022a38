"""Sequoia's tree DP against brute force over every tree, and docs/theory.md §8.6."""

import re
from pathlib import Path

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


def test_theory_8_6_vector_pastes_into_the_api():
    # The vector shown in docs/theory.md §8.6, pasted as written, gives the values listed there.
    text = (Path(__file__).parents[2] / "docs" / "theory.md").read_text(encoding="utf-8")
    section = text[text.index("### 8.6") : text.index("### 8.7")]
    namespace = {}
    exec(re.search(r"```\n(acc = .*?)```", section, re.S).group(1), namespace)
    assert namespace["acc"] == ACC_86
    g = sequoia_values(namespace["acc"], 64, max_levels=10)
    assert [round(float(x), 3) for x in g[[0, 1, 3, 7, 15, 31, 63]]] == [
        1, 1.634, 2.291, 2.732, 3.130, 3.501, 3.852
    ]


@pytest.mark.parametrize(
    ("parents", "match"),
    [
        ((-1, 0.9, 0.2), r"parents\[1\] must be an integer; got 0.9"),  # was truncated to 0, 0
        ((-1.5, 0), r"parents\[0\] must be an integer; got -1.5"),  # was read as -1
        ((-1, True), r"parents\[1\] must be an integer; got True"),
        ((-1, "0"), r"parents\[1\] must be an integer; got '0'"),
        (5, "parents must be a sequence of integers; got 5"),
    ],
)
def test_tree_value_refuses_non_integer_parents(parents, match):
    with pytest.raises(InvalidParameterError, match=match):
        tree_value(parents, [0.5, 0.25])


def test_tree_value_takes_numpy_integer_parents():
    assert tree_value(np.array([-1, 0, 0, 1]), [0.5, 0.25]) == 2.0


@pytest.mark.parametrize(
    ("acc", "match"),
    [
        (["0.5"], "acceptance must hold real numbers; got '0.5' of type str at index 0"),
        ([True, False], "acceptance must hold real numbers; got True of type bool at index 0"),
        ([0.5, np.True_], "acceptance must hold real numbers; got .*True.* at index 1"),
        ([0.5 + 0j], r"acceptance must hold real numbers; got \(0.5\+0j\) of type complex"),
        (np.array([True, False]), "acceptance must hold real numbers; got an array of dtype bool"),
        ([np.nan], r"acceptance\[0\] = nan is not a probability"),
    ],
)
def test_acceptance_refuses_str_bool_and_complex(acc, match):
    for call in (lambda: sequoia_tree(acc, 3), lambda: sequoia_values(acc, 3)):
        with pytest.raises(InvalidParameterError, match=match):
            call()
    with pytest.raises(InvalidParameterError, match=match):
        tree_value((-1, 0), acc)
