r"""The max-flow form of the optimal acceptance, in exact integer arithmetic (networkx).

Network (docs/theory.md §2.2): source :math:`\to` draft set ``c`` with capacity
``P(c)``; ``c`` :math:`\to` token ``y`` for ``y in c`` with infinite capacity;
``y`` :math:`\to` sink with capacity ``p(y)``.  The maximum flow is
:math:`\alpha^*`.  A minimum cut is a dual certificate: with ``H`` the tokens
on the source side, the cut costs ``p(H) + P(some draft outside H)``.

Probabilities are made exact rationals (a float is a dyadic rational; rows
are renormalised exactly), all capacities are scaled by the common
denominator, and networkx runs on Python integers, so the flow and the cut
are exact.
"""

from __future__ import annotations

import math
from fractions import Fraction

import networkx as nx
import numpy as np

from .._errors import InstanceTooLargeError, SolverError
from .._validate import _as_exact
from ..drafting import set_law_row

__all__ = ["MAX_CLASSES", "solve_row"]

#: Largest number of draft sets the max-flow network accepts.
MAX_CLASSES = 20_000


def solve_row(p, q, n, sampling):
    """Solve one instance exactly; returns ``(Fraction value, certificate mask, message)``."""
    V = p.shape[0]
    p = p if p.dtype == object else _as_exact(p[None])[0]
    q = q if q.dtype == object else _as_exact(q[None])[0]
    support = int(np.count_nonzero(q != 0))
    size = {
        "iid": math.comb(support + n - 1, n),
        "without_replacement": math.comb(support, n),
        "greedy": support,
    }[sampling]
    if size > MAX_CLASSES:
        raise InstanceTooLargeError(
            f"method='maxflow' refuses V={V}, n={n}, sampling={sampling!r}: "
            f"{size} draft sets (limit {MAX_CLASSES})"
        )
    law = set_law_row(q, n, sampling)
    caps = [Fraction(x) for x in law.values()] + [Fraction(x) for x in p]
    scale = math.lcm(*(c.denominator for c in caps))
    G = nx.DiGraph()
    for ci, (c, prob) in enumerate(law.items()):
        G.add_edge("s", ("c", ci), capacity=int(Fraction(prob) * scale))
        for y in c:
            G.add_edge(("c", ci), ("y", y))  # no capacity attribute: infinite
    for y in range(V):
        G.add_edge(("y", y), "t", capacity=int(Fraction(p[y]) * scale))
    cut, (source_side, _) = nx.minimum_cut(G, "s", "t")
    value = Fraction(cut, scale)
    cert = np.zeros(V, dtype=bool)
    for node in source_side:
        if isinstance(node, tuple) and node[0] == "y":
            cert[node[1]] = True
    inside = sum(
        (Fraction(prob) for c, prob in law.items() if all(cert[y] for y in c)), Fraction(0)
    )
    if sum((Fraction(x) for x in p[cert]), Fraction(0)) + 1 - inside != value:
        raise SolverError("minimum cut does not reproduce the maximum flow")
    return value, cert, f"exact max-flow on {len(law)} draft sets (networkx, integer capacities)"
