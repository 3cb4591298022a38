"""The checker sees biases among rare tokens (the cells its pooling merges) and never states a
detectable total variation above 1."""
import math

import numpy as np
import pytest
from scipy import stats

import spectheory as st
from spectheory.sim import _stats as S

V, N = 5000, 20_000
FLAT = np.full(V, 1.0 / V)  # every cell expects 4 < 5 outputs: all pooled into one


def test_bias_inside_the_pooled_cell_is_detected():
    law = np.zeros(V)
    law[::2] = 2.0 / V  # TV 0.5: only even tokens
    counts = np.random.default_rng(0).multinomial(N, law).astype(float)
    assert S.multinomial_gof(counts, FLAT).pvalue <= 1e-9


def test_check_lossless_flags_a_tv_half_bias_on_a_flat_row():
    def even_only(target, draft, drafts, rng):
        return 2 * int(rng.integers(0, V // 2))

    r = st.check_lossless(even_only, FLAT, FLAT, sampling="iid", trials=N, rng=0)
    assert r.lossy


def test_unpooled_partition_keeps_the_false_alarm_rate():
    rng = np.random.default_rng(1)
    reps = 400
    rej = sum(S.multinomial_gof(rng.multinomial(N, FLAT).astype(float), FLAT).pvalue <= 0.05
              for _ in range(reps))
    assert rej <= stats.binom.isf(1e-6, reps, 0.05)


def test_one_pooled_cell_claims_no_power():
    assert S.detectable_tv(N, 1, 1e-6) == math.inf


def test_detectable_tv_is_a_total_variation_or_inf():
    for trials in (1, 3, 5, 10):
        d = S.detectable_tv(trials, 2, 0.05)
        assert d == math.inf or d <= 1.0, (trials, d)
    r = st.check_lossless("sd", [0.3, 0.7], [0.5, 0.5], sampling="iid", trials=3, alpha=0.05)
    assert "detects a TV bias" not in r.summary()  # was "detects a TV bias >= 1.755"


def test_pooled_mass_is_the_mass_pool_cells_merges():
    """The stated power's pooled mass follows pool_cells' own rule, the join into the
    smallest kept cell included (one rule, not a copy of it)."""
    trials = 1000
    p = np.array([0.5, 0.3, 0.196, 0.002, 0.002])  # pooled 4 expected < 5: joins 196
    assert S.pooled_mass(p, trials) == pytest.approx(0.2, abs=1e-15)
    _, exp = S.pool_cells(np.round(p * trials), p)
    assert exp.size == 3 and exp.min() == pytest.approx(200.0)
    q = np.array([0.5, 0.49, 0.004, 0.003, 0.003])  # pooled 10 expected: its own cell
    assert S.pooled_mass(q, trials) == pytest.approx(0.01, abs=1e-15)
    assert S.pooled_mass(np.array([0.6, 0.4]), trials) == 0.0
