r"""Draft-length policies simulated on real per-position acceptances (exact expectations).

The renewal model of docs/theory.md §5.4, driven by a recorded continuation: for a
prompt whose continuation has :math:`n` positions with acceptances
:math:`\beta_0, \dots, \beta_{n-1}` (:func:`spectheory.lm.acceptance_profile`),
a round that starts at position :math:`s` drafts :math:`\gamma_r` tokens for
positions :math:`s, s+1, \dots`; the token at position :math:`t` is accepted
with probability :math:`\beta_t` given that the ones before it were; after
:math:`m` acceptances the target emits one more token (correction or bonus),
so the next round starts at :math:`s + m + 1`.  A round never drafts past the
continuation: :math:`\gamma_r \le n - 1 - s`, so every prompt emits exactly
:math:`N = n` tokens, and at most ``k_max`` tokens.

Policies (all see only the past and the current round):

- :class:`Fixed`: :math:`\gamma_r = \gamma` (SpecDec, Leviathan et al. [2]_).
- :class:`Heuristic`: the Hugging Face schedule (docs/theory.md §5.6/5.8):
  start at 5; :math:`\gamma \leftarrow \gamma + 2` if every scheduled token
  was accepted, else :math:`\max(1, \gamma - 1)`; capped at ``k_max``.
- :class:`Threshold`: stop drafting as soon as
  :math:`1 - \prod_{i < k} a_{s+i} \ge h` (SpecDec++ [1]_, docs/theory.md §5.3-5.6),
  with :math:`a = \beta` (the oracle: the true acceptances of the tokens
  drafted so far) or :math:`a = \hat\beta` (an acceptance head's
  predictions, :mod:`spectheory.lm.acchead`).

Accounting (docs/theory.md §5.1): with :math:`N` emitted tokens,
:math:`N_{\mathrm{target}}` rounds and :math:`N_{\mathrm{discard}}` rejected
draft tokens,

.. math::

    \frac{T_{\mathrm{total}}}{N} = t_d (1 + r_{\mathrm{discard}})
        + (t_t - t_d)\, r_{\mathrm{verify}},\qquad
    S = \frac{t_t}{T_{\mathrm{total}} / N},

with :math:`r_{\mathrm{discard}} = N_{\mathrm{discard}}/N`,
:math:`r_{\mathrm{verify}} = N_{\mathrm{target}}/N`, :math:`c = t_d / t_t`.
Rates are ratios of expectations summed over prompts (as the SpecDec++
evaluation divides total tokens by total time).

**Exact, not Monte Carlo.**  For a policy whose draft length depends only on
the start position (fixed, threshold) the law of the round starts is
propagated forward by dynamic programming over positions, :math:`O(n\,K)`;
the heuristic adds its current :math:`\gamma` to the state,
:math:`O(n\,K^2)`.  All reported numbers are exact expectations under the
model.  The model's approximation: after an accepted token the drafted
context is taken to be the recorded continuation (sampled from :math:`p`),
whereas a real accepted draft token has law :math:`\min(p, q)/\beta`.

References
----------
.. [1] Huang, Guo, Wang. "SpecDec++: Boosting Speculative Decoding via
   Adaptive Candidate Lengths". COLM 2025, arXiv:2405.19715.
.. [2] Leviathan, Kalman, Matias. "Fast Inference from Transformers via
   Speculative Decoding". ICML 2023, arXiv:2211.17192.
.. [3] Yan et al. "Scaling Laws for Speculative Decoding" (Scylla),
   arXiv:2505.07858.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError
from .._validate import check_positive_int, real_array
from ..solvers._result import SolverResult

__all__ = [
    "Fixed",
    "Heuristic",
    "PolicyResult",
    "Threshold",
    "binned_acceptance_law",
    "compare_policies",
    "oracle_threshold",
    "simulate_policy",
]


@dataclass(frozen=True)
class Fixed:
    """Draft ``gamma`` tokens every round (capped by the end of the continuation)."""

    gamma: int

    def __post_init__(self):
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, numbers.Integral):
            raise InvalidParameterError(f"gamma must be an integer >= 0; got {self.gamma!r}")
        if self.gamma < 0:
            raise InvalidParameterError(f"gamma must be >= 0; got {self.gamma}")

    @property
    def name(self) -> str:
        return f"fixed(gamma={self.gamma})"


@dataclass(frozen=True)
class Heuristic:
    """Hugging Face schedule: ``+2`` after a fully accepted round, else ``max(1, g - 1)``."""

    start: int = 5

    def __post_init__(self):
        check_positive_int(self.start, "start")

    @property
    def name(self) -> str:
        return f"heuristic(start={self.start})"


@dataclass(frozen=True)
class Threshold:
    r"""Stop iff :math:`1 - \prod_{i<k} a_{s+i} \ge h`.

    Attributes
    ----------
    h : float
    predicted : sequence of ndarray, optional
        Per-prompt predicted acceptances :math:`\hat\beta` (same shapes as the
        acceptances); ``None`` uses the true :math:`\beta` (the oracle).
    label : str
        Shown in :attr:`name`.
    """

    h: float
    predicted: tuple | None = None
    label: str = ""

    def __post_init__(self):
        if isinstance(self.h, bool) or not isinstance(self.h, numbers.Real):
            raise InvalidParameterError(f"h must be a real number; got {self.h!r}")
        if not math.isfinite(float(self.h)):  # float(): np.isfinite refuses a Fraction
            raise InvalidParameterError(f"h must be finite; got {self.h!r}")

    @property
    def name(self) -> str:
        kind = self.label or ("oracle" if self.predicted is None else "head")
        return f"{kind}(h={float(self.h):.4g})"


@dataclass(frozen=True)
class PolicyResult(SolverResult):
    """Exact expected performance of one policy on a set of continuations.

    The shared fields (``method``, ``status``, ``message``, ``inputs``) come
    from :class:`~spectheory.solvers.SolverResult`.

    Attributes
    ----------
    policy : str
    c : float
        Cost ratio :math:`t_d / t_t`.
    speedup : float
        :math:`S = 1 / (c (1 + r_{discard}) + (1 - c) r_{verify})`.
    discard_rate, verify_rate : float
        :math:`E[N_{discard}]/N` and :math:`E[N_{target}]/N`.
    tokens_per_round : float
        :math:`N / E[N_{target}]`.
    drafts_per_round : float
        :math:`E[N_{draft}] / E[N_{target}]`.
    tokens, rounds, discards, drafts : float
        :math:`N` and the expected totals.
    method : str
        ``"position_dp"`` (dynamic programming over round starts, fixed and
        threshold policies) or ``"position_gamma_dp"`` (over round starts and
        the current draft length, the heuristic).
    status : str
        ``"exact"``: exact expectations, nothing sampled or optimised.
    inputs : dict
        ``c`` and ``k_max`` (``policy`` is named by the field ``policy``).
    """

    policy: str
    c: float
    speedup: float
    discard_rate: float
    verify_rate: float
    tokens_per_round: float
    drafts_per_round: float
    tokens: float
    rounds: float
    discards: float
    drafts: float


def _as_sequences(beta, name="beta"):
    """Per-prompt float64 arrays in [0, 1] from an AcceptanceProfile or a sequence."""
    seqs = getattr(beta, "beta", beta)
    if isinstance(seqs, np.ndarray) and seqs.ndim == 1:
        seqs = [seqs]
    out = []
    for j, b in enumerate(seqs):
        # Entry by entry: a bool or a string ("0.5") is refused, not coerced to a number.
        arr = real_array(b, f"{name}[{j}]")
        if arr.ndim != 1 or arr.size == 0:
            raise InvalidParameterError(
                f"{name}[{j}] must be a non-empty 1-D array; got shape {arr.shape}"
            )
        bad = ~np.isfinite(arr) | (arr < 0) | (arr > 1)
        if bad.any():
            i = int(np.argmax(bad))
            raise InvalidParameterError(
                f"{name}[{j}] must lie in [0, 1]; got {float(arr[i])!r} at position {i}"
            )
        out.append(arr)
    if not out:
        raise InvalidParameterError(f"{name} must hold at least one sequence")
    return out


def _check_c(c):
    # math.isfinite(float(c)): np.isfinite raised a bare TypeError on a Fraction.
    if (
        isinstance(c, bool)
        or not isinstance(c, numbers.Real)
        or not math.isfinite(float(c))
        or c < 0
    ):
        raise InvalidParameterError(f"c must be a finite number >= 0; got {c!r}")
    return float(c)


def _outcome_probs(b, s, g):
    """P(m accepted), m = 0..g, for a round drafting g tokens from position s."""
    P = np.concatenate([[1.0], np.cumprod(b[s : s + g])])  # P_0..P_g
    probs = np.empty(g + 1)
    probs[:g] = P[:g] * (1.0 - b[s : s + g])
    probs[g] = P[g]
    return probs


def _schedule(policy, b, pred, k_max):
    """Draft length at each start position for position-only policies."""
    n = b.size
    cap = np.minimum(k_max, n - 1 - np.arange(n))
    if isinstance(policy, Fixed):
        return np.minimum(policy.gamma, cap)
    a = b if pred is None else pred
    g = np.empty(n, dtype=np.int64)
    h = float(policy.h)
    for s in range(n):
        # P after k tokens: prod a[s:s+k]; stop at the first k with 1 - P >= h.
        P = np.concatenate([[1.0], np.cumprod(a[s : s + cap[s]])])
        hit = np.flatnonzero(1.0 - P >= h)
        g[s] = hit[0] if hit.size else cap[s]
    return g


def _run_positional(b, g):
    n = b.size
    f = np.zeros(n + 1)
    f[0] = 1.0
    rounds = discards = drafts = 0.0
    for s in range(n):
        w = f[s]
        if w == 0.0:
            continue
        k = int(g[s])
        probs = _outcome_probs(b, s, k)
        m = np.arange(k + 1)
        f[s + 1 : s + k + 2] += w * probs
        rounds += w
        drafts += w * k
        discards += w * float(np.dot(probs, k - m))
    return rounds, discards, drafts


def _run_heuristic(b, start, k_max):
    n = b.size
    G = max(k_max, start) + 1
    f = np.zeros((n + 1, G + 1))
    f[0, min(start, k_max)] = 1.0
    rounds = discards = drafts = 0.0
    for s in range(n):
        live = np.flatnonzero(f[s])
        if live.size == 0:
            continue
        K = int(min(k_max, n - 1 - s))
        P = np.concatenate([[1.0], np.cumprod(b[s : s + K])])  # P_0..P_K
        stop = P[:K] * (1.0 - b[s : s + K])  # P(exactly m accepted, m-th+1 rejected)
        for gcur in live:
            w = f[s, gcur]
            k = int(min(gcur, K))
            probs = np.append(stop[:k], P[k])
            rounds += w
            drafts += w * k
            discards += w * float(np.dot(probs, k - np.arange(k + 1)))
            down, up = max(1, gcur - 1), min(gcur + 2, k_max)
            f[s + 1 : s + k + 1, down] += w * probs[:k]
            # all k drafted accepted: +2 only if k is the whole schedule (not cut by the end)
            f[s + k + 1, up if k == gcur else down] += w * probs[k]
    return rounds, discards, drafts


def simulate_policy(beta, policy, c, *, k_max=25) -> PolicyResult:
    r"""Exact expected speedup, discard and verification rates of one policy.

    Parameters
    ----------
    beta : AcceptanceProfile or sequence of array_like in [0, 1]
        Per-prompt acceptances :math:`\beta_t` along each continuation.
    policy : Fixed, Heuristic or Threshold
    c : float >= 0
        Cost ratio :math:`t_d / t_t`.
    k_max : int >= 1
        Most tokens drafted in one round.

    Returns
    -------
    PolicyResult

    Examples
    --------
    One prompt of three positions, every token accepted with probability
    1/2, :math:`\gamma = 1`: a round starts at 0 surely, at 1 with
    probability 1/2 and at 2 with probability 3/4 (the last position drafts
    nothing), so :math:`E[N_{target}] = 2.25`; the first two rounds discard
    their token with probability 1/2 each, :math:`E[N_{discard}] = 0.75`:

    >>> r = simulate_policy([[0.5, 0.5, 0.5]], Fixed(1), 0.0)
    >>> r.rounds, r.tokens, r.discards
    (2.25, 3.0, 0.75)
    """
    seqs = _as_sequences(beta)
    c = _check_c(c)
    k_max = check_positive_int(k_max, "k_max")
    preds = None
    if isinstance(policy, Threshold) and policy.predicted is not None:
        preds = _as_sequences(policy.predicted, "policy.predicted")
        if len(preds) != len(seqs) or any(p.shape != b.shape for p, b in zip(preds, seqs)):
            raise InvalidParameterError(
                "policy.predicted must have one array per prompt with the shapes of beta; got "
                f"{[p.shape for p in preds]} for {[b.shape for b in seqs]}"
            )
    elif not isinstance(policy, (Fixed, Heuristic, Threshold)):
        raise InvalidParameterError(
            f"policy must be Fixed, Heuristic or Threshold; got {type(policy).__name__}"
        )
    N = rounds = discards = drafts = 0.0
    for j, b in enumerate(seqs):
        if isinstance(policy, Heuristic):
            r, d, k = _run_heuristic(b, policy.start, k_max)
        else:
            g = _schedule(policy, b, None if preds is None else preds[j], k_max)
            r, d, k = _run_positional(b, g)
        N += b.size
        rounds += r
        discards += d
        drafts += k
    r_v, r_d = rounds / N, discards / N
    return PolicyResult(
        policy=policy.name,
        c=c,
        speedup=float(1.0 / (c * (1.0 + r_d) + (1.0 - c) * r_v)),
        discard_rate=float(r_d),
        verify_rate=float(r_v),
        tokens_per_round=float(N / rounds),
        drafts_per_round=float(drafts / rounds),
        tokens=float(N),
        rounds=float(rounds),
        discards=float(discards),
        drafts=float(drafts),
        method="position_gamma_dp" if isinstance(policy, Heuristic) else "position_dp",
        status="exact",
        message=f"exact expectations over {len(seqs)} continuations, {int(N)} positions",
        inputs={"c": c, "k_max": k_max},
    )


def binned_acceptance_law(beta, bins: int = 5):
    r"""Empirical law of :math:`\beta` on ``bins`` quantile bins, for the MDP solver.

    The positions are sorted by :math:`\beta` and cut into ``bins`` groups of
    (nearly) equal size; each group is represented by its mean, with
    probability equal to its share.  The mean of the law equals the mean of
    :math:`\beta` exactly.

    Returns
    -------
    dict {value: probability}

    Examples
    --------
    >>> binned_acceptance_law([[0.1, 0.2, 0.9, 1.0]], bins=2)
    {0.15: 0.5, 0.95: 0.5}
    """
    vals = np.sort(np.concatenate(_as_sequences(beta)))
    bins = check_positive_int(bins, "bins")
    law: dict = {}
    for chunk in np.array_split(vals, min(bins, vals.size)):
        v = round(float(chunk.mean()), 15)
        law[v] = law.get(v, 0.0) + chunk.size / vals.size
    return law


def oracle_threshold(beta, c, *, bins: int = 5, k_max: int = 25) -> float:
    r"""Threshold ``h`` of the optimal SpecDec++ policy for the empirical law of :math:`\beta`.

    Solves the average-cost MDP of docs/theory.md §5.4
    (:func:`spectheory.solvers.specdecpp.solve_specdecpp`) with i.i.d.
    acceptances drawn from :func:`binned_acceptance_law` and returns its
    threshold on :math:`1 - P`: the midpoint of the solver's interval
    ``(lo, hi]`` of thresholds that reproduce the optimal policy (its right
    end ``hi`` is itself a value of :math:`1 - P`, where a product computed in
    another order can fall one rounding error short), or ``hi`` when ``lo``
    is infinite.

    Parameters
    ----------
    beta : AcceptanceProfile or sequence of array_like in [0, 1]
    c : float >= 0
    bins : int >= 1
        Quantile bins of :func:`binned_acceptance_law` (the solver's states
        grow as :math:`\binom{K_{max} + bins}{bins}`).
    k_max : int >= 1

    Returns
    -------
    float
    """
    from ..solvers.specdecpp import solve_specdecpp

    res = solve_specdecpp(binned_acceptance_law(beta, bins), _check_c(c), k_max=k_max)
    lo, hi = (float(x) for x in res.threshold_interval)
    if np.isfinite(lo) and np.isfinite(hi):
        return 0.5 * (lo + hi)
    return hi if np.isfinite(hi) else 1.0 + 1e-9  # continues everywhere: never stop


def compare_policies(
    beta,
    c,
    *,
    gammas=range(1, 13),
    heuristic_start=5,
    oracle_h=None,
    h_grid=None,
    predicted=None,
    head_h=None,
    k_max=25,
):
    r"""Every policy on the same continuations at cost ratio ``c``.

    Parameters
    ----------
    beta : AcceptanceProfile or sequence of array_like
    c : float >= 0
    gammas : iterable of int
        Fixed lengths.
    heuristic_start : int
    oracle_h : float, optional
        Threshold of the oracle policy; default :func:`oracle_threshold` on
        ``beta`` (pass one computed on other prompts to keep it out of sample).
    h_grid : array_like, optional
        Thresholds swept for the oracle and the head (default 0.05..0.95).
    predicted : sequence of ndarray, optional
        Head predictions :math:`\hat\beta`; adds the head policy.
    head_h : float, optional
        The head's chosen threshold (e.g. tuned on training prompts).

    Returns
    -------
    dict
        ``"fixed"``: list of PolicyResult; ``"best_fixed"``; ``"heuristic"``;
        ``"oracle"`` (at ``oracle_h``); ``"oracle_sweep"``: list over
        ``h_grid``; and with ``predicted``: ``"head_sweep"``, ``"head"`` (at
        ``head_h``, if given).
    """
    c = _check_c(c)
    h_grid = np.linspace(0.05, 0.95, 19) if h_grid is None else np.asarray(h_grid, float)
    out = {"c": c}
    # Fixed(g) checks g: int(g) ran 2.7 as 2 under the name 2.7
    out["fixed"] = [simulate_policy(beta, Fixed(g), c, k_max=k_max) for g in gammas]
    out["best_fixed"] = max(out["fixed"], key=lambda r: r.speedup)
    out["heuristic"] = simulate_policy(beta, Heuristic(heuristic_start), c, k_max=k_max)
    h = oracle_threshold(beta, c, k_max=k_max) if oracle_h is None else float(oracle_h)
    out["oracle"] = simulate_policy(beta, Threshold(h), c, k_max=k_max)
    out["oracle_sweep"] = [
        simulate_policy(beta, Threshold(float(x)), c, k_max=k_max) for x in h_grid
    ]
    if predicted is not None:
        pred = tuple(real_array(p, f"predicted[{j}]") for j, p in enumerate(predicted))
        out["head_sweep"] = [
            simulate_policy(beta, Threshold(float(x), pred), c, k_max=k_max) for x in h_grid
        ]
        if head_h is not None:
            out["head"] = simulate_policy(beta, Threshold(float(head_h), pred), c, k_max=k_max)
    return out
