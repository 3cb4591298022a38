r"""Sort-free prefix scan of the without-replacement dual (numba, private).

The reference scan (:func:`._bound_kernels.wor_prefix_min`) sorts the whole
vocabulary by ``p/q`` and evaluates the exponential-clock integral of
``Q(H_k)`` after every token.  This kernel returns the same minimum over the
same prefixes, ``min_k [p(H_k) - Q(H_k)]`` (docs/theory.md §2.4, §2.5(c)),
without the sort and with far fewer integrals:

1. **Cut.**  With :math:`R_m` the draft mass left after removing the ``m``
   largest draft tokens, every draw of the sequence takes token ``j`` with
   probability at most :math:`q_j / R_m`, so ``j`` is drawn with probability
   :math:`\pi_j \le c\, q_j`, :math:`c = \sum_{m=0}^{n-1} 1/R_m`.  For any
   prefixes :math:`H_K \subseteq H_k`,
   :math:`Q(H_k) - Q(H_K) \le P(\text{some draft} \in H_k \setminus H_K)
   \le \sum_{j \in H_k \setminus H_K} \pi_j`, hence
   :math:`f(k) - f(K) \ge \sum_{j} (p_j - \pi_j) \ge 0` when every token
   after ``K`` has :math:`p_j/q_j \ge c`.  Those tokens (a suffix of the ratio
   order) and the tokens with ``q = 0`` are never scanned; ``p = q = 0``
   tokens change neither term and are skipped too.
2. **Buckets.**  The other tokens go to order-preserving buckets of ``p/q``
   (``WOR_PER_OCTAVE_BUCKETS`` per octave, from :func:`math.frexp`).  The
   ratio order is the concatenation of the buckets, each sorted; the
   Poisson-binomial state after a whole bucket does not depend on the order
   inside it, so buckets are added in bulk and ``Q`` is evaluated at bucket
   ends only.
3. **Bounds.**  ``p(H)`` and ``Q(H)`` both increase along the order, so a
   prefix inside bucket ``b`` has
   :math:`f \ge P_{\text{start}}(b) + \min_{j\in b} p_j - Q(\text{end of } b)`;
   and, adding draft mass ``d`` inside the bucket, whose ratios are at least
   its floor :math:`r_b`, it has :math:`P \ge P_{\text{start}} + r_b d` and
   (step 1) :math:`Q \le \min(Q_{\text{end}}, Q_{\text{start}} + c d)`, so
   :math:`f \ge P_{\text{start}} - Q_{\text{end}}
   + r_b (Q_{\text{end}} - Q_{\text{start}}) / c` (``r_b < c`` below the
   cut; :math:`Q_{\text{start}}` is the integral at the previous bucket end
   or its upper bound :math:`q(H)^n`).
   A bucket whose bound beats the best value found is kept pending, with a
   snapshot of the state at its start, and dropped as soon as a later best
   overtakes its bound; the buckets still pending at the end are sorted and
   scanned again in ratio order, by the same scheme one level down (chunks of
   ``WOR_CHUNK`` tokens, :func:`_scan_sorted`), and the chunks still pending
   there token by token.  Prefixes whose i.i.d. value :math:`p(H) - q(H)^n`
   (a lower bound, since :math:`Q_{\rm wor}(H) \le q(H)^n`, §2.7) is not
   below the best are never integrated, and the scan stops when no later
   bucket can go below it.
4. **Groups.**  The tokens of a bucket or chunk whose clock ``x t`` stays
   below ``WOR_GROUP_X`` at every live node enter the Poisson-binomial law
   together, from their power sums (:func:`_add_group`), with a certified
   Taylor remainder below 4e-18 per coefficient.

Every skipped prefix is skipped by an inequality between exact quantities, so
the result is the prefix minimum of the reference scan up to the quadrature
error of the integrals it does evaluate (the same nodes and rule) and the
rounding of the grouped updates (a few ulp per group).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .._threads import run_parallel
from ._bound_kernels import (
    _low_coefficients,
    _octave_powers,
    _pow_complement,
    _prune,
    _q_integral,
    wor_step,
)

__all__ = ["WOR_CUT_MARGIN", "WOR_PER_OCTAVE_BUCKETS", "wor_bucket_min"]

#: Buckets per octave of ``p/q``: finer buckets make the per-bucket bound
#: tighter (fewer buckets scanned token by token) at the cost of more integrals.
WOR_PER_OCTAVE_BUCKETS = 16
#: Ratios below ``2**WOR_MIN_EXPONENT`` share one bucket.
WOR_MIN_EXPONENT = -60
#: Ratios above ``2**WOR_MAX_EXPONENT`` (and ``p / subnormal q = inf``) share the last bucket.
WOR_MAX_EXPONENT = 1030
#: Relative margin on the cut ``c``: covers the rounding of the sums ``R_m``
#: (at most V ulp, 1e-10 at V = 10^6) and of ``c q_j``.
WOR_CUT_MARGIN = 1e-9
#: A bucket's tokens with ``x t <= WOR_GROUP_X`` at every live node ``t`` (``x``
#: the scaled draft mass) enter the Poisson-binomial law together, through
#: power sums (:func:`_add_group`).  The Taylor remainder of ``(e^u - 1)^k``
#: after ``WOR_GROUP_TERMS + 1`` terms is below
#: ``(k u)^13 / 13! e^{k u} < 4e-18`` relative to ``u^k`` for ``k u <= 1/4``;
#: the group is used for ``n <= 9`` (``k <= 8``, ``k u <= 1/4``).
WOR_GROUP_X = 1.0 / 32.0
WOR_GROUP_TERMS = 12
#: Largest ``n`` with grouped updates, and the fewest small tokens worth a group.
WOR_GROUP_MAX_N = 9
WOR_GROUP_MIN = 8
#: Tokens per chunk when a bucket is scanned in ratio order (see :func:`_scan_sorted`).
WOR_CHUNK = 32
#: Snapshots of the Poisson-binomial state kept for buckets that may still
#: need a token-by-token scan; when all are taken the oldest is scanned at once.
WOR_SNAPSHOTS = 32


@njit(cache=True)
def _cut(q, n, mark):
    """``c (1 + margin)``: tokens with ``p >= cut q`` cannot improve on the prefix before them.

    ``inf`` (no cut) when ``n`` is large or the mass left after the ``n - 1``
    largest tokens is 0.  ``mark`` is a scratch bool array of length V, left False.
    """
    V = q.shape[0]
    m = n - 1
    if m > 64:
        return np.inf
    top = np.zeros(m)
    idx = np.full(m, -1, dtype=np.int64)
    for i in range(V):
        x = q[i]
        if x > top[m - 1] or idx[m - 1] < 0:
            j = m - 1
            while j > 0 and (idx[j - 1] < 0 or top[j - 1] < x):
                top[j] = top[j - 1]
                idx[j] = idx[j - 1]
                j -= 1
            top[j] = x
            idx[j] = i
    for j in range(m):
        mark[idx[j]] = True
    rest = 0.0  # summed directly: 1 - q(top) would cancel for a peaked draft
    for i in range(V):
        if not mark[i]:
            rest += q[i]
    for j in range(m):
        mark[idx[j]] = False
    if rest <= 0.0:
        return np.inf
    c = 1.0 / rest
    for j in range(m - 1, -1, -1):  # R_j = rest + top[j] + ... + top[m - 1]
        rest += top[j]
        c += 1.0 / rest
    return c * (1.0 + WOR_CUT_MARGIN)


@njit(cache=True)
def _ratio_key(pi, qi):
    """``p/q`` as a sort key that keeps distinct ratios apart when ``p/q`` overflows.

    ``p / subnormal q`` rounds to ``inf`` for every such token, which tied ratios
    as far apart as 1e308 and 1e323 (all of them fall in the last bucket, and only
    there: no finite ratio reaches it).  Those are compared by ``(p 2^-200) / q``,
    finite and exact to rounding, since ``p >= 2^-50`` when ``p/q`` overflows.
    """
    r = pi / qi
    if r < np.inf:
        return r
    return (pi * 2.0**-200) / qi


@njit(cache=True)
def _bucket_of(r, emin, per, last):
    if r == 0.0:
        return 0
    if not r < np.inf:
        return last
    m, e = math.frexp(r)
    if e < emin:
        return 1
    b = 2 + (e - emin) * per + int((m - 0.5) * 2.0 * per)
    return min(b, last)


#: Slack on the bucket bound that uses two computed integrals (each within
#: 1e-12 of Q, docs/theory.md §2.5(c)): a bucket is dropped only when its bound
#: beats the best by more than this.
WOR_BOUND_SLACK = 4e-12


@njit(cache=True)
def _bucket_floor(b, emin, per):
    """A lower bound of ``p_j / q_j`` for every token of bucket ``b`` (exact edge, less 1e-15).

    ``fl(p/q)`` at or above the edge puts the exact ratio at least ``edge / (1 + 2^-53)``.
    """
    if b < 2:
        return 0.0
    k = b - 2
    return math.ldexp(0.5 + (k % per) / (2.0 * per), emin + k // per) * (1.0 - 1e-15)


@njit(cache=True)
def _add_token(P, x, t, a, y, g_hi, n):
    """Multiply the truncated Poisson-binomial law by the clock of one token (mass x)."""
    _octave_powers(x, t, a, y, g_hi)
    for j in range(n - 1, 0, -1):
        for g in range(g_hi):
            P[j, g] = P[j, g] * a[g] + P[j - 1, g] * y[g]
    for g in range(g_hi):
        P[0, g] *= a[g]


@njit(cache=True)
def _expm1_power_table(n):
    """``A[m, k]``: coefficient of ``x^(m+k)`` in ``(e^x - 1)^m``, m < n, k <= WOR_GROUP_TERMS."""
    K = WOR_GROUP_TERMS
    A = np.zeros((n, K + 1))
    A[0, 0] = 1.0
    for m in range(1, n):
        # (e^x - 1)^m = (e^x - 1)^(m-1) * sum_{i >= 1} x^i / i!
        for k in range(K + 1):
            s = 0.0
            fact = 1.0
            for i in range(1, k + 2):
                fact *= i
                s += A[m - 1, k + 1 - i] / fact
            A[m, k] = s
    return A


@njit(cache=True)
def _add_group(P, xs, m, t, g_hi, n, A, Kd, F, M, tp, W, E0, Y0):
    """Multiply the law by the clocks of ``m`` small tokens at once (masses ``xs[:m]``).

    At node ``t`` the tokens contribute ``prod_i (e^{-x_i t} + (1 - e^{-x_i t}) z)
    = e^{-t sum x} exp(sum_{k>=1} (-1)^(k+1) W_k z^k / k)`` with
    ``W_k = sum_i (e^{x_i t} - 1)^k``, exact modulo ``z^n``.  Every token has
    ``x_i t <= WOR_GROUP_X`` at every live node, and ``W_k`` is summed from the
    power sums ``sum_i (x_i t_top)^r`` by the Taylor series of ``(e^u - 1)^k``
    cut after ``WOR_GROUP_TERMS + 1`` terms (relative error below 1e-17, see
    :data:`WOR_GROUP_X`).  The coefficients of the exponential are positive
    (elementary symmetric functions of ``e^{x_i t} - 1``); the recurrence that
    forms them has terms of size at most ``e^{-W_1} W_1^j / j!`` (the law of a
    Poisson count, at most 1), so its absolute error is a few ulp.
    """
    t_top = t[g_hi - 1]
    R = n - 1 + WOR_GROUP_TERMS
    for r in range(R + 1):
        M[r] = 0.0
    sx = 0.0
    for i in range(m):
        sx += xs[i]
        u = xs[i] * t_top
        v = u
        for r in range(1, R + 1):
            M[r] += v
            v *= u
    _octave_powers(sx, t, E0, Y0, g_hi)  # e^{-t sum x}: absolute error ~2 ulp
    for g in range(g_hi):
        d = g_hi - 1 - g  # steps below the top node: fewer terms where x t is smaller
        tau = t[g] / t_top
        v = tau
        for r in range(1, Kd[d, 0] + 1):
            tp[r] = v * M[r]  # tau^r M_r
            v *= tau
        sign = 1.0
        for k in range(1, n):  # (-1)^(k+1) W_k, W_k = sum_r A[k, r] tau^(k+r) M_(k+r)
            w = 0.0
            for r in range(Kd[d, k]):
                w += A[k, r] * tp[k + r]
            W[k] = sign * w
            sign = -sign
        F[0] = E0[g]
        for j in range(1, n):  # F = exp(sum_k (-1)^(k+1) W_k z^k / k) mod z^n
            acc = 0.0
            for k in range(1, j + 1):
                acc += W[k] * F[j - k]
            F[j] = acc / j
        for j in range(n - 1, -1, -1):
            acc = 0.0
            for i in range(j + 1):
                acc += P[i, g] * F[j - i]
            P[j, g] = acc


@njit(cache=True)
def _group_terms(n, G, h):
    """``Kd[d, k]``: Taylor terms of ``W_k`` at a node ``d`` steps below the top.

    There every group token has ``u = x t <= WOR_GROUP_X e^{-h d}``.  The
    remainder of ``(e^u - 1)^k`` after ``K`` terms is at most
    ``rho = (k u)^K / K! e^{k u}`` relative to ``u^k`` (the Taylor coefficients
    of ``((e^u - 1)/u)^k`` are dominated by those of ``e^{k u}``).  An error
    ``rho W_k`` moves a coefficient ``F_j`` by at most ``n rho u^(k-1)``
    (``W_k <= W_1 (u e^u)^(k-1)``, and ``W_1 F_i <= n`` since ``F_i`` is at
    most a Poisson probability), so ``K`` is the least count with
    ``n rho u^(k-1) e^{(k-1) u} <= 4e-18``; ``W_k`` is left out (``K = 0``)
    when that holds with ``rho = 1``.  ``Kd[d, 0]`` is the largest power
    ``k + K - 1`` of ``tau`` needed at that node.
    """
    Kd = np.zeros((G, n), dtype=np.int64)
    for d in range(G):
        u = WOR_GROUP_X * math.exp(-h * d)
        top = 1
        for k in range(1, n):
            weight = n * u ** (k - 1) * math.exp((k - 1) * u)
            K = 0
            rho = 1.0  # bound with K terms kept: (k u)^K / K! e^{k u}, and 1 for K = 0
            while K < WOR_GROUP_TERMS + 1 and weight * rho > 4e-18:
                K += 1
                rho = rho * k * u / K if K > 1 else k * u * math.exp(k * u)
            Kd[d, k] = K
            if K > 0:
                top = max(top, k + K - 1)
        Kd[d, 0] = top
    return Kd


@njit(cache=True)
def _scan_bucket(b, P0, g0, p, q, toks, keys, n, best, Pstart, support0, tail_b,
                 scale, t, coef, h, P, a, y, e, work):
    """Token-by-token scan of bucket ``b`` from the state ``P0`` at its start.

    Evaluates the inner prefixes (all but the whole bucket, evaluated in bulk).
    Returns the best value found below ``best`` (or ``best``) and its inner index
    (-1 when none is better).
    """
    m = toks.shape[0]
    order = np.argsort(keys, kind="mergesort")
    rest = np.empty(m)
    acc = 0.0
    for k in range(m - 1, -1, -1):  # draft mass after position k inside the bucket
        rest[k] = acc
        acc += q[toks[order[k]]]
    for j in range(n):
        for g in range(g0):
            P[j, g] = P0[j, g]
    g_hi = g0
    pH = Pstart
    support = support0
    inner = -1
    for k in range(m - 1):
        i = toks[order[k]]
        _add_token(P, q[i] * scale, t, a, y, g_hi, n)
        g_hi = _prune(P, g_hi, n)
        support += 1
        pH += p[i]
        if support < n:
            continue
        lam = tail_b + rest[k]
        if pH - _pow_complement(lam, n) >= best:
            continue
        f = pH - _q_integral(P, lam, scale, t, g_hi, n, coef, h, e, work)
        if f < best:
            best = f
            inner = k
    return best, inner


@njit(cache=True)
def _add_tokens(P, sub, c0, c1, q, scale, t, g_hi, n, A, Kd, xs, a, y, F, M, tp, W):
    """Add the tokens ``sub[c0:c1]``: small ones as a group, the others one by one."""
    if n <= WOR_GROUP_MAX_N and c1 - c0 >= WOR_GROUP_MIN and g_hi > 0:
        lim = WOR_GROUP_X / t[g_hi - 1]
        m = 0
        for k in range(c0, c1):
            x = q[sub[k]] * scale
            if x <= lim:
                xs[m] = x
                m += 1
            else:
                _add_token(P, x, t, a, y, g_hi, n)
        if m > 0:
            _add_group(P, xs, m, t, g_hi, n, A, Kd, F, M, tp, W, a, y)
    else:
        for k in range(c0, c1):
            _add_token(P, q[sub[k]] * scale, t, a, y, g_hi, n)


@njit(cache=True)
def _scan_sorted(sub, P0, g0, p, q, n, best, Pstart, support0, tail_b, scale, t, coef, h,
                 A, Kd, bufs, snaps, cut):
    """Scan of one bucket's tokens ``sub`` (in ratio order) from the state ``P0``.

    The same scheme as the bucket level, one level down: chunks of
    ``WOR_CHUNK`` consecutive tokens are added in bulk and integrated at their
    ends; a chunk whose bound ``P(before) + min p - Q(end)`` beats the best is
    kept (with a snapshot of the state before it) and, unless a later best
    overtakes its bound, scanned token by token.  The whole bucket's prefix
    (its last position) is not evaluated again.

    Returns the best value (``best`` if none lower) and its position in ``sub``
    (-1 when none is better).
    """
    P, Pw, a, y, e, work, xs, F, M, tp, W = bufs
    m = sub.shape[0]
    C = WOR_CHUNK
    S = snaps.shape[0]
    rest = np.empty(m)
    acc = 0.0
    for k in range(m - 1, -1, -1):  # draft mass after position k inside the bucket
        rest[k] = acc
        acc += q[sub[k]]
    Qc_ub = _pow_complement(tail_b + acc, n)  # Q at the bucket start is at most q(H)^n
    for j in range(n):
        for g in range(g0):
            P[j, g] = P0[j, g]
    g_hi = g0
    pH = Pstart
    support = support0
    inner = -1
    free = np.ones(S, dtype=np.bool_)
    pend_c = np.empty(S, dtype=np.int64)
    pend_slot = np.empty(S, dtype=np.int64)
    pend_g = np.empty(S, dtype=np.int64)
    pend_sup = np.empty(S, dtype=np.int64)
    pend_P = np.empty(S)
    pend_lb = np.empty(S)
    npend = 0
    for c0 in range(0, m, C):
        c1 = min(c0 + C, m)
        lam_end = tail_b + rest[c1 - 1]
        pmin = np.inf
        pc = 0.0
        for k in range(c0, c1):
            pmin = min(pmin, p[sub[k]])
            pc += p[sub[k]]
        slot = -1
        if (c1 - c0 > 1 and support + (c1 - c0) - 1 >= n
                and pH + pmin - _pow_complement(lam_end, n) < best):
            if npend == S:  # pool full: scan the oldest pending chunk now
                best, inner = _scan_chunk_tokens(
                    0, pend_c, pend_slot, pend_g, pend_sup, pend_P, snaps, free, sub, rest,
                    m, p, q, n, best, inner, tail_b, scale, t, coef, h, Pw, a, y, e, work)
                for k in range(1, npend):
                    pend_c[k - 1] = pend_c[k]
                    pend_slot[k - 1] = pend_slot[k]
                    pend_g[k - 1] = pend_g[k]
                    pend_sup[k - 1] = pend_sup[k]
                    pend_P[k - 1] = pend_P[k]
                    pend_lb[k - 1] = pend_lb[k]
                npend -= 1
            for k in range(S):
                if free[k]:
                    slot = k
                    break
            free[slot] = False
            for j in range(n):
                for g in range(g_hi):
                    snaps[slot, j, g] = P[j, g]
            g_snap = g_hi
            sup_snap = support
            P_snap = pH
        _add_tokens(P, sub, c0, c1, q, scale, t, g_hi, n, A, Kd, xs, a, y, F, M, tp, W)
        g_hi = _prune(P, g_hi, n)
        support += c1 - c0
        pH += pc
        Q = -1.0
        if support >= n and (slot >= 0 or (c1 < m and pH - _pow_complement(lam_end, n) < best)):
            Q = _q_integral(P, lam_end, scale, t, g_hi, n, coef, h, e, work)
            if c1 < m and pH - Q < best:
                best = pH - Q
                inner = c1 - 1
        if slot >= 0:
            # The bucket-level bound (module docstring, step 3) with the chunk's
            # floor: the ratio of its first token (sorted), less rounding.
            r_lo = p[sub[c0]] / q[sub[c0]] * (1.0 - 1e-15)
            gain = r_lo * max(0.0, Q - Qc_ub) / cut - WOR_BOUND_SLACK
            lb = P_snap - Q + max(pmin, gain)
            if lb < best:
                pend_c[npend] = c0
                pend_slot[npend] = slot
                pend_g[npend] = g_snap
                pend_sup[npend] = sup_snap
                pend_P[npend] = P_snap
                pend_lb[npend] = lb
                npend += 1
            else:
                free[slot] = True
        Qc_ub = Q if Q >= 0.0 else _pow_complement(lam_end, n)
        k2 = 0
        for k in range(npend):
            if pend_lb[k] < best:
                pend_c[k2] = pend_c[k]
                pend_slot[k2] = pend_slot[k]
                pend_g[k2] = pend_g[k]
                pend_sup[k2] = pend_sup[k]
                pend_P[k2] = pend_P[k]
                pend_lb[k2] = pend_lb[k]
                k2 += 1
            else:
                free[pend_slot[k]] = True
        npend = k2
    for k in range(npend):
        if pend_lb[k] < best:
            best, inner = _scan_chunk_tokens(
                k, pend_c, pend_slot, pend_g, pend_sup, pend_P, snaps, free, sub, rest,
                m, p, q, n, best, inner, tail_b, scale, t, coef, h, Pw, a, y, e, work)
    return best, inner


@njit(cache=True)
def _scan_chunk_tokens(k, pend_c, pend_slot, pend_g, pend_sup, pend_P, snaps, free, sub, rest,
                       m, p, q, n, best, inner, tail_b, scale, t, coef, h, Pw, a, y, e, work):
    """Token-by-token scan of pending chunk ``k`` (its inner prefixes); frees its snapshot."""
    c0 = pend_c[k]
    c1 = min(c0 + WOR_CHUNK, m)
    chunk = sub[c0:c1]
    keys = np.arange(c1 - c0).astype(np.float64)  # already in ratio order
    new, pos = _scan_bucket(0, snaps[pend_slot[k]], pend_g[k], p, q, chunk, keys, n, best,
                            pend_P[k], pend_sup[k], tail_b + rest[c1 - 1], scale, t, coef, h,
                            Pw, a, y, e, work)
    free[pend_slot[k]] = True
    if pos >= 0:
        return new, c0 + pos
    return best, inner


@njit(cache=True)
def _wor_bucket_row(p, q, n, t0, h, snapshots, cert, stats):
    V = p.shape[0]
    per = WOR_PER_OCTAVE_BUCKETS
    emin = WOR_MIN_EXPONENT
    mark = np.zeros(V, dtype=np.bool_)
    cut = _cut(q, n, mark)
    # Buckets: 0 (p = 0), 1 (tiny ratios), then per-octave slices up to the cut.
    emax = WOR_MAX_EXPONENT
    if cut < np.inf:
        emax = min(emax, math.frexp(cut)[1])
    last = 2 + (emax - emin + 1) * per
    nb = last + 1
    bucket = np.full(V, -1, dtype=np.int64)
    bp = np.zeros(nb)
    bq = np.zeros(nb)
    pmin = np.full(nb, np.inf)
    cnt = np.zeros(nb, dtype=np.int64)
    excluded = 0.0  # draft mass never scanned: outside every candidate prefix
    for i in range(V):
        qi = q[i]
        if qi > 0.0:
            pi = p[i]
            if pi >= cut * qi:
                excluded += qi
                continue
            bi = _bucket_of(pi / qi, emin, per, last)
            bucket[i] = bi
            bp[bi] += pi
            bq[bi] += qi
            cnt[bi] += 1
            if pi < pmin[bi]:
                pmin[bi] = pi
    # Tokens of each bucket, contiguous (counting sort).
    off = np.zeros(nb + 1, dtype=np.int64)
    for bi in range(nb):
        off[bi + 1] = off[bi] + cnt[bi]
    fill = off[:-1].copy()
    toks = np.empty(off[nb], dtype=np.int64)
    for i in range(V):
        bi = bucket[i]
        if bi >= 0:
            toks[fill[bi]] = i
            fill[bi] += 1
    # Outside mass after each bucket (summed from the tail), prefix sums of p,
    # and the suffix minimum of the i.i.d. lower bound of every prefix in a bucket.
    tail = np.empty(nb)
    acc = excluded
    for bi in range(nb - 1, -1, -1):
        tail[bi] = acc
        acc += bq[bi]
    Pstart = np.empty(nb)
    P_ = 0.0
    for bi in range(nb):
        Pstart[bi] = P_
        P_ += bp[bi]
    lb_suffix = np.empty(nb + 1)
    lb_suffix[nb] = np.inf
    for bi in range(nb - 1, -1, -1):
        lb = np.inf
        if cnt[bi] > 0:
            lb = Pstart[bi] - _pow_complement(tail[bi], n)
        lb_suffix[bi] = min(lb, lb_suffix[bi + 1])
    # Log-time grid (docs/theory.md §2.5(c)) up to 50 / (smallest positive
    # outside mass of any scanned prefix): the excluded mass when positive,
    # else at least the smallest draft mass in the last non-empty bucket.
    lam_lo = excluded
    if lam_lo <= 0.0:
        lam_lo = 1.0
        for bi in range(nb - 1, -1, -1):
            if cnt[bi] > 0:
                for k in range(off[bi], off[bi + 1]):
                    lam_lo = min(lam_lo, q[toks[k]])
                break
    scale = 1.0
    if lam_lo < 1e-290:  # 50 / lam_lo would overflow: rescale masses by 2^200 (exact)
        scale = 2.0**200
    u0 = math.log(t0)
    G = math.ceil((math.log(50.0) - math.log(lam_lo) - u0) / h) + 1
    t = np.empty(G)
    ls = math.log(scale)
    for g in range(G):
        t[g] = math.exp(u0 + h * g - ls)
    coef = _low_coefficients(h)
    P = np.zeros((n, G))
    P[0, :] = 1.0
    Pw = np.empty((n, G))
    a = np.empty(G)
    y = np.empty(G)
    e = np.empty(G)
    work = np.empty(G)
    xs = np.empty(toks.shape[0])
    A = _expm1_power_table(min(n, WOR_GROUP_MAX_N))
    Kd = _group_terms(n, G, h)
    F = np.empty(n)
    W = np.empty(n)
    M = np.empty(n + WOR_GROUP_TERMS)
    tp = np.empty(n + WOR_GROUP_TERMS)
    S = snapshots
    snaps = np.empty((S, n, G))
    snaps2 = np.empty((S, n, G))
    bufs = (np.empty((n, G)), Pw, a, y, e, work, xs, F, M, tp, W)
    free = np.ones(S, dtype=np.bool_)
    pend_b = np.empty(S, dtype=np.int64)
    pend_slot = np.empty(S, dtype=np.int64)
    pend_g = np.empty(S, dtype=np.int64)
    pend_sup = np.empty(S, dtype=np.int64)
    pend_lb = np.empty(S)
    npend = 0
    g_hi = G
    best = 0.0
    best_b = -1  # optimal prefix: buckets < best_b, plus all of best_b (best_inner < 0)
    best_inner = -1  # ... or its first best_inner + 1 tokens in ratio order
    support = 0
    Qs_ub = 0.0  # an upper bound of Q at the start of the current bucket
    for bi in range(nb):
        if cnt[bi] == 0:
            continue
        if lb_suffix[bi] >= best:
            break  # no prefix from here on can go below best
        s0, s1 = off[bi], off[bi + 1]
        # Snapshot when an inner prefix may still win (i.i.d. bound below best).
        slot = -1
        inner_lb = Pstart[bi] + pmin[bi] - _pow_complement(tail[bi], n)
        if s1 - s0 > 1 and support + (s1 - s0) - 1 >= n and inner_lb < best:
            if npend == S:  # all slots taken: scan the oldest now
                stats[3] += cnt[pend_b[0]]
                best, best_b, best_inner = _resolve(
                    0, pend_b, pend_slot, pend_g, pend_sup, snaps, free, off, toks, p, q, n,
                    best, best_b, best_inner, Pstart, tail, scale, t, coef, h, A, Kd, bufs,
                    snaps2, cut)
                for k in range(1, npend):
                    pend_b[k - 1] = pend_b[k]
                    pend_slot[k - 1] = pend_slot[k]
                    pend_g[k - 1] = pend_g[k]
                    pend_sup[k - 1] = pend_sup[k]
                    pend_lb[k - 1] = pend_lb[k]
                npend -= 1
            for k in range(S):
                if free[k]:
                    slot = k
                    break
            free[slot] = False
            for j in range(n):
                for g in range(g_hi):
                    snaps[slot, j, g] = P[j, g]
            g_snap = g_hi
            sup_snap = support
        _add_tokens(P, toks, s0, s1, q, scale, t, g_hi, n, A, Kd, xs, a, y, F, M, tp, W)
        stats[0] += s1 - s0
        stats[1] += 1
        g_hi = _prune(P, g_hi, n)
        support += s1 - s0
        pend = Pstart[bi] + bp[bi]
        Qend = -1.0
        if support >= n and (slot >= 0 or pend - _pow_complement(tail[bi], n) < best):
            Qend = _q_integral(P, tail[bi], scale, t, g_hi, n, coef, h, e, work)
            stats[2] += 1
            f = pend - Qend
            if f < best:
                best = f
                best_b = bi
                best_inner = -1
        if slot >= 0:
            # An inner prefix adds draft mass d in (0, q(b)) and has P >= Pstart + r_lo d
            # and Q <= min(Qend, Qs_ub + cut d) (the cut bound on inclusion
            # probabilities, step 1): f >= Pstart - Qend + r_lo (Qend - Qs_ub) / cut.
            gain = _bucket_floor(bi, emin, per) * max(0.0, Qend - Qs_ub) / cut - WOR_BOUND_SLACK
            lb = Pstart[bi] - Qend + max(pmin[bi], gain)
            if lb < best:
                pend_b[npend] = bi
                pend_slot[npend] = slot
                pend_g[npend] = g_snap
                pend_sup[npend] = sup_snap
                pend_lb[npend] = lb
                npend += 1
            else:
                free[slot] = True
        Qs_ub = Qend if Qend >= 0.0 else _pow_complement(tail[bi], n)  # Q_wor <= q(H)^n
        # Forget pending buckets that the new best has overtaken.
        k2 = 0
        for k in range(npend):
            if pend_lb[k] < best:
                pend_b[k2] = pend_b[k]
                pend_slot[k2] = pend_slot[k]
                pend_g[k2] = pend_g[k]
                pend_sup[k2] = pend_sup[k]
                pend_lb[k2] = pend_lb[k]
                k2 += 1
            else:
                free[pend_slot[k]] = True
        npend = k2
    for k in range(npend):
        if pend_lb[k] < best:
            stats[3] += cnt[pend_b[k]]
            best, best_b, best_inner = _resolve(
                k, pend_b, pend_slot, pend_g, pend_sup, snaps, free, off, toks, p, q, n,
                best, best_b, best_inner, Pstart, tail, scale, t, coef, h, A, Kd, bufs,
                snaps2, cut)
    # Certificate: buckets before best_b, and best_b whole or its first tokens in order.
    if best_b >= 0:
        for i in range(V):
            bi = bucket[i]
            cert[i] = (bi >= 0 and (bi < best_b or (bi == best_b and best_inner < 0))) or (
                p[i] == 0.0 and q[i] == 0.0)
        if best_inner >= 0:
            s0, s1 = off[best_b], off[best_b + 1]
            keys = np.empty(s1 - s0)
            for k in range(s0, s1):
                keys[k - s0] = _ratio_key(p[toks[k]], q[toks[k]])
            order = np.argsort(keys, kind="mergesort")
            for k in range(best_inner + 1):
                cert[toks[s0 + order[k]]] = True
    return best


@njit(cache=True)
def _resolve(k, pend_b, pend_slot, pend_g, pend_sup, snaps, free, off, toks, p, q, n,
             best, best_b, best_inner, Pstart, tail, scale, t, coef, h, A, Kd, bufs, snaps2,
             cut):
    """Scan of pending bucket number ``k`` in ratio order; frees its snapshot."""
    bi = pend_b[k]
    s0, s1 = off[bi], off[bi + 1]
    sub = toks[s0:s1]
    keys = np.empty(s1 - s0)
    for j in range(s1 - s0):
        keys[j] = _ratio_key(p[sub[j]], q[sub[j]])
    sub = sub[np.argsort(keys, kind="mergesort")]
    slot = pend_slot[k]
    new, inner = _scan_sorted(sub, snaps[slot], pend_g[k], p, q, n, best, Pstart[bi],
                              pend_sup[k], tail[bi], scale, t, coef, h, A, Kd, bufs, snaps2, cut)
    free[slot] = True
    if inner >= 0:
        return new, bi, inner
    return best, best_b, best_inner


@njit(cache=True, parallel=True)
def _wor_bucket_parallel(p, q, n, t0, h, snapshots, best, cert, stats):
    for b in prange(p.shape[0]):
        best[b] = _wor_bucket_row(p[b], q[b], n, t0, h, snapshots, cert[b], stats[b])


@njit(cache=True)
def _wor_bucket_serial(p, q, n, t0, h, snapshots, best, cert, stats):
    for b in range(p.shape[0]):
        best[b] = _wor_bucket_row(p[b], q[b], n, t0, h, snapshots, cert[b], stats[b])


def wor_bucket_min(p, q, n, t0, snapshots=WOR_SNAPSHOTS, h=None):
    """min over ratio-order prefixes of ``p(H) - Q_wor(H)``, without sorting the vocabulary.

    Rows run in parallel where :func:`.._threads.run_parallel` says so (the
    same arithmetic either way).

    Parameters
    ----------
    p, q : float64 (B, V)
    n : int >= 2
    t0 : float
        Lowest node of the log-time grid, :func:`._bound_kernels.wor_t0`.
    snapshots : int >= 1
        Size of each pool of saved states (a smaller pool only scans pending
        buckets earlier; the tests use 1 to exercise that path).
    h : float, optional
        Log-time step, ``ln 2`` over a multiple of 3 (default
        :func:`._bound_kernels.wor_step` of ``n``).

    Returns
    -------
    best : float64 (B,); cert : bool (B, V), a prefix attaining it;
    stats : int64 (B, 4), tokens added in bulk, buckets added, integrals at
    bucket ends, tokens of the buckets scanned again in ratio order.
    """
    B, V = p.shape
    best = np.zeros(B)
    cert = np.zeros((B, V), dtype=np.bool_)
    stats = np.zeros((B, 4), dtype=np.int64)
    kernel = _wor_bucket_parallel if run_parallel(p.size, B) else _wor_bucket_serial
    h = wor_step(n) if h is None else float(h)
    kernel(p, q, n, t0, h, snapshots, best, cert, stats)
    return best, cert, stats
