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
on the nodes of :func:`grid`, at half the bound's step (:func:`._bound_kernels.wor_per_octave`):
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

from ._bound_kernels import wor_per_octave

__all__ = ["BLOCK", "LOW_MASS", "grid", "part_greedy"]

#: Tokens per block of the forward pass: suffix products are stored at block
#: boundaries and recomputed within a block, so memory is O((m / BLOCK + BLOCK) n G).
BLOCK = 128

#: Bound on the integral neglected below the lowest node: the integrand is at most
#: t^{n-1} / (n-1)! there (n - 1 draws before t, one density at t, each at most q),
#: so the mass below t0 is at most t0^n / n!.
LOW_MASS = 1e-16


def grid(n, slow_rate):
    """Nodes ``t`` (log-spaced, ``k`` per octave) and trapezoidal weights ``h t``.

    Each node is exactly twice the node ``k`` places before it (a power-of-2
    multiple of one of the first ``k``), so that :func:`_factors` may square
    its way up an octave at a time.

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
    k = 2 * wor_per_octave(n)
    h = math.log(2.0) / k
    log_t0 = (math.log(LOW_MASS) + math.lgamma(n + 1)) / n
    e0 = math.floor(min(log_t0, 0.0) / math.log(2.0))
    G = math.ceil((math.log(50.0) - math.log(slow_rate) - e0 * math.log(2.0)) / h) + 1
    g = np.arange(G)
    base = np.exp(h * np.arange(k))
    t = np.ldexp(base[g % k], (g // k + e0).astype(np.int32))
    return t, h * t


@njit(cache=True, nogil=True)
def _factors(x, t, k, a, r, d):
    """:math:`a = e^{-x t}`, :math:`r = 1 - a`, :math:`d = x a` on every node.

    ``r`` goes up an octave by :math:`r \\mapsto r (2 - r)`, which keeps its relative
    error; ``a`` is ``1 - r`` while ``r < 1/2`` (relative error of a few ulp
    there) and an exponential beyond, where :math:`1 - r` would lose its
    relative accuracy (and squaring ``a`` would double its error every octave):
    most tokens carry little mass and never get there.
    """
    G = t.size
    for g in range(G):
        if g < k:
            r[g] = -math.expm1(-x * t[g])
        else:
            rr = r[g - k]
            r[g] = rr * (2.0 - rr)
        if r[g] < 0.5:
            a[g] = 1.0 - r[g]
        else:
            a[g] = math.exp(-x * t[g])
        d[g] = x * a[g]


# Row operations on contiguous float64 rows: small loops over a few arrays, which LLVM
# vectorises (with a run-time overlap check).  Written inline over the (n, G) arrays the
# same loops stayed scalar: one factor cost 0.69 us against 0.40 (n = 4, G = 116) and
# 0.60 (n = 8, G = 68) this way (measured; the convolution below, inline, is faster as is).
@njit(cache=True, nogil=True, fastmath={"contract"})
def _row_v(vk, vl, ul, a, cr, cd):
    """vk <- a vk + cr vl + cd ul."""
    for g in range(vk.size):
        vk[g] = a[g] * vk[g] + cr[g] * vl[g] + cd[g] * ul[g]


@njit(cache=True, nogil=True, fastmath={"contract"})
def _row_u(uk, ul, a, cr):
    """uk <- a uk + cr ul."""
    for g in range(uk.size):
        uk[g] = a[g] * uk[g] + cr[g] * ul[g]


@njit(cache=True, nogil=True)
def _row_scale(x, a):
    """x <- a x."""
    for g in range(x.size):
        x[g] *= a[g]


@njit(cache=True, nogil=True)
def _times_factor(u, v, a, cr, cd):
    """(u, v) <- (u, v) * F(z), truncated to degree n - 1, with ``cr`` and ``cd`` the
    factor's ``c r`` and ``c d`` (``c`` the weight on the token being drawn)."""
    n = u.shape[0]
    for k in range(n - 1, 0, -1):
        _row_v(v[k], v[k - 1], u[k - 1], a, cr, cd)
        _row_u(u[k], u[k - 1], a, cr)
    _row_scale(v[0], a)
    _row_scale(u[0], a)


@njit(cache=True, nogil=True)
def _weighted(r, d, c, cr, cd):
    """cr <- c r, cd <- c d."""
    for g in range(r.size):
        cr[g] = c * r[g]
        cd[g] = c * d[g]


@njit(cache=True, nogil=True)
def part_greedy(q, p, out_u, out_v, t, w, k, kappa, y, taken, last, total_u, total_v):
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
        The other part's factor: the product of its tokens' factors (another
        pass's ``total_u``, ``total_v``), or 1 (``u[0] = 1``, the rest 0).
    t, w : float64 (G,)
        Nodes and weights (:func:`grid`).
    k : int
        Nodes per octave.
    kappa, y, taken, last : float64 (m,), written
        The coins, the marginal, :math:`M_j` and :math:`N_j`.
    total_u, total_v : float64 (n, G), written
        The product of every factor of the part (weight 1) times the other part's: with
        the other part's factor 1, the factor this part is for the other (the backward
        pass computes it anyway).
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
            _factors(q[j], t, k, a, r, d)
            _times_factor(su, sv, a, r, d)
            _row_scale(ss, a)
    total_u[:, :] = su
    total_v[:, :] = sv
    pu = np.zeros((n, G))  # earlier tokens of the part, with their failed coins
    pv = np.zeros((n, G))
    pu[0, :] = 1.0
    bu = np.empty((BLOCK, n, G))
    bv = np.empty((BLOCK, n, G))
    bs = np.empty((BLOCK, G))
    ba = np.empty((BLOCK, G))
    br = np.empty((BLOCK, G))
    bd = np.empty((BLOCK, G))
    xu = np.empty(G)
    xv = np.empty(G)
    ou = np.empty(G)
    ov = np.empty(G)
    cr = np.empty(G)
    cd = np.empty(G)
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
            _factors(q[j], t, k, ba[i], br[i], bd[i])
            _times_factor(su, sv, ba[i], br[i], bd[i])
            _row_scale(ss, ba[i])
        for j in range(lo, hi):
            i = j - lo
            # [z^{n-1}] and [z^{n-1} eps] of prefix times suffix (for M), and of prefix times
            # the other part alone (for N: no later token of the part), node by node (the
            # node index innermost, contiguous)
            xu[:] = 0.0
            xv[:] = 0.0
            ou[:] = 0.0
            ov[:] = 0.0
            for e in range(n):
                for g in range(G):
                    xu[g] += pu[e, g] * bu[i, n - 1 - e, g]
                    xv[g] += pu[e, g] * bv[i, n - 1 - e, g] + pv[e, g] * bu[i, n - 1 - e, g]
                    ou[g] += pu[e, g] * out_u[n - 1 - e, g]
                    ov[g] += pu[e, g] * out_v[n - 1 - e, g] + pv[e, g] * out_u[n - 1 - e, g]
            M = 0.0
            N = 0.0
            for g in range(G):
                M += w[g] * (br[i, g] * xv[g] + bd[i, g] * xu[g])
                N += w[g] * (br[i, g] * ov[g] + bd[i, g] * ou[g]) * bs[i, g]
            if N > M:  # N <= M exactly (equal when no set has a later member): rounding
                N = M
            gap = M - N
            if gap > 0.0:
                c = (p[j] - N) / gap
                c = min(max(c, 0.0), 1.0)
            else:
                c = 1.0
            kappa[j] = c
            y[j] = N + c * gap
            taken[j] = M
            last[j] = N
            _weighted(br[i], bd[i], 1.0 - c, cr, cd)
            _times_factor(pu, pv, ba[i], cr, cd)
