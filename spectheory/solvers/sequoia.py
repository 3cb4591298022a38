r"""Sequoia's dynamic program: the tree of largest expected block efficiency (docs/theory.md §4.3).

With a rank-acceptance vector ``acc`` (``acc[b-1]`` = probability that the
``b``-th child drawn without replacement is the accepted one, measured
offline), a tree's expected number of tokens per round, bonus included, is

.. math::

    F(T) = \sum_{v \in T} \prod_{e \in \text{path}(v)} \text{acc}[\text{rank}(e)],

the root counting 1.  Let :math:`T[m][l][b]` be the best value of a tree with
``m`` nodes (root included), at most ``l`` levels (root included) and a root
with exactly ``b`` children (Sequoia, Chen et al. [1]_, ``tree_search.py``):

.. math::

    T[1][l][0] &= 1,\qquad
    T[m][l][1] = 1 + \text{acc}[1]\,G(m-1, l-1),\\
    T[m][l][b] &= \max_{1 \le y < m}\big(T[y][l][b-1] + \text{acc}[b]\,G(m-y, l-1)\big),\\
    G(m, l) &= \max_b T[m][l][b].

The optimal tree is read back from the argmax of every step.  Children are
listed by rank, so the parent array lists a node's children in draw order.

References
----------
.. [1] Chen, May, Svirschevski, Huang, Ryabinin, Jia, Chen. "Sequoia: Scalable,
   Robust, and Hardware-aware Speculative Decoding". arXiv:2402.12374.
"""

from __future__ import annotations

import numbers
import operator
from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError
from .._validate import check_positive_int, real_array
from ._result import SolverResult

__all__ = ["SequoiaResult", "sequoia_tree", "sequoia_values", "tree_value"]


@dataclass(frozen=True)
class SequoiaResult(SolverResult):
    """The optimal tree of :func:`sequoia_tree` (the shared fields: :class:`.SolverResult`).

    Attributes
    ----------
    parents : tuple of int
        Parent array (``parents[0] == -1``), siblings in rank order.
    value : float
        Expected tokens per round :math:`G(m, l)`, bonus token included.
    budget : int
        Node budget ``m`` (root included).
    max_levels : int
        Level limit ``l`` (root included).
    method, status, message, inputs
        ``"sequoia_dp"``; ``"optimal"`` (the dynamic program is a complete
        search over trees of the budget); ``inputs`` holds ``budget`` and
        ``max_levels`` (resolved: the budget when no limit was given).
    """

    parents: tuple
    value: float
    budget: int
    max_levels: int


def _check_acc(acceptance):
    acc = real_array(acceptance, "acceptance")  # bool, str and complex entries refused
    if acc.ndim != 1 or acc.size == 0:
        raise InvalidParameterError(
            f"acceptance must be a non-empty 1-D vector (rank 1 first); got shape {acc.shape}"
        )
    bad = ~np.isfinite(acc) | (acc < 0) | (acc > 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise InvalidParameterError(f"acceptance[{i}] = {float(acc[i])!r} is not a probability")
    if acc.sum() > 1 + 1e-9:
        raise InvalidParameterError(
            f"acceptance sums to {acc.sum()!r} > 1: ranks are exclusive events"
        )
    return acc


def _tables(acc, budget, levels):
    """``T[m, l, b]`` (−inf where infeasible), ``G[m, l]`` and the split argmax."""
    M, L = budget, levels
    B = M - 1
    a = np.zeros(B + 1)  # a[b]: rank b, 1-based; ranks beyond the vector accept nothing
    k = min(B, acc.size)
    a[1 : k + 1] = acc[:k]
    T = np.full((M + 1, L + 1, B + 1), -np.inf)
    split = np.zeros((M + 1, L + 1, B + 1), dtype=np.int64)
    G = np.full((M + 1, L + 1), -np.inf)
    for lv in range(1, L + 1):
        T[1, lv, 0] = 1.0
        G[1, lv] = 1.0
        for m in range(2, M + 1):
            if lv == 1:
                continue
            if np.isfinite(G[m - 1, lv - 1]):
                T[m, lv, 1] = 1.0 + a[1] * G[m - 1, lv - 1]
                split[m, lv, 1] = 1
            for b in range(2, min(B, m - 1) + 1):
                ys = np.arange(1, m)
                sub = G[m - ys, lv - 1]
                # 0 * -inf would be nan: an infeasible subtree stays -inf whatever acc[b] is.
                ok = np.isfinite(sub)
                term = np.full(sub.shape, -np.inf)
                term[ok] = a[b] * sub[ok]
                cand = T[ys, lv, b - 1] + term
                k = int(np.argmax(cand))
                T[m, lv, b] = cand[k]
                split[m, lv, b] = ys[k]
            G[m, lv] = T[m, lv].max()
    return T, G, split


def _check_feasible(budget, levels):
    if levels == 1 and budget > 1:
        raise InvalidParameterError(
            f"max_levels=1 allows only the root, but budget={budget}; use max_levels >= 2"
        )


def sequoia_values(acceptance, budget: int, max_levels: int | None = None) -> np.ndarray:
    """:math:`G(m, l)` for every budget ``m <= budget`` at the level limit ``max_levels``.

    Parameters
    ----------
    acceptance, budget, max_levels
        As in :func:`sequoia_tree`: ``acceptance[0]`` is rank 1 (no leading
        placeholder for rank 0).

    Returns
    -------
    ndarray, shape (budget,)
        Entry ``m - 1`` is the best expected tokens per round with ``m`` nodes.

    Examples
    --------
    >>> sequoia_values([0.5, 0.25], 3).tolist()  # 1; 1 + .5; max(chain 1.75, star 1.75)
    [1.0, 1.5, 1.75]
    """
    budget = check_positive_int(budget, "budget")
    levels = budget if max_levels is None else check_positive_int(max_levels, "max_levels")
    _, G, _ = _tables(_check_acc(acceptance), budget, levels)
    _check_feasible(budget, levels)
    return G[1:, levels].copy()


def sequoia_tree(acceptance, budget: int, max_levels: int | None = None) -> SequoiaResult:
    """The optimal tree for a rank-acceptance vector and a node budget (Sequoia's DP).

    Parameters
    ----------
    acceptance : array_like, shape (R,)
        ``acceptance[b - 1]``: probability that the rank-``b`` child is accepted
        (real entries in [0, 1], sum at most 1; bool, str and complex entries
        are refused).  Ranks beyond ``R`` have acceptance 0.
    budget : int >= 1
        Number of nodes, root included.
    max_levels : int >= 1, optional
        Number of levels, root included (default: no limit).

    Returns
    -------
    SequoiaResult

    Raises
    ------
    InvalidParameterError
        An ``acceptance`` entry that is not a real number in [0, 1] (named
        with its index), entries summing above 1, or a bad ``budget`` or
        ``max_levels``.

    Examples
    --------
    With ``acc = (0.8, 0.1)`` and 3 nodes the chain (1 + .8 + .64) beats the star (1.9):

    >>> r = sequoia_tree([0.8, 0.1], 3)
    >>> r.parents, round(r.value, 12)
    ((-1, 0, 1), 2.44)
    """
    budget = check_positive_int(budget, "budget")
    levels = budget if max_levels is None else check_positive_int(max_levels, "max_levels")
    acc = _check_acc(acceptance)
    _check_feasible(budget, levels)
    T, G, split = _tables(acc, budget, levels)
    parents = [-1]

    def best_b(m, lv):
        return int(np.argmax(T[m, lv]))

    def build(root, m, lv, b):
        # The root's children by rank: unroll T[m][l][b] -> T[y][l][b-1] + child b of m-y nodes.
        sizes = []
        while b >= 1:
            y = int(split[m, lv, b])
            sizes.append(m - y)
            m, b = y, b - 1
        for size in reversed(sizes):
            parents.append(root)
            child = len(parents) - 1
            build(child, size, lv - 1, best_b(size, lv - 1))

    build(0, budget, levels, best_b(budget, levels))
    value = float(G[budget, levels])
    if abs(tree_value(parents, acc) - value) > 1e-9 * max(1.0, value):
        raise AssertionError("Sequoia reconstruction disagrees with its table")  # pragma: no cover
    return SequoiaResult(
        tuple(parents), value, budget, levels, method="sequoia_dp", status="optimal",
        message="dynamic program over (nodes, levels, root children); tree read back",
        inputs={"budget": budget, "max_levels": levels},
    )


def tree_value(parents, acceptance) -> float:
    """:math:`F(T) = \\sum_v \\prod_{e} \\text{acc}[\\text{rank}(e)]` of a parent array.

    A child's rank is its position among its siblings in the parent array.

    Parameters
    ----------
    parents : sequence of int
        ``parents[0] == -1`` (the root), ``0 <= parents[i] < i`` otherwise.
    acceptance : array_like, shape (R,)
        As in :func:`sequoia_tree`.

    Raises
    ------
    InvalidParameterError
        An entry of ``parents`` that is not an integer (floats, bools and
        strings are refused, not truncated or parsed), a first entry other
        than -1, a parent that is not an earlier node, or a bad ``acceptance``.

    >>> tree_value((-1, 0, 0, 1), [0.5, 0.25])  # 1 + .5 + .25 + .5 * .5
    2.0
    """
    acc = _check_acc(acceptance)
    try:
        items = list(parents)
    except TypeError:
        raise InvalidParameterError(
            f"parents must be a sequence of integers; got {parents!r}"
        ) from None
    for i, x in enumerate(items):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral):
            raise InvalidParameterError(
                f"parents[{i}] must be an integer; got {x!r} of type {type(x).__name__}"
            )
    parents = tuple(operator.index(x) for x in items)
    if not parents or parents[0] != -1:
        raise InvalidParameterError(f"parents must start with -1; got {parents}")
    weight = [1.0]
    seen = [0] * len(parents)
    for i in range(1, len(parents)):
        u = parents[i]
        if not 0 <= u < i:
            raise InvalidParameterError(f"parents[{i}] = {u} must lie in [0, {i})")
        seen[u] += 1
        rank = seen[u]
        weight.append(weight[u] * (acc[rank - 1] if rank <= acc.size else 0.0))
    return float(sum(weight))
