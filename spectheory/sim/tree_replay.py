r"""Replay chain and tree verification on many coin draws: numba kernels and their reference.

An *instance* is a drafted :class:`~spectheory.trees.DraftTree` with the
target's and the draft's next-token rows at every node (recorded once, e.g.
from the real model by :mod:`spectheory.trees.lm`).  :func:`pack_trees`
packs instances into flat arrays; :func:`replay_blocks` runs ``T`` trials of a
verifier on each, fed pre-drawn uniforms of shape (I, T, K), and returns the
emitted blocks.  :func:`reference_blocks` runs the reference verifiers of
:mod:`spectheory.trees.verify` with :class:`~spectheory.coins.ReplayCoins` on
the same uniforms: the two agree token for token (``tests/sim/test_tree_replay.py``).
The mean block length over trials estimates the block efficiency
:math:`\tau = E[|\text{block}|]` conditional on the drafted tree.

Kernel verifiers (:data:`REPLAY_VERIFIERS`): ``"token"`` and ``"block"`` on
chains, ``"rrs"`` (i.i.d. trees) and ``"rrs_wor"`` (trees drawn without
replacement, chains) per node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError, ShapeMismatchError
from .._validate import as_distribution, check_choice, check_uniforms
from ..coins import ReplayCoins
from ..trees import DraftTree, get_tree_verifier

__all__ = ["REPLAY_VERIFIERS", "TreeBatch", "pack_trees", "reference_blocks", "replay_blocks",
           "replay_uniforms"]  # fmt: skip

#: Verifiers with a replay kernel.
REPLAY_VERIFIERS = ("token", "block", "rrs", "rrs_wor")


@dataclass(frozen=True)
class TreeBatch:
    """Packed instances (see :func:`pack_trees`).

    Attributes
    ----------
    trees : tuple of DraftTree, length I
    target, draft : ndarray, shape (N, V)
        Rows of every node of every tree, tree after tree, in node order.
    root : ndarray, shape (I,)
        Global index of each tree's root.
    tokens : ndarray, shape (N,)
    draw_ptr : ndarray, shape (N + 1,)
    draw_child : ndarray, shape (D,)
        Draws of node ``g`` (global child indices, in draw order):
        ``draw_child[draw_ptr[g]:draw_ptr[g + 1]]``.
    """

    trees: tuple
    target: np.ndarray
    draft: np.ndarray
    root: np.ndarray
    tokens: np.ndarray
    draw_ptr: np.ndarray
    draw_child: np.ndarray

    @property
    def depth(self) -> int:
        return max(t.depth for t in self.trees)


def _rows(raw, name, tree, i, vocab):
    """Instance ``i``'s node rows as checked float64 distributions of shape (tree.size, V)."""
    try:
        shape = tuple(np.shape(raw))
    except ValueError:  # ragged nested lists
        raise ShapeMismatchError(f"{name} cannot be read as an array of rows") from None
    want = (tree.size, shape[-1] if vocab is None and shape else vocab)
    if shape != want:
        raise ShapeMismatchError(f"{name} has shape {shape}; tree {i} needs {want}")
    # Checked once here, not per trial: finite, non-negative, summing to 1 within the
    # tolerance of the input's dtype (renormalised within it).
    return as_distribution(raw, name)[0]


def pack_trees(trees, target_rows, draft_rows) -> TreeBatch:
    """Pack drafted trees and their node rows.

    Parameters
    ----------
    trees : sequence of DraftTree, length I
    target_rows, draft_rows : sequence of array_like, each (N_i, V)
        Row ``j`` of instance ``i``: :math:`p(\\cdot \\mid \\text{path}(j))` and
        :math:`q(\\cdot \\mid \\text{path}(j))` at node ``j`` of ``trees[i]``
        (rows must be distributions, draft rows of leaves included, though unused).

    Returns
    -------
    TreeBatch
        Rows in float64, renormalised to sum to 1.

    Raises
    ------
    ShapeMismatchError
        ``target_rows[i]`` or ``draft_rows[i]`` is not of shape ``(N_i, V)``.
    InvalidParameterError
        A tree token outside the vocabulary, or one whose parent's draft row
        gives it probability 0 (the tree was not drawn from ``draft_rows``).
    InvalidDistributionError
        A row is not finite and non-negative, or does not sum to 1 within
        :data:`~spectheory._validate.SUM_TOLERANCE` for its dtype; the error
        names ``target_rows[i]`` / ``draft_rows[i]`` and the row.
    """
    trees = tuple(trees)
    if not trees or not all(isinstance(t, DraftTree) for t in trees):
        raise InvalidParameterError("trees must be a non-empty sequence of DraftTree")
    if len(target_rows) != len(trees) or len(draft_rows) != len(trees):
        raise ShapeMismatchError(
            f"got {len(trees)} trees, {len(target_rows)} target and {len(draft_rows)} draft "
            "row blocks"
        )
    tp, dp, root, tokens, ptr, child = [], [], [], [], [0], []
    offset = 0
    vocab = None
    for i, tree in enumerate(trees):
        p = _rows(target_rows[i], f"target_rows[{i}]", tree, i, vocab)
        vocab = p.shape[1]
        q = _rows(draft_rows[i], f"draft_rows[{i}]", tree, i, vocab)
        bad = tree.tokens[1:] and max(tree.tokens[1:]) >= vocab
        if bad:
            raise InvalidParameterError(f"tree {i} has a token >= V = {vocab}")
        # As verify_tree and block_law: a drawn token of draft probability 0 means the tree
        # was not drawn from these rows; the kernels would reject it with certainty and
        # sample the residual (p - q)_+, which then emits a law other than the target's.
        for c in range(1, tree.size):
            u, t = tree.parents[c], tree.tokens[c]
            if not q[u, t] > 0:
                raise InvalidParameterError(
                    f"tree {i} node {c} (token {t} after {list(tree.path(u))}) has draft "
                    f"probability 0 in draft_rows[{i}][{u}]: the tree was not drawn from "
                    "these draft rows"
                )
        tp.append(p)
        dp.append(q)
        root.append(offset)
        tokens.extend([-1, *tree.tokens[1:]])
        for u in range(tree.size):
            child.extend(offset + c for c in tree.draws[u])
            ptr.append(len(child))
        offset += tree.size
    return TreeBatch(
        trees,
        np.concatenate(tp),
        np.concatenate(dp),
        np.array(root, dtype=np.int64),
        np.array(tokens, dtype=np.int64),
        np.array(ptr, dtype=np.int64),
        np.array(child, dtype=np.int64),
    )


def _check(verifier, batch):
    check_choice(verifier, "verifier", REPLAY_VERIFIERS)
    kinds = get_tree_verifier(verifier).kinds
    for i, t in enumerate(batch.trees):
        if t.kind not in kinds:
            raise InvalidParameterError(
                f"verifier {verifier!r} is valid for {kinds} trees; tree {i} is {t.kind!r}"
            )
    if verifier in ("token", "block"):
        gammas = {t.depth for t in batch.trees}
        if len(gammas) != 1:
            raise InvalidParameterError(f"chains of one length are needed; got lengths {gammas}")


def replay_uniforms(verifier, batch: TreeBatch) -> int:
    """The most uniforms one trial of ``verifier`` can consume on ``batch`` (``K``)."""
    _check(verifier, batch)
    if verifier in ("token", "block"):
        return batch.depth + 1
    most = 0
    for t in batch.trees:
        need = [0] * t.size
        for u in range(t.size):
            need[u] = (need[t.parents[u]] if u else 0) + len(t.draws[u]) + 1
        most = max(most, max(need))
    return most


def _chain_arrays(batch):
    G = batch.depth
    P = batch.target.reshape(-1, G + 1, batch.target.shape[1])
    Q = batch.draft.reshape(-1, G + 1, batch.draft.shape[1])[:, :G]
    X = batch.tokens.reshape(-1, G + 1)[:, 1:]
    return np.ascontiguousarray(P), np.ascontiguousarray(Q), np.ascontiguousarray(X)


def _check_uniforms(u, batch, k):
    u = np.ascontiguousarray(u, dtype=np.float64)
    if u.ndim != 3 or u.shape[0] != len(batch.trees) or u.shape[2] < k:
        raise ShapeMismatchError(
            f"uniforms must have shape ({len(batch.trees)}, T, >= {k}); got {u.shape}"
        )
    return check_uniforms(u, u.shape, "uniforms")  # the range check, naming the entry


def replay_blocks(verifier, batch: TreeBatch, uniforms):
    """Emitted blocks of ``T`` trials per instance, by the numba kernels.

    Parameters
    ----------
    verifier : {"token", "block", "rrs", "rrs_wor"}
    batch : TreeBatch
    uniforms : ndarray, shape (I, T, K)
        ``K >= replay_uniforms(verifier, batch)``.

    Returns
    -------
    tokens : ndarray of int64, shape (I, T, depth + 1)
        Each block, padded with -1.
    length : ndarray of int64, shape (I, T)
    """
    from . import _tree_kernels as kern

    k = replay_uniforms(verifier, batch)
    u = _check_uniforms(uniforms, batch, k)
    if verifier == "block":
        return kern.run_block(*_chain_arrays(batch), u)
    return kern.run_walk(batch.target, batch.draft, batch.root, batch.tokens, batch.draw_ptr,
                         batch.draw_child, batch.depth, verifier, u)  # fmt: skip


def reference_blocks(verifier, batch: TreeBatch, uniforms):
    """The same as :func:`replay_blocks`, by the reference verifiers with ReplayCoins."""
    k = replay_uniforms(verifier, batch)
    u = _check_uniforms(uniforms, batch, k)
    n_inst, T, _ = u.shape
    out = np.full((n_inst, T, batch.depth + 1), -1, dtype=np.int64)
    length = np.zeros((n_inst, T), dtype=np.int64)
    fn = get_tree_verifier(verifier).function
    for i, tree in enumerate(batch.trees):
        lo = batch.root[i]
        rows = {tree.path(j): j for j in range(tree.size)}

        def target(path, lo=lo, rows=rows):
            return batch.target[lo + rows[tuple(path)]]

        def draft(path, lo=lo, rows=rows):
            return batch.draft[lo + rows[tuple(path)]]

        for t in range(T):
            block = fn(target, draft, tree, ReplayCoins(u[i, t]))
            out[i, t, : len(block)] = block
            length[i, t] = len(block)
    return out, length
