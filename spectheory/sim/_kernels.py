r"""numba kernels of the sampling form of the registered verifiers (private).

Every kernel runs a batch of ``B`` positions (rows of ``p`` and ``q``, float64
of shape (B, V)) and ``T`` trials per row, and consumes pre-drawn uniforms
``u`` of shape (B, T, K) in exactly the order the reference verifier
(:mod:`spectheory.verifiers`) consumes coins: the ``k``-th call to
``bernoulli(prob)`` or ``categorical(probs)`` of trial ``(b, t)`` reads
``u[b, t, k]``, ``bernoulli`` is :math:`u < \text{prob}` and ``categorical``
the inverse CDF (:class:`spectheory.coins.ReplayCoins`).  So a kernel and the
reference run with ``ReplayCoins(u[b, t])`` on the same drafts return the same
token.  The number of uniforms per trial, ``K``, is the most the reference can
consume (:func:`verifier_uniforms`); trials that stop early leave the rest
unread.

Per-trial cost
--------------
Everything that does not depend on the drafts is computed once per row, in
numpy, with the reference's own operations (:mod:`spectheory.verifiers._ops`),
so those quantities are bit-identical to the reference's: the residual
:math:`\mathrm{norm}((p - q)_+)` of ``sd``/``naive``; the whole RRS chain
:math:`r_1 = p,\ r_{i+1} = \mathrm{norm}((r_i - q)_+)` of ``rrs`` (i.i.d.
drafts do not change ``q``); K-SEQ's :math:`\rho^*`
(:func:`spectheory.verifiers.kseq_rho`) and residual
:math:`\mathrm{norm}(p - \tfrac{p_{acc}}{\beta}\min(q, p/\rho^*))`; the greedy
law's :math:`\tilde q` and residual; all of SpecHub's vectors (its final law
does not depend on the random draft); typical acceptance's threshold
:math:`\min(\varepsilon, \delta e^{-H(p)})` and argmax.  A categorical draw is
then a binary search on the sequential cumulative sums of its law, which
equals the reference's linear inverse CDF (:math:`\min\{i : u <
\sum_{j \le i} r_j\}` over tokens with :math:`r_i > 0`, else the last such token)
*bit for bit*: ``np.cumsum`` adds left to right as the reference does, adding
a zero leaves a partial sum unchanged, and the first index whose partial sum
exceeds ``u`` always carries positive mass.  Per trial these verifiers cost
:math:`O(n + \log V)` (``sd``, ``naive``, ``rrs``, ``kseq``, ``greedy``,
``spechub``) or :math:`O(n)` (``typical``).

Two verifiers have residuals that depend on the drafts:

``nss`` (point-mass recursion)
    After rejecting the distinct drafts ``S`` the law is ``p`` restricted to
    the complement of ``S``.  The fast path draws from it in
    :math:`O(n \log V)` by binary search on
    :math:`\sum_{j \le y} p_j - \sum_{s \in S, s \le y} p_s > u\,Z`, with
    :math:`Z = \sum_j p_j - p(S)`.  The reference renormalises a copy at every
    rejection instead, so the two agree up to rounding: a token can differ only
    when a uniform lands within about :math:`V\epsilon/Z` (:math:`\epsilon` =
    2.2e-16) of a boundary of the cumulative law.  When :math:`Z < 2^{-10}`
    (cancellation would grow that window), or when the search lands on a token
    of zero residual mass, the trial is re-run by an exact replica of the
    reference in :math:`O(nV)` (which such trials reach with probability at
    most :math:`Z`).
``rrs_wor`` (RRS without replacement)
    The residual :math:`r_{i+1} = \mathrm{norm}((r_i - q_i)_+)` and the draft
    law :math:`q_{i+1}` change with every rejected draft, so a trial costs
    :math:`O(nV)`: the kernel replicates the reference step by step, with
    numpy's pairwise summation (:func:`pairwise_sum`, bit-identical to
    ``ndarray.sum`` for contiguous float64), so it is bit-exact too.

Draft sampling (:func:`draw_drafts`) is separate, with its own uniforms of
shape (B, T, n) (``"iid"``, ``"without_replacement"``) or (B, T, 1)
(``"greedy"``):

``"iid"``
    draft ``j`` is the inverse CDF of ``q`` at ``u[b, t, j]``;
``"without_replacement"``
    draft ``j`` is the inverse CDF at ``u[b, t, j]`` of ``q`` renormalised over
    the tokens not drawn yet (the first draft: ``q`` itself); fast path and
    exact replica as for ``nss``.  This consumes randomness differently from
    :func:`spectheory.sample_drafts` (Gumbel-top-``n``, one Gumbel per token)
    but has the same law, sequential sampling without replacement;
``"greedy"``
    the ``n - 1`` most likely tokens (descending ``q``, ties to the lowest id,
    :func:`spectheory.drafting.greedy_split`) then the inverse CDF of
    :math:`\tilde q` at ``u[b, t, 0]``.

``khisti`` and ``optimal_lp`` have no kernel: each needs a transport LP over
the draft sets of the instance (:math:`C(V + n - 1, n)` classes for i.i.d.
drafts), intractable at full vocabulary; :func:`spectheory.sim.simulate` runs
their Python reference instead.

All kernels are parallel over the flattened (row, trial) index; the output of
a trial depends only on its own uniforms, never on the number of threads.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .._errors import InvalidParameterError
from .._threads import run_parallel
from .._validate import check_positive_int
from ..drafting import greedy_split
from ..verifiers._ops import normalise_or, positive_part, residual
from ..verifiers._registry import builtin_names, get_verifier
from ..verifiers.kseq import kseq_rho
from ..verifiers.typical import POSTERIOR_ALPHA, POSTERIOR_THRESHOLD
from ._coin_kernels import _accept, _cdf_rows, _search

__all__ = [
    "EXACT_MASS",
    "KERNEL_VERIFIERS",
    "draft_uniforms",
    "draw_drafts",
    "pairwise_sum",
    "run_verifier",
    "verifier_uniforms",
]

#: Verifiers with a kernel: read from the registry (each record's ``kernel``).
KERNEL_VERIFIERS = builtin_names("kernel")
#: Below this remaining mass the O(n log V) paths of ``nss`` and of drafting
#: without replacement hand the trial to their exact O(nV) replica.
EXACT_MASS = 2.0**-10
#: Trials per parallel chunk of the kernels that need scratch vectors.
_CHUNK = 32


# --------------------------------------------------------------------------- helpers


@njit(cache=True)
def _block_sum(a, lo, n):
    """numpy's pairwise-sum leaf (``n <= 128``): 8 accumulators, then the tail."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    m = n - n % 8
    while i < m:
        j = lo + i
        r0 += a[j]
        r1 += a[j + 1]
        r2 += a[j + 2]
        r3 += a[j + 3]
        r4 += a[j + 4]
        r5 += a[j + 5]
        r6 += a[j + 6]
        r7 += a[j + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def pairwise_sum(a, lo, n):
    """``a[lo:lo + n].sum()`` exactly as numpy computes it (pairwise, leaves of 128).

    Bit-identical to ``ndarray.sum`` on a contiguous float64 vector: numpy's
    ``pairwise_sum`` splits ``n > 128`` terms at ``n2 = n // 2 - (n // 2) % 8``
    and adds the two halves' sums.  The recursion is unrolled onto an explicit
    stack (numba's on-disk cache does not reload recursive functions safely).
    """
    if n <= 128:
        return _block_sum(a, lo, n)
    f_lo = np.empty(64, dtype=np.int64)
    f_n = np.empty(64, dtype=np.int64)
    f_state = np.empty(64, dtype=np.int64)  # 1: computing left half, 2: computing right half
    f_left = np.empty(64)
    top = 0
    f_lo[0] = lo
    f_n[0] = n
    have = False  # a child's sum is in ``ret``
    ret = 0.0
    while True:
        if have:
            if top < 0:
                return ret
            if f_state[top] == 1:
                f_left[top] = ret
                f_state[top] = 2
                h = f_n[top] // 2
                h -= h % 8
                f_lo[top + 1] = f_lo[top] + h
                f_n[top + 1] = f_n[top] - h
                top += 1
                have = False
            else:
                ret = f_left[top] + ret
                top -= 1
            continue
        m = f_n[top]
        if m <= 128:
            ret = _block_sum(a, f_lo[top], m)
            top -= 1
            have = True
        else:
            f_state[top] = 1
            h = m // 2
            h -= h % 8
            f_lo[top + 1] = f_lo[top]
            f_n[top + 1] = h
            top += 1


@njit(cache=True)
def _np_sum(a):
    return 0.0 + pairwise_sum(a, 0, a.shape[0])


@njit(cache=True)
def _inverse_cdf(u, probs):
    """``coins._inverse_cdf``: linear scan over positive entries, else the last one."""
    acc = 0.0
    last = -1
    for i in range(probs.shape[0]):
        v = probs[i]
        if v > 0:
            acc += v
            last = i
            if u < acc:
                return i
    return last


@njit(cache=True)
def _masked_search(cum, w, S, m, target):
    """Smallest ``y`` with ``cum[y] - sum(w[s] for s in S[:m] if s <= y) > target``, or -1.

    Returns -1 also when that ``y`` has ``w[y] == 0`` or lies in ``S`` (possible
    only by rounding): the caller then takes its exact path.
    """
    V = cum.shape[0]
    lo = 0
    hi = V
    while lo < hi:
        mid = (lo + hi) >> 1
        f = cum[mid]
        for k in range(m):
            if S[k] <= mid:
                f -= w[S[k]]
        if f > target:
            hi = mid
        else:
            lo = mid + 1
    if lo == V or not w[lo] > 0:
        return -1
    for k in range(m):
        if S[k] == lo:
            return -1
    return lo


# --------------------------------------------------------------------------- per-row preparation


def verifier_uniforms(name, n):
    """Uniforms per trial the reference verifier ``name`` can consume with ``n`` drafts.

    Read from the registry (the record's ``uniforms``); an unknown name raises
    :class:`~spectheory.InvalidParameterError` naming the registered ones.
    """
    v = get_verifier(name)
    if v.uniforms is None:
        raise InvalidParameterError(f"verifier {v.name!r} has no stated uniform budget")
    return v.uniforms(check_positive_int(n, "n"))


def draft_uniforms(n, sampling):
    """Uniforms per trial that :func:`draw_drafts` consumes."""
    return 1 if sampling == "greedy" else n


# --------------------------------------------------------------------------- draft kernels


@njit(cache=True, parallel=True)
def _draw_iid(cum, last, u, out):
    B, T, n = u.shape
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        for j in range(n):
            out[b, t, j] = _search(cum[b], u[b, t, j], last[b])


@njit(cache=True, parallel=True)
def _draw_greedy(top, cum, last, u, out):
    B, T, _ = u.shape
    m = top.shape[1]
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        for j in range(m):
            out[b, t, j] = top[b, j]
        out[b, t, m] = _search(cum[b], u[b, t, 0], last[b])


@njit(cache=True)
def _wor_exact(q, u, out):
    """Exact replica: draw ``j`` from ``q`` zeroed on earlier draws, renormalised."""
    V = q.shape[0]
    rest = q.copy()
    law = np.empty(V)
    out[0] = _inverse_cdf(u[0], q)
    for j in range(1, u.shape[0]):
        rest[out[j - 1]] = 0.0
        tot = _np_sum(rest)
        for i in range(V):
            law[i] = rest[i] / tot
        out[j] = _inverse_cdf(u[j], law)


@njit(cache=True, parallel=True)
def _draw_wor(q, cum, last, u, out):
    B, T, n = u.shape
    V = q.shape[1]
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        S = np.empty(n, dtype=np.int64)
        S[0] = _search(cum[b], u[b, t, 0], last[b])
        taken = q[b, S[0]]
        ok = True
        for j in range(1, n):
            Z = cum[b, V - 1] - taken
            if Z < EXACT_MASS:
                ok = False
                break
            y = _masked_search(cum[b], q[b], S, j, u[b, t, j] * Z)
            if y < 0:
                ok = False
                break
            S[j] = y
            taken += q[b, y]
        if ok:
            for j in range(n):
                out[b, t, j] = S[j]
        else:
            _wor_exact(q[b], u[b, t], out[b, t])


def draw_drafts(q, n, sampling, u):
    """Drafts of shape (B, T, n) int64 from rows ``q`` (B, V) and uniforms ``u``.

    ``u`` has shape (B, T, :func:`draft_uniforms`); see the module docstring
    for how each law consumes it.
    """
    B = q.shape[0]
    T = u.shape[1]
    out = np.empty((B, T, n), dtype=np.int64)
    if sampling == "greedy":
        top = np.empty((B, n - 1), dtype=np.int64)
        laws = []
        for b in range(B):
            T_b, qt = greedy_split(q[b], n)
            top[b] = T_b
            laws.append(qt)
        cum, last = _cdf_rows(laws)
        _draw_greedy(top, cum, last, u, out)
        return out
    cum, last = _cdf_rows(list(q))
    if sampling == "iid":
        _draw_iid(cum, last, u, out)
    else:
        _draw_wor(np.ascontiguousarray(q), cum, last, u, out)
    return out


# --------------------------------------------------------------------------- verifier kernels


@njit(cache=True, parallel=True)
def _k_single(p, q, cum, last, drafts, u, out):
    """``sd`` and ``naive``: SD on the first draft."""
    B, T, _ = drafts.shape
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        x = drafts[b, t, 0]
        if u[b, t, 0] < _accept(p[b, x], q[b, x]):
            out[b, t] = x
        else:
            out[b, t] = _search(cum[b], u[b, t, 1], last[b])


@njit(cache=True, parallel=True)
def _k_greedy(p, qt, cum, last, drafts, u, out):
    B, T, n = drafts.shape
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        x = drafts[b, t, n - 1]
        if u[b, t, 0] < _accept(p[b, x], qt[b, x]):
            out[b, t] = x
        else:
            out[b, t] = _search(cum[b], u[b, t, 1], last[b])


@njit(cache=True, parallel=True)
def _k_rrs(q, chain, cum, last, drafts, u, out):
    B, T, n = drafts.shape
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        y = -1
        for k in range(n):
            x = drafts[b, t, k]
            if u[b, t, k] < _accept(chain[b, k, x], q[b, x]):
                y = x
                break
        out[b, t] = y if y >= 0 else _search(cum[b], u[b, t, n], last[b])


@njit(cache=True, parallel=True)
def _k_kseq(p, q, rho, cum, last, drafts, u, out):
    B, T, n = drafts.shape
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        y = -1
        for k in range(n):
            x = drafts[b, t, k]
            if u[b, t, k] < _accept(p[b, x], rho[b] * q[b, x]):
                y = x
                break
        out[b, t] = y if y >= 0 else _search(cum[b], u[b, t, n], last[b])


@njit(cache=True, parallel=True)
def _k_spechub(p, q, p1, q_ai, hub, scal, cum, last, drafts, u, out):
    B, T, _ = drafts.shape
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        a = hub[b]
        i = drafts[b, t, 1]
        p2a = scal[b, 0]
        s_ia = scal[b, 1]
        s_ai = scal[b, 2]
        y = -1
        if u[b, t, 0] < 1.0 - q[b, a]:  # pair (i, a)
            if u[b, t, 1] < _accept(p[b, i], q[b, i]):
                y = i
            elif u[b, t, 2] < _accept(p2a, s_ia):
                y = a
        else:  # pair (a, i)
            if u[b, t, 1] < _accept(p1[b, i], q_ai[b, i]):
                y = i
            elif u[b, t, 2] < _accept(p[b, a], s_ai):
                y = a
        out[b, t] = y if y >= 0 else _search(cum[b], u[b, t, 3], last[b])


@njit(cache=True, parallel=True)
def _k_typical(p, threshold, amax, drafts, out):
    B, T, n = drafts.shape
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        y = amax[b]
        for k in range(n):
            x = drafts[b, t, k]
            if p[b, x] > threshold[b]:
                y = x
                break
        out[b, t] = y


@njit(cache=True)
def _nss_exact(p, d, u):
    """Exact replica of ``verifiers.nss``: renormalise a copy after every rejection."""
    V = p.shape[0]
    r = p.copy()
    rest = np.empty(V)
    c = 0
    for k in range(d.shape[0]):
        x = d[k]
        dup = False
        for j in range(k):
            if d[j] == x:
                dup = True
        if dup:
            continue
        if u[c] < r[x]:
            return x
        c += 1
        for i in range(V):
            rest[i] = r[i]
        rest[x] = 0.0
        tot = _np_sum(rest)
        if tot > 0:
            for i in range(V):
                r[i] = rest[i] / tot
    return _inverse_cdf(u[c], r)


@njit(cache=True, parallel=True)
def _k_nss(p, cum, drafts, u, out):
    B, T, n = drafts.shape
    V = p.shape[1]
    for bt in prange(B * T):
        b = bt // T
        t = bt % T
        S = np.empty(n, dtype=np.int64)
        m = 0
        taken = 0.0
        y = -1
        exact = False
        for k in range(n):
            x = drafts[b, t, k]
            dup = False
            for j in range(m):
                if S[j] == x:
                    dup = True
            if dup:
                continue
            prob = p[b, x] if m == 0 else p[b, x] / (cum[b, V - 1] - taken)
            if u[b, t, m] < prob:
                y = x
                break
            S[m] = x
            m += 1
            taken += p[b, x]
            if cum[b, V - 1] - taken < EXACT_MASS:
                exact = True
                break
        if y < 0 and not exact:
            Z = cum[b, V - 1] - taken
            y = _masked_search(cum[b], p[b], S, m, u[b, t, m] * Z)
            exact = y < 0
        if exact:
            y = _nss_exact(p[b], drafts[b, t], u[b, t])
        out[b, t] = y


@njit(cache=True)
def _rrs_wor_step(R, QC, k, x, v):
    """State ``k`` from state ``k - 1`` after rejecting draft ``x`` (as ``verifiers.rrs_wor``).

    ``R[k]`` is ``norm((R[k-1] - QC[k-1])_+)`` (``R[k-1]`` when that is all
    zero) and ``QC[k]`` is ``QC[k-1]`` without ``x``, renormalised (unchanged
    when nothing is left); the sums are numpy's pairwise sums, so the states
    are bit-identical to the reference's.
    """
    V = R.shape[1]
    for i in range(V):
        v[i] = max(R[k - 1, i] - QC[k - 1, i], 0.0)
    tot = _np_sum(v)
    if tot > 0:
        for i in range(V):
            R[k, i] = v[i] / tot
    else:
        for i in range(V):
            R[k, i] = R[k - 1, i]
    for i in range(V):
        QC[k, i] = QC[k - 1, i]
    old = QC[k, x]
    QC[k, x] = 0.0
    tot = _np_sum(QC[k])
    if tot > 0:
        for i in range(V):
            QC[k, i] = QC[k, i] / tot
    else:
        QC[k, x] = old


@njit(cache=True)
def _rrs_wor_row(p, q, drafts, u, order, out, R, QC, v):
    """RRS without replacement on one row's trials, sharing the states of common draft prefixes.

    The state before draft ``k`` (residual target ``R[k]``, renormalised draft
    ``QC[k]``) depends only on the drafts ``0..k-1``.  Trials are visited in
    the lexicographic order of their drafts (``order``), so a trial recomputes
    only the states past its common prefix with the previous trial, and only
    as far as it is rejected: O(V) per distinct rejected prefix instead of
    O(nV) per trial.  The token of each trial is that of the per-trial replica.
    """
    T, n = drafts.shape
    V = p.shape[0]
    for i in range(V):
        R[0, i] = p[i]
        QC[0, i] = q[i]
    valid = 0  # states 0..valid hold the previous trial's prefix
    prev = -1
    for j in range(T):
        t = order[j]
        if prev >= 0:
            common = 0
            while common < n and drafts[t, common] == drafts[prev, common]:
                common += 1
            valid = min(valid, common)
        y = -1
        for k in range(n):
            if k > valid:
                _rrs_wor_step(R, QC, k, drafts[t, k - 1], v)
                valid = k
            x = drafts[t, k]
            if u[t, k] < _accept(R[k, x], QC[k, x]):
                y = x
                break
        if y < 0:
            if n > valid:
                _rrs_wor_step(R, QC, n, drafts[t, n - 1], v)
                valid = n
            y = _inverse_cdf(u[t, n], R[n])
        out[t] = y
        prev = t


@njit(cache=True)
def _rrs_wor_rows(p, q, drafts, u, order, out, lo, hi):
    """Rows ``lo..hi-1`` of :func:`_k_rrs_wor`, with one set of scratch states."""
    V = p.shape[1]
    n = drafts.shape[2]
    R = np.empty((n + 1, V))
    QC = np.empty((n + 1, V))
    v = np.empty(V)
    for b in range(lo, hi):
        _rrs_wor_row(p[b], q[b], drafts[b], u[b], order[b], out[b], R, QC, v)


@njit(cache=True, parallel=True)
def _k_rrs_wor_parallel(p, q, drafts, u, order, out):
    B = p.shape[0]
    for b in prange(B):
        _rrs_wor_rows(p, q, drafts, u, order, out, b, b + 1)


def _k_rrs_wor(p, q, drafts, u, out):
    """RRS without replacement on (B, T) trials; rows in parallel where ``run_parallel`` says so."""
    B, T, n = drafts.shape
    # Lexicographic order of each row's draft tuples (first draft most significant).
    keys = [drafts[:, :, k].ravel() for k in range(n - 1, -1, -1)]
    keys.append(np.repeat(np.arange(B), T))
    order = (np.lexsort(keys).reshape(B, T) % T).astype(np.int64)
    if run_parallel(B * (n + 1) * p.shape[1], B):
        _k_rrs_wor_parallel(p, q, drafts, u, order, out)
    else:
        _rrs_wor_rows(p, q, drafts, u, order, out, 0, B)


# --------------------------------------------------------------------------- front


def _kseq_residual(p, q, n, rho):
    """K-SEQ's residual law, with the reference's own operations (``verifiers.kseq``)."""
    first = np.minimum(q, p / rho)
    b = first.sum()
    p_acc = 1 - (1 - b) ** n
    scale = p_acc / b if b > 0 else 0 * b
    return normalise_or(positive_part(p - scale * first), p)


def _spechub_row(p, q):
    """SpecHub's draft-independent quantities (``verifiers.hub.spechub``)."""
    T, qt = greedy_split(q, 2)
    a = int(T[0])
    z = 0 * p[0]
    off = np.ones(p.shape[0], dtype=bool)
    off[a] = False
    p1 = np.where(off, positive_part(p - q), z)
    e_ia = np.where(off, positive_part(q - p), z)
    q_ai = q[a] * qt
    e_ai = np.where(off, positive_part(q_ai - p1), z)
    s_ia, s_ai = e_ia.sum(), e_ai.sum()
    p2a = max(p[a] - s_ai, z)
    rest = np.where(off, positive_part(p1 - q_ai), z)
    rest[a] = max(p2a - s_ia, z)
    total = rest.sum()
    final = rest / total if total > 0 else p
    return a, p1, q_ai, (p2a, s_ia, s_ai), final


def run_verifier(name, p, q, drafts, u, sampling="iid"):
    """Tokens (B, T) int64 of verifier ``name`` (in :data:`KERNEL_VERIFIERS`).

    Parameters
    ----------
    name : str
    p, q : ndarray of float64, shape (B, V)
        Checked target and draft rows (C-contiguous).
    drafts : ndarray of int64, shape (B, T, n)
        Drafts valid for the verifier's draft law.
    u : ndarray of float64, shape (B, T, K)
        Uniforms in [0, 1), ``K >= verifier_uniforms(name, n)``.
    sampling : str
        The drafts' law; only ``optimal`` reads it (it delegates greedy drafts
        to ``greedy``, one draft to ``sd``, two drafts without replacement
        to ``pair_scores`` and more to the priority-coin rule, as its reference
        does).
    """
    p = np.ascontiguousarray(p, dtype=np.float64)
    q = np.ascontiguousarray(q, dtype=np.float64)
    B, T, n = drafts.shape
    out = np.empty((B, T), dtype=np.int64)
    if name == "optimal":
        if sampling == "greedy" or n == 1:
            return run_verifier("greedy" if sampling == "greedy" else "sd", p, q, drafts, u)
        from ._optimal_kernel import run_optimal_checked

        if sampling != "without_replacement":
            return run_optimal_checked(p, q, drafts, u)
        if n > 2:  # more drafts without replacement: the reference's priority-coin rule
            from ._priority_coins_kernel import run_priority_coins

            return run_priority_coins(p, q, drafts, u)
        name = "pair_scores"  # two drafts without replacement: the reference's delegation
    if name == "pair_scores":
        from ._pair_scores_kernel import run_pair_scores

        return run_pair_scores(p, q, drafts, u)
    if name in ("sd", "naive"):
        cum, last = _cdf_rows([residual(p[b], q[b]) for b in range(B)])
        _k_single(p, q, cum, last, drafts, u, out)
    elif name == "greedy":
        qts = [greedy_split(q[b], n)[1] for b in range(B)]
        cum, last = _cdf_rows([residual(p[b], qts[b]) for b in range(B)])
        _k_greedy(p, np.array(qts), cum, last, drafts, u, out)
    elif name == "rrs":
        chain = np.empty((B, n, p.shape[1]))
        finals = []
        for b in range(B):
            r = p[b]
            for k in range(n):
                chain[b, k] = r
                r = residual(r, q[b])
            finals.append(r)
        cum, last = _cdf_rows(finals)
        _k_rrs(q, chain, cum, last, drafts, u, out)
    elif name == "kseq":
        rho = np.array([kseq_rho(p[b], q[b], n) for b in range(B)], dtype=np.float64)
        cum, last = _cdf_rows([_kseq_residual(p[b], q[b], n, rho[b]) for b in range(B)])
        _k_kseq(p, q, rho, cum, last, drafts, u, out)
    elif name == "spechub":
        rows = [_spechub_row(p[b], q[b]) for b in range(B)]
        hub = np.array([r[0] for r in rows], dtype=np.int64)
        p1 = np.array([r[1] for r in rows])
        q_ai = np.array([r[2] for r in rows])
        scal = np.array([r[3] for r in rows], dtype=np.float64)
        cum, last = _cdf_rows([r[4] for r in rows])
        _k_spechub(p, q, p1, q_ai, hub, scal, cum, last, drafts, u, out)
    elif name == "nss":
        _k_nss(p, np.cumsum(p, axis=1), drafts, u, out)
    elif name == "rrs_wor":
        _k_rrs_wor(p, q, drafts, u, out)
    elif name == "typical":
        threshold = np.empty(B)
        amax = np.empty(B, dtype=np.int64)
        for b in range(B):
            pf = p[b]
            entropy = -float(np.sum(pf * np.log(pf + 1e-5)))
            threshold[b] = min(POSTERIOR_THRESHOLD, POSTERIOR_ALPHA * math.exp(-entropy))
            amax[b] = int(np.argmax(pf))
        _k_typical(p, threshold, amax, drafts, out)
    else:
        raise KeyError(name)
    return out
