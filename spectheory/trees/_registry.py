"""The registry of tree verifiers: one :class:`TreeVerifier` record per published method."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError, SpecTheoryError
from ..coins import NotDeterministicError
from ..verifiers._api import raised_by_coins, verifier_raised
from ._tree import TREE_KINDS, DraftTree
from .models import CachedModel, as_model
from .verify import (
    verify_block,
    verify_kseq,
    verify_nss,
    verify_rrs,
    verify_rrs_wor,
    verify_token,
    verify_traversal,
)

__all__ = ["TREE_REGISTRY", "TreeVerifier", "get_tree_verifier", "verify_tree"]


@dataclass(frozen=True)
class TreeVerifier:
    """A registered chain or tree verifier and its metadata.

    Attributes
    ----------
    name : str
    function : callable
        ``function(target, draft, tree, coins) -> tuple`` (the emitted block).
    paper : str
    arxiv : str
    kinds : tuple of str
        The tree kinds (:data:`~spectheory.trees.TREE_KINDS`) it is valid for.
    lossless : bool
    """

    name: str
    function: Callable
    paper: str
    arxiv: str
    kinds: tuple
    lossless: bool = True

    def __post_init__(self):
        bad = [k for k in self.kinds if k not in TREE_KINDS]
        if bad:
            raise InvalidParameterError(f"tree verifier {self.name!r} lists unknown kinds {bad}")


_ENTRIES = [
    TreeVerifier("token", verify_token, "Leviathan, Kalman, Matias (token-level chain)",
                 "2211.17192", ("chain",)),
    TreeVerifier("block", verify_block, "Sun et al., Block Verification", "2403.10444",
                 ("chain",)),
    TreeVerifier("traversal", verify_traversal, "Weng et al., Traversal Verification",
                 "2505.12398", ("chain", "without_replacement")),
    TreeVerifier("rrs", verify_rrs, "Miao et al., SpecInfer (multi-step speculative sampling)",
                 "2305.09781", ("chain", "iid")),
    TreeVerifier("rrs_wor", verify_rrs_wor, "Jeon et al., RSD; Chen et al., Sequoia; EAGLE",
                 "2402.14160, 2402.12374, 2401.15077", ("chain", "without_replacement")),
    TreeVerifier("kseq", verify_kseq, "Sun et al., SpecTr (K-SEQ per node)", "2310.15141",
                 ("chain", "iid")),
    TreeVerifier("nss", verify_nss, "Miao et al., SpecInfer (naive sampling); point-mass",
                 "2305.09781", TREE_KINDS),
]  # fmt: skip

#: Registered tree verifiers by name.
TREE_REGISTRY: dict[str, TreeVerifier] = {v.name: v for v in _ENTRIES}


def get_tree_verifier(verifier) -> TreeVerifier:
    """Resolve a registry name (or pass a :class:`TreeVerifier` through).

    >>> get_tree_verifier("block").kinds
    ('chain',)
    """
    if isinstance(verifier, TreeVerifier):
        return verifier
    if isinstance(verifier, str) and verifier in TREE_REGISTRY:
        return TREE_REGISTRY[verifier]
    raise InvalidParameterError(
        f"verifier must be a TreeVerifier or one of {', '.join(map(repr, TREE_REGISTRY))}; "
        f"got {verifier!r}"
    )


def verify_tree(verifier, target, draft, tree, coins) -> tuple:
    """Run a registered tree verifier after checking that it is valid for ``tree.kind``.

    Parameters
    ----------
    verifier : str or TreeVerifier
    target, draft : callable
        ``prefix_tokens -> (V,)``.
    tree : DraftTree
    coins : Coins

    Returns
    -------
    tuple of int
        The emitted block: accepted draft tokens, then the correction or bonus token.

    Raises
    ------
    VerifierError
        The verifier raised (a coin refusing its probabilities included), named
        with the tree (:func:`call_tree_verifier`).
    InvalidParameterError
        Its block is not a non-empty tuple of token ids in ``[0, V)``; or the
        tree is of a kind the verifier is not valid for, or not drawn from ``draft``.

    Examples
    --------
    >>> from spectheory.coins import RandomCoins
    >>> from spectheory.trees import draft_chain
    >>> model = lambda prefix: [0.0, 1.0]  # draft = target: everything is accepted
    >>> chain = draft_chain(model, 3, RandomCoins(0))
    >>> verify_tree("block", model, model, chain, RandomCoins(1))
    (1, 1, 1, 1)
    """
    v = get_tree_verifier(verifier)
    if not isinstance(tree, DraftTree):
        raise InvalidParameterError(f"tree must be a DraftTree; got {type(tree).__name__}")
    if tree.kind not in v.kinds:
        raise InvalidParameterError(
            f"verifier {v.name!r} is valid for trees of kind {v.kinds}; got a {tree.kind!r} tree"
        )
    target, draft = as_model(target, "target"), as_model(draft, "draft")
    _check_tree_against_models(tree, target, draft)
    if not all(callable(getattr(coins, m, None)) for m in ("bernoulli", "categorical")):
        raise InvalidParameterError(
            f"coins must be a Coins object (bernoulli, categorical); got {type(coins).__name__}"
        )
    return call_tree_verifier(v.name, v.function, target, draft, tree, coins)


def call_tree_verifier(name, fn, target, draft, tree, coins) -> tuple:
    """``fn(target, draft, tree, coins)``, its block checked, its errors named.

    Raises
    ------
    VerifierError
        ``fn`` raised (a coin refusing its probabilities included; a spectheory
        error of its own making or one of the model functions' passes through):
        the message names the verifier ``name`` and the tree, the original
        exception is chained.
    InvalidParameterError
        ``fn`` returned something other than a non-empty tuple of token ids in
        ``[0, V)``.
    """
    try:
        block = fn(target, draft, tree, coins)
    except Exception as exc:  # the user's bug, reported as such (chained)
        # ours pass through, but a coin refusing the verifier's arguments (a probability
        # outside [0, 1], a vector not summing to 1) is the verifier's bug: name it and the
        # tree, as the single-position paths do (the bare coin error named neither)
        if _raised_by_model(exc) or (isinstance(exc, SpecTheoryError) and (
            isinstance(exc, NotDeterministicError) or not raised_by_coins(exc)
        )):  # fmt: skip
            raise
        raise verifier_raised(name, exc, f" on {_describe(tree)}") from exc
    return _check_block(block, name, tree, target(()).shape[0])


def _check_tree_against_models(tree, target, draft):
    """Same vocabulary for both models, every token in range, every draw possible under ``draft``.

    A tree drawn from another draft law (a token the draft gives probability 0)
    would be verified against a ``q`` it was not sampled from: the output would
    not be distributed as the target, silently.
    """
    V = target(()).shape[0]
    if draft(()).shape[0] != V:
        raise InvalidParameterError(
            f"target and draft have different vocabularies: {V} and {draft(()).shape[0]} tokens"
        )
    for u in range(tree.size):
        kids = tree.children(u)
        if not kids:
            continue
        q = draft(tree.path(u))
        for c in kids:
            t = tree.tokens[c]
            if not 0 <= t < V:
                raise InvalidParameterError(
                    f"tree node {c} holds token {t}, outside the vocabulary of {V} tokens"
                )
            if not q[t] > 0:
                raise InvalidParameterError(
                    f"tree node {c} (token {t} after {list(tree.path(u))}) has draft "
                    "probability 0: the tree was not drawn from this draft"
                )


def _describe(tree) -> str:
    """A tree as named in error messages."""
    return f"the {tree.kind!r} tree with parents {tree.parents} and tokens {tree.tokens}"


def _raised_by_model(exc) -> bool:
    """Whether ``exc`` came out of the target or draft model function (not the verifier's bug)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is CachedModel.__call__.__code__:
            return True
        tb = tb.tb_next
    return False


def _check_block(block, name, tree, vocab) -> tuple:
    """``block`` as a tuple of int tokens in ``[0, vocab)``, at least one, or raise naming
    the verifier and the tree.

    An empty block was enumerated as the target's own law (the extension samples the
    target from scratch) with block efficiency 0; a token outside the vocabulary entered
    the law as an outcome the target cannot emit.
    """
    items = None
    if not isinstance(block, str | bytes):
        try:
            items = tuple(block)
        except TypeError:
            pass
    ok = items is not None and len(items) >= 1 and all(
        not isinstance(y, bool | np.bool_) and isinstance(y, int | np.integer) and 0 <= y < vocab
        for y in items
    )
    if not ok:
        raise InvalidParameterError(
            f"verifier {name!r} returned {block!r} on {_describe(tree)}; a tree verifier must "
            f"return the emitted block, a tuple of 1 to depth + 1 token ids in [0, {vocab})"
        )
    return tuple(int(y) for y in items)
