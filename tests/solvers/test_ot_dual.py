"""Tests of spectheory.bound / solve_bound: known answers, properties, oracles."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import spectheory as stt
from spectheory.drafting import draft_set_probability, set_probability_row
from spectheory.solvers.ot_dual import iid_reference
from tests.problems import PROBLEMS
from tests.strategies import as_exact, as_float, instances

DUAL_TOL = 1e-12  # float64 dual on V <= 6: rounding only (measured ~1e-15)
LP_TOL = 1e-8  # HiGHS primal/dual feasibility tolerance is 1e-7 on the marginals


def floats(x):
    return np.array([float(v) for v in x])


@pytest.mark.parametrize("prob", PROBLEMS, ids=[p.name for p in PROBLEMS])
@pytest.mark.parametrize("method", stt.METHODS)
def test_known_answers(prob, method):
    exact_input = method in ("maxflow", "enumerate")
    target = prob.target if exact_input else floats(prob.target)
    draft = prob.draft if exact_input else floats(prob.draft)
    res = stt.solve_bound(target, draft, prob.n, prob.sampling, method)
    assert res.status == "optimal"
    if exact_input:
        assert res.exact_value == prob.value
    tol = LP_TOL if method == "lp" else DUAL_TOL
    assert abs(res.value - float(prob.value)) <= tol
    # The certificate reproduces the value (exactly for the exact methods).
    members = np.flatnonzero(res.certificate).tolist()
    q_in = set_probability_row(prob.draft, members, prob.n, prob.sampling)
    cert_value = sum((prob.target[i] for i in members), Fraction(0)) + 1 - q_in
    assert abs(float(cert_value) - float(prob.value)) <= tol
    if exact_input:
        assert cert_value == prob.value
    if prob.certificate is not None and prob.value < 1:
        assert members == list(prob.certificate)


@given(instances(max_V=5, max_n=3))
@example((as_float([1, 1, 0]), as_float([0, 0, 1]), 2, "iid"))  # disjoint supports
@example((as_float([1, 2, 3]), as_float([1, 2, 3]), 3, "without_replacement"))  # p = q
def test_value_range_and_n1(inst):
    p, q, n, sampling = inst
    v = stt.bound(p, q, n, sampling)
    overlap = np.minimum(p, q).sum()
    assert overlap - DUAL_TOL <= v <= 1 + DUAL_TOL
    assert abs(stt.bound(p, q, 1, sampling) - overlap) <= DUAL_TOL


@given(instances(max_V=6, max_n=4))
def test_monotone_in_n_and_wor_beats_iid(inst):
    p, q, n, sampling = inst
    support = int(np.count_nonzero(q))
    values = [
        stt.bound(p, q, m, sampling)
        for m in range(1, (n if sampling == "iid" else min(n, support)) + 1)
    ]
    assert all(b >= a - DUAL_TOL for a, b in itertools.pairwise(values))
    m = min(n, support)
    assert stt.bound(p, q, m, "without_replacement") >= stt.bound(p, q, m, "iid") - DUAL_TOL


@given(instances(max_V=6, max_n=4))
def test_identical_target_and_draft(inst):
    _, q, n, sampling = inst
    assert stt.bound(q, q, n, sampling) == pytest.approx(1.0, abs=DUAL_TOL)


@given(instances(max_V=6, max_n=3, samplings=("iid", "without_replacement")), st.randoms())
def test_permutation_invariance(inst, rnd):
    p, q, n, sampling = inst
    perm = list(range(p.size))
    rnd.shuffle(perm)
    if perm == sorted(perm):  # the shuffle gave the identity in 28% of the ci examples
        perm.reverse()
    assert abs(stt.bound(p[perm], q[perm], n, sampling) - stt.bound(p, q, n, sampling)) <= DUAL_TOL


@given(instances(max_V=5, max_n=3, exact=True))
# Greedy with a tie at the edge of T (q = 2/5 twice, p differs there): T = {1} by the
# lowest-id rule gives 11/12, T = {2} would give 1.  The strategy rarely draws such ties.
@example((as_exact([1, 0, 3]), as_exact([1, 2, 2]), 2, "greedy"))
@example((as_exact([0, 3, 1, 0]), as_exact([0, 1, 1, 0]), 2, "without_replacement"))  # |supp q| = n
@example((as_exact([1, 2]), as_exact([0, 1]), 3, "iid"))  # one-hot q, n > V
def test_dual_equals_lp_maxflow_enumeration(inst):
    p, q, n, sampling = inst
    dual = stt.solve_bound(floats(p), floats(q), n, sampling)
    lp = stt.solve_bound(floats(p), floats(q), n, sampling, "lp")
    flow = stt.solve_bound(p, q, n, sampling, "maxflow")
    enum = stt.solve_bound(p, q, n, sampling, "enumerate")
    assert flow.exact_value == enum.exact_value
    assert abs(dual.value - float(enum.exact_value)) <= DUAL_TOL
    assert abs(lp.value - float(enum.exact_value)) <= LP_TOL
    # Every certificate is optimal for the exact instance.
    for res in (dual, lp, flow, enum):
        members = np.flatnonzero(res.certificate).tolist()
        val = (
            sum((p[i] for i in members), Fraction(0))
            + 1
            - set_probability_row(q, members, n, sampling)
        )
        assert abs(float(val - enum.exact_value)) <= (LP_TOL if res is lp else DUAL_TOL)


@given(instances(max_V=6, max_n=4))
def test_certificate_reproduces_value(inst):
    p, q, n, sampling = inst
    res = stt.solve_bound(p, q, n, sampling)
    H = res.certificate
    value = p[H].sum() + 1.0 - draft_set_probability(q, H, n, sampling)
    assert abs(value - res.value) <= DUAL_TOL


def test_greedy_closed_form_is_the_lp_optimum():
    rng = np.random.default_rng(7)
    for _ in range(30):
        V = int(rng.integers(3, 7))
        p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
        for n in range(2, V + 1):
            lp = stt.solve_bound(p, q, n, "greedy", "lp").value
            assert abs(stt.bound(p, q, n, "greedy") - lp) <= LP_TOL


def test_batch_matches_rows():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(40), size=7)
    q = rng.dirichlet(np.ones(40) * 0.3, size=7)
    for sampling in stt.SAMPLINGS:
        batch = stt.solve_bound(p, q, 3, sampling)
        assert batch.value.shape == (7,) and batch.certificate.shape == (7, 40)
        for b in range(7):
            row = stt.solve_bound(p[b], q[b], 3, sampling)
            assert isinstance(row.value, float)
            assert row.value == batch.value[b]
            assert (row.certificate == batch.certificate[b]).all()


def real_like_rows(V, B, seed, spread=1.0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((B, V)) * 3
    return stt.softmax(z), stt.softmax(z + spread * rng.standard_normal((B, V)))


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_iid_bucketed_scan_equals_full_sort_at_full_vocabulary(n):
    p, q = real_like_rows(49152, 4, seed=n)
    # zero entries and a masked tail, as after top-k / top-p
    p[:, :500] = 0
    p /= p.sum(axis=1, keepdims=True)
    res = stt.solve_bound(p, q, n)
    ref, ref_cert = iid_reference(p, q, n)
    # Both sum ~50k terms in different orders: 1e-12 covers the rounding (rtol = 0: a
    # certificate one boundary token off moves the value by only 1e-12..1e-9).
    np.testing.assert_allclose(res.value, ref, rtol=0, atol=1e-12)
    for b in range(4):
        H = res.certificate[b]
        assert np.array_equal(H, ref_cert[b]), np.flatnonzero(H != ref_cert[b])
        np.testing.assert_allclose(
            p[b, H].sum() + 1 - q[b, H].sum() ** n, res.value[b], rtol=0, atol=1e-12
        )


def wor_n2_reference(p, q):
    """All-prefix scan with the stable n = 2 closed form Q(H) = q(H) A - B.

    docs/theory.md §2.5(b).
    """
    order = stt.solvers.ratio_order(p[None], q[None])[0]
    ps, qs = p[order], q[order]
    S = np.cumsum(qs)
    A = np.cumsum(qs / (1 - qs))
    Bs = np.cumsum(qs**2 / (1 - qs))
    f = np.cumsum(ps) - (S * A - Bs)
    return 1 + min(0.0, f.min())


def test_wor_accuracy_at_full_vocabulary_n2():
    p, q = real_like_rows(49152, 3, seed=11)
    got = stt.bound(p, q, 2, "without_replacement")
    for b in range(3):
        assert abs(got[b] - wor_n2_reference(p[b], q[b])) <= 1e-11


def wor_reference_prefixes(p, q, n):
    """All-prefix scan with Q(H) by the ordered-draw recursion (docs/theory.md §2.5(a))."""
    order = stt.solvers.ratio_order(p[None], q[None])[0]
    best = 0.0
    for k in range(1, p.size + 1):
        H = order[:k].tolist()
        best = min(best, p[H].sum() - set_probability_row(q, H, n, "without_replacement"))
    return 1 + best


@pytest.mark.parametrize("seed", range(3))
def test_wor_accuracy_mid_vocabulary_n3(seed):
    rng = np.random.default_rng(seed)
    V = 14
    p, q = rng.dirichlet(np.ones(V) * 0.5), rng.dirichlet(np.ones(V) * 0.5)
    assert abs(stt.bound(p, q, 3, "without_replacement") - wor_reference_prefixes(p, q, 3)) <= 1e-12


def test_wor_tiny_outside_mass_and_extreme_ratios():
    # One dominant draft token and a tail of ~1e-13: the integral must reach t ~ 1e14.
    q = np.array([1 - 3e-13, 1e-13, 1e-13, 1e-13])
    p = np.array([0.25, 0.25, 0.25, 0.25])
    ref = float(stt.solve_bound(p, q, 2, "without_replacement", "enumerate").exact_value)
    assert abs(stt.bound(p, q, 2, "without_replacement") - ref) <= 1e-12


def test_wor_subnormal_draft_tail():
    q = np.array([0.5, 0.5 - 1e-300, 1e-300, 5e-324])
    p = np.array([0.1, 0.2, 0.3, 0.4])
    ref = float(stt.solve_bound(p, q, 2, "without_replacement", "enumerate").exact_value)
    assert abs(stt.bound(p, q, 2, "without_replacement") - ref) <= 1e-12


def test_zero_probability_and_one_hot_rows():
    p = np.array([0.0, 0.5, 0.5, 0.0])
    q = np.array([0.0, 0.0, 0.0, 1.0])
    assert stt.bound(p, q, 3) == 0.0
    assert stt.bound(q, q, 3) == 1.0
    onehot = stt.process_logits(np.array([1.0, 5.0, 5.0, 0.0]), temperature=0)
    assert stt.bound(onehot, q, 1) == 0.0
    assert stt.bound(onehot, onehot, 2) == 1.0


def test_oracles_refuse_large_instances():
    p, q = real_like_rows(200, 1, seed=0)
    for method in ("lp", "maxflow", "enumerate"):
        with pytest.raises(stt.InstanceTooLargeError, match=f"method='{method}'"):
            stt.solve_bound(p[0], q[0], 4, "iid", method)


def test_float_methods_refuse_exact_input_and_method_name():
    p = np.array([Fraction(1, 2), Fraction(1, 2)], dtype=object)
    with pytest.raises(stt.InvalidDistributionError, match="exact"):
        stt.bound(p, p, 1)
    with pytest.raises(stt.InvalidParameterError, match="method must be one of"):
        stt.solve_bound([0.5, 0.5], [0.5, 0.5], 1, "iid", "simplex")


def test_greedy_when_the_rest_of_the_draft_rounds_to_zero():
    # 1 - q(T) is 0.0 in float64 here although the two other tokens have positive mass;
    # the random draft is then uniform over them and alpha* = 0.2 + 0.3 + 0.5 = 1.
    q = np.array([1.0 - 1e-18, 5e-19, 5e-19])
    p = np.array([0.2, 0.3, 0.5])
    assert 1.0 - q[0] == 0.0
    assert stt.bound(p, q, 2, "greedy") == pytest.approx(1.0, abs=1e-15)


# --- issue 22: no silent wrong answer (regression tests named after the defects) ---


def test_issue22_wor_draft_tail_below_1e250_is_not_floored():
    # process_pair at temperature 0.01: draft tail ~1e-305, target tail ~1e-218.
    # The old grid stopped at t = 50 / 1e-250 and returned 0.0; the answer is 1/3.
    p, q = stt.process_pair([0, 0, 5, 0], [0, 7, 0, 0], temperature=0.01)
    for method in ("maxflow", "enumerate"):
        ref = stt.solve_bound(p, q, 2, "without_replacement", method).value
        np.testing.assert_allclose(ref, 1 / 3, rtol=1e-12)
    np.testing.assert_allclose(stt.bound(p, q, 2, "without_replacement"), 1 / 3, rtol=0, atol=1e-12)
    lp = stt.solve_bound(p, q, 2, "without_replacement", "lp").value
    np.testing.assert_allclose(lp, 1 / 3, rtol=0, atol=LP_TOL)


@pytest.mark.parametrize("tail", [5e-324, 1e-320, 1e-310, 1e-300, 1e-250, 1e-200, 1e-100])
@pytest.mark.parametrize("n", [2, 3])
def test_issue22_wor_every_tail_down_to_the_smallest_subnormal(tail, n):
    # Draft: one certain token and three equal tails; the first draw is token 0,
    # the others uniform over the tails, so alpha* = (n - 1) / 3 up to O(tail).
    q = np.array([1.0, tail, tail, tail])
    p = np.array([tail, tail, 1.0, tail])
    q, p = q / q.sum(), p / p.sum()
    # O(tail) corrections are below 1e-99; the dual's own error is < 1e-12.
    np.testing.assert_allclose(
        stt.bound(p, q, n, "without_replacement"), (n - 1) / 3, rtol=0, atol=1e-12
    )


def test_issue22_exact_wor_law_of_a_peaked_draft_sums_to_one():
    # q_max = 1 - 1e-12: 1 - q(used) cancelled, the law summed to 1.0000221.
    q = np.array([1 - 1e-12, 4e-13, 3e-13, 2e-13, 1e-13])
    q /= q.sum()
    law = stt.draft_set_law(q, 3, "without_replacement")
    # 4 sets, each a sum of 6 products of 3 factors: a few ulp.
    assert abs(sum(law.values()) - 1.0) <= 1e-14
    from spectheory.exact._tuples import ordered_draft_law

    tuples = ordered_draft_law(q, 3, "without_replacement")
    assert abs(sum(w for _, w in tuples) - 1.0) <= 1e-14
    # Exact check of one set against Fractions.
    qf = np.array([Fraction(float(v)) for v in q], dtype=object)
    qf = qf / qf.sum()
    exact = stt.draft_set_law(qf, 3, "without_replacement")
    for key, value in exact.items():
        np.testing.assert_allclose(law[key], float(value), rtol=1e-12)


def _iid_decimal_reference(p, q, n):
    """alpha* for i.i.d. drafts in 400-digit decimal arithmetic (no float64 anywhere).

    Inputs are read exactly as Fractions and renormalised; q(H)^n is
    exp(n ln(1 - lam)) with lam the exact outside mass.
    """
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 400
        P = [Fraction(float(x)) for x in p]
        Q = [Fraction(float(x)) for x in q]
        P = [x / sum(P) for x in P]
        Q = [x / sum(Q) for x in Q]
        big = Fraction(10**400)
        idx = sorted(range(len(P)), key=lambda i: P[i] / Q[i] if Q[i] else big)

        def dec(f):
            return Decimal(f.numerator) / Decimal(f.denominator)

        best, pH = Decimal(0), Fraction(0)
        for k, i in enumerate(idx):
            pH += P[i]
            lam = sum((Q[j] for j in idx[k + 1 :]), Fraction(0))
            best = min(best, dec(pH) - ((1 - dec(lam)).ln() * n).exp())
        return float(1 + best)


@pytest.mark.parametrize("n", [2, 1000, 10**9, 10**18, 2**63, 10**30, 10**300])
@pytest.mark.parametrize("seed", range(2))
def test_issue22_iid_bound_does_not_drift_with_n(n, seed):
    # Old: error 1e-11 at n = 1e3, 1e-5 at 1e9, -2.7e96 at 1e18, -inf at 2**63, a
    # numba TypingError at 1e30.  A dominant draft token (mass 1 - O(1/sqrt(n)))
    # keeps the optimum away from the trivial sets.
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    q[0] += 1e6 * min(n, 10**300) ** 0.5
    q /= q.sum()
    got = stt.bound(p, q, n)
    # float64 rounding of the inputs and of exp/log1p: a few ulp of 1.
    np.testing.assert_allclose(got, _iid_decimal_reference(p, q, n), rtol=0, atol=1e-14)


def test_issue22_n_beyond_the_documented_limit_is_refused():
    with pytest.raises(stt.InstanceTooLargeError, match="n must be at most"):
        stt.bound([0.5, 0.5], [0.5, 0.5], 10**301)


def test_issue22_oracles_refuse_huge_n_instead_of_hanging():
    for method in ("lp", "maxflow", "enumerate"):
        with pytest.raises(stt.InstanceTooLargeError, match="refuses n="):
            stt.solve_bound([0.0, 1.0], [0.0, 1.0], 10**9, "iid", method)
