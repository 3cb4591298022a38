r"""Verifiers over chains and trees, on the coins protocol.

Each function ``fn(target, draft, tree, coins) -> block`` takes the target and
draft as model functions (``prefix_tokens -> (V,)``, :mod:`.models`), a
:class:`~spectheory.trees.DraftTree`, and coins (:mod:`spectheory.coins`), and
returns the emitted block: the accepted draft tokens followed by the
correction or bonus token, a tuple of ``1..depth + 1`` tokens.  Its expected
length is the block efficiency :math:`\tau` (docs/theory.md §4.4).

Per-node verifiers (``rrs``, ``rrs_wor``, ``kseq``, ``nss``) walk down the
tree: at node ``u`` the single-position verifier of :mod:`spectheory.verifiers`
runs on :math:`p(\cdot|u)`, :math:`q(\cdot|u)` and the draft tuple at ``u``
(draw order, with multiplicities); if its output ``y`` is a child's token the
walk continues there, else ``y`` ends the block; at a leaf ``y \sim p(\cdot|u)``
is the bonus token.  This is SpecInfer [2]_ (``rrs``), RSD / Sequoia / EAGLE
[3]_ (``rrs_wor``), SpecTr [4]_ (``kseq`` on the merged i.i.d. sequences,
``n`` = multiplicity of the node; a residual that lands on a rejected draft
continues into its subtree, whose draws are still i.i.d. given the path) and
point-mass verification (``nss``, any drafter).

Chain verifiers: token-level (Leviathan et al. [1]_, docs/theory.md §1.1) and block
verification (Sun et al. [5]_, docs/theory.md §3.9).  Traversal verification (Weng
et al. [6]_, docs/theory.md §3.10) works bottom-up on trees and equals block
verification on chains (same coins, same output).

References
----------
.. [1] Leviathan, Kalman, Matias. arXiv:2211.17192.
.. [2] Miao et al. "SpecInfer". arXiv:2305.09781.
.. [3] Jeon et al. "Recursive Speculative Decoding". arXiv:2402.14160;
   Chen et al. "Sequoia". arXiv:2402.12374.
.. [4] Sun et al. "SpecTr". arXiv:2310.15141.
.. [5] Sun, Mendlovic, Leviathan, Aharoni, Beirami, Ro, Suresh. "Block
   Verification Accelerates Speculative Decoding". arXiv:2403.10444.
.. [6] Weng et al. "Traversal Verification for Speculative Tree Decoding". arXiv:2505.12398.
"""

from __future__ import annotations

from ..verifiers._ops import accept_prob, normalise_or, positive_part, residual
from ..verifiers.kseq import kseq
from ..verifiers.pointmass import nss
from ..verifiers.rrs import rrs, rrs_wor

__all__ = [
    "block_weights",
    "traversal_update",
    "verify_block",
    "verify_kseq",
    "verify_nss",
    "verify_rrs",
    "verify_rrs_wor",
    "verify_token",
    "verify_traversal",
]


def _per_node(node_fn, sampling, uses_draft=True):
    def verify(target, draft, tree, coins):
        u, out = 0, []
        while True:
            path = tree.path(u)
            p = target(path)
            if not tree.draws[u]:
                out.append(coins.categorical(p))
                return tuple(out)
            q = draft(path) if uses_draft else None
            y = node_fn(p, q, tree.draft_tokens(u), coins, sampling=sampling)
            out.append(y)
            u = tree.child_with_token(u, y)
            if u is None:
                return tuple(out)

    return verify


verify_rrs = _per_node(rrs, "iid")
verify_rrs.__name__ = verify_rrs.__qualname__ = "verify_rrs"
verify_rrs.__doc__ = "SpecInfer: RRS with replacement at every node (i.i.d. draws, repeats tested)."
verify_rrs_wor = _per_node(rrs_wor, "without_replacement")
verify_rrs_wor.__name__ = verify_rrs_wor.__qualname__ = "verify_rrs_wor"
verify_rrs_wor.__doc__ = "RSD / Sequoia / EAGLE: RRS without replacement at every node."
verify_kseq = _per_node(kseq, "iid")
verify_kseq.__name__ = verify_kseq.__qualname__ = "verify_kseq"
verify_kseq.__doc__ = "SpecTr: K-SEQ at every node with n = the number of draws there."
verify_nss = _per_node(nss, "iid", uses_draft=False)
verify_nss.__name__ = verify_nss.__qualname__ = "verify_nss"
verify_nss.__doc__ = "Point-mass verification (NSS) at every node; lossless for any drafter."


def _chain(tree):
    """The chain's nodes ``1..gamma`` and their tokens."""
    nodes, u = [], 0
    while tree.children(u):
        u = tree.children(u)[0]
        nodes.append(u)
    return nodes


def verify_token(target, draft, tree, coins):
    """Token-level verification of a chain (Leviathan et al.; docs/theory.md §1.1).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.coins import ReplayCoins
    >>> from spectheory.trees import draft_chain
    >>> p, q = (lambda s: np.array([1/3, 2/3])), (lambda s: np.array([2/3, 1/3]))
    >>> chain = draft_chain(q, 2, ReplayCoins([0.9, 0.1]))  # x = (1, 0)
    >>> verify_token(p, q, chain, ReplayCoins([0.5, 0.9, 0.3]))  # accept 1, reject 0, y = 1
    (1, 1)
    """
    out = []
    u = 0
    for c in _chain(tree):
        path = tree.path(u)
        p, q = target(path), draft(path)
        x = tree.tokens[c]
        if not coins.bernoulli(accept_prob(p[x], q[x])):
            out.append(coins.categorical(residual(p, q)))
            return tuple(out)
        out.append(x)
        u = c
    out.append(coins.categorical(target(tree.path(u))))
    return tuple(out)


def block_weights(target, draft, tree):
    r"""The weights :math:`w_i` and stopping probabilities :math:`h_i` of block verification.

    .. math::

        w_0 = 1,\quad w_i = \min\Big(1, w_{i-1}\frac{p_i(x_i)}{q_i(x_i)}\Big),\qquad
        h_i = \frac{Z_i}{Z_i + 1 - w_i},\quad Z_i = \sum_x (w_i p_{i+1}(x) - q_{i+1}(x))_+

    for ``i < gamma`` (``0/0 := 1``), and :math:`h_\gamma = w_\gamma` (docs/theory.md §3.9).

    Returns
    -------
    w : list, length gamma + 1
    h : list, length gamma + 1 (``h[0]`` unused, 1)
    """
    nodes = _chain(tree)
    w, h = [1], [1]
    u = 0
    for c in nodes:
        path = tree.path(u)
        p, q = target(path), draft(path)
        x = tree.tokens[c]
        w.append(accept_prob(w[-1] * p[x], q[x]))
        u = c
    gamma = len(nodes)
    for i in range(1, gamma):
        path = tree.path(nodes[i - 1])
        z = positive_part(w[i] * target(path) - draft(path)).sum()
        den = z + (1 - w[i])  # not (z + 1) - w: that rounds z away, h > 1 when w = 1
        h.append(z / den if den > 0 else 1 + 0 * z)
    if gamma:
        h.append(w[gamma])
    return w, h


def verify_block(target, draft, tree, coins):
    """Block verification of a chain (Sun et al. 2024; docs/theory.md §3.9).

    The coins are flipped backwards, :math:`\\eta_\\gamma, \\eta_{\\gamma-1}, \\dots`,
    until one fires (``A`` = its index, 0 if none); then
    :math:`y \\sim p_{\\gamma+1}` if ``A = gamma``, else
    :math:`y \\sim \\mathrm{norm}((w_A p_{A+1} - q_{A+1})_+)`.

    Examples
    --------
    docs/theory.md §8.3: ``x = (0, 1)`` has :math:`w = (1, 1/2, 1)`, so ``h_2 = 1``.

    >>> from fractions import Fraction as F
    >>> import numpy as np
    >>> from spectheory.coins import ReplayCoins
    >>> from spectheory.trees import DraftTree
    >>> p = lambda s: np.array([F(1, 3), F(2, 3)], dtype=object)
    >>> q = lambda s: np.array([F(2, 3), F(1, 3)], dtype=object)
    >>> chain = DraftTree((-1, 0, 1), (-1, 0, 1), ((1,), (2,), ()), "chain")
    >>> [str(w) for w in block_weights(p, q, chain)[0]]
    ['1', '1/2', '1']
    >>> verify_block(p, q, chain, ReplayCoins([0.99, 0.2]))  # A = 2; bonus 0.2 < 1/3
    (0, 1, 0)
    """
    nodes = _chain(tree)
    gamma = len(nodes)
    w, h = block_weights(target, draft, tree)
    a = 0
    for i in range(gamma, 0, -1):
        if coins.bernoulli(h[i]):
            a = i
            break
    out = [tree.tokens[c] for c in nodes[:a]]
    path = tree.path(nodes[a - 1]) if a else ()
    p = target(path)
    if a == gamma:
        out.append(coins.categorical(p))
    else:
        out.append(coins.categorical(normalise_or(positive_part(w[a] * p - draft(path)), p)))
    return tuple(out)


def traversal_update(w, p, q, token, without_replacement):
    r"""Traversal verification's update of a node after its first remaining child is deleted.

    .. math::

        Z = \sum_x (w\,p'(x) - q'(x))_+,\quad p' \leftarrow \mathrm{norm}((w p' - q')_+),\quad
        w \leftarrow \frac{Z}{Z + 1 - w}\ (0/0 := 1),

    and, without replacement, :math:`q'` loses ``token`` and is renormalised
    (docs/theory.md §3.10).

    Parameters
    ----------
    w : scalar
    p, q : ndarray, shape (V,)
        Current :math:`p'(\cdot|u)`, :math:`q'(\cdot|u)`.
    token : int
        The deleted child's token.
    without_replacement : bool

    Returns
    -------
    (w, p, q)

    Examples
    --------
    docs/theory.md §8.4: node ``a`` with ``w = 1/2`` after deleting its child ``b``.

    >>> from fractions import Fraction as F
    >>> import numpy as np
    >>> p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    >>> q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> w, p2, q2 = traversal_update(F(1, 2), p, q, 1, True)
    >>> w, [str(v) for v in p2], [str(v) for v in q2]
    (Fraction(1, 11), ['0', '0', '1'], ['6/7', '0', '1/7'])
    """
    z = positive_part(w * p - q)
    total = z.sum()
    den = total + (1 - w)  # exact 1 - w (w in [0, 1]); z / (z + d) <= 1 in floats
    w_new = total / den if den > 0 else 1 + 0 * total
    p_new = normalise_or(z, p)
    if without_replacement:
        removed = q.copy()
        removed[token] = 0 * removed[token]
        q = normalise_or(removed, q)
    return w_new, p_new, q


def verify_traversal(target, draft, tree, coins):
    """Traversal verification (Weng et al. 2025; docs/theory.md §3.10), for chains and trees
    drawn without replacement.

    The first leaf in depth-first order (always the first remaining child) is
    accepted with probability :math:`w(\\ell)` (exactly 1 at the root), and
    the block is the path to it plus :math:`y \\sim p'(\\cdot|\\ell)`; else the
    leaf is deleted, its parent updated (:func:`traversal_update`) and the
    weights of the parent's remaining descendants recomputed top-down,
    :math:`w(c) = \\min(1, w(u)\\,p'(x_c|u)/q'(x_c|u))`.
    """
    wor = tree.kind in ("without_replacement", "chain")
    kids = [list(tree.children(u)) for u in range(tree.size)]
    pp, qq = {}, {}

    def p_of(u):
        if u not in pp:
            pp[u] = target(tree.path(u))
        return pp[u]

    def q_of(u):
        if u not in qq:
            qq[u] = draft(tree.path(u))
        return qq[u]

    w = [None] * tree.size
    w[0] = 1

    def reweigh(u):
        stack = [u]
        while stack:
            v = stack.pop()
            if kids[v]:
                p, q = p_of(v), q_of(v)
                for c in kids[v]:
                    x = tree.tokens[c]
                    w[c] = accept_prob(w[v] * p[x], q[x])
                    stack.append(c)

    reweigh(0)
    while True:
        leaf = 0
        while kids[leaf]:
            leaf = kids[leaf][0]
        if leaf == 0 or coins.bernoulli(w[leaf]):
            return (*tree.path(leaf), coins.categorical(p_of(leaf)))
        u = tree.parents[leaf]
        kids[u].remove(leaf)
        w[u], pp[u], qq[u] = traversal_update(w[u], p_of(u), q_of(u), tree.tokens[leaf], wor)
        reweigh(u)
