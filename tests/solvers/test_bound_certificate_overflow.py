"""The dual's certificate ``H`` on rows whose ratios p/q overflow.

``BoundResult.certificate`` is documented as an optimal dual set: the value equals
``p(H) + P(some draft falls outside H)``.  Oracle: that expression in Fractions, with the
draft-set probability enumerated over ordered draws without replacement (no float ratio).
The value of ``bound`` was already tested on these rows; the set was not, and a
certificate sorted by the overflowed p/q (all inf, ties by token id) named the wrong set.
"""

from fractions import Fraction
from itertools import permutations

import numpy as np
import pytest

import spectheory as st

WOR = "without_replacement"


def _all_inside(qf, H, n):
    """P(all n drafts, drawn without replacement from qf, lie in H), exactly."""
    total = Fraction(0)
    for seq in permutations(range(len(qf)), n):
        if not all(H[t] for t in seq):
            continue
        pr, left = Fraction(1), Fraction(1)
        for t in seq:
            pr *= qf[t] / left
            left -= qf[t]
        total += pr
    return total


@pytest.mark.parametrize(
    ("p", "q"),
    [
        ([0.2, 0.7, 0.1], [1.0, 1e-310, 3e-310]),
        ([0.2, 0.1, 0.7], [1.0, 3e-310, 1e-310]),
        ([0.2, 0.7, 0.1], [1.0, 3e-310, 1e-310]),
        ([0.1, 0.2, 0.3, 0.4], [1.0, 1e-310, 2e-310, 4e-310]),
        ([0.4, 0.3, 0.2, 0.1], [1.0, 4e-310, 2e-310, 1e-310]),
    ],
)
def test_certificate_attains_the_bound(p, q):
    p, q = np.array(p), np.array(q)
    pf = [Fraction(float(x)) for x in p]
    qf = [Fraction(float(x)) for x in q]
    s = sum(qf)
    qf = [x / s for x in qf]
    r = st.solve_bound(p, q, 2, WOR, method="dual")
    H = [bool(h) for h in r.certificate]
    value = sum(pf[i] for i in range(len(pf)) if H[i]) + 1 - _all_inside(qf, H, 2)
    assert float(value) == pytest.approx(float(r.value), abs=1e-12), H
