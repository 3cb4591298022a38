r"""Window sums of the pair-score solver in one compiled pass (numba, private).

:class:`.pair_scores._Windows` sorts the tokens by score once per score
vector; every pair sum the solver needs is then, for each token ``a``, a sum of
:math:`w_b \mu_b^k` over the tokens ``b != a`` below, within and above the
ramp's window :math:`|\mu_a - \mu_b| < 1`: a gather, a cumulative sum and three
lookups.  numpy runs each of those as a separate pass with its own temporary,
and the dual needs six such sums per evaluation and two per conjugate-gradient
step; these kernels compute them, and the dual's pair terms from them
(:func:`part_dual`), in compiled loops with the same floating-point operations
in the same order as the numpy expressions they replace (the cumulative sum is
sequential, as :func:`numpy.cumsum` is), so the results are equal bit for bit
(the tests compare them).  The window bounds are found by two forward pointers
instead of two binary searches per token, and the conjugate gradients run
compiled too (their dot products add in sequence, so they are not numpy's to
the bit; the tests check them against a dense solve).

The token of weight above 1/2 (``big``, at most one; -1 for none) is kept out
of the cumulative sums and added on its own, for the reason given in
:class:`.pair_scores._Windows`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "conjugate_gradients", "dot", "part_dual", "window_bounds", "window_moments",
    "window_sums",
]


@njit(cache=True, nogil=True)
def _times_power(w, x, k):
    """``w x^k`` for ``k`` in 0, 1, 2, as numpy forms ``w * x**k`` (``x**2`` is ``x * x``)."""
    if k == 1:
        return w * x
    if k == 2:
        return w * (x * x)
    return w


@njit(cache=True, nogil=True)
def _prefix(order, m, w, big, k):
    """``c[0] = 0``, ``c[i + 1] = c[i] + w_(i) m_(i)^k`` over the sorted tokens, ``big`` out."""
    V = order.shape[0]
    c = np.empty(V + 1)
    c[0] = 0.0
    for i in range(V):
        j = order[i]
        c[i + 1] = c[i] + _times_power(0.0 if j == big else w[j], m[i], k)
    return c


@njit(cache=True, nogil=True)
def window_sums(order, m, lo, hi, mu, w, big, k):
    """``(below, window, above)`` of :meth:`.pair_scores._Windows.sums` for moment ``k``."""
    V = order.shape[0]
    c = _prefix(order, m, w, big, k)
    below = np.empty(V)
    window = np.empty(V)
    above = np.empty(V)
    total = c[V]
    for a in range(V):
        own = _times_power(w[a], mu[a], k)
        below[a] = c[lo[a]]
        window[a] = (c[hi[a]] - c[lo[a]]) - (0.0 if a == big else own)
        above[a] = total - c[hi[a]]
    if big >= 0:
        term = _times_power(w[big], mu[big], k)
        for a in range(V):
            t = 0.0 if a == big else term
            gap = mu[a] - mu[big]
            below[a] = below[a] + (t if gap >= 1.0 else 0.0)
            window[a] = window[a] + (t if abs(gap) < 1.0 else 0.0)
            above[a] = above[a] + (t if gap <= -1.0 else 0.0)
    return below, window, above


@njit(cache=True, nogil=True)
def window_moments(order, m, lo, hi, mu, w, big):
    """The sums the dual needs of one weight vector: ``below``, ``window``, ``above`` of moment
    0, ``window`` and ``above`` of moment 1, ``window`` of moment 2."""
    below0, window0, above0 = window_sums(order, m, lo, hi, mu, w, big, 0)
    _, window1, above1 = window_sums(order, m, lo, hi, mu, w, big, 1)
    _, window2, _ = window_sums(order, m, lo, hi, mu, w, big, 2)
    return below0, window0, above0, window1, above1, window2


@njit(cache=True, nogil=True)
def window_bounds(order, m):
    """``lo``, ``hi`` per token (in token order): where the sorted scores ``m`` at or below
    ``mu_a - 1`` end and those at or above ``mu_a + 1`` begin.

    The sorted queries of ``np.searchsorted(m, m - 1, "right")`` and
    ``np.searchsorted(m, m + 1, "left")``, answered by two pointers that only move
    forward: :math:`O(V)`, the same comparisons of the same floats.
    """
    V = m.shape[0]
    lo = np.empty(V, dtype=np.int64)
    hi = np.empty(V, dtype=np.int64)
    j_lo = 0
    j_hi = 0
    for i in range(V):
        below = m[i] - 1.0
        while j_lo < V and m[j_lo] <= below:
            j_lo += 1
        above = m[i] + 1.0
        while j_hi < V and m[j_hi] < above:
            j_hi += 1
        lo[order[i]] = j_lo
        hi[order[i]] = j_hi
    return lo, hi


@njit(cache=True, nogil=True)
def _free_tokens(order, lo, hi, free):
    """The free tokens in score order, and each one's window as a range of that list.

    ``tokens[f]`` is the ``f``-th free token by score; the free tokens within its window
    ``|mu_a - mu_b| < 1`` are ``tokens[start[f]:stop[f]]`` (itself included).
    """
    V = order.shape[0]
    before = np.empty(V + 1, dtype=np.int64)  # free tokens before each sorted position
    tokens = np.empty(V, dtype=np.int64)
    k = 0
    for i in range(V):
        before[i] = k
        if free[order[i]]:
            tokens[k] = order[i]
            k += 1
    before[V] = k
    tokens = tokens[:k]
    start = np.empty(k, dtype=np.int64)
    stop = np.empty(k, dtype=np.int64)
    for f in range(k):
        start[f] = before[lo[tokens[f]]]
        stop[f] = before[hi[tokens[f]]]
    return tokens, start, stop


@njit(cache=True, nogil=True)
def _window0_free(start, stop, big_at, near_big, w, c, out):
    """``out[f]`` = the sum of ``w`` over the other free tokens in free token ``f``'s window:
    the window of :func:`window_sums` at moment 0 for a ``w`` that is 0 off the free
    tokens (the zeros add nothing).  ``big_at`` is the big token's place in the free
    list (-1 when it is not free) and ``near_big[f]`` whether it lies in ``f``'s window."""
    F = w.shape[0]
    c[0] = 0.0
    for f in range(F):
        c[f + 1] = c[f] + (0.0 if f == big_at else w[f])
    for f in range(F):
        out[f] = (c[stop[f]] - c[start[f]]) - (0.0 if f == big_at else w[f])
    if big_at >= 0:
        for f in range(F):
            if f != big_at and near_big[f]:
                out[f] = out[f] + w[big_at]


@njit(cache=True, nogil=True)
def dot(a, b):
    """``sum_i a_i b_i`` added in sequence, on the calling thread.

    numpy's ``a @ b`` goes to BLAS, whose threads (OpenBLAS starts one per core)
    spin on a shared machine: two processes solving plans side by side took 3.7
    times as long each as one alone, and 1.0 times with those threads off.
    """
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@njit(cache=True, nogil=True)
def conjugate_gradients(order, lo, hi, mu, big, q, e, weight, diag, rhs, free, tol, steps):
    """Solve ``H x = rhs`` on the free tokens by conjugate gradients, preconditioned by the
    Hessian's diagonal ``diag``; at most ``steps`` steps, stopping when the residual's
    largest entry is at most ``tol`` or the curvature vanishes (``H`` is a graph Laplacian,
    positive semidefinite).  ``x`` is 0 off the free tokens.

    The product ``H d`` on the free tokens is :math:`\\tfrac12 q_a (d_a W_a - e_a S(qd)_a
    - S(qed)_a)`, ``S`` the window sum and ``W`` the pairs' weights.  As ``d`` is 0 off the
    free tokens, ``S`` needs only them: the iteration runs on the free tokens alone, in
    score order (:func:`_free_tokens`), so a step costs :math:`O(F)` for ``F`` free
    tokens rather than :math:`O(V)`.
    """
    V = q.shape[0]
    tokens, start, stop = _free_tokens(order, lo, hi, free)
    F = tokens.shape[0]
    fq = np.empty(F)
    fqe = np.empty(F)
    fe = np.empty(F)
    fw = np.empty(F)
    inverse = np.zeros(F)
    r = np.empty(F)
    near_big = np.zeros(F, dtype=np.bool_)
    big_at = -1
    for f in range(F):
        a = tokens[f]
        fq[f] = q[a]
        fe[f] = e[a]
        fqe[f] = q[a] * e[a]
        fw[f] = weight[a]
        r[f] = rhs[a]
        if diag[a] > 0:
            inverse[f] = 1.0 / diag[a]
        if a == big:
            big_at = f
    if big_at >= 0:
        for f in range(F):
            near_big[f] = abs(mu[tokens[f]] - mu[big]) < 1.0
    x = np.zeros(F)
    z = inverse * r
    d = z.copy()
    rz = dot(r, z)
    dq = np.empty(F)
    dqe = np.empty(F)
    s1 = np.empty(F)
    s2 = np.empty(F)
    c = np.empty(F + 1)
    hd = np.empty(F)
    for _ in range(steps):
        for f in range(F):
            dq[f] = fq[f] * d[f]
            dqe[f] = fqe[f] * d[f]
        _window0_free(start, stop, big_at, near_big, dq, c, s1)
        _window0_free(start, stop, big_at, near_big, dqe, c, s2)
        for f in range(F):
            hd[f] = 0.5 * fq[f] * (d[f] * fw[f] - (fe[f] * s1[f] + s2[f]))
        curvature = dot(d, hd)
        if curvature <= 0 or rz <= 0:
            break
        step = rz / curvature
        worst = 0.0
        for f in range(F):
            x[f] += step * d[f]
            r[f] -= step * hd[f]
            worst = max(worst, abs(r[f]))
        if worst <= tol:
            break
        for f in range(F):
            z[f] = inverse[f] * r[f]
        rz_old = rz
        rz = dot(r, z)
        beta = rz / rz_old
        for f in range(F):
            d[f] = z[f] + beta * d[f]
    out = np.zeros(V)
    for f in range(F):
        out[tokens[f]] = x[f]
    return out


@njit(cache=True, nogil=True)
def _ramp_psi(mu_a, below, window, above, mid1, up1, mid2):
    """:math:`\\sum_b w_b\\,\\mathrm{ramp}(\\mu_a - \\mu_b)` and :math:`\\sum_b w_b\\,\\psi(\\mu_a,
    \\mu_b)` from the window sums, as the numpy expressions of ``_part_state`` form them."""
    ramp_sum = below + (0.5 + 0.5 * mu_a) * window - 0.5 * mid1
    psi_sum = ((0.25 - mu_a) * below
               - ((mu_a * mu_a) * window - (2 * mu_a) * mid1 + mid2) / 4 - (0.5 * mu_a) * window
               - 0.5 * mid1 + 0.25 * above - up1)
    return ramp_sum, psi_sum


@njit(cache=True, nogil=True)
def _dual_prefixes(order, m, q, qe, big):
    """The six cumulative sums :func:`part_dual` reads, in one pass: row ``i`` holds
    :func:`_prefix`'s ``c[i]`` of ``q`` and of ``qe`` at moments 0, 1, 2 (columns
    0-2 and 3-5), side by side so that one token's window reads one cache line."""
    V = order.shape[0]
    c = np.empty((V + 1, 6))
    for k in range(6):
        c[0, k] = 0.0
    for i in range(V):
        j = order[i]
        wq = 0.0 if j == big else q[j]
        wqe = 0.0 if j == big else qe[j]
        for k in range(3):
            c[i + 1, k] = c[i, k] + _times_power(wq, m[i], k)
            c[i + 1, 3 + k] = c[i, 3 + k] + _times_power(wqe, m[i], k)
    return c


@njit(cache=True, nogil=True)
def _window_moments_at(c, col, a, lo, hi, mu_a, w_a, big, w_big, mu_big, gap):
    """Token ``a``'s sums of one weight (``c``'s columns ``col`` to ``col + 2``): what
    :func:`window_moments` returns at ``a``, by the same operations in the same order
    (``gap`` is :math:`\\mu_a - \\mu_{\\rm big}`)."""
    V = c.shape[0] - 1
    own0 = _times_power(w_a, mu_a, 0)
    own1 = _times_power(w_a, mu_a, 1)
    own2 = _times_power(w_a, mu_a, 2)
    is_big = a == big
    below0 = c[lo, col]
    window0 = (c[hi, col] - c[lo, col]) - (0.0 if is_big else own0)
    above0 = c[V, col] - c[hi, col]
    window1 = (c[hi, col + 1] - c[lo, col + 1]) - (0.0 if is_big else own1)
    above1 = c[V, col + 1] - c[hi, col + 1]
    window2 = (c[hi, col + 2] - c[lo, col + 2]) - (0.0 if is_big else own2)
    if big >= 0:
        t0 = 0.0 if is_big else w_big
        t1 = 0.0 if is_big else _times_power(w_big, mu_big, 1)
        t2 = 0.0 if is_big else _times_power(w_big, mu_big, 2)
        d = gap
        below0 = below0 + (t0 if d >= 1.0 else 0.0)
        window0 = window0 + (t0 if abs(d) < 1.0 else 0.0)
        above0 = above0 + (t0 if d <= -1.0 else 0.0)
        window1 = window1 + (t1 if abs(d) < 1.0 else 0.0)
        above1 = above1 + (t1 if d <= -1.0 else 0.0)
        window2 = window2 + (t2 if abs(d) < 1.0 else 0.0)
    return below0, window0, above0, window1, above1, window2


@njit(cache=True, nogil=True)
def part_dual(order, m, lo, hi, mu, big, q, e):
    """The pair terms of one part's dual at scores ``mu``: per token, its selection mass from
    the pairs within the part, :math:`q_a (e_a R(q)_a + R(qe)_a)` (``R`` the ramp sums), and
    :math:`q_a (e_a \\Psi(q)_a + \\Psi(qe)_a)`, whose half-sum is the pairs' part of the dual.

    Elementwise the same operations as the numpy expressions they replace; the caller
    adds the base and takes the sums (pairwise, as numpy does).  The third output is the
    Hessian's pair weight :math:`W_a = e_a S(q)_a + S(qe)_a` (``S`` the window sum), which
    the same window sums give, so a Newton step needs no further pass.

    The twelve window sums (two weights, three moments) come from one pass of six
    cumulative sums and one pass over the tokens, with no array per sum: the same bits
    as :func:`window_moments` of ``q`` and of ``qe`` (the tests compare them), in about
    0.7 of the time on a row of 49,152 tokens.
    """
    V = q.shape[0]
    qe = np.empty(V)
    for a in range(V):
        qe[a] = q[a] * e[a]
    c = _dual_prefixes(order, m, q, qe, big)
    mass = np.empty(V)
    terms = np.empty(V)
    weight = np.empty(V)
    q_big = q[big] if big >= 0 else 0.0
    qe_big = qe[big] if big >= 0 else 0.0
    mu_big = mu[big] if big >= 0 else 0.0
    for a in range(V):
        gap = mu[a] - mu_big
        b0, w0, a0, w1, a1, w2 = _window_moments_at(c, 0, a, lo[a], hi[a], mu[a], q[a], big,
                                                    q_big, mu_big, gap)
        b0e, w0e, a0e, w1e, a1e, w2e = _window_moments_at(c, 3, a, lo[a], hi[a], mu[a], qe[a],
                                                          big, qe_big, mu_big, gap)
        rq, pq = _ramp_psi(mu[a], b0, w0, a0, w1, a1, w2)
        rk, pk = _ramp_psi(mu[a], b0e, w0e, a0e, w1e, a1e, w2e)
        mass[a] = q[a] * (e[a] * rq + rk)
        terms[a] = q[a] * (e[a] * pq + pk)
        weight[a] = e[a] * w0 + w0e
    return mass, terms, weight
