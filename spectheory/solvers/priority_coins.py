r"""Any number of drafts without replacement: a priority rule with coins, at full vocabulary.

A *priority-coin rule* splits the tokens into a preferred part ``T`` and the
rest :math:`H^*` (the optimal dual set of the bound), orders each part, and
gives every token a coin :math:`\kappa_a \in [0, 1]`.  From the distinct drafts
``S`` it takes the part it selects from, :math:`S' = S \cap T` when ``S``
meets ``T`` and ``S`` otherwise, lists :math:`S'` in the part's order
:math:`x_1, \dots, x_m`, and selects

.. math::

    x_j \text{ with probability } \kappa_{x_j} \prod_{i < j} (1 - \kappa_{x_i})
    \quad (j < m), \qquad x_m \text{ with the rest } \prod_{i < m} (1 - \kappa_{x_i}),

one categorical draw: the first draft whose coin succeeds, else the last.
Single-draft speculative sampling of ``p`` against the selection marginal ``y``
follows (Khisti et al.'s decomposition): lossless for any order and coins.

**When it reaches the bound** (docs/theory.md §3.17).  As for every rule
preferring ``T``, :math:`\sum_T y = f(T)`, and the rule reaches
:math:`\alpha^*_{\rm wor} = p(H^*) + f(T)` exactly when :math:`y \le p` on ``T``
and :math:`y \ge p` on :math:`H^*`.

**The coins, one token at a time.**  The selection weight of a set is a
product over its members, so, in the part's order, :math:`y_a = \kappa_a M_a +
(1 - \kappa_a) N_a` with :math:`M_a` (the sets containing ``a`` whose earlier
members' coins failed) and :math:`N_a` (those among them with no later member
of the part) depending on the earlier coins only.  The greedy pass sets
:math:`\kappa_a` so that :math:`y_a = p_a` where :math:`N_a \le p_a \le M_a`,
and clips it to [0, 1] otherwise.  A miss shows as a token of :math:`H^*`
short of its target (:math:`M_a < p_a`) or one of ``T`` above it
(:math:`N_a > p_a`); the order is then repaired by moving the short tokens
(else the ones above) to the front, and the pass repeated.  The initial orders
tried are ``p/q`` descending, :math:`p_a / P(a \in S')` (the target over the
chance of being among the drafts selected from) descending, then ascending, then
ascending ``p`` and ascending ``p/q``.
This search is measured, not proven, and on some rows no order reaches the
bound (a six-token row with bound 1 is in the tests, §3.17).  There, on parts
of at most :data:`._coin_mixture.MIX_MAX_TOKENS` tokens, the plan mixes rules
(draw one with probability ``weights[i]``, then select by it) found by column
generation over the priority orders (:mod:`._coin_mixture`), which reaches the
bound on every row when its rounds are not cut short; for Fraction input the
mixture is made exact.  The plan says whether it reached (``reached``), and the
verifier stays lossless either way.

**Full vocabulary.**  With exponential clocks the product weights become, at
each time ``t``, products of per-token factors (:mod:`._priority_coin_kernels`):
one pass costs :math:`O(n V G)` for ``G`` nodes of a log-time grid,
with no enumeration of draft sets.  Fraction input (small vocabularies)
enumerates the draft sets instead and runs the same greedy pass in rational
arithmetic, so the plan's marginal and acceptance are exact.

References
----------
Khisti et al., arXiv:2410.18234 (selection then single-draft SD); Hu et al.,
arXiv:2502.18779 (the bound without replacement).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._errors import InvalidParameterError
from .._validate import as_distribution_pair, check_positive_int
from . import _priority_coin_kernels as _k
from ._coin_mixture import MIX_MAX_TOKENS, mix_part
from ._result import SolverResult

__all__ = [
    "MAX_PASSES",
    "PriorityCoinPlan",
    "priority_coin_marginal",
    "priority_coin_plan",
    "selection_weights",
]

#: Greedy passes per part and initial order before the plan gives up on that order.
MAX_PASSES = 24

#: Orders tried, in turn, until one reaches, with their budgets of passes: ``p / q``
#: descending (the neediest first: one pass on the peaked rows of a language model,
#: measured, with nothing to compute first, but it misses some small rows), ``p`` over the
#: probability of being among the drafts selected from, descending, then ascending, then
#: ascending ``p`` and ascending ``p / q``.
_INITIAL_ORDERS = (("p/q descending", 3), ("p/inclusion descending", 3),
                   ("p/inclusion", MAX_PASSES), ("p", MAX_PASSES), ("p/q", MAX_PASSES))


def selection_weights(kappa):
    """Selection probabilities of a part's drafts listed in its order.

    ``kappa`` holds the drafts' coins in order; the ``j``-th draft gets
    :math:`\\kappa_j \\prod_{i<j} (1 - \\kappa_i)`, the last the rest
    :math:`\\prod_{i<m} (1 - \\kappa_i)`.  Fractions in, Fractions out.  The
    numba kernel and the torch form compute these with the same float operations
    in the same order.
    """
    out = []
    fail = kappa[0] * 0 + 1
    for j, k in enumerate(kappa):
        if j == len(kappa) - 1:
            out.append(fail)
        else:
            out.append(fail * k)
            fail = fail * (1 - k)
    return out


def _selection_part(S, preferred):
    inside = [a for a in S if preferred[a]]
    return inside or list(S)


def priority_coin_marginal(law, preferred, rank, kappa, V, weights=None):
    """The selection marginal ``y`` of a priority-coin rule, by enumerating draft sets.

    Parameters
    ----------
    law : dict frozenset -> probability
        The draft-set law (:func:`spectheory.drafting.set_law_row`).
    preferred : ndarray of bool, shape (V,)
    rank : ndarray of int, shape (V,) or (c, V)
        Position of each token in its part's order (-1: never drafted); one row per
        rule of a mixture.
    kappa : ndarray, shape (V,) or (c, V)
        Coins (floats or Fractions).
    V : int
    weights : array_like, shape (c,), optional
        The mixture's weights (:attr:`PriorityCoinPlan.weights`); required for ``c > 1``.

    Returns
    -------
    ndarray, shape (V,): float64, or object (Fractions) for Fraction coins and law.
    """
    rank, kappa = np.atleast_2d(rank), np.atleast_2d(kappa)
    if weights is None:
        if rank.shape[0] != 1:
            raise InvalidParameterError(
                f"a mixture of {rank.shape[0]} rules needs its weights; got weights=None")
        weights = [kappa[0, 0] * 0 + 1]
    exact = isinstance(kappa[0, 0], Fraction)
    y = np.array([Fraction(0)] * V, dtype=object) if exact else np.zeros(V)
    for lam, rk, kp in zip(weights, rank, kappa):
        for S, prob in law.items():
            part = sorted(_selection_part(S, preferred), key=lambda a: rk[a])
            for a, wgt in zip(part, selection_weights([kp[a] for a in part])):
                y[a] += lam * prob * wgt
    return y


def _greedy_enumerated(law, order, p, preferred, kappa, y):
    """The greedy pass of one part on an enumerated law (exact for Fractions)."""
    pos = {a: i for i, a in enumerate(order)}
    in_part = preferred[order[0]]
    sets = []
    for S, prob in law.items():
        part = _selection_part(S, preferred)
        if preferred[part[0]] == in_part:
            sets.append((sorted(pos[a] for a in part), prob))
    zero = p[0] * 0
    for i, a in enumerate(order):
        M = N = zero
        for members, prob in sets:
            if i not in members:
                continue
            f = prob
            for j in members:
                if j < i:
                    f = f * (1 - kappa[order[j]])
            M += f
            if members[-1] == i:
                N += f
        gap = M - N
        k = min(max((p[a] - N) / gap, zero), zero + 1) if gap > 0 else zero + 1
        kappa[a] = k
        y[a] = N + k * gap


def _greedy_integral(qs, ps, out, t, w, k, inclusion=False, total=None):
    m = qs.size
    kappa, y, taken, last = (np.empty(m) for _ in range(4))
    n, G = out[0].shape
    tot = total if total is not None else (np.empty((n, G)), np.empty((n, G)))
    # With every coin 0 (a target below every N), M_a is P(a is among the drafts selected
    # from), whatever the order.
    _k.part_greedy(qs, -np.ones(m) if inclusion else ps, out[0], out[1], t, w, k, kappa, y,
                   taken, last, tot[0], tot[1])
    return taken if inclusion else (kappa, y)


def _inclusion_enumerated(law, idx, preferred):
    """P(a among the drafts selected from) for the tokens ``idx`` of one part, as floats."""
    inc = dict.fromkeys((int(a) for a in idx), 0.0)
    for S, prob in law.items():
        for a in _selection_part(S, preferred):
            if a in inc:
                inc[a] += float(prob)
    return np.array([inc[int(a)] for a in idx])


def _violations(y, p, top, exact):
    """Per-token misses of a part: (short, above) boolean arrays."""
    if exact:
        short = np.array([a < b for a, b in zip(y, p)], dtype=bool)
        above = np.array([a > b for a, b in zip(y, p)], dtype=bool)
    else:
        slack = 1e-12 * p + 1e-20  # the greedy meets p_a to rounding where it is not clipped
        short = y < p - slack
        above = y > p + slack
    return short, (above if top else np.zeros_like(above))


#: Tolerance of ``reached`` for float input: the plan's selection acceptance and the
#: bound are each sums of V float64 terms from two quadratures of error below 1e-13.
REACHED_TOLERANCE = 1e-12


def _reached(value, bound, exact):
    """Whether the selection acceptance is the bound: exactly for Fractions, else to
    :data:`REACHED_TOLERANCE`."""
    return bool(value == bound) if exact else bool(abs(value - bound) <= REACHED_TOLERANCE)


def _part_shortfall(y, p, top):
    d = (y - p) if top else (p - y)
    if d.dtype == object:  # Fractions: each term exactly, then one rounding per term
        return float(sum(max(float(x), 0.0) for x in d))
    return float(np.maximum(d, 0.0).sum())


def _solve_part(order, pass_, p_part, top, exact, budget=None):
    """Greedy passes with order repairs; the best (order, kappa, y, shortfall, passes).

    A repair moves the tokens that missed to the front, behind those that missed more
    often: the order is the previous one sorted (stably) by the count of misses, so a
    token put in front for missing twice stays ahead of one that missed once.  Moving
    every miss to the very front instead made the order oscillate on a recorded row
    (the tokens pushed back by the newcomers missed in turn, period two).
    """
    best = None
    passes = 0
    misses = np.zeros(order.size, dtype=np.int64)  # per position of the current order
    for _ in range(MAX_PASSES if budget is None else min(budget, MAX_PASSES)):
        kappa, y = pass_(order)
        passes += 1
        short_f = _part_shortfall(y, p_part(order), top)
        if best is None or short_f < best[3]:
            best = (order, kappa, y, short_f)
        if (short_f == 0.0) if exact else (short_f <= 1e-13):
            break
        short, above = _violations(y, p_part(order), top, exact)
        move = short if short.any() else above
        if not move.any():
            break
        misses[move] += 1
        perm = np.argsort(-misses, kind="stable")
        if np.array_equal(perm, np.arange(perm.size)):
            break  # the misses are already in front: the repair has no next order
        order, misses = order[perm], misses[perm]
    return (*best, passes)


def _part_passes(idx, greedy, vertex):
    """``passes(rank, is_vertex)`` of :func:`._coin_mixture.mix_part` for the part's tokens
    ``idx`` (sorted): the pass of the order given by ``rank``, mapped back to ``idx``."""
    def passes(rank, is_vertex):
        order = idx[np.argsort(rank)]
        kap, yy = (vertex if is_vertex else greedy)(order)
        pos = _positions(idx, order)
        out_k, out_y = np.empty(idx.size, dtype=kap.dtype), np.empty(idx.size, dtype=yy.dtype)
        out_k[pos] = kap
        out_y[pos] = yy
        return out_k, out_y
    return passes


def _components(parts, V, exact):
    """The rule's components: every choice of one rule per part, with the product weight.

    The selection happens in one part only, so mixing the parts' mixtures independently
    gives each part its own mixed marginal.  Returns weights (c,), rank (c, V) and
    kappa (c, V), rank -1 and coin 0 off the support.
    """
    one = Fraction(1) if exact else 1.0
    combos = [(one, [])]
    for idx, weights, rules in parts:
        combos = [(wc * wr, [*chosen, (idx, rule)]) for wc, chosen in combos
                  for wr, rule in zip(weights, rules)]
    dtype = object if exact else np.float64
    rank = np.full((len(combos), V), -1, dtype=np.int64)
    kappa = np.full((len(combos), V), one * 0, dtype=dtype)
    for i, (_, chosen) in enumerate(combos):
        for idx, (r, kap) in chosen:
            rank[i, idx] = r
            kappa[i, idx] = kap
    return np.array([wc for wc, _ in combos], dtype=dtype), rank, kappa


@dataclass(frozen=True)
class PriorityCoinPlan(SolverResult):
    """A priority-coin rule for drafts without replacement, and its acceptance.

    Attributes
    ----------
    n : int
        Number of drafts.
    preferred : ndarray of bool, shape (V,)
        The part ``T`` (outside the bound's dual set), preferred over the rest.
    weights : ndarray, shape (c,)
        The rule is a mixture of ``c`` priority-coin rules, drawn with these
        probabilities (``c = 1``, weight 1, unless the order search missed on a part of
        at most :data:`._coin_mixture.MIX_MAX_TOKENS` tokens and a mixture reached
        further; Fractions for exact input, whose mixtures are exact).
    rank : ndarray of int64, shape (c, V)
        Each component's position of each token in its part's order; -1 for tokens
        with ``q = 0``.
    kappa : ndarray, shape (c, V)
        Each component's coins (Fractions for exact input; 0 where ``rank`` is -1).
    y : ndarray, shape (V,)
        The selection marginal, mixed over the components (Fractions for exact input).
    residual : ndarray, shape (V,)
        :math:`\\mathrm{norm}((p - y)_+)`, drawn after a rejection.
    alpha_value : float or Fraction
        The selection's acceptance :math:`\\sum_a \\min(p_a, y_a)`, a lower bound on
        the verifier's membership acceptance.
    bound : float or Fraction
        :math:`\\alpha^*_{\\rm wor}(p, q, n)`.
    shortfall : float
        :math:`\\sum_{H^*}(p - y)_+ + \\sum_T (y - p)_+`, the bound minus the
        selection acceptance.
    reached : bool
        Whether ``alpha_value`` equals ``bound`` to 1e-12 (floats) or exactly
        (Fractions).
    passes : int
        Greedy passes run (over both parts and the initial orders tried).
    total : float or Fraction
        :math:`\\sum_a y_a`, 1 exactly in theory: for float input its distance
        from 1 measures the quadrature's error.
    """

    n: int
    preferred: np.ndarray
    weights: np.ndarray
    rank: np.ndarray
    kappa: np.ndarray
    y: np.ndarray
    residual: np.ndarray
    alpha_value: object
    bound: object
    shortfall: float
    reached: bool
    passes: int
    total: object


def _slow_rate(q, n):
    """Draft mass outside the ``n - 1`` largest tokens, summed from the rest (a partition,
    not a sort: only the grid's length depends on it)."""
    return float(np.partition(q, q.size - (n - 1))[: q.size - (n - 1)].sum())


def _positions(idx, order):
    """Where each token of ``order`` (a permutation of the sorted ``idx``) sits in ``idx``."""
    where = np.empty(int(idx[-1]) + 1, dtype=np.int64)
    where[idx] = np.arange(idx.size)
    return where[order]


def priority_coin_plan(p, q, n):
    """The priority-coin rule for ``(p, q)`` and ``n`` drafts without replacement.

    Parameters
    ----------
    p, q : array_like, shape (V,)
        Target and draft, checked as everywhere (float64, or Fraction objects:
        then the draft sets are enumerated, small vocabularies only, and the
        plan is exact).
    n : int >= 2
        Number of drafts; ``q`` needs at least ``n`` tokens of positive mass.

    Returns
    -------
    PriorityCoinPlan

    Raises
    ------
    InvalidParameterError
        For a batch, ``n < 2``, a draft with fewer than ``n`` tokens, or a draft
        whose mass outside its ``n - 1`` largest tokens is below 1e-290 (the
        quadrature's grid would overflow; ``khisti`` and ``optimal_lp`` solve
        such rows exactly).
    InstanceTooLargeError
        Fraction input with too many draft sets to enumerate.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.4, 0.3, 0.2, 0.1]); q = np.array([0.1, 0.2, 0.3, 0.4])
    >>> plan = priority_coin_plan(p, q, 3)
    >>> plan.reached, bool(abs(plan.alpha_value - plan.bound) < 1e-12)
    (True, True)
    """
    from ..drafting import set_law_row
    from .ot_dual import solve_bound

    n = check_positive_int(n, "n")
    if n < 2:
        raise InvalidParameterError(f"priority_coin_plan needs n >= 2 drafts; got n={n}")
    P, Q, batched = as_distribution_pair(p, q, allow_exact=True)
    if batched:
        raise InvalidParameterError(
            f"priority_coin_plan takes one row; got target of shape {np.shape(p)}")
    p, q = P[0], Q[0]
    exact = p.dtype == object
    V = p.size
    pf = np.asarray([float(x) for x in p]) if exact else p
    qf = np.asarray([float(x) for x in q]) if exact else q
    support = np.asarray([x != 0 for x in q], dtype=bool) if exact else q != 0
    if support.sum() < n:
        raise InvalidParameterError(
            f"{n} drafts without replacement need a draft with at least {n} tokens; q has "
            f"{int(support.sum())}")
    sol = solve_bound(p, q, n, "without_replacement", method="enumerate" if exact else "dual")
    bound = sol.exact_value if exact else float(np.asarray(sol.value).reshape(-1)[0])
    preferred = ~np.asarray(sol.certificate, dtype=bool).reshape(-1) & support
    in_h = ~preferred & support

    if exact:
        law = set_law_row(q, n, "without_replacement")
        kappa_s = np.array([Fraction(0)] * V, dtype=object)  # scratch of the passes
        y_s = np.array([Fraction(0)] * V, dtype=object)

        def make_pass(top, target=None):
            tgt = p if target is None else np.full(V, target, dtype=object)

            def pass_(order):
                _greedy_enumerated(law, order, tgt, preferred, kappa_s, y_s)
                return kappa_s[order].copy(), y_s[order].copy()
            return pass_

        def inclusion(idx, top):
            return _inclusion_enumerated(law, idx, preferred)
    else:
        slow = _slow_rate(qf, n)
        if not slow >= 1e-290:
            raise InvalidParameterError(
                f"{n} drafts without replacement: the draft mass outside its {n - 1} largest "
                f"tokens is {slow!r}, too small for the quadrature's grid (khisti or "
                "optimal_lp solve this row exactly)")
        t, w = _k.grid(n, slow)
        k = 2 * _k.wor_per_octave(n)
        G = t.size
        # The part H* sees T's tokens as not drawn: a factor e^{-q(T) t} per node, folded
        # into its weights.  The part T sees H*'s tokens as drawn, the product of their
        # factors, which H*'s first pass computes anyway (part_greedy's backward pass): H*
        # runs first, and T takes it from there.
        one = (np.zeros((n, G)), np.zeros((n, G)))
        one[0][0] = 1.0
        node_w = {True: w, False: w * np.exp(-qf[preferred].sum() * t)}
        # T's factor is set by H*'s first pass (the loop below runs H* first); 1 if H* is empty
        outside = {False: one, True: None if in_h.any() else one}
        total = (np.empty((n, G)), np.empty((n, G)))

        def run(qs, ps, top, inclusion=False):
            res = _greedy_integral(qs, ps, outside[top], t, node_w[top], k, inclusion, total)
            if not top and outside[True] is None:
                outside[True] = (total[0].copy(), total[1].copy())
            return res

        def make_pass(top, target=None):
            def pass_(order):
                tgt = pf[order] if target is None else np.full(order.size, target)
                return run(qf[order], tgt, top)
            return pass_

        def inclusion(idx, top):
            return run(qf[idx], pf[idx], top, inclusion=True)

    parts = []  # per part: (idx, weights, [(rank in part, kappa in part)])
    y = (np.array([Fraction(0)] * V, dtype=object) if exact else np.zeros(V))
    passes = 0
    mixed = False  # whether a part tried a mixture
    shortfall = 0.0
    for part, top in ((in_h, False), (preferred, True)):  # H* first: see outside above
        idx = np.flatnonzero(part)
        if idx.size == 0:
            continue
        best = None
        inc = None
        for key, budget in _INITIAL_ORDERS:
            if key.startswith("p/inclusion"):
                if inc is None:  # one pass, shared by both directions
                    inc = np.maximum(inclusion(idx, top), np.finfo(float).tiny)
                ratio = pf[idx] / inc
                if key.endswith("descending"):
                    ratio = -ratio
            else:
                ratio = pf[idx] if key == "p" else pf[idx] / qf[idx]
                if key.endswith("descending"):
                    ratio = -ratio
            order = idx[np.argsort(ratio, kind="stable")]
            result = _solve_part(order, make_pass(top), lambda o: p[o], top, exact, budget)
            passes += result[4]
            if best is None or result[3] < best[3]:
                best = result
            if (best[3] == 0.0) if exact else (best[3] <= 1e-13):
                break
        order, k_part, y_part, short_part = best[:4]
        pos = _positions(idx, order)
        rank_p = np.empty(idx.size, dtype=np.int64)
        rank_p[pos] = np.arange(idx.size)
        kap_p = np.empty(idx.size, dtype=k_part.dtype)
        kap_p[pos] = k_part
        y_p = np.empty(idx.size, dtype=y_part.dtype)
        y_p[pos] = y_part
        weights, rules = [Fraction(1) if exact else 1.0], [(rank_p, kap_p, y_p)]
        missed = (short_part > 0.0) if exact else (short_part > 1e-13)
        if missed and idx.size <= MIX_MAX_TOKENS:
            target2 = Fraction(2) if exact else 2.0  # above every M_a: every coin 1
            mix_w, mix_rules, mix_short, rounds = mix_part(
                rules, p[idx], top, _part_passes(idx, make_pass(top), make_pass(top, target2)))
            passes += 2 * rounds
            mixed = True
            if mix_w is not None and mix_short < short_part:
                weights, rules, short_part = mix_w, mix_rules, mix_short
                y_p = sum(lam * r[2] for lam, r in zip(weights, rules))
        y[idx] = y_p
        parts.append((idx, weights, [r[:2] for r in rules]))
        shortfall += short_part
    weights, rank, kappa = _components(parts, V, exact)
    accepted = (np.array([min(a, b) for a, b in zip(p, y)], dtype=object) if exact
                else np.minimum(p, y))
    value = accepted.sum()
    left = p - accepted
    residual = left / left.sum() if left.sum() > 0 else p.copy()
    reached = _reached(value, bound, exact)
    total = y.sum()
    how = f" (a mixture of {weights.size} rules)" if weights.size > 1 else ""
    message = (f"the rule reaches the bound without replacement{how}" if reached else
               f"the rule stays {float(bound - value):.3e} below the bound (no order of the "
               f"search reached it in {passes} passes{', nor a mixture' if mixed else ''})")
    return PriorityCoinPlan(
        n=n, preferred=preferred, weights=weights, rank=rank, kappa=kappa, y=y,
        residual=residual,
        alpha_value=value, bound=bound, shortfall=shortfall, reached=reached, passes=passes,
        total=total, method="priority_coins", status="optimal" if reached else "exact",
        message=message, inputs={"n": n},
    )

