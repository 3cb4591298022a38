r"""numba kernel of the priority-coin rule's greedy pass (private; docs/theory.md §3.17).

Drafts without replacement are the first ``n`` tokens whose exponential clocks
(rates ``q``) ring.  Conditioned on the time ``t`` of the ``n``-th ring, every
token contributes an independent factor

.. math::

    F_b(z) = a_b + c_b\,(r_b\,z + d_b\,z\,\varepsilon),\qquad
    a_b = e^{-q_b t},\ r_b = 1 - a_b,\ d_b = q_b a_b,

(not drawn; drawn before ``t``; drawn at ``t``, marked by :math:`\varepsilon`,
:math:`\varepsilon^2 = 0`), with ``c_b`` the weight the rule puts on ``b``
being a draft, and a sum over the draft sets of their probability times the
product of their members' weights is :math:`\int_0^\infty [z^n\varepsilon]
\prod_b F_b(z)\,dt`.  The integral is the trapezoidal rule in :math:`\log t`
on the nodes of :func:`grid`, at half the bound's step (:func:`._bound_kernels.wor_step`):
the marked coefficient is a sharper function of :math:`\log t` than the bound's
integrand, and at the bound's own step the marginal of a 5,000-token row summed to
1 only within 3e-12 at n = 8 (within 2e-15 at half the step; tests).

The polynomials are kept to degree ``n - 1`` (the drafted token of interest
supplies the last power of ``z``): ``u[k]`` the plain and ``v[k]`` the
:math:`\varepsilon` coefficient of :math:`z^k`, one column per node.  Every
quantity is a sum of products of numbers in [0, 1]: nothing cancels.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ._bound_kernels import wor_step

__all__ = ["BLOCK", "LOW_MASS", "grid", "outside_factor", "part_greedy"]

#: Tokens per block of the forward pass: suffix products are stored at block
#: boundaries and recomputed within a block, so memory is O((m / BLOCK + BLOCK) n G).
BLOCK = 128

#: Bound on the integral neglected below the lowest node: the integrand is at most
#: t^{n-1} / (n-1)! there (n - 1 draws before t, one density at t, each at most q),
#: so the mass below t0 is at most t0^n / n!.
LOW_MASS = 1e-16


def grid(n, slow_rate):
    """Nodes ``t`` (log-spaced, step ``h``) and trapezoidal weights ``h t``.

    Parameters
    ----------
    n : int >= 2
    slow_rate : float > 0
        The slowest decay of the integrand: the draft mass outside the ``n - 1``
        largest tokens (a draft set ``A`` with last draw ``x`` decays like
        :math:`e^{-(1 - q(A \\setminus x)) t}`).

    Returns
    -------
    t, w : ndarray
    """
    h = wor_step(n) / 2
    log_t0 = (math.log(LOW_MASS) + math.lgamma(n + 1)) / n
    u0 = math.floor(min(log_t0, 0.0) / math.log(2.0)) * math.log(2.0)
    G = math.ceil((math.log(50.0) - math.log(slow_rate) - u0) / h) + 1
    t = np.exp(u0 + h * np.arange(G))
    return t, h * t


@njit(cache=True)
def _factors(x, t, a, r, d):
    for g in range(t.size):
        xt = x * t[g]
        a[g] = math.exp(-xt)
        r[g] = -math.expm1(-xt)
        d[g] = x * a[g]


@njit(cache=True)
def _times_factor(u, v, a, r, d, c):
    """(u, v) <- (u, v) * F(z) with weight c, truncated to degree n - 1."""
    n, G = u.shape
    for k in range(n - 1, 0, -1):
        for g in range(G):
            v[k, g] = a[g] * v[k, g] + c * (r[g] * v[k - 1, g] + d[g] * u[k - 1, g])
            u[k, g] = a[g] * u[k, g] + c * r[g] * u[k - 1, g]
    for g in range(G):
        v[0, g] *= a[g]
        u[0, g] *= a[g]


@njit(cache=True)
def outside_factor(q_out, drawn, n, t):
    """The other part's product: ``prod F_b`` with weight 1 (``drawn``) or 0 (excluded)."""
    G = t.size
    u = np.zeros((n, G))
    v = np.zeros((n, G))
    u[0, :] = 1.0
    a = np.empty(G)
    r = np.empty(G)
    d = np.empty(G)
    for b in range(q_out.size):
        _factors(q_out[b], t, a, r, d)
        _times_factor(u, v, a, r, d, 1.0 if drawn else 0.0)
    return u, v


@njit(cache=True)
def part_greedy(q, p, out_u, out_v, t, w, kappa, y, taken, last):
    """The greedy coins of one part, in its selection order.

    Token ``j`` (``q[j] > 0``, in order) is selected from a draft set ``S`` with
    probability :math:`\\prod_{i \\in S, i < j} (1 - \\kappa_i)` times
    :math:`\\kappa_j` (or 1 when ``j`` is the last of ``S``'s part).  Its
    marginal is :math:`y_j = \\kappa_j M_j + (1 - \\kappa_j) N_j`, where
    :math:`M_j` (the sets containing ``j`` whose earlier members' coins failed)
    and :math:`N_j` (those with no later member) depend on the earlier coins
    only; :math:`\\kappa_j` is chosen so that :math:`y_j = p_j` where
    :math:`N_j \\le p_j \\le M_j`, and clipped to [0, 1] otherwise.

    Parameters
    ----------
    q, p : float64 (m,)
        The part's draft and target masses, in selection order.
    out_u, out_v : float64 (n, G)
        The other part's factor (:func:`outside_factor`).
    t, w : float64 (G,)
        Nodes and weights (:func:`grid`).
    kappa, y, taken, last : float64 (m,), written
        The coins, the marginal, :math:`M_j` and :math:`N_j`.
    """
    n, G = out_u.shape
    m = q.size
    nb = (m + BLOCK - 1) // BLOCK
    a = np.empty(G)
    r = np.empty(G)
    d = np.empty(G)
    # suffix products after each block (tokens later than the block, times the other part)
    ck_u = np.empty((nb, n, G))
    ck_v = np.empty((nb, n, G))
    ck_s = np.empty((nb, G))
    su = out_u.copy()
    sv = out_v.copy()
    ss = np.ones(G)
    for blk in range(nb - 1, -1, -1):
        ck_u[blk] = su
        ck_v[blk] = sv
        ck_s[blk] = ss
        for j in range(min(m, (blk + 1) * BLOCK) - 1, blk * BLOCK - 1, -1):
            _factors(q[j], t, a, r, d)
            _times_factor(su, sv, a, r, d, 1.0)
            for g in range(G):
                ss[g] *= a[g]
    pu = np.zeros((n, G))  # earlier tokens of the part, with their failed coins
    pv = np.zeros((n, G))
    pu[0, :] = 1.0
    ou = out_u.copy()  # the same times the other part
    ov = out_v.copy()
    bu = np.empty((BLOCK, n, G))
    bv = np.empty((BLOCK, n, G))
    bs = np.empty((BLOCK, G))
    ba = np.empty((BLOCK, G))
    br = np.empty((BLOCK, G))
    bd = np.empty((BLOCK, G))
    for blk in range(nb):
        lo = blk * BLOCK
        hi = min(m, lo + BLOCK)
        su[:, :] = ck_u[blk]
        sv[:, :] = ck_v[blk]
        ss[:] = ck_s[blk]
        for j in range(hi - 1, lo - 1, -1):
            i = j - lo
            bu[i] = su
            bv[i] = sv
            bs[i] = ss
            _factors(q[j], t, ba[i], br[i], bd[i])
            _times_factor(su, sv, ba[i], br[i], bd[i], 1.0)
            for g in range(G):
                ss[g] *= ba[i, g]
        for j in range(lo, hi):
            i = j - lo
            M = 0.0
            N = 0.0
            for g in range(G):
                xu = 0.0
                xv = 0.0
                for k in range(n):
                    xu += pu[k, g] * bu[i, n - 1 - k, g]
                    xv += pu[k, g] * bv[i, n - 1 - k, g] + pv[k, g] * bu[i, n - 1 - k, g]
                M += w[g] * (br[i, g] * xv + bd[i, g] * xu)
                N += w[g] * (br[i, g] * ov[n - 1, g] + bd[i, g] * ou[n - 1, g]) * bs[i, g]
            if N > M:  # equal in exact arithmetic when no set has a later member
                N = M
            gap = M - N
            if gap > 0.0:
                k = (p[j] - N) / gap
                k = min(max(k, 0.0), 1.0)
            else:
                k = 1.0
            kappa[j] = k
            y[j] = N + k * gap
            taken[j] = M
            last[j] = N
            _times_factor(pu, pv, ba[i], br[i], bd[i], 1.0 - k)
            _times_factor(ou, ov, ba[i], br[i], bd[i], 1.0 - k)
