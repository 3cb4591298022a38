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

import numpy as np
from numba import njit, prange

from .._errors import InvalidParameterError
from ..solvers.polymatroid import PERMANENT, OptimalPlan

__all__ = ["OPTIMAL_UNIFORMS", "optimal_token", "plan_row", "plan_tables", "run_optimal"]

#: Uniforms per trial: component, accept coin, residual draw.
OPTIMAL_UNIFORMS = 3


@njit(cache=True)
def _chord(a, b, n):
    # sum_j a^(n-1-j) b^j by Horner in a (n multiplications, no pow)
    s = 1.0
    bk = 1.0
    for _ in range(n - 1):
        bk *= b
        s = s * a + bk
    return s


@njit(cache=True)
def _key(a, v, nxt, s, W):
    e = nxt[s]
    dv = v[s] - v[e]
    k = (a[s] - a[e]) / dv if dv > 0 else W
    return k if k > W else W


@njit(cache=True)
def _less(hk, ht, i, j):
    return hk[i] < hk[j] or (hk[i] == hk[j] and ht[i] < ht[j])


@njit(cache=True)
def _push(heap, size, hk, ht, slot):
    """Binary min-heap of event slots ordered by (key, tick), as heapq's tuples."""
    heap[size] = slot
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if _less(hk, ht, heap[i], heap[parent]):
            heap[i], heap[parent] = heap[parent], heap[i]
            i = parent
        else:
            break
    return size + 1


@njit(cache=True)
def _pop(heap, size, hk, ht):
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        c = left
        if left + 1 < size and _less(hk, ht, heap[left + 1], heap[left]):
            c = left + 1
        if _less(hk, ht, heap[c], heap[i]):
            heap[i], heap[c] = heap[c], heap[i]
            i = c
        else:
            break
    return top, size


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
    cap = 3 * (hi - lo) + 3
    hk = np.empty(cap)  # event key (the weight W at which two lines meet)
    ht = np.empty(cap, dtype=np.int64)  # tick: push order, breaks ties as heapq does
    hs = np.empty(cap, dtype=np.int64)
    he = np.empty(cap, dtype=np.int64)
    hvs = np.empty(cap, dtype=np.int64)
    hve = np.empty(cap, dtype=np.int64)
    heap = np.empty(cap, dtype=np.int64)
    size = 0
    tick = 0
    s = lo
    while nxt[s] < hi:
        e = nxt[s]
        hk[tick], ht[tick], hs[tick], he[tick] = _key(a, v, nxt, s, 0.0), tick, s, e
        hvs[tick], hve[tick] = ver[s], ver[e]
        size = _push(heap, size, hk, ht, tick)
        tick += 1
        s = e
    count = 0
    while size > 0:
        ev, size = _pop(heap, size, hk, ht)
        W, s, e = hk[ev], hs[ev], he[ev]
        if not alive[s] or not alive[e] or nxt[s] != e or ver[s] != hvs[ev] or ver[e] != hve[ev]:
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
            hk[tick], ht[tick], hs[tick], he[tick] = _key(a, v, nxt, t, W), tick, t, s
            hvs[tick], hve[tick] = ver[t], ver[s]
            size = _push(heap, size, hk, ht, tick)
            tick += 1
        if f < hi:
            hk[tick], ht[tick], hs[tick], he[tick] = _key(a, v, nxt, s, W), tick, s, f
            hvs[tick], hve[tick] = ver[s], ver[f]
            size = _push(heap, size, hk, ht, tick)
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
def _ties_by_id(asc, r_sorted):
    """Sort every run of equal ratios by token id (the reference's order, ties by id)."""
    m = asc.shape[0]
    a = 0
    while a < m:
        b = a + 1
        while b < m and r_sorted[b] == r_sorted[a]:
            b += 1
        if b - a > 1:
            asc[a:b] = np.sort(asc[a:b])
        a = b


@njit(cache=True)
def _prefix_argmin(pa, qa, n):
    """First minimiser of p(H_k) - q(H_k)^n over prefixes of the ascending order."""
    best = 0.0
    kbest = 0
    P = 0.0
    S = 0.0
    for k in range(pa.shape[0]):
        P += pa[k]
        S += qa[k]
        f = P - S**n
        if f < best:
            best = f
            kbest = k + 1
    return kbest


@njit(cache=True)
def _densities(ps, qs, R, nT, n):
    """Densities g = y/q by position: min(p/q, c) on T, max(p/q, c') on H*; and y."""
    m = ps.shape[0]
    g = ps / qs
    ys = ps.copy()
    if nT > 0:
        fT = 1.0 - R[nT] ** n
        suffix = np.zeros(nT + 1)
        for t in range(nT - 1, -1, -1):
            suffix[t] = suffix[t + 1] + ps[t]
        S = 0.0
        c = 0.0
        jj = 1
        for jj in range(1, nT + 1):
            S += qs[jj - 1]
            c = (fT - suffix[jj]) / S
            if jj == nT or c >= g[jj]:
                break
        for t in range(jj):
            g[t] = c
            ys[t] = c * qs[t]
    if m > nT:
        QH = R[nT] ** n
        P = 0.0
        cp = 0.0
        jj = nT
        for jj in range(nT, m):
            cp = (QH - P) / R[jj]
            if cp >= g[jj]:
                break
            P += ps[jj]
        for t in range(jj, m):
            g[t] = cp
            ys[t] = cp * qs[t]
    return g, ys


def _tables(p, q, n):
    """Order (T then H*, each by p/q descending), |T|, tail masses R, densities g, y, positions.

    The sort is numpy's (vectorised); the scans are sequential (numba), so the
    float results are the same wherever the plan is computed.
    """
    V = p.shape[0]
    sup = np.flatnonzero(q > 0)
    r = p[sup] / q[sup]
    idx = np.argsort(r)
    asc = sup[idx]
    _ties_by_id(asc, r[idx])
    kbest = _prefix_argmin(p[asc], q[asc], n)
    order = np.concatenate([asc[kbest:][::-1], asc[:kbest][::-1]])
    nT = order.shape[0] - kbest
    ps, qs = p[order], q[order]
    R = np.zeros(order.shape[0] + 1)
    R[:-1] = np.cumsum(qs[::-1])[::-1]  # summed from the tail, as the reference
    g, ys = _densities(ps, qs, R, nT, n)
    pos = np.full(V, -1, dtype=np.int64)
    pos[order] = np.arange(order.shape[0])
    y = np.zeros(V)
    y[order] = ys
    return order, nT, R, g, y, pos


def _plan_core(p, q, n):
    order, nT, R, g, y, pos = _tables(p, q, n)
    m = order.shape[0]
    rank = np.zeros(m + 1, dtype=np.int64)
    rank[0] = PERMANENT
    rank[nT] = PERMANENT
    rank[m] = PERMANENT
    w_top = np.ones(max(nT, 1))
    w_h = np.ones(max(m - nT, 1))
    kt = 1
    kh = 1
    if nT > 0:
        kt = _segment(g, R, 0, nT, n, rank, w_top)
    if m > nT:
        kh = _segment(g, R, nT, m, n, rank, w_h)
    excess = np.where(p > y, p - y, 0.0)
    alpha = np.minimum(p, y).sum()
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


# --------------------------------------------------------------------------- one position, no sweep


@njit(cache=True)
def _hull_end(order, y, R, lo, hi, a, n, W):
    r"""Right end of the tier holding position ``a`` in the component at weight ``W``.

    The tiers of the mixture at weight ``W`` are the linear pieces of the least
    concave majorant of :math:`F_W = Y - W\,\Phi` over the segment's nodes
    (cumulative ``y`` minus ``W`` times the cumulative coverage): the merge sweep
    is sticky-particle dynamics, whose clusters are given by this hull.  One
    monotone-chain pass, :math:`O(n \cdot (hi - lo))`.
    """
    k = hi - lo + 1
    st = np.empty(k, dtype=np.int64)  # hull nodes
    sl = np.empty(k)  # slope of the edge ending at st[i]
    top = 0
    st[0] = lo
    ycum = np.empty(k)  # cumulative y from lo
    ycum[0] = 0.0
    for j in range(lo, hi):
        ycum[j - lo + 1] = ycum[j - lo] + y[order[j]]
    for j in range(lo + 1, hi + 1):
        while True:
            i = st[top]
            s = (ycum[j - lo] - ycum[i - lo]) / (R[i] - R[j]) - W * _chord(R[i], R[j], n)
            if top > 0 and sl[top] <= s:
                top -= 1
            else:
                break
        top += 1
        st[top] = j
        sl[top] = s
    for t in range(top + 1):
        if st[t] > a:
            return st[t]
    return hi


@njit(cache=True)
def _select_fast(order, nT, pos, y, R, n, drafts, W):
    m = order.shape[0]
    top = False
    for x in drafts:
        if pos[x] < nT:
            top = True
    lo = 0 if top else nT
    hi = nT if top else m
    a = -1
    for x in drafts:
        t = pos[x]
        if (t < nT) == top and (a < 0 or t < a):
            a = t
    end = _hull_end(order, y, R, lo, hi, a, n, W)
    for x in drafts:
        t = pos[x]
        if (t < nT) == top and a <= t < end:
            return x
    return -1


def optimal_token(p, q, drafts, u):
    """``optimal`` at one position, without the merge sweep: sort, scans and one hull pass.

    Parameters
    ----------
    p, q : float64 (V,)
    drafts : int64 (n,), i.i.d. drafts in draw order, ``n >= 2``
    u : float64 (3,)
        The reference's uniforms: the mixture weight ``W = u[0]`` (the reference
        draws the component by the inverse CDF of the merge weights, the same
        tiers except when ``u[0]`` lies within rounding of a merge time), the
        accept coin, the residual draw.

    Returns
    -------
    int
    """
    p = np.ascontiguousarray(p, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64)
    drafts = np.asarray(drafts, dtype=np.int64)
    n = drafts.shape[0]
    order, nT, R, _, y, pos = _tables(p, q, n)
    if (pos[drafts] < 0).any():
        raise InvalidParameterError("drafts contains a token the draft gives probability 0")
    x = int(_select_fast(order, nT, pos, y, R, n, drafts, float(u[0])))
    prob = min(1.0, p[x] / y[x]) if y[x] > 0 else 0.0
    if u[1] < prob:
        return x
    excess = np.where(p > y, p - y, 0.0)
    total = excess.sum()
    law = excess / total if total > 0 else p
    cum = np.cumsum(law)
    j = int(np.searchsorted(cum, u[2], side="right"))
    if j >= law.shape[0]:
        j = int(np.flatnonzero(law > 0)[-1])
    return j
