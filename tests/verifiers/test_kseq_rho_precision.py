"""kseq_rho (float input) is the root of g(rho) = 1 - (1 - beta)^n - rho beta to ~1e-12.

Oracle: scipy's brentq on g written here in plain numpy (beta(rho) = sum min(p / rho, q)),
tolerance 1e-15.  A bisection cut short (30 steps instead of ~53) leaves rho ~1e-9 off.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from spectheory.verifiers.kseq import kseq_rho


def _g(p, q, n, rho):
    b = np.minimum(p / rho, q).sum()
    return 1.0 - (1.0 - b) ** n - rho * b


def test_float_rho_is_the_root_to_float_precision():
    rng = np.random.default_rng(7)
    checked = 0
    for n in (2, 3, 5, 8):
        for _ in range(5):
            p = rng.dirichlet(np.ones(12))
            q = rng.dirichlet(np.ones(12))
            if _g(p, q, n, 1.0) <= 0:  # rho* = 1
                continue
            root = brentq(lambda r, p=p, q=q, n=n: _g(p, q, n, r), 1.0, float(n), xtol=1e-15,
                          rtol=1e-15)  # fmt: skip
            want = root
            got = kseq_rho(p, q, n)
            assert abs(got - want) <= 1e-12 * n, (n, got, want)
            checked += 1
    assert checked >= 10
