r"""Verifiers built on an optimal transport plan: ``optimal_lp`` and ``khisti``.

Both solve, for the given instance, the primal transport LP of docs/theory.md §2.2
over the draft *sets* ``c`` (membership classes of the draft law,
:func:`spectheory.drafting.set_law_row`), with HiGHS:

.. math::

    \max_{m \ge 0} \sum_{c,\, y \in c} m(c, y) \quad\text{s.t.}\quad
    \sum_{y} m(c, y) \le P(c), \qquad \sum_{c} m(c, y) \le p(y),

whose value is the optimum :math:`\alpha^*` (SpecTr [1]_; Hu et al. [2]_).  The
float solution is made exactly feasible in the input's arithmetic (for Fraction
input each entry is first rounded to the nearest fraction of denominator at
most 1e12, which recovers the exact vertex on small rational instances; then
entries are clipped at 0, and rows and columns scaled down where rounding
overshoots), so the
verifiers below are exactly lossless, for Fraction input too; their acceptance
is :math:`\alpha^*` to LP precision (about 1e-15).

``optimal_lp``
    Completes ``m`` to a full coupling by the product of the leftover
    marginals, :math:`\pi = m + L_c R_y / L` with
    :math:`L_c = P(c) - \sum_y m(c, y)`, :math:`R_y = p(y) - \sum_c m(c, y)`,
    :math:`L = \sum_c L_c`, and outputs :math:`y \sim \pi(c, \cdot)/P(c)`.
``khisti``
    The canonical decomposition of Khisti et al. [3]_ (docs/theory.md §3.7):
    (1) importance-type selection of one draft :math:`y' \in c` with
    probability :math:`\beta_c(y') = (m(c, y') + L_c/|c|)/P(c)`, which induces
    the law :math:`r_\beta(y) = \sum_c P(c)\beta_c(y)`; (2) single-draft SD of
    ``p`` against :math:`r_\beta` on :math:`y'`.  Choice made here: the weights
    :math:`\beta` come from the optimal transport plan (the unmatched mass of
    a class is spread evenly over its distinct drafts), rather than from the
    paper's truncated LP or tournament.  Since :math:`r_\beta \ge \sum_c m(c,
    \cdot)`, :math:`\sum_y \min(p, r_\beta) \ge \alpha^*`, so these weights are
    optimal for the decomposition (its optimum equals :math:`\alpha^*`, Thomas
    & Pal [4]_), for any draft law and any ``n``.

Both are reference verifiers for small vocabularies: the LP has one variable
per (draft set, member) pair and refuses more than :data:`MAX_PAIRS`.

References
----------
.. [1] Sun et al. "SpecTr: Fast Speculative Decoding via Optimal Transport".
   arXiv:2310.15141.
.. [2] Hu, Zheng, Viswanathan, Chen, Rossi, Wu, Manocha, Huang.
   "Towards Optimal Multi-draft Speculative Decoding". arXiv:2502.18779.
.. [3] Khisti, Ebrahimi, Dbouk, Behboodi, Memisevic, Louizos. "Multi-Draft
   Speculative Sampling: Canonical Architectures and Theoretical Limits".
   arXiv:2410.18234.
.. [4] Thomas, Pal. "Global Resolution: Optimal Multi-Draft Speculative
   Sampling via Convex Minimization". arXiv:2511.15898.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from .._errors import InstanceTooLargeError, SolverError
from ..drafting import set_law_row
from ._ops import accept_prob, normalise_or, positive_part, residual

__all__ = ["MAX_PAIRS", "khisti", "optimal_lp", "transport_plan"]

#: Largest number of (draft set, member) pairs the LP accepts.
MAX_PAIRS = 50_000


def _solve(p, law, classes):
    V = p.shape[0]
    rows, cols, pairs = [], [], []
    for ci, c in enumerate(classes):
        for y in sorted(c):
            rows += [ci, len(classes) + y]
            cols += [len(pairs), len(pairs)]
            pairs.append((ci, y))
    if len(pairs) > MAX_PAIRS:
        raise InstanceTooLargeError(
            f"the transport LP has {len(pairs)} (draft set, token) pairs; limit {MAX_PAIRS}"
        )
    A = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(classes) + V, len(pairs)))
    b = np.concatenate([[float(law[c]) for c in classes], [float(v) for v in p]])
    res = linprog(
        -np.ones(len(pairs)),
        A_ub=A.tocsr(),
        b_ub=b,
        bounds=(0, None),
        method="highs-ds",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    if res.status != 0:
        raise SolverError(f"HiGHS failed on the transport LP: {res.message}")
    return pairs, res.x


@lru_cache(maxsize=256)
def _plan_cached(p_key, q_key, n, sampling, exact):
    # ``exact`` is part of the key: Fraction(1, 2) and 0.5 hash and compare equal.
    dtype = object if exact else np.float64
    p = np.array(p_key, dtype=dtype)
    q = np.array(q_key, dtype=dtype)
    law = set_law_row(q, n, sampling)
    classes = list(law)
    pairs, x = _solve(p, law, classes)
    z = 0 * p[0]
    m = np.full((len(classes), p.shape[0]), z, dtype=dtype)
    for (ci, y), v in zip(pairs, x):
        # Exact input: the vertex has small denominators; recover it from the float.
        m[ci, y] = max(Fraction(float(v)).limit_denominator(10**12) if exact else float(v), z)
    for ci, c in enumerate(classes):  # make rows, then columns, exactly feasible
        s = m[ci].sum()
        if s > law[c]:
            m[ci] = m[ci] * (law[c] / s)
    col = m.sum(axis=0)
    for y in range(p.shape[0]):
        if col[y] > p[y]:
            m[:, y] = m[:, y] * (p[y] / col[y])
    # Leftover marginals; clipping only removes float rounding (exact input is >= 0).
    row_left = positive_part(
        np.array([law[c] - m[ci].sum() for ci, c in enumerate(classes)], dtype=dtype)
    )
    col_left = positive_part(p - m.sum(axis=0))
    total_left = row_left.sum()
    full = m.copy()
    if total_left > 0:
        full = full + np.outer(row_left, col_left) / total_left
    select = m.copy()
    for ci, c in enumerate(classes):
        for y in c:
            select[ci, y] = select[ci, y] + row_left[ci] / len(c)
    r_beta = select.sum(axis=0)
    # Rows normalised by their own sums (equal to law[c] in exact arithmetic):
    # a class whose float probability underflows (q ~ 1e-300 squared) is never
    # drawn, and dividing by law[c] there gave 0/0.
    conditional = {c: normalise_or(full[ci], p) for ci, c in enumerate(classes)}
    selection = {c: normalise_or(select[ci], p) for ci, c in enumerate(classes)}
    return conditional, selection, r_beta


def transport_plan(p, q, n, sampling):
    """The completed optimal coupling and the Khisti selection, cached per instance.

    Parameters
    ----------
    p, q : ndarray, shape (V,)
        Target and draft (float64 or Fraction object arrays).
    n : int
    sampling : {"iid", "without_replacement", "greedy"}

    Returns
    -------
    conditional : dict
        ``frozenset c -> ndarray (V,)``: the law of ``y`` given the draft set ``c``.
    selection : dict
        ``frozenset c -> ndarray (V,)``: the selection law :math:`\\beta_c` on ``c``.
    r_beta : ndarray, shape (V,)
        The law of the selected draft.
    """
    exact = p.dtype == object
    return _plan_cached(tuple(p.tolist()), tuple(q.tolist()), int(n), sampling, exact)


def optimal_lp(p, q, drafts, coins, *, sampling="iid"):
    """Output :math:`y \\sim \\pi(\\cdot \\mid \\{x_1..x_n\\})` for an optimal coupling ``pi``.

    Parameters
    ----------
    p, q : ndarray, shape (V,)
    drafts : tuple of int
    coins : Coins
    sampling : {"iid", "without_replacement", "greedy"}
        The law the drafts were drawn from; the coupling is solved for it.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.coins import ReplayCoins
    >>> p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    >>> optimal_lp(p, q, (2, 2), ReplayCoins([0.5]))  # {c} can only keep c
    2
    """
    conditional, _, _ = transport_plan(p, q, len(drafts), sampling)
    return coins.categorical(conditional[frozenset(int(x) for x in drafts)])


def khisti(p, q, drafts, coins, *, sampling="iid"):
    """Khisti et al.'s canonical decomposition: select one draft, then single-draft SD.

    Parameters
    ----------
    p, q : ndarray, shape (V,)
    drafts : tuple of int
    coins : Coins
    sampling : {"iid", "without_replacement", "greedy"}

    Returns
    -------
    int
    """
    _, selection, r_beta = transport_plan(p, q, len(drafts), sampling)
    x = coins.categorical(selection[frozenset(int(x) for x in drafts)])
    if coins.bernoulli(accept_prob(p[x], r_beta[x])):
        return x
    return coins.categorical(residual(p, r_beta))
