"""Trace rows for the multi-draft tables: target and draft laws at a temperature, and the rows
on which each draft law is well defined in float64 (Hu et al., arXiv 2502.18779, and SpecTr)."""

from __future__ import annotations

import numpy as np

from ..distributions import process_logits

__all__ = ["GREEDY_TAIL", "trace_pq", "valid_rows"]


#: Smallest draft mass outside the top n - 1 tokens for which a greedy row is kept.
GREEDY_TAIL = 1e-12


def valid_rows(draft, n, sampling):
    """Rows (bool (B,)) on which the draft law with ``n`` drafts is well defined in float64.

    Without replacement needs ``n`` tokens of positive draft probability.  The
    greedy law samples its last draft from the mass outside the top ``n - 1``
    tokens; at low temperature that mass can round to 0 (or to a few ulps),
    where :math:`\tilde q = q / (1 - q(T))` is undefined, so such rows are left
    out (and counted in the tables).

    Examples
    --------
    >>> valid_rows(np.array([[0.5, 0.5, 0.0], [1.0, 1e-300, 0.0]]), 2, "greedy").tolist()
    [True, False]
    """
    draft = np.atleast_2d(draft)
    if sampling == "iid":
        return np.ones(draft.shape[0], dtype=bool)
    ok = np.count_nonzero(draft, axis=1) >= n
    if sampling == "greedy":
        tail = -np.sort(-draft, axis=1)[:, n - 1 :].sum(axis=1)
        ok &= tail > GREEDY_TAIL
    return ok


def trace_pq(trace, draft, T, top_k=None):
    """Target and draft probabilities (B, V) of ``trace`` at temperature ``T`` (optional top-k)."""
    p = process_logits(trace.target_logits.astype(np.float64), T, top_k=top_k)
    q = process_logits(trace.draft_logits(draft), T, top_k=top_k)
    return p, q
