"""numba kernels of the optimal-acceptance dual (private).

All kernels take rows already sorted by the ratio ``p / q`` (ascending) and
return, per row, the minimum over prefixes ``k = 0..V`` of
``p(H_k) - Q(H_k)`` and the minimising ``k``; ``alpha* = 1 + min``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

__all__ = ["iid_prefix_min", "wor_prefix_min", "WOR_STEP", "WOR_T0", "WOR_DEAD"]

#: Step of the trapezoidal rule in log-time for the exponential-clock integral
#: (THEORY.md 2.5(c)).  The integrand is analytic in a strip of half-width
#: ~pi/2 around the real log-time axis, so the error decays like
#: exp(-pi^2 / h); at h = 1/8 the measured error against exact enumeration is
#: below 1e-13 (tests/test_bound_wor_accuracy.py).
WOR_STEP = 0.125
#: Lower end of the log-time grid: below it P(N_H(t) <= n-1) = 1 up to
#: (q(H) t)^n / n! <= 5e-15, and the lattice sum is done in closed form.
WOR_T0 = 1e-7
#: A grid node whose P(N_H(t) <= n-1) falls below this is dropped: it can only
#: decrease as H grows, and its weight in any later integral is at most this.
WOR_DEAD = 1e-20


@njit(cache=True, parallel=True)
def iid_prefix_min(p, q, order, lengths, n):
    """min_k [P_k - S_k^n] over prefixes of ``order[b, :lengths[b]]``.

    Parameters
    ----------
    p, q : float64 (B, V)
    order : int64 (B, V); row b uses its first ``lengths[b]`` entries.
    lengths : int64 (B,)
    n : int

    Returns
    -------
    best : float64 (B,), kbest : int64 (B,)
    """
    B = p.shape[0]
    best = np.zeros(B)
    kbest = np.zeros(B, dtype=np.int64)
    for b in prange(B):
        P = 0.0
        S = 0.0
        m = 0.0
        km = 0
        for k in range(lengths[b]):
            i = order[b, k]
            P += p[b, i]
            S += q[b, i]
            f = P - S**n
            if f < m:
                m = f
                km = k + 1
        best[b] = m
        kbest[b] = km
    return best, kbest


@njit(cache=True)
def _wor_row(p, q, order, n, lam_suffix, iid_suffix_min, t, h):
    """One row of the without-replacement scan; see :func:`wor_prefix_min`."""
    V = order.shape[0]
    G = t.shape[0]
    P = np.zeros((n, G))
    P[0, :] = 1.0
    a = np.empty(G)
    y = np.empty(G)
    lower = WOR_T0 * math.exp(-h) / (1.0 - math.exp(-h))  # lattice below t0, times 1/lam
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
        pi = p[i]
        qi = q[i]
        pH += pi
        if qi > 0.0:
            support += 1
            for g in range(g_hi):
                yy = -math.expm1(-qi * t[g])
                y[g] = yy
                a[g] = 1.0 - yy
            for j in range(n - 1, 0, -1):
                for g in range(g_hi):
                    P[j, g] = P[j, g] * a[g] + P[j - 1, g] * y[g]
            for g in range(g_hi):
                P[0, g] *= a[g]
            while g_hi > 0:
                s = 0.0
                for j in range(n):
                    s += P[j, g_hi - 1]
                if s >= WOR_DEAD:
                    break
                g_hi -= 1
        if support < n:
            continue
        lam = lam_suffix[k + 1]
        if pH - (1.0 - lam) ** n >= best:
            continue  # the i.i.d. lower bound already loses
        if lam <= 0.0:
            Q = 1.0
        else:
            acc = lam * lower
            for g in range(g_hi):
                s = 0.0
                for j in range(n):
                    s += P[j, g]
                lt = lam * t[g]
                acc += lt * math.exp(-lt) * s
            Q = 1.0 - h * acc
        evaluated += 1
        f = pH - Q
        if f < best:
            best = f
            kbest = k + 1
    return best, kbest, evaluated


@njit(cache=True, parallel=True)
def wor_prefix_min(p, q, order, n, lam_suffix, iid_suffix_min, t, h):
    """min_k [P_k - Q_wor(H_k)] over prefixes of each row's ratio order.

    ``Q_wor`` by the exponential-clock integral (THEORY.md 2.5(c)): with
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
            p[b], q[b], order[b], n, lam_suffix[b], iid_suffix_min[b], t[b, :G], h
        )
    return best, kbest, evaluated
