r"""Replay a recorded trace through every verifier: bound, exact and Monte Carlo acceptance.

For every trace position and every combination of draft model, temperature,
number of drafts ``n`` and draft law, the tidy table holds one row per
verifier with

* ``bound``: the optimal acceptance :math:`\alpha^*` (:func:`spectheory.bound`);
* ``exact``: the verifier's closed-form acceptance (docs/theory.md §3.0) where one
  exists for that draft law, else empty;
* ``mc``, ``mc_low``, ``mc_high``: the Monte Carlo membership acceptance over
  ``trials`` trials (:func:`spectheory.simulate`, numba kernels) and its 95%
  Wilson interval;
* ``chi2_p``: Pearson's chi-square p-value of the outputs against the target
  (bins with expected count below 5 merged), and ``pit_mean``, the mean of
  the randomised probability integral transforms (1/2 under losslessness;
  pooled tests: :func:`spectheory.check_lossless`).

Positions whose draft has fewer than ``n`` tokens of positive probability are
skipped for the laws that need them (``without_replacement``, ``greedy``).
``khisti`` and ``optimal_lp`` need a transport LP per position and are not
replayed at full vocabulary.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import InvalidParameterError
from ..distributions import process_logits
from ..drafting import SAMPLINGS
from ..exact import CLOSED_FORMS
from ..solvers.ot_dual import solve_bound
from ..verifiers import REGISTRY
from .check import _pearson
from .simulate import simulate

__all__ = ["COLUMNS", "REPLAY_VERIFIERS", "replay", "write_csv"]

#: Verifiers replayed by default: every registered one with a numba kernel.
REPLAY_VERIFIERS = ("sd", "rrs", "rrs_wor", "kseq", "spechub", "greedy", "nss", "naive", "typical")

#: Columns of the tidy table, in order.
COLUMNS = (
    "position", "prompt_id", "step", "draft", "temperature", "n", "sampling", "verifier",
    "lossless", "bound", "exact", "mc", "mc_low", "mc_high", "trials", "chi2_p", "pit_mean",
)  # fmt: skip


def _wilson(k, N, z=1.959963984540054):
    a = k / N
    centre = (a + z * z / (2 * N)) / (1 + z * z / N)
    half = z * math.sqrt(a * (1 - a) / N + z * z / (4 * N * N)) / (1 + z * z / N)
    return max(0.0, centre - half), min(1.0, centre + half)


def _applicable(name, n, sampling):
    v = REGISTRY[name]
    return sampling in v.samplings and (v.n_values is None or n in v.n_values)


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

    Parameters
    ----------
    trace : spectheory.lm.Trace
    drafts : sequence of str, optional
        Draft names (default: every draft of the trace).
    temperatures : sequence of float
        Each applied to both models' logits (:func:`spectheory.process_logits`).
    ns : sequence of int
    samplings : sequence of {"iid", "without_replacement", "greedy"}
    verifiers : sequence of str
        Registry names with a numba kernel (:data:`REPLAY_VERIFIERS`).
    trials : int
        Monte Carlo trials per position and configuration.
    seed : int
        Base seed; each (draft, temperature, n, law, verifier, chunk) gets its own stream.
    rows : array_like of int, optional
        Trace positions (default all).
    chunk : int
        Positions processed together (memory: ``chunk x V`` float64 per model).

    Returns
    -------
    list of dict
        One dict per table row with the keys :data:`COLUMNS`.
    """
    bad = [v for v in verifiers if v not in REPLAY_VERIFIERS]
    if bad:
        raise InvalidParameterError(
            f"verifiers must be among {', '.join(REPLAY_VERIFIERS)} (numba kernels); got {bad}"
        )
    bad = [s for s in samplings if s not in SAMPLINGS]
    if bad:
        raise InvalidParameterError(f"samplings must be among {SAMPLINGS}; got {bad}")
    drafts = tuple(drafts or trace.drafts)
    idx = np.arange(trace.num_positions) if rows is None else np.asarray(rows, dtype=np.int64)
    cases = [(n, s) for n in ns for s in samplings]
    out = []
    for di, draft in enumerate(drafts):
        for ti, temp in enumerate(temperatures):
            if progress:
                print(f"replay: draft {draft}, temperature {temp}", file=sys.stderr)
            for c0 in range(0, idx.size, chunk):
                pos_all = idx[c0 : c0 + chunk]
                # Processing and the PIT's token order are shared by every (n, law, verifier).
                p_all = process_logits(trace.target_logits[pos_all].astype(np.float64), temp)
                q_all = process_logits(trace.draft_logits(draft, pos_all), temp)
                order = np.argsort(-p_all, axis=1, kind="stable")
                rank = np.empty_like(order)
                np.put_along_axis(rank, order, np.arange(p_all.shape[1])[None], axis=1)
                before = np.take_along_axis(
                    np.cumsum(np.take_along_axis(p_all, order, axis=1), axis=1)
                    - np.take_along_axis(p_all, order, axis=1),
                    rank,
                    axis=1,
                )
                for n, sampling in cases:
                    names = [v for v in verifiers if _applicable(v, n, sampling)]
                    ok = np.ones(pos_all.size, dtype=bool)
                    if sampling != "iid":
                        ok = np.count_nonzero(q_all, axis=1) >= n
                    if not names or not ok.any():
                        continue
                    p, q, pos, cdf_before = p_all[ok], q_all[ok], pos_all[ok], before[ok]
                    bounds = np.atleast_1d(solve_bound(p, q, n, sampling).value)
                    for name in names:
                        v = REGISTRY[name]
                        stream = [seed, di, ti, c0, n, SAMPLINGS.index(sampling),
                                  REPLAY_VERIFIERS.index(name)]  # fmt: skip
                        sim = simulate(name, p, q, n, sampling, trials=trials, seed=stream)
                        cf = CLOSED_FORMS.get(name) if sampling in v.closed_form_samplings else None
                        rng = np.random.default_rng([*stream, 1])
                        for b, i in enumerate(pos):
                            k = int(sim.accepted[b].sum())
                            lo, hi = _wilson(k, trials)
                            ys = sim.tokens[b]
                            counts = np.bincount(ys, minlength=p.shape[1]).astype(float)
                            pit = cdf_before[b, ys] + rng.random(trials) * p[b, ys]
                            out.append(
                                {
                                    "position": int(i),
                                    "prompt_id": int(trace.prompt_ids[i]),
                                    "step": int(trace.steps[i]),
                                    "draft": draft,
                                    "temperature": float(temp),
                                    "n": int(n),
                                    "sampling": sampling,
                                    "verifier": name,
                                    "lossless": bool(v.lossless),
                                    "bound": float(bounds[b]),
                                    "exact": float(cf(p[b], q[b], n, sampling))
                                    if cf
                                    else float("nan"),
                                    "mc": k / trials,
                                    "mc_low": lo,
                                    "mc_high": hi,
                                    "trials": int(trials),
                                    "chi2_p": _pearson(counts, p[b])[0],
                                    "pit_mean": float(pit.mean()),
                                }
                            )
    return out


def write_csv(table, path) -> Path:
    """Write the tidy table atomically as CSV (columns :data:`COLUMNS`)."""
    return _files.write_csv(table, path, COLUMNS)
