"""The log audit catches an engine that verifies against another target than it logs.

An engine whose acceptance test uses the target at temperature 0.7 (or after top-k = 5)
while its log records the temperature-1, untruncated target emits tokens whose law is
not the logged one (mean row TV 0.17 and 0.24 here).  The audit's PIT in the order of
decreasing p/q spreads that shift evenly over [0, 1): 0 of 5 such logs of 3,000 rows
were flagged at alpha = 1e-6.  The same PIT in the order of decreasing p (``pit_p``)
sees it at p-values near 1e-60, so each case below fails by chance far less often than
once in 10^40 runs; the correct engine is flagged with probability at most alpha = 1e-6
per log (the audit's Bonferroni bound), three logs here.
"""

import numpy as np
import pytest

from spectheory import process_logits
from spectheory.sim.audit import check_lossless_from_samples

V, N = 32, 3000


def _engine_log(seed, used):
    """Single-draft speculative sampling against ``used(target logits)``, logging the
    temperature-1 target: rows, drafts and outputs (vectorised inverse CDFs)."""
    rng = np.random.default_rng(seed)
    zt = 2.0 * rng.standard_normal((N, V))
    zd = zt + rng.standard_normal((N, V))
    logged, q = process_logits(zt, 1.0), process_logits(zd, 1.0)
    p = used(zt)
    rows = np.arange(N)

    def draw(w):
        c = np.cumsum(w, axis=1)
        k = (c < rng.random(N)[:, None] * c[:, -1:]).sum(axis=1)
        return np.minimum(k, V - 1)

    x = draw(q)
    accept = rng.random(N) < np.minimum(1.0, p[rows, x] / q[rows, x])
    y = np.where(accept, x, draw(np.maximum(p - q, 0.0)))
    return logged, q, x[:, None], y


@pytest.mark.parametrize(
    "used",
    [lambda z: process_logits(z, 0.7), lambda z: process_logits(z, 1.0, top_k=5)],
    ids=["temperature 0.7", "top-k 5"],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_audit_flags_a_target_processed_otherwise_than_logged(used, seed):
    r = check_lossless_from_samples(*_engine_log(seed, used))
    assert r.lossy, r.verdict
    assert r.tests["pit_p"] < 1e-20


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_audit_passes_the_engine_that_logs_its_own_target(seed):
    r = check_lossless_from_samples(*_engine_log(seed, lambda z: process_logits(z, 1.0)))
    assert not r.lossy, r.verdict
    assert set(r.tests) == {"pit", "pit_ks", "pit_p", "bound"}
