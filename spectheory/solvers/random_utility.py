r"""Any number of drafts, any draft law: a random-utility rule that reaches the bound.

The rule (docs/theory.md §3.16).  Split the tokens into a preferred part ``T``
and the rest :math:`H^*` (the optimal dual set of the bound) and give every
token a score :math:`\mu_a`.  From the set ``S`` of distinct drafts, let
:math:`S' = S \cap T` when ``S`` meets ``T``, else :math:`S' = S`; draw
:math:`U_a \sim U[0, 1]` independently for the drafts in :math:`S'` and select
the draft of largest :math:`\mu_a + U_a`.  Then single-draft speculative
sampling of ``p`` runs against the selection marginal ``y`` (Khisti et al.'s
decomposition): lossless for any scores.

**Why it reaches the bound.**  With :math:`\Phi_{S'}(\mu) = E \max_{a \in S'}
(\mu_a + U_a)`, convex with gradient the choice probabilities, the dual

.. math::

    \Psi(\mu) = \sum_S P(S)\, \Phi_{S'}(\mu_{S'}) - \langle \mu, p \rangle,
    \qquad \nabla \Psi = y(\mu) - p,

is bounded below on :math:`\{\mu \le 0 \text{ on } T,\ \mu \ge 0 \text{ on } H^*\}`
(a rule meeting the bound's constraints exists, §3.7) and piecewise polynomial
over finitely many polyhedra (the orderings of the numbers :math:`\mu_a` and
:math:`\mu_a + 1`), so it attains its minimum (a convex polynomial bounded below
on a polyhedron does, Belousov and Klatte 2002).  The optimality conditions there
are :math:`y \le p` on ``T`` and :math:`y \ge p` on :math:`H^*`, which with the
preference for ``T`` give :math:`\sum_a \min(p_a, y_a) = p(H^*) + f(T) = \alpha^*`.
The noise must be bounded: with Gumbel noise (a softmax over the drafts) no draft
is ever selected with probability 0 or 1, and the rows that need it are reached
only in the limit of infinite scores.

The rule is a mixture of orderings (the drafts ranked by :math:`\mu_a + U_a`),
which is what the polymatroid view of the bound asks for.  This module is the
small-vocabulary reference: the set law is enumerated
(:func:`spectheory.drafting.draft_set_law`), the choice probabilities are
integrated exactly piece by piece, and :math:`\Psi` is minimised by L-BFGS-B,
then polished by projected Newton steps with the exact Hessian, and where those stall
(scores of almost no curvature, on rows with masses far below the others) by
Gauss-Seidel sweeps that solve each score's own condition by bisection.  What it lacks at
full vocabulary is a certified evaluation of ``y`` (docs/theory.md §3.16).

References
----------
Khisti, Ebrahimi, Dbouk, Behboodi, Memisevic, Louizos, arXiv:2410.18234 (the
decomposition); Hu et al., arXiv:2502.18779 (the bound); McFadden (1981) and
Hofbauer and Sandholm, Econometrica 70 (2002) 2265-2294 (choice probabilities as
the gradient of the expected maximum); Belousov and Klatte, Math. Program. 92
(2002) 537-544 (convex polynomials attain their infimum on polyhedra).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise

import numpy as np
from scipy.optimize import minimize

from .._errors import InvalidParameterError
from .._validate import as_distribution_pair, check_choice, check_positive_int
from ..drafting import set_law_row
from .pair_scores import ScoreRulePlan

__all__ = [
    "RandomUtilityPlan",
    "random_utility_marginal",
    "random_utility_plan",
    "uniform_choice",
    "uniform_choice_jacobian",
    "uniform_expected_max",
]

#: Shortfall (mass) at which the plan counts as reaching the bound.
REACH_TOLERANCE = 1e-12
#: Projected Newton steps after L-BFGS-B.
POLISH_STEPS = 60
#: Largest move of one score in one Newton step: a window's width.
MAX_SCORE_STEP = 1.0
#: How far past the kink an isolated score moves (where its curvature starts).
KINK_MARGIN = 1e-6
#: Gauss-Seidel sweeps, and bisection steps per score, where Newton stalls.
SWEEPS = 30
BISECTIONS = 80


def _product_integral(lo, hi, centres):
    r""":math:`\int_{lo}^{hi} \prod_c F(u - c)\,du`, ``F`` the U[0, 1] distribution function.

    The integrand is a polynomial between consecutive points of
    :math:`\{c, c + 1\}`: each piece is multiplied out in the shifted variable
    :math:`x = u - s` (``s`` the piece's start, for floats' sake) and integrated
    exactly.  Works on floats and on Fractions alike.
    """
    if not hi > lo:
        return lo - lo  # a zero of the inputs' type
    cuts = sorted({lo, hi} | {x for c in centres for x in (c, c + 1) if lo < x < hi})
    total = lo - lo
    for s, t in pairwise(cuts):
        mid = (s + t) / 2
        poly = [s - s + 1]  # coefficients of x^0, x^1, ...
        for c in centres:
            if mid - c >= 1:
                continue  # F = 1 on the piece
            if mid - c <= 0:
                poly = None  # F = 0 on the piece
                break
            # F(u - c) = x + (s - c): multiply poly by it
            shift = s - c
            nxt = [shift * poly[0]]
            for k in range(1, len(poly)):
                nxt.append(shift * poly[k] + poly[k - 1])
            nxt.append(poly[-1])
            poly = nxt
        if poly is None:
            continue
        width = t - s
        power = width
        for k, coef in enumerate(poly):
            total = total + coef * power / (k + 1)
            power = power * width
    return total


def uniform_choice(mu):
    r"""Choice probabilities :math:`P(a = \arg\max_b \mu_b + U_b)`, ``U`` i.i.d. U[0, 1].

    .. math:: w_a = \int_{\mu_a}^{\mu_a + 1} \prod_{b \ne a} F(u - \mu_b)\,du

    Parameters
    ----------
    mu : sequence of float or Fraction, length >= 1

    Returns
    -------
    list, the same type as ``mu``'s entries; sums to 1 (exactly for Fractions).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> [str(w) for w in uniform_choice([F(0), F(1, 2)])]  # 1 - (1 - 1/2)^2 / 2 = 7/8
    ['1/8', '7/8']
    """
    mu = list(mu)
    return [_product_integral(m, m + 1, mu[:a] + mu[a + 1:]) for a, m in enumerate(mu)]


def uniform_expected_max(mu):
    r""":math:`\Phi(\mu) = E \max_a (\mu_a + U_a)` for ``U`` i.i.d. U[0, 1].

    With :math:`L = \max_a \mu_a`,
    :math:`\Phi = L + 1 - \int_L^{L+1} \prod_a F(u - \mu_a)\,du`; convex, and its
    gradient is :func:`uniform_choice`.
    """
    mu = list(mu)
    top = max(mu)
    return top + 1 - _product_integral(top, top + 1, mu)


def uniform_choice_jacobian(mu):
    r""":math:`\partial w_a / \partial \mu_b`: the Hessian of :func:`uniform_expected_max`.

    For :math:`b \ne a`,
    :math:`-\int_{\max(\mu_a, \mu_b)}^{\min(\mu_a, \mu_b) + 1} \prod_{c \ne a, b}
    F(u - \mu_c)\,du` (``a`` and ``b`` tied at ``u``); the diagonal makes each row
    sum to 0 (a common shift leaves ``w`` unchanged).  Symmetric, positive
    semidefinite.
    """
    mu = list(mu)
    k = len(mu)
    jac = [[mu[0] - mu[0] for _ in range(k)] for _ in range(k)]
    for a in range(k):
        for b in range(a + 1, k):
            rest = [mu[c] for c in range(k) if c not in (a, b)]
            value = -_product_integral(max(mu[a], mu[b]), min(mu[a], mu[b]) + 1, rest)
            jac[a][b] = jac[b][a] = value
    for a in range(k):
        jac[a][a] = -sum(jac[a][b] for b in range(k) if b != a)
    return jac


def _selection_sets(q, n, sampling, preferred):
    """The law of the selection set S' (module docstring): list of (members, probability)."""
    law = defaultdict(lambda: q[0] - q[0])
    for members, prob in set_law_row(q, n, sampling).items():
        members = sorted(int(a) for a in members)
        inside = [a for a in members if preferred[a]]
        law[tuple(inside or members)] += prob
    return [(list(k), v) for k, v in law.items()]


def random_utility_marginal(sets, mu, V):
    r"""The selection marginal :math:`y_a = \sum_{S'} P(S') w_a(\mu_{S'})`.

    Parameters
    ----------
    sets : list of (list of int, probability)
        The law of the selection set (floats or Fractions).
    mu : sequence, length V
        Scores (floats, or Fractions for exact arithmetic).
    V : int

    Returns
    -------
    ndarray, shape (V,), float64 or object (Fractions)
    """
    exact = isinstance(mu[0], Fraction)
    y = np.array([Fraction(0)] * V, dtype=object) if exact else np.zeros(V)
    for members, prob in sets:
        for a, w in zip(members, uniform_choice([mu[a] for a in members])):
            y[a] += prob * w
    return y


def _dual(sets, mu, p, hessian=True):
    """Psi(mu), its gradient y - p and its Hessian (floats; None unless ``hessian``)."""
    V = p.size
    value = -float(mu @ p)
    y = np.zeros(V)
    hess = np.zeros((V, V)) if hessian else None
    for members, prob in sets:
        m = [float(mu[a]) for a in members]
        value += prob * uniform_expected_max(m)
        idx = np.asarray(members)
        y[idx] += prob * np.asarray(uniform_choice(m))
        if hessian and len(members) > 1:
            hess[np.ix_(idx, idx)] += prob * np.asarray(uniform_choice_jacobian(m))
    return value, y - p, hess


def _shortfall(y, p, sign):
    return float(np.maximum(sign * (p - y), 0.0).sum())


def _distance_to_compete(sets, mu, a, grad):
    """The signed move of ``mu[a]`` to the nearest score where it starts to compete in one
    of its sets: up to 1 below that set's best other score (``grad < 0``: ``a`` wants
    more selection than the sets where it is never selected give), or down to 1 above it
    (``grad > 0``, in the sets where it is always selected)."""
    gaps = [mu[a] - max(mu[b] for b in members if b != a)
            for members, _ in sets if a in members and len(members) > 1]
    if grad < 0:
        return min((-1.0 - g for g in gaps if g <= -1.0), default=0.0)
    return -min((g - 1.0 for g in gaps if g >= 1.0), default=0.0)


def _solve_scores(sets, p, sign, active):
    """Minimise Psi over the sign-constrained scores of the ``active`` tokens."""
    V = p.size
    # Some minimiser has every score within the part's token count of 0 (docs/theory.md
    # §3.16: gaps wider than 1 close without raising Psi), so the box loses nothing.
    limit = float(active.sum()) + 1.0
    bounds = [((0.0, limit) if s > 0 else (-limit, 0.0)) if on else (0.0, 0.0)
              for s, on in zip(sign, active)]

    def fun(x):
        value, grad, _ = _dual(sets, x, p, hessian=False)
        return value, grad

    res = minimize(fun, np.zeros(V), jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"ftol": 0.0, "gtol": 1e-13, "maxiter": 2000})
    mu = np.clip(res.x, [b[0] for b in bounds], [b[1] for b in bounds])
    value, grad, hess = _dual(sets, mu, p)
    best = (mu, _shortfall(grad + p, p, sign))
    lower, upper = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    for _ in range(POLISH_STEPS):
        if best[1] <= REACH_TOLERANCE / 10:
            break
        # Scores at a bound that the gradient presses against stay (projected Newton).
        pressed = ((mu <= lower) & (grad >= 0)) | ((mu >= upper) & (grad <= 0))
        free = active & ~pressed
        if not free.any():
            break
        step = np.zeros(V)
        step[free] = np.linalg.lstsq(hess[np.ix_(free, free)], -grad[free], rcond=None)[0]
        # A token that no draft set lets compete (each of its sets has a score at least 1
        # away) has no curvature: Psi is linear in its score up to the kink where it starts
        # to compete, so it moves there (and a little beyond, where the curvature starts).
        isolated = free & (np.diag(hess) <= 0) & (grad != 0)
        for a in np.flatnonzero(isolated):
            step[a] = (_distance_to_compete(sets, mu, a, grad[a])
                       - np.sign(grad[a]) * KINK_MARGIN)
        step = np.clip(step, -MAX_SCORE_STEP, MAX_SCORE_STEP)
        t, improved = 1.0, False
        while t > 1e-8:
            trial = np.clip(mu + t * step, lower, upper)
            v, g, h = _dual(sets, trial, p)
            short = _shortfall(g + p, p, sign)
            if short < best[1] or v < value - 1e-15 * (1 + abs(value)):
                mu, value, grad, hess, improved = trial, v, g, h, True
                if short < best[1]:
                    best = (trial, short)
                break
            t /= 2
        if not improved:
            break
    if best[1] > REACH_TOLERANCE / 10:
        best = _coordinate_sweeps(sets, p, sign, active, lower, upper, best)
    return best


def _coordinate_sweeps(sets, p, sign, active, lower, upper, best):
    """Gauss-Seidel on the optimality conditions, one score at a time, by bisection.

    Where Newton stalls (a score whose curvature is nearly 0, on rows with masses far
    below the others), each score in turn is set so that its own condition holds with
    the others fixed: :math:`y_a` increases with :math:`\\mu_a`, so the root of
    :math:`y_a = p_a` is bracketed, or the bound 0 already satisfies the inequality.
    The best scores met are kept."""
    sets_of = {a: [(m, w) for m, w in sets if a in m] for a in np.flatnonzero(active)}

    def own(mu, a):
        return sum(w * uniform_choice([mu[b] for b in m])[m.index(a)] for m, w in sets_of[a])

    mu = best[0].copy()
    for _ in range(SWEEPS):
        for a in sets_of:
            lo, hi = lower[a], upper[a]
            mu[a] = 0.0
            excess = own(mu, a) - p[a]
            if sign[a] * excess >= 0:
                continue  # the bound 0 meets the inequality: y >= p on H*, y <= p on T
            for _ in range(BISECTIONS):
                mid = 0.5 * (lo + hi)
                mu[a] = mid
                if own(mu, a) > p[a]:
                    hi = mid
                else:
                    lo = mid
                if hi - lo <= 1e-15 * max(1.0, abs(mid)):
                    break
            mu[a] = 0.5 * (lo + hi)
        short = _shortfall(_dual(sets, mu, p, hessian=False)[1] + p, p, sign)
        if short < best[1]:
            best = (mu.copy(), short)
        if best[1] <= REACH_TOLERANCE / 10:
            break
    return best


@dataclass(frozen=True)
class RandomUtilityPlan(ScoreRulePlan):
    """The random-utility rule for one row (module docstring).

    The fields are :class:`.pair_scores.ScoreRulePlan`'s: ``method``
    ``"random_utility"``, ``inputs`` ``{"n", "sampling"}``, ``y`` by
    :func:`random_utility_marginal`, ``bound`` :math:`\\alpha^*` of the draft law.
    """


def random_utility_plan(p, q, n, sampling="without_replacement"):
    """The uniform random-utility rule for ``(p, q)``, ``n`` drafts of the given law.

    Small vocabularies only: the draft sets are enumerated
    (:func:`spectheory.drafting.draft_set_law`, at most ``MAX_ENUMERATION`` draws).

    Parameters
    ----------
    p, q : array_like, shape (V,)
        Target and draft (float64, or Fraction objects: the scores are solved in
        floats, then the marginal, residual and acceptance are computed exactly
        at those scores, so the verifier built on them is exactly lossless and its
        acceptance exactly known).
    n : int >= 1
    sampling : {"iid", "without_replacement", "greedy"}

    Returns
    -------
    RandomUtilityPlan

    Raises
    ------
    InvalidParameterError
        For a batch, a bad ``n`` or ``sampling``.
    InstanceTooLargeError
        When the draft sets are too many to enumerate.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([0.5, 0.3, 0.15, 0.05]); q = np.array([0.1, 0.2, 0.3, 0.4])
    >>> plan = random_utility_plan(p, q, 3)
    >>> plan.reached, round(float(plan.alpha_value), 12) == round(float(plan.bound), 12)
    (True, True)
    """
    from .ot_dual import solve_bound

    n = check_positive_int(n, "n")
    sampling = check_choice(sampling, "sampling", ("iid", "without_replacement", "greedy"))
    P, Q, batched = as_distribution_pair(p, q, allow_exact=True)
    if batched:
        raise InvalidParameterError(
            f"random_utility_plan takes one row; got target of shape {np.shape(p)}")
    p, q = P[0], Q[0]
    exact = p.dtype == object
    V = p.size
    sol = solve_bound(p, q, n, sampling, method="enumerate" if exact else "dual")
    bound = sol.exact_value if exact else float(np.asarray(sol.value).reshape(-1)[0])
    preferred = ~np.asarray(sol.certificate, dtype=bool).reshape(-1)
    pf = np.asarray([float(x) for x in p])
    sets = _selection_sets(q, n, sampling, preferred)
    sets_f = [(m, float(w)) for m, w in sets]
    drafted = np.zeros(V, dtype=bool)
    for members, _ in sets_f:
        drafted[members] = True
    # A token that is never drafted, or never competes, has nothing to score.
    competing = np.zeros(V, dtype=bool)
    for members, _ in sets_f:
        if len(members) > 1:
            competing[members] = True
    sign = np.where(preferred, -1.0, 1.0)
    mu, shortfall = _solve_scores(sets_f, pf, sign, competing & drafted)
    if exact:
        mu_x = [Fraction(float(x)) for x in mu]
        y = random_utility_marginal(sets, mu_x, V)
        accepted = np.array([min(a, b) for a, b in zip(p, y)], dtype=object)
    else:
        y = random_utility_marginal(sets_f, list(mu), V)
        accepted = np.minimum(p, y)
    value = accepted.sum()
    left = p - accepted
    residual = left / left.sum() if left.sum() > 0 else p.copy()
    gap = bound - value
    reached = bool(abs(float(gap)) <= REACH_TOLERANCE)
    message = ("the rule reaches the bound" if reached else
               f"the scores leave {float(gap):.3e} below the bound")
    return RandomUtilityPlan(
        preferred=preferred, mu=mu, y=y, residual=residual, alpha_value=value, bound=bound,
        shortfall=shortfall, reached=reached, method="random_utility",
        status="optimal" if reached else "exact", message=message,
        inputs={"n": n, "sampling": sampling},
    )
