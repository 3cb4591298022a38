r"""Expected accepted tokens of a drafted chain: token-level, block verification, the joint bound.

For a chain :math:`x_1..x_\gamma` drafted from :math:`q` and verified against
:math:`p` (rows :math:`p_i = p(\cdot \mid x_{<i})`, :math:`q_i` likewise),

* token-level verification (Leviathan et al.) accepts :math:`x_i` with
  probability :math:`\min(1, p_i(x_i)/q_i(x_i))` while every earlier token was
  accepted, so :math:`E[A \mid x] = \sum_{i \le \gamma} \prod_{j \le i}
  \min(1, r_j)`, :math:`r_j = p_j(x_j)/q_j(x_j)`;
* block verification (Sun et al., arXiv 2403.10444; docs/theory.md §3.9) keeps the weights
  :math:`w_0 = 1`, :math:`w_i = \min(1, w_{i-1} r_i)`, the stopping
  probabilities :math:`h_i = Z_i / (Z_i + 1 - w_i)` with :math:`Z_i = \sum_x
  (w_i p_{i+1}(x) - q_{i+1}(x))_+` for :math:`i < \gamma` (:math:`0/0 := 1`)
  and :math:`h_\gamma = w_\gamma`, and accepts :math:`A = \max\{i : \eta_i \le
  h_i\}` for independent uniforms :math:`\eta_i`, so
  :math:`P(A = i \mid x) = h_i \prod_{j > i} (1 - h_j)`;
* no verifier, even one that knew the joint laws of whole blocks, accepts
  more than the joint bound :math:`\sum_{k \le \gamma} \sum_{x_{1:k}}
  \min(P(x_{1:k}), Q(x_{1:k}))` (a common prefix of length :math:`k` needs
  the first :math:`k` tokens of the draft and of the target to coincide); the
  paper's "ideal" verifier attains it on its motivating example (12/9).

:func:`chain_exact` enumerates every drafted block of small models (exact in
rational arithmetic with Fraction rows); :func:`chain_monte_carlo` samples
blocks from rows that do not depend on the drafted tokens (positions of a
recorded trace) and averages the conditional expectations above
(Rao-Blackwellised over the verifier's coins).
"""

from __future__ import annotations

import numbers

import numpy as np

from .._errors import InvalidParameterError, ShapeMismatchError
from .._validate import as_distribution, check_positive_int, check_rng

__all__ = ["block_stop_probabilities", "chain_exact", "chain_monte_carlo", "expected_block"]


def block_stop_probabilities(w, z):
    r"""Block verification's :math:`h_1..h_\gamma` from the weights and residual masses.

    Parameters
    ----------
    w : sequence, length gamma
        :math:`w_1..w_\gamma`.
    z : sequence, length gamma - 1 (or more; extra entries are ignored)
        :math:`Z_1..Z_{\gamma-1}`.

    Returns
    -------
    list, length gamma

    Raises
    ------
    ShapeMismatchError
        ``w`` is empty or ``z`` has fewer than ``len(w) - 1`` entries.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> block_stop_probabilities([F(1, 2), F(1, 4)], [F(0)])
    [Fraction(0, 1), Fraction(1, 4)]
    """
    g = len(w)
    if g == 0:
        raise ShapeMismatchError("w must hold at least one weight (gamma >= 1); got none")
    if len(z) < g - 1:
        raise ShapeMismatchError(
            f"z must hold at least len(w) - 1 = {g - 1} residual masses; got {len(z)}"
        )
    _check_unit(w, "w")
    _check_unit(z[: g - 1], "z")
    h = []
    for i in range(g - 1):
        den = z[i] + (1 - w[i])
        h.append(z[i] / den if den != 0 else 1)
    h.append(w[g - 1])
    return h


def _check_unit(values, name):
    """Probabilities in [0, 1] (floats or Fractions); NaN, bools and strings refused."""
    for i, x in enumerate(values):
        if isinstance(x, bool) or not isinstance(x, numbers.Real) or not 0 <= x <= 1:
            raise InvalidParameterError(f"{name}[{i}] must be a probability in [0, 1]; got {x!r}")


def expected_block(h):
    r""":math:`E[A] = \sum_i i\, h_i \prod_{j > i} (1 - h_j)` for the backward scan.

    >>> from fractions import Fraction as F
    >>> expected_block([F(1, 2), F(1, 2)])
    Fraction(5, 4)
    """
    _check_unit(h, "h")
    total, tail = 0, 1
    for i in range(len(h), 0, -1):
        total = total + i * h[i - 1] * tail
        tail = tail * (1 - h[i - 1])
    return total


def chain_exact(target, draft, gamma: int) -> dict:
    r"""Exact :math:`E[A]` for every chain length :math:`1..\gamma`, by enumerating blocks.

    Parameters
    ----------
    target, draft : callable
        ``prefix (tuple of int) -> row (V,)``; Fraction rows give exact results.
        Every row is checked once (:class:`~spectheory.trees.CachedModel`):
        finite, non-negative, summing to 1 (exactly, for Fraction rows).
    gamma : int
        Longest chain; every block of :math:`V^\gamma` with positive draft
        probability is visited.

    Returns
    -------
    dict
        ``"token"``, ``"block"``, ``"joint_bound"``: lists of :math:`E[A]` for
        :math:`\gamma' = 1..\gamma` (accepted drafted tokens, bonus token not counted).

    Examples
    --------
    The motivating example of arXiv 2403.10444 (docs/theory.md §8.3), :math:`\gamma = 2`:

    >>> from fractions import Fraction as F
    >>> p = lambda s: [F(1, 3), F(2, 3)]
    >>> q = lambda s: [F(2, 3), F(1, 3)]
    >>> r = chain_exact(p, q, 2)
    >>> [str(r[k][1]) for k in ("token", "block", "joint_bound")]
    ['10/9', '11/9', '4/3']
    """
    from ..trees.models import as_model  # checks every row once (exact rows kept exact)

    gamma = check_positive_int(gamma, "gamma")
    target, draft = as_model(target, "target"), as_model(draft, "draft")
    token = [0] * gamma
    block = [0] * gamma
    bound = [0] * gamma

    def visit(prefix, P, Q, ratios, ws, zs):
        k = len(prefix)
        if k:
            bound[k - 1] = bound[k - 1] + min(P, Q)
        if k == gamma:
            acc, run = 0, 1
            for g in range(gamma):
                run = run * min(1, ratios[g])
                acc = acc + run
                token[g] = token[g] + Q * acc
                h = block_stop_probabilities(ws[: g + 1], zs)
                block[g] = block[g] + Q * expected_block(h)
            return
        p, q = target(prefix), draft(prefix)
        if len(p) != len(q):
            raise ShapeMismatchError(
                f"target and draft have different vocabularies after {list(prefix)}: "
                f"{len(p)} and {len(q)} tokens"
            )
        if k:  # Z_k uses the rows after the prefix: p_{k+1}, q_{k+1}
            zs = [*zs, sum(max(ws[-1] * a - b, 0) for a, b in zip(p, q, strict=True))]
        for x, qx in enumerate(q):
            if qx <= 0:
                continue
            r = p[x] / qx
            w = min(1, (ws[-1] if ws else 1) * r)
            visit((*prefix, x), P * p[x], Q * qx, [*ratios, r], [*ws, w], zs)

    visit((), 1, 1, [], [], [])
    for k in range(1, gamma):  # E[A] <= sum over k <= gamma' of the k-prefix overlaps
        bound[k] = bound[k] + bound[k - 1]
    return {"token": token, "block": block, "joint_bound": bound}


def chain_monte_carlo(p_rows, q_rows, gamma: int, samples: int, rng) -> dict:
    r"""Per-start conditional expectations of :math:`A` on blocks drawn from position rows.

    The rows of a chain starting at position :math:`t` are the recorded rows
    :math:`p_{t+i}, q_{t+i}`, :math:`i = 0..\gamma - 1` (the next-token laws along
    the recorded continuation), whatever tokens were drafted: the chain's laws
    do not depend on its own tokens (the setting of the paper's motivating
    example, applied position by position to a trace).

    Parameters
    ----------
    p_rows, q_rows : ndarray, shape (S, gamma, V)
        Rows of ``S`` chains (float64 distributions).
    gamma : int
    samples : int
        Blocks drawn per chain.
    rng : numpy.random.Generator, int seed, SeedSequence or None
        (:func:`spectheory._validate.check_rng`).

    Returns
    -------
    dict
        ``"token"``: exact :math:`E[A]`, shape (S, gamma) (for lengths 1..gamma);
        ``"token_draws"``, ``"block"`` and ``"joint_bound"``: per-draw
        conditional expectations, shape (S, samples, gamma), whose means over
        draws estimate token-level's (known exactly: a control variate), the
        block verifier's :math:`E[A]` and the joint bound.  All three coincide
        at length 1 (:math:`\min(1, r_1)`).
    """
    gamma = check_positive_int(gamma, "gamma")
    samples = check_positive_int(samples, "samples")
    rng = check_rng(rng)
    p_shape, q_shape = np.shape(p_rows), np.shape(q_rows)
    if p_shape != q_shape or len(p_shape) != 3 or p_shape[1] < gamma or 0 in p_shape:
        raise ShapeMismatchError(
            f"p_rows and q_rows must have the same shape (S, gamma = {gamma}, V); got "
            f"{p_shape} and {q_shape}"
        )
    # Every row checked (and renormalised within tolerance) once: q is then the same law
    # for sampling the drafts and for the ratios p/q.
    p_rows = np.stack([as_distribution(p_rows[s], f"p_rows[{s}]")[0] for s in range(p_shape[0])])
    q_rows = np.stack([as_distribution(q_rows[s], f"q_rows[{s}]")[0] for s in range(q_shape[0])])
    S = p_rows.shape[0]
    beta = np.minimum(p_rows[:, :gamma], q_rows[:, :gamma]).sum(axis=2)  # (S, gamma)
    token = np.cumsum(np.cumprod(beta, axis=1), axis=1)
    blocks = np.empty((S, samples, gamma))
    bounds = np.empty((S, samples, gamma))
    tokens = np.empty((S, samples, gamma))
    for s in range(S):
        cdf = np.cumsum(q_rows[s, :gamma], axis=1)
        u = rng.random((samples, gamma)) * cdf[:, -1]
        x = np.stack([np.minimum(np.searchsorted(cdf[i], u[:, i], side="right"),
                                 cdf.shape[1] - 1) for i in range(gamma)], axis=1)  # fmt: skip
        idx = np.arange(gamma)
        r = p_rows[s, idx, x] / q_rows[s, idx, x]  # (samples, gamma)
        w = np.empty_like(r)  # w_i = min(1, w_{i-1} r_i)
        prev = np.ones(samples)
        for i in range(gamma):
            prev = np.minimum(1.0, prev * r[:, i])
            w[:, i] = prev
        z = np.empty((samples, gamma - 1))
        for i in range(gamma - 1):
            z[:, i] = np.maximum(w[:, i, None] * p_rows[s, i + 1] - q_rows[s, i + 1], 0.0).sum(1)
        for g in range(gamma):
            den = z[:, :g] + (1.0 - w[:, :g])
            with np.errstate(invalid="ignore", divide="ignore"):
                h = np.where(den > 0, z[:, :g] / np.where(den > 0, den, 1.0), 1.0)
            h = np.concatenate([h, w[:, g : g + 1]], axis=1)  # (samples, g + 1)
            tail = np.concatenate([np.cumprod((1.0 - h)[:, ::-1], axis=1)[:, ::-1][:, 1:],
                                   np.ones((samples, 1))], axis=1)  # prod_{j > i} (1 - h_j)
            blocks[s, :, g] = (np.arange(1, g + 2) * h * tail).sum(axis=1)
        bounds[s] = np.cumsum(np.minimum(1.0, np.cumprod(r, axis=1)), axis=1)
        tokens[s] = np.cumsum(np.cumprod(np.minimum(1.0, r), axis=1), axis=1)
    return {"token": token, "token_draws": tokens, "block": blocks, "joint_bound": bounds}
