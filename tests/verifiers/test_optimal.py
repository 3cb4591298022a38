"""The ``optimal`` verifier: exact law and acceptance = bound, replay identity, large-V checks.

Oracles: exact enumeration of every draft tuple and coin in Fractions
(:func:`spectheory.exact.exact_row`), the bound by enumeration, max-flow and the
transport LP (:func:`spectheory.solve_bound`), and an independent
reconstruction of the selection marginal from the mixture tables.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

from spectheory._errors import InvalidParameterError
from spectheory.coins import ReplayCoins
from spectheory.exact import exact_row
from spectheory.solvers.ot_dual import bound, solve_bound
from spectheory.solvers.polymatroid import PERMANENT, chord_density, plan, plan_python
from spectheory.verifiers import REGISTRY
from spectheory.verifiers.hub import greedy
from spectheory.verifiers.optimal import optimal
from spectheory.verifiers.single import sd

from ._rows import peaked_pair


def _fractions(w):
    w = [int(x) for x in w]
    if sum(w) == 0:
        w[0] = 1
    return np.array([F(x, sum(w)) for x in w], dtype=object)


def _rational_instances(count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        V = int(rng.integers(2, 6))
        n = int(rng.integers(2, 4))
        # Denominator 12 makes zeros and tied ratios common.
        yield _fractions(rng.integers(0, 5, V)), _fractions(rng.integers(0, 5, V)), n


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_law_and_acceptance_equal_bound_in_fractions(seed):
    for p, q, n in _rational_instances(30, seed):
        law, acc = exact_row(optimal, p, q, n, "iid")
        assert list(law) == list(p), (p, q, n)
        b = solve_bound(p, q, n, "iid", method="enumerate").exact_value
        assert acc == b, (p, q, n, acc, b)
        assert plan(p, q, n).alpha == b


def test_instance_a():
    p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    for n, expected in ((2, F(89, 100)), (3, None)):
        law, acc = exact_row(optimal, p, q, n, "iid")
        assert list(law) == list(p)
        if expected is None:
            expected = solve_bound(p, q, n, method="maxflow").exact_value
        want = expected
        assert acc == want


def test_float_acceptance_equals_lp_and_maxflow():
    rng = np.random.default_rng(3)
    for _ in range(25):
        V = int(rng.integers(3, 7))
        n = int(rng.integers(2, 5))
        p = rng.dirichlet(np.full(V, 0.4))
        q = rng.dirichlet(np.full(V, 0.4))
        law, acc = exact_row(optimal, p, q, n, "iid")
        # Float enumeration: rounding of O(V) operations per branch, far below 1e-12.
        np.testing.assert_allclose(law, p, rtol=0, atol=1e-12)
        for method in ("lp", "maxflow"):
            np.testing.assert_allclose(acc, solve_bound(p, q, n, method=method).value,
                                       rtol=0, atol=1e-9)  # LP tolerance 1e-10
        np.testing.assert_allclose(acc, bound(p, q, n), rtol=0, atol=1e-12)


def test_greedy_and_single_draft_delegate():
    p = np.array([F(1, 5), F(1, 2), F(3, 10)], dtype=object)
    q = np.array([F(1, 2), F(1, 5), F(3, 10)], dtype=object)
    for fn, other, n, sampling in ((optimal, greedy, 2, "greedy"), (optimal, greedy, 3, "greedy"),
                                   (optimal, sd, 1, "iid")):
        law, acc = exact_row(fn, p, q, n, sampling)
        law2, acc2 = exact_row(other, p, q, n, sampling)
        assert list(law) == list(law2) == list(p) and acc == acc2
        assert acc == solve_bound(p, q, n, sampling, method="enumerate").exact_value


@pytest.mark.parametrize("seed", [0, 1])
def test_without_replacement_exact_law_and_bound_in_fractions(seed):
    """Two drafts without replacement: exactly lossless, acceptance = alpha*_wor, exactly.

    The oracle is the enumerated bound (every draft set, docs/theory.md §2.2); the
    verifier's law and acceptance come from enumerating its coins (``exact_row``).  It
    runs ``pair_scores``' rule, so their laws and acceptances agree too; one draft is SD.
    """
    from spectheory.verifiers.pair_scores import pair_scores

    checked = 0
    for p, q, _ in _rational_instances(30, seed):
        if sum(x > 0 for x in q) < 2:
            continue  # two distinct drafts need two tokens of positive draft probability
        law, acc = exact_row(optimal, p, q, 2, "without_replacement")
        assert list(law) == list(p), (p, q)
        b = solve_bound(p, q, 2, "without_replacement", method="enumerate").exact_value
        assert acc == b, (p, q, acc, b)
        law2, acc2 = exact_row(pair_scores, p, q, 2, "without_replacement")
        assert list(law2) == list(law) and acc2 == acc
        law1, acc1 = exact_row(optimal, p, q, 1, "without_replacement")
        law_sd, acc_sd = exact_row(sd, p, q, 1, "without_replacement")
        assert list(law1) == list(law_sd) and acc1 == acc_sd
        checked += 1
    assert checked >= 20


def test_without_replacement_at_full_vocabulary():
    """check_lossless and the bound at V = 49,152, two drafts without replacement.

    The same peaked rows as the i.i.d. test; false-alarm rate 1e-6 for the law test
    and the bound test of the checker.  The plan certifies the rows reach the bound.
    """
    from spectheory.sim.check import check_lossless
    from spectheory.verifiers.pair_scores import score_plan

    p, q = peaked_pair(49_152, seed=17)
    report = check_lossless(optimal, p, q, n=2, sampling="without_replacement", trials=3000,
                            rng=1)
    assert not report.lossy and not report.exceeds_bound
    alpha = bound(p, q, 2, "without_replacement")
    np.testing.assert_allclose(report.bound, alpha.mean(), rtol=0, atol=1e-12)
    for b in range(p.shape[0]):
        assert score_plan(p[b], q[b]).reached


def test_bad_input_raises():
    import spectheory

    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.5, 0.0, 0.5])
    with pytest.raises(InvalidParameterError, match="sampling must be one of"):
        optimal(p, q, (0, 2), ReplayCoins([0.1] * 3), sampling="with_replacement")
    # More than two drafts without replacement run the priority-coin rule (they were
    # refused until it existed): the bare verifier and every validating entry point.
    p3, q3 = np.array([0.3, 0.4, 0.2, 0.1]), np.array([0.4, 0.3, 0.2, 0.1])
    assert optimal(p3, q3, (0, 1, 2), ReplayCoins([0.1] * 3),
                   sampling="without_replacement") in (0, 1, 2, 3)
    assert spectheory.verify("optimal", p3, q3, [0, 1, 2], rng=0,
                             sampling="without_replacement") in (0, 1, 2, 3)
    # four drafts of four tokens: every token is a draft, so every output is one
    sim = spectheory.simulate("optimal", p3, q3, n=4, sampling="without_replacement", trials=10)
    assert sim.accepted.all()
    # A q = 0 draft: the validating entry point refuses it; the bare verifier rejects it.
    with pytest.raises(InvalidParameterError, match="probability 0"):
        spectheory.verify("optimal", p, q, [0, 1], rng=0)
    for u0 in (0.0, 0.5, 0.99):  # draft 0 is selected whatever the component; u1 = 0 accepts
        assert optimal(p, q, (1, 0), ReplayCoins([u0, 0.0, 0.3])) == 0
    v = REGISTRY["optimal"]
    assert v.samplings == ("iid", "greedy", "without_replacement")
    assert v.supports(8, "iid") and v.supports(2, "without_replacement")
    assert v.supports(3, "without_replacement") and v.supports(8, "without_replacement")


def test_numba_plan_matches_python_plan_and_replay_identity():
    from spectheory.sim._optimal_kernel import plan_row, run_optimal

    rng = np.random.default_rng(5)
    for trial in range(60):
        V = int(rng.integers(2, 14))
        n = int(rng.integers(2, 6))
        p = rng.dirichlet(np.full(V, 0.5))
        q = rng.dirichlet(np.full(V, 0.5))
        if trial % 3 == 0:  # zeros and exact ties of p/q
            p[rng.integers(V)] = 0.0
            q = np.round(q * 8) / 8
            q[0] += 1.0 - q.sum()
            if (q < 0).any() or (q > 0).sum() < 1:
                continue
            p = p / p.sum()
        a, b = plan_row(p, q, n), plan_python(p, q, n)
        assert np.array_equal(a.order, b.order) and np.array_equal(a.rank, b.rank)
        np.testing.assert_allclose(a.y, b.y, rtol=0, atol=1e-13)
        np.testing.assert_allclose(a.w_top, b.w_top, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.w_h, b.w_h, rtol=0, atol=1e-12)
        T = 64
        drafts = rng.choice(V, size=(1, T, n), p=q)
        u = rng.random((1, T, 3))
        u[0, :8] = rng.choice([0.0, 0.5, 0.999999], size=(8, 3))  # hand-fed edge uniforms
        out = run_optimal(p[None], q[None], drafts, u)
        for t in range(T):
            ref = optimal(p, q, tuple(int(x) for x in drafts[0, t]), ReplayCoins(u[0, t]))
            assert ref == out[0, t]


def _reconstructed_marginal(pl, q, n):
    """sum_k w_k v_k: every component's tier rule, rebuilt from the ranks (slow oracle)."""
    V = q.shape[0]
    m = pl.order.shape[0]
    R = np.zeros(m + 1)
    for j in range(m - 1, -1, -1):
        R[j] = R[j + 1] + q[pl.order[j]]
    y = np.zeros(V)
    for lo, hi, w in ((0, pl.n_top, pl.w_top), (pl.n_top, m, pl.w_h)):
        if hi <= lo:
            continue
        for k, wk in enumerate(w):
            cuts = [j for j in range(lo, hi) if j == lo or pl.rank[j] > k] + [hi]
            for a, b in itertools.pairwise(cuts):
                d = chord_density(R[a], R[b], n)
                for j in range(a, b):
                    y[pl.order[j]] += wk * d * q[pl.order[j]]
    return y


def test_mixture_reproduces_the_marginal_at_moderate_size():
    rng = np.random.default_rng(7)
    for V, n in ((300, 2), (300, 4), (600, 8)):
        p = rng.dirichlet(np.full(V, 0.05))
        q = 0.7 * rng.dirichlet(np.full(V, 0.05)) + 0.3 * p
        pl = plan(p, q, n)
        assert pl.rank[0] == PERMANENT
        np.testing.assert_allclose(_reconstructed_marginal(pl, q, n), pl.y, rtol=0, atol=1e-12)
        np.testing.assert_allclose(pl.alpha, bound(p, q, n), rtol=0, atol=1e-12)


def test_large_vocabulary_acceptance_equals_bound():
    rng = np.random.default_rng(11)
    V = 49_152
    for n in (2, 4, 8):
        logits = rng.standard_normal(V) * 3.0
        p = np.exp(logits - logits.max())
        p /= p.sum()
        ql = logits + rng.standard_normal(V)
        q = np.exp(ql - ql.max())
        q /= q.sum()
        pl = plan(p, q, n)
        np.testing.assert_allclose(pl.alpha, bound(p, q, n), rtol=0, atol=1e-12)
        np.testing.assert_allclose(pl.w_top.sum(), 1.0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(pl.residual.sum(), 1.0, rtol=0, atol=1e-12)


def _near_one_hot_row(V=4_000, seed=5):
    """A peaked real-trace-like row: one token holds all but ~1e-13 of q, and ``q`` sums
    to 1 + 1.5e-13 (inside the input tolerance). T (the high p/q tokens) has q(T) below
    that rounding, so the naive ``1 - q(H*)^n`` is negative there."""
    rng = np.random.default_rng(seed)
    q = np.zeros(V)
    q[1:] = 1e-16 * rng.random(V - 1)
    q[0] = 1.0 - q[1:].sum() + 1.5e-13
    p = np.zeros(V)
    p[1:] = q[1:] * rng.uniform(0.0, 1.2, V - 1)
    p[1:100] = q[1:100] * rng.uniform(30.0, 60.0, 99)  # the T tokens: p/q 30-60
    p[0] = 1.0 - p[1:].sum()
    return p, q


@pytest.mark.parametrize("n", [2, 4, 8])
def test_plan_when_draft_mass_of_T_is_below_rounding(n):
    """Regression: the full report's replay crashed (ZeroDivisionError in the merge
    sweep) on such a quant:Q4_0 row at T = 0.7: f(T) came out negative."""
    import torch

    from spectheory.solvers._polymatroid_kernels import row_tables
    from spectheory.torch._optimal import optimal_tables

    p, q = _near_one_hot_row()
    order, nT, R, _g, y, _pos = row_tables(p, q, n)
    assert nT > 0 and 1 - R[nT] ** n < 0  # the instance exercises the cancellation
    pl = plan(p, q, n)
    assert (pl.y >= 0).all() and (pl.w_top >= 0).all() and (pl.w_h >= 0).all()
    np.testing.assert_allclose(pl.alpha, bound(p, q, n), rtol=0, atol=1e-12)
    ref = plan_python(p, q, n)
    np.testing.assert_array_equal(ref.y, pl.y)
    tb = optimal_tables(torch.tensor(p)[None], torch.tensor(q)[None], n)
    assert torch.equal(tb["y"][0], torch.tensor(pl.y))
    # The T part's selection mass is f(T) = 1 - (1 - q(T))^n, in relative terms.
    qT = q[order[:nT]].sum()
    np.testing.assert_allclose(y[order[:nT]].sum(), -np.expm1(n * np.log1p(-qT)), rtol=1e-9)


def _numpy_tables(p, q, n):
    """Oracle of row_tables' compiled part: the numpy expressions it replaced."""
    from spectheory.solvers._polymatroid_kernels import _densities, _prefix_argmin

    # Ties by id through numpy's stable sort (ids ascend in ``sup``): independent of the
    # kernel's zero split and tie pass.
    sup = np.flatnonzero(q > 0)
    asc = sup[np.argsort(p[sup] / q[sup], kind="stable")]
    kbest = _prefix_argmin(p[asc], q[asc], n)
    order = np.concatenate([asc[kbest:][::-1], asc[:kbest][::-1]])
    nT = order.shape[0] - kbest
    ps, qs = p[order], q[order]
    R = np.zeros(order.shape[0] + 1)
    R[:-1] = np.cumsum(qs[::-1])[::-1]
    g, ys = _densities(ps, qs, R, nT, n)
    pos = np.full(p.shape[0], -1, dtype=np.int64)
    pos[order] = np.arange(order.shape[0])
    y = np.zeros(p.shape[0])
    y[order] = ys
    return order, nT, R, g, y, pos


@pytest.mark.parametrize("V", [5, 300, 49152])
def test_row_tables_equal_the_numpy_expressions_bit_for_bit(V):
    """The fused kernel must not move a single bit: the coins reference, the many-trial
    kernel and the torch form all start from these tables."""
    from spectheory.solvers._polymatroid_kernels import row_tables

    rng = np.random.default_rng(V)
    for kind in ("softmax", "zeros", "ties", "residual", "half"):
        z = rng.standard_normal(V) * 3
        p = np.exp(z) / np.exp(z).sum()
        q = np.exp(z + rng.standard_normal(V))
        q /= q.sum()
        if kind == "zeros":  # q = 0 and p = 0 on random tokens
            q[rng.random(V) < 0.3] = 0.0
            p[rng.random(V) < 0.3] = 0.0
        if kind == "residual":  # a residual target: p = 0 on most tokens (one run of ties)
            p[rng.random(V) < 0.9] = 0.0
            p[0] = max(p[0], 1e-3)
        if kind == "ties":  # many equal ratios, in runs short and long
            p = np.round(p * 50) + 1.0
            q = np.round(q * 50) + 1.0
        if kind == "half":  # ratios of half-precision logits repeat in thousands of short runs
            zq = z + rng.standard_normal(V)
            p = np.exp(z.astype(np.float16).astype(np.float64))
            q = np.exp(np.round(zq * 4) / 4)
        p, q = p / p.sum(), q / q.sum()
        for n in (2, 4, 8):
            for a, b in zip(row_tables(p, q, n), _numpy_tables(p, q, n), strict=True):
                np.testing.assert_array_equal(a, b, err_msg=f"{kind} n={n}")


def test_one_position_fast_path_matches_the_reference():
    """The hull form (no merge sweep) against the coins reference on the same uniforms."""
    from spectheory.sim._optimal_kernel import optimal_token

    rng = np.random.default_rng(13)
    for _ in range(150):
        V = int(rng.integers(2, 40))
        n = int(rng.integers(2, 7))
        p = rng.dirichlet(np.full(V, 0.5))
        q = rng.dirichlet(np.full(V, 0.5))
        for _ in range(10):
            d = rng.choice(V, size=n, p=q)
            u = rng.random(3)
            ref = optimal(p, q, tuple(int(x) for x in d), ReplayCoins(u))
            assert ref == optimal_token(p, q, d, u)


@pytest.mark.parametrize(("V", "D", "n"), [(100, 300, 2), (200, 600, 4), (150, 450, 8)])
def test_independent_cvxpy_model_agrees(V, D, n):
    """cvxpy (HiGHS) on the atom model: no sort, no optimal set; agreement to 1e-9."""
    from spectheory.solvers.polymatroid import alpha_cvxpy

    rng = np.random.default_rng(V + n)
    counts = rng.multinomial(D - V, rng.dirichlet(np.full(V, 0.3))) + 1
    p = rng.dirichlet(np.full(V, 0.3))
    q = counts / D
    # HiGHS' primal/dual feasibility tolerance is 1e-7 relative; observed gaps are ~1e-14.
    np.testing.assert_allclose(alpha_cvxpy(p, counts, n), plan(p, q, n).alpha, rtol=0, atol=1e-9)
    np.testing.assert_allclose(plan(p, q, n).alpha, bound(p, q, n), rtol=0, atol=1e-12)


def test_check_lossless_at_full_vocabulary():
    """spectheory.check_lossless on peaked random rows at V = 49,152 (no recorded trace used).

    Row: logits ~ 3 N(0, 1) (a few tokens carry most mass, as real next-token
    rows), the draft's logits perturbed by N(0, 1).  False-alarm rate 1e-6.
    """
    from spectheory.sim.check import check_lossless

    p, q = peaked_pair(49_152, seed=17)
    report = check_lossless(optimal, p, q, n=4, sampling="iid", trials=3000, rng=1)
    assert not report.lossy and not report.exceeds_bound
    np.testing.assert_allclose(report.bound, bound(p, q, 4).mean(), rtol=0, atol=1e-12)


def test_plan_cache_confirms_a_fingerprint_hit_by_the_rows_themselves(monkeypatch):
    """Two rows with the same digest (forced here) must still get their own plans."""
    from spectheory.verifiers import _plan_cache
    from spectheory.verifiers import optimal as opt

    monkeypatch.setattr(_plan_cache, "fingerprint", lambda x: (0, 0))
    monkeypatch.setattr(opt, "_PLANS", _plan_cache.RowCache(opt.plan, maxsize=64))
    p1, q1 = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    p2, q2 = np.array([0.5, 0.25, 0.25]), np.array([0.2, 0.3, 0.5])
    a1 = opt.optimal_plan(p1, q1, 2)
    a2 = opt.optimal_plan(p2, q2, 2)
    assert a1 is not a2
    assert a1.alpha == pytest.approx(bound(p1, q1, 2), abs=1e-12)
    assert a2.alpha == pytest.approx(bound(p2, q2, 2), abs=1e-12)
    assert opt.optimal_plan(p1.copy(), q1.copy(), 2) is a1  # a hit, confirmed
    # A row written to after it was planned does not change the cached plan's row.
    p1[0], p1[1] = 0.35, 0.35
    assert opt.optimal_plan(p1, q1, 2) is not a1


def test_plan_cache_under_threads():
    """Threads sharing the cache (a sweep's worker) each get their row's plan, no error."""
    from concurrent.futures import ThreadPoolExecutor

    from spectheory.verifiers import optimal as opt

    rng = np.random.default_rng(7)
    rows = [(rng.dirichlet(np.ones(50)), rng.dirichlet(np.ones(50))) for _ in range(80)]
    expected = [bound(p, q, 3) for p, q in rows]
    opt.clear_plan_cache()  # 80 rows through a 64-entry cache: evictions under contention
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda r: opt.optimal_plan(r[0], r[1], 3).alpha, rows * 3))
    np.testing.assert_allclose(got, expected * 3, rtol=0, atol=1e-12)


def test_plan_cache_tells_fraction_rows_from_float_rows_of_equal_value():
    """Fraction(1, 2) == 0.5 and hashes alike: an object row of floats' plan (float
    arithmetic) was served for the Fraction row of the same values."""
    from spectheory.verifiers import optimal as opt

    q = np.array([F(7, 19), F(6, 19), F(3, 19), F(3, 19)], dtype=object)
    p_float = np.array([0.0625, 0.4375, 0.25, 0.25], dtype=object)
    p_exact = np.array([F(1, 16), F(7, 16), F(1, 4), F(1, 4)], dtype=object)
    opt.clear_plan_cache()
    opt.optimal_plan(p_float, q, 2)
    alpha = opt.optimal_plan(p_exact, q, 2).alpha
    assert type(alpha) is F and alpha == F(5353, 5776)


def _iid_bound_by_subsets(p, q, n):
    """min over token sets A of P(some of n i.i.d. drafts in A) + p(V \\ A), in Fractions of
    the float rows (normalised exactly): an oracle with no sort, no prefix lemma, no plan."""
    pf = [F(float(x)) for x in p]
    qf = [F(float(x)) for x in q]
    sp, sq = sum(pf), sum(qf)
    pf, qf = [x / sp for x in pf], [x / sq for x in qf]
    V = len(pf)
    best = None
    for r in range(V + 1):
        for A in itertools.combinations(range(V), r):
            cover = 1 - (1 - sum(qf[i] for i in A)) ** n
            value = cover + sum(pf[i] for i in range(V) if i not in A)
            best = value if best is None else min(best, value)
    return best


def test_a_subnormal_draft_entry_raises_no_warning_and_keeps_the_bound():
    """A softmax draft with a logit gap past ~708 has a subnormal entry; p / q overflows to inf.

    Regression: the plan's ratio sort let numpy's "overflow encountered in divide" escape, so
    under warnings as errors (this suite's setting, and any strict caller) ``acceptance``
    reported "verifier 'optimal' raised RuntimeWarning", and ``simulate``, ``verify``,
    ``check_lossless``, ``optimal_token`` and the torch form raised it, while ``bound`` on
    the same row did not.  The value is right: such a token's ratio sorts last, as its true
    ratio does.  Oracles: the bound by enumerating token subsets in Fractions, the coins
    reference on the same uniforms.
    """
    import warnings

    import spectheory
    from spectheory.sim._optimal_kernel import optimal_token, run_optimal

    p = spectheory.softmax(np.array([0.0, -1.0, -2.0, -3.0]))
    q = spectheory.softmax(np.array([0.0, -1.0, -2.0, -740.0]))
    assert 0 < q[3] < np.finfo(np.float64).tiny  # subnormal
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (2, 3):
            want = float(_iid_bound_by_subsets(p, q, n))
            assert abs(spectheory.acceptance("optimal", p, q, n) - want) < 1e-12
            assert abs(plan(p, q, n).alpha - want) < 1e-12
            drafts = np.array([(3,) * n, (3,) + (0,) * (n - 1), (0,) + (3,) * (n - 1)]
                              + [tuple(rng.choice(4, n, p=q)) for _ in range(20)])
            u = rng.random((drafts.shape[0], 3))
            u[:3] = [0.5, 0.5, 0.5]
            kern = run_optimal(p[None], q[None], drafts[None], u[None])[0].tolist()
            ref = [optimal(p, q, tuple(int(x) for x in d), ReplayCoins(w))
                   for d, w in zip(drafts, u)]
            one = [optimal_token(p, q, d, w) for d, w in zip(drafts, u)]
            assert ref == kern == one
            assert ref[0] == 3  # p/y is inf at the subnormal draft: accepted, as the reference
        sim = spectheory.simulate("optimal", p, q, 4, "iid", trials=200, rng=0)
        assert sim.acceptance.shape == (1,)
