r"""Monte Carlo simulation of a verifier: draft, verify, many trials per position.

For every row ``b`` (a position: target ``p_b``, draft ``q_b``) and trial ``t``,
draw ``n`` drafts :math:`\bar x_{bt}` from ``q_b`` under the draft law, run the
verifier and record its output token :math:`y_{bt}`.  The empirical
membership acceptance of row ``b`` is
:math:`\hat\alpha_b = \frac1T \sum_t \mathbb 1[y_{bt} \in \bar x_{bt}]`.

Randomness
----------
All randomness is drawn up front in numpy from
``numpy.random.default_rng(seed)``, in a fixed layout: first the draft
uniforms, shape (B, T, n) (one per draft; one per trial for the greedy law),
then the verifier uniforms, shape (B, T, K) with ``K`` the most coins the
verifier can consume in a trial.  The numba kernels
(:mod:`spectheory.sim._kernels`) read trial ``(b, t)``'s uniforms in the
order the reference verifier consumes coins, so the result is reproducible,
independent of the number of numba threads, and equal, trial by trial, to the
reference verifier run with :class:`spectheory.coins.ReplayCoins` on the same
uniforms (see :mod:`spectheory.sim._kernels` for the one caveat: for ``nss``
and drafts without replacement a uniform within about :math:`V\epsilon/Z` of a
boundary of the cumulative law may round differently).

``khisti`` and ``optimal_lp`` (one transport LP per instance) and user
callables have no kernel: their drafts still come from the draft kernel, and
the verifier runs in Python, trial by trial: a registered verifier with
:class:`spectheory.coins.RandomCoins` on a generator seeded from ``seed``
(or with ``ReplayCoins(uniforms[b, t])`` when ``uniforms`` is given), a user
callable ``fn(target, draft, drafts, rng) -> int`` with that generator.

Examples
--------
>>> r = simulate("rrs", [0.3, 0.4, 0.3], [0.6, 0.3, 0.1], n=2, trials=20_000, seed=1)
>>> r.tokens.shape, r.drafts.shape
((1, 20000), (1, 20000, 2))
>>> round(r.mean_acceptance, 2)  # exact (docs/theory.md §3.1): 1 - (1 - 0.7)(1 - 0.4) = 0.82
0.82
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError, ShapeMismatchError
from .._validate import as_distribution_pair, check_choice, check_positive_int
from ..coins import RandomCoins, ReplayCoins
from ..drafting import SAMPLINGS, check_draft_support
from . import _kernels

__all__ = ["SimulationResult", "simulate"]


@dataclass(frozen=True)
class SimulationResult:
    """Result of :func:`simulate`.

    Attributes
    ----------
    verifier : str
        Registry name, or the callable's ``__name__``.
    n : int
    sampling : str
    tokens : ndarray of int64, shape (B, T)
        Output token of every (row, trial); ``B = 1`` for 1-D input.
    drafts : ndarray of int64, shape (B, T, n)
        Drafts in draw order.
    accepted : ndarray of bool, shape (B, T)
        Membership: ``tokens[b, t] in drafts[b, t]``.
    acceptance : ndarray of float64, shape (B,)
        Empirical membership acceptance per row.
    mean_acceptance : float
        Mean of ``acceptance`` over rows.
    engine : str
        ``"numba"`` (kernel) or ``"reference"`` (Python verifier).
    """

    verifier: str
    n: int
    sampling: str
    tokens: np.ndarray
    drafts: np.ndarray
    accepted: np.ndarray
    acceptance: np.ndarray
    mean_acceptance: float
    engine: str


def _check_uniforms(u, shape, name):
    """``u`` as float64 of exactly ``shape`` with values in [0, 1), or raise."""
    arr = np.asarray(u, dtype=np.float64)
    if arr.shape != shape:
        raise ShapeMismatchError(f"{name} must have shape {shape}; got {arr.shape}")
    bad = ~((arr >= 0) & (arr < 1))
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidParameterError(f"{name}[{idx}] = {arr[idx]!r} is not in [0, 1)")
    return np.ascontiguousarray(arr)


def _resolve(verifier, n, sampling):
    """(name, Verifier or None, user callable or None, sampling) after the registry checks."""
    from ..verifiers import Verifier
    from ..verifiers._api import check_verifier_law

    if callable(verifier) and not isinstance(verifier, str | Verifier):
        check_choice(sampling, "sampling", SAMPLINGS)
        return getattr(verifier, "__name__", repr(verifier)), None, verifier, sampling
    v, sampling = check_verifier_law(verifier, n, sampling)
    return v.name, v, None, sampling


def simulate(
    verifier,
    target,
    draft,
    n: int = 1,
    sampling: str | None = "iid",
    *,
    trials: int = 1000,
    seed=0,
    uniforms=None,
    draft_uniforms=None,
) -> SimulationResult:
    """Sample drafts and run a verifier ``trials`` times per position.

    Parameters
    ----------
    verifier : str, Verifier or callable
        A registry name (:data:`spectheory.verifiers.REGISTRY`), or a callable
        ``fn(target, draft, drafts, rng) -> int`` (1-D float64 rows, int64
        drafts in draw order, a :class:`numpy.random.Generator`).
    target, draft : array_like, shape (V,) or (B, V)
        Target ``p`` and draft ``q`` (checked and renormalised as everywhere
        in spectheory; float16/32 accepted and converted to float64).
    n : int
        Number of drafts.
    sampling : {"iid", "without_replacement", "greedy"} or None
        Draft law; None picks the verifier's first valid law.
    trials : int
        Trials ``T`` per row.
    seed : int, numpy.random.Generator or None
        Seed of all the uniforms (:func:`numpy.random.default_rng`).
    uniforms : array_like, shape (B, T, K), optional
        Verifier uniforms in [0, 1) instead of seeded ones; ``K`` is
        ``_kernels.verifier_uniforms(name, n)`` for verifiers with a kernel,
        and at least the coins consumed for ``khisti``/``optimal_lp``.  Not
        accepted with a user callable.
    draft_uniforms : array_like, shape (B, T, n) (greedy: (B, T, 1)), optional
        Draft uniforms in [0, 1) instead of seeded ones.

    Returns
    -------
    SimulationResult

    Raises
    ------
    InvalidParameterError
        Unknown verifier, a draft law or ``n`` it does not support, ``n`` or
        ``trials`` not a positive integer, uniforms outside [0, 1).
    InvalidDistributionError, ShapeMismatchError
        Bad target or draft, or uniforms of the wrong shape.
    """
    n = check_positive_int(n, "n")
    trials = check_positive_int(trials, "trials")
    name, v, user, sampling = _resolve(verifier, n, sampling)
    p, q, _ = as_distribution_pair(target, draft)
    check_draft_support(q, n, sampling, True)
    p = np.ascontiguousarray(p)
    q = np.ascontiguousarray(q)
    B, V = p.shape
    kernel = v is not None and name in _kernels.KERNEL_VERIFIERS
    if user is not None and uniforms is not None:
        raise InvalidParameterError(
            "uniforms cannot drive a user callable (it draws from a numpy Generator); "
            "pass seed instead"
        )

    rng = np.random.default_rng(seed)
    kd = _kernels.draft_uniforms(n, sampling)
    if draft_uniforms is None:
        du = rng.random((B, trials, kd))
    else:
        du = _check_uniforms(draft_uniforms, (B, trials, kd), "draft_uniforms")
    if kernel:
        shape = (B, trials, _kernels.verifier_uniforms(name, n))
        u = rng.random(shape) if uniforms is None else _check_uniforms(uniforms, shape, "uniforms")
    elif uniforms is not None:
        u = np.asarray(uniforms, dtype=np.float64)
        if u.ndim != 3 or u.shape[:2] != (B, trials):
            raise ShapeMismatchError(f"uniforms must have shape ({B}, {trials}, K); got {u.shape}")
        u = _check_uniforms(u, u.shape, "uniforms")

    drafts = _kernels.draw_drafts(q, n, sampling, du)
    if kernel:
        tokens = np.empty((B, trials), dtype=np.int64)
        # Bound the per-row tables (the RRS chain is (n, V) per row) to ~128 MB.
        step = max(1, 2**24 // ((n + 4) * V))
        for s in range(0, B, step):
            e = min(B, s + step)
            tokens[s:e] = _kernels.run_verifier(name, p[s:e], q[s:e], drafts[s:e], u[s:e])
        engine = "numba"
    else:
        tokens = np.empty((B, trials), dtype=np.int64)
        for b in range(B):
            for t in range(trials):
                d = drafts[b, t]
                if user is not None:
                    y = int(user(p[b], q[b], d.copy(), rng))
                else:
                    coins = RandomCoins(rng) if uniforms is None else ReplayCoins(u[b, t])
                    y = v.function(p[b], q[b], tuple(int(x) for x in d), coins, sampling=sampling)
                if not 0 <= y < V:
                    raise InvalidParameterError(
                        f"verifier {name!r} returned token {y}, outside [0, {V})"
                    )
                tokens[b, t] = y
        engine = "reference"
    accepted = (drafts == tokens[:, :, None]).any(axis=2)
    acceptance = accepted.mean(axis=1)
    return SimulationResult(
        verifier=name,
        n=n,
        sampling=sampling,
        tokens=tokens,
        drafts=drafts,
        accepted=accepted,
        acceptance=acceptance,
        mean_acceptance=float(acceptance.mean()),
        engine=engine,
    )
