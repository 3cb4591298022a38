r"""The optimal multi-draft acceptance :math:`\alpha^*` on torch tensors, with gradients.

:func:`bound` is the torch counterpart of :func:`spectheory.bound`: the same value
on (B, V) rows of a target ``p`` and a draft ``q`` (tested to 1e-9 in float64),
differentiable with respect to both, for draft training (:mod:`.losses`).

The value is a minimum over token sets (docs/theory.md §2.3):

.. math::

    \alpha^*(p, q) = \min_{H} \big[ 1 + p(H) - Q(H) \big],

with :math:`Q(H)` the probability that all ``n`` drafts fall in ``H`` (i.i.d.:
:math:`q(H)^n`; without replacement: the exponential-clock integral below).
Each term is smooth in ``(p, q)``, so at a point with a unique minimiser
:math:`H^*` the gradient of :math:`\alpha^*` is the gradient of that term at
fixed :math:`H^*` (envelope theorem).  Where several sets tie, the gradient
returned is that of the set the solver reports: the shortest optimal prefix of
the ``p/q`` order (ties of ``p/q`` broken by token id), a valid one-sided
derivative but not, in general, a two-sided one.

The function differentiated is :math:`\alpha^*(p / \sum p,\ q / \sum q)`: it
is homogeneous of degree 0, so its gradient is orthogonal to the row
(:math:`\sum_i q_i \partial_{q_i} = 0`; its entries need not sum to 0) and,
through a softmax, the Jacobian's centring term vanishes: the gradient with
respect to the logits is :math:`q_i \partial_{q_i}`.

Draft laws:

``"iid"``
    One sort and a prefix scan in torch (no host round trip); gradient through
    the gathered prefix sums.
``"greedy"``
    The closed form :math:`p(T) + \sum_{i \notin T} \min(p_i, \tilde q_i)`,
    ``T`` the top ``n - 1`` draft tokens (ties to the lowest id).  At
    :math:`p_i = \tilde q_i` the gradient of the minimum is split equally.
``"without_replacement"``
    The optimal set from :func:`spectheory.solve_bound` (float64 on the host:
    one device-to-host copy per call), then :math:`1 - Q(H^*)` by the
    exponential-clock integral (docs/theory.md §2.5(c)): with independent
    clocks :math:`E_i \sim \mathrm{Exp}(q_i)` the drafts are the ``n`` first
    clocks to ring, so with :math:`\lambda = q(\Sigma \setminus H)`

    .. math::

        1 - Q(H) = \int_0^\infty \lambda e^{-\lambda t}\,
                   P\big(N_H(t) \le n - 1\big)\, dt,

    :math:`N_H(t)` the number of tokens of ``H`` whose clock has rung by
    ``t`` (Poisson-binomial).  The integral is a trapezoidal sum in
    :math:`\log t` at ``wor_per_octave(n)`` nodes per octave (3 up to n = 8, more
    beyond, as in the numpy solver) after rescaling the rates (the value
    is invariant under a common scale), all rows at once.  Nodes where
    :math:`P(N_H(t) \ge n) < 10^{-17}` cost nothing; at the others the law
    of :math:`N_H(t)` truncated at ``n - 1`` is the product of an explicit
    polynomial for the few clocks likely to have rung, Newton's identities on
    power sums for the rest, and, for the long tail of tiny rates, series in
    ``t`` of their moments :math:`\sum_i r_i^m` (every term positive), so
    autograd differentiates it at O(V) per row plus O(head) per node.
    Accuracy: below 1e-12 against the numpy solver and the per-row product
    tree (:func:`_wor_outside_tree`) on the test instances
    (``tests/torch/test_bound.py``); 32 rows at V = 49,152 and n = 4 take
    about 1 s forward and backward on one core (110 s with the tree).

References
----------
.. [1] Sun, Suresh, Ro, Beirami, Jain, Yu. "SpecTr: Fast Speculative Decoding
   via Optimal Transport". arXiv:2310.15141.
.. [2] Hu, Zheng, Viswanathan, Chen, Rossi, Wu, Manocha, Huang.
   "Towards Optimal Multi-draft Speculative Decoding". ICLR 2025, arXiv:2502.18779.
"""

from __future__ import annotations

import math

import torch

from .._errors import InstanceTooLargeError, InvalidParameterError, ShapeMismatchError
from .._validate import check_choice, check_positive_int
from ..drafting import SAMPLINGS
from ..solvers._bound_kernels import wor_per_octave
from ..solvers.ot_dual import MAX_DRAFTS
from ._checks import check_device, check_probabilities

__all__ = ["bound", "wor_outside_probability"]

#: Grid ends after rescaling the rates so that the larger of the outside mass
#: and the n-th largest rate in H is 1: below _T_LOW the integrand is taken as
#: lam e^{-lam t} (neglected mass <= lam * _T_LOW <= 1e-16); above _T_HIGH it is
#: below n e^{-_T_HIGH}.
_T_LOW = 1e-16
_T_HIGH = 64.0
#: Grid nodes per chunk of the Poisson-binomial tree (bounds the memory).
_NODE_CHUNK = 16
#: Tokens with x = e^{r t} - 1 at most this enter P(N_H(t) <= n - 1) through power sums.
_SERIES_X = 0.25
#: Tail tokens: ``k r t <= _TAIL_U`` for every ``k < n`` at every node; their power sums
#: are series in ``t`` with ``_TAIL_TERMS`` terms past the leading one, whose remainder is
#: below ``(k u)^13 / 13! e^{k u} < 4e-18`` relative (``k u <= 1/4``); used for ``n <= 9``.
_TAIL_U = 0.25
_TAIL_TERMS = 12
_TAIL_MAX_N = 9
#: Elements of one (rows x nodes x tokens) chunk of :func:`wor_outside_probability`.
_CHUNK_ELEMENTS = 2**21


def _rows(x, name, V=None):
    """Validate (as the torch backend does) and return float64 rows keeping the graph."""
    one_row = isinstance(x, torch.Tensor) and x.ndim == 1
    x2 = x[None, :] if one_row else x
    check_probabilities(x2, name, 2)  # raises naming the argument, row and value
    if V is not None and x2.shape[-1] != V:
        raise ShapeMismatchError(f"{name} has {x2.shape[-1]} tokens; target has {V}")
    rows = x2.to(torch.float64)
    return rows / rows.sum(dim=-1, keepdim=True), one_row


def _ratio_key(p, q):
    """p/q with q = 0 last and p = q = 0 first (the numpy solver's order)."""
    key = torch.where(q > 0, p / torch.where(q > 0, q, 1.0), torch.inf)
    return torch.where((p == 0) & (q == 0), 0.0, key)


def _iid(p, q, n):
    order = torch.sort(_ratio_key(p.detach(), q.detach()), dim=1, stable=True).indices
    P = torch.cumsum(torch.gather(p, 1, order), dim=1)
    # q(H)^n as (1 - q(outside H))^n from the tail sums, as the numpy solver: a
    # prefix sum rounded to 1 + 2^-52 made q(H)^n explode for large n (-2.7e96
    # at n = 1e18), and the tail keeps its relative accuracy near q(H) = 1.
    qs = torch.gather(q, 1, order)
    tail = torch.flip(torch.cumsum(torch.flip(qs, [1]), dim=1), [1])
    outside = torch.cat([tail[:, 1:], torch.zeros_like(tail[:, :1])], dim=1)
    # outside == 1 (a prefix of p = q = 0 tokens): covered is 0, and log1p(-1) = -inf must not
    # reach autograd, where 0 * inf made every entry of the gradient NaN
    inside = outside < 1.0
    covered = torch.where(
        inside, torch.exp(float(n) * torch.log1p(-torch.where(inside, outside, 0.0))), 0.0
    )
    obj = torch.cat([torch.zeros_like(P[:, :1]), P - covered], dim=1)
    k = torch.argmin(obj.detach(), dim=1)  # first minimum: the shortest optimal prefix
    return 1.0 + obj.gather(1, k[:, None])[:, 0]


def _greedy(p, q, n):
    V = p.shape[1]
    if n > V:
        raise InvalidParameterError(f"n = {n} exceeds the vocabulary size {V} (greedy drafts)")
    order = torch.sort(q.detach(), dim=1, descending=True, stable=True).indices
    in_T = torch.zeros_like(p, dtype=torch.bool).scatter_(1, order[:, : n - 1], True)
    rest = torch.where(in_T, 0.0, q)
    total = rest.sum(dim=1, keepdim=True)
    if bool((total.detach() <= 0).any()):
        row = int(torch.nonzero(total.detach()[:, 0] <= 0)[0, 0])
        raise InvalidParameterError(
            f"draft row {row} has no mass outside its top n - 1 = {n - 1} tokens (greedy drafts)"
        )
    q_tilde = rest / total
    mins = torch.where(in_T, 0.0, torch.minimum(p, q_tilde))
    return torch.where(in_T, p, 0.0).sum(dim=1) + mins.sum(dim=1)


def _poisson_binomial_low(a, n):
    """P(N = 0..n-1) for independent Bernoulli(a) along the last axis, by a product tree.

    a : (..., m); returns (..., n).  Each factor is the polynomial
    ``(1 - a) + a z`` truncated at degree n - 1; pairs are multiplied level by
    level, every term non-negative.
    """
    poly = torch.zeros(*a.shape, n, dtype=a.dtype, device=a.device)
    poly[..., 0] = 1.0 - a
    if n > 1:
        poly[..., 1] = a
    while poly.shape[-2] > 1:
        m = poly.shape[-2]
        if m % 2:  # pad with the constant polynomial 1
            one = torch.zeros_like(poly[..., :1, :])
            one[..., 0] = 1.0
            poly = torch.cat([poly, one], dim=-2)
        left, right = poly[..., 0::2, :], poly[..., 1::2, :]
        prod = [sum(left[..., i] * right[..., d - i] for i in range(d + 1)) for d in range(n)]
        poly = torch.stack(prod, dim=-1)
    return poly[..., 0, :]


def _newton_low(c0, s, n):
    r"""P(N = 0..n-1) of Bernoulli(a_i) with :math:`x_i = a_i / (1 - a_i)`, from power sums.

    :math:`\prod_i (1 - a_i + a_i z) = e^{c_0} \prod_i (1 + x_i z)` with
    :math:`c_0 = \sum_i \log(1 - a_i)`, and the elementary symmetric
    polynomials of the :math:`x_i` follow from the power sums
    :math:`s_k = \sum_i x_i^k` by Newton's identities
    :math:`j e_j = \sum_{k=1}^{j} (-1)^{k-1} s_k e_{j-k}`.  With every
    :math:`x_i \le` ``_SERIES_X`` the alternating terms are dominated by the
    first, so the absolute error stays at a few ulp (the terms are at most a
    bounded multiple of :math:`e^{-c_0}`-scaled Poisson weights).

    c0 : (...); s : (..., n - 1); returns (..., n).
    """
    e = [torch.ones_like(c0)]
    for j in range(1, n):
        acc = s[..., 0] * e[j - 1]
        for k in range(2, j + 1):
            term = s[..., k - 1] * e[j - k]
            acc = acc - term if k % 2 == 0 else acc + term
        e.append(acc / j)
    return torch.exp(c0)[..., None] * torch.stack(e, dim=-1)


def _mul_low(a, b, n):
    """Product of two polynomials (..., n) truncated at degree n - 1."""
    return torch.stack(
        [sum(a[..., i] * b[..., d - i] for i in range(d + 1)) for d in range(n)], dim=-1
    )


class _PowerSums(torch.autograd.Function):
    r"""``P[:, m-1] = sum_i r_i^m`` for ``m = 1..K`` along the last axis, without (B, V, K) tensors.

    The backward is the derivative polynomial :math:`\sum_m g_m m r^{m-1}`
    by Horner's rule, so neither pass keeps more than one (B, V) tensor.
    """

    @staticmethod
    def forward(ctx, r, K):
        ctx.save_for_backward(r)
        out = torch.empty(*r.shape[:-1], K, dtype=r.dtype, device=r.device)
        x = r
        for m in range(K):
            out[..., m] = x.sum(dim=-1)
            if m < K - 1:
                x = x * r
        return out

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        K = grad.shape[-1]
        acc = (K * grad[..., K - 1]).unsqueeze(-1).expand_as(r).clone()
        for m in range(K - 1, 0, -1):  # Horner: sum_m m g_m r^(m-1)
            acc = acc * r + m * grad[..., m - 1].unsqueeze(-1)
        return acc, None


def _tail_coefficients(n, dtype, device):
    r"""``c[k-1, m-1] = k! S(m, k) / m!`` for ``k < n``, ``m <= n - 1 + _TAIL_TERMS``.

    :math:`(e^u - 1)^k = \sum_{m \ge k} k!\, S(m, k)\, u^m / m!` (``S`` the
    Stirling numbers of the second kind), so the power sums of the tail are
    :math:`s_k(t) = \sum_m c_{k,m} t^m \sum_i r_i^m`: positive terms only.
    """
    K = n - 1 + _TAIL_TERMS
    S = [[0] * (K + 1) for _ in range(K + 1)]  # S[m][k], exact integers
    S[0][0] = 1
    for m in range(1, K + 1):
        for k in range(1, m + 1):
            S[m][k] = k * S[m - 1][k] + S[m - 1][k - 1]
    c = torch.zeros(max(n - 1, 0), K, dtype=dtype, device=device)
    for k in range(1, n):
        for m in range(k, K + 1):
            c[k - 1, m - 1] = math.factorial(k) * S[m][k] / math.factorial(m)
    return c


def _low_at_nodes(rs, tc, n, tail=None):
    r"""P(N_H(t) <= n - 1) at the nodes ``tc`` (B, g) for rates ``rs`` (B, m), sorted descending.

    Tokens with :math:`x = e^{r t} - 1 \le` ``_SERIES_X`` at a node enter
    through their power sums (:func:`_newton_low`); the few others (a prefix
    of the sorted rates) through the explicit product tree
    (:func:`_poisson_binomial_low`).  Both are exact forms of the same
    polynomial; only the rounding differs.  ``tail``: ``(moments, coefficients)``
    of tokens left out of ``rs`` (:func:`_tail_coefficients`), whose power sums
    are then series in ``t`` (truncation below 1e-17 relative, see
    ``_TAIL_U``).
    """
    thr = math.log1p(_SERIES_X)
    # the prefix that can exceed the threshold at some node of this chunk, in some row
    M = int((rs.detach() * tc.detach().amax(dim=1, keepdim=True) > thr).sum(dim=1).max())
    big, small = rs[:, :M], rs[:, M:]
    t3 = tc[:, :, None]
    c0 = -tc * small.sum(dim=1)[:, None]
    s = []
    if n > 1:
        x = torch.expm1(small[:, None, :] * t3)  # (B, g, V - M)
        xk = x
        for k in range(1, n):
            s.append(xk.sum(dim=-1))
            if k < n - 1:
                xk = xk * x
    if tail is not None:
        moments, coef = tail  # (B, K), (n - 1, K)
        tpow = tc[..., None] ** torch.arange(1, coef.shape[1] + 1, dtype=tc.dtype, device=tc.device)
        c0 = c0 - tc * moments[:, None, 0]
        tm = tpow * moments[:, None, :]  # (B, g, K): t^m sum_i r_i^m
        for k in range(1, n):
            s[k - 1] = s[k - 1] + (tm * coef[k - 1]).sum(dim=-1)
    low = None
    if M:
        rt = big[:, None, :] * t3  # (B, g, M)
        large = rt.detach() > thr
        xb = torch.expm1(torch.where(large, 0.0, rt))
        c0 = c0 - torch.where(large, 0.0, rt).sum(dim=-1)
        xbk = xb
        for k in range(1, n):
            s[k - 1] = s[k - 1] + xbk.sum(dim=-1)
            if k < n - 1:
                xbk = xbk * xb
        a = torch.where(large, -torch.expm1(-rt), 0.0)  # factor 1 for the others
        low = _poisson_binomial_low(a, n)
    ser = _newton_low(c0, torch.stack(s, dim=-1) if s else c0[..., None][..., :0], n)
    poly = ser if low is None else _mul_low(ser, low, n)
    return poly.sum(dim=-1)


def wor_outside_probability(q, in_H, n):
    r"""``1 - Q(H)``: the probability that some of ``n`` drafts without replacement leaves ``H``.

    Differentiable with respect to ``q`` (autograd through the quadrature).
    All rows at once: the rates are rescaled per row, the log-time grid is the
    same as the reference's (:func:`_wor_outside_tree`), the nodes where
    :math:`P(N_H(t) \ge n) \le (t \sum_H r)^n / n!` is below 1e-17 take
    :math:`P(N_H(t) \le n - 1) = 1` without touching the vocabulary, and at
    the others the small rates enter through power sums (:func:`_low_at_nodes`).

    Parameters
    ----------
    q : torch.Tensor, float64 (B, V)
        Draft rows (rates of the clocks; a common positive scale is irrelevant).
    in_H : torch.Tensor, bool (B, V)
        The set ``H`` of each row.
    n : int >= 1

    Returns
    -------
    torch.Tensor, float64 (B,)

    Examples
    --------
    Two drafts from ``q = (0.6, 0.3, 0.1)``; ``H = {a, b}``: ``Q(H) = 0.6 * 0.3/0.4
    + 0.3 * 0.6/0.7``, so ``1 - Q(H) = 1 - 0.45 - 0.2571428... = 0.2928571...``

    >>> q = torch.tensor([[0.6, 0.3, 0.1]], dtype=torch.float64)
    >>> H = torch.tensor([[True, True, False]])
    >>> round(float(wor_outside_probability(q, H, 2)[0]), 12)
    0.292857142857
    """
    B, V = q.shape
    qH = torch.where(in_H, q, 0.0)
    lam = torch.where(in_H, 0.0, q).sum(dim=1)
    # fewer than n drawable tokens in H: some draft leaves H (value 1, gradient 0)
    few = (qH.detach() > 0).sum(dim=1) < n
    nth = torch.topk(qH.detach(), min(n, V), dim=1).values[:, -1]
    scale = torch.maximum(lam.detach(), nth)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    rs = torch.gather(qH / scale[:, None], 1, torch.argsort(qH.detach(), dim=1, descending=True))
    lb = lam / scale
    octaves = math.log2(_T_HIGH / _T_LOW)
    # nodes per octave as in the numpy solver: more for large n, whose integrand is steeper
    G = math.ceil(octaves * wor_per_octave(n)) + 1
    h = math.log(2.0) / wor_per_octave(n)
    t = _T_LOW * torch.exp(h * torch.arange(G, dtype=q.dtype, device=q.device))
    # below t0, P(N_H(t) >= n) <= (t R)^n / n! < 1e-17 (R the row's total rate)
    R = rs.detach().sum(dim=1)
    # in logarithms: n! overflows a float from n = 171
    t0 = math.exp((math.log(1e-17) + math.lgamma(n + 1)) / n) / torch.clamp(R, min=1e-300)
    first = int(torch.searchsorted(t, t0.amin()).clamp(max=G))
    # the tail: rates with k r t <= _TAIL_U (k < n) at every node enter through moments
    tail = None
    if 1 < n <= _TAIL_MAX_N:
        head = int((rs.detach() * (n - 1) * t[-1] > _TAIL_U).sum(dim=1).max())
        if head < V:
            coef = _tail_coefficients(n, q.dtype, q.device)
            moments = _PowerSums.apply(rs[:, head:], coef.shape[1])  # (B, K)
            tail, rs = (moments, coef), rs[:, :head]
    weight = lb[:, None] * torch.exp(-lb[:, None] * t) * t  # dt = t du, (B, G)
    total = (1.0 - torch.exp(-lb * _T_LOW)) + h * weight[:, :first].sum(dim=1)
    # nodes per chunk: (B x nodes x columns) float64 elements kept near _CHUNK_ELEMENTS, where
    # the columns are the rates left after the tail (usually a few hundred of the V): often
    # every node in one chunk, so a GPU runs a few dozen kernels instead of a few per node
    step = max(1, _CHUNK_ELEMENTS // max(1, B * rs.shape[1]))
    for g0 in range(first, G, step):
        tc = t[g0 : g0 + step].expand(B, -1)
        low = _low_at_nodes(rs, tc, n, tail)
        total = total + h * (weight[:, g0 : g0 + step] * low).sum(dim=1)
    return torch.where(few, torch.ones_like(total) + 0.0 * lam, total)


def _wor_outside_tree(q, in_H, n):
    """Reference form of :func:`wor_outside_probability`: all of ``H`` in the product tree.

    One row at a time, every grid node, O(n^2 V) per node: slow, kept as the
    tests' independent oracle for values and gradients.
    """
    qH = torch.where(in_H, q, 0.0)
    lam = torch.where(in_H, 0.0, q).sum(dim=1)
    out = []
    for b in range(q.shape[0]):
        rates = qH[b][in_H[b]]  # zero rates stay: their clocks never ring, but carry gradient
        if int((rates.detach() > 0).sum()) < n:  # fewer than n drawable tokens: a draft leaves H
            out.append(torch.ones((), dtype=q.dtype, device=q.device) + 0.0 * lam[b])
            continue
        nth = torch.topk(rates.detach(), n).values[-1]
        scale = torch.maximum(lam[b].detach(), nth)
        r, lb = rates / scale, lam[b] / scale
        octaves = math.log2(_T_HIGH / _T_LOW)
        G = math.ceil(octaves * wor_per_octave(n)) + 1
        h = math.log(2.0) / wor_per_octave(n)
        t = _T_LOW * torch.exp(h * torch.arange(G, dtype=q.dtype, device=q.device))
        total = 1.0 - torch.exp(-lb * _T_LOW)  # [0, T_LOW]: P(N <= n-1) taken as 1
        acc = []
        for start in range(0, G, _NODE_CHUNK):
            tc = t[start : start + _NODE_CHUNK]
            a = -torch.expm1(-r[None, :] * tc[:, None])  # P(clock rang by t), (g, m)
            low = _poisson_binomial_low(a, n).sum(dim=-1)  # P(N_H(t) <= n - 1)
            weight = lb * torch.exp(-lb * tc) * tc  # dt = t du
            acc.append((weight * low).sum())
        # Trapezoid in u = log t: the end nodes carry half weight; both ends are negligible
        # (the lower is ~lam * T_LOW, the upper ~n e^{-T_HIGH}) so the full sum is used.
        total = total + h * torch.stack(acc).sum()
        out.append(total)
    return torch.stack(out)


def _wor(p, q, n):
    from ..solvers.ot_dual import solve_bound

    res = solve_bound(p.detach().cpu().numpy(), q.detach().cpu().numpy(), n, "without_replacement")
    in_H = torch.as_tensor(res.certificate, device=p.device)
    return torch.where(in_H, p, 0.0).sum(dim=1) + wor_outside_probability(q, in_H, n)


_SOLVERS = {"iid": _iid, "without_replacement": _wor, "greedy": _greedy}


def bound(target, draft, n=1, sampling="iid"):
    r"""Optimal membership acceptance :math:`\alpha^*` of ``n`` drafts, differentiable.

    Parameters
    ----------
    target, draft : torch.Tensor, shape (V,) or (B, V)
        Target ``p`` and draft ``q`` rows (any floating dtype; computed in
        float64), on one device.  Rows must be distributions (the torch
        backend's checks: finite, non-negative, summing to 1 within the
        dtype's tolerance).
    n : int >= 1
        Number of drafts.
    sampling : {"iid", "without_replacement", "greedy"}
        Draft law.

    Returns
    -------
    torch.Tensor, float64, shape () or (B,)
        :math:`\alpha^*`, with gradients with respect to ``target`` and
        ``draft`` (see the module docstring for the subgradient at ties).

    Examples
    --------
    docs/theory.md §8.1, instance A (two i.i.d. drafts: 89/100):

    >>> p = torch.tensor([0.3, 0.4, 0.3], dtype=torch.float64)
    >>> q = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64, requires_grad=True)
    >>> a = bound(p, q, n=2)
    >>> round(a.item(), 12)
    0.89
    >>> a.backward()
    >>> [round(float(g), 12) for g in q.grad]  # d/dq of 1 + p(H) - (q(H)/q(V))^2, H = {a, b}
    [-0.18, -0.18, 1.62]
    """
    n = check_positive_int(n, "n")
    if n > MAX_DRAFTS:  # as spectheory.bound
        raise InstanceTooLargeError(f"n must be at most 1e300 (MAX_DRAFTS); got n={n:.3e}")
    check_choice(sampling, "sampling", SAMPLINGS)
    if not isinstance(target, torch.Tensor):
        raise InvalidParameterError(
            f"target must be a torch.Tensor; got an object of type {type(target).__name__}"
        )
    p, one_row = _rows(target, "target")
    q, q_one_row = _rows(draft, "draft", V=p.shape[1])
    if q.shape != p.shape or q_one_row != one_row:  # (V,) against (1, V): as numpy, refused
        raise ShapeMismatchError(
            f"draft has shape {tuple(draft.shape)}; target has shape {tuple(target.shape)}"
        )
    check_device(p.device, draft=q)
    if sampling == "without_replacement":
        support = (q.detach() > 0).sum(dim=1)
        if bool((support < n).any()):
            row = int(torch.nonzero(support < n)[0, 0])
            raise InvalidParameterError(
                f"draft row {row} has {int(support[row])} tokens of positive probability; "
                f"n = {n} drafts without replacement need at least n"
            )
    value = _SOLVERS[sampling](p, q, n)
    return value[0] if one_row else value
