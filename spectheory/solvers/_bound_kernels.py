"""numba kernels of the optimal-acceptance dual (private).

All kernels take rows already sorted by the ratio ``p / q`` (ascending) and
return, per row, the minimum over prefixes ``k = 0..V`` of
``p(H_k) - Q(H_k)`` and the minimising ``k``; ``alpha* = 1 + min``.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from .._threads import run_parallel

__all__ = [
    "WOR_BASE_N",
    "WOR_DEAD",
    "WOR_LOW_MASS",
    "WOR_LOW_TERMS",
    "WOR_PER_OCTAVE",
    "WOR_STEP",
    "iid_bucket_min",
    "wor_per_octave",
    "wor_prefix_min",
    "wor_prepare",
    "wor_step",
    "wor_t0",
]

#: Nodes per octave of the log-time grid of the exponential-clock integral
#: (docs/theory.md §2.5(c)) for n <= WOR_BASE_N.  The step ``h = ln 2 / 3`` lets every
#: node's ``exp(-x t)`` come from the node an octave below by squaring, so each
#: token costs three exponentials instead of one per node.  The integrand is
#: analytic in a strip around the real log-time axis, and the trapezoidal error
#: decays like exp(-2 pi d / h) for a strip of half-width d; measured against exact
#: enumeration it is below 1e-13 (tests/solvers/test_ot_dual.py).
WOR_PER_OCTAVE = 3
WOR_STEP = math.log(2.0) / WOR_PER_OCTAVE
#: Largest n served by WOR_PER_OCTAVE nodes per octave; see :func:`wor_per_octave`.
WOR_BASE_N = 8


def wor_per_octave(n):
    """Nodes per octave of the log-time grid for ``n`` drafts: 3 up to n = 8, then 3 times
    ``ceil(sqrt(n / 8))``.

    P(N_H(t) <= n - 1) falls from 1 to 0 over a log-time width of order 1/sqrt(n) (the
    Poisson-binomial count concentrates), so the strip where the integrand is analytic
    and small narrows like 1/sqrt(n), and the step must shrink with it to keep the
    trapezoidal error.  Three nodes per octave gave errors of 1e-11 at n = 13 and 1e-3
    at n = 133; with this rule the error stays below 1e-12 against exact values up to
    n = 512 (tests/solvers/test_wor_large_n.py).  A multiple of 3 keeps the octave
    squaring of :func:`_octave_powers`.
    """
    return WOR_PER_OCTAVE * max(1, math.ceil(math.sqrt(n / WOR_BASE_N)))


def wor_step(n):
    """The log-time step ``ln 2 / wor_per_octave(n)``."""
    return math.log(2.0) / wor_per_octave(n)


#: A grid node whose P(N_H(t) <= n-1) falls below this is dropped: it can only
#: decrease as H grows, and its weight in any later integral is below this.
WOR_DEAD = 1e-18


#: Bound on the mass neglected below the lowest node of the grid.
WOR_LOW_MASS = 1e-13
#: Terms of the series for the lattice nodes below the lowest node.
WOR_LOW_TERMS = 16


def wor_t0(n):
    """Lowest node: the largest power of 2 with t0^(n+1) / (n+1)! <= WOR_LOW_MASS.

    Below ``t0`` the integrand ``lam e^{-lam t} P(N_H(t) <= n-1)`` is replaced
    by ``lam e^{-lam t}``; the difference integrates to at most
    ``int_0^t0 P(N_H(t) >= n) dt <= t0^(n+1) / (n+1)!``.  In logarithms (lgamma):
    (n + 1)! overflows a float from n = 170.
    """
    log_bound = (math.log(WOR_LOW_MASS) + math.lgamma(n + 2)) / (n + 1)
    return 2.0 ** math.floor(min(log_bound / math.log(2.0), 0.0))


#: Buckets per octave of p/q in the sort-free i.i.d. scan, and the lowest octave
#: with buckets of its own (smaller ratios share one bucket).
IID_PER_OCTAVE = 64
IID_MIN_EXPONENT = -60
#: A positive float64 ``r >= 2**(IID_MIN_EXPONENT - 1)`` has bucket
#: ``(bits(r) >> _IID_SHIFT) - _IID_BASE``: the biased exponent followed by the
#: top 6 mantissa bits, an order-preserving integer (IEEE 754 layout), the same
#: as ``2 + (e - emin) 64 + floor((m - 1/2) 128)`` with ``r = m 2^e`` from frexp.
_IID_SHIFT = 52 - 6
_IID_BASE = ((IID_MIN_EXPONENT - 1 + 1023) << 6) - 2


@intrinsic
def _f64_bits(typingctx, x):
    """The IEEE 754 bit pattern of a float64 as an int64 (a register bitcast)."""
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen


@intrinsic
def _bits_f64(typingctx, x):
    """The float64 with a given int64 bit pattern (inverse of :func:`_f64_bits`)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


@njit(cache=True)
def _pow_complement(lam, n):
    """(1 - lam)^n from the outside mass ``lam``: exp(n log1p(-lam)), no cancellation.

    ``n`` is a float; the relative error of the result is a few ulp times
    ``max(1, n lam)``, with no drift in ``n`` from repeated rounding of ``1 - lam``.
    """
    return math.exp(n * math.log1p(-lam))


#: Slots of the tokens left out of the i.i.d. scan (a power of 2, see :func:`_iid_bucket_row`).
_IID_SPARE = 16

#: Slack per token of a bucket (and 16 for the rest of the expression) in the
#: bucket test of :func:`_iid_bucket_row`, in units of float64 epsilon times 2:
#: covers the rounding of the bucket sums and of the running sums of the scan
#: (values are at most 1 in magnitude).
_IID_SLACK = 4.5e-16


@njit(cache=True, error_model="numpy")  # p / 0 = inf, 0 / 0 = nan: no test for q = 0
def _iid_bucket_row(p, q, n, limit, cert):
    """min_H [p(H) - q(H)^n] of one row; sets ``cert`` to an optimal set, returns the min.

    Inside bucket ``b`` (ratios in ``[r_lo, r_hi)``) every token has
    ``p_j >= r_lo q_j``, so a prefix ending inside it, with draft mass
    ``s`` in ``[S_start, S_end]``, has
    ``f >= P_start + r_lo (s - S_start) - s^n``, a concave function of ``s``:
    its minimum is at an end, ``P_start - S_start^n`` (the boundary before,
    already counted in the best) or ``P_start + r_lo q(b) - S_end^n``.  Only
    buckets where the latter beats the best boundary, less a rounding slack
    (:data:`_IID_SLACK`), are sorted and scanned token by token.
    """
    V = p.shape[0]
    emax = math.frexp(limit)[1]
    nb = 2 + (emax - IID_MIN_EXPONENT + 1) * IID_PER_OCTAVE
    # Slots nb .. nb + _IID_SPARE - 1 collect the tokens left out (q = 0, or p/q > limit, or
    # p = q = 0), token i in slot nb + i % _IID_SPARE: their draft mass is that of the tokens
    # above the limit (q = 0 adds zeros), outside every candidate H.  The pass has no branch
    # on the data (selects only): with about half of the tokens above the limit, a branch
    # per token was mispredicted half of the time.  One slot for all of them made every
    # left-out token wait for the previous one's read-add-write of the same three cells.
    bp = np.zeros(nb + _IID_SPARE)
    bq = np.zeros(nb + _IID_SPARE)
    cnt = np.zeros(nb + _IID_SPARE, dtype=np.int64)
    bucket = np.empty(V, dtype=np.int32)  # >= nb: left out
    for i in range(V):
        qi = q[i]
        pi = p[i]
        r = pi / qi  # inf for q = 0 < p, nan for p = q = 0: both fail r <= limit
        b = (_f64_bits(r) >> _IID_SHIFT) - _IID_BASE
        # r = 0, or below 2^(emin - 1) (subnormal included): the two lowest buckets
        b = b if b >= 2 else (0 if r == 0.0 else 1)
        b = b if (r <= limit and qi > 0.0) else nb + (i & (_IID_SPARE - 1))
        bp[b] += pi
        bq[b] += qi
        cnt[b] += 1
        bucket[i] = b
    excluded = 0.0
    for b in range(nb, nb + _IID_SPARE):
        excluded += bq[b]
    # Draft mass outside the prefix ending with bucket b, summed from the tail so
    # that q(H)^n = (1 - tail)^n keeps its accuracy when q(H) is close to 1.
    tail = np.empty(nb)
    acc = excluded
    for b in range(nb - 1, -1, -1):
        tail[b] = acc
        acc += bq[b]
    # The objective at every bucket boundary.
    Pstart = np.empty(nb)
    P = 0.0
    best = 0.0
    best_b = -1  # best set: every bucket <= best_b ...
    best_inner = -1  # ... or, if >= 0, buckets < best_b plus inner[:best_inner + 1]
    for b in range(nb):
        Pstart[b] = P
        if cnt[b] == 0:
            continue  # the same set as the boundary before: no new value
        P += bp[b]
        f = P - _pow_complement(tail[b], n)
        if f < best:
            best = f
            best_b = b
    cand = np.zeros(nb + _IID_SPARE, dtype=np.bool_)
    m = 0
    for b in range(nb):
        if cnt[b] < 2:
            continue
        r_lo = _bits_f64((b + _IID_BASE) << _IID_SHIFT) if b >= 2 else 0.0
        lb = Pstart[b] + r_lo * bq[b] - _pow_complement(tail[b], n)
        if lb - (cnt[b] + 16) * _IID_SLACK < best:
            cand[b] = True
            m += cnt[b]
    inner = np.empty(m, dtype=np.int64)
    keys = np.empty(m)
    if m > 0:
        j = 0
        for i in range(V):
            b = bucket[i]
            if cand[b]:  # False from nb on: left-out tokens never enter
                inner[j] = i
                keys[j] = p[i] / q[i]
                j += 1
    order = np.argsort(keys)  # ratio order, grouped by bucket since buckets are monotone
    # rest[k]: draft mass of the tokens of the same bucket after position k.
    rest = np.empty(m)
    cur = -1
    acc = 0.0
    for k in range(m - 1, -1, -1):
        b = bucket[inner[order[k]]]
        if b != cur:
            cur = b
            acc = 0.0
        rest[k] = acc
        acc += q[inner[order[k]]]
    cur = -1
    for k in range(m):
        i = inner[order[k]]
        b = bucket[i]
        if b != cur:
            cur = b
            P = Pstart[b]
        P += p[i]
        f = P - _pow_complement(tail[b] + rest[k], n)
        if f < best:
            best = f
            best_b = b
            best_inner = k
    hi = best_b if best_inner >= 0 else best_b + 1  # whole buckets < hi are in H
    for i in range(V):
        cert[i] = bucket[i] < hi  # hi <= nb: left-out tokens are never in H
    if best_inner >= 0:
        for k in range(best_inner + 1):
            i = inner[order[k]]
            if bucket[i] == best_b:
                cert[i] = True
    return best


@njit(cache=True, parallel=True)
def _iid_bucket_parallel(p, q, n, limit):
    B, V = p.shape
    best = np.zeros(B)
    cert = np.zeros((B, V), dtype=np.bool_)
    for b in prange(B):
        best[b] = _iid_bucket_row(p[b], q[b], n, limit, cert[b])
    return best, cert


@njit(cache=True)
def _iid_bucket_serial(p, q, n, limit):
    B, V = p.shape
    best = np.zeros(B)
    cert = np.zeros((B, V), dtype=np.bool_)
    for b in range(B):
        best[b] = _iid_bucket_row(p[b], q[b], n, limit, cert[b])
    return best, cert


def iid_bucket_min(p, q, n, limit):
    """min_H [p(H) - q(H)^n] without sorting the vocabulary.

    Tokens are bucketed by ``p/q`` (64 buckets per octave, order-preserving,
    from the float's bits); the objective is evaluated at every bucket
    boundary, and only buckets whose lower bound (:func:`_iid_bucket_row`)
    beats the best boundary are sorted and scanned token by token.  The
    result is the prefix minimum of the sorted scan, in O(V) passes plus
    small sorts.  Rows run in parallel where :func:`.._threads.run_parallel`
    says so (same arithmetic either way).

    Parameters
    ----------
    p, q : float64 (B, V)
    n : float
        Number of drafts (a float, so that any ``n`` up to 1e300 fits).
    limit : float
        Tokens with ``p/q > limit`` are left out (``limit = n`` is safe).

    Returns
    -------
    best : float64 (B,); cert : bool (B, V), an optimal set.
    """
    kernel = _iid_bucket_parallel if run_parallel(p.size, p.shape[0]) else _iid_bucket_serial
    return kernel(p, q, n, limit)


@njit(cache=True)
def _octave_powers(x, t, out_a, out_y, count):
    """exp(-x t_g) and 1 - exp(-x t_g) on the first ``count`` nodes, octave by octave.

    Absolute error of both below ~2 ulp of 1 on every node, and relative
    error of ``1 - exp(-x t)`` below a few ulp: nodes with ``x t < 1e-8`` take
    the series ``z - z^2/2`` directly, so that squaring starts from normal
    (never subnormal) values; from there ``y -> y (2 - y)`` keeps the
    relative error.
    """
    # The grid's nodes per octave, read off its ratio (a multiple of 3, wor_per_octave).
    k = WOR_PER_OCTAVE
    if count > 1:
        k = round(math.log(2.0) / math.log(t[1] / t[0]))
    g0 = 0
    while g0 < count:
        z = x * t[g0]
        if z >= 1e-8:
            break
        out_y[g0] = z * (1.0 - 0.5 * z)  # error z^3 / 6: relative 1e-17
        out_a[g0] = 1.0 - out_y[g0]
        g0 += 1
    for g in range(g0, min(g0 + k, count)):
        out_y[g] = -math.expm1(-x * t[g])
        out_a[g] = 1.0 - out_y[g]
    for g in range(g0 + k, count):
        # 1 - (1 - y)^2: the relative error of y does not grow, while squaring
        # a = 1 - y would double its relative error every octave.
        yy = out_y[g - k]
        out_y[g] = yy * (2.0 - yy)
        out_a[g] = 1.0 - out_y[g]


@njit(cache=True)
def _low_coefficients(h):
    # Lattice nodes below t0, where P(N_H <= n-1) = 1: the sum over m >= 1 of
    # x_m e^{-x_m}, x_m = lam t0 e^{-m h}, is sum_j (-1)^j (lam t0)^(j+1) A_{j+1} / j!
    # with A_j = sum_m e^{-j m h} = r^j / (1 - r^j); lam t0 <= 1/8 makes 16 terms ample.
    r1 = math.exp(-h)
    coef = np.empty(WOR_LOW_TERMS)
    fact = 1.0
    for j in range(WOR_LOW_TERMS):
        if j > 0:
            fact *= -j
        rj = r1 ** (j + 1)
        coef[j] = rj / (1.0 - rj) / fact
    return coef


@njit(cache=True)
def _prune(P, g_hi, n):
    """Drop dead top nodes: P(N_H(t) <= n-1) only decreases as H grows."""
    while g_hi > 0:
        s = 0.0
        for j in range(n):
            s += P[j, g_hi - 1]
        if s >= WOR_DEAD:
            break
        g_hi -= 1
    return g_hi


@njit(cache=True)
def _q_integral(P, lam, scale, t, g_hi, n, coef, h, e, work):
    """Q(H) = 1 - int lam e^{-lam t} P(N_H(t) <= n-1) dt on the log-time grid."""
    if lam <= 0.0:
        return 1.0
    ls = lam * scale  # exact: scale is a power of 2
    x0 = ls * t[0]
    acc = 0.0
    xp = x0
    for j in range(WOR_LOW_TERMS):
        acc += coef[j] * xp
        xp *= x0
    _octave_powers(ls, t, e, work, g_hi)
    for g in range(g_hi):
        s = 0.0
        for j in range(n):
            s += P[j, g]
        acc += ls * t[g] * e[g] * s
    return 1.0 - h * acc


@njit(cache=True)
def _wor_row(p, q, order, n, lam_suffix, iid_suffix_min, t, h, scale):
    """One row of the without-replacement scan; see :func:`wor_prefix_min`."""
    V = order.shape[0]
    G = t.shape[0]
    P = np.zeros((n, G))
    P[0, :] = 1.0
    a = np.empty(G)
    y = np.empty(G)
    e = np.empty(G)
    ones = np.empty(G)
    coef = _low_coefficients(h)
    g_hi = G
    best = 0.0
    kbest = 0
    pH = 0.0
    support = 0
    evaluated = 0
    for k in range(V):
        if iid_suffix_min[k] >= best:
            break  # Q_wor <= q(H)^n: no later prefix can go below best
        i = order[k]
        qi = q[i]
        pH += p[i]
        if qi > 0.0:
            support += 1
            _octave_powers(qi * scale, t, a, y, g_hi)
            for j in range(n - 1, 0, -1):
                for g in range(g_hi):
                    P[j, g] = P[j, g] * a[g] + P[j - 1, g] * y[g]
            for g in range(g_hi):
                P[0, g] *= a[g]
            g_hi = _prune(P, g_hi, n)
        if support < n:
            continue
        lam = lam_suffix[k + 1]
        if pH - math.exp(n * math.log1p(-lam)) >= best:
            continue  # the i.i.d. lower bound already loses
        Q = _q_integral(P, lam, scale, t, g_hi, n, coef, h, e, ones)
        evaluated += 1
        f = pH - Q
        if f < best:
            best = f
            kbest = k + 1
    return best, kbest, evaluated


@njit(cache=True, parallel=True)
def wor_prepare(p, q, order, n):
    """Tail sums of the draft mass and the suffix minima of the i.i.d. objective.

    Returns ``lam_suffix`` (B, V + 1), ``lam_suffix[b, k]`` = draft mass of
    ``order[b, k:]`` (summed from the tail, so that ``1 - q(H)`` keeps its
    relative accuracy near 0), and ``iid_suffix_min`` (B, V), the minimum over
    ``k' >= k`` of ``p(H_{k'+1}) - q(H_{k'+1})^n``.
    """
    B, V = p.shape
    lam = np.zeros((B, V + 1))
    ism = np.empty((B, V))
    for b in prange(B):
        acc = 0.0
        for k in range(V - 1, -1, -1):
            acc += q[b, order[b, k]]
            lam[b, k] = acc
        P = 0.0
        for k in range(V):
            P += p[b, order[b, k]]
            # q(H)^n from the tail mass: 1 - lam would cancel for peaked drafts.
            ism[b, k] = P - math.exp(n * math.log1p(-lam[b, k + 1]))
        for k in range(V - 2, -1, -1):
            if ism[b, k + 1] < ism[b, k]:
                ism[b, k] = ism[b, k + 1]
    return lam, ism


@njit(cache=True, parallel=True)
def wor_prefix_min(p, q, order, n, lam_suffix, iid_suffix_min, t, h, scale):
    """min_k [P_k - Q_wor(H_k)] over prefixes of each row's ratio order.

    ``Q_wor`` by the exponential-clock integral (docs/theory.md §2.5(c)): with
    ``E_i ~ Exp(q_i)`` and ``lam = 1 - q(H)``,
    ``1 - Q(H) = int lam e^{-lam t} P(N_H(t) <= n-1) dt``, evaluated by the
    trapezoidal rule in ``u = log t`` on the nodes ``t`` (step ``h``) with
    the Poisson-binomial law of ``N_H`` truncated at ``n - 1`` and updated
    one token at a time.

    Parameters
    ----------
    p, q : float64 (B, V)
    order : int64 (B, V), ascending ``p/q``
    n : int >= 2
    lam_suffix : float64 (B, V + 1); ``lam_suffix[b, k]`` = draft mass of
        ``order[b, k:]``, summed from the tail for accuracy.
    iid_suffix_min : float64 (B, V); min over ``k' >= k`` of the i.i.d.
        objective after ``k' + 1`` tokens, a lower bound of the w/o-replacement one.
    t : float64 (B, G) grid nodes (row-specific upper end, padded with inf).
    h : float
    scale : float64 (B,) power of 2 multiplying every draft mass of the row
        (the nodes ``t`` are divided by it; see ``ot_dual._wor_grid``).

    Returns
    -------
    best (B,), kbest (B,), evaluated (B,) number of integrals computed.
    """
    B = p.shape[0]
    best = np.zeros(B)
    kbest = np.zeros(B, dtype=np.int64)
    evaluated = np.zeros(B, dtype=np.int64)
    for b in prange(B):
        G = 0
        while G < t.shape[1] and np.isfinite(t[b, G]):
            G += 1
        best[b], kbest[b], evaluated[b] = _wor_row(
            p[b], q[b], order[b], n, lam_suffix[b], iid_suffix_min[b], t[b, :G], h, scale[b]
        )
    return best, kbest, evaluated
