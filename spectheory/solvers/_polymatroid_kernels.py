r"""numba kernels of the optimal i.i.d. plan (:mod:`spectheory.solvers.polymatroid`).

The float64 plan of one row: one sort of the support by ``p/q`` (ties by id),
the prefix scan for the optimal dual set, the chord densities of the tier
rules, and the merge sweep (a heap of :math:`O(V)` events,
:math:`O(V \log V)`) that writes the mixture weights of each segment.  The
trials that use the plan live in :mod:`spectheory.sim._optimal_kernel`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["PERMANENT", "plan_core", "row_tables"]

#: Rank of a boundary that is a tier boundary in every component (segment ends).
PERMANENT = np.iinfo(np.int64).max

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
        if ms + me > 0:
            u = (ms * (a[s] - W * v[s]) + me * (a[e] - W * v[e])) / (ms + me)
        else:  # two tiers of draft mass below rounding (float rows): no weight
            u = a[s] - W * v[s]
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
        if b - a > 32:
            asc[a:b] = np.sort(asc[a:b])
        elif b - a > 1:
            # Short runs (thousands of them in a row of half-precision logits, whose
            # ratios repeat): insertion sort, without the call and copy of a sort.
            for i in range(a + 1, b):
                x = asc[i]
                j = i - 1
                while j >= a and asc[j] > x:
                    asc[j + 1] = asc[j]
                    j -= 1
                asc[j + 1] = x
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
        # f(T) = 1 - q(H*)^n as q(T) * sum_k q(H*)^k: no cancellation when q(T) is
        # below the rounding of the row's sum (1 - R^n went negative there).
        QT = 0.0
        for t in range(nT):
            QT += qs[t]
        fT = QT * _chord(1.0, R[nT], n)
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


def row_tables(p, q, n):
    """Order (T then H*, each by p/q descending), |T|, tail masses R, densities g, y, positions.

    The sort is numpy's (vectorised); the scans are sequential (numba), so the
    float results are the same wherever the plan is computed.
    """
    sup = np.flatnonzero(q > 0)
    # Tokens of ratio 0 (p = 0) come first, in id order as the tie rule wants: split
    # off, they skip the sort and the tie pass.  A residual target (the later stages of
    # ``embedded_iid``) has tens of thousands of them, and sorting that one run of ties
    # by id cost more than the argsort.
    zero = p[sup] == 0
    rest = sup[~zero]
    # p / subnormal q overflows to inf (a softmax row with a logit gap beyond ~708): such a
    # token sorts after every finite ratio, as its true ratio does, without a warning
    # (warnings are errors in strict callers; ``bound`` orders the same ratios silently).
    with np.errstate(over="ignore"):
        r = p[rest] / q[rest]
    idx = np.argsort(r)
    asc = rest[idx]
    _ties_by_id(asc, r[idx])
    return _tables_of_order(p, q, np.concatenate((sup[zero], asc)), n)


@njit(cache=True)
def _tables_of_order(p, q, asc, n):
    """:func:`row_tables` after the sort, in one compiled pass per table.

    Every sum runs in the order of the numpy expressions it replaced
    (sequential prefix sums, ``R`` summed from the tail), so the tables are
    bit-identical to theirs.  One kernel instead of eight numpy passes with
    gathers and scatters took :func:`row_tables` from 4.3-4.9 to 3.6-4.1
    times one ``np.argsort`` of the row (V = 49,152 and 151,936).
    """
    V = p.shape[0]
    m = asc.shape[0]
    pa = np.empty(m)
    qa = np.empty(m)
    for k in range(m):
        pa[k] = p[asc[k]]
        qa[k] = q[asc[k]]
    kbest = _prefix_argmin(pa, qa, n)
    nT = m - kbest
    # T (ratios above the optimal prefix), then H*, each by p/q descending.
    order = np.empty(m, dtype=np.int64)
    ps = np.empty(m)
    qs = np.empty(m)
    for t in range(m):
        k = m - 1 - t if t < nT else kbest - 1 - (t - nT)
        order[t] = asc[k]
        ps[t] = pa[k]
        qs[t] = qa[k]
    R = np.zeros(m + 1)
    acc = 0.0
    for t in range(m - 1, -1, -1):  # summed from the tail, as the reference
        acc += qs[t]
        R[t] = acc
    g, ys = _densities(ps, qs, R, nT, n)
    pos = np.full(V, -1, dtype=np.int64)
    y = np.zeros(V)
    for t in range(m):
        pos[order[t]] = t
        y[order[t]] = ys[t]
    return order, nT, R, g, y, pos


def plan_core(p, q, n):
    order, nT, R, g, y, pos = row_tables(p, q, n)
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


