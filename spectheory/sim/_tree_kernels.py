r"""numba kernels replaying chain and tree verification on injected uniforms (private).

Each kernel runs ``I`` instances (a drafted chain or tree with its target and
draft rows at every node) and ``T`` trials per instance, and consumes the
uniforms ``u`` of shape (I, T, K) in exactly the order the reference verifier
(:mod:`spectheory.trees.verify`) consumes coins with
:class:`~spectheory.coins.ReplayCoins`: ``bernoulli(prob)`` is
:math:`u < \text{prob}`, ``categorical`` the linear inverse CDF
(:func:`._kernels._inverse_cdf`).  Everything that does not depend on the
coins (acceptance probabilities, residual laws) is computed once per instance
in numpy with the reference's own operations, so the emitted blocks are
identical token for token.

Kernels
-------
``token`` (chain; Leviathan), ``rrs`` / ``rrs_wor`` (trees, per node; SpecInfer /
    RSD / EAGLE): one walk down the tree.  At a node the RRS laws
    :math:`r_k, q_k` depend on the drafted tokens only, so the acceptance
    probability of every draw and the final residual of every node are computed
    once per instance (:func:`node_tables`); a trial costs
    :math:`O(\text{depth}\cdot(n + V))`, :math:`V` for the one inverse-CDF draw.
    Token-level verification is RRS with one draw per node.
``block`` (chain; docs/theory.md §3.9): the weights :math:`w_i` and stopping
    probabilities :math:`h_i` do not depend on the coins, so they are computed
    once per instance; a trial is a backward scan and one categorical draw from
    a per-instance residual table: :math:`O(\gamma + V)`.

Outputs: ``out`` (I, T, L) with the block's tokens, padded with -1, and
``length`` (I, T).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..verifiers._ops import accept_prob, normalise_or, residual
from ._kernels import _inverse_cdf

__all__ = ["block_tables", "node_tables", "run_block", "run_walk"]


def node_tables(P, Q, tokens, draw_ptr, draw_child, verifier):
    """Per-draw acceptance probabilities (D,) and per-node final laws (N, V).

    At a node with draws :math:`x_1..x_n` the laws :math:`r_k` (and, without
    replacement, :math:`q_k`) depend only on the drafted tokens, never on the
    coins, so the whole recursion is computed once per node with the
    reference's own operations (:mod:`spectheory.verifiers._ops`): bit-identical.
    ``accept[d]`` is :math:`\\min(1, r_k(x_k)/q_k(x_k))` for draw ``d``;
    ``final[g]`` the law sampled after every draw at ``g`` is rejected (the
    target row at a leaf).  ``verifier`` is ``"token"`` / ``"rrs"`` (``q`` fixed) or
    ``"rrs_wor"`` (``q`` loses each rejected draft).
    """
    accept = np.empty(draw_child.shape[0])
    final = np.empty_like(P)
    for g in range(P.shape[0]):
        r, qc = P[g], Q[g]
        for d in range(draw_ptr[g], draw_ptr[g + 1]):
            x = tokens[draw_child[d]]
            accept[d] = accept_prob(r[x], qc[x])
            r = residual(r, qc)
            if verifier == "rrs_wor":
                removed = qc.copy()
                removed[x] = 0.0
                qc = normalise_or(removed, qc)
        final[g] = r
    return accept, final


@njit(cache=True, parallel=True)
def _k_walk(accept, final, root, tokens, draw_ptr, draw_child, u, out, length):
    n_inst, T, _ = u.shape
    for it in prange(n_inst * T):
        i = it // T
        t = it % T
        node = root[i]
        k = 0
        n = 0
        while True:
            d0 = draw_ptr[node]
            d1 = draw_ptr[node + 1]
            nxt = -1
            for d in range(d0, d1):
                fire = u[i, t, k] < accept[d]
                k += 1
                if fire:
                    nxt = draw_child[d]
                    break
            if nxt >= 0:
                y = tokens[nxt]
            else:
                y = _inverse_cdf(u[i, t, k], final[node])
                k += 1
                for d in range(d0, d1):
                    if tokens[draw_child[d]] == y:
                        nxt = draw_child[d]
                        break
            out[i, t, n] = y
            n += 1
            if nxt < 0:
                break
            node = nxt
        length[i, t] = n


def run_walk(P, Q, root, tokens, draw_ptr, draw_child, depth, verifier, u):
    """Token-level (chains), RRS or RRS without replacement per node on packed trees.

    ``P``, ``Q`` (N, V): rows of every node of every tree; ``root`` (I,): each
    tree's root index; ``tokens`` (N,); ``draw_ptr`` (N+1,) and ``draw_child``
    (D,): each node's draws (global child indices) in draw order; ``depth``:
    the largest tree depth.  Per trial :math:`O(\\text{depth}\\cdot(n + V))`.
    """
    accept, final = node_tables(P, Q, tokens, draw_ptr, draw_child, verifier)
    n_inst, T, _ = u.shape
    out = np.full((n_inst, T, depth + 1), -1, dtype=np.int64)
    length = np.zeros((n_inst, T), dtype=np.int64)
    _k_walk(accept, final, root, tokens, draw_ptr, draw_child, u, out, length)
    return out, length


def block_tables(P, Q, X):
    """Per-instance ``h`` (I, G+1) and the residual laws (I, G+1, V) of block verification.

    Computed with the reference's own numpy operations (``trees.verify.block_weights``
    and ``verify_block``), so they are bit-identical to the reference's; ``res[i, a]``
    is the law of ``y`` when ``A = a`` (``p_{G+1}`` for ``a = G``).
    """
    n_inst, G1, V = P.shape
    G = G1 - 1
    h = np.ones((n_inst, G1))
    res = np.empty((n_inst, G1, V))
    for i in range(n_inst):
        w = [1.0]
        for g in range(G):
            x = X[i, g]
            num, den = w[-1] * P[i, g, x], Q[i, g, x]
            ratio = num / den if den > 0 else 0.0  # accept_prob: a q = 0 draft is rejected
            w.append(ratio if ratio < 1 else 1.0)
        for a in range(1, G):
            z = np.maximum(w[a] * P[i, a] - Q[i, a], 0.0).sum()
            den = z + (1 - w[a])  # as trees.verify.block_weights (bit-identical)
            h[i, a] = z / den if den > 0 else 1.0
        if G:
            h[i, G] = w[G]
        for a in range(G):
            v = np.maximum(w[a] * P[i, a] - Q[i, a], 0.0)
            tot = v.sum()
            res[i, a] = v / tot if tot > 0 else P[i, a]
        res[i, G] = P[i, G]
    return h, res


@njit(cache=True, parallel=True)
def _k_block(h, res, X, u, out, length):
    n_inst, T, _ = u.shape
    G = X.shape[1]
    for it in prange(n_inst * T):
        i = it // T
        t = it % T
        k = 0
        a = 0
        for g in range(G, 0, -1):
            fire = u[i, t, k] < h[i, g]
            k += 1
            if fire:
                a = g
                break
        for g in range(a):
            out[i, t, g] = X[i, g]
        out[i, t, a] = _inverse_cdf(u[i, t, k], res[i, a])
        length[i, t] = a + 1


def run_block(P, Q, X, u):
    """Block verification of chains; shapes as :func:`run_token`."""
    n_inst, T, _ = u.shape
    h, res = block_tables(P, Q, X)
    out = np.full((n_inst, T, X.shape[1] + 1), -1, dtype=np.int64)
    length = np.zeros((n_inst, T), dtype=np.int64)
    _k_block(h, res, X, u, out, length)
    return out, length
