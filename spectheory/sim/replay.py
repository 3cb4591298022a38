r"""Replay a recorded trace through verifiers: bound, exact and Monte Carlo acceptance.

For every trace position and every combination of draft model, temperature,
number of drafts ``n`` and draft law, the tidy table holds one row per
verifier with

* ``lossless``: the verifier's *declared* flag (:class:`~spectheory.Verifier`),
  not a result: True for a function of yours unless declared otherwise
  (``@verifier(lossless=False)``); the outputs' evidence is ``chi2_p``,
  ``impossible`` and ``pit_mean``, verdicts come from :func:`spectheory.check_lossless`;
* ``bound``: the optimal acceptance :math:`\alpha^*` (:func:`spectheory.bound`);
* ``exact``: the verifier's closed-form acceptance (docs/theory.md §3.0) where one
  exists for that draft law, else empty (a value outside [0, 1] raises
  :class:`~spectheory.VerifierError`, as in :func:`spectheory.acceptance`);
* ``mc``, ``mc_low``, ``mc_high``: the Monte Carlo membership acceptance over
  ``trials`` trials (:func:`spectheory.simulate`) and its 95% Wilson interval;
* ``chi2_p``: Pearson's chi-square p-value of the outputs against the target
  (0 when any output has target probability 0; the asymptotic p-value, a
  screening column: far in the tail it overstates significance, and verdicts
  come from :func:`spectheory.check_lossless`), ``impossible``: the number of
  such outputs (0 for a lossless verifier), and ``pit_mean``, the mean of
  the randomised probability integral transforms (1/2 under losslessness;
  pooled tests:
  :func:`spectheory.check_lossless`).

:func:`replay` is a serial :func:`spectheory.sim.sweep` over a trace held in
memory: both build their rows with :func:`config_rows`, where every random
number of global position :math:`g`, verifier :math:`v` and configuration
:math:`c` comes from its own stream ``numpy.random.default_rng([seed,
*h(c, v), g])`` (:func:`stream_words`).  So for the same seed the table does
not depend on the chunk size, on which positions are replayed with it, on the
other configurations, nor on how a sweep shards the trace: ``replay(trace)``
equals ``sweep(shard_trace(trace))`` without its ``shard`` column.

Verifiers may be any registered name, record or function
(:func:`spectheory.verifiers.as_verifier`): one with a numba kernel runs on
it, any other (``khisti``, ``optimal_lp``, a user's coins-protocol or
black-box function) runs in Python position by position on the same streams,
with the same columns.  Positions whose draft has fewer than ``n`` tokens of
positive probability are skipped for the laws that need them
(``without_replacement``, ``greedy``).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import InvalidParameterError
from .._validate import check_positive_int, integer_vector
from ..distributions import process_logits
from ..drafting import SAMPLINGS
from ..exact._law import _closed_value
from ..solvers.ot_dual import solve_bound
from ..verifiers._registry import Verifier, as_verifier, builtin_names
from . import _kernels
from ._stats import chisquare_gof, wilson_interval
from .check import _row_test
from .simulate import simulate

__all__ = [
    "COLUMNS",
    "REPLAY_VERIFIERS",
    "common_positions",
    "config_rows",
    "replay",
    "stream_words",
    "write_csv",
]

#: Verifiers replayed by default: every built-in one with a numba kernel (from the registry).
REPLAY_VERIFIERS = builtin_names("kernel")

#: Columns of the tidy table, in order.
COLUMNS = (
    "position", "prompt_id", "step", "draft", "temperature", "n", "sampling", "verifier",
    "lossless", "bound", "exact", "mc", "mc_low", "mc_high", "trials", "chi2_p", "impossible",
    "pit_mean",
)  # fmt: skip


def common_positions(table) -> dict:
    """Positions replayed under every draft law and every n, per ``(draft, temperature, n)``.

    Without replacement (and greedy) are defined only where the draft's support
    has at least n tokens, so a replay has fewer positions for them than for
    i.i.d., and fewer for larger n.  Averages over different positions cannot
    be compared: the theory's orderings (alpha*_wor >= alpha*_iid, alpha*
    non-decreasing in n) hold position by position, not between averages over
    different sets (an n-gram draft's curve against n once fell from n = 1 to
    n = 2 because n = 1 averaged every position and n = 2 only those with two
    tokens of support).  So for each draft and temperature the positions
    compared are those replayed under every law and every n; every n of that
    draft and temperature maps to the same set.

    Parameters
    ----------
    table : list of dict
        Rows of :func:`spectheory.sim.replay.replay` (keys ``draft``,
        ``temperature``, ``n``, ``sampling``, ``position``).

    Returns
    -------
    dict {(draft, temperature, n): frozenset of int}

    Examples
    --------
    >>> t = [{"draft": "d", "temperature": 1.0, "n": n, "sampling": s, "position": i}
    ...      for n, s, ps in ((1, "iid", (0, 1, 2)), (2, "iid", (0, 1, 2)),
    ...                       (2, "without_replacement", (1, 2)))
    ...      for i in ps]
    >>> sorted(common_positions(t)[("d", 1.0, 1)]), sorted(common_positions(t)[("d", 1.0, 2)])
    ([1, 2], [1, 2])
    """
    by_config: dict = {}
    for r in table:
        key = (r["draft"], r["temperature"])
        config = (r["n"], r["sampling"])
        by_config.setdefault(key, {}).setdefault(config, set()).add(int(r["position"]))
    out = {}
    for (draft, temperature), configs in by_config.items():
        shared = frozenset(set.intersection(*configs.values()))
        for n, _ in configs:
            out[(draft, temperature, n)] = shared
    return out


def _wilson(k, N):
    """95% Wilson interval of ``k`` successes in ``N`` trials (:mod:`._stats`)."""
    lo, hi = wilson_interval(k, N)
    return float(lo), float(hi)


def _applicable(name, n, sampling):
    """Whether verifier ``name`` (a name or record) supports ``n`` drafts under ``sampling``."""
    return as_verifier(name).supports(n, sampling)


def check_grid_has_work(verifiers, ns, samplings) -> None:
    """Refuse a grid in which no verifier supports any (n, draft law) pair.

    Such a replay or sweep would return an empty table, which reads like a
    result; pairs that only some verifiers support are replayed with those.
    """
    if not any(_applicable(v, n, s) for v in verifiers for n in ns for s in samplings):
        names = [getattr(v, "name", v) for v in verifiers]
        raise InvalidParameterError(
            f"no verifier of {names} supports any n in {list(ns)} with any sampling in "
            f"{list(samplings)}: nothing to replay (see each verifier's n and samplings)"
        )


def stream_words(draft, temperature, n, sampling, verifier) -> tuple[int, ...]:
    """Four 32-bit words identifying a configuration and verifier by value (seed material)."""
    blob = json.dumps([draft, float(temperature), int(n), sampling, verifier])
    digest = hashlib.sha256(blob.encode()).digest()
    return tuple(int.from_bytes(digest[4 * k : 4 * k + 4], "little") for k in range(4))


def _pit_before(p):
    """Mass of the tokens ranked before each token (descending p, ties by id), (B, V)."""
    order = np.argsort(-p, axis=1, kind="stable")
    sorted_p = np.take_along_axis(p, order, axis=1)
    before_sorted = np.cumsum(sorted_p, axis=1) - sorted_p
    before = np.empty_like(p)
    np.put_along_axis(before, order, before_sorted, axis=1)
    return before


def _target_rows(trace, loc, temperature, cache):
    """The target's rows at ``loc`` and their PIT offsets, from ``cache`` when there."""
    key = (float(temperature), loc.tobytes())
    if cache is not None and key in cache:
        return cache[key]
    p = process_logits(trace.target_logits[loc].astype(np.float64), temperature)
    out = (p, _pit_before(p))
    if cache is not None:
        cache[key] = out
    return out


def _simulate_rows(v, p, q, n, sampling, T, streams):
    """``simulate`` on rows whose randomness comes from one stream per row.

    Each stream gives, in order, the draft uniforms (T, kd), then for a kernel
    the verifier uniforms (T, K), then the T PIT uniforms; a verifier without
    a kernel then draws its own coins from the rest of its row's stream.
    Returns ``(SimulationResult-like tokens, accepted, pit uniforms)``.
    """
    B = p.shape[0]
    kd = _kernels.draft_uniforms(n, sampling)
    du, pu = np.empty((B, T, kd)), np.empty((B, T))
    if v.kernel is not None:
        u = np.empty((B, T, v.uniforms(n)))
        for b, rng in enumerate(streams):
            du[b] = rng.random((T, kd))
            u[b] = rng.random((T, u.shape[2]))
            pu[b] = rng.random(T)
        sim = simulate(v, p, q, n, sampling, trials=T, uniforms=u, draft_uniforms=du)
        return sim.tokens, sim.accepted, pu
    tokens = np.empty((B, T), dtype=np.int64)
    accepted = np.empty((B, T), dtype=bool)
    for b, rng in enumerate(streams):
        du[b] = rng.random((T, kd))
        pu[b] = rng.random(T)
        sim = simulate(v, p[b : b + 1], q[b : b + 1], n, sampling, trials=T, rng=rng,
                       draft_uniforms=du[b : b + 1])  # fmt: skip
        tokens[b], accepted[b] = sim.tokens[0], sim.accepted[0]
    return tokens, accepted, pu


def config_rows(
    trace, positions, *, start, draft, temperature, n, sampling, verifiers, trials, seed, chunk,
    extra=None, target_cache=None,
) -> list[dict]:  # fmt: skip
    """Table rows of one configuration: every verifier (in order), then every position.

    Parameters
    ----------
    trace : spectheory.lm.Trace
        In memory (a whole trace, or one shard of a sharded one).
    positions : ndarray of int
        Local positions of ``trace`` to replay, increasing.
    start : int
        Global position of the trace's local position 0 (a shard's start).
    draft, temperature, n, sampling
        The configuration.
    verifiers : sequence of Verifier
        Each supporting ``n`` and ``sampling``.
    trials, seed, chunk
        Monte Carlo trials, base seed, positions processed together (does not
        change the result: every position has its own streams).
    extra : dict, optional
        Columns added to every row (a sweep's ``shard``).
    target_cache : dict, optional
        Filled and read with the target's rows and PIT offsets per
        (temperature, positions): they do not depend on the draft, ``n`` or
        the law, so :func:`replay` shares them across its configurations.

    Returns
    -------
    list of dict
    """
    T = trials
    words = {v.name: stream_words(draft, temperature, n, sampling, v.name) for v in verifiers}
    rows: dict = {v.name: [] for v in verifiers}
    extra = extra or {}
    for c0 in range(0, positions.size, chunk):
        loc = positions[c0 : c0 + chunk]
        p, before = _target_rows(trace, loc, temperature, target_cache)
        q = process_logits(trace.draft_logits(draft, loc), temperature)
        if sampling != "iid":
            ok = np.count_nonzero(q, axis=1) >= n
            p, q, loc, before = p[ok], q[ok], loc[ok], before[ok]
        if loc.size == 0:
            continue
        bounds = np.atleast_1d(solve_bound(p, q, n, sampling).value)
        for v in verifiers:
            streams = [
                np.random.default_rng([seed, *words[v.name], start + int(i)]) for i in loc
            ]
            cf = v.closed_form_for(sampling)
            cf = getattr(cf, "row", cf)  # built-in closed forms: skip the input checks
            # checked as spectheory.acceptance checks it: a user's closed form outside
            # [0, 1] is a bug named as such, never written into the `exact` column
            exact = [float(_closed_value(v, cf(p[b], q[b], n, sampling))) if cf else float("nan")
                     for b in range(loc.size)]  # fmt: skip
            tokens, accepted, pu = _simulate_rows(v, p, q, n, sampling, T, streams)
            for b, i in enumerate(loc):
                k = int(accepted[b].sum())
                lo, hi = _wilson(k, T)
                ys = tokens[b]
                counts = np.bincount(ys, minlength=p.shape[1]).astype(float)
                pit = before[b, ys] + pu[b] * p[b, ys]
                rows[v.name].append(
                    {
                        "position": start + int(i),
                        "prompt_id": int(trace.prompt_ids[i]),
                        "step": int(trace.steps[i]),
                        "draft": draft,
                        "temperature": float(temperature),
                        "n": int(n),
                        "sampling": sampling,
                        "verifier": v.name,
                        "lossless": bool(v.lossless),
                        "bound": float(bounds[b]),
                        "exact": exact[b],
                        "mc": k / T,
                        "mc_low": lo,
                        "mc_high": hi,
                        "trials": int(T),
                        "chi2_p": float(_row_test(counts, p[b], chisquare_gof)[0]),
                        "impossible": int(counts[p[b] == 0].sum()),
                        "pit_mean": float(pit.mean()),
                        **extra,
                    }
                )
    return [r for v in verifiers for r in rows[v.name]]


def resolve_verifiers(verifiers) -> tuple[Verifier, ...]:
    """Records for a sequence of names, records or functions; names must be distinct."""
    if isinstance(verifiers, str | Verifier) or callable(verifiers):
        verifiers = (verifiers,)
    out = tuple(as_verifier(v) for v in verifiers)
    if not out:
        raise InvalidParameterError("verifiers must not be empty")
    names = [v.name for v in out]
    dup = sorted({x for x in names if names.count(x) > 1})
    if dup:
        raise InvalidParameterError(f"verifiers must have distinct names; {dup} repeat")
    return out


def replay(
    trace,
    *,
    drafts=None,
    temperatures=(1.0,),
    ns=(1, 2, 4),
    samplings=SAMPLINGS,
    verifiers=REPLAY_VERIFIERS,
    trials: int = 200,
    seed: int = 0,
    rows=None,
    chunk: int = 64,
    progress: bool = False,
) -> list[dict]:
    """Replay ``trace`` through verifiers; return the tidy table as a list of dicts.

    A serial :func:`spectheory.sim.sweep` over the trace in memory (module
    docstring): same rows, same numbers for the same seed.

    Parameters
    ----------
    trace : spectheory.lm.Trace
    drafts : sequence of str, optional
        Draft names (default: every draft of the trace).
    temperatures : sequence of float
        Each applied to both models' logits (:func:`spectheory.process_logits`).
    ns : sequence of int
    samplings : sequence of {"iid", "without_replacement", "greedy"}
        In ``drafts``, ``temperatures``, ``ns`` and ``samplings`` duplicates
        are dropped, order kept (as in :class:`~spectheory.sim.SweepGrid`).
    verifiers : sequence of str, Verifier or function
        Default every built-in verifier with a numba kernel
        (:data:`REPLAY_VERIFIERS`); others run in Python, slower.
    trials : int
        Monte Carlo trials per position and configuration.
    seed : int
        Base seed (>= 0) of every position's streams.
    rows : array_like of int, optional
        Trace positions (default all); replayed in increasing order.
    chunk : int
        Positions processed together (memory: ``chunk x V`` float64 per
        model).  Does not change the result.

    Returns
    -------
    list of dict
        One dict per table row with the keys :data:`COLUMNS`, ordered by
        configuration (draft, temperature, n, law), then verifier, then position.
    """
    records = resolve_verifiers(verifiers)
    # Duplicates dropped, order kept, as in SweepGrid: a repeated temperature, n, law or
    # draft would repeat every row of its configuration (and sweep would not).
    temperatures, ns, samplings = (tuple(dict.fromkeys(x)) for x in (temperatures, ns, samplings))
    bad = [s for s in samplings if s not in SAMPLINGS]
    if bad:
        raise InvalidParameterError(f"samplings must be among {SAMPLINGS}; got {bad}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InvalidParameterError(f"seed must be an integer >= 0; got {seed!r}")
    trials = check_positive_int(trials, "trials")
    chunk = check_positive_int(chunk, "chunk")
    check_grid_has_work(records, ns, samplings)
    drafts = tuple(dict.fromkeys(drafts or trace.drafts))
    if rows is None:
        idx = np.arange(trace.num_positions)
    else:
        idx = np.unique(integer_vector(rows, "rows"))
        if idx.size and (idx[0] < 0 or idx[-1] >= trace.num_positions):
            raise InvalidParameterError(
                f"rows must be positions in [0, {trace.num_positions}); got {idx[0]}..{idx[-1]}"
            )
    out = []
    target_cache: dict = {}  # per (temperature, chunk): shared by every draft, n and law
    for draft in drafts:
        for temp in temperatures:
            if progress:
                print(f"replay: draft {draft}, temperature {temp}", file=sys.stderr)
            for n in ns:
                for sampling in samplings:
                    applicable = [v for v in records if v.supports(n, sampling)]
                    if not applicable:
                        continue
                    piece = config_rows(
                        trace, idx, start=0, draft=draft, temperature=temp, n=n,
                        sampling=sampling, verifiers=applicable, trials=trials,
                        seed=int(seed), chunk=chunk, target_cache=target_cache,
                    )  # fmt: skip
                    out.extend(piece)
    return out


def write_csv(table, path) -> Path:
    """Write the tidy table atomically as CSV (columns :data:`COLUMNS`)."""
    return _files.write_csv(table, path, COLUMNS)
