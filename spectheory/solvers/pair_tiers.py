r"""Two drafts without replacement: tier rules with a first-draft coin, and their exact marginal.

Two drafts drawn without replacement from ``q`` come in the order ``(a, b)``
with probability :math:`m_{ab} = q_a q_b e_a`, :math:`e_a = 1/(1 - q_a)`.  A
*pair-tier rule* gives every token a tier (lower is preferred) and a coin
:math:`\alpha_a \in [0, 1]`, and selects from the drafts ``(a, b)``

* the draft of the preferred tier, when the tiers differ;
* else the first draft ``a`` with probability :math:`\alpha_a`, the second
  otherwise.

Its selection marginal has a closed form (docs/theory.md §3.14): for ``a`` in
tier ``G``, with ``L`` the tokens of the tiers after ``G``,

.. math::

    g_a = q_a \Big[\, e_a q(L) + K(L) + K(G) - A(G) - q_a e_a
          + \alpha_a e_a q(G) \Big],

where :math:`K(X) = \sum_{x \in X} q_x e_x` and
:math:`A(G) = \sum_{x \in G} q_x e_x \alpha_x`: :math:`O(V)` for all tokens,
exact in Fraction arithmetic.  Selecting by such a rule and then running
single-draft speculative sampling of ``p`` against ``g`` (Khisti et al.'s
canonical decomposition) is lossless; the selected draft is accepted with
probability :math:`\sum_a \min(p_a, g_a)`, and the membership acceptance is
at least that (a residual draw may still land on a draft).

**Reaching the bound.**  With :math:`H^*` the optimal dual set of the bound
without replacement and :math:`T = V \setminus H^*`, the acceptance is
:math:`\alpha^*_{\rm wor} = p(H^*) + f(T)` when the tiers of ``T``
all come before those of :math:`H^*` (every pair that meets ``T`` selects in
``T``), :math:`g \le p` on ``T`` and :math:`g \ge p` on :math:`H^*`.  Within one
tier the coins move each token's marginal along an interval of width
:math:`q_a e_a q(G)` about a common level, so a tier meets its bounds when a
one-dimensional condition holds (:func:`tier_coins`).  :func:`pair_tier_plan`
builds the tiers greedily: ``T`` top-down and :math:`H^*` bottom-up, each in
``p/q`` order, each tier the longest block on a grid of candidate ends that
meets its bounds (where :math:`H^*` misses, also top-down; where the rule still
misses, the plainest rule is tried too).  The search is a heuristic: where it
finds no such block it keeps the best rule it has, and the plan says so
(``reached`` False, with its exact selection acceptance below the bound).  The
rule stays lossless either way.

References
----------
Khisti, Ebrahimi, Dbouk, Behboodi, Memisevic, Louizos, arXiv:2410.18234 (the
decomposition); Hu et al., arXiv:2502.18779 (the bound without replacement).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ._pair_rows import inverse_rest
from ._result import SolverResult

__all__ = ["PairTierPlan", "pair_marginal", "pair_tier_plan", "tier_coins"]

#: Candidate block ends tried per tier (evenly spaced in the block's order).
GRID = 16
#: Bisection steps of the common level (the interval shrinks 2^-48-fold).
BISECTION_STEPS = 48
#: Mass by which a tier may miss its bounds and still count as meeting them (rounding).
MISS_TOLERANCE = 1e-14
#: Most tiers per part (T or H*); past it the rest of the part is one tier.
MAX_TIERS = 8


def pair_marginal(q, tier, alpha):
    r"""The selection marginal ``g`` of a pair-tier rule (module docstring), exactly.

    Parameters
    ----------
    q : ndarray, shape (V,)
        Draft law (float64, or Fraction objects for exact arithmetic); no
        entry may be 1.
    tier : ndarray of int, shape (V,)
        Lower is preferred; tokens of ``q = 0`` may have any tier.
    alpha : ndarray, shape (V,)
        First-draft coins in [0, 1] (Fractions for exact arithmetic).

    Returns
    -------
    ndarray, shape (V,)
        :math:`g_a = P(a \text{ is selected})`; ``sum(g) = 1``.
    """
    one = 1 + 0 * q[0]
    e = (np.array([one / (one - x) for x in q], dtype=object) if q.dtype == object
         else inverse_rest(q))
    qe = q * e
    g = np.zeros_like(q)
    if q.dtype == object:
        g[:] = 0 * q[0]
    levels = np.unique(tier)
    below_q, below_k = 0 * q[0], 0 * q[0]
    for t in levels[::-1]:  # from the last tier up: L is what was seen before
        G = tier == t
        qG, kG = q[G].sum(), qe[G].sum()
        aG = (qe[G] * alpha[G]).sum()
        g[G] = q[G] * (e[G] * below_q + below_k + kG - aG - qe[G] + alpha[G] * e[G] * qG)
        below_q, below_k = below_q + qG, below_k + kG
    return g


def tier_coins(q, e, block, q_below, k_below, low, high):
    r"""Coins for one tier whose densities :math:`g_a/q_a` must lie in ``[low_a, high_a]``.

    Within the tier ``G`` the density is
    :math:`d_a = c_a + \alpha_a e_a q(G) - s`, with
    :math:`c_a = e_a q(L) + K(L) + K(G) - q_a e_a` and the common level
    :math:`s = A(G) = \sum_G q_a e_a \alpha_a \in [0, K(G)]`.  For a level
    ``s`` each coin may lie in an interval :math:`[l_a(s), h_a(s)]` (the bounds,
    clipped to [0, 1]); the level is consistent when
    :math:`\sum w_a l_a(s) \le s \le \sum w_a h_a(s)`, :math:`w_a = q_a e_a`.
    Both sums grow with ``s`` at a rate of at most :math:`\sum_G q_a / q(G) = 1`,
    so each side holds on an interval of levels and the consistent levels are
    :math:`[s_1, s_2]`, found by bisection; a token's own interval is non-empty
    for :math:`c_a - high_a \le s \le c_a + e_a q(G) - low_a`.  The midpoint of
    what is left is taken, away from rounding at either end.

    Returns
    -------
    alpha : ndarray
        The coins (at the nearest level when no level is feasible).
    violation : float
        :math:`\sum_G q_a \cdot` (distance of :math:`d_a` from its bounds,
        beyond 1e-15 relative): 0 when the tier meets its bounds.
    """
    qg, eg = q[block], e[block]
    w = qg * eg
    qG, kG = qg.sum(), w.sum()
    c = eg * q_below + k_below + kG - w
    span = eg * qG

    def coin_bounds(s):
        lo = np.clip((low - c + s) / span, 0.0, 1.0)
        hi = np.clip((high - c + s) / span, 0.0, 1.0)
        return lo, np.maximum(hi, lo)

    def last_true(pred, a, b):  # pred holds on [a, x] and fails after: that x
        if not pred(a):
            return None
        if pred(b):
            return b
        for _ in range(BISECTION_STEPS):
            m = 0.5 * (a + b)
            a, b = (m, b) if pred(m) else (a, m)
        return a

    def first_true(pred, a, b):  # pred fails before x and holds on [x, b]: that x
        if not pred(b):
            return None
        if pred(a):
            return a
        for _ in range(BISECTION_STEPS):
            m = 0.5 * (a + b)
            a, b = (a, m) if pred(m) else (m, b)
        return b

    top, bottom = float(kG), 0.0
    # Every token's interval is non-empty only between these levels; when they cross, no
    # level is feasible and the bisections are skipped (most candidate blocks of a search).
    lo_s = max(bottom, float(np.max(c - high)))
    hi_s = min(top, float(np.min(c + span - low)))
    if lo_s <= hi_s:
        # s2: the largest level with sum(w h(s)) >= s; s1: the smallest with sum(w l(s)) <= s.
        s2 = last_true(lambda s: (w * coin_bounds(s)[1]).sum() >= s, bottom, top)
        s1 = first_true(lambda s: (w * coin_bounds(s)[0]).sum() <= s, bottom, top)
        lo_s = max(lo_s, s1 if s1 is not None else top)
        hi_s = min(hi_s, s2 if s2 is not None else bottom)
    s = 0.5 * (lo_s + hi_s) if lo_s <= hi_s else min(max(0.5 * (lo_s + hi_s), bottom), top)
    lo, hi = coin_bounds(s)
    big, small = (w * hi).sum(), (w * lo).sum()
    theta = 0.0 if big <= small else float(np.clip((s - small) / (big - small), 0.0, 1.0))
    alpha = lo + theta * (hi - lo)
    d = c + alpha * span - (w * alpha).sum()
    tol = 1e-15 * np.maximum(1.0, np.abs(d))
    short = qg * (np.maximum(low - tol - d, 0.0) + np.maximum(d - high - tol, 0.0))
    return alpha, float(short.sum())


def _blocks(q, e, order, low, high, below_of, grid):
    """Split ``order`` into consecutive tiers: each the longest block (of a grid of ends)
    within its bounds, else the block that misses them by the least mass."""
    tiers, start, missed = [], 0, 0.0
    n = order.size
    while start < n:
        ends = np.unique(np.r_[np.linspace(start + 1, n, grid).astype(np.intp),
                               start + 1 + np.arange(min(3, n - start))])[::-1]
        if len(tiers) == MAX_TIERS - 1:
            ends = ends[:1]  # the last tier takes the rest
        best = None
        for end in ends:
            qb, kb = below_of(start, end)
            alpha, miss = tier_coins(q, e, order[start:end], qb, kb, low[start:end],
                                     high[start:end])
            if best is None or miss < best[2]:
                best = (end, alpha, miss)
            if miss <= MISS_TOLERANCE:
                break
        end, alpha, miss = best
        tiers.append((order[start:end], alpha))
        missed += miss if miss > MISS_TOLERANCE else 0.0
        start = end
    return tiers, missed


def _exact_tier_coins(p, q, block, below, alpha, bound_is_cap):
    r"""The coins of one tier again in Fraction arithmetic, so that its bounds hold exactly.

    The float search leaves each density within 1e-15 of its bound; where a
    bound is tight (no slack, as when the bound is 1) that is not exact.  The
    consistent levels are recomputed exactly: each root of
    :math:`\sum w_a h_a(s) = s` or :math:`\sum w_a l_a(s) = s` is linear in ``s``
    once the clipping pattern is fixed (taken at the float level), so it is
    solved exactly; the first candidate level that is consistent in exact
    arithmetic gives the coins.  None when no candidate is.
    """
    one = Fraction(1)
    qb = [Fraction(q[a]) for a in block]
    e = [one / (one - x) for x in qb]
    w = [x * y for x, y in zip(qb, e)]
    qG, kG = sum(qb), sum(w)
    qL = sum((Fraction(q[a]) for a in below), Fraction(0))
    kL = sum((Fraction(q[a]) / (one - Fraction(q[a])) for a in below), Fraction(0))
    c = [ea * qL + kL + kG - wa for ea, wa in zip(e, w)]
    span = [ea * qG for ea in e]
    ratio = [Fraction(p[a]) / Fraction(q[a]) for a in block]

    def clip(x):
        return min(max(x, Fraction(0)), one)

    def raw(s, a):  # the unclipped coin that puts token a on its bound at level s
        return (ratio[a] - c[a] + s) / span[a]

    def coin_bounds(s):
        if bound_is_cap:
            return [Fraction(0)] * len(block), [clip(raw(s, a)) for a in range(len(block))]
        return [clip(raw(s, a)) for a in range(len(block))], [one] * len(block)

    s_found = sum(wa * x for wa, x in zip(w, alpha))  # the float search's level, exactly
    candidates = [s_found]
    # The level where the clipped coins sum to it, with the clipping pattern at s_found.
    inner = [a for a in range(len(block)) if 0 < raw(s_found, a) < 1]
    at_one = [a for a in range(len(block)) if raw(s_found, a) >= 1]
    slope = one - sum((qb[a] / qG for a in inner), Fraction(0))
    if slope != 0:
        rhs = sum((w[a] * (ratio[a] - c[a]) / span[a] for a in inner), Fraction(0))
        candidates.insert(0, (rhs + sum((w[a] for a in at_one), Fraction(0))) / slope)
    for s in candidates:
        if not 0 <= s <= kG:
            continue
        lo, hi = coin_bounds(s)
        if any(a > b for a, b in zip(lo, hi)):
            continue
        small = sum(wa * x for wa, x in zip(w, lo))
        big = sum(wa * x for wa, x in zip(w, hi))
        if not small <= s <= big:
            continue
        theta = Fraction(0) if big == small else (s - small) / (big - small)
        return [a + theta * (b - a) for a, b in zip(lo, hi)]
    return None


@dataclass(frozen=True)
class PairTierPlan(SolverResult):
    """A pair-tier rule for two drafts without replacement, and its acceptance.

    The shared fields come from :class:`.SolverResult`: ``method``
    ``"pair_tiers"``, ``status`` ``"optimal"`` when the rule reaches the bound
    (``reached``) and ``"exact"`` otherwise (the rule found, with its exact
    selection acceptance), ``inputs`` ``{}``.

    Attributes
    ----------
    tier : ndarray of int, shape (V,)
    alpha : ndarray, shape (V,)
        First-draft coins (Fractions for exact input).
    y : ndarray, shape (V,)
        The selection marginal (:func:`pair_marginal`).
    residual : ndarray, shape (V,)
        :math:`\\mathrm{norm}((p - y)_+)`, drawn after a rejection.
    alpha_value : float or Fraction
        The selection's acceptance :math:`\\sum_a \\min(p_a, y_a)`: a lower
        bound on the verifier's membership acceptance (a residual draw can
        land on a draft), equal to it and to ``bound`` when ``reached``.
    bound : float or Fraction
        :math:`\\alpha^*_{\\rm wor}(p, q, 2)`.
    reached : bool
        Whether ``alpha_value`` equals ``bound`` (exactly for Fractions, to
        1e-12 for floats).
    """

    tier: np.ndarray
    alpha: np.ndarray
    y: np.ndarray
    residual: np.ndarray
    alpha_value: object
    bound: object
    reached: bool


def pair_tier_plan(p, q, *, grid=GRID):
    """The pair-tier rule for ``(p, q)`` and two drafts without replacement (module docstring).

    Parameters
    ----------
    p, q : array_like, shape (V,)
        Target and draft, checked as everywhere (float64, or Fraction objects: the coins
        are then the float search's values as exact fractions, and the
        marginal, residual and acceptance are exact).
    grid : int
        Candidate ends tried per tier.

    Returns
    -------
    PairTierPlan

    Raises
    ------
    InvalidParameterError
        When ``q`` has fewer than two tokens (no two distinct drafts).
    """
    from ._pair_rows import pair_row

    row = pair_row(p, q, "pair_tier_plan")
    p, q, pf, qf, exact, in_h, bound = (row.p, row.q, row.pf, row.qf, row.exact, row.in_h,
                                        row.bound)
    support = np.flatnonzero(row.support)
    e = inverse_rest(qf)
    ratio = np.zeros_like(qf)
    ratio[support] = pf[support] / qf[support]
    top = support[~in_h[support]]
    low_set = support[in_h[support]]
    top = top[np.argsort(-ratio[top], kind="stable")]  # loosest caps first
    low_set = low_set[np.argsort(ratio[low_set], kind="stable")]  # smallest needs at the bottom
    qe = qf * e
    # T: tiers top-down; below a block lies the rest of T and all of H*.
    cq_t = np.r_[0.0, np.cumsum(qf[top])]
    ck_t = np.r_[0.0, np.cumsum(qe[top])]
    rest_q, rest_k = qf[low_set].sum(), qe[low_set].sum()

    def below_top(start, end):
        return cq_t[-1] - cq_t[end] + rest_q, ck_t[-1] - ck_t[end] + rest_k

    t_tiers, t_miss = _blocks(qf, e, top, np.full(top.size, -np.inf), ratio[top], below_top, grid)
    # H*: two searches, kept if they meet the bounds: bottom-up (the least needy first, below
    # a block lies the part of H* before it) and top-down (the neediest first, below a block
    # lies the rest of H*).
    cq_h = np.r_[0.0, np.cumsum(qf[low_set])]
    ck_h = np.r_[0.0, np.cumsum(qe[low_set])]

    def below_low(start, end):
        return cq_h[start], ck_h[start]

    h_tiers, h_miss = _blocks(qf, e, low_set, ratio[low_set], np.full(low_set.size, np.inf),
                              below_low, grid)
    h_tiers = h_tiers[::-1]  # listed from the top
    if h_miss > 0:
        down = low_set[::-1]
        cq_d = np.r_[0.0, np.cumsum(qf[down])]
        ck_d = np.r_[0.0, np.cumsum(qe[down])]

        def below_down(start, end):
            return cq_d[-1] - cq_d[end], ck_d[-1] - ck_d[end]

        d_tiers, d_miss = _blocks(qf, e, down, ratio[down], np.full(down.size, np.inf),
                                  below_down, grid)
        if d_miss < h_miss:
            h_tiers, h_miss = d_tiers, d_miss
    V = qf.size
    tier = np.full(V, len(t_tiers) + len(h_tiers), dtype=np.int64)  # q = 0: never drafted
    alpha = np.ones(V)
    for k, (block, a) in enumerate(t_tiers + h_tiers):
        tier[block], alpha[block] = k, a
    candidates = [(tier, np.clip(alpha, 0.0, 1.0))]
    if t_miss > 0 or h_miss > 0:
        # The search missed: also weigh the plainest rule (T before H*, the first draft
        # within each), and keep whichever accepts more.
        plain = np.where(in_h, 1, 0).astype(np.int64)
        plain[qf == 0] = 2
        candidates.append((plain, np.ones(V)))
    best = None
    for tier, alpha in candidates:
        if exact:
            alpha = np.array([Fraction(float(a)) for a in alpha], dtype=object)
            for k in np.unique(tier[support]):
                block = np.flatnonzero((tier == k) & (qf > 0))
                below = np.flatnonzero((tier > k) & (qf > 0))
                if block.size > 1:
                    coins = _exact_tier_coins(p, q, block, below, alpha[block],
                                              not in_h[block[0]])
                    if coins is not None:
                        alpha[block] = coins
        y = pair_marginal(q, tier, alpha)
        accepted = (np.array([min(a, b) for a, b in zip(p, y)], dtype=object) if exact
                    else np.minimum(p, y))
        if best is None or accepted.sum() > best[3].sum():
            best = (tier, alpha, y, accepted)
    tier, alpha, y, accepted = best
    value = accepted.sum()
    left = p - accepted
    residual = left / left.sum() if left.sum() > 0 else p.copy()
    reached = bool(value == bound) if exact else bool(abs(value - bound) <= 1e-12)
    message = (
        "the rule reaches the bound without replacement"
        if reached else
        f"no pair-tier rule within the bounds found (missed mass: T {t_miss:.2e}, H* "
        f"{h_miss:.2e}); the "
        f"acceptance is that of the rule kept, {float(bound - value):.3e} below the bound"
    )
    return PairTierPlan(
        tier=tier, alpha=alpha, y=y, residual=residual, alpha_value=value, bound=bound,
        reached=reached, method="pair_tiers", status="optimal" if reached else "exact",
        message=message, inputs={},
    )
