"""Round-3 mutation kills: trees, the sample audit and its statistics, the torch forms, speed-ups.

Each test is deterministic and cheap, and names in its docstring the seeded bug
(mutant) it catches; the expected values come from hand computation, exact
enumeration or a brute-force oracle, never from the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from spectheory.sim.audit import check_lossless_from_samples as audit

# --------------------------------------------------------------------------- sim/audit.py


def test_audit_row_pvalue_counts_the_output_itself():
    """Bug: ``_row_pvalues`` used ``p < p(y)`` instead of ``p <= p(y)``.

    :math:`\\pi_t = P_{Y\\sim p_t}(p_t(Y) \\le p_t(y_t))` includes ``y_t`` itself:
    by hand, row 0 (``p = (.5, .3, .2)``, ``y = 1``) gives .3 + .2 = .5, row 1
    (``(.25, .25, .5)``, ``y = 0``) .25 + .25 = .5 and row 2 (``(.1, .6, .3)``,
    ``y = 2``) .1 + .3 = .4; the strict version gives .2, 0 and .1.
    """
    p = np.array([[0.5, 0.3, 0.2], [0.25, 0.25, 0.5], [0.1, 0.6, 0.3]])
    y = np.array([1, 0, 2])
    r = audit(p, p, y[:, None], y)
    got = {s["row"]: s["p_value"] for s in r.suspicious}
    assert all(s["test"] == "output probability" for s in r.suspicious)
    assert got == pytest.approx({0: 0.5, 1: 0.5, 2: 0.4}, abs=1e-12)


def test_audit_bound_covers_rows_whose_support_equals_n():
    """Bug: ``_bound`` kept only rows with more than ``n`` draft tokens (``> n`` for ``>= n``).

    Without replacement, ``n = 2`` drafts from a draft law with exactly two
    tokens of positive mass are that support, so a lossless verifier outputs
    a draft with probability at most :math:`p(\\mathrm{supp}\\, q)`: by hand
    .5 + .3 = .8 for every row.  Those rows must be tested against the bound,
    not dropped (NaN bound, no bound samples).
    """
    N = 6
    p = np.tile([0.5, 0.3, 0.2], (N, 1))
    q = np.tile([0.6, 0.4, 0.0], (N, 1))
    d = np.tile([0, 1], (N, 1))
    d[::2] = [1, 0]
    y = np.array([0, 1, 2, 0, 1, 0])
    r = audit(p, q, d, y, sampling="without_replacement")
    assert r.bound_samples == N
    assert r.bound == pytest.approx(0.8, abs=1e-9)
    assert r.acceptance == pytest.approx(5 / 6)


def test_audit_acceptance_counts_every_draft_not_only_the_first():
    """Bug: the hit of a row tested only its first draft (``d[:, 0] == y``).

    Membership acceptance is "the output is one of the row's drafts": all four
    rows below output one of their two drafts (by hand 4/4), only one of
    them the first.
    """
    p = np.tile([1 / 3, 1 / 3, 1 / 3], (4, 1))
    d = np.array([[0, 1], [2, 0], [1, 1], [0, 2]])
    y = np.array([1, 0, 1, 2])
    r = audit(p, p, d, y)
    assert r.bound_samples == 4
    assert r.acceptance == 1.0


def test_audit_exceeds_bound_uses_the_bonferroni_share():
    """Bug: ``exceeds`` compared the bound test's p-value with ``alpha`` instead of ``alpha / m``.

    Ten rows with ``p = (.5, .5)``, ``q = (.9, .1)`` and one draft, token 0,
    always emitted: :math:`\\beta = .5 + .1 = .6` per row, excess
    :math:`D = 10 - 6 = 4`, Azuma :math:`e^{-2 \\cdot 16/10} = e^{-3.2} \\approx .041`.
    With ``m = 4`` tests (pit, pit_ks, pit_p, bound) and ``alpha = .05`` the share is
    .0125: the acceptance does *not* count as exceeding the bound at level
    ``alpha`` (the buggy rule said it did).
    """
    N = 10
    p = np.tile([0.5, 0.5], (N, 1))
    q = np.tile([0.9, 0.1], (N, 1))
    d = np.zeros((N, 1), dtype=np.int64)
    y = np.zeros(N, dtype=np.int64)
    r = audit(p, q, d, y, alpha=0.05)
    assert set(r.tests) == {"pit", "pit_ks", "pit_p", "bound"}
    assert r.excess_p_value == pytest.approx(np.exp(-3.2), rel=1e-9)
    assert r.exceeds_bound is False
    assert "exceeds the optimal bound" not in r.verdict


def test_audit_position_test_starts_at_exactly_min_repeats_rows():
    """Bug: a repeated (target, draft) pair needed *more* than ``min_repeats`` rows (``<=``).

    Exactly ``MIN_REPEATS = 20`` identical rows form one position, which gets
    its own G test (``"position 0"``); 19 do not.
    """
    from spectheory.sim.audit import MIN_REPEATS

    p = np.tile([0.5, 0.5], (MIN_REPEATS, 1))
    y = np.arange(MIN_REPEATS) % 2
    r = audit(p, p, y[:, None], y)
    assert "position 0" in r.tests
    assert r.suspicious[0]["test"] == "G test" and r.suspicious[0]["repeats"] == MIN_REPEATS
    r19 = audit(p[1:], p[1:], y[1:, None], y[1:])
    assert not any(k.startswith("position") for k in r19.tests)


# --------------------------------------------------------------------------- sim/_stats.py


def test_pool_cells_keeps_a_pooled_cell_whose_expectation_equals_the_rule():
    """Bug: the pooled small cells were merged further when their expectation *equalled*
    ``min_expected`` (``<=`` for ``<``).

    Cochran's rule merges the pooled cell only while it is still *below* 5:
    expectations (50, 45, 3, 2) pool to (50, 45, 5), three cells (by hand), not
    (50, 50).
    """
    from spectheory.sim._stats import chisquare_gof, pool_cells

    obs, exp = pool_cells([50, 45, 3, 2], [0.5, 0.45, 0.03, 0.02])
    assert obs.tolist() == [50.0, 45.0, 5.0]
    assert exp.tolist() == pytest.approx([50.0, 45.0, 5.0])
    assert chisquare_gof([50, 45, 3, 2], [0.5, 0.45, 0.03, 0.02]).df == 2


# --------------------------------------------------------------------------- solvers/speedup.py


@pytest.mark.parametrize("method", ["marginal", "lambertw", "enumerate"])
def test_full_acceptance_at_unit_cost_never_drafts(method):
    """Bugs: ``_gamma_cont`` called ``alpha = 1, c = 1`` unbounded (``c <= 1`` for ``c < 1``),
    and ``_enumerate_iid`` called a flat end of ``S`` still rising (``>=`` for ``>``).

    At :math:`\\alpha = 1`, :math:`c = 1` the speed-up is
    :math:`S(\\gamma) = (\\gamma + 1)/(\\gamma + 1) = 1` for every :math:`\\gamma`
    (by hand): drafting never helps, the continuous optimum is 0 (documented
    for ``c >= 1``), and the tie goes to the shortest draft, uncapped.
    """
    from spectheory.solvers.speedup import continuous_optimal_gamma, optimal_gamma

    assert continuous_optimal_gamma(1.0, 1.0) == 0.0
    r = optimal_gamma(1.0, 1.0, method=method, gamma_max=8)
    assert (r.gamma, r.speedup, bool(r.capped)) == (0, 1.0, False)
