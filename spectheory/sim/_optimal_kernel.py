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

from .._errors import InvalidParameterError, ShapeMismatchError
from .._validate import as_distribution_pair, check_uniforms
from ..solvers._polymatroid_kernels import _chord, row_tables
from ..solvers.polymatroid import plan_row
from ._coin_kernels import _search as _coin_search

__all__ = ["OPTIMAL_UNIFORMS", "optimal_token", "plan_row", "plan_tables", "run_optimal"]

#: Uniforms per trial: component, accept coin, residual draw.
OPTIMAL_UNIFORMS = 3
#: Largest rank stored in the int32 range-maximum tables.
_RANK_CAP = np.iinfo(np.int32).max


@njit(cache=True)
def _sparse_table(rank):
    m = rank.shape[0]
    levels = 1
    while (1 << levels) <= m:
        levels += 1
    st = np.empty((levels, m), dtype=np.int32)
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
    """Smallest ``i < count`` with ``u < cum[i]`` (the coins' binary search, over the
    padded prefix); for ``u`` beyond the total, the last entry of positive mass
    (``coins._inverse_cdf``)."""
    lo = _coin_search(cum[:count], u, count)
    if lo < count:
        return lo
    k = count - 1
    while k > 0 and cum[k] == cum[k - 1]:
        k -= 1
    return k


@njit(cache=True)
def _trial(p, pos, n_top, st, cw_top, kt, cw_h, kh, y, cres, V, drafts, u):
    n = drafts.shape[0]
    top = False
    for j in range(n):
        if 0 <= pos[drafts[j]] < n_top:
            top = True
    if top:
        k = _search(cw_top, u[0], kt)
    else:
        k = _search(cw_h, u[0], kh)
    a = -1
    for j in range(n):
        t = pos[drafts[j]]
        if t >= 0 and (t < n_top) == top and (a < 0 or t < a):
            a = t
    x = -1
    for j in range(n):
        t = pos[drafts[j]]
        if t >= 0 and (t < n_top) == top and (t == a or _range_max(st, a + 1, t) <= k):
            x = drafts[j]
            break
    if x < 0:  # no draft of positive probability (unvalidated input): reject
        return _search(cres, u[2], V)
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
    # int32 ranks halve the tables: ranks are merge counts (< V) or PERMANENT, and
    # PERMANENT clipped to the int32 maximum still exceeds every component index.
    sts = [_sparse_table(np.minimum(pl.rank, _RANK_CAP).astype(np.int32)) for pl in plans]
    L = max(s.shape[0] for s in sts)
    st = np.zeros((B, L, V + 1), dtype=np.int32)
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


# --------------------------------------------------------------------------- input checks


def _checked(p, q, drafts, u, batched):
    """The public entry points' input checks (numba indexes without bounds checks, so a draft
    id outside ``[0, V)``, a short ``u`` or an unnormalised row would give a token silently).

    Rows as everywhere (:func:`spectheory._validate.as_distribution_pair`); ``drafts`` of
    integers in ``[0, V)``, at least two per trial (one draft is speculative sampling, on two
    uniforms: ``optimal`` delegates it to ``sd``), each of positive draft probability;
    ``u`` of ``OPTIMAL_UNIFORMS`` (or more) uniforms in ``[0, 1)`` per trial.
    """
    p, q, was_batched = as_distribution_pair(p, q, copy=False)
    if was_batched != batched:
        want = "(B, V)" if batched else "(V,)"
        raise ShapeMismatchError(f"target and draft must have shape {want}; got {p.shape}")
    drafts = np.asarray(drafts)
    want = 3 if batched else 1
    if drafts.ndim != want or drafts.dtype.kind not in "iu":
        shape = "(B, T, n)" if batched else "(n,)"
        raise InvalidParameterError(
            f"drafts must be an integer array of shape {shape}; got dtype {drafts.dtype} and "
            f"shape {drafts.shape}"
        )
    drafts = drafts.astype(np.int64).reshape((1, 1, -1) if not batched else drafts.shape)
    B, T, n = drafts.shape
    if B != p.shape[0]:
        raise ShapeMismatchError(f"drafts has {B} rows and target has {p.shape[0]}")
    if n < 2:
        raise InvalidParameterError(
            f"drafts must hold n >= 2 i.i.d. drafts per trial; got n={n} (one draft is "
            "speculative sampling on two uniforms: spectheory.verify('optimal', ...) and the "
            "simulator delegate it to 'sd')"
        )
    V = p.shape[1]
    outside = (drafts < 0) | (drafts >= V)
    if outside.any():
        at = tuple(int(i) for i in np.argwhere(outside)[0])
        raise InvalidParameterError(f"drafts{list(at[-1:] if not batched else at)} = "
                                    f"{int(drafts[at])} is outside [0, {V})")
    zero = np.take_along_axis(q, drafts.reshape(B, -1), axis=1) <= 0
    if zero.any():
        b, k = (int(i) for i in np.argwhere(zero)[0])
        raise InvalidParameterError(
            f"drafts holds token {int(drafts.reshape(B, -1)[b, k])}, which the draft gives "
            f"probability 0{f' (row {b})' if batched else ''}: i.i.d. drafts are drawn from it"
        )
    u = np.asarray(u, dtype=np.float64)
    shape = (B, T) if batched else ()
    if u.shape[:-1] != shape or u.ndim != len(shape) + 1 or u.shape[-1] < OPTIMAL_UNIFORMS:
        want = "(B, T, 3)" if batched else "(3,)"
        raise ShapeMismatchError(f"u must have shape {want} for drafts of shape "
                                 f"{(B, T, n) if batched else (n,)}; got {u.shape}")
    return p, q, drafts, check_uniforms(u, u.shape, "u")


def run_optimal(p, q, drafts, u):
    """Tokens (B, T) of ``optimal`` for i.i.d. drafts (B, T, n), ``n >= 2``, uniforms (B, T, 3).

    Inputs are checked (:func:`_checked`): a bad one raises, naming the argument and value.
    """
    p, q, drafts, u = _checked(p, q, drafts, u, batched=True)
    return run_optimal_checked(p, q, drafts, u)


def run_optimal_checked(p, q, drafts, u):
    """:func:`run_optimal` on inputs the caller has checked (the simulator's path)."""
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
def _hull_end(g, R, lo, hi, a, n, W):
    r"""Right end of the tier holding position ``a`` in the component at weight ``W``.

    The tiers of the mixture at weight ``W`` are the linear pieces of the least
    concave majorant of :math:`F_W = Y - W\,\Phi` over the segment's nodes
    (cumulative ``y`` minus ``W`` times the cumulative coverage): the merge sweep
    is sticky-particle dynamics, whose clusters are given by this hull.  One
    monotone-chain pass over the sweep's initial tiers (runs of equal density
    ``g``; the sweep never splits one, ``rank`` 0), :math:`O(n \cdot (hi - lo))`.

    Each tier on the stack keeps, as the sweep does, its draft mass
    ``R[s] - R[e]`` and its ``y`` as density times mass, so an edge's slope is
    ``Y / M - W * chord(R[s], R[e])`` with ``Y`` and ``M`` sums of the merged
    tiers' own terms, not differences of prefix sums (which lose a tier of mass
    below the rounding of the prefix, ~1e-16 beside 1).  A tier whose tail
    masses tie, ``R[s] == R[e]`` (its draft mass is below the rounding of
    ``R``: in float rows, tokens of ``q`` ~ 1e-30 beside a tail mass near 1),
    has mass 0: as in the sweep, its line is ``g[s] - W * chord(R[s], R[s])``
    and it adds nothing to a tier it joins; adjacent tiers of mass 0 have equal
    chords and merge at ``W = 0`` in the sweep, keeping the first one's
    density, so they enter the chain as one.
    """
    k = hi - lo
    st = np.empty(k, dtype=np.int64)  # start of each merged tier on the stack
    ys = np.empty(k)  # its y: sum of density * draft mass over its initial tiers
    ms = np.empty(k)  # its draft mass
    gs = np.empty(k)  # density of its first initial tier (the line of a mass-0 tier)
    sl = np.empty(k)  # its slope at W
    top = -1
    s = lo
    zero = False  # the last initial tier has mass 0
    for e in range(lo + 1, hi + 1):
        if e < hi and g[e] == g[e - 1]:
            continue
        m = R[s] - R[e]
        if m == 0.0 and zero:  # merged with the mass-0 tier before it at W = 0
            s = e
            continue
        zero = m == 0.0
        b = s
        y = g[s] * m
        g0 = g[s]
        while True:
            sb = (y / m if m > 0.0 else g0) - W * _chord(R[b], R[e], n)
            if top >= 0 and sl[top] <= sb:  # the lines have met: one tier
                b = st[top]
                y += ys[top]
                m += ms[top]
                g0 = gs[top]
                top -= 1
            else:
                break
        top += 1
        st[top] = b
        ys[top] = y
        ms[top] = m
        gs[top] = g0
        sl[top] = sb
        s = e
    for t in range(1, top + 1):
        if st[t] > a:
            return st[t]
    return hi


@njit(cache=True)
def _select_fast(order, nT, pos, g, R, n, drafts, W):
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
    end = _hull_end(g, R, lo, hi, a, n, W)
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

    Raises
    ------
    InvalidParameterError, ShapeMismatchError
        Rows that are not distributions, drafts outside ``[0, V)`` or of draft
        probability 0, fewer than two drafts, or uniforms of another shape or outside
        ``[0, 1)`` (:func:`_checked`).
    """
    p, q, drafts, u = _checked(p, q, drafts, u, batched=False)
    p, q, drafts, u = p[0], q[0], drafts[0, 0], u
    n = drafts.shape[0]
    order, nT, R, g, y, pos = row_tables(p, q, n)
    x = int(_select_fast(order, nT, pos, g, R, n, drafts, float(u[0])))
    with np.errstate(over="ignore"):  # p / subnormal y is inf: accept, as the reference
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
