r"""The optimal i.i.d. verifier's plan: an optimal accepted mass in the coverage polymatroid.

For ``n`` drafts drawn i.i.d. from ``q``, let ``S`` be the set of distinct
drafts and :math:`f(A) = P(S \cap A \ne \emptyset) = \varphi(q(A))` with
:math:`\varphi(s) = 1 - (1 - s)^n` (concave, so ``f`` is submodular).  A
lossless verifier that outputs ``i`` and keeps it when ``i`` is a draft has
accepted mass :math:`x_i = P(y = i, i \in S)` with :math:`x \le p` and
:math:`x(A) \le f(A)`; the largest :math:`x(V)` is the polymatroid-box value
:math:`\min_A f(A) + p(V \setminus A) = \alpha^*` (docs/theory.md §2.3;
Thomas & Pal [1]_ reduce the transport LP to this convex program).

The plan reaches it with a *selection rule* (pick one draft) whose marginal
``y`` satisfies :math:`\sum_i \min(p_i, y_i) = \alpha^*`, followed by
single-draft speculative sampling of ``p`` against ``y`` (the canonical
decomposition of Khisti et al. [2]_).  With :math:`H^*` the optimal dual set
(a prefix of the tokens by ``p/q`` ascending, docs/theory.md §2.4) and
:math:`T = V \setminus H^*`:

* on ``T`` (selected whenever ``S`` meets ``T``):
  :math:`y_i = \min(p_i, c\, q_i)` with :math:`\sum_T y = f(T)`;
* on :math:`H^*` (selected when :math:`S \subseteq H^*`):
  :math:`y_i = \max(p_i, c' q_i)` with :math:`\sum_{H^*} y = q(H^*)^n`.

Sorted by density :math:`y_i/q_i` (descending ``p/q``), the cumulative
``y`` is concave and lies below the cumulative coverage at every prefix (the
dual optimality of :math:`H^*`), so ``y`` is a base of the polymatroid and a
mixture of *tier rules*: for a partition of the order into consecutive tiers,
"the lowest tier that ``S`` meets, and in it the first draft in draw order",
whose marginal is :math:`q_i (\varphi(s_b) - \varphi(s_a)) / (s_b - s_a)` on a
tier spanning cumulative mass :math:`[s_a, s_b)`.  The mixture weights come
from one sweep that merges adjacent tiers in the order in which the residual's
slopes meet (each tier's residual density is a line in the weight already
spent), a heap of :math:`O(V)` events: :math:`O(V \log V)` per row.

All arithmetic is ``+ - * /`` and comparisons, so Fraction input gives the
exact plan (and the coins protocol the exact law).  The derivation, with the
proofs, is ``notebooks/05_optimal_verifier.py``.

References
----------
.. [1] Thomas, Pal. "Global Resolution: Optimal Multi-Draft Speculative
   Sampling via Convex Minimization". arXiv:2511.15898.
.. [2] Khisti, Ebrahimi, Dbouk, Behboodi, Memisevic, Louizos. "Multi-Draft
   Speculative Sampling: Canonical Architectures and Theoretical Limits".
   arXiv:2410.18234.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from .._errors import SolverError
from ._polymatroid_kernels import PERMANENT, plan_core
from ._result import SolverResult

__all__ = [
    "PERMANENT",
    "OptimalPlan",
    "alpha_cvxpy",
    "chord_density",
    "plan",
    "plan_python",
    "plan_row",
]



@dataclass(frozen=True)
class OptimalPlan(SolverResult):
    """The per-row tables of the optimal i.i.d. verifier.

    The shared fields come from :class:`.SolverResult`: ``method``
    ``"tier_sweep"``, ``status`` ``"optimal"`` (``alpha`` is
    :math:`\\alpha^*`), ``inputs`` ``{"n": n}``.

    Attributes
    ----------
    order : int64 (m,)
        Tokens with ``q > 0``: first ``T`` then ``H*``, each by ``p/q`` descending.
    n_top : int
        ``|T|`` among them (positions ``0..n_top-1``).
    pos : int64 (V,)
        Position of each token in ``order`` (-1 where ``q = 0``).
    rank : int64 (m + 1,)
        ``rank[j]``: the boundary before position ``j`` separates two tiers in
        component ``k`` iff ``rank[j] > k``.
    w_top, w_h : ndarray
        Component weights of the ``T`` and ``H*`` segments (each sums to 1).
    y : ndarray (V,)
        Selection marginal.
    residual : ndarray (V,)
        ``norm((p - y)_+)``, the law after a rejection.
    alpha : scalar
        :math:`\\sum_i \\min(p_i, y_i)`, equal to :math:`\\alpha^*`.
    """

    order: np.ndarray
    n_top: int
    pos: np.ndarray
    rank: np.ndarray
    w_top: np.ndarray
    w_h: np.ndarray
    y: np.ndarray
    residual: np.ndarray
    alpha: object


_SHARED = {"method": "tier_sweep", "status": "optimal"}


def chord_density(a, b, n):
    r""":math:`(a^n - b^n)/(a - b) = \sum_{j<n} a^j b^{n-1-j}`, without cancellation.

    With ``a``, ``b`` the draft mass at or after the two ends of a tier, this
    is the tier rule's accepted mass per unit of draft mass.

    >>> chord_density(0.5, 0.25, 2)
    0.75
    """
    s = 1 + 0 * a  # Horner in a: n multiplications, the numba kernel's order
    bk = 1 + 0 * b
    for _ in range(n - 1):
        bk = bk * b
        s = s * a + bk
    return s


def _optimal_prefix(p, q, asc, n):
    """First minimiser ``k`` of ``p(H_k) - q(H_k)^n`` over the prefixes of ``asc``."""
    z = 0 * p[0]
    best, kbest, P, S = z, 0, z, z
    for k, i in enumerate(asc, start=1):
        P = P + p[i]
        S = S + q[i]
        f = P - S**n
        if f < best:
            best, kbest = f, k
    return kbest


def _segment(g, R, lo, hi, n, rank):
    """Mixture weights of one segment (positions ``lo..hi-1``) with densities ``g``.

    Tiers are runs of positions; a tier's residual density is the line
    ``a - W v`` in the weight ``W`` spent so far (``v`` its chord density).
    Two adjacent tiers merge when their lines meet; the weight of component
    ``k`` is the ``W``-interval between merges ``k`` and ``k + 1``.
    """
    z = 0 * R[0]
    start = [lo]
    for j in range(lo + 1, hi):
        if g[j] == g[j - 1]:
            rank[j] = 0  # equal densities: one tier from the start
        else:
            start.append(j)
    nxt, prv, a, v, mass, ver = {}, {}, {}, {}, {}, {}
    for t, s in enumerate(start):
        e = start[t + 1] if t + 1 < len(start) else hi
        nxt[s], prv[s] = e, (start[t - 1] if t > 0 else None)
        a[s], v[s], mass[s], ver[s] = g[s], chord_density(R[s], R[e], n), R[s] - R[e], 0

    def key(s, W):
        e = nxt[s]
        dv = v[s] - v[e]
        k = (a[s] - a[e]) / dv if dv > 0 else W
        return k if k > W else W

    heap, tick = [], 0
    for s in start[:-1]:
        heapq.heappush(heap, (key(s, z), tick, s, nxt[s], ver[s], ver[nxt[s]]))
        tick += 1
    times = []
    while heap:
        W, _, s, e, vs, ve = heapq.heappop(heap)
        if s not in nxt or nxt[s] != e or ver[s] != vs or ver.get(e) != ve:
            continue  # stale event
        times.append(W)
        rank[e] = len(times)
        ms, me = mass[s], mass[e]
        if ms + me > 0:
            u = (ms * (a[s] - W * v[s]) + me * (a[e] - W * v[e])) / (ms + me)
        else:  # two tiers of draft mass below rounding (float rows): no weight
            u = a[s] - W * v[s]
        f = nxt[e]
        nxt[s] = f
        if f < hi:
            prv[f] = s
        del nxt[e], prv[e], a[e], v[e], mass[e], ver[e]
        mass[s] = ms + me
        v[s] = chord_density(R[s], R[f], n)
        a[s] = u + W * v[s]
        ver[s] += 1
        if prv[s] is not None:
            t = prv[s]
            heapq.heappush(heap, (key(t, W), tick, t, s, ver[t], ver[s]))
            tick += 1
        if f < hi:
            heapq.heappush(heap, (key(s, W), tick, s, f, ver[s], ver[f]))
            tick += 1
    end = a[lo] / v[lo]
    bounds = [z, *times, end]
    w = [bounds[k + 1] - bounds[k] for k in range(len(bounds) - 1)]
    return w


def plan_python(p, q, n):
    """The plan in plain Python arithmetic (Fraction object arrays stay exact).

    Parameters
    ----------
    p, q : ndarray (V,)
        float64 or Fraction object arrays.
    n : int >= 2

    Returns
    -------
    OptimalPlan
    """
    V = p.shape[0]
    exact = p.dtype == object
    z = 0 * p[0]
    support = [i for i in range(V) if q[i] > 0]
    # p/q ascending, ties by id: the prefix lemma's order (docs/theory.md §2.4).
    asc = sorted(support, key=lambda i: (p[i] / q[i], i))
    k = _optimal_prefix(p, q, asc, n)
    H, T = asc[:k], asc[k:]
    order = list(reversed(T)) + list(reversed(H))
    m, nT = len(order), len(T)
    R = [z] * (m + 1)  # draft mass at or after each position, summed from the tail
    for j in range(m - 1, -1, -1):
        R[j] = R[j + 1] + q[order[j]]
    r = [p[i] / q[i] for i in order]
    g = list(r)
    y = np.array([z] * V, dtype=object if exact else np.float64)
    rank = np.zeros(m + 1, dtype=np.int64)
    rank[0] = rank[nT] = rank[m] = PERMANENT
    w_top, w_h = [1 + z], [1 + z]
    if nT:
        # 1 - q(H*)^n = q(T) * sum_k q(H*)^k, without cancellation (the kernel's order).
        QT = z
        for t in range(nT):
            QT = QT + q[order[t]]
        fT = QT * chord_density(1 + z, R[nT], n)
        Pafter = z
        suffix = [z] * (nT + 1)
        for j in range(nT - 1, -1, -1):
            suffix[j] = suffix[j + 1] + p[order[j]]
        S = z
        for j in range(1, nT + 1):  # U = first j tokens, flat density c
            S = S + q[order[j - 1]]
            Pafter = suffix[j]
            c = (fT - Pafter) / S
            if j == nT or c >= r[j]:
                break
        for t in range(nT):
            i = order[t]
            if t < j:
                g[t] = c
                y[i] = c * q[i]
            else:
                y[i] = p[i]
        w_top = _segment(g, R, 0, nT, n, rank)
    if m > nT:
        QH = R[nT] ** n
        P = z
        for j in range(nT, m):  # tokens from j on get the flat density c'
            cp = (QH - P) / R[j]
            if cp >= r[j]:
                break
            P = P + p[order[j]]
        for t in range(nT, m):
            i = order[t]
            if t >= j:
                g[t] = cp
                y[i] = cp * q[i]
            else:
                y[i] = p[i]
        w_h = _segment(g, R, nT, m, n, rank)
    w_top, w_h = _weights(w_top, exact), _weights(w_h, exact)
    pos = np.full(V, -1, dtype=np.int64)
    for t, i in enumerate(order):
        pos[i] = t
    excess = np.array([p[i] - y[i] if p[i] > y[i] else z for i in range(V)], dtype=y.dtype)
    total = excess.sum()
    resid = excess / total if total > 0 else p.copy()
    alpha = sum((p[i] if p[i] < y[i] else y[i] for i in range(V)), z)
    return OptimalPlan(
        np.array(order, dtype=np.int64), nT, pos, rank, w_top, w_h, y, resid, alpha,
        **_SHARED, message=f"tier sweep in {'exact' if exact else 'float'} arithmetic (Python)",
        inputs={"n": n},
    )


def _weights(w, exact):
    if exact:
        total = sum(w, 0 * w[0])
        if total != 1 or any(x < 0 for x in w):
            raise SolverError(f"mixture weights sum to {total}, not exactly 1 (a bug)")
        return np.array(w, dtype=object)
    arr = np.maximum(np.array(w, dtype=np.float64), 0.0)  # rounding only
    return arr / arr.sum()


def plan(p, q, n):
    """The optimal i.i.d. plan of one row: exact for Fraction input, numba for float64.

    Parameters
    ----------
    p, q : ndarray (V,)
    n : int >= 2

    Returns
    -------
    OptimalPlan

    Examples
    --------
    docs/theory.md §8.1, instance A, two i.i.d. drafts (alpha* = 89/100):

    >>> from fractions import Fraction as F
    >>> p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    >>> q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> plan(p, q, 2).alpha
    Fraction(89, 100)
    """
    if p.dtype == object:
        return plan_python(p, q, n)
    return plan_row(np.ascontiguousarray(p, dtype=np.float64),
                    np.ascontiguousarray(q, dtype=np.float64), n)


def plan_row(p, q, n):
    """The float64 plan of one row, by the numba kernel (:func:`plan` for float input)."""
    order, nT, pos, rank, w_top, w_h, y, excess, alpha = plan_core(p, q, int(n))
    total = excess.sum()  # numpy's sum, as the reference's residual
    resid = excess / total if total > 0 else p.copy()
    return OptimalPlan(
        order, int(nT), pos, rank, w_top, w_h, y, resid, float(alpha),
        **_SHARED, message="tier sweep in float64 (numba)", inputs={"n": int(n)},
    )


def alpha_cvxpy(p, counts, n, *, solver="HIGHS"):
    r""":math:`\alpha^*` from an independent convex model of the polymatroid program (cvxpy).

    For a draft with rational probabilities :math:`q_i = c_i / D` (integer
    ``counts`` :math:`c_i \ge 1`), split token ``i`` into :math:`c_i` atoms of
    mass :math:`1/D`.  On atoms the coverage is a concave function of the
    count, :math:`g(B) = \varphi(|B|/D)`, so membership in its polymatroid is
    :math:`\sum_a (x_a - t)_+ \le \max_k (g_k - k t)` for all ``t``, and,
    both sides being convex and the right one linear between its breakpoints
    :math:`t_k = g_k - g_{k-1}`, the ``D`` constraints at those breakpoints are
    exact.  Atoms of one token may share their mass equally (the constraint
    set is convex and symmetric in them), which leaves ``V`` variables:

    .. math::

        \max \sum_i x_i \ \text{s.t.}\ 0 \le x \le p,\quad
        \sum_i (x_i - t_k c_i)_+ \le g_k - k\,t_k \quad (k = 1..D).

    No sort, no prefix lemma and no optimal set enter, so agreement with
    :func:`plan` is an independent check (the polymatroid-box duality, docs/theory.md §2.3).

    Parameters
    ----------
    p : float64 (V,)
    counts : int (V,), the draft's probabilities times ``D = counts.sum()``
    n : int
    solver : str
        A cvxpy LP solver.

    Returns
    -------
    float
    """
    try:
        import cvxpy as cp
    except ImportError as exc:  # pragma: no cover - the testing extra installs it
        from .._errors import MissingDependencyError

        raise MissingDependencyError(
            "alpha_cvxpy needs cvxpy (pip install spectheory[testing])"
        ) from exc
    counts = np.asarray(counts, dtype=np.int64)
    V, D = counts.shape[0], int(counts.sum())
    g = 1.0 - (1.0 - np.arange(D + 1) / D) ** n
    t = np.diff(g)
    x = cp.Variable(V, nonneg=True)
    s = cp.Variable((D, V), nonneg=True)
    cons = [x <= p, s >= x[None, :] - np.outer(t, counts),
            cp.sum(s, axis=1) <= g[1:] - np.arange(1, D + 1) * t]  # fmt: skip
    problem = cp.Problem(cp.Maximize(cp.sum(x)), cons)
    problem.solve(solver=solver)
    if problem.status != "optimal":
        raise SolverError(f"cvxpy ({solver}) ended with status {problem.status!r}")
    return float(problem.value)
