"""Slow oracles and instance builders shared by the torch-backend tests (no tests here).

* :func:`chain_reference`: one chain round on numpy rows through the registry's
  own ``sd`` verifier and :class:`~spectheory.coins.ReplayCoins`: the numpy
  oracle of :func:`spectheory.torch.chain_speculative_sampling`.
* :func:`chain_cells`: exact integration over the uniforms for a chain round:
  for every draft tuple and every path of the round (accept the first ``j``
  drafts, then reject and draw, or accept all and draw the bonus), one point
  per cell of the uniforms on which the round's decisions are constant, with
  the probability of that cell.  Running any implementation on these points
  and weighting its outputs gives its exact output law (docs/theory.md §7.1,
  black-box kernels with injected uniforms).
* :func:`extended_law_error`: the largest deviation of that law, extended by
  target sampling to ``gamma + 1`` tokens, from the target's joint law.
"""

from __future__ import annotations

import itertools

import numpy as np

from spectheory.coins import ReplayCoins
from spectheory.verifiers import sd
from spectheory.verifiers._ops import accept_prob, residual


def chain_reference(p, q, x, u):
    """Tokens (gamma + 1,), passed tests and emitted drafts of one round, on numpy rows.

    ``p`` (gamma + 1, V), ``q`` (gamma, V) float64, ``x`` (gamma,), ``u`` (gamma + 1,).
    ``sd`` returns the draft exactly when its coin accepts: a residual of
    positive mass at the draft means ``p > q`` there, whose accept probability is 1.
    """
    gamma = q.shape[0]
    coins = ReplayCoins(u)
    out = []
    for i in range(gamma):
        y = sd(p[i], q[i], (int(x[i]),), coins)
        out.append(y)
        if y != x[i]:
            break
    else:
        out.append(coins.categorical(p[gamma]))
    emitted = len(out) - 1
    passed = sum(int(u[i] < accept_prob(p[i, x[i]], q[i, x[i]])) for i in range(gamma))
    return out + [-1] * (gamma + 1 - len(out)), passed, emitted


def _cells(law):
    """(midpoint, length) of the inverse-CDF cells of ``law`` with positive length."""
    edges = np.concatenate([[0.0], np.cumsum(law)])
    edges[-1] = 1.0
    return [((a + b) / 2, b - a) for a, b in itertools.pairwise(edges) if b > a]


def chain_cells(p, q, rng):
    """Points and weights that integrate a chain round exactly (module docstring).

    Returns ``drafts`` (M, gamma) int64, ``uniforms`` (M, gamma + 1) and
    ``weights`` (M,): the probability of the draft tuple times that of the
    cell.  Uniforms a path does not read are random, so an implementation
    that reads them would be caught.
    """
    gamma, V = q.shape
    drafts, points, weights = [], [], []
    for x in itertools.product(range(V), repeat=gamma):
        wx = np.prod([q[i, x[i]] for i in range(gamma)])
        if wx == 0:
            continue
        acc = [float(accept_prob(p[i, x[i]], q[i, x[i]])) for i in range(gamma)]
        for j in range(gamma + 1):  # accept x_0..x_{j-1}, then reject x_j or draw the bonus
            head = np.prod(acc[:j])
            if j < gamma:
                if acc[j] >= 1:
                    continue
                law, w_j, u_j = residual(p[j], q[j]), 1 - acc[j], (acc[j] + 1) / 2
            else:
                law, w_j, u_j = p[gamma], 1.0, None
            for mid, length in _cells(law):
                u = rng.random(gamma + 1)
                u[:j] = [a / 2 for a in acc[:j]]
                if u_j is not None:
                    u[j] = u_j
                u[min(j + 1, gamma)] = mid
                drafts.append(x)
                points.append(u)
                weights.append(wx * head * w_j * length)
    return np.array(drafts, dtype=np.int64), np.array(points), np.array(weights)


def extended_law_error(p, tokens, weights):
    """max |law - target joint| over all ``gamma + 1``-token sequences.

    ``tokens`` (M, gamma + 1) with -1 padding; each output is extended by
    sampling the target (its rows are context-independent here) at the
    positions it did not emit.
    """
    g1, V = p.shape
    law = np.zeros((V,) * g1)
    for row, w in zip(tokens, weights, strict=True):
        k = int((row >= 0).sum())
        tail = np.ones((V,) * (g1 - k))
        for i in range(k, g1):
            shape = [1] * (g1 - k)
            shape[i - k] = V
            tail = tail * p[i].reshape(shape)
        law[tuple(int(t) for t in row[:k])] += w * tail
    joint = np.ones((V,) * g1)
    for i in range(g1):
        shape = [1] * g1
        shape[i] = V
        joint = joint * p[i].reshape(shape)
    return float(np.abs(law - joint).max())
