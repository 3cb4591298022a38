r"""The optimal multi-draft acceptance rate, through the dual of optimal transport.

For a draft law that draws ``n`` tokens from ``q`` and a target ``p``, the best
membership acceptance any lossless verifier can reach is the value of an
optimal-transport problem between the law of the draft tuple and ``p``
(SpecTr [1]_; Hu et al. [2]_).  Its dual is a selection of one token set
(docs/theory.md §2.3):

.. math::

    \alpha^* = \min_{H \subseteq \Sigma} \big[\, p(H) + P(\text{some draft} \notin H) \,\big]
             = 1 + \min_{H} \big[\, p(H) - Q(H) \,\big],

and an optimal ``H`` is a prefix of the tokens sorted by ``p/q`` ascending
(the prefix lemma, section 2.4: proved for i.i.d. drafts, where
:math:`Q(H) = q(H)^n` is a convex function of :math:`q(H)`, and without replacement by an
exchange inequality between two tokens proved with exponential clocks).

Methods of :func:`solve_bound`:

``"dual"`` (default)
    i.i.d.: one sort and a prefix scan, :math:`O(V \log V)`; tokens with
    ``p/q > n`` cannot belong to an optimal set and are left out of the sort.
    Without replacement: the same prefix minimum with :math:`Q(H_k)` from the
    exponential-clock integral (``G`` nodes, absolute error below 1e-12,
    ``tests/solvers/test_ot_dual.py``), without a sort: tokens are bucketed by ``p/q``,
    ``Q`` is integrated at bucket ends, and only buckets whose exact lower
    bound beats the best value are sorted and scanned token by token; tokens
    with ``p/q`` above a cut that no optimal prefix reaches are left out
    (:mod:`._wor_bucket`, proofs there).  :func:`_wor_reference` is the plain
    full-sort scan, kept as the slow oracle.
    Greedy: the closed form :math:`p(T) + \sum_{i \notin T} \min(p_i, \tilde q_i)`.
``"lp"``
    The primal transport LP over draft sets, solved by HiGHS (:mod:`.lp`).
``"maxflow"``
    The max-flow form in exact integer capacities, networkx (:mod:`.maxflow`).
``"enumerate"``
    Every token set in exact rational arithmetic (:mod:`.enumeration`).

References
----------
.. [1] Sun, Suresh, Ro, Beirami, Jain, Yu. "SpecTr: Fast Speculative
   Decoding via Optimal Transport". arXiv:2310.15141.
.. [2] Hu, Zheng, Viswanathan, Chen, Rossi, Wu, Manocha, Huang.
   "Towards Optimal Multi-draft Speculative Decoding". ICLR 2025, arXiv:2502.18779.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._errors import InstanceTooLargeError
from .._validate import as_distribution_pair, check_choice, check_positive_int
from ..drafting import SAMPLINGS, check_draft_support
from . import _bound_kernels as _k
from . import _wor_bucket as _wb
from ._result import SolverResult

__all__ = ["MAX_DRAFTS", "METHODS", "BoundResult", "bound", "ratio_order", "solve_bound"]

#: Methods accepted by :func:`solve_bound`.
METHODS = ("dual", "lp", "maxflow", "enumerate")


@dataclass(frozen=True)
class BoundResult(SolverResult):
    """Result of :func:`solve_bound` (the shared fields: :class:`.SolverResult`).

    Attributes
    ----------
    value : float or ndarray (B,)
        Optimal membership acceptance :math:`\\alpha^*`.
    certificate : ndarray of bool, shape (V,) or (B, V)
        An optimal token set ``H`` of the dual; the value equals
        ``target(H) + P(some draft falls outside H)``.
    sampling : str
    n : int
    exact_value : Fraction or list of Fraction or None
        The value in rational arithmetic, for the exact methods.
    method, status, message, inputs
        ``method`` is the ``method=`` argument; ``status`` is ``"optimal"``
        (every method returns the optimum or raises); ``message`` says what the
        method guarantees (accuracy, solver statistics); ``inputs`` holds
        ``n``, ``sampling`` and ``atol``.
    """

    value: float | np.ndarray
    certificate: np.ndarray
    sampling: str
    n: int
    exact_value: object = field(default=None, repr=False)


def ratio_order(p, q):
    """Tokens of each row sorted by ``p/q`` ascending (``q = 0`` last, ``p = q = 0`` first).

    Parameters
    ----------
    p, q : float64 (B, V)

    Returns
    -------
    int64 (B, V)
    """
    key = np.full(p.shape, np.inf)
    with np.errstate(over="ignore"):
        np.divide(p, q, out=key, where=q > 0)
    key[(p == 0) & (q == 0)] = 0.0
    # p / subnormal q overflows to inf, which ties ratios as far apart as 1e308 and
    # 1e323; the order among them matters without replacement.  They go after every
    # finite ratio (as inf does), ordered by (p 2^-200) / q (finite: p >= 2^-50 there),
    # and the tokens with q = 0 < p last.
    over = np.isinf(key) & (q > 0)
    cls = np.where((q == 0) & (p > 0), np.int8(2), over.astype(np.int8))
    if over.any():
        key = key.copy()
        key[over] = (p[over] * 2.0**-200) / q[over]
    return np.lexsort((key, cls), axis=1)


#: Largest number of drafts :func:`solve_bound` accepts (``n`` travels as a
#: float64 through the i.i.d. kernel, where ``q(H)^n = exp(n log1p(-lam))``).
MAX_DRAFTS = 10**300
#: Largest ``n`` the oracle methods (LP, max-flow, enumeration) accept.
MAX_ORACLE_DRAFTS = 64


def _iid(p, q, n):
    # A token of an optimal H has p/q <= n q(H)^(n-1) <= n (docs/theory.md §2.4).
    best, cert = _k.iid_bucket_min(p, q, float(n), float(n))
    return 1.0 + best, cert, "prefix scan over p/q (bucketed, exact), O(V) + small sorts"


def iid_reference(p, q, n):
    """The plain i.i.d. prefix scan: full sort, cumulative sums (slow oracle of ``_iid``).

    Parameters
    ----------
    p, q : float64 (B, V)

    Returns
    -------
    value : (B,), certificate : bool (B, V)
    """
    order = ratio_order(p, q)
    P = np.cumsum(np.take_along_axis(p, order, axis=1), axis=1)
    S = np.cumsum(np.take_along_axis(q, order, axis=1), axis=1)
    f = np.concatenate([np.zeros((p.shape[0], 1)), P - S**n], axis=1)
    k = np.argmin(f, axis=1)
    cert = np.zeros(p.shape, dtype=bool)
    for b in range(p.shape[0]):
        cert[b, order[b, : k[b]]] = True
    return 1.0 + f[np.arange(p.shape[0]), k], cert


def _wor_grid(lam_suffix, n):
    """Per-row log-time nodes from ``wor_t0(n)`` to 50 / (smallest positive outside mass).

    The integrand depends on time only through ``x t`` (``x`` a draft mass), so
    a row may be rescaled: masses times ``2^s`` (exact) and nodes times
    ``2^-s`` leave the trapezoidal sum unchanged up to rounding.  A row
    whose smallest outside mass is below :data:`_SCALE_BELOW` (where
    ``50 / mass`` would overflow) gets ``s`` = :data:`_SCALE_EXP`; every
    positive float64 mass, subnormals included, is then covered without a
    floor (the masses are at most ``2^s < 1e300``).

    Returns
    -------
    t : float64 (B, G), padded with inf; h : float; scale : float64 (B,)
    """
    h = _k.wor_step(n)
    u0 = math.log(_k.wor_t0(n))
    pos = np.where(lam_suffix > 0, lam_suffix, np.inf).min(axis=1)
    pos = np.where(np.isfinite(pos), pos, 1.0)
    scale = np.where(pos < _SCALE_BELOW, 2.0**_SCALE_EXP, 1.0)
    # log(50 / pos) in two terms: 50 / pos itself overflows for subnormal pos.
    G = np.ceil((math.log(50.0) - np.log(pos) - u0) / h).astype(np.int64) + 1
    t = np.full((lam_suffix.shape[0], int(G.max())), np.inf)
    for b, g in enumerate(G):
        t[b, :g] = np.exp(u0 + h * np.arange(g) - math.log(scale[b]))
    return t, h, scale


#: Rows whose smallest outside draft mass is below this are rescaled (50 / mass
#: must stay finite on the grid).
_SCALE_BELOW = 1e-290
#: The rescaling exponent: masses are multiplied by 2**_SCALE_EXP (exact).
_SCALE_EXP = 200


def _wor(p, q, n):
    if n == 1:  # one draw: the law is q itself
        return _iid(p, q, 1)
    best, cert, _ = _wb.wor_bucket_min(p, q, n, _k.wor_t0(n))
    return (
        1.0 + best,
        cert,
        "bucketed prefix scan with exponential-clock Q(H) (sort-free), absolute error < 1e-12",
    )


def _wor_reference(p, q, n):
    """The plain without-replacement scan: full sort, one integral per prefix.

    Slow oracle of :func:`_wor` (the fast path skips prefixes by exact
    inequalities, see :mod:`._wor_bucket`; both use the same quadrature).

    Parameters
    ----------
    p, q : float64 (B, V)
    n : int >= 1

    Returns
    -------
    value (B,), certificate bool (B, V), message
    """
    B, V = p.shape
    if n == 1:
        return _iid(p, q, 1)
    order = ratio_order(p, q)
    lam, iid_suffix_min = _k.wor_prepare(p, q, order, n)
    t, h, scale = _wor_grid(lam[:, 1:V], n)
    best, kbest, _ = _k.wor_prefix_min(p, q, order, n, lam, iid_suffix_min, t, h, scale)
    cert = np.zeros((B, V), dtype=bool)
    for b in range(B):
        cert[b, order[b, : kbest[b]]] = True
    return 1.0 + best, cert, "prefix scan with exponential-clock Q(H), absolute error < 1e-12"


def greedy_value(p, q, n, fixed=None):
    """Closed form for the greedy law, batched: value (B,) and certificate (B, V).

    :math:`\\alpha^* = p(T) + \\sum_{i \\notin T} \\min(p_i, \\tilde q_i)`
    (docs/theory.md §2.6), with ``T`` the top ``n - 1`` draft tokens (ties to the
    lowest id), or ``fixed`` (bool (B, V)) where a caller knows which tied tokens
    an engine fixed (the audit of :mod:`spectheory.sim.audit`).  The certificate
    is ``T`` plus the tokens with :math:`p_i < \\tilde q_i`.
    """
    B, V = p.shape
    if fixed is not None:
        inT = np.asarray(fixed, dtype=bool)
    else:
        inT = np.zeros((B, V), dtype=bool)
        work = q.copy()
        rows = np.arange(B)
        for _ in range(n - 1):
            top = np.argmax(work, axis=1)  # first maximum: lowest id on ties
            inT[rows, top] = True
            work[rows, top] = -1.0
    # Normalise the rest by its own sum, not 1 - q(T): at low temperature 1 - q(T)
    # rounds to 0 while the rest still has (tiny) positive mass.
    rest = np.where(inT, 0.0, q)
    qt = rest / rest.sum(axis=1)[:, None]
    pT = np.where(inT, p, 0.0).sum(axis=1)
    value = pT + np.where(inT, 0.0, np.minimum(p, qt)).sum(axis=1)
    cert = inT | (~inT & (p < qt))
    return value, cert


def _greedy(p, q, n):
    value, cert = greedy_value(p, q, n)
    return value, cert, "closed form p(T) + sum min(p, q_tilde)"


_DUAL = {"iid": _iid, "without_replacement": _wor, "greedy": _greedy}


def solve_bound(target, draft, n=1, sampling="iid", method="dual", *, atol=None):
    r"""Optimal membership acceptance of ``n`` drafts, with a certificate.

    Parameters
    ----------
    target : array_like, shape (V,) or (B, V)
        Target distribution ``p`` (processed: temperature, top-k, top-p).
    draft : array_like, same shape
        Draft distribution ``q`` that the drafts are sampled from.
    n : int >= 1
        Number of drafts, at most :data:`MAX_DRAFTS` (1e300).  i.i.d. values
        are exact to float64 rounding for every such ``n``: ``q(H)^n`` is
        computed as ``exp(n log1p(-lam))`` from the outside mass ``lam``
        summed from the tail (absolute error a few ulp, not growing with ``n``).
    sampling : {"iid", "without_replacement", "greedy"}
        Draft law (:mod:`spectheory.drafting`).
    method : {"dual", "lp", "maxflow", "enumerate"}
        ``"dual"`` is the fast solver; the others are independent oracles for
        small instances and refuse large ones with
        :class:`~spectheory.InstanceTooLargeError`.  ``"maxflow"`` and
        ``"enumerate"`` accept exact Fraction inputs.
    atol : float, optional
        Accepted ``|sum - 1|`` of each row (default by dtype).

    Returns
    -------
    BoundResult

    Examples
    --------
    docs/theory.md §8.1, instance A (two i.i.d. drafts: 89/100, H = {a, b}):

    >>> r = solve_bound([0.3, 0.4, 0.3], [0.6, 0.3, 0.1], n=2)
    >>> round(r.value, 12), r.certificate.tolist()
    (0.89, [True, True, False])
    """
    n = check_positive_int(n, "n")
    if n > MAX_DRAFTS:
        raise InstanceTooLargeError(f"n must be at most 1e300 (MAX_DRAFTS); got n={n:.3e}")
    check_choice(sampling, "sampling", SAMPLINGS)
    check_choice(method, "method", METHODS)
    # The dual paths only read the rows: no defensive copy of the caller's batch.
    p, q, batched = as_distribution_pair(
        target, draft, atol=atol, allow_exact=method in ("maxflow", "enumerate"),
        copy=method != "dual",
    )
    check_draft_support(q, n, sampling, batched)
    exact = None
    if method == "dual":
        value, cert, message = _DUAL[sampling](p, q, n)
    else:
        from . import enumeration, lp, maxflow

        if n > MAX_ORACLE_DRAFTS:  # exact powers q^n and n-tuples grow with n
            raise InstanceTooLargeError(
                f"method={method!r} refuses n={n} (limit {MAX_ORACLE_DRAFTS}); "
                "use method='dual'"
            )

        solver = {
            "lp": lp.solve_row,
            "maxflow": maxflow.solve_row,
            "enumerate": enumeration.solve_row,
        }[method]
        rows = [solver(p[b], q[b], n, sampling) for b in range(p.shape[0])]
        value = np.array([float(r[0]) for r in rows])
        cert = np.array([r[1] for r in rows])
        message = rows[0][2]
        if method != "lp":
            exact = [r[0] for r in rows]
    if not batched:
        value = float(value[0])
        cert = cert[0]
        exact = exact[0] if exact is not None else None
    return BoundResult(
        value, cert, sampling, n, exact, method=method, status="optimal", message=message,
        inputs={"n": n, "sampling": sampling, "atol": atol},
    )


def bound(target, draft, n=1, sampling="iid", *, atol=None):
    r"""Optimal acceptance rate of multi-draft speculative decoding.

    .. math::

        \alpha^* = 1 + \min_{H \subseteq \Sigma}\,[\,p(H) - Q(H)\,]

    the largest probability that a lossless verifier outputs one of the
    ``n`` drafts (docs/theory.md §2.3).  See :func:`solve_bound` for the
    parameters and the certificate.

    Returns
    -------
    float for 1-D input, ndarray of shape (B,) for (B, V) input.

    Examples
    --------
    >>> round(bound([0.3, 0.4, 0.3], [0.6, 0.3, 0.1], n=1), 12)  # sum min(p, q)
    0.7
    >>> round(bound([0.3, 0.4, 0.3], [0.6, 0.3, 0.1], n=2, sampling="greedy"), 12)
    0.95
    """
    return solve_bound(target, draft, n, sampling, "dual", atol=atol).value
