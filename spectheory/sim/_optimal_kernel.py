r"""numba form of the ``optimal`` verifier (i.i.d. drafts): per-row plan and batched trials.

:func:`plan_row` computes the plan of :mod:`spectheory.solvers.polymatroid`
in float64 (the coins reference uses it for float input, so reference and
kernel share every table); :func:`run_optimal` runs trials on pre-drawn
uniforms with the reference's coin order: ``u[b, t, 0]`` picks the mixture
component (inverse CDF of the segment's weights), ``u[b, t, 1]`` the accept
coin, ``u[b, t, 2]`` the residual draw.  The inverse CDFs are binary searches
on sequential partial sums, equal to the reference's linear scan bit for bit
(:mod:`spectheory.sim._kernels`).  "Same tier in component ``k``" is a range
maximum of the boundary ranks, answered by a sparse table in :math:`O(1)`.

Cost per row: one sort of the support by ``p/q``, :math:`O(V)` scans, the
merge sweep (a heap of :math:`O(V)` events, :math:`O(V \log V)`) and the
sparse table (:math:`O(V \log V)` integer maxima); per trial :math:`O(n^2)`.
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit, prange

from ..solvers.polymatroid import PERMANENT, OptimalPlan

__all__ = ["OPTIMAL_UNIFORMS", "plan_row", "plan_tables", "run_optimal"]

#: Uniforms per trial: component, accept coin, residual draw.
OPTIMAL_UNIFORMS = 3


@njit(cache=True)
def _chord(a, b, n):
    s = 0.0
    for j in range(n):
        s += a**j * b ** (n - 1 - j)
    return s


@njit(cache=True)
def _key(a, v, nxt, s, W):
    e = nxt[s]
    dv = v[s] - v[e]
    k = (a[s] - a[e]) / dv if dv > 0 else W
    return k if k > W else W


@njit(cache=True)
def _segment(g, R, lo, hi, n, rank, wout):
    """Merge sweep of one segment; writes the component weights, returns their count."""
    m = R.shape[0]
    nxt = np.full(m, -1, dtype=np.int64)
    prv = np.full(m, -1, dtype=np.int64)
    a = np.zeros(m)
    v = np.zeros(m)
    mass = np.zeros(m)
    ver = np.zeros(m, dtype=np.int64)
    alive = np.zeros(m, dtype=np.bool_)
    last = -1
    for j in range(lo, hi):
        if j > lo and g[j] == g[j - 1]:
            rank[j] = 0
            continue
        if last >= 0:
            nxt[last] = j
        prv[j] = last
        alive[j] = True
        a[j] = g[j]
        last = j
    nxt[last] = hi
    s = lo
    while s < hi:
        e = nxt[s]
        v[s] = _chord(R[s], R[e], n)
        mass[s] = R[s] - R[e]
        s = e
    heap = [(0.0, 0, 0, 0, 0, 0)]
    heap.pop()
    tick = 0
    s = lo
    while nxt[s] < hi:
        e = nxt[s]
        heapq.heappush(heap, (_key(a, v, nxt, s, 0.0), tick, s, e, ver[s], ver[e]))
        tick += 1
        s = e
    count = 0
    while len(heap) > 0:
        W, _, s, e, vs, ve = heapq.heappop(heap)
        if not alive[s] or not alive[e] or nxt[s] != e or ver[s] != vs or ver[e] != ve:
            continue
        wout[count] = W
        count += 1
        rank[e] = count
        ms = mass[s]
        me = mass[e]
        u = (ms * (a[s] - W * v[s]) + me * (a[e] - W * v[e])) / (ms + me)
        f = nxt[e]
        nxt[s] = f
        if f < hi:
            prv[f] = s
        alive[e] = False
        mass[s] = ms + me
        v[s] = _chord(R[s], R[f], n)
        a[s] = u + W * v[s]
        ver[s] += 1
        t = prv[s]
        if t >= 0:
            heapq.heappush(heap, (_key(a, v, nxt, t, W), tick, t, s, ver[t], ver[s]))
            tick += 1
        if f < hi:
            heapq.heappush(heap, (_key(a, v, nxt, s, W), tick, s, f, ver[s], ver[f]))
            tick += 1
    wout[count] = a[lo] / v[lo]
    # Times to interval lengths, clipped at 0 (rounding only), normalised.
    prev = 0.0
    for k in range(count + 1):
        t = wout[k]
        d = t - prev
        wout[k] = d if d > 0.0 else 0.0
        if t > prev:
            prev = t
    tot = 0.0
    for k in range(count + 1):
        tot += wout[k]
    for k in range(count + 1):
        wout[k] /= tot
    return count + 1


@njit(cache=True)
def _plan_core(p, q, n):
    V = p.shape[0]
    m = 0
    for i in range(V):
        if q[i] > 0.0:
            m += 1
    sup = np.empty(m, dtype=np.int64)
    r_sup = np.empty(m)
    j = 0
    for i in range(V):
        if q[i] > 0.0:
            sup[j] = i
            r_sup[j] = p[i] / q[i]
            j += 1
    asc = sup[np.argsort(r_sup, kind="mergesort")]  # stable: ties by id
    best = 0.0
    kbest = 0
    P = 0.0
    S = 0.0
    for k in range(m):
        P += p[asc[k]]
        S += q[asc[k]]
        f = P - S**n
        if f < best:
            best = f
            kbest = k + 1
    nT = m - kbest
    order = np.empty(m, dtype=np.int64)
    for t in range(nT):
        order[t] = asc[m - 1 - t]
    for t in range(kbest):
        order[nT + t] = asc[kbest - 1 - t]
    R = np.zeros(m + 1)
    for t in range(m - 1, -1, -1):
        R[t] = R[t + 1] + q[order[t]]
    g = np.empty(m)
    for t in range(m):
        g[t] = p[order[t]] / q[order[t]]
    y = np.zeros(V)
    rank = np.zeros(m + 1, dtype=np.int64)
    rank[0] = PERMANENT
    rank[nT] = PERMANENT
    rank[m] = PERMANENT
    w_top = np.ones(max(nT, 1))
    w_h = np.ones(max(m - nT, 1))
    kt = 1
    kh = 1
    if nT > 0:
        fT = 1.0 - R[nT] ** n
        suffix = np.zeros(nT + 1)
        for t in range(nT - 1, -1, -1):
            suffix[t] = suffix[t + 1] + p[order[t]]
        S = 0.0
        c = 0.0
        jj = 1
        for jj in range(1, nT + 1):
            S += q[order[jj - 1]]
            c = (fT - suffix[jj]) / S
            if jj == nT or c >= g[jj]:
                break
        for t in range(nT):
            i = order[t]
            if t < jj:
                g[t] = c
                y[i] = c * q[i]
            else:
                y[i] = p[i]
        kt = _segment(g, R, 0, nT, n, rank, w_top)
    if m > nT:
        QH = R[nT] ** n
        P = 0.0
        cp = 0.0
        jj = nT
        for jj in range(nT, m):
            cp = (QH - P) / R[jj]
            if cp >= g[jj]:
                break
            P += p[order[jj]]
        for t in range(nT, m):
            i = order[t]
            if t >= jj:
                g[t] = cp
                y[i] = cp * q[i]
            else:
                y[i] = p[i]
        kh = _segment(g, R, nT, m, n, rank, w_h)
    pos = np.full(V, -1, dtype=np.int64)
    for t in range(m):
        pos[order[t]] = t
    excess = np.zeros(V)
    alpha = 0.0
    for i in range(V):
        if p[i] > y[i]:
            excess[i] = p[i] - y[i]
            alpha += y[i]
        else:
            alpha += p[i]
    return order, nT, pos, rank, w_top[:kt].copy(), w_h[:kh].copy(), y, excess, alpha


def plan_row(p, q, n):
    """The float64 plan of one row (:class:`~spectheory.solvers.polymatroid.OptimalPlan`)."""
    order, nT, pos, rank, w_top, w_h, y, excess, alpha = _plan_core(p, q, int(n))
    total = excess.sum()  # numpy's sum, as the reference's residual
    resid = excess / total if total > 0 else p.copy()
    return OptimalPlan(order, int(nT), pos, rank, w_top, w_h, y, resid, float(alpha))


@njit(cache=True)
def _sparse_table(rank):
    m = rank.shape[0]
    levels = 1
    while (1 << levels) <= m:
        levels += 1
    st = np.empty((levels, m), dtype=np.int64)
    st[0] = rank
    for lv in range(1, levels):
        h = 1 << (lv - 1)
        for j in range(m):
            a = st[lv - 1, j]
            b = st[lv - 1, j + h] if j + h < m else a
            st[lv, j] = a if a > b else b
    return st


@njit(cache=True)
def _range_max(st, lo, hi):
    """max of rank[lo..hi] (inclusive, lo <= hi)."""
    length = hi - lo + 1
    lv = 0
    while (2 << lv) <= length:
        lv += 1
    a = st[lv, lo]
    b = st[lv, hi - (1 << lv) + 1]
    return a if a > b else b


@njit(cache=True)
def _search(cum, u, count):
    lo = 0
    hi = count
    while lo < hi:
        mid = (lo + hi) >> 1
        if cum[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    if lo < count:
        return lo
    # u beyond the total: the last entry of positive mass (coins._inverse_cdf)
    k = count - 1
    while k > 0 and cum[k] == cum[k - 1]:
        k -= 1
    return k


@njit(cache=True)
def _trial(p, pos, n_top, st, cw_top, kt, cw_h, kh, y, cres, V, drafts, u):
    n = drafts.shape[0]
    top = False
    for j in range(n):
        if pos[drafts[j]] < n_top:
            top = True
    if top:
        k = _search(cw_top, u[0], kt)
    else:
        k = _search(cw_h, u[0], kh)
    a = -1
    for j in range(n):
        t = pos[drafts[j]]
        if (t < n_top) == top and (a < 0 or t < a):
            a = t
    x = -1
    for j in range(n):
        t = pos[drafts[j]]
        if (t < n_top) == top and (t == a or _range_max(st, a + 1, t) <= k):
            x = drafts[j]
            break
    yx = y[x]
    if yx > 0:
        prob = p[x] / yx
        if prob > 1.0:
            prob = 1.0
    else:
        prob = 0.0
    if u[1] < prob:
        return x
    return _search(cres, u[2], V)


@njit(cache=True, parallel=True)
def _run(p, pos, n_top, st, cw_top, kt, cw_h, kh, y, cres, drafts, u, out):
    B, T, _ = drafts.shape
    V = p.shape[1]
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        out[b, t] = _trial(p[b], pos[b], n_top[b], st[b], cw_top[b], kt[b], cw_h[b], kh[b],
                           y[b], cres[b], V, drafts[b, t], u[b, t])


def plan_tables(p, q, n):
    """Per-row plans of a batch, packed for :func:`run_optimal` (padded arrays)."""
    B, V = p.shape
    plans = [plan_row(p[b], q[b], n) for b in range(B)]
    sts = [_sparse_table(pl.rank) for pl in plans]
    L = max(s.shape[0] for s in sts)
    st = np.zeros((B, L, V + 1), dtype=np.int64)
    cw_top = np.zeros((B, V + 1))
    cw_h = np.zeros((B, V + 1))
    kt = np.empty(B, dtype=np.int64)
    kh = np.empty(B, dtype=np.int64)
    for b, (pl, s) in enumerate(zip(plans, sts)):
        st[b, : s.shape[0], : s.shape[1]] = s
        kt[b], kh[b] = pl.w_top.shape[0], pl.w_h.shape[0]
        cw_top[b, : kt[b]] = np.cumsum(pl.w_top)
        cw_h[b, : kh[b]] = np.cumsum(pl.w_h)
    return {
        "pos": np.array([pl.pos for pl in plans]),
        "n_top": np.array([pl.n_top for pl in plans], dtype=np.int64),
        "st": st, "cw_top": cw_top, "kt": kt, "cw_h": cw_h, "kh": kh,
        "y": np.array([pl.y for pl in plans]),
        "cres": np.array([np.cumsum(pl.residual) for pl in plans]),
    }  # fmt: skip


def run_optimal(p, q, drafts, u):
    """Tokens (B, T) of ``optimal`` for i.i.d. drafts (B, T, n), ``n >= 2``, uniforms (B, T, 3)."""
    p = np.ascontiguousarray(p, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64)
    B, T, n = drafts.shape
    tb = plan_tables(p, q, n)
    out = np.empty((B, T), dtype=np.int64)
    _run(p, tb["pos"], tb["n_top"], tb["st"], tb["cw_top"], tb["kt"], tb["cw_h"], tb["kh"],
         tb["y"], tb["cres"], drafts, u, out)  # fmt: skip
    return out
