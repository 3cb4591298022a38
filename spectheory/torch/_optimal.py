r"""Batched torch form of the ``optimal`` verifier (i.i.d. drafts): pure torch ops, CPU and CUDA.

The coins reference (:func:`spectheory.verifiers.optimal.optimal`) draws a
component ``k`` of a tier mixture from the merge sweep of
:mod:`spectheory.solvers.polymatroid` (``u[:, 0]``), selects a draft by the
tiers of component ``k``, accepts it with probability :math:`\min(1, p_x/y_x)`
(``u[:, 1]``) and otherwise draws from :math:`\mathrm{norm}((p - y)_+)`
(``u[:, 2]``).  The merge sweep is a heap of events, sequential by nature; this
form needs no sweep (docs/theory.md §3.12; derivation in
``notebooks/05_optimal_verifier.py``):

* **Tables** (as :func:`spectheory.solvers._polymatroid_kernels.row_tables`):
  one stable :func:`torch.sort` of the support by ``p/q`` (ties by id), the
  prefix minimiser of :math:`p(H_k) - q(H_k)^n` (:func:`torch.cumsum`,
  :func:`torch.argmin`), the flat densities ``c`` on ``T`` and ``c'`` on
  :math:`H^*` (first index where a vectorised condition holds), the
  selection marginal ``y``.  On the CPU every table is bit-identical to the
  numba kernel's: the cumulative sums add left to right, and integer powers
  are taken by squaring, as numba does (:func:`_ipow`).
* **Tiers at weight** :math:`W = u_0`: the component that the reference's
  inverse CDF picks at :math:`u_0` has the tiers of the least concave majorant
  of :math:`F_W = Y - W\Phi` over the segment's nodes (cumulative ``y``
  minus ``W`` times the cumulative coverage :math:`\Phi_j = R_{lo}^n - R_j^n`,
  against the cumulative draft mass; the sweep is sticky-particle dynamics
  and its clusters are that majorant's pieces).  Only the tier holding the
  lowest draft position ``a`` is needed: its right end is the right end of the
  majorant's edge above the gap just after ``a``, the *bridge*.  With
  :math:`x_j = R_{lo} - R_j` the bridge's slope :math:`s^*` minimises
  :math:`\max_j (F_j - s x_j) + s x_a`, a convex piecewise-linear function of
  one variable, so Newton's method (secant steps between the highest lines
  on either side, :func:`_bridge_end`) reaches it exactly in a few steps,
  each one :math:`O(V)` pass: a fused multiply-add and a max over the nodes.
  Nodes are the starts of runs of equal density (a run is one tier
  in every component, as in the sweep) and the segment's two ends.

The tiers therefore agree with the reference's component except when
:math:`u_0 > 0` lies within rounding of a merge time (at :math:`u_0 = 0` the
tiers are the runs, exactly as in the reference), or when a comparison in the
secant search is within rounding (contacts whose values differ by less than about
:math:`10^{-16}`): events of probability of the order of the float64 epsilon
per draw, the same caveat as every torch form
(:mod:`spectheory.torch.verifiers`).  A draft of tiny mass moves the contacts by
about :math:`q_x u_0`: rows with a draft of :math:`q_x u_0 <` :data:`TINY_CONTACT`
are decided by the reference on the host (a draft of mass :math:`10^{-15}` was
placed in the wrong tier for most :math:`u_0`).  Cost per row: two sorts, :math:`O(V)`
scans, and one :math:`O(V)` pass per secant step (at most 4 on the rows of
the tests at V = 49,152).

Greedy drafts delegate to Hu et al.'s verifier and one draft to standard
speculative sampling, as the reference does.  A drafted token with ``q = 0``
(possible only without validation) is never selected; with no other draft
the row rejects, as in the reference.

References
----------
.. [1] Thomas, Pal. "Global Resolution: Optimal Multi-Draft Speculative
   Sampling via Convex Minimization". arXiv:2511.15898.
.. [2] Khisti et al. "Multi-Draft Speculative Sampling: Canonical
   Architectures and Theoretical Limits". arXiv:2410.18234.
"""

from __future__ import annotations

import torch

from . import _ops

__all__ = ["optimal_iid", "optimal_tables"]

#: Drafts whose mass times ``u[:, 0]`` lies below this are selected by the reference (on
#: the host): the contact comparisons resolve about 1e-16 of heights of order 1, and a
#: draft of mass 1e-15 was misplaced for most ``u[:, 0]`` (2^-40 leaves three decades).
TINY_CONTACT = 2.0**-40

#: Cap on the secant steps of the bridge search (each adds a hull vertex; a few suffice).
_MAX_STEPS = 200


def _ipow(x, n):
    """``x**n`` by squaring, numba's order of multiplications (bit-identical on the CPU)."""
    out = None
    while n:
        if n & 1:
            out = x if out is None else out * x
        x = x * x
        n >>= 1
    return out


def _first(mask):
    """Index of the first True of each row (0 where none); ``mask`` bool (B, L)."""
    return torch.argmax(mask.to(torch.int8), dim=-1)


def optimal_tables(p, q, n):
    """Per-row tables of the plan, padded to ``V``: the batched ``row_tables``.

    Parameters
    ----------
    p, q : torch.Tensor, float64, shape (B, V)
    n : int >= 2

    Returns
    -------
    dict of torch.Tensor
        ``order`` (B, V): tokens by position (the ``m`` tokens with ``q > 0``
        first, ``T`` then :math:`H^*`, each by ``p/q`` descending); ``m``,
        ``n_top`` (B,); ``R`` (B, V + 1): draft mass at or after each
        position; ``g``, ``ys`` (B, V): density ``y/q`` and ``y`` by position; ``y`` (B, V):
        selection marginal by token; ``pos`` (B, V): position of each token
        (-1 where ``q = 0``).
    """
    B, V = p.shape
    dev = p.device
    j = torch.arange(V, device=dev).expand(B, V)
    sup = q > 0
    m = sup.sum(dim=-1)
    r = torch.where(sup, p / torch.where(sup, q, torch.ones_like(q)), torch.zeros_like(p))
    # Ascending (p/q, id) over the support, then the tokens with q = 0 (two stable sorts).
    by_ratio = torch.sort(r, dim=-1, stable=True).indices
    off = (~sup).gather(-1, by_ratio).to(torch.int8)
    asc = by_ratio.gather(-1, torch.sort(off, dim=-1, stable=True).indices)
    valid = j < m[:, None]
    pa = torch.where(valid, p.gather(-1, asc), torch.zeros_like(p))
    S = torch.cumsum(q.gather(-1, asc), dim=-1)  # q(H_k), k = 1..V
    f = torch.where(valid, torch.cumsum(pa, dim=-1) - _ipow(S, n), torch.inf)
    f = torch.cat([torch.zeros((B, 1), dtype=p.dtype, device=dev), f], dim=-1)
    kbest = torch.argmin(f, dim=-1)  # the first minimiser, k = 0 included
    n_top = m - kbest
    # Position t holds asc[m - 1 - t]: T then H*, each by p/q descending.
    back = torch.where(valid, m[:, None] - 1 - j, j)
    order = asc.gather(-1, back)
    ps = torch.where(valid, p.gather(-1, order), torch.zeros_like(p))
    qs = torch.where(valid, q.gather(-1, order), torch.zeros_like(q))
    R = torch.zeros((B, V + 1), dtype=p.dtype, device=dev)
    R[:, :V] = torch.where(valid, S.gather(-1, back), torch.zeros_like(S))
    g = torch.where(valid, ps / torch.where(valid, qs, torch.ones_like(qs)), torch.zeros_like(p))
    ys = ps.clone()
    nT = n_top[:, None]
    RnT = R.gather(-1, nT)
    # T: U = the first jj tokens at the flat density c = (f(T) - p(T after U)) / q(U).
    after = torch.cumsum(torch.where(j >= kbest[:, None], pa, torch.zeros_like(pa)), dim=-1)
    suffix = torch.where(j < nT, after.gather(-1, back), torch.zeros_like(p))  # p(T from t on)
    suffix = torch.cat([suffix, torch.zeros((B, 1), dtype=p.dtype, device=dev)], dim=-1)
    Cq = torch.cumsum(qs, dim=-1)
    jj = j + 1  # jj = 1..V: c with the first jj tokens flat
    # f(T) = q(T) * sum_k q(H*)^k (Horner, the kernel's order): 1 - q(H*)^n cancels.
    QT = Cq.gather(-1, (nT - 1).clamp_min(0))
    chord = torch.ones_like(RnT)
    rk = torch.ones_like(RnT)
    for _ in range(n - 1):
        rk = rk * RnT
        chord = chord * 1.0 + rk
    fT = QT * chord
    c_all = (fT - suffix[:, 1:]) / torch.where(Cq > 0, Cq, torch.ones_like(Cq))
    g_next = torch.cat([g[:, 1:], torch.zeros((B, 1), dtype=p.dtype, device=dev)], dim=-1)
    stop = (jj == nT) | ((jj < nT) & (c_all >= g_next))
    kT = _first(stop)  # jj - 1 of the first stop (rows with n_top = 0: unused)
    c = c_all.gather(-1, kT[:, None])
    flatT = (j <= kT[:, None]) & (j < nT)
    # H*: tokens from jj on get c' = (q(H*)^n - p(H* before jj)) / R[jj].
    inH = (j >= nT) & valid
    before = torch.cumsum(torch.where(inH, ps, torch.zeros_like(ps)), dim=-1)
    Pex = torch.cat([torch.zeros((B, 1), dtype=p.dtype, device=dev), before[:, :-1]], dim=-1)
    Rj = R[:, :V]
    cp_all = (_ipow(RnT, n) - Pex) / torch.where(Rj > 0, Rj, torch.ones_like(Rj))
    hit = inH & (cp_all >= g)
    jH = torch.where(hit.any(dim=-1), _first(hit), m - 1)
    cp = cp_all.gather(-1, jH.clamp_min(0)[:, None])
    flatH = inH & (j >= jH[:, None])
    g = torch.where(flatT, c, torch.where(flatH, cp, g))
    ys = torch.where(flatT, c * qs, torch.where(flatH, cp * qs, ys))
    y = torch.zeros_like(p).scatter(-1, order, torch.where(valid, ys, torch.zeros_like(ys)))
    pos = torch.full_like(order, -1).scatter(-1, order, torch.where(valid, j, -1))
    ys = torch.where(valid, ys, torch.zeros_like(ys))
    return {"order": order, "m": m, "n_top": n_top, "R": R, "g": g, "ys": ys, "y": y, "pos": pos}


def _bridge_end(tb, lo, hi, a, n, W):
    r"""Right end of the tier holding position ``a`` at weight ``W``, per row.

    Nodes: the segment's ends ``lo``, ``hi`` and the run starts between them;
    node ``j`` has the line :math:`G_j(s) = Y_j + W R_j^n + s R_j`.  The
    bridge over the gap after the run start ``a'`` of ``a`` joins a node
    :math:`\le a'` and a node :math:`> a'` whose lines meet at the bridge
    slope :math:`s^*` and are highest there.  Secant iteration (Newton's
    method on the convex piecewise-linear :math:`\max_j G_j(s) - s R_{a'}`):
    from the brackets ``lo`` (the contact for large ``s``) and ``hi`` (small
    ``s``), take the slope where their lines meet, find the highest line there
    (the contact, first maximiser); if it is higher than both, it replaces
    the one on its side of ``a'``, else the two are the bridge.  Every step
    adds a new hull vertex, so it ends; a few steps in practice
    (:data:`_MAX_STEPS` caps it).
    """
    g, R = tb["g"], tb["R"]
    B, V = g.shape
    dev = g.device
    k = torch.arange(V + 1, device=dev).expand(B, V + 1)
    kv = k[:, :V]
    prev = torch.cat([g[:, :1], g[:, :-1]], dim=-1)
    start = (g != prev) | (kv == 0) | (kv == tb["n_top"][:, None])
    last_start = torch.cummax(torch.where(start, kv, torch.zeros_like(kv)), -1).values
    a0 = last_start.gather(-1, a[:, None])[:, 0]  # a': the start of a's run
    lo_, hi_ = lo[:, None], hi[:, None]
    start_full = torch.cat([start, torch.zeros((B, 1), dtype=torch.bool, device=dev)], dim=-1)
    node = (k == lo_) | (k == hi_) | (start_full & (k > lo_) & (k < hi_))
    seg = (kv >= lo_) & (kv < hi_)
    yseg = torch.where(seg, tb["ys"], torch.zeros_like(g))
    Y = torch.cat([torch.zeros((B, 1), dtype=g.dtype, device=dev), torch.cumsum(yseg, -1)], -1)
    base = torch.where(node, Y + W[:, None] * _ipow(R, n), -torch.inf)
    left, right = lo.clone(), hi.clone()  # contacts for large and for small slopes
    active = torch.ones(B, dtype=torch.bool, device=dev)
    for _ in range(_MAX_STEPS):
        bl, br = base.gather(-1, left[:, None])[:, 0], base.gather(-1, right[:, None])[:, 0]
        Rl, Rr = R.gather(-1, left[:, None])[:, 0], R.gather(-1, right[:, None])[:, 0]
        s = (br - bl) / torch.where(Rl > Rr, Rl - Rr, torch.ones_like(Rl))
        G = base + s[:, None] * R
        best, c = G.max(dim=-1)
        top = torch.maximum(G.gather(-1, left[:, None])[:, 0], G.gather(-1, right[:, None])[:, 0])
        active = active & (best > top) & (c != left) & (c != right)
        if not bool(active.any()):
            break
        go_right = active & (c > a0)
        right = torch.where(go_right, c, right)
        left = torch.where(active & ~go_right, c, left)
    # At W = 0 (the reference's first component) every run start is a tier boundary:
    # exact there, where near-equal densities (a merge time of order 1e-16) are beyond
    # what the contact comparisons resolve.
    after = _first(node & (k > a0[:, None]))
    return torch.where(W == 0, after, right)


def optimal_iid(p, q, d, u):
    """Tokens (B,) of ``optimal`` for ``n >= 2`` i.i.d. drafts: float64 rows (B, V), drafts
    (B, n), uniforms (B, 3).  Greedy drafts and ``n = 1`` are delegated by
    :func:`spectheory.torch.verifiers.optimal_torch`.
    """
    n = d.shape[1]
    tb = optimal_tables(p, q, n)
    V = p.shape[1]
    nT, m = tb["n_top"], tb["m"]
    t = tb["pos"].gather(-1, d)  # draft positions, -1 for q = 0
    ok = t >= 0
    top = (ok & (t < nT[:, None])).any(dim=-1)
    inseg = ok & ((t < nT[:, None]) == top[:, None])
    lo = torch.where(top, torch.zeros_like(nT), nT)
    hi = torch.where(top, nT, m)
    a = torch.where(inseg, t, V).amin(dim=-1)
    chosen = inseg.any(dim=-1)
    a = torch.where(chosen, a, lo.clamp_max(V - 1))
    end = _bridge_end(tb, lo, hi, a, n, u[:, 0])
    pick = inseg & (t < end[:, None])
    x = d.gather(-1, _first(pick)[:, None])[:, 0]
    y = tb["y"]
    prob = torch.where(chosen, _ops.accept_prob(_ops.gather(p, x), _ops.gather(y, x)), 0.0)
    accept = _ops.bernoulli(u[:, 1], prob)
    excess = torch.where(p > y, p - y, torch.zeros_like(p))
    rest = _ops.inverse_cdf(_ops.normalise_or(excess, p), u[:, 2])
    tokens = torch.where(accept, x, rest)
    # A draft of tiny mass moves the contact heights (of order 1) by about q u0: below
    # rounding the secant search cannot see its tier's end (q = 1e-15 chose wrongly for
    # most u0).  Such rows, drafted with probability of order their tiny mass, are
    # decided by the reference on the host.
    tiny = inseg & (q.gather(-1, d) * u[:, :1] < TINY_CONTACT) & (u[:, :1] > 0)
    rows = torch.nonzero(tiny.any(dim=-1)).flatten().tolist()
    if rows:
        tokens = tokens.clone()
        for b in rows:
            tokens[b] = _reference_token(p[b], q[b], d[b], u[b])
    return tokens


def _reference_token(p, q, d, u):
    """The coins reference's token for one row (float64 tensors on any device)."""
    from ..coins import ReplayCoins
    from ..verifiers.optimal import optimal

    def host(x):
        return x.detach().to("cpu", torch.float64).numpy()

    drafts = tuple(int(x) for x in d.tolist())
    return optimal(host(p), host(q), drafts, ReplayCoins(host(u)), sampling="iid")
