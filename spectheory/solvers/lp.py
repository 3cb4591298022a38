r"""The primal optimal-transport LP of the optimal acceptance, solved by HiGHS.

.. math::

    \max_{\pi \ge 0} \sum_{c,\,y \in c} \pi(c, y) \quad \text{s.t.} \quad
    \sum_{y \in c} \pi(c, y) \le P(c), \qquad \sum_{c \ni y} \pi(c, y) \le p(y)

over the draft *sets* ``c`` (the membership classes of the draft law, see
:func:`spectheory.drafting.draft_set_law`).  Only pairs with ``y in c`` can
score, and any sub-coupling extends to a full coupling of the two marginals
(by the product of the leftover masses), so this equals the
equality-constrained transport problem of SpecTr (docs/theory.md §2.2) while
staying feasible under rounding.  Its LP dual is the subset selection of
2.3 with :math:`u, v \ge 0`; the incidence matrix is totally unimodular,
so HiGHS's basic dual is 0/1 and ``H = {y : v(y) = 1}`` is the certificate.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from .._errors import InstanceTooLargeError, SolverError
from ..drafting import set_law_row

__all__ = ["MAX_PAIRS", "solve_row"]

#: Largest number of (draft set, token) pairs the LP accepts.
MAX_PAIRS = 200_000


def _count_classes(V, n, sampling):
    from math import comb

    if sampling == "iid":
        return comb(V + n - 1, n)
    if sampling == "without_replacement":
        return comb(V, n)
    return V


def solve_row(p, q, n, sampling):
    """Solve one instance; returns ``(value, certificate mask, message)``."""
    V = p.shape[0]
    if _count_classes(V, n, sampling) * n > MAX_PAIRS:
        raise InstanceTooLargeError(
            f"method='lp' refuses V={V}, n={n}, sampling={sampling!r}: about "
            f"{_count_classes(V, n, sampling) * n} variables (limit {MAX_PAIRS})"
        )
    law = set_law_row(q, n, sampling)
    classes = list(law)
    rows, cols = [], []
    var = 0
    for ci, c in enumerate(classes):
        for y in sorted(c):
            rows += [ci, len(classes) + y]
            cols += [var, var]
            var += 1
    A = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(classes) + V, var)).tocsr()
    b = np.concatenate([[float(law[c]) for c in classes], p.astype(float)])
    try:
        res = linprog(-np.ones(var), A_ub=A, b_ub=b, bounds=(0, None), method="highs")
    except ValueError as exc:  # scipy's input checks (non-finite bounds)
        raise SolverError(f"HiGHS refused the transport LP: {exc}") from None
    if res.status != 0:
        raise SolverError(f"HiGHS failed on the transport LP: {res.message}")
    value = -res.fun
    v = -res.ineqlin.marginals[len(classes) :]
    cert = v > 0.5
    # The certificate must reproduce the value (TU: the basic dual is 0/1).
    inside = sum(float(law[c]) for c in classes if c <= set(np.flatnonzero(cert).tolist()))
    cert_value = float(p[cert].sum()) + 1.0 - inside
    if abs(cert_value - value) > 1e-7:
        raise SolverError(
            f"LP dual is not integral: certificate gives {cert_value!r}, LP value {value!r}"
        )
    msg = f"HiGHS on {len(classes)} draft sets x {V} tokens ({var} pairs)"
    return value, cert, msg
