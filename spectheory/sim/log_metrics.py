r"""Acceptance metrics of a log of speculative samples, with intervals, as a tidy table.

From a log (:mod:`spectheory.sim.samplelog`) the table holds one dict per
quantity, with the columns :data:`COLUMNS`:

* ``membership``: the share of rows with drafts whose output is one of them;
* ``slot`` ``j``: the share of rows with at least ``j + 1`` drafts whose
  output is draft ``j`` (first matching slot), i.e. acceptance by draft index
  of a multi-draft node;
* with ``round`` in the log, ``depth`` ``d``: the share of rows at depth
  ``d`` of their round (the ``d``-th row of the round that has a draft)
  whose output is its draft, i.e. the conditional acceptance of the ``d``-th
  draft of a chain given that it was reached; and ``accepted_length``: the
  mean number of accepted drafts per round.

Proportions carry Wilson intervals (:func:`spectheory.sim._stats.wilson_interval`),
the mean accepted length a Student-t interval over rounds
(:func:`spectheory.sim._stats.mean_interval`), at ``confidence``.
"""

from __future__ import annotations

import numpy as np

from .. import _files
from . import _stats
from .samplelog import SampleLog, load_log

__all__ = ["COLUMNS", "acceptance_table", "write_csv"]

#: Columns of the table, in order.
COLUMNS = ("quantity", "index", "count", "total", "value", "low", "high")


def _proportion(quantity, index, k, total, confidence):
    lo, hi = _stats.wilson_interval(k, total, confidence) if total else (np.nan, np.nan)
    return {
        "quantity": quantity,
        "index": index,
        "count": int(k),
        "total": int(total),
        "value": k / total if total else float("nan"),
        "low": float(lo),
        "high": float(hi),
    }


def acceptance_table(log, confidence: float = 0.95) -> list[dict]:
    """Acceptance by draft index and depth, mean accepted length, with intervals.

    Parameters
    ----------
    log : SampleLog or path
        A checked log, or a log file (:func:`~spectheory.sim.samplelog.load_log`).
    confidence : float in (0, 1)

    Returns
    -------
    list of dict
        Keys :data:`COLUMNS`; ``index`` is the slot or depth (``-1`` for the
        overall quantities).

    Examples
    --------
    Two rounds of a chain: drafts accepted, accepted, rejected; then rejected.

    >>> from spectheory.sim.samplelog import as_sample_log
    >>> u = [[0.5, 0.5]] * 4
    >>> log = as_sample_log(u, u, [[0], [1], [0], [1]], [0, 1, 1, 0], round=[0, 0, 0, 1])
    >>> [(r["quantity"], r["index"], r["count"], r["total"]) for r in acceptance_table(log)]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('membership', -1, 2, 4), ('slot', 0, 2, 4), ('depth', 0, 1, 2), ('depth', 1, 1, 1),
     ('depth', 2, 0, 1), ('accepted_length', -1, 2, 2)]
    """
    if not isinstance(log, SampleLog):
        log = load_log(log)
    _stats.check_alpha(confidence, "confidence")
    d, y = log.drafts, log.outputs
    valid = d >= 0
    has = valid.any(axis=1)
    match = valid & (d == y[:, None])
    hit = match.any(axis=1)
    table = [_proportion("membership", -1, int(hit[has].sum()), int(has.sum()), confidence)]
    # first matching slot (a log without draft slots, drafts of shape (N, 0), has none)
    first = np.where(hit, np.argmax(match, axis=1), -1) if d.shape[1] else np.full(y.size, -1)
    for j in range(d.shape[1]):
        reach = valid[:, j]
        table.append(
            _proportion("slot", j, int((first[reach] == j).sum()), int(reach.sum()), confidence)
        )
    if log.round is not None:
        starts = np.flatnonzero(np.r_[True, log.round[1:] != log.round[:-1]])
        ends = np.r_[starts[1:], y.size]
        depth = np.full(y.size, -1)
        lengths = []
        for s, e in zip(starts, ends):
            rows = np.arange(s, e)[has[s:e]]
            depth[rows] = np.arange(rows.size)
            lengths.append(int(hit[rows].sum()))
        for k in range(int(depth.max()) + 1 if depth.max() >= 0 else 0):
            at = depth == k
            table.append(_proportion("depth", k, int(hit[at].sum()), int(at.sum()), confidence))
        mean, lo, hi = _stats.mean_interval(lengths, confidence)
        table.append(
            {
                "quantity": "accepted_length",
                "index": -1,
                "count": int(sum(lengths)),
                "total": len(lengths),
                "value": mean,
                "low": float(lo),
                "high": float(hi),
            }
        )
    return table


def write_csv(table, path):
    """Write the table atomically as CSV (columns :data:`COLUMNS`)."""
    return _files.write_csv(table, path, COLUMNS)
