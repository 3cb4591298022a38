r"""Two drafts without replacement: a score rule that reaches the bound, by projected Newton.

Two drafts drawn without replacement from ``q`` form the unordered pair
:math:`\{a, b\}` with probability :math:`M_{ab} = q_a q_b (e_a + e_b)`,
:math:`e_a = 1/(1 - q_a)`.  A *pair-score rule* splits the tokens into a
preferred part ``T`` and the rest :math:`H^*` (the optimal dual set of the
bound) and gives every token a score :math:`\mu_a`; from the drafts
:math:`\{a, b\}` it selects

* the draft in ``T``, when exactly one lies in ``T``;
* else ``a`` with probability :math:`w(\mu_a - \mu_b)`, with the ramp
  :math:`w(x) = \min(1, \max(0, \tfrac12 + \tfrac x2))`, and ``b`` otherwise
  (:math:`w(x) + w(-x) = 1`, so the draw order does not matter).

Then single-draft speculative sampling of ``p`` runs against the selection
marginal ``y`` (Khisti et al.'s decomposition): lossless for any scores.

**Why the ramp reaches the bound** (docs/theory.md §3.15).  The bound
:math:`\alpha^*_{\rm wor} = p(H^*) + f(T)` is reached exactly when every pair
meeting ``T`` selects in ``T``, :math:`y \le p` on ``T`` and :math:`y \ge p` on
:math:`H^*`; such pair-by-pair selection weights exist (a rule reaching the
OT optimum exists, §3.7, and averaged over draw orders it is one).  Among them
take those nearest to a fair coin,
:math:`\min \sum_{a<b} M_{ab} (w_{ab} - \tfrac12)^2` over
:math:`w_{ab} \in [0, 1]`: a feasible convex quadratic program with linear
constraints, so it has Lagrange multipliers :math:`\mu` (one per token's
constraint, of the constraint's sign), and minimising the Lagrangian pair by
pair gives :math:`w_{ab} = w(\mu_a - \mu_b)`.  So a ramp rule always reaches
the bound: the tier rules of :mod:`.pair_tiers` are the ramp's limit of
infinite score gaps, and miss it on some rows (a three-token row is in the
tests).  The scores minimise, per part, the convex dual

.. math::

    \Psi(\mu) = -\sum_{a<b} M_{ab}\,[h(\mu_a - \mu_b) - \mu_b]
                - \sum_a \mu_a (p_a - B_a),

:math:`h(x) = \min_{w \in [0,1]} (w - \tfrac12)^2 - x w`, over
:math:`\mu \ge 0` on :math:`H^*` (:math:`\mu \le 0` on ``T``), ``B`` the mass a
token gets from pairs with the other part; :math:`\nabla \Psi = y - p`, and its
Hessian is the Laplacian of the pairs with :math:`|\mu_a - \mu_b| < 1`
(weights :math:`M_{ab}/2`).

**Cost.**  As :math:`M_{ab} = q_a (q e)_b + (q e)_a q_b`, sums over the pairs
are window sums of ``q`` and :math:`q e` over the tokens sorted by score:
:math:`y`, :math:`\Psi` and a Hessian product take :math:`O(V \log V)`, not
:math:`O(V^2)`.  The sums, the windows' bounds, the dual's pair terms and the
conjugate gradients run compiled (:mod:`._pair_score_kernels`; sums and terms
equal their numpy expressions, :meth:`_Windows.sums_numpy` and
:func:`_part_state_numpy`, bit for bit).  The projected Newton method (conjugate
gradients with the Hessian's diagonal as preconditioner, each score moving at
most one window's width, step halving on :math:`\Psi` or on the shortfall; where
:math:`\Psi` changes below its rounding, any decrease of the shortfall is taken, as
when a step carries a score just past a window's edge, where the Hessian's model ends)
stops when the shortfall :math:`\sum_{H^*}(p - y)_+ + \sum_T (y - p)_+` is at
rounding level (``SHORTFALL_TOLERANCE``) or has not halved in ``STALL_STEPS``
steps, and keeps the best scores it met, with the marginal computed there.

References
----------
Khisti, Ebrahimi, Dbouk, Behboodi, Memisevic, Louizos, arXiv:2410.18234 (the
decomposition); Hu et al., arXiv:2502.18779 (the bound without replacement);
Bertsekas, SIAM J. Control Optim. 20 (1982) 221-246 (projected Newton).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ._pair_rows import inverse_rest
from ._pair_score_kernels import (
    conjugate_gradients,
    dot,
    part_dual,
    window_bounds,
    window_sums,
)
from ._result import SolverResult

__all__ = ["PairScorePlan", "ScoreRulePlan", "pair_score_marginal", "pair_score_plan", "ramp"]

#: Shortfall (mass) at which a part counts as solved: rounding level at V = 152k.
SHORTFALL_TOLERANCE = 2e-14
#: Newton steps per part; past it the scores reached are kept (the rule stays lossless).
MAX_NEWTON_STEPS = 100
#: Largest move of any score in one Newton step, one window's width: the Hessian says nothing
#: beyond the windows it came from (a cluster of scores with no pair in a window has a flat
#: direction, along which a full step is unbounded; a score that must leave every window
#: took many halved steps when allowed 4).
MAX_SCORE_STEP = 1.0
#: Scores are kept within [-SCORE_LIMIT, SCORE_LIMIT]: only gaps up to 1 matter, and the window
#: sums lose digits in proportion to the scores' size.
SCORE_LIMIT = 64.0
#: Smallest step fraction the line search tries.
MIN_STEP = 1e-6
#: Newton steps without halving the least shortfall after which the solve stops.
STALL_STEPS = 8
#: Conjugate-gradient steps per Newton step.
MAX_CG_STEPS = 200


def ramp(x):
    r"""The selection weight :math:`w(x) = \min(1, \max(0, 1/2 + x/2))`.

    A Fraction gives a Fraction (exact); a float or an array of floats gives float64.
    """
    if isinstance(x, Fraction):
        half = Fraction(1, 2)
        return min(Fraction(1), max(Fraction(0), half + half * x))
    return np.clip(0.5 + 0.5 * np.asarray(x, dtype=np.float64), 0.0, 1.0)


def score_order(mu):
    """The tokens sorted by score: ``mu[score_order(mu)]`` is ``np.sort(mu)``.

    Most scores sit at their bound 0, so only the others are sorted (numpy's default
    sort) and the zeros, in token order, are put between the negative and the positive
    ones: :math:`O(V + k \\log k)` for ``k`` nonzero scores, two to four times faster
    than a stable sort of the row.  Tied nonzero scores may come in any order; the order
    is a function of ``mu`` alone, so the marginal at the same scores is the same to the
    bit however it is reached.
    """
    nonzero = mu != 0
    moved = np.flatnonzero(nonzero)
    if moved.size == 0:
        return np.arange(mu.size)
    moved = moved[np.argsort(mu[moved])]
    cut = int(np.searchsorted(mu[moved], 0.0))
    return np.concatenate((moved[:cut], np.flatnonzero(~nonzero), moved[cut:]))


class _Windows:
    """The tokens sorted by score, and for every token ``a`` where the tokens ``b`` with
    ``mu_b <= mu_a - 1`` end (``lo``) and those with ``mu_b >= mu_a + 1`` begin (``hi``).

    Built once per score vector; every pair sum at those scores is then a prefix sum.
    A token of weight above 1/2 (at most one) is kept out of the prefix sums and added
    on its own: its :math:`e_a = 1/(1 - q_a)` multiplies its pair sums, so a prefix sum
    holding its own weight would lose the digits that carry its marginal.
    """

    def __init__(self, mu, q):
        self.mu = mu
        self.order = score_order(mu)
        self.m = mu[self.order]
        # Sorted queries: two forward pointers, O(V).
        self.lo, self.hi = window_bounds(self.order, self.m)
        self.big = int(np.argmax(q)) if q.size and q.max() > 0.5 else None
        self._big = -1 if self.big is None else self.big
        self.weight = None  # the Hessian's pair weights, set where the dual is evaluated

    def sums(self, w, k=0):
        """For every token ``a``: the sums of ``w_b mu_b^k`` over the tokens ``b != a`` below,
        within and above the ramp's window ``|mu_a - mu_b| < 1`` (one compiled pass,
        :mod:`._pair_score_kernels`, equal bit for bit to :meth:`sums_numpy`)."""
        return window_sums(self.order, self.m, self.lo, self.hi, self.mu,
                           np.ascontiguousarray(w, dtype=np.float64), self._big, k)

    def sums_numpy(self, w, k=0):
        """:meth:`sums` in numpy expressions: the reference the compiled pass is tested on."""
        own = w * self.mu**k if k else w
        big = self.big
        if big is not None:
            w = w.copy()
            w[big] = 0.0
        ws = w[self.order]
        c = np.r_[0.0, np.cumsum(ws * self.m**k if k else ws)]
        below, window, above = c[self.lo], c[self.hi] - c[self.lo], c[-1] - c[self.hi]
        window = window - (own if big is None else np.where(np.arange(w.size) == big, 0.0, own))
        if big is not None:  # the big token's term, for every other token (added, never
            # added and taken away: that would cancel the big token's own small sums)
            gap = self.mu - self.mu[big]
            term = np.where(np.arange(gap.size) == big, 0.0, own[big])
            below = below + np.where(gap >= 1.0, term, 0.0)
            window = window + np.where(np.abs(gap) < 1.0, term, 0.0)
            above = above + np.where(gap <= -1.0, term, 0.0)
        return below, window, above


def _part_state(mu, q, e, base, p):
    r"""The part's dual objective :math:`\Psi(\mu)`, marginal ``y`` (module docstring) and
    windows (the pair sums compiled, :func:`._pair_score_kernels.part_dual`)."""
    win = _Windows(mu, q)
    mass, terms, win.weight = part_dual(win.order, win.m, win.lo, win.hi, win.mu, win._big,
                                        q, e)
    y = base + mass
    pairs = 0.5 * np.sum(terms)  # each unordered pair counted from both ends
    return -(pairs + dot(mu, p - base)), y, win


def _part_state_numpy(mu, q, e, base, p):
    """:func:`_part_state` in numpy expressions over :meth:`_Windows.sums_numpy`: the
    reference the compiled pass is tested on (equal bit for bit)."""
    win = _Windows(mu, q)

    def weighted(w):  # sum_{b != a} w_b ramp(mu_a - mu_b), and sum_{b != a} w_b psi(mu_a, mu_b)
        below, window, above = win.sums_numpy(w)
        mid1, up1 = win.sums_numpy(w, 1)[1:]
        mid2 = win.sums_numpy(w, 2)[1]
        ramp_sum = below + (0.5 + 0.5 * mu) * window - 0.5 * mid1
        # psi(x, m) = h(x - m) - m: 1/4 - x below, -(x-m)^2/4 - x/2 - m/2 within, 1/4 - m above
        psi_sum = ((0.25 - mu) * below
                   - (mu * mu * window - 2 * mu * mid1 + mid2) / 4 - 0.5 * mu * window
                   - 0.5 * mid1 + 0.25 * above - up1)
        return ramp_sum, psi_sum

    qe = q * e
    rq, pq = weighted(q)
    rk, pk = weighted(qe)
    y = base + q * (e * rq + rk)
    pairs = 0.5 * np.sum(q * (e * pq + pk))
    return -(pairs + dot(mu, p - base)), y, win


def _hessian_weights(win, q, e):
    """The Hessian of Psi at the windows' scores: the weight :math:`W_a = e_a S(q)_a + S(qe)_a`
    of each token's pairs within the window (``S`` the window sum), and the diagonal
    :math:`q_a W_a / 2`; :func:`._pair_score_kernels.conjugate_gradients` applies it."""
    weight = win.weight
    if weight is None:  # windows not evaluated by _part_state: the same sums, by themselves
        weight = e * win.sums(q)[1] + win.sums(q * e)[1]
    return weight, 0.5 * q * weight


def _newton_direction(win, q, e, rhs, free, tol):
    """Solve ``H x = rhs`` on the free tokens (conjugate gradients, preconditioned by the
    diagonal, compiled)."""
    weight, diag = _hessian_weights(win, q, e)
    return conjugate_gradients(win.order, win.lo, win.hi, win.mu, win._big, q, e,
                               weight, diag, rhs, free, tol, MAX_CG_STEPS)


def _solve_part(q, e, base, p, sign):
    """Scores of one part: ``sign = +1`` for ``y >= p`` (:math:`\\mu \\ge 0`), ``-1`` for
    ``y <= p`` (:math:`\\mu \\le 0`).  Returns the scores of least shortfall met,
    ``(mu, y, shortfall)``."""
    mu = np.zeros(q.size)

    def project(x):
        return np.clip(x, 0.0, SCORE_LIMIT) if sign > 0 else np.clip(x, -SCORE_LIMIT, 0.0)

    value, y, win = _part_state(mu, q, e, base, p)
    short = float(np.maximum(sign * (p - y), 0.0).sum())
    best, stalled = (mu, y, short), 0
    for _ in range(MAX_NEWTON_STEPS):
        if best[2] <= SHORTFALL_TOLERANCE or stalled >= STALL_STEPS:
            break
        grad = y - p
        # A score at a bound that the gradient presses against stays there.
        at_zero = (mu == 0) & (sign * grad >= 0)
        at_limit = (np.abs(mu) == SCORE_LIMIT) & (sign * grad <= 0)
        free = ~(at_zero | at_limit)
        worst = float(np.abs(grad[free]).max()) if free.any() else 0.0
        if worst == 0.0:
            break
        direction = _newton_direction(win, q, e, -grad, free, 1e-3 * worst)
        # Clipped per score, not scaled: a flat direction must not shrink the others' steps.
        direction = np.clip(direction, -MAX_SCORE_STEP, MAX_SCORE_STEP)
        # Psi's decrease counts only beyond its rounding; near the optimum the shortfall,
        # which does not drown, decides: halving it, or any decrease where Psi cannot tell
        # (a step past a window's edge may cut it by only a fifth, and the next step,
        # with the windows' new Hessian, finishes; halving that step instead stalled).
        noise = 1e-14 * (1.0 + abs(value))
        t = 1.0
        while True:
            trial = project(mu + t * direction)
            v, yt, wt = _part_state(trial, q, e, base, p)
            st = float(np.maximum(sign * (p - yt), 0.0).sum())
            if (v <= value - 1e-4 * abs(dot(grad, trial - mu)) - noise or st < 0.5 * short
                    or (abs(v - value) <= noise and st < short) or t < MIN_STEP):
                break
            t *= 0.5
        if st >= short and v >= value - noise:
            break  # no progress at all
        mu, value, y, short, win = trial, v, yt, st, wt
        stalled = 0 if short < 0.5 * best[2] else stalled + 1  # a real gain resets the count
        if short < best[2]:
            best = (mu, y, short)
    return best


def pair_score_marginal(q, preferred, mu):
    r"""The selection marginal ``y`` of a pair-score rule (module docstring).

    Parameters
    ----------
    q : ndarray, shape (V,)
        Draft law: float64 (:math:`O(V \log V)`, by window sums), or Fraction
        objects (exact, :math:`O(V^2)`, by the pair sum itself); no entry 1.
    preferred : ndarray of bool, shape (V,)
        The part ``T``, preferred over the rest.
    mu : ndarray, shape (V,)
        Scores (Fractions for exact arithmetic).

    Returns
    -------
    ndarray, shape (V,)
        :math:`y_a = P(a \text{ is selected})`; ``sum(y) = 1``.
    """
    preferred = np.asarray(preferred, dtype=bool)
    if q.dtype == object:
        V, y = len(q), np.array([Fraction(0)] * len(q), dtype=object)
        total = sum(q)
        e = [1 / (total - x) for x in q]  # the rest's own sum, as in the float path
        for a in range(V):
            for b in range(a + 1, V):
                mass = q[a] * q[b] * (e[a] + e[b])
                if preferred[a] != preferred[b]:
                    share = Fraction(1) if preferred[a] else Fraction(0)
                else:
                    share = ramp(mu[a] - mu[b])
                y[a] += mass * share
                y[b] += mass * (1 - share)
        return y
    e = inverse_rest(q)
    y = np.zeros_like(q)
    support = q > 0  # a token of q = 0 is never drawn: y = 0 there
    for part, base_of in ((preferred & support, _preferred_base), (~preferred & support, None)):
        base = _part_base(q, e, part, support, base_of)
        if part.any():
            y[part] = _part_state(mu[part], q[part], e[part], base, np.zeros(part.sum()))[1]
    return y


def _preferred_base(q, e, part, other):
    """Mass the preferred part ``T`` gets from its pairs with the rest: every such pair."""
    return q[part] * (e[part] * q[other].sum() + (q * e)[other].sum())


def _part_base(q, e, part, support, base_of):
    """The part's mass from pairs with the other part (``base_of``; None: none of them).
    One expression for the plan and :func:`pair_score_marginal`, so their ``y`` agree bit
    for bit."""
    if base_of is None:
        return np.zeros(part.sum())
    return base_of(q, e, part, support & ~part)


def _solve_exactly(matrix, rhs, default):
    """A solution of ``matrix x = rhs`` in Fractions (Gauss-Jordan): free unknowns (a singular
    system, as when every token of a part is tight and only differences of scores matter)
    take their ``default``.  None when the system is inconsistent."""
    n, m = len(rhs), len(default)
    a = [[*row, r] for row, r in zip(matrix, rhs)]
    pivots, row = [], 0
    for col in range(m):
        pivot = next((r for r in range(row, n) if a[r][col] != 0), None)
        if pivot is None:
            continue
        a[row], a[pivot] = a[pivot], a[row]
        a[row] = [x / a[row][col] for x in a[row]]
        for r in range(n):
            if r != row and a[r][col] != 0:
                f = a[r][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[row])]
        pivots.append(col)
        row += 1
    if any(a[r][m] != 0 for r in range(row, n)):
        return None
    x = [Fraction(d) for d in default]
    free = [c for c in range(m) if c not in pivots]
    for r, col in enumerate(pivots):
        x[col] = a[r][m] - sum((a[r][c] * x[c] for c in free), Fraction(0))
    return x


def _exact_scores(p, q, preferred, mu):
    r"""The scores again in Fraction arithmetic, so that the tight tokens meet ``p`` exactly.

    With the pattern of the float scores fixed (which pairs lie in the ramp's
    window, which tokens have a non-zero score), each tight token's equation
    :math:`y_a(\mu) = p_a` is linear in the scores; it is solved exactly.  The
    caller keeps the result only if its exact acceptance is better.  None when the
    equations have no solution with that pattern.
    """
    V = len(q)
    e = [1 / (1 - x) for x in q]
    exact_mu = np.array([Fraction(0)] * V, dtype=object)
    for part in (preferred, ~preferred & np.asarray([x != 0 for x in q])):
        idx = np.flatnonzero(part)
        tight = [a for a in idx if mu[a] != 0]
        if not tight:
            continue
        where = {a: k for k, a in enumerate(tight)}
        matrix = [[Fraction(0)] * len(tight) for _ in tight]
        rhs = [Fraction(p[a]) for a in tight]
        for a in tight:
            k = where[a]
            for b in range(V):
                if b == a or q[b] == 0:
                    continue
                mass = q[a] * q[b] * (e[a] + e[b])
                if not part[b]:
                    rhs[k] -= mass if preferred[a] else 0
                    continue
                gap = float(mu[a]) - float(mu[b])
                # A gap at the window's edge (to rounding) is taken as inside: the ramp is
                # continuous there, and the equation keeps its dependence on both scores.
                if gap >= 1 + 1e-9:
                    rhs[k] -= mass
                elif gap > -1 - 1e-9:  # the window: mass (1/2 + (mu_a - mu_b)/2)
                    rhs[k] -= mass / 2
                    matrix[k][k] += mass / 2
                    if b in where:
                        matrix[k][where[b]] -= mass / 2
        # A token whose pairs all lie outside the window has an equation without scores, and
        # a part whose tokens are all tight fixes only differences: the free scores keep
        # their float values.
        solved = _solve_exactly(matrix, rhs, [float(mu[a]) for a in tight])
        if solved is None:
            return None
        for a, x in zip(tight, solved):
            exact_mu[a] = x
    return exact_mu


@dataclass(frozen=True)
class ScoreRulePlan(SolverResult):
    """A score rule (a preferred part, then scores), its selection marginal and acceptance.

    The plan of :func:`pair_score_plan` and of
    :func:`.random_utility.random_utility_plan`; ``status`` is ``"optimal"`` when
    the rule reaches the bound (``reached``) and ``"exact"`` otherwise.

    Attributes
    ----------
    preferred : ndarray of bool, shape (V,)
        The part ``T`` (outside the bound's dual set), preferred over the rest.
    mu : ndarray, shape (V,)
        Scores: :math:`\\le 0` on ``T``, :math:`\\ge 0` on :math:`H^*` (Fractions for
        exact input: the float scores, exactly).
    y : ndarray, shape (V,)
        The selection marginal (Fractions for exact input).
    residual : ndarray, shape (V,)
        :math:`\\mathrm{norm}((p - y)_+)`, drawn after a rejection.
    alpha_value : float or Fraction
        The selection's acceptance :math:`\\sum_a \\min(p_a, y_a)`, a lower
        bound on the verifier's membership acceptance.
    bound : float or Fraction
        :math:`\\alpha^*` of the draft law.
    shortfall : float
        What the solve left: :math:`\\sum_{H^*}(p - y)_+ + \\sum_T (y - p)_+` in
        float arithmetic, the bound minus the selection acceptance.
    reached : bool
        Whether ``alpha_value`` equals ``bound`` to 1e-12 (floats) or exactly
        (Fractions, where float scores usually leave a gap of rounding size).
    """

    preferred: np.ndarray
    mu: np.ndarray
    y: np.ndarray
    residual: np.ndarray
    alpha_value: object
    bound: object
    shortfall: float
    reached: bool


@dataclass(frozen=True)
class PairScorePlan(ScoreRulePlan):
    """A pair-score rule for two drafts without replacement, and its acceptance.

    The fields are :class:`ScoreRulePlan`'s: ``method`` ``"pair_scores"``, ``inputs``
    ``{}``, ``y`` by :func:`pair_score_marginal`, ``bound``
    :math:`\\alpha^*_{\\rm wor}(p, q, 2)`; exact input has its tight tokens' equations
    solved again in rational arithmetic, so ``reached`` can hold exactly.
    """


def pair_score_plan(p, q):
    """The pair-score rule for ``(p, q)`` and two drafts without replacement (module docstring).

    Parameters
    ----------
    p, q : array_like, shape (V,)
        Target and draft, checked as everywhere (float64, or Fraction
        objects: the scores are solved in floats and the marginal, residual
        and acceptance computed exactly from them).

    Returns
    -------
    PairScorePlan

    Raises
    ------
    InvalidParameterError
        When ``q`` has fewer than two tokens, or ``p`` is a batch.
    """
    from ._pair_rows import pair_row

    row = pair_row(p, q, "pair_score_plan")
    p, q, pf, qf, exact = row.p, row.q, row.pf, row.qf, row.exact
    support, in_h, bound = row.support, row.in_h, row.bound
    e = inverse_rest(qf)
    preferred = ~in_h & support
    mu, y, shortfall = np.zeros(qf.size), np.zeros(qf.size), 0.0
    for part, sign, base_of in ((preferred, -1, _preferred_base), (in_h & support, +1, None)):
        base = _part_base(qf, e, part, support, base_of)
        if part.sum() >= 2:
            # the marginal at the best scores comes with them: pair_score_marginal(qf,
            # preferred, mu) to the bit (tests), without computing it again
            mu[part], y[part], short = _solve_part(qf[part], e[part], base, pf[part], sign)
            shortfall += short
        elif part.any():  # no pair within the part: nothing to score
            y[part] = _part_state(mu[part], qf[part], e[part], base, np.zeros(part.sum()))[1]
    if exact:
        best = None
        for candidate in (np.array([Fraction(float(x)) for x in mu], dtype=object),
                          _exact_scores(p, q, preferred, mu)):
            if candidate is None:
                continue
            yc = pair_score_marginal(q, preferred, candidate)
            acc = np.array([min(a, b) for a, b in zip(p, yc)], dtype=object)
            if best is None or acc.sum() > best[2].sum():
                best = (candidate, yc, acc)
        mu, y, accepted = best
    else:
        accepted = np.minimum(p, y)
    value = accepted.sum()
    left = p - accepted
    residual = left / left.sum() if left.sum() > 0 else p.copy()
    reached = bool(value == bound) if exact else bool(abs(value - bound) <= 1e-12)
    message = ("the rule reaches the bound without replacement" if reached else
               f"the scores leave {float(bound - value):.3e} below the bound (Newton's "
               f"shortfall {shortfall:.1e})")
    return PairScorePlan(
        preferred=preferred, mu=mu, y=y, residual=residual, alpha_value=value, bound=bound,
        shortfall=shortfall, reached=reached, method="pair_scores",
        status="optimal" if reached else "exact", message=message, inputs={},
    )
