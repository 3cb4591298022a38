r"""Mixtures of priority rules by column generation (private; docs/theory.md §3.17).

Within one part of the priority-coin rule, the selection marginals of all rules
preferring that part form the base polytope of the part's coverage function
:math:`g(A) = P(S' \cap A \ne \emptyset)`, and its vertices are the *priority
orders* (every coin 1: the first draft in the order is selected; Edmonds' greedy
vertex).  A mixture of rules (draw a rule with probability :math:`\lambda_i`, then
select by it) has the mixed marginal :math:`\sum_i \lambda_i y^{(i)}`, so the part
reaches its target (``y <= p`` on ``T``, ``y >= p`` on :math:`H^*`) as soon as some
point of the polytope does, which the bound guarantees.  The search for the mixture
is the linear program

.. math::

    \min \sum_a s_a \quad \text{s.t.} \quad \pm\Big(\sum_i \lambda_i y^{(i)}_a - p_a\Big)
    \le s_a,\ s \ge 0,\ \lambda \ge 0,\ \sum_i \lambda_i = 1,

(``+`` on ``T``, ``-`` on :math:`H^*`) over the columns found so far, priced by the
duals :math:`w_a \ge 0` of the rows: the column of least reduced cost over the
whole polytope is the priority order by ascending ``w`` on ``T`` (descending on
:math:`H^*`), one greedy pass with every coin 1.  Column generation over the vertices
of a polytope ends after finitely many rounds at the LP's optimum over the whole
polytope, here 0: so the mixture reaches the bound, whatever the row, when the rounds
are not cut short.  Each round also adds the greedy coin pass in the same order (a
column nearer the target, not needed for the argument).  Rows that every column
already meets are left out of the LP (any mixture meets them).  HiGHS meets rows to
about 1e-9, so the weights are polished by non-negative least squares on the rows met
with equality; for Fraction columns those rows are solved in Fractions and the mixture
is checked exactly (:func:`exact_weights`).

On the recorded rows of a language model at V = 49,152 this converges too slowly to
be useful (vertices put almost all the mass on the first tokens, and dozens of rounds
left one missed row unchanged), so the plan mixes only small parts
(:data:`MIX_MAX_TOKENS`).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog, nnls

__all__ = ["LP_ITERATIONS_PER_SIZE", "MIX_MAX_TOKENS", "MIX_ROUNDS", "exact_weights", "mix_part"]

#: Largest part mixed: beyond it the plan keeps its best single rule (module docstring).
MIX_MAX_TOKENS = 64
#: Rounds of column generation (each: one LP and two greedy passes).
MIX_ROUNDS = 200
#: Shortfall counted as none (the plan's own threshold for a pass, 1e-13).
_DONE = 1e-13


#: Simplex iterations allowed per LP, per row and column: HiGHS stalled on degenerate LPs of
#: a 267-token part of bound 1 after about 75 rounds (measured); at the limit the column
#: generation stops and keeps its last mixture (deterministic, unlike a time limit).
LP_ITERATIONS_PER_SIZE = 10


def _lp(Y, target, top):
    """The restricted LP over the columns ``Y`` (tokens x columns): (lambda, duals w, mu), or
    None when HiGHS stops at its iteration limit."""
    sign = 1.0 if top else -1.0
    viol = ((Y > target[:, None]) if top else (Y < target[:, None])).any(axis=1)
    rows = np.flatnonzero(viol)
    m = Y.shape[1]
    if rows.size == 0:
        lam = np.zeros(m)
        lam[-1] = 1.0  # the column already meets every row
        return lam, np.zeros(target.size), 0.0
    A = sp.hstack([sp.csr_matrix(sign * Y[rows]), -sp.identity(rows.size, format="csr")])
    res = linprog(np.r_[np.zeros(m), np.ones(rows.size)], A_ub=A.tocsr(),
                  b_ub=sign * target[rows], A_eq=np.r_[np.ones(m), np.zeros(rows.size)][None],
                  b_eq=[1.0], bounds=(0, None), method="highs",
                  options={"maxiter": LP_ITERATIONS_PER_SIZE * (rows.size + m) + 100})
    if res.status != 0:  # feasible and bounded by construction: the iteration limit
        return None
    w = np.zeros(target.size)
    w[rows] = -res.ineqlin.marginals
    return res.x[:m], w, float(res.eqlin.marginals[0])


def _shortfall(y, target, top):
    d = (y - target) if top else (target - y)
    return float(np.maximum(d, 0.0).sum())


def _polish(Y, lam, target, top):
    """Tighten the LP's weights, which HiGHS meets to about 1e-9 (a part of bound 1 needs
    ``y = p`` exactly): non-negative least squares on the rows the LP meets with equality
    and on the sum of the weights, over every column; the better of the two mixtures."""
    y = Y @ lam
    tight = np.flatnonzero(np.abs(y - target) <= 1e-8)
    A = np.vstack([Y[tight], np.ones((1, Y.shape[1]))])
    sol = nnls(A, np.r_[target[tight], 1.0])[0]
    best = lam / lam.sum()
    if sol.sum() > 0:
        sol = sol / sol.sum()
        if _shortfall(Y @ sol, target, top) < _shortfall(Y @ best, target, top):
            best = sol
    return best


def mix_part(columns, target, top, passes):
    """Mix rules of one part until the mixture meets its target, or the rounds run out.

    Parameters
    ----------
    columns : list of (rank, kappa, y)
        Rules to start from, each as the part's tokens' rank (int, positions 0..m-1),
        coins and marginal, all indexed by the part's tokens.
    target : float64 or Fraction object (m,)
        ``p`` on the part's tokens.  For Fractions (the passes then return Fractions) the
        LP runs on floats and its solution is made exact (:func:`exact_weights`).
    top : bool
        ``T`` (the mixture must stay at or below ``target``) or :math:`H^*` (at or above).
    passes : callable
        ``passes(rank, vertex)`` -> (kappa, y): the greedy pass of the order given by
        ``rank``, with every coin 1 when ``vertex`` (a vertex of the polytope), else the
        greedy coins.

    Returns
    -------
    weights : float64 or Fraction object (c,)
        Positive, summing to 1; None for Fractions when no exact mixture was found.
    rules : list of (rank, kappa, y), length c (None with ``weights``)
    shortfall : float
        Of the mixture (float arithmetic; 0 for an exact mixture).
    rounds : int
    """
    exact = np.asarray(target).dtype == object
    target_f = np.asarray(target, dtype=np.float64)
    cols = list(columns)
    base = cols[0][0]
    rounds = 0
    lam = np.ones(1)  # the first column alone, until an LP says better
    short = _shortfall(np.asarray(cols[0][2], dtype=np.float64), target_f, top)
    while True:
        Y = np.column_stack([np.asarray(c[2], dtype=np.float64) for c in cols])
        sol = _lp(Y, target_f, top)
        if sol is None:
            break  # HiGHS stalled: keep the last mixture
        lam, w, mu = sol
        lam = _polish(Y, lam, target_f, top)
        short = _shortfall(Y @ lam, target_f, top)
        if short <= _DONE or rounds >= MIX_ROUNDS:
            break
        # the priced order: least reduced cost -sign * <w, y> - mu over the polytope
        key = w if top else -w
        order = np.lexsort((base, key))
        rank = np.empty_like(base)
        rank[order] = np.arange(order.size)
        vertex = passes(rank, True)
        if (w @ vertex[1] - mu if top else -(w @ vertex[1]) - mu) >= -1e-14:
            break  # no column improves the LP: it is optimal over the whole polytope
        cols.append((rank, *vertex))
        cols.append((rank, *passes(rank, False)))
        rounds += 1
    keep = np.flatnonzero(lam > 0)
    if exact:
        if short > _DONE:
            return None, None, short, rounds
        lam_x = exact_weights([cols[i][2] for i in keep], target, top, lam[keep])
        if lam_x is None:
            return None, None, short, rounds
        nz = [j for j, x in enumerate(lam_x) if x > 0]
        return (np.array([lam_x[j] for j in nz], dtype=object), [cols[keep[j]] for j in nz],
                0.0, rounds)
    return lam[keep], [cols[i] for i in keep], short, rounds


def _solve_exact(A, b, guess):
    """A solution of ``A x = b`` in Fractions (Gauss-Jordan), free unknowns set to ``guess``
    (rationalised); None when the system has none."""
    A = [[*row, rhs] for row, rhs in zip(A, b)]
    c = len(guess)
    pivots = []
    r = 0
    for j in range(c):
        i = next((i for i in range(r, len(A)) if A[i][j] != 0), None)
        if i is None:
            continue
        A[r], A[i] = A[i], A[r]
        piv = A[r][j]
        A[r] = [x / piv for x in A[r]]
        for i in range(len(A)):
            if i != r and A[i][j] != 0:
                f = A[i][j]
                A[i] = [x - f * y for x, y in zip(A[i], A[r])]
        pivots.append(j)
        r += 1
    if any(row[c] != 0 for row in A[r:]):
        return None  # inconsistent
    x = [Fraction(float(g)).limit_denominator(10**12) for g in guess]
    for i, j in enumerate(pivots):
        x[j] = A[i][c] - sum(A[i][k] * x[k] for k in range(c) if k != j)
    return x


def exact_weights(ys, target, top, lam):
    """The mixture's weights in Fractions, from the float solution ``lam`` of the same columns.

    The rows the float mixture meets with equality (to 1e-9) and the sum of the weights are
    solved exactly; the weights are accepted only if they are non-negative and the exact
    mixture meets every row (``<= target`` on ``T``, ``>=`` on :math:`H^*`).  Returns None
    otherwise (the plan then keeps its single rule and says it missed).
    """
    Yf = np.column_stack([np.asarray(y, dtype=np.float64) for y in ys])
    tight = np.flatnonzero(np.abs(Yf @ lam - np.asarray(target, dtype=np.float64)) <= 1e-9)
    A = [[ys[j][a] for j in range(len(ys))] for a in tight] + [[Fraction(1)] * len(ys)]
    b = [target[a] for a in tight] + [Fraction(1)]
    x = _solve_exact(A, b, lam)
    if x is None or any(v < 0 for v in x):
        return None
    for a in range(len(target)):
        ya = sum(x[j] * ys[j][a] for j in range(len(ys)))
        if (ya > target[a]) if top else (ya < target[a]):
            return None
    return x
