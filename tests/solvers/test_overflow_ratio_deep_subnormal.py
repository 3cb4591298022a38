"""Ratios p/q that overflow even after the 2^-200 rescaling would with a smaller one.

For q ~ 1e-320 (deep subnormal) and p ~ 1, p/q ~ 1e320 overflows; the sort key
(p 2^-200)/q ~ 6e259 is finite, but (p 2^-20)/q ~ 1e314 is not, so a weaker rescaling
ties the two ratios again and the tie goes to token order.
Oracle: exact enumeration of every draft set in Fractions (no float ratio at all), and the
hand value for two drafts: second draft token 1 w.p. 1/4, token 2 w.p. 3/4.
"""

from fractions import Fraction

import numpy as np
import pytest

import spectheory as st

WOR = "without_replacement"


def _exact(p, q, n):
    pf = np.array([Fraction(float(x)) for x in p], dtype=object)
    qf = np.array([Fraction(float(x)) for x in q], dtype=object)
    pf, qf = pf / sum(pf), qf / sum(qf)
    return float(st.solve_bound(pf, qf, n, WOR, method="enumerate").exact_value)


@pytest.mark.parametrize(
    ("p", "q", "want"),
    [
        ([0.2, 0.7, 0.1], [1.0, 1e-320, 3e-320], 0.55),  # ratio order 2 < 1 would give 1.0
        ([0.2, 0.1, 0.7], [1.0, 3e-320, 1e-320], 0.55),
        ([0.2, 0.7, 0.1], [1.0, 3e-320, 1e-320], 1.0),
        ([0.2, 0.1, 0.7], [1.0, 1e-320, 3e-320], 1.0),
    ],
)
def test_deep_subnormal_ratios_keep_their_order(p, q, want):
    p, q = np.array(p), np.array(q)
    exact = _exact(p, q, 2)
    assert exact == pytest.approx(want, abs=2e-3)  # 1e-320 is a subnormal: ratio ~ 3
    for method in ("dual", "enumerate", "maxflow"):
        got = float(st.solve_bound(p, q, 2, WOR, method=method).value)
        assert got == pytest.approx(exact, abs=1e-12), method
    assert float(st.bound(p, q, 2, sampling=WOR)) == pytest.approx(exact, abs=1e-12)
