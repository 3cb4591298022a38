r"""Drafting chains and trees from a draft model ``draft(prefix_tokens) -> q(. | prefix)``.

Every drafter draws through the coins protocol (:mod:`spectheory.coins`), so a
drafter followed by a verifier has an exact law under
:func:`spectheory.coins.enumerate_outcomes` (docs/theory.md §7.1), except RSD-S,
whose Gumbel perturbations are continuous (it needs :class:`RandomCoins`).

``chain``
    :math:`x_i \sim q(\cdot \mid x_{<i})`, ``i = 1..gamma`` (docs/theory.md §1.1).
``spectr``
    ``K`` i.i.d. sequences of length ``L`` merged into a tree; node
    multiplicities count the sequences through a node, and the draws at a
    node are the next tokens of those sequences in sequence order, i.i.d.
    from :math:`q(\cdot \mid \text{path})` (SpecTr [1]_; docs/theory.md §4.1).
``rsd_c``
    Constant branching ``b_l`` at depth ``l``, the children of a node drawn
    without replacement (the law of Gumbel-top-``b_l``) (RSD-C [2]_).
``rsd_s``
    Stochastic beam search of width ``W`` (Kool et al. [3]_): top-down
    Gumbel perturbation of the sequence log-probabilities; the ``W`` best
    candidates of every level are kept (RSD-S [2]_).  A node's kept children
    are a prefix, of random length, of a without-replacement order; the
    length depends only on the perturbed values, which given the earlier
    children are independent of the next child's identity (the Gumbel-max
    property), so sequential without-replacement verification stays lossless
    (tested by Monte Carlo in ``tests/trees/test_drafting.py``).
``fixed``
    A given shape (parent array, EAGLE-style sparse tree [4]_), each node's
    children drawn without replacement, i.i.d. (identical tokens merged; the
    shape below a merged duplicate is dropped), or as the top tokens of ``q``
    (deterministic).

When a node's draft law has fewer tokens of positive mass than the
children asked for without replacement, drawing stops at the support: the
number of children is then a function of the earlier draws, which keeps
sequential verification lossless.

References
----------
.. [1] Sun et al. "SpecTr: Fast Speculative Decoding via Optimal Transport". arXiv:2310.15141.
.. [2] Jeon et al. "Recursive Speculative Decoding: Accelerating LLM Inference via
   Sampling Without Replacement". arXiv:2402.14160.
.. [3] Kool, van Hoof, Welling. "Stochastic Beams and Where to Find Them: The
   Gumbel-Top-k Trick for Sampling Sequences Without Replacement". arXiv:1903.06059.
.. [4] Li et al. "EAGLE: Speculative Sampling Requires Rethinking Feature
   Uncertainty". arXiv:2401.15077.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._errors import InvalidParameterError
from .._validate import check_choice, check_limit, check_positive_int
from ..drafting import top_tokens
from ..verifiers._ops import normalise_or
from ._tree import DraftTree, TreeBuilder
from .models import as_model

__all__ = [
    "FILLS",
    "draft_chain",
    "draft_fixed",
    "draft_rsd_c",
    "draft_rsd_s",
    "draft_spectr",
    "shape_from_branching",
]

#: How :func:`draft_fixed` fills a node's children.
FILLS = ("without_replacement", "iid", "top")


#: Largest number of draft nodes a tree builder accepts (each node costs one
#: call of the draft model): beyond it the builders refuse with
#: :class:`~spectheory.InstanceTooLargeError` instead of running for hours.
MAX_TREE_NODES = 100_000


def _check_nodes(count: int, what: str) -> None:
    check_limit(count, what, MAX_TREE_NODES, "draft tree nodes, MAX_TREE_NODES")


def _draw_wor(builder, u, q, k, coins):
    """Draw up to ``k`` distinct children of ``u`` sequentially from ``q``; return them."""
    out = []
    rest = q
    for _ in range(k):
        if not rest.sum() > 0:
            break
        x = coins.categorical(rest)
        out.append(builder.draw(u, x))
        removed = rest.copy()
        removed[x] = 0 * removed[x]
        if not removed.sum() > 0:
            break
        rest = normalise_or(removed, rest)
    return out


def draft_chain(draft, gamma: int, coins) -> DraftTree:
    """A chain of ``gamma`` tokens, :math:`x_i \\sim q(\\cdot \\mid x_{<i})`.

    Parameters
    ----------
    draft : callable
        ``draft(prefix_tokens) -> (V,)``.
    gamma : int >= 1
    coins : Coins

    Returns
    -------
    DraftTree
        ``kind="chain"``, ``gamma + 1`` nodes.

    Examples
    --------
    >>> from spectheory.coins import ReplayCoins
    >>> t = draft_chain(lambda prefix: [0.5, 0.5], 2, ReplayCoins([0.7, 0.2]))
    >>> t.path(2)
    (1, 0)
    """
    gamma = check_positive_int(gamma, "gamma")
    _check_nodes(gamma, "gamma")
    _check_coins(coins)
    draft = as_model(draft, "draft")
    b = TreeBuilder()
    u = 0
    for _ in range(gamma):
        u = b.draw(u, coins.categorical(draft(b.path(u))))
    return b.build("chain")


def draft_spectr(draft, num_sequences: int, length: int, coins) -> DraftTree:
    """``num_sequences`` i.i.d. sequences of ``length`` tokens, merged into a tree (SpecTr).

    Sequence ``k`` is drawn whole before sequence ``k + 1``; the draws at a node
    are the next tokens of the sequences through it, in sequence order.

    Examples
    --------
    >>> from spectheory.coins import ReplayCoins
    >>> t = draft_spectr(lambda prefix: [0.5, 0.5], 2, 1, ReplayCoins([0.1, 0.2]))
    >>> t.draft_tokens(0), t.multiplicity(1)
    ((0, 0), 2)
    """
    num_sequences = check_positive_int(num_sequences, "num_sequences")
    length = check_positive_int(length, "length")
    _check_nodes(num_sequences * length, "num_sequences * length")
    _check_coins(coins)
    draft = as_model(draft, "draft")
    b = TreeBuilder()
    for _ in range(num_sequences):
        u = 0
        for _ in range(length):
            u = b.draw(u, coins.categorical(draft(b.path(u))))
    return b.build("iid")


def _check_coins(coins):
    """Refuse anything without a callable ``categorical`` (None, a seed) naming ``coins``."""
    if not callable(getattr(coins, "categorical", None)):
        raise InvalidParameterError(
            "coins must be a Coins object with a categorical method (RandomCoins, ReplayCoins); "
            f"got {coins!r}"
        )
    return coins


def _check_branching(branching):
    if isinstance(branching, np.ndarray) and branching.ndim == 1:
        branching = branching.tolist()
    if isinstance(branching, str | bytes) or not isinstance(branching, Sequence):
        raise InvalidParameterError(
            f"branching must be a sequence of positive ints (one per level); got {branching!r}"
        )
    out = tuple(check_positive_int(b, "branching entry") for b in branching)
    if not out:
        raise InvalidParameterError("branching must have at least one level; got ()")
    nodes, width = 0, 1
    for k in out:  # stop multiplying once over the limit: huge entries stay cheap
        width *= k
        nodes += width
        _check_nodes(nodes, "the number of nodes of branching")
    return out


def draft_rsd_c(draft, branching, coins) -> DraftTree:
    """RSD-C: ``branching[l]`` children per node at depth ``l``, without replacement.

    Examples
    --------
    >>> from spectheory.coins import ReplayCoins
    >>> t = draft_rsd_c(lambda prefix: [0.5, 0.25, 0.25], (2,), ReplayCoins([0.1, 0.6]))
    >>> t.draft_tokens(0)  # a; then b (u = 0.6 on [0, .5, .5])
    (0, 2)
    """
    branching = _check_branching(branching)
    _check_coins(coins)
    draft = as_model(draft, "draft")
    b = TreeBuilder()
    level = [0]
    for k in branching:
        nxt = []
        for u in level:
            nxt.extend(_draw_wor(b, u, draft(b.path(u)), k, coins))
        level = nxt
    return b.build("without_replacement")


def shape_from_branching(branching) -> tuple:
    """Parent array of the complete tree with ``branching[l]`` children per node at depth ``l``.

    >>> shape_from_branching((2, 1))
    (-1, 0, 0, 1, 2)
    """
    branching = _check_branching(branching)
    parents = [-1]
    level = [0]
    for k in branching:
        nxt = []
        for u in level:
            for _ in range(k):
                parents.append(u)
                nxt.append(len(parents) - 1)
        level = nxt
    return tuple(parents)


def _check_shape(shape):
    try:
        shape = tuple(shape)
    except TypeError:
        raise InvalidParameterError(f"shape must be a sequence of ints; got {shape!r}") from None
    for x in shape:  # int(1.7) would silently truncate
        if isinstance(x, bool | np.bool_) or not isinstance(x, int | np.integer):
            raise InvalidParameterError(f"shape entries must be ints; got {x!r}")
    shape = tuple(int(x) for x in shape)
    _check_nodes(len(shape) - 1, "len(shape) - 1")
    if not shape or shape[0] != -1:
        raise InvalidParameterError(f"shape must be a parent array starting with -1; got {shape}")
    for i in range(1, len(shape)):
        if not 0 <= shape[i] < i:
            raise InvalidParameterError(f"shape[{i}] = {shape[i]} must lie in [0, {i})")
    return shape


def draft_fixed(draft, shape, coins, *, fill: str = "without_replacement") -> DraftTree:
    """Fill a fixed tree shape (parent array) by sampling the children of each node.

    Parameters
    ----------
    draft : callable
    shape : sequence of int
        Parent array, ``shape[0] == -1`` and ``0 <= shape[i] < i``.
    coins : Coins
    fill : {"without_replacement", "iid", "top"}
        Children drawn without replacement, i.i.d. (identical tokens merged;
        the shape below the later duplicate is not drafted), or the top
        tokens of ``q`` (deterministic, no coins; ties to the lowest id).

    Returns
    -------
    DraftTree
        Of kind ``fill`` (``"deterministic"`` for ``"top"``).

    Examples
    --------
    >>> t = draft_fixed(lambda prefix: [0.2, 0.5, 0.3], (-1, 0, 0, 1), None, fill="top")
    >>> t.draft_tokens(0), t.draft_tokens(1)
    ((1, 2), (1,))
    """
    shape = _check_shape(shape)
    check_choice(fill, "fill", FILLS)
    if fill != "top":
        _check_coins(coins)
    draft = as_model(draft, "draft")
    kids = [[] for _ in shape]
    for i in range(1, len(shape)):
        kids[shape[i]].append(i)
    b = TreeBuilder()
    where = {0: 0}  # shape node -> tree node (absent: dropped below a merged duplicate)
    for s in range(len(shape)):
        if s not in where or not kids[s]:
            continue
        u = where[s]
        q = draft(b.path(u))
        k = len(kids[s])
        if fill == "without_replacement":
            made = _draw_wor(b, u, q, k, coins)
        elif fill == "top":
            support = int(sum(1 for v in q if v > 0))
            made = [b.draw(u, x) for x in top_tokens(q, min(k, support))]
        else:
            made = []
            for _ in range(k):
                before = len(b.parents)
                c = b.draw(u, coins.categorical(q))
                made.append(c if len(b.parents) > before else None)
        for s_child, c in zip(kids[s], made, strict=False):
            if c is not None:
                where[s_child] = c
    kind = {"without_replacement": "without_replacement", "iid": "iid", "top": "deterministic"}
    return b.build(kind[fill])


def _log1mexp(x):
    """:math:`\\log(1 - e^{x})` for ``x <= 0``, stable (Maechler 2012); ``-inf`` at 0."""
    with np.errstate(divide="ignore"):  # x = 0 (the best candidate) gives -inf, as it should
        return np.where(x > -0.693, np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def draft_rsd_s(draft, width: int, depth: int, coins) -> DraftTree:
    """RSD-S: stochastic beam search of ``width`` beams over ``depth`` levels.

    At a beam node ``u`` with log-probability :math:`\\phi_u` and perturbed
    score :math:`G_u` (root: 0, 0), every token ``x`` with :math:`q(x|u) > 0`
    gets :math:`\\phi_x = \\phi_u + \\log q(x|u)` and a Gumbel
    :math:`G_x \\sim \\mathrm{Gumbel}(\\phi_x)`; with :math:`Z = \\max_x G_x`, the
    perturbed score conditioned on the parent's is (Kool et al., eq. 23)

    .. math::

        \\tilde G_x = -\\log\\big(e^{-G_u} - e^{-Z} + e^{-G_x}\\big).

    The ``width`` largest :math:`\\tilde G` over all candidates of a level are
    kept; each node's kept children are drawn in decreasing :math:`\\tilde G`.

    Parameters
    ----------
    draft : callable
    width, depth : int >= 1
    coins : RandomCoins
        The Gumbels are drawn from ``coins.rng`` (continuous: not enumerable).

    Returns
    -------
    DraftTree
        ``kind="without_replacement"``, at most ``1 + width * depth`` nodes.
    """
    width = check_positive_int(width, "width")
    depth = check_positive_int(depth, "depth")
    _check_nodes(width * depth, "width * depth")
    rng = getattr(coins, "rng", None)
    if not isinstance(rng, np.random.Generator):
        raise InvalidParameterError(
            "draft_rsd_s draws continuous Gumbel perturbations: coins must be a RandomCoins "
            f"(with a numpy Generator .rng); got {type(coins).__name__}"
        )
    draft = as_model(draft, "draft")
    b = TreeBuilder()
    beam = [(0, 0.0, 0.0)]  # (tree node, phi, G)
    for _ in range(depth):
        cand = []  # (G~, phi, parent node, token)
        for u, phi_u, g_u in beam:
            q = np.asarray(draft(b.path(u)), dtype=np.float64)
            xs = np.flatnonzero(q > 0)
            phi = phi_u + np.log(q[xs])
            g = phi + rng.gumbel(size=xs.size)
            z = g.max()
            # Stable form of -log(exp(-G_u) - exp(-Z) + exp(-G_x)) (Kool et al., App. B.3).
            v = g_u - g + _log1mexp(g - z)
            gt = g_u - np.maximum(v, 0.0) - np.log1p(np.exp(-np.abs(v)))
            cand.extend(zip(gt.tolist(), phi.tolist(), [u] * xs.size, xs.tolist(), strict=True))
        cand.sort(key=lambda c: -c[0])
        kept = cand[:width]
        # Draw order at a node: decreasing perturbed score; nodes in order of their best child.
        beam = [(b.draw(u, x), phi, g) for g, phi, u, x in kept]
    return b.build("without_replacement")
