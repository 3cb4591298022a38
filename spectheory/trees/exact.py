r"""Exact laws of drafting + tree verification on small autoregressive models (docs/theory.md §7.1).

The drafter and the verifier draw every random choice through the coins
protocol, so :func:`spectheory.coins.enumerate_outcomes` runs both under every
branch and returns the exact law of the emitted block.  With Fraction models
(:func:`~spectheory.trees.random_markov_model`) the law is rational.
A block of random length is extended to a fixed ``length`` by sampling the
target, :math:`y_{k+1} \sim p(\cdot \mid y_{\le k})`; a lossless verifier
then gives exactly the target's joint law

.. math::

    P(y_1..y_L) = \prod_{k=1}^{L} p(y_k \mid y_{<k}),

and the block efficiency :math:`\tau = E[|\text{block}|]` (bonus token
included, docs/theory.md §4.4) exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import InvalidParameterError
from .._validate import check_positive_int
from ..coins import NotDeterministicError, enumerate_outcomes
from ._registry import _check_tree_against_models, call_tree_verifier, get_tree_verifier
from ._tree import DraftTree
from .models import as_model

__all__ = ["BlockLaw", "block_law", "joint_law"]


@dataclass(frozen=True)
class BlockLaw:
    """Exact result of :func:`block_law`.

    Attributes
    ----------
    extended : dict
        ``tuple of length L -> probability``: the emitted block extended by target sampling.
    lengths : dict
        ``block length -> probability``.
    block_efficiency : scalar
        :math:`\\tau = E[|\\text{block}|]`, bonus token included.
    """

    extended: dict
    lengths: dict
    block_efficiency: object


def joint_law(target, length: int) -> dict:
    """The target's exact joint law of the next ``length`` tokens.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> law = joint_law(lambda s: [F(1, 4), F(3, 4)], 2)
    >>> law[(1, 1)]
    Fraction(9, 16)
    """
    length = check_positive_int(length, "length")
    target = as_model(target, "target")
    law = {(): 1}
    for _ in range(length):
        nxt = {}
        for seq, w in law.items():
            p = target(seq)
            for y, v in enumerate(p):
                if v > 0:
                    nxt[(*seq, y)] = w * v
        law = nxt
    return law


def block_law(verifier, target, draft, drafter, length: int, *, max_leaves=2_000_000) -> BlockLaw:
    """Exact law of the block emitted by ``verifier`` on trees drawn by ``drafter``.

    Parameters
    ----------
    verifier : str, TreeVerifier or callable
        A registry name or record (its tree kinds are checked), or a plain
        function ``fn(target, draft, tree, coins) -> tuple`` (e.g. a
        deliberately wrong variant).
    target, draft : callable
        ``prefix_tokens -> (V,)`` (Fraction rows for exact results).
    drafter : callable
        called as ``drafter(draft, coins=coins) -> DraftTree``, e.g.
        ``functools.partial(draft_chain, gamma=2)``.
    length : int
        Extend every block to this many tokens by target sampling; at least
        the longest possible block (tree depth + 1).
    max_leaves : int >= 1
        Passed to :func:`~spectheory.coins.enumerate_outcomes`.

    Returns
    -------
    BlockLaw

    Raises
    ------
    InvalidParameterError
        Besides bad ``length`` / ``max_leaves``: the drafter returns something
        other than a :class:`~spectheory.trees.DraftTree`, or a tree the
        verifier is not valid for, or (as in
        :func:`~spectheory.trees.verify_tree`) the target and draft
        vocabularies differ, a tree token lies outside the vocabulary, or a
        tree token has draft probability 0 (the tree was not drawn from
        ``draft``: verifying it would silently give a law other than the
        target's), or the verifier returned something other than a non-empty
        tuple of token ids in ``[0, V)``.
    VerifierError
        The verifier raised (a coin refusing its probabilities included): the
        message names the verifier and the tree, and the original exception
        is chained.  :class:`~spectheory.coins.NotDeterministicError` (a
        :class:`VerifierError`) names the verifier.

    Examples
    --------
    docs/theory.md §8.3 (block verification, gamma = 2): :math:`\\tau = 1 + 11/9`.

    >>> from fractions import Fraction as F
    >>> from functools import partial
    >>> import numpy as np
    >>> from spectheory.trees import draft_chain
    >>> p = lambda s: np.array([F(1, 3), F(2, 3)], dtype=object)
    >>> q = lambda s: np.array([F(2, 3), F(1, 3)], dtype=object)
    >>> block_law("block", p, q, partial(draft_chain, gamma=2), 3).block_efficiency
    Fraction(20, 9)
    """
    length = check_positive_int(length, "length")
    max_leaves = check_positive_int(max_leaves, "max_leaves")
    if not callable(drafter):
        raise InvalidParameterError(
            f"drafter must be callable drafter(draft, coins=coins) -> DraftTree; got {drafter!r}"
        )
    if callable(verifier) and not isinstance(verifier, str):
        fn, kinds = verifier, None
        name = getattr(verifier, "__name__", repr(verifier))
    else:
        v = get_tree_verifier(verifier)
        fn, kinds, name = v.function, v.kinds, v.name
    target = as_model(target, "target")
    draft = as_model(draft, "draft")

    checked = set()

    def run(coins):
        tree = drafter(draft, coins=coins)
        if not isinstance(tree, DraftTree):
            raise InvalidParameterError(
                f"drafter must return a DraftTree; got {type(tree).__name__}"
            )
        if kinds is not None and tree.kind not in kinds:
            raise InvalidParameterError(
                f"verifier {name!r} is not valid for {tree.kind!r} trees (only {kinds})"
            )
        key = (tree.parents, tree.tokens)
        if key not in checked:  # many coin branches draw the same tree: check it once
            _check_tree_against_models(tree, target, draft)
            checked.add(key)
        block = call_tree_verifier(name, fn, target, draft, tree, coins)
        if len(block) > length:
            raise InvalidParameterError(f"length={length} is shorter than an emitted block {block}")
        seq = block
        while len(seq) < length:
            seq = (*seq, coins.categorical(target(seq)))
        return seq, len(block)

    try:
        law = enumerate_outcomes(run, max_leaves=max_leaves)
    except NotDeterministicError as exc:
        raise NotDeterministicError(f"verifier {name!r} or its drafter: {exc}") from None
    extended, lengths = {}, {}
    tau = 0
    for (seq, k), w in law.items():
        extended[seq] = extended.get(seq, 0) + w
        lengths[k] = lengths.get(k, 0) + w
        tau = tau + k * w
    return BlockLaw(extended, lengths, tau)
