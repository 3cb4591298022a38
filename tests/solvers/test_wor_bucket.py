"""The fast paths of ``bound`` against their slow oracles.

Without replacement: the sort-free bucketed scan (``_wor_bucket``) against the
full-sort, one-integral-per-prefix reference scan (``ot_dual._wor_reference``),
which uses the same quadrature; the values must agree within twice the
quadrature error bound (2e-12), and the returned certificate must attain the
value.  The cut that leaves high-ratio tokens out rests on the inclusion bound
``P(j drafted) <= c q_j``, checked here against exact enumeration in Fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import spectheory as stt
from spectheory.drafting import set_probability_row
from spectheory.exact._tuples import ordered_draft_law
from spectheory.solvers import _wor_bucket
from spectheory.solvers.ot_dual import _wor_reference

# Both scans use the same nodes; each integral is within 1e-12 of Q (docs/theory.md
# §2.5(c)), so two prefix minima differ by at most 2e-12.
AGREE = 2e-12


def _norm(x):
    return x / x.sum(axis=-1, keepdims=True)


def rows_of_kind(kind, V, B, rng):
    """(p, q) batches of the shapes that stress the fast path."""
    if kind == "dirichlet":
        alpha = rng.choice([0.02, 0.3, 3.0])
        return rng.dirichlet(np.full(V, alpha), B), rng.dirichlet(np.full(V, alpha), B)
    if kind == "softmax":  # real-like: target sharper than a noisy draft
        z = rng.standard_normal((B, V)) * 3
        temp = rng.uniform(0.7, 1.0)
        return stt.softmax(z / temp), stt.softmax((z + rng.standard_normal((B, V))) / temp)
    if kind == "peaked":  # one draft token with all but 1e-12 .. 1e-6 of the mass
        p = rng.dirichlet(np.full(V, 0.3), B)
        q = rng.dirichlet(np.full(V, 0.3), B) * 10.0 ** rng.uniform(-12, -6, (B, 1))
        q[:, rng.integers(V)] = 1.0
        return p, _norm(q)
    if kind == "tiny_tail":  # draft and target tails of 1e-250
        p = rng.dirichlet(np.ones(V), B)
        q = rng.dirichlet(np.ones(V), B)
        cut = V // 3
        q[:, cut:] = 1e-250 * rng.uniform(0.5, 2.0, (B, V - cut))
        p[:, : cut // 2] = 1e-250
        return _norm(p), _norm(q)
    if kind == "ties":  # few distinct masses: many equal ratios p/q
        p = rng.integers(0, 4, (B, V)).astype(float) + (np.arange(V) == 0)
        q = rng.integers(1, 4, (B, V)).astype(float)
        return _norm(p), _norm(q)
    if kind == "zeros":  # p = 0, q = 0 and p = q = 0 blocks
        p, q = rng.dirichlet(np.ones(V), B), rng.dirichlet(np.ones(V), B)
        a, b = V // 4, V // 2
        p[:, :a] = 0.0
        q[:, a:b] = 0.0
        p[:, b : b + V // 8] = 0.0
        q[:, b : b + V // 8] = 0.0
        return _norm(p), _norm(q)
    raise AssertionError(kind)


KINDS = ("dirichlet", "softmax", "peaked", "tiny_tail", "ties", "zeros")


def wor_set_value(p, q, members, n):
    """p(H) + 1 - Q(H): exact enumeration (small V) or the n = 2 closed form (any V)."""
    if p.size <= 8:
        return p[members].sum() + 1 - set_probability_row(q, members.tolist(), n,
                                                           "without_replacement")
    assert n == 2
    # docs/theory.md §2.5(b): Q(H) = sum_{i in H} q_i (q(H) - q_i) / (1 - q_i),
    # with 1 - q_i summed from the other tokens (no cancellation for peaked rows).
    qH = q[members]
    # 1 - q_i and q(H) - q_i, to a few ulp when q_i <= 1/2; summed from the
    # other tokens otherwise (the differences would cancel for a peaked draft).
    rest, inside = q.sum() - qH, qH.sum() - qH
    for k in np.flatnonzero(qH > 0.5):
        rest[k] = np.delete(q, members[k]).sum()
        inside[k] = np.delete(qH, k).sum()
    Q = np.sum(qH * inside / rest)
    return p[members].sum() + 1 - Q


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("V", [5, 300, 50_000])
def test_fast_wor_scan_equals_the_reference_scan(kind, V):
    rng = np.random.default_rng([V, len(kind)])
    B = {5: 40, 300: 12, 50_000: 2}[V]
    p, q = rows_of_kind(kind, V, B, rng)
    for n in (2, 3, 4, 8):
        if n >= V:
            continue
        keep = (q > 0).sum(axis=1) >= n
        res = stt.solve_bound(p[keep], q[keep], n, "without_replacement")
        ref = _wor_reference(p[keep], q[keep], n)[0]
        np.testing.assert_allclose(res.value, ref, rtol=0, atol=AGREE)
        if n == 2 or V <= 8:
            for b in np.flatnonzero(res.value < 1):
                members = np.flatnonzero(res.certificate[b])
                got = wor_set_value(p[keep][b], q[keep][b], members, n)
                # value of the certificate: quadrature error 1e-12 plus the
                # closed form's rounding (V ulp of the sums, 1e-11 at V = 50k)
                assert abs(got - res.value[b]) <= 2e-11, (kind, n, b, got, res.value[b])


def test_fast_wor_scan_on_many_peaked_and_flat_rows():
    # 200 rows, V = 2000: hypothesis-free sweep over the kinds and n.
    rng = np.random.default_rng(7)
    for _ in range(10):
        for kind in KINDS:
            p, q = rows_of_kind(kind, 2000, 2, rng)
            n = int(rng.integers(2, 9))
            res = stt.solve_bound(p, q, n, "without_replacement").value
            ref = _wor_reference(p, q, n)[0]
            np.testing.assert_allclose(res, ref, rtol=0, atol=AGREE, err_msg=f"{kind} n={n}")


@pytest.mark.parametrize("n", [2, 3, 4])
def test_cut_bounds_every_inclusion_probability(n):
    # P(token j is among the n drafts) <= c q_j, exactly, on small rows incl. peaked ones.
    rng = np.random.default_rng(n)
    mark = np.zeros(7, dtype=bool)
    for rep in range(30):
        q = rng.dirichlet(np.full(7, 0.3))
        if rep % 3 == 0:
            q = _norm(q * 1e-9 + np.eye(7)[rep % 7])
        c = _wor_bucket._cut(q, n, mark)
        assert not mark.any()
        qf = np.array([Fraction(float(v)) for v in q], dtype=object)
        qf = qf / sum(qf)
        incl = [Fraction(0)] * 7
        for tup, w in ordered_draft_law(qf, n, "without_replacement"):
            for j in tup:
                incl[j] += w
        for j in range(7):
            assert incl[j] <= Fraction(c) * qf[j], (q, j)


def test_cut_leaves_out_high_ratio_tokens_and_the_value_stays():
    # Half of the tokens have p / q far above the cut: the scan never sees them,
    # the answer is the reference's and the certificate excludes them.
    rng = np.random.default_rng(3)
    V = 4000
    q = rng.dirichlet(np.ones(V))
    p = q * rng.uniform(0.2, 2.0, V)
    p[V // 2 :] = q[V // 2 :] * 1e6
    p = _norm(p)
    for n in (2, 4, 8):
        cut = _wor_bucket._cut(q, n, np.zeros(V, dtype=bool))
        assert n <= cut < 1e5  # a draft this flat draws no token much beyond n q_j
        res = stt.solve_bound(p, q, n, "without_replacement")
        ref = _wor_reference(p[None], q[None], n)[0][0]
        assert abs(res.value - ref) <= AGREE
        assert not res.certificate[V // 2 :].any()


def test_snapshot_pool_overflow_gives_the_same_answer():
    # Many candidate buckets at once: the oldest pending bucket is scanned early
    # when the pool is full; the answer must not change.  A flat row (p = q up to
    # 1e-3) makes every bucket a candidate for a long time.
    rng = np.random.default_rng(11)
    V = 20_000
    q = rng.dirichlet(np.ones(V))
    p = _norm(q * (1 + 1e-3 * rng.standard_normal(V)))
    for n in (2, 5):
        res = stt.solve_bound(p, q, n, "without_replacement").value
        ref = _wor_reference(p[None], q[None], n)[0][0]
        assert abs(res - ref) <= AGREE


@pytest.mark.parametrize("kind", ["softmax", "dirichlet", "ties"])
def test_a_pool_of_one_snapshot_gives_the_same_answer(kind):
    # With one saved state per level every pending bucket and chunk is scanned
    # as soon as the next one needs the slot: a different path, the same minimum.
    from spectheory.solvers._bound_kernels import wor_t0

    rng = np.random.default_rng(5)
    p, q = rows_of_kind(kind, 3000, 2, rng)
    for n in (2, 4, 8):
        small, _, stats = _wor_bucket.wor_bucket_min(p, q, n, wor_t0(n), 1)
        assert stats[:, 3].sum() > 0  # some bucket was scanned again in order
        full = _wor_bucket.wor_bucket_min(p, q, n, wor_t0(n))[0]
        ref = _wor_reference(p, q, n)[0]
        np.testing.assert_allclose(1 + small, ref, rtol=0, atol=AGREE)
        np.testing.assert_allclose(1 + full, ref, rtol=0, atol=AGREE)


@pytest.mark.parametrize("n", [2, 4, 8, 9])
def test_grouped_clock_update_equals_token_by_token(n):
    # The power-sum update of a group of small tokens against one token at a time,
    # on the lattice of the scan, from a non-trivial starting law.
    import math

    from spectheory.solvers._bound_kernels import WOR_STEP

    rng = np.random.default_rng(n)
    G = 60
    t = np.exp(math.log(2.0**-8) + WOR_STEP * np.arange(G))
    lim = _wor_bucket.WOR_GROUP_X / t[-1]
    start = rng.uniform(0, 1, (n, G))
    for scale_exp in (0, -3, -12):  # x t up to the limit, and far below it
        xs = rng.uniform(0, lim * 2.0**scale_exp, 500)
        xs[:3] = lim * 2.0**scale_exp  # at the limit itself
        P1, P2 = start.copy(), start.copy()
        a, y = np.empty(G), np.empty(G)
        for x in xs:
            _wor_bucket._add_token(P1, x, t, a, y, G, n)
        A = _wor_bucket._expm1_power_table(n)
        Kd = _wor_bucket._group_terms(n, G, WOR_STEP)
        work = [np.empty(n), np.empty(n + _wor_bucket.WOR_GROUP_TERMS),
                np.empty(n + _wor_bucket.WOR_GROUP_TERMS), np.empty(n), np.empty(G), np.empty(G)]
        F, M, tp, W, E0, Y0 = work
        _wor_bucket._add_group(P2, xs, xs.size, t, G, n, A, Kd, F, M, tp, W, E0, Y0)
        # 500 sequential updates round ~500 times: 1e-13 absolute; the group a few ulp
        np.testing.assert_allclose(P2, P1, rtol=0, atol=1e-13)
        if scale_exp == 0:  # the update moved the law (the check is not vacuous)
            assert np.abs(P1 - start).max() > 1e-2


# --- i.i.d.: the bucketed scan (_bound_kernels.iid_bucket_min) against the full sort ---


def iid_set_value(p, q, members, n):
    """p(H) + 1 - q(H)^n, with q(H) = 1 - (mass outside H) summed directly."""
    out = np.ones(p.size, dtype=bool)
    out[members] = False
    lam = q[out].sum()
    if lam >= 1.0:  # H holds no draft mass (a whole row may sum to 1 + 1 ulp)
        return p[members].sum() + 1
    return p[members].sum() + 1 - np.exp(n * np.log1p(-lam))


def iid_edge_rows(kind, V, B, rng):
    """Rows aimed at the i.i.d. bucket test: ratios on bucket edges, one-hot rows."""
    if kind == "bucket_edge":  # every ratio p/q exactly (1 + k/64) 2^e: a bucket's lower edge
        q = rng.dirichlet(np.ones(V), B)
        k = rng.integers(0, 64, (B, V))
        e = rng.integers(-6, 3, (B, V))
        p = q * (1 + k / 64) * 2.0**e  # exact: a 7-bit factor and a power of 2
        s = p.sum(axis=1, keepdims=True)
        return p / s, q  # dividing every p by one constant keeps the ties among ratios
    if kind == "onehot":
        p = np.zeros((B, V))
        p[np.arange(B), rng.integers(0, V, B)] = 1.0
        q = rng.dirichlet(np.full(V, 0.3), B)
        q[0] = p[0]
        return p, q
    return rows_of_kind(kind, V, B, rng)


def _exact_prefix_sums(x):
    """Prefix sums of float64 ``x`` (0..V terms), each exact then rounded once to float."""
    one = 1 << 1074  # every float64 is an integer multiple of 2^-1074
    acc, out = 0, [0.0]
    for v in x.tolist():
        num, den = v.as_integer_ratio()
        acc += num * (one // den)
        out.append(acc / one)  # int / int: correctly rounded
    return np.array(out)


def exact_sum_scan(p, q, n):
    """Full-sort prefix scan of one row with exactly summed ``p(H_k)`` and outside mass.

    The prefix sums and the outside masses ``1 - q(H_k)`` are exact sums rounded
    once; ``q(H)^n = exp(n log1p(-outside))``: the oracle is accurate to a few
    ulp, whatever the order of summation of the fast path.
    """
    order = stt.solvers.ratio_order(p[None], q[None])[0]
    P = _exact_prefix_sums(p[order])
    lam = _exact_prefix_sums(q[order][::-1])[::-1]  # draft mass after each prefix
    safe = np.where(lam < 1.0, lam, 0.0)  # lam >= 1: q(H) = 0
    power = np.where(lam < 1.0, np.exp(n * np.log1p(-safe)), 0.0)
    return 1 + min(0.0, (P - power).min())


IID_KINDS = (*KINDS, "bucket_edge", "onehot")
# Both scans sum the same masses in different orders (V terms of at most 1):
# the values agree to V ulp; 1e-12 covers V = 50k with margin.
IID_AGREE = 1e-12


@pytest.mark.parametrize("kind", IID_KINDS)
@pytest.mark.parametrize("V", [5, 300, 50_000])
def test_fast_iid_scan_equals_the_full_sort(kind, V):
    from spectheory.solvers import _bound_kernels as bk
    from spectheory.solvers.ot_dual import iid_reference

    rng = np.random.default_rng([V, len(kind), 1])
    B = {5: 40, 300: 12, 50_000: 3}[V]
    p, q = iid_edge_rows(kind, V, B, rng)
    for n in (1, 2, 3, 4, 8, 1000):
        res = stt.solve_bound(p, q, n, "iid")
        if n <= 8 and kind != "ties":
            # (iid_reference raises the running sum to the power n: its rounding,
            # V n ulp, exceeds 1e-12 on 50k equal masses and at n = 1000)
            ref = iid_reference(p, q, n)[0]
            np.testing.assert_allclose(res.value, ref, rtol=0, atol=IID_AGREE,
                                       err_msg=f"{kind} n={n}")
        fast = 1 + bk.iid_bucket_min(p, q, float(n), float(n))[0]  # on the same rows
        for b in range(B):
            want = exact_sum_scan(p[b], q[b], n)
            assert abs(fast[b] - want) <= IID_AGREE, (kind, n, b, fast[b], want)
        for b in range(B):  # the certificate attains the value
            members = np.flatnonzero(res.certificate[b])
            got = iid_set_value(p[b], q[b], members, n)
            assert abs(got - res.value[b]) <= IID_AGREE, (kind, n, b, got, res.value[b])
        # the serial and parallel kernels compute the same rows the same way
        ser = bk._iid_bucket_serial(p, q, float(n), float(n))
        par = bk._iid_bucket_parallel(p, q, float(n), float(n))
        np.testing.assert_array_equal(ser[0], par[0])
        np.testing.assert_array_equal(ser[1], par[1])


@pytest.mark.parametrize("n", [2, 3, 5])
def test_fast_iid_scan_equals_exact_enumeration(n):
    # Every token set in Fractions (solve_bound method="enumerate") on small rows,
    # including ties, zeros and ratios on bucket edges.
    rng = np.random.default_rng(n)
    for kind in IID_KINDS:
        p, q = iid_edge_rows(kind, 6, 4, rng)
        for b in range(4):
            exact = stt.solve_bound(p[b], q[b], n, "iid", "enumerate").exact_value
            assert abs(stt.bound(p[b], q[b], n, "iid") - float(exact)) <= 1e-14, (kind, b)


def test_iid_bucket_index_equals_the_frexp_formula():
    # The bit-pattern bucket against 2 + (e - emin) 64 + floor((m - 1/2) 128), r = m 2^e,
    # at bucket edges, just below them, and across the exponent range.
    import math

    from spectheory.solvers import _bound_kernels as bk

    @__import__("numba").njit
    def bucket_of(r):
        b = (bk._f64_bits(r) >> bk._IID_SHIFT) - bk._IID_BASE
        return b, bk._bits_f64((b + bk._IID_BASE) << bk._IID_SHIFT)

    emin = bk.IID_MIN_EXPONENT
    rng = np.random.default_rng(0)
    edges = [(1 + k / 64) * 2.0**e for k in range(64) for e in range(emin - 1, 12)]
    rs = edges + [np.nextafter(r, 0) for r in edges] + list(10 ** rng.uniform(-17, 3, 2000))
    for r in rs:
        m, e = math.frexp(r)
        want = 2 + (e - emin) * 64 + int((m - 0.5) * 128) if e >= emin else 1
        got, lo_kernel = bucket_of(r)
        assert (got if got >= 2 else 1) == want, r
        if got >= 2:  # the bucket's lower edge from its index is at most r
            lo = float(np.int64((got + bk._IID_BASE) << bk._IID_SHIFT).view(np.float64))
            assert lo_kernel == lo <= r < lo * (1 + 1 / 64) * (1 + 1e-15)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_bucket_bound_holds_exactly_for_every_run_of_the_ratio_order(n):
    # The pending-bucket test of _wor_bucket_row: for a run of consecutive tokens
    # (in ratio order) with ratios >= r_lo, every prefix ending inside it has
    # f >= P_start - Q_end + r_lo (Q_end - Q_start) / c.  Checked in Fractions
    # (exact Q by enumeration) for every run below the cut c (from _cut, c(1 + 1e-9)).
    rng = np.random.default_rng(10 + n)
    V = 7
    mark = np.zeros(V, dtype=bool)
    checked = broken = 0
    for rep in range(12):
        q = rng.dirichlet(np.full(V, 0.5))
        p = rng.dirichlet(np.full(V, 0.5))
        if rep % 4 == 0:  # equal ratios inside runs
            p = _norm(q * rng.integers(1, 3, V))
        cut = Fraction(_wor_bucket._cut(q, n, mark))
        qf = [Fraction(float(v)) for v in q]
        pf = [Fraction(float(v)) for v in p]
        qf = [v / sum(qf) for v in qf]
        pf = [v / sum(pf) for v in pf]
        law = ordered_draft_law(np.array(qf, dtype=object), n, "without_replacement")
        order = sorted(range(V), key=lambda i: pf[i] / qf[i])
        Q, P = [], []
        for k in range(V + 1):
            H = set(order[:k])
            Q.append(sum((w for tup, w in law if set(tup) <= H), Fraction(0)))
            P.append(sum((pf[i] for i in order[:k]), Fraction(0)))
        for a in range(V):
            for b in range(a + 1, V + 1):  # the run order[a:b]
                if pf[order[b - 1]] >= cut * qf[order[b - 1]]:
                    continue  # the kernel never scans tokens at or above the cut
                r_lo = min(pf[i] / qf[i] for i in order[a:b])
                gain = r_lo * max(Fraction(0), Q[b] - Q[a]) / cut
                for k in range(a + 1, b):
                    assert P[k] - Q[k] >= P[a] - Q[b] + gain, (rep, a, b, k)
                    checked += 1
                    # not vacuous: the bound with the cut divided by 4 fails somewhere
                    broken += P[k] - Q[k] < P[a] - Q[b] + 4 * gain
    assert checked > 100 and broken > 0, (checked, broken)


def test_bucket_floor_is_below_every_ratio_of_its_bucket():
    # _bucket_floor(b) <= p/q for every token the w/o-replacement scan puts in bucket b,
    # and within one bucket width of it (the bound is not vacuous).
    rng = np.random.default_rng(4)
    per, emin = _wor_bucket.WOR_PER_OCTAVE_BUCKETS, _wor_bucket.WOR_MIN_EXPONENT
    last = 2 + (40 - emin + 1) * per
    edges = [(0.5 + k / (2 * per)) * 2.0**e for k in range(per) for e in range(emin, 40)]
    rs = edges + [np.nextafter(r, np.inf) for r in edges] + list(10 ** rng.uniform(-20, 11, 3000))
    for r in rs:
        b = _wor_bucket._bucket_of(r, emin, per, last)
        lo = _wor_bucket._bucket_floor(b, emin, per)
        assert lo <= r, (r, b, lo)
        if 2 <= b < last:
            assert r < lo * (1 + 1 / per) * (1 + 1e-14), (r, b, lo)


def test_serial_and_parallel_wor_kernels_agree_exactly():
    # wor_bucket_min runs rows serially or in parallel (spectheory._threads.run_parallel):
    # both loops call the same row kernel, so the results are equal.
    from spectheory.solvers._bound_kernels import wor_step, wor_t0

    rng = np.random.default_rng(9)
    for kind in ("softmax", "ties", "peaked"):
        p, q = rows_of_kind(kind, 3000, 4, rng)
        for n in (2, 5):
            outs = []
            for kernel in (_wor_bucket._wor_bucket_serial, _wor_bucket._wor_bucket_parallel):
                best, cert = np.zeros(4), np.zeros((4, 3000), dtype=bool)
                stats = np.zeros((4, 4), dtype=np.int64)
                kernel(p, q, n, wor_t0(n), wor_step(n), _wor_bucket.WOR_SNAPSHOTS, best, cert,
                       stats)
                outs.append((best, cert, stats))
            for a, b in zip(*outs, strict=True):
                np.testing.assert_array_equal(a, b)
            assert (outs[0][0] < 0).all()  # the rows have a non-trivial optimum
