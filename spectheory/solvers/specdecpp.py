r"""The SpecDec++ draft-length decision process, solved exactly.

SpecDec++ [1]_ decides after every drafted token whether to draft another
one or to stop and call the target.  docs/theory.md §5.4 models one round as a
renewal: it starts at :math:`P = 1, k = 0`; ``continue`` costs
:math:`t_d`, reveals :math:`a`, the conditional acceptance probability of the
new token, and sets :math:`P \leftarrow P a`, :math:`k \leftarrow k + 1`;
``stop`` costs :math:`t_t` (one target call) and ends the round.  :math:`P`
is the probability that every drafted token so far is accepted, so a round
that drafts :math:`\gamma` tokens emits :math:`1 + \sum_{j \le \gamma} P_j`
tokens in expectation.  The drafter must stop at :math:`k = K_{\max}`.

The objective is the long-run cost per token
:math:`\lambda = E[\text{cost/round}] / E[\text{tokens/round}]` (renewal-reward),
and the speedup over target-only decoding is :math:`S = t_t / \lambda`.
Dinkelbach's method turns the ratio into a sequence of additive problems:
for fixed :math:`\lambda`, backward induction over the reachable states
:math:`(P, k)` gives

.. math::

    V(P, k) = \max\Big(0,\; -t_d + E_a\big[\lambda P a + V(P a, k + 1)\big]\Big),
    \qquad V(\cdot, K_{\max}) = 0,

(continue iff the second term is > 0); the policy is then evaluated exactly
and :math:`\lambda \leftarrow C/N`.  The iteration decreases
:math:`\lambda` to :math:`\lambda^*` in finitely many steps (finitely many
policies); it stops when :math:`|\Delta\lambda| \le 10^{-12} t_t`.

The acceptance model is either i.i.d. :math:`a \sim D` on finitely many
values, or a finite Markov chain on those values (state = last value).
States are kept **exactly**: :math:`P = \prod_i v_i^{n_i}` is indexed by the
tuple of exponents :math:`(n_1, \dots, n_m)` (plus the chain state), never by
a rounded float, so equal products never merge wrongly and distinct ones
never collide.  There are :math:`\binom{K_{\max} + m}{m}` of them for ``m``
values (3,276 for m = 3, K = 25).

Under i.i.d. acceptance the optimum is a threshold in :math:`P` (docs/theory.md
5.4; the paper's Theorem 3.1 in the form of 5.3): stop iff
:math:`P(\text{some drafted token rejected}) = 1 - P \ge h`.  The solver
reports the interval of thresholds ``h`` that reproduce its policy on every
reachable state, and checks that it is non-empty.

``method="lp"`` solves the same average-cost problem independently, as the
linear program of a unichain semi-Markov decision process over state-action
frequencies (HiGHS), with its own state enumeration.

References
----------
.. [1] Huang, Guo, Wang. "SpecDec++: Boosting Speculative Decoding via
   Adaptive Candidate Lengths". COLM 2025, arXiv:2405.19715.
.. [2] Dinkelbach. "On nonlinear fractional programming". Management
   Science 13(7), 1967.
.. [3] Puterman. "Markov Decision Processes", Wiley 1994, section 11.4
   (semi-Markov LP).
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .._errors import InstanceTooLargeError, InvalidParameterError, SolverError
from .._validate import (
    check_choice,
    check_limit,
    check_positive_int,
    check_positive_real,
    real_array,
)
from ._result import SolverResult
from .speedup import optimal_gamma_positional

__all__ = [
    "SPECDECPP_METHODS",
    "SpecDecPPResult",
    "evaluate_threshold_policy",
    "solve_specdecpp",
]

#: Methods of :func:`solve_specdecpp`.
SPECDECPP_METHODS = ("dinkelbach", "lp")

#: Largest number of states the solvers accept (about 130 us per state: ~30 s at the limit).
MAX_STATES = 200_000
#: Largest ``k_max`` (draft length cap) of :func:`solve_specdecpp`.
MAX_K = 1_000


@dataclass(frozen=True)
class SpecDecPPResult(SolverResult):
    """Result of :func:`solve_specdecpp` (the shared fields: :class:`.SolverResult`).

    Attributes
    ----------
    average_cost : float
        :math:`\\lambda^*`, optimal expected cost per emitted token.
    speedup : float
        :math:`S^* = t_t / \\lambda^*` over target-only decoding.
    threshold : float or ndarray (m,)
        A threshold ``h`` on :math:`1 - P` that reproduces the optimal policy:
        stop iff :math:`1 - P \\ge h` (the midpoint of ``threshold_interval``,
        so that a product computed in another order, an ulp away, decides
        alike; ``inf`` when the policy never stops before ``k_max``).  For a
        Markov model, one per chain state (the last revealed value).
    threshold_interval : ndarray (2,) or (m, 2)
        ``(lo, hi)``: every ``h`` with ``lo < h <= hi`` reproduces the
        policy; ``lo`` is the largest :math:`1 - P` where the policy
        continues, ``hi`` the smallest where it stops (``-inf`` / ``inf``
        when there is none).  States counted: all reachable with positive
        probability at :math:`k < K_{\\max}` (``"dinkelbach"``), or those the
        optimal policy visits (``"lp"``).
    is_threshold : bool
        ``lo < hi`` (for every chain state).
    tokens_per_round, cost_per_round, drafts_per_round : float
        Under the optimal policy.
    myopic_threshold : float or ndarray (m,)
        ``h`` of the myopic rule "continue iff :math:`\\lambda^* P E[a] > t_d`",
        i.e. :math:`1 - t_d / (\\lambda^* E[a])` (per chain state for a Markov
        model, with the conditional mean of the next value); ``-inf`` where
        :math:`E[a] = 0`, where the rule stops at once (``t_draft = 0``
        included).
    myopic_speedup : float
        Exact speedup of the myopic rule.
    fixed_gamma : int
        Best fixed draft length :math:`\\gamma \\le K_{\\max}`.
    fixed_speedup : float
        Its speedup :math:`t_t (1 + \\sum_{j \\le \\gamma} E[P_j]) / (t_t + \\gamma t_d)`.
    iterations : int
        Dinkelbach iterations (1 for ``"lp"``).
    n_states : int
    method, status, message, inputs
        ``"dinkelbach"`` or ``"lp"``; ``"optimal"``, or ``"max_iter"`` when
        Dinkelbach's iteration stopped at ``max_iter`` before
        :math:`|\\Delta\\lambda| \\le` ``tol`` ``t_target`` (the policy is
        then the best response to the last :math:`\\lambda`, not proved
        optimal); ``inputs`` holds ``t_draft``, ``t_target``, ``k_max``, ``tol``
        and ``max_iter`` (the acceptance law and transition matrix are left out).
    """

    average_cost: float
    speedup: float
    threshold: float | np.ndarray
    threshold_interval: np.ndarray
    is_threshold: bool
    tokens_per_round: float
    cost_per_round: float
    drafts_per_round: float
    myopic_threshold: float | np.ndarray
    myopic_speedup: float
    fixed_gamma: int
    fixed_speedup: float
    iterations: int
    n_states: int


# --------------------------------------------------------------------------- input


def _parse_model(acceptance, transition):
    if isinstance(acceptance, Mapping):
        values, probs = list(acceptance.keys()), list(acceptance.values())
    else:
        try:
            values, probs = acceptance
        except (TypeError, ValueError):
            raise InvalidParameterError(
                "acceptance must be a mapping {value: probability} or a pair "
                f"(values, probabilities); got {acceptance!r}"
            ) from None
    # Entry by entry: bools, strings and complex numbers are refused, not coerced or parsed.
    v = real_array(values, "acceptance values")
    p = real_array(probs, "acceptance probabilities")
    if v.ndim != 1 or v.shape != p.shape or v.size == 0:
        raise InvalidParameterError(
            "acceptance needs as many probabilities as values (1-D, non-empty); "
            f"got shapes {v.shape} and {p.shape}"
        )
    for name, arr, lo, hi in (("value", v, 0.0, 1.0), ("probability", p, 0.0, 1.0)):
        bad = ~np.isfinite(arr) | (arr < lo) | (arr > hi)
        if bad.any():
            i = int(np.argmax(bad))
            raise InvalidParameterError(
                f"acceptance {name} {i} must lie in [0, 1]; got {float(arr[i])!r}"
            )
    if np.unique(v).size != v.size:
        raise InvalidParameterError(f"acceptance values must be distinct; got {v.tolist()}")
    if abs(p.sum() - 1.0) > 1e-9:
        raise InvalidParameterError(
            f"acceptance probabilities must sum to 1; they sum to {float(p.sum())!r}"
        )
    p = p / p.sum()
    T = None
    if transition is not None:
        T = real_array(transition, "transition")
        m = v.size
        if T.shape != (m, m):
            raise InvalidParameterError(
                f"transition must have shape ({m}, {m}) for {m} acceptance values; got {T.shape}"
            )
        bad = ~np.isfinite(T) | (T < 0) | (T > 1)
        if bad.any():
            i, j = (int(x) for x in np.argwhere(bad)[0])
            raise InvalidParameterError(
                f"transition[{i}, {j}] must lie in [0, 1]; got {float(T[i, j])!r}"
            )
        sums = T.sum(axis=1)
        off = np.abs(sums - 1.0) > 1e-9
        if off.any():
            i = int(np.argmax(off))
            raise InvalidParameterError(
                f"transition row {i} must sum to 1; it sums to {float(sums[i])!r}"
            )
        T = T / sums[:, None]
    return v, p, T


def _check_time(x, name, positive):
    # numbers.Real: a Fraction was refused as "not a real number".
    if isinstance(x, bool | np.bool_) or not isinstance(x, numbers.Real):
        raise InvalidParameterError(f"{name} must be a real number; got {x!r}")
    x = float(x)
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise InvalidParameterError(f"{name} must be {'> 0' if positive else '>= 0'}; got {x!r}")
    return x


def _n_states(m, k_max, markov):
    n = math.comb(k_max + m, m)
    return n * m if markov else n


# --------------------------------------------------------------------------- levels


@dataclass
class _Level:
    P: np.ndarray  # (N_k,) prefix acceptance of each state
    last: np.ndarray  # (N_k,) chain state (last value index), -1 at the root / i.i.d.
    child: np.ndarray | None  # (N_k, m) index of the successor in level k + 1
    prob: np.ndarray | None  # (N_k, m) probability of each next value
    reach: np.ndarray  # (N_k,) reachable with positive probability


def _build_levels(v, p, T, k_max):
    """States level by level, keyed by exact exponent tuples (and chain state)."""
    m = v.size
    markov = T is not None
    levels_keys = []
    for k in range(k_max + 1):
        keys = []
        for combo in itertools.combinations_with_replacement(range(m), k):
            n = [0] * m
            for i in combo:
                n[i] += 1
            n = tuple(n)
            if not markov or k == 0:
                keys.append((n, -1))
            else:
                keys.extend((n, j) for j in range(m) if n[j] > 0)
        levels_keys.append(keys)
    index = [{key: i for i, key in enumerate(keys)} for keys in levels_keys]
    logv = np.full(m, -np.inf)
    np.log(v, out=logv, where=v > 0)
    levels = []
    for k, keys in enumerate(levels_keys):
        expo = np.array([key[0] for key in keys], dtype=np.int64).reshape(len(keys), m)
        with np.errstate(invalid="ignore"):
            logP = np.where(expo > 0, expo * logv, 0.0).sum(axis=1)
        P = np.exp(logP)
        last = np.array([key[1] for key in keys], dtype=np.int64)
        child = prob = None
        if k < k_max:
            child = np.empty((len(keys), m), dtype=np.int64)
            for s, (n, _) in enumerate(keys):
                for i in range(m):
                    nn = (*n[:i], n[i] + 1, *n[i + 1 :])
                    child[s, i] = index[k + 1][(nn, i if markov else -1)]
            if markov:
                prob = np.where(last[:, None] >= 0, T[np.maximum(last, 0)], p[None, :])
            else:
                prob = np.broadcast_to(p, (len(keys), m))
        levels.append(_Level(P, last, child, prob, np.zeros(len(keys), dtype=bool)))
    levels[0].reach[:] = True
    for k in range(k_max):
        lv = levels[k]
        hit = lv.child[lv.reach[:, None] & (lv.prob > 0)]
        levels[k + 1].reach[hit] = True
    return levels


def _backward(levels, v, lam, t_draft, policy=None):
    """One backward pass: policy (if not given) and its exact N, D per state.

    Returns (cont per level, tokens after root, drafts after root).
    """
    K = len(levels) - 1
    V = np.zeros(levels[K].P.size)
    N = np.zeros_like(V)
    D = np.zeros_like(V)
    conts = [None] * (K + 1)
    conts[K] = np.zeros(levels[K].P.size, dtype=bool)
    for k in range(K - 1, -1, -1):
        lv = levels[k]
        gain = lv.P[:, None] * v[None, :]  # P a: probability the new token is accepted
        if policy is None:
            G = -t_draft + (lv.prob * (lam * gain + V[lv.child])).sum(axis=1)
            cont = G > 0.0
            V = np.where(cont, G, 0.0)
        else:
            cont = policy[k]
        N = np.where(cont, (lv.prob * (gain + N[lv.child])).sum(axis=1), 0.0)
        D = np.where(cont, 1.0 + (lv.prob * D[lv.child]).sum(axis=1), 0.0)
        conts[k] = cont
    return conts, float(N[0]), float(D[0])


def _threshold_interval(levels, conts, m, markov, mask=None):
    """(lo, hi) per group: max 1-P over continue states, min 1-P over stop states."""
    groups = m if markov else 1
    lo = np.full(groups, -np.inf)
    hi = np.full(groups, np.inf)
    K = len(levels) - 1
    for k in range(K):
        lv = levels[k]
        use = lv.reach if mask is None else mask[k]
        q = 1.0 - lv.P
        for g in range(groups):
            sel = use & ((lv.last == g) | (lv.last < 0)) if markov else use
            c, s = sel & conts[k], sel & ~conts[k]
            if c.any():
                lo[g] = max(lo[g], float(q[c].max()))
            if s.any():
                hi[g] = min(hi[g], float(q[s].min()))
    return np.stack([lo, hi], axis=1)


def _inner_threshold(interval):
    """One ``h`` per group strictly inside ``(lo, hi]``: the midpoint.

    The ends are themselves values of :math:`1 - P`; a user's product of the
    same acceptances can differ from ours by an ulp, which at ``h = hi``
    flips the decision at that state.  ``lo = -inf`` (the policy stops at
    every state): ``hi / 2``; ``hi = inf`` (it never stops): ``inf``; no
    threshold policy (``lo >= hi``): ``hi``, as documented.
    """
    lo, hi = interval[:, 0], interval[:, 1]
    with np.errstate(invalid="ignore"):
        mid = np.where(np.isneginf(lo), hi / 2, (lo + hi) / 2)
    return np.where(np.isposinf(hi) | (lo >= hi), hi, mid)


def _visited(levels, conts):
    """Per level, the states reached with positive probability when ``conts`` is followed."""
    seen = [np.zeros(lv.P.size, dtype=bool) for lv in levels]
    seen[0][:] = True
    for k in range(len(levels) - 1):
        lv = levels[k]
        go = seen[k] & conts[k]
        seen[k + 1][lv.child[go[:, None] & (lv.prob > 0)]] = True
    return seen


def _fixed_baseline(v, p, T, k_max, c):
    """E[P_j], j = 1..K_max, and the best fixed length by the positional speedup."""
    EP = np.empty(k_max)
    w = p * v  # joint weight of (all accepted so far, last value)
    for j in range(k_max):
        EP[j] = w.sum()
        w = (w @ T) * v if T is not None else w.sum() * p * v
    r = optimal_gamma_positional(np.minimum(EP, 1.0), c, kind="prefix", method="enumerate")
    return int(r.gamma), float(r.speedup)


def _myopic(levels, v, p, T, lam, t_draft):
    """Policy 'continue iff lam P E[a | state] > t_draft' and its threshold(s) on 1 - P."""
    mean_next = (T @ v) if T is not None else np.array([p @ v])
    policy = []
    for lv in levels[:-1]:
        m_next = (lv.prob * v[None, :]).sum(axis=1)
        policy.append(lam * lv.P * m_next > t_draft)
    policy.append(np.zeros(levels[-1].P.size, dtype=bool))
    # E[a] = 0: lam P E[a] > t_draft never holds, the rule stops at once, h = -inf (the
    # limit of 1 - t_draft / (lam E[a]) as E[a] -> 0 at t_draft > 0; no 0/0 at t_draft = 0).
    with np.errstate(divide="ignore"):
        h = 1.0 - t_draft / (lam * np.where(mean_next > 0, mean_next, 1.0))
    h = np.where(mean_next > 0, h, -np.inf)
    return policy, (float(h[0]) if T is None else h)


# --------------------------------------------------------------------------- solvers


def _solve_dinkelbach(levels, v, t_draft, t_target, tol, max_iter):
    lam = t_target
    for it in range(1, max_iter + 1):
        conts, N, D = _backward(levels, v, lam, t_draft)
        new = (t_target + t_draft * D) / (1.0 + N)
        if abs(new - lam) <= tol * t_target:
            # Re-solve at the limit so the policy reported is optimal for lambda*.
            conts, N, D = _backward(levels, v, new, t_draft)
            return new, conts, N, D, it, "optimal"
        lam = new
    return lam, conts, N, D, max_iter, "max_iter"


def _solve_lp(v, p, T, k_max, t_draft, t_target):
    """Average cost per token of the semi-Markov decision process, by LP (HiGHS)."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    m = v.size
    markov = T is not None
    root = ((0,) * m, -1)
    ids = {root: 0}
    order = [root]
    depth = [0]
    head = 0
    while head < len(order):  # breadth-first over states reachable with positive probability
        (n, last), k = order[head], depth[head]
        head += 1
        if k == k_max:
            continue
        row = p if (not markov or last < 0) else T[last]
        for i in range(m):
            if row[i] > 0:
                key = ((*n[:i], n[i] + 1, *n[i + 1 :]), i if markov else -1)
                if key not in ids:
                    ids[key] = len(order)
                    order.append(key)
                    depth.append(k + 1)
    S = len(order)
    Pval = np.array([math.prod(v[i] ** n[i] for i in range(m)) for n, _ in order])
    # Variables: x_stop[s] for every s, then x_cont[s] for s with depth < k_max.
    cont_states = [s for s in range(S) if depth[s] < k_max]
    nv = S + len(cont_states)
    rows, cols, vals = [], [], []
    for s in range(S):  # outflow
        rows.append(s)
        cols.append(s)
        vals.append(1.0)
        rows.append(0)  # stop returns to the root
        cols.append(s)
        vals.append(-1.0)
    tokens = np.ones(nv)
    cost = np.full(nv, t_target)
    for j, s in enumerate(cont_states):
        col = S + j
        n, last = order[s]
        row = p if (not markov or last < 0) else T[last]
        rows.append(s)
        cols.append(col)
        vals.append(1.0)
        for i in range(m):
            if row[i] > 0:
                key = ((*n[:i], n[i] + 1, *n[i + 1 :]), i if markov else -1)
                rows.append(ids[key])
                cols.append(col)
                vals.append(-row[i])
        tokens[col] = Pval[s] * float(row @ v)
        cost[col] = t_draft
    A = coo_matrix((vals, (rows, cols)), shape=(S, nv)).tocsr()
    from scipy.sparse import vstack

    A_eq = vstack([A, coo_matrix(tokens[None, :])]).tocsr()
    b_eq = np.zeros(S + 1)
    b_eq[-1] = 1.0
    res = linprog(cost, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs")
    if res.status != 0:
        raise SolverError(f"HiGHS failed on the SpecDec++ LP: {res.message}")
    x = res.x
    x_stop = x[:S]
    x_cont = np.zeros(S)
    x_cont[cont_states] = x[S:]
    rounds = x_stop.sum()
    visited = (x_stop + x_cont) > 1e-12 * max(1.0, x.max())
    cont = x_cont > x_stop
    return {
        "lam": float(res.fun),
        "tokens_per_round": 1.0 / rounds,
        "drafts_per_round": float(x_cont.sum() / rounds),
        "order": order,
        "depth": np.array(depth),
        "P": Pval,
        "visited": visited,
        "cont": cont,
        "n_states": S,
        "message": res.message,
    }


def _lp_interval(sol, m, markov, k_max):
    groups = m if markov else 1
    lo = np.full(groups, -np.inf)
    hi = np.full(groups, np.inf)
    last = np.array([key[1] for key in sol["order"]])
    q = 1.0 - sol["P"]
    use = sol["visited"] & (sol["depth"] < k_max)
    for g in range(groups):
        sel = use & ((last == g) | (last < 0)) if markov else use
        c, s = sel & sol["cont"], sel & ~sol["cont"]
        if c.any():
            lo[g] = float(q[c].max())
        if s.any():
            hi[g] = float(q[s].min())
    return np.stack([lo, hi], axis=1)


def solve_specdecpp(
    acceptance,
    t_draft,
    *,
    t_target=1.0,
    transition=None,
    k_max=25,
    method="dinkelbach",
    tol=1e-12,
    max_iter=100,
):
    r"""Optimal adaptive draft length (SpecDec++), exact average-cost solution.

    Minimises the long-run cost per token

    .. math::

        \lambda = \frac{t_t + t_d\,E[\gamma]}{1 + E\big[\sum_{j \le \gamma} P_j\big]}

    over stopping rules :math:`\gamma` that see the conditional acceptance
    :math:`a_1, a_2, \dots` of the tokens drafted so far
    (:math:`P_j = a_1 \cdots a_j`, :math:`\gamma \le K_{\max}`); see the module
    docstring for the decision process and the algorithm.

    Parameters
    ----------
    acceptance : mapping {value: probability} or pair (values, probabilities)
        The law of the conditional acceptance :math:`a \in [0, 1]` of each
        drafted token.  Without ``transition``: i.i.d. draws from it.  With
        ``transition``: the initial law of a Markov chain on these values, in
        this order.
    t_draft : float >= 0
        Cost of drafting one token.
    t_target : float > 0
        Cost of one target call (default 1, so that ``t_draft`` is the ratio
        :math:`c = t_d / t_t`).
    transition : array_like (m, m), optional
        Row-stochastic matrix: ``transition[i, j]`` is the probability that
        the next value is ``values[j]`` after ``values[i]``.
    k_max : int >= 1
        Largest number of tokens drafted in a round.
    method : {"dinkelbach", "lp"}
        ``"dinkelbach"``: Dinkelbach iteration with backward induction (the
        solver).  ``"lp"``: the semi-Markov LP over state-action
        frequencies, solved by HiGHS (independent check; slower).
    tol : float
        Dinkelbach stops when :math:`|\Delta\lambda| \le` ``tol`` :math:`t_t`.
    max_iter : int

    Returns
    -------
    SpecDecPPResult

    Raises
    ------
    InvalidParameterError
        Bad values, probabilities, transition matrix, times or ``k_max``; a
        bool, string or complex entry among the values, probabilities or the
        transition matrix is refused (as by :mod:`.speedup`), not coerced.
    InstanceTooLargeError
        More than :data:`MAX_STATES` states.

    Examples
    --------
    Every draft accepted with probability 1/2 (a single value): the optimum
    is a fixed length, here :math:`\gamma = 1` with :math:`S = 1.5/1.2 = 1.25`
    (:math:`\gamma = 2` ties and loses the tie to the shorter draft).

    >>> r = solve_specdecpp({0.5: 1.0}, 0.2)
    >>> round(r.speedup, 12), r.fixed_gamma, round(r.fixed_speedup, 12)
    (1.25, 1, 1.25)
    """
    check_choice(method, "method", SPECDECPP_METHODS)
    v, p, T = _parse_model(acceptance, transition)
    t_draft = _check_time(t_draft, "t_draft", positive=False)
    t_target = _check_time(t_target, "t_target", positive=True)
    k_max = check_positive_int(k_max, "k_max")
    max_iter = check_positive_int(max_iter, "max_iter")
    tol = check_positive_real(tol, "tol")  # bool, inf and NaN refused
    check_limit(k_max, "k_max", MAX_K, "the level recursion is O(k_max) per state")
    m = v.size
    markov = T is not None
    n_states = _n_states(m, k_max, markov)
    if n_states > MAX_STATES:
        raise InstanceTooLargeError(
            f"{n_states} states for {m} acceptance values and k_max = {k_max}; "
            f"the limit is {MAX_STATES}"
        )
    c = t_draft / t_target
    fixed_gamma, fixed_speedup = _fixed_baseline(v, p, T, k_max, c)
    levels = _build_levels(v, p, T, k_max)

    if method == "dinkelbach":
        lam, conts, N, D, iterations, status = _solve_dinkelbach(
            levels, v, t_draft, t_target, tol, max_iter
        )
        tokens, drafts = 1.0 + N, D
        # Over the states the policy visits (as the LP's): a state reached only through a
        # stopping state has no say (Markov chains: the root stops, a later state would go on).
        interval = _threshold_interval(levels, conts, m, markov, _visited(levels, conts))
        message = (
            f"Dinkelbach converged in {iterations} iterations (|dlambda| <= {tol:g} t_target)"
            if status == "optimal"
            else f"Dinkelbach did not converge in {max_iter} iterations"
        )
        n_reported = sum(lv.P.size for lv in levels)
    else:
        sol = _solve_lp(v, p, T, k_max, t_draft, t_target)
        lam, tokens, drafts = sol["lam"], sol["tokens_per_round"], sol["drafts_per_round"]
        interval = _lp_interval(sol, m, markov, k_max)
        iterations, status, message = 1, "optimal", f"HiGHS: {sol['message']}"
        n_reported = sol["n_states"]

    my_policy, my_h = _myopic(levels, v, p, T, lam, t_draft)
    _, myN, myD = _backward(levels, v, lam, t_draft, policy=my_policy)
    myopic_speedup = t_target * (1.0 + myN) / (t_target + t_draft * myD)
    h = _inner_threshold(interval)
    threshold = h if markov else float(h[0])
    return SpecDecPPResult(
        average_cost=float(lam),
        speedup=float(t_target / lam),
        threshold=threshold,
        threshold_interval=interval if markov else interval[0],
        is_threshold=bool(np.all(interval[:, 0] < interval[:, 1])),
        tokens_per_round=float(tokens),
        cost_per_round=float(t_target + t_draft * drafts),
        drafts_per_round=float(drafts),
        myopic_threshold=my_h,
        myopic_speedup=float(myopic_speedup),
        fixed_gamma=fixed_gamma,
        fixed_speedup=fixed_speedup,
        iterations=iterations,
        n_states=n_reported,
        method=method,
        status=status,
        message=message,
        inputs={
            "t_draft": t_draft,
            "t_target": t_target,
            "k_max": k_max,
            "tol": tol,
            "max_iter": max_iter,
        },
    )


def evaluate_threshold_policy(acceptance, t_draft, h, *, t_target=1.0, transition=None, k_max=25):
    r"""Exact speedup of the rule "stop iff :math:`1 - P \ge h`" (or at :math:`K_{\max}`).

    This is the rule SpecDec++ runs with a trained acceptance head and a tuned
    ``h`` (docs/theory.md §5.6, without the off-by-one of the official code).

    Parameters
    ----------
    acceptance, t_draft, t_target, transition, k_max
        As in :func:`solve_specdecpp`.
    h : float
        Threshold on the probability that some drafted token is rejected;
        ``inf`` never stops before ``k_max``, ``-inf`` (or any ``h <= 0``)
        stops at once.  NaN is refused.

    Returns
    -------
    float
        :math:`t_t\,E[\text{tokens/round}] / E[\text{cost/round}]`.

    Raises
    ------
    InvalidParameterError
        As :func:`solve_specdecpp`, or ``h`` not a real number (bool, NaN).

    Examples
    --------
    With a single value 1/2 and ``h = 0.6``, the rule drafts while
    :math:`1 - P < 0.6`: two tokens (:math:`1 - P = 0.75` after them), so
    :math:`S = 1.75 / 1.4 = 1.25`.

    >>> round(evaluate_threshold_policy({0.5: 1.0}, 0.2, 0.6), 12)
    1.25
    """
    v, p, T = _parse_model(acceptance, transition)
    t_draft = _check_time(t_draft, "t_draft", positive=False)
    t_target = _check_time(t_target, "t_target", positive=True)
    k_max = check_positive_int(k_max, "k_max")
    if isinstance(h, bool | np.bool_) or not isinstance(h, numbers.Real):
        raise InvalidParameterError(f"h must be a real number; got {h!r}")
    h = float(h)
    if math.isnan(h):  # every comparison with NaN is False: the rule would never stop
        raise InvalidParameterError(f"h must be a real number (inf allowed), not NaN; got {h!r}")
    if _n_states(v.size, k_max, T is not None) > MAX_STATES:
        raise InstanceTooLargeError(f"too many states for k_max = {k_max}")
    levels = _build_levels(v, p, T, k_max)
    policy = [1.0 - lv.P < h for lv in levels[:-1]]
    policy.append(np.zeros(levels[-1].P.size, dtype=bool))
    _, N, D = _backward(levels, v, 0.0, t_draft, policy=policy)
    return float(t_target * (1.0 + N) / (t_target + t_draft * D))
