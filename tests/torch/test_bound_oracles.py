"""spectheory.torch.bound against exact oracles (Fractions, mpmath), at points the suite misses.

* i.i.d. value when the mass outside the optimal prefix is below one ulp of 1 and ``n`` is
  huge: ``q(H)^n = (1 - outside)^n`` must use ``log1p`` (``log(1 - x)`` rounds to 0).
* without-replacement ``1 - Q(H)`` when ``Q(H)`` is tiny (~1e-12): nodes may be skipped only
  where ``P(N_H(t) >= n)`` is below 1e-17, not 1e-11.
* a batch of rows with very different total rates in ``H``: the first live node is the
  smallest over the rows, so no row loses nodes it needs.
Oracle for ``Q(H)``: sum over ordered draws without replacement, in exact Fractions.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory.torch.bound import bound, wor_outside_probability  # noqa: E402


def _exact_outside(q, members, n):
    """1 - Q(H) exactly: Q(H) = P(all n draws without replacement fall in H)."""
    qf = [Fraction(float(x)) for x in q]
    total = sum(qf)
    qf = [x / total for x in qf]
    H = [i for i in range(len(q)) if members[i]]
    Q = Fraction(0)
    for seq in itertools.permutations(H, n):
        pr, left = Fraction(1), Fraction(1)
        for i in seq:
            pr *= qf[i] / left
            left -= qf[i]
        Q += pr
    return 1 - Q


def test_iid_value_with_outside_mass_below_an_ulp():
    # H = {0} (ratio 0.5); outside mass 1e-20, n = 1e19: q(H)^n = exp(-0.1) exactly enough.
    p = torch.tensor([0.5, 0.5], dtype=torch.float64)
    q = torch.tensor([1.0, 1e-20], dtype=torch.float64)
    n = 10**19
    mpmath.mp.dps = 50
    qa, qb = mpmath.mpf(1.0), mpmath.mpf(1e-20)
    s = qa + qb
    vals = [mpmath.mpf(1), 1 + mpmath.mpf(0.5) - (qa / s) ** n, mpmath.mpf(1)]  # {}, {0}, all
    want = float(min(vals))  # about 0.5952
    got = float(bound(p, q, n, "iid"))
    assert abs(got - want) < 1e-12, (got, want)


def test_wor_outside_probability_when_q_of_h_is_tiny():
    # Three tokens of H with rate 1e-4 against an outside mass ~1: Q(H) ~ 6e-12, and
    # P(N_H(t) >= 3) stays below 1e-11 up to t ~ 1.3, where the weight e^{-t} is large.
    q = np.array([1e-4, 1e-4, 1e-4, 1.0 - 3e-4])
    members = np.array([True, True, True, False])
    want = float(_exact_outside(q, members, 3))
    got = float(wor_outside_probability(torch.tensor(q[None]), torch.tensor(members[None]), 3)[0])
    assert abs(got - want) < 2e-14, (got, want, 1.0 - want)


def test_wor_outside_probability_batch_rows_with_different_rates():
    # Row 0: H has a tiny total rate (its first live node is late); row 1: H has most of
    # the mass (its integrand lives early).  Each row equals its exact value.
    q = np.array([[1e-4, 1e-4, 1e-4, 1.0 - 3e-4], [0.3, 0.3, 0.3, 0.1]])
    members = np.array([[True, True, True, False], [True, True, True, False]])
    got = wor_outside_probability(torch.tensor(q), torch.tensor(members), 3).numpy()
    for b in range(2):
        want = float(_exact_outside(q[b], members[b], 3))
        assert abs(got[b] - want) < 2e-14, (b, got[b], want)
