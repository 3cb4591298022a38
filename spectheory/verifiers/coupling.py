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

Both run at any vocabulary when the draft's *support* is small: the draft
sets lie in the support of ``q``, the LP has one variable per (draft set,
member) pair and refuses more than :data:`MAX_PAIRS` (before enumerating the
sets), and the plan is kept per draft set, not as a (sets x V) matrix.  Drafts
without replacement from an n-gram or top-k draft of a few dozen tokens are
such a case: there ``khisti`` and ``optimal_lp`` reach the bound
:math:`\alpha^*_{\rm wor}` at a full vocabulary, which no sampler of this
package does for a draft of full support (docs/theory.md §3.12).

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

import math
from collections.abc import Mapping
from fractions import Fraction

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from .._errors import InstanceTooLargeError, SolverError
from ..drafting import set_law_row
from ._ops import accept_prob, normalise_or, positive_part, residual
from ._plan_cache import RowCache

__all__ = [
    "MAX_PAIRS",
    "clear_transport_cache",
    "khisti",
    "optimal_lp",
    "pair_count",
    "transport_plan",
]

#: Largest number of (draft set, member) pairs the LP accepts.
MAX_PAIRS = 50_000


def pair_count(support, n, sampling):
    """The number of (draft set, member) pairs of the transport LP, from the support's size.

    i.i.d.: every set of 1..n distinct support tokens; without replacement:
    every set of exactly n; greedy: the top-(n - 1) plus one more token.
    """
    if sampling == "iid":
        return sum(j * math.comb(support, j) for j in range(1, n + 1))
    if sampling == "without_replacement":
        return n * math.comb(support, n)
    return n * max(support - n + 1, 0)


def _check_size(q, n, sampling):
    support = int(np.count_nonzero(q != 0))
    pairs = pair_count(support, n, sampling)
    if pairs > MAX_PAIRS:
        raise InstanceTooLargeError(
            f"the transport LP would have {pairs} (draft set, token) pairs for n={n}, "
            f"sampling={sampling!r} and a draft support of {support} tokens; limit {MAX_PAIRS}"
        )


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


class _TransportPlan:
    """An optimal transport plan kept per draft set, not as a (sets x V) matrix.

    A draft set ``c`` holds the matched mass ``m(c, y)`` on its own members
    only, so the plan takes memory in the number of (set, member) pairs plus a
    few vectors of length V; a row of the completed coupling or of the Khisti
    selection is built when a trial asks for it (O(V), as the draw from it).
    At V = 49,152 and 780 draft sets the dense form had held 0.6 GB a plan.
    """

    def __init__(self, p, q, n, sampling):
        exact = p.dtype == object
        _check_size(q, n, sampling)  # before enumerating millions of draft sets
        law = set_law_row(q, n, sampling)
        classes = list(law)
        pairs, x = _solve(p, law, classes)
        z = 0 * p[0]
        dtype = object if exact else np.float64
        self.p, self.V, self.dtype = p, p.shape[0], dtype
        self.index = {c: ci for ci, c in enumerate(classes)}
        self.members = [np.array(sorted(c), dtype=np.intp) for c in classes]
        # _solve lists a class's pairs in ascending token order, as ``members``.
        values = [[] for _ in classes]
        for (ci, _y), v in zip(pairs, x):
            # Exact input: the vertex has small denominators; recover it from the float.
            values[ci].append(
                max(Fraction(float(v)).limit_denominator(10**12) if exact else float(v), z)
            )
        matched = [np.array(v, dtype=dtype) for v in values]
        for ci, c in enumerate(classes):  # make rows, then columns, exactly feasible
            s = matched[ci].sum()
            if s > law[c]:
                matched[ci] = matched[ci] * (law[c] / s)
        col = self._column_sums(matched)
        over = np.asarray(col > p, dtype=bool)
        if over.any():
            scale = np.ones(self.V, dtype=dtype)
            scale[over] = p[over] / col[over]
            matched = [m * scale[mem] for m, mem in zip(matched, self.members)]
        self.matched = matched
        # Leftover marginals; clipping only removes float rounding (exact input is >= 0).
        self.row_left = positive_part(
            np.array([law[c] - matched[ci].sum() for ci, c in enumerate(classes)], dtype=dtype)
        )
        self.col_left = positive_part(p - self._column_sums(matched))
        self.total_left = self.row_left.sum()
        self.r_beta = self._column_sums(
            [m + self.row_left[ci] / m.size for ci, m in enumerate(matched)]
        )
        self.residual = residual(p, self.r_beta)

    def _zeros(self):
        out = np.zeros(self.V, dtype=self.dtype)
        if self.dtype is object:
            out[:] = 0 * self.p[0]  # Fraction zeros, as the input's
        return out

    def _column_sums(self, rows):
        # Row by row, in class order: the same additions as a dense matrix's sum(axis=0).
        out = self._zeros()
        for mem, m in zip(self.members, rows):
            out[mem] = out[mem] + m
        return out

    def _row(self, ci, values):
        row = self._zeros()
        row[self.members[ci]] = values
        return row

    def conditional(self, ci):
        """The law of ``y`` given draft set ``ci``: matched mass plus leftover product."""
        row = self._row(ci, self.matched[ci])
        if self.total_left > 0:
            row = row + self.row_left[ci] * self.col_left / self.total_left
        # Normalised by the row's own sum (P(c) in exact arithmetic): a class
        # whose float probability underflows (q ~ 1e-300 squared) is never
        # drawn, and dividing by P(c) there gave 0/0.
        return normalise_or(row, self.p)

    def selection(self, ci):
        """Khisti's selection on draft set ``ci``: matched mass plus an even share of the rest."""
        m = self.matched[ci]
        return normalise_or(self._row(ci, m + self.row_left[ci] / m.size), self.p)


class _RowsBySet(Mapping):
    """``frozenset -> ndarray (V,)``, each row built on demand by ``build(class index)``."""

    def __init__(self, plan, build):
        self._plan, self._build = plan, build

    def __getitem__(self, c):
        return self._build(self._plan.index[frozenset(c)])

    def __iter__(self):
        return iter(self._plan.index)

    def __len__(self):
        return len(self._plan.index)


#: Plans by row and (n, sampling); see :class:`._plan_cache.RowCache`.
_PLANS = RowCache(_TransportPlan, maxsize=64)


def _plan(p, q, n, sampling):
    return _PLANS(p, q, int(n), sampling)


def clear_transport_cache():
    """Forget every cached transport plan (to time the LP, as at a new position)."""
    _PLANS.clear()


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
    conditional : Mapping
        ``frozenset c -> ndarray (V,)``: the law of ``y`` given the draft set ``c``.
    selection : Mapping
        ``frozenset c -> ndarray (V,)``: the selection law :math:`\\beta_c` on ``c``.
    r_beta : ndarray, shape (V,)
        The law of the selected draft.

    Notes
    -----
    The mappings build a row when it is looked up (O(V)); the plan itself
    holds the matched mass of each (draft set, member) pair and a few vectors
    of length V, so the transport verifiers run at a full vocabulary whenever
    the draft's support is small enough for the draft-set law
    (:data:`spectheory.drafting.MAX_ENUMERATION`) and the LP (:data:`MAX_PAIRS`).
    """
    pl = _plan(p, q, n, sampling)
    return _RowsBySet(pl, pl.conditional), _RowsBySet(pl, pl.selection), pl.r_beta


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
    pl = _plan(p, q, len(drafts), sampling)
    return coins.categorical(pl.conditional(pl.index[frozenset(int(x) for x in drafts)]))


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
    pl = _plan(p, q, len(drafts), sampling)
    x = coins.categorical(pl.selection(pl.index[frozenset(int(x) for x in drafts)]))
    if coins.bernoulli(accept_prob(p[x], pl.r_beta[x])):
        return x
    return coins.categorical(pl.residual)
