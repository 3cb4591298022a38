"""SpecHub's numba kernel must be lossless on an instance whose residual step matters at the hub.

Instance: p = (1/4, 3/4, 0, 0), q = (1, 5, 5, 5)/16, two greedy drafts.  The hub is
a = argmax q = 1 (ties to the lowest id).  After both accept tests fail, SpecHub
draws from p'' with p''(a) = (p_2(a) - sum e_ia)_+ (docs/theory.md §3.4); here
that is 0 and the final residual is a point mass on token 0.  A kernel that
subtracts sum e_ai instead (the other pair type's excess) puts about 53% of the
residual on the hub, and the kernel's output law drifts from p by
about 0.085 in total variation (token 0 falls from 1/4 to about 0.165).  The
reference verifier and the coins-protocol replay tests rarely reach this branch
with p''(a) != 0, which is why a random instance seldom shows it.

Oracle: losslessness itself, P(y = 0) = p(0) = 1/4 exactly, checked with an
exact two-sided binomial test at false-alarm rate 1e-6 on 20,000 trials;
tokens of target probability 0 must never appear.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from spectheory.sim.simulate import simulate

ALARM = 1e-6


def test_spechub_kernel_output_law_is_the_target_when_the_hub_residual_is_reached():
    p = np.array([4.0, 12.0, 0.0, 0.0]) / 16
    q = np.array([1.0, 5.0, 5.0, 5.0]) / 16
    res = simulate("spechub", p, q, n=2, sampling="greedy", trials=20_000, rng=12345)
    assert res.engine == "numba"  # the kernel, not the Python reference
    counts = np.bincount(res.tokens.ravel(), minlength=4)
    assert counts[2] == 0 and counts[3] == 0  # p = 0 there: any output is bias
    N = int(counts.sum())
    pval = stats.binomtest(int(counts[0]), N, 0.25).pvalue
    assert pval > ALARM, (counts, pval)
