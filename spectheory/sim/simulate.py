r"""Monte Carlo simulation of a verifier: draft, verify, many trials per position.

For every row ``b`` (a position: target ``p_b``, draft ``q_b``) and trial ``t``,
draw ``n`` drafts :math:`\bar x_{bt}` from ``q_b`` under the draft law, run the
verifier and record its output token :math:`y_{bt}`.  The empirical
membership acceptance of row ``b`` is
:math:`\hat\alpha_b = \frac1T \sum_t \mathbb 1[y_{bt} \in \bar x_{bt}]`.

Randomness
----------
All randomness is drawn up front in numpy from the one generator ``rng``
(:func:`spectheory._validate.check_rng`), in a fixed layout: first the draft
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

A verifier runs its numba kernel only when its record's function is the very
function the kernel implements (:class:`spectheory.verifiers.Verifier`
checks it): dispatch by identity, never by name, so a user's verifier named
``"rrs"`` runs its own code.  ``khisti`` and ``optimal_lp`` (one transport LP
per instance) and user verifiers have no kernel: their drafts still come from
the draft kernel, and the verifier runs in Python, trial by trial
(:func:`reference_tokens`): a coins-protocol verifier with
:class:`spectheory.coins.RandomCoins` on the generator after the drafts'
uniforms (or with ``ReplayCoins(uniforms[b, t])`` when ``uniforms`` is
given), a black box ``fn(target, draft, drafts, rng) -> int`` with that
generator.

Examples
--------
>>> r = simulate("rrs", [0.3, 0.4, 0.3], [0.6, 0.3, 0.1], n=2, trials=20_000, rng=1)
>>> r.tokens.shape, r.drafts.shape
((1, 20000), (1, 20000, 2))
>>> round(r.mean_acceptance, 2)  # exact (docs/theory.md §3.1): 1 - (1 - 0.7)(1 - 0.4) = 0.82
0.82
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError, ShapeMismatchError
from .._validate import as_distribution_pair, check_positive_int, check_rng, check_uniforms
from ..coins import RandomCoins, ReplayCoins
from ..drafting import check_draft_support
from ..solvers._result import SolverResult
from . import _kernels

__all__ = ["SimulationResult", "reference_tokens", "simulate"]


def reference_tokens(v, p, q, drafts, sampling, rng, uniforms=None):
    """Output tokens (B, T) of a verifier run in Python, trial by trial.

    A coins-protocol verifier reads :class:`~spectheory.coins.RandomCoins` on
    ``rng`` (or ``ReplayCoins(uniforms[b, t])``); a black box gets ``rng``
    itself.  Every returned value is checked to be a token id of the row.
    """
    from ..verifiers._api import call_verifier

    B, T, _ = drafts.shape
    tokens = np.empty((B, T), dtype=np.int64)
    coins = RandomCoins(rng)
    for b in range(B):
        for t in range(T):
            if v.protocol == "blackbox":
                randomness = rng
            else:
                randomness = coins if uniforms is None else ReplayCoins(uniforms[b, t])
            tokens[b, t] = call_verifier(v, p[b], q[b], drafts[b, t], randomness, sampling, b)
    return tokens


@dataclass(frozen=True)
class SimulationResult(SolverResult):
    """Result of :func:`simulate` (the shared fields: :class:`~spectheory.solvers.SolverResult`).

    Attributes
    ----------
    verifier : str
        The verifier's name (a function's ``__name__``).
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
    method, status, message, inputs
        ``"monte_carlo"``; ``"sampled"`` (estimates with sampling error);
        the message names the engine and the source of the uniforms;
        ``inputs`` holds ``n``, ``sampling`` (resolved), ``trials`` and ``rng``
        (when it is an int seed).
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


def _resolve(verifier, n, sampling):
    """The :class:`~spectheory.verifiers.Verifier` and the draft law, after the registry checks."""
    from ..verifiers._api import check_verifier_law

    return check_verifier_law(verifier, n, sampling)


def _rng(rng, seed):
    """The one Generator of a call: ``rng``, or its alias ``seed``; not both."""
    if seed is not None:
        if rng is not None:
            raise InvalidParameterError("pass rng or seed (an alias of rng), not both")
        return check_rng(seed, "seed")
    return check_rng(0 if rng is None else rng, "rng")


def simulate(
    verifier,
    target,
    draft,
    n: int = 1,
    sampling: str | None = None,
    *,
    trials: int = 1000,
    rng=None,
    uniforms=None,
    draft_uniforms=None,
    seed=None,
) -> SimulationResult:
    """Sample drafts and run a verifier ``trials`` times per position.

    Parameters
    ----------
    verifier : str, Verifier or function
        A registry name (:data:`spectheory.verifiers.REGISTRY`), a record, or a
        function: on the coins protocol ``fn(p, q, drafts, coins, *,
        sampling)``, or a black box ``fn(target, draft, drafts, rng) -> int``
        (1-D float64 rows, int64 drafts in draw order, a
        :class:`numpy.random.Generator`); see :func:`spectheory.verifiers.as_verifier`.
        The numba kernel runs only when the record's function is the one the
        kernel implements (dispatch by identity, never by name).
    target, draft : array_like, shape (V,) or (B, V)
        Target ``p`` and draft ``q`` (checked and renormalised as everywhere
        in spectheory; float16/32 accepted and converted to float64).
    n : int
        Number of drafts.
    sampling : {"iid", "without_replacement", "greedy"} or None
        Draft law; None (default) picks the verifier's first valid law.
    trials : int
        Trials ``T`` per row.
    rng : int, numpy.random.Generator, SeedSequence or None
        Source of all the uniforms (:func:`spectheory._validate.check_rng`);
        None means seed 0, so that a simulation is reproducible by default.
        Refused with both ``uniforms`` and ``draft_uniforms``, which leave it
        nothing to draw.
    uniforms : array_like, shape (B, T, K), optional
        Verifier uniforms in [0, 1) instead of drawn ones; ``K`` is the
        record's ``uniforms(n)`` for verifiers with a kernel, and at least the
        coins consumed for coins-protocol verifiers without one.  Not accepted
        with a black box.
    draft_uniforms : array_like, shape (B, T, n) (greedy: (B, T, 1)), optional
        Draft uniforms in [0, 1) instead of drawn ones.
    seed : optional
        Alias of ``rng`` (kept for old calls); pass one of the two.

    Returns
    -------
    SimulationResult

    Raises
    ------
    InvalidParameterError
        Unknown verifier, a draft law or ``n`` it does not support, ``n`` or
        ``trials`` not a positive integer, uniforms outside [0, 1), a bad
        ``rng`` (or one given with both kinds of uniforms), a verifier that
        returns something other than a token id.
    InvalidDistributionError, ShapeMismatchError
        Bad target or draft, or uniforms of the wrong shape.
    """
    n = check_positive_int(n, "n")
    trials = check_positive_int(trials, "trials")
    v, sampling = _resolve(verifier, n, sampling)
    name = v.name
    seed_in = rng if seed is None else seed
    gen = _rng(rng, seed)
    p, q, _ = as_distribution_pair(target, draft)
    check_draft_support(q, n, sampling, True)
    p = np.ascontiguousarray(p)
    q = np.ascontiguousarray(q)
    B, V = p.shape
    kernel = v.kernel is not None  # the record guarantees the kernel implements v.function
    blackbox = v.protocol == "blackbox"
    if blackbox and uniforms is not None:
        raise InvalidParameterError(
            f"uniforms cannot drive the black-box verifier {name!r} (it draws from a numpy "
            "Generator); pass rng instead"
        )

    if uniforms is not None and draft_uniforms is not None and seed_in is not None:
        raise InvalidParameterError(
            f"{'rng' if seed is None else 'seed'}={seed_in!r} would be ignored: uniforms and "
            "draft_uniforms together fix every random number of the simulation; pass rng "
            "with at most one of them"
        )
    kd = _kernels.draft_uniforms(n, sampling)
    if draft_uniforms is None:
        du = gen.random((B, trials, kd))
    else:
        du = check_uniforms(draft_uniforms, (B, trials, kd), "draft_uniforms")
    if kernel:
        shape = (B, trials, v.uniforms(n))
        u = gen.random(shape) if uniforms is None else check_uniforms(uniforms, shape, "uniforms")
    elif uniforms is not None:
        u = np.asarray(uniforms, dtype=np.float64)
        if u.ndim != 3 or u.shape[:2] != (B, trials):
            raise ShapeMismatchError(f"uniforms must have shape ({B}, {trials}, K); got {u.shape}")
        u = check_uniforms(u, u.shape, "uniforms")

    drafts = _kernels.draw_drafts(q, n, sampling, du)
    if kernel:
        tokens = np.empty((B, trials), dtype=np.int64)
        # Bound the per-row tables (the RRS chain is (n, V) per row) to ~128 MB.
        step = max(1, 2**24 // ((n + 4) * V))
        for s in range(0, B, step):
            e = min(B, s + step)
            tokens[s:e] = _kernels.run_verifier(v.kernel, p[s:e], q[s:e], drafts[s:e], u[s:e],
                                                sampling)  # fmt: skip
        engine = "numba"
    else:
        tokens = reference_tokens(v, p, q, drafts, sampling, gen, None if uniforms is None else u)
        engine = "reference"
    given = uniforms is not None or draft_uniforms is not None
    origin = "given by the caller" if given else "drawn from rng"
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
        method="monte_carlo",
        status="sampled",
        message=f"{trials} trials per row by the {engine} engine, uniforms {origin}",
        inputs={"n": n, "sampling": sampling, "trials": trials}
        | ({"rng": seed_in} if isinstance(seed_in, int) else {}),
    )
