"""Edges of recent fixes.

* Block verification's stopping probability h = z / (z + (1 - w)) in the replay kernel's
  tables (``sim._tree_kernels.block_tables``) and in the papers' chains
  (``papers._block_chains.block_stop_probabilities``): oracle, the same expression in
  Fractions of the same float z and w (relative error 1e-12), and h in [0, 1].  Evaluated
  as ``(z + 1) - w`` the tiny z is rounded away (h = 1.43 on rows equal up to rounding).
* The audit's "exceeds the bound" rule uses the Bonferroni share alpha / m with m = 4
  tests (pit, pit_ks, pit_p, bound): tested on both sides of alpha = 4 p.
* ``top_tokens`` on Fractions answers as on floats for every m, negative ones included.
* A -1 padding before the draft token 0 (id zero) is refused as before any other id.
"""

from fractions import Fraction

import numpy as np
import pytest

from spectheory import InvalidParameterError
from spectheory.drafting import top_tokens
from spectheory.papers._block_chains import block_stop_probabilities
from spectheory.sim._tree_kernels import block_tables
from spectheory.sim.audit import check_lossless_from_samples as audit
from spectheory.sim.samplelog import as_sample_log


def _near_equal(rng, G1, V):
    P = rng.dirichlet(np.full(V, 0.5), size=G1)
    Q = P * (1 + 1e-15 * rng.standard_normal(P.shape))
    return P, Q / Q.sum(axis=1, keepdims=True)


def test_block_tables_stopping_probabilities_on_rows_equal_up_to_rounding():
    rng = np.random.default_rng(3)
    rows, G, V = 64, 3, 4
    P = np.empty((rows, G + 1, V))
    Q = np.empty((rows, G + 1, V))
    for i in range(rows):
        P[i], Q[i] = _near_equal(rng, G + 1, V)
    X = rng.integers(0, V, size=(rows, G))
    h, _ = block_tables(P, Q, X)
    assert ((0.0 <= h) & (h <= 1.0)).all(), h.max()
    for i in range(rows):
        w = [1.0]
        for g in range(G):
            x = X[i, g]
            r = w[-1] * P[i, g, x] / Q[i, g, x]
            w.append(min(r, 1.0))
        for a in range(1, G):
            z = np.maximum(w[a] * P[i, a] - Q[i, a], 0.0).sum()
            zf, wf = Fraction(float(z)), Fraction(w[a])
            den = zf + (1 - wf)
            want = zf / den if den > 0 else Fraction(1)
            assert float(h[i, a]) == pytest.approx(float(want), rel=1e-12), (i, a)


@pytest.mark.parametrize("w0", [1.0, 1 - 2**-53, 1 - 2**-52, 1 - 3 * 2**-53])
@pytest.mark.parametrize("z0", [3e-17, 1e-16, 3e-16, 1.2e-15])
def test_block_stop_probabilities_keep_a_tiny_residual_mass(w0, z0):
    h = block_stop_probabilities([w0, 0.5], [z0])
    want = Fraction(z0) / (Fraction(z0) + 1 - Fraction(w0))
    assert 0.0 <= float(h[0]) <= 1.0
    assert float(h[0]) == pytest.approx(float(want), rel=1e-12)


def _exceeding_log():
    N = 10  # beta = 0.6 per row, all accepted: Azuma p = exp(-3.2) ~ 0.0408
    p = np.tile([0.5, 0.5], (N, 1))
    q = np.tile([0.9, 0.1], (N, 1))
    return p, q, np.zeros((N, 1), dtype=np.int64), np.zeros(N, dtype=np.int64)


@pytest.mark.parametrize(("alpha", "exceeds"), [(0.14, False), (0.17, True)])
def test_audit_exceeds_bound_at_the_share_alpha_over_four(alpha, exceeds):
    r = audit(*_exceeding_log(), alpha=alpha)
    assert len(r.tests) == 4
    pv = r.excess_p_value
    assert pv == pytest.approx(np.exp(-3.2), rel=1e-9)
    assert (pv * 4 <= alpha) is exceeds  # the documented rule
    assert r.exceeds_bound is exceeds


def test_top_tokens_on_fractions_answers_as_on_floats_for_every_m():
    vals = [Fraction(1, 8), Fraction(3, 8), Fraction(1, 8), Fraction(3, 8)]
    qf = np.array(vals, dtype=object)
    qd = np.array([float(v) for v in vals])
    for m in range(-3, 7):
        brute = sorted(range(4), key=lambda i: (-vals[i], i))[: max(m, 0)]
        assert top_tokens(qf, m).tolist() == brute == top_tokens(qd, m).tolist(), m


def test_padding_before_draft_token_zero_is_refused():
    P = [[0.4, 0.3, 0.2, 0.1]] * 2
    Q = [[0.25] * 4] * 2
    with pytest.raises(InvalidParameterError, match=r"row 1 has the padding -1 in slot 0"):
        as_sample_log(P, Q, [[3, -1], [-1, 0]], [2, 0])
