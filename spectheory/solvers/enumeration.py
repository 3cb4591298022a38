r"""Brute force: every token set ``H``, in exact rational arithmetic.

:math:`\alpha^* = \min_{H \subseteq \Sigma} [\,p(H) + 1 - Q(H)\,]` over all
:math:`2^V` sets, with :math:`Q(H)` from the reference formulas of
:mod:`spectheory.drafting` (i.i.d. :math:`q(H)^n`; without replacement the
sum over ordered draws; greedy its closed form).  It assumes nothing, not the
prefix lemma and not total unimodularity, which makes it the independent
oracle of the other methods.  Ties go to the first set in binary order.
"""

from __future__ import annotations

import math

import numpy as np

from .._errors import InstanceTooLargeError
from .._validate import _as_exact
from ..drafting import greedy_split, set_probability_row

__all__ = ["MAX_WORK", "solve_row"]

#: Largest work estimate (sets times cost of one Q(H)) that enumeration accepts.
MAX_WORK = 3_000_000


def solve_row(p, q, n, sampling):
    """Solve one instance exactly; returns ``(Fraction value, certificate mask, message)``."""
    V = p.shape[0]
    per_set = math.perm(V, n) if sampling == "without_replacement" else V
    if (2**V) * per_set > MAX_WORK:
        raise InstanceTooLargeError(
            f"method='enumerate' refuses V={V}, n={n}, sampling={sampling!r}: "
            f"2^{V} sets x {per_set} operations each exceeds {MAX_WORK}"
        )
    p = p if p.dtype == object else _as_exact(p[None])[0]
    q = q if q.dtype == object else _as_exact(q[None])[0]
    split = greedy_split(q, n) if sampling == "greedy" else None
    best = None
    best_mask = 0
    for mask in range(2**V):
        members = [i for i in range(V) if mask >> i & 1]
        val = (
            sum((p[i] for i in members), 0 * p[0])
            + 1
            - set_probability_row(q, members, n, sampling, split)
        )
        if best is None or val < best:
            best, best_mask = val, mask
    cert = np.array([bool(best_mask >> i & 1) for i in range(V)])
    return best, cert, f"exact enumeration of 2^{V} token sets"
