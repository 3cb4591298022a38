r"""Batched verifiers on torch tensors (CPU and CUDA), under the registry's names and semantics.

:func:`verify` runs one registered verifier on a batch of ``B`` positions at
once: target and draft rows of shape (B, V), drafts of shape (B, n).  Each
verifier is the reference of :mod:`spectheory.verifiers`, vectorised over rows
(no Python loop over rows; the loops that remain run over the ``n`` drafts).

Randomness follows the coins protocol (:mod:`spectheory.coins`): row ``b``
reads the uniforms ``u[b, 0], u[b, 1], ...`` in the order in which the
reference verifier run with ``ReplayCoins(u[b])`` calls its coins, a Bernoulli
is :math:`u < \text{prob}` and a categorical draw the inverse CDF (the smallest
token whose partial sum exceeds ``u``; the last token of positive mass if
rounding leaves ``u`` beyond the total).  The number of uniforms per row,
:func:`verifier_uniforms`, is the most the reference can consume; rows that
stop early leave the rest unread.  So, given the same uniforms, :func:`verify`,
the numba kernels of :mod:`spectheory.sim` and the reference return the same
tokens.

Numerics
--------
Inputs of any floating dtype (float16, bfloat16, float32, float64) are
checked and converted to float64, and every computation is in float64, on the
input's device; the tokens are int64 on that device.  Elementwise operations
are the reference's; only the order of summation in normalisers
(:func:`torch.sum`, a parallel scan on CUDA for the partial sums) differs from
numpy's, by a few ulps.  A token can therefore differ from the reference only
when a uniform lies within about :math:`V \cdot 2^{-52}` of a decision
boundary: probability below :math:`10^{-10}` per draw even at
:math:`V = 151{,}936`.  Computing the partial sums in float32 instead would
widen that window to about :math:`V \cdot 2^{-24}` (about :math:`3 \times
10^{-3}` at :math:`V = 49{,}152`), which is why the CDF is never computed in
float32 here.

``khisti`` and ``optimal_lp`` (a transport LP per instance) have no batched
form, as in :mod:`spectheory.sim`; ``optimal`` reaches the same acceptance
with the batched form of :mod:`spectheory.torch._optimal`.

References
----------
.. [1] Leviathan, Kalman, Matias. arXiv:2211.17192 (``sd``).
.. [2] Miao et al., SpecInfer. arXiv:2305.09781 (``rrs``, ``nss``).
.. [3] Jeon et al., RSD. arXiv:2402.14160; Chen et al., Sequoia. arXiv:2402.12374 (``rrs_wor``).
.. [4] Sun et al., SpecTr. arXiv:2310.15141 (``kseq``).
.. [5] R. Sun et al., SpecHub. arXiv:2411.05289 (``spechub``).
.. [6] Hu, Zheng, Viswanathan, Chen, Rossi, Wu, Manocha, Huang. arXiv:2502.18779 (``greedy``).
.. [7] Cai et al., Medusa. arXiv:2401.10774 (``typical``, lossy).
.. [8] Thomas, Pal. arXiv:2511.15898 (``optimal``; :mod:`spectheory.torch._optimal`).
.. [9] Khisti et al. arXiv:2410.18234 (``pair_scores``, and ``optimal`` with two drafts
   without replacement; :mod:`spectheory.torch._pair_scores`; with more drafts,
   :mod:`spectheory.torch._priority_coins`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .._errors import InvalidParameterError, ShapeMismatchError
from .._validate import check_positive_int
from ..verifiers._api import check_verifier_law
from ..verifiers._registry import Verifier, as_verifier, builtin_names
from ..verifiers.typical import POSTERIOR_ALPHA, POSTERIOR_THRESHOLD
from . import _ops
from ._checks import (
    check_device,
    check_probabilities,
    check_token_ids,
    check_uniforms,
    draw_uniforms,
)
from ._optimal import optimal_iid
from ._pair_scores import pair_scores_torch
from ._priority_coins import priority_coins_torch

__all__ = ["TORCH_VERIFIERS", "TorchVerification", "verifier_uniforms", "verify"]

#: Registered verifiers with a batched torch form: read from the registry (``torch_form``).
TORCH_VERIFIERS = builtin_names("torch_form")

#: Bisection steps for K-SEQ's rho* (the reference's cap; float64 converges in ~55).
_KSEQ_STEPS = 200


class TorchVerification(NamedTuple):
    """Result of :func:`verify`.

    Attributes
    ----------
    tokens : torch.Tensor, int64, shape (B,)
        Output token of each row.
    accepted : torch.Tensor, bool, shape (B,)
        Membership acceptance: whether the output is one of the row's drafts.
    """

    tokens: torch.Tensor
    accepted: torch.Tensor


def verifier_uniforms(name, n):
    """Uniforms per row that verifier ``name`` can consume with ``n`` drafts.

    Examples
    --------
    >>> verifier_uniforms("sd", 1), verifier_uniforms("rrs", 3), verifier_uniforms("spechub", 2)
    (2, 4, 4)
    """
    return _torch_record(name).uniforms(n)  # the registry's coin budget


# --------------------------------------------------------------------------- verifiers


def _single(p, q, d, u):
    """``sd`` / ``naive``: SD on the first draft; coins u[:, 0] (accept), u[:, 1] (residual)."""
    x = d[:, 0]
    acc = _ops.bernoulli(u[:, 0], _ops.accept_prob(_ops.gather(p, x), _ops.gather(q, x)))
    return torch.where(acc, x, _ops.inverse_cdf(_ops.residual(p, q), u[:, 1]))


def _greedy(p, q, d, u):
    """Hu et al.: SD of ``p`` against ``q_tilde`` on the last draft."""
    _, qt = _ops.greedy_split(q, d.shape[1])
    x = d[:, -1]
    acc = _ops.bernoulli(u[:, 0], _ops.accept_prob(_ops.gather(p, x), _ops.gather(qt, x)))
    return torch.where(acc, x, _ops.inverse_cdf(_ops.residual(p, qt), u[:, 1]))


def _recursive(p, q, d, u, without_replacement):
    """RRS on every row; only the rows that have rejected every draft so far are carried on.

    Rows are compacted after each draft, so a batch that mostly accepts early
    does little work; a row's arithmetic does not depend on the others.  ``p``
    and ``q`` may be of any floating dtype: the gathered values and the rows
    that go on are converted to float64, nothing else.
    """
    B, n = d.shape
    out = torch.full((B,), -1, dtype=torch.int64, device=p.device)
    rows = torch.arange(B, device=p.device)  # the rows still rejecting
    r, qc = p, q  # their current residual and draft law
    for k in range(n):
        x = d[rows, k]
        rx, qx = _ops.gather(r, x).to(torch.float64), _ops.gather(qc, x).to(torch.float64)
        acc = _ops.bernoulli(u[rows, k], _ops.accept_prob(rx, qx))
        out[rows[acc]] = x[acc]
        keep = ~acc
        rows, x = rows[keep], x[keep]
        if rows.numel() == 0:
            return out
        r, qc = r[keep].to(torch.float64), qc[keep].to(torch.float64)
        r_next = _ops.residual(r, qc)
        if without_replacement:
            qc = _ops.normalise_or(qc.scatter(-1, x[:, None], 0.0), qc)
        r = r_next
    out[rows] = _ops.inverse_cdf(r, u[rows, n])
    return out


def _rrs(p, q, d, u):
    """RRS with replacement: ``r`` moves, ``q`` does not; coin ``k`` for draft ``k``."""
    return _recursive(p, q, d, u, without_replacement=False)


def _rrs_wor(p, q, d, u):
    """RRS without replacement: both the residual and the draft law move (pitfall P3)."""
    return _recursive(p, q, d, u, without_replacement=True)


def kseq_rho(p, q, n):
    r"""K-SEQ's :math:`\rho^*` per row, by the reference's bisection, vectorised.

    The root on :math:`[1, n]` of the non-increasing
    :math:`g(\rho) = 1 - (1 - \beta(\rho))^n - \rho\beta(\rho)` with
    :math:`\beta(\rho) = \sum_x \min(p(x)/\rho, q(x))` (SpecTr [4]_; docs/theory.md
    3.3): 1 where :math:`g(1) \le 0`, else the upper end of the final bracket,
    bisected until the midpoint equals an end (as
    :func:`spectheory.verifiers.kseq_rho`).

    Parameters
    ----------
    p, q : torch.Tensor, shape (B, V)
        Target and draft rows (any float dtype, checked at its tolerance and
        computed in float64).
    n : int >= 1

    Returns
    -------
    torch.Tensor, float64, shape (B,)

    Raises
    ------
    InvalidDistributionError, ShapeMismatchError, InvalidParameterError
        Rows that are not distributions (NaN, logits, sums off 1), ``p`` and
        ``q`` of different shapes or not (B, V), ``n`` not a positive integer.

    Examples
    --------
    docs/theory.md §8.1: :math:`\rho^* = 7/5` for ``n = 2``.

    >>> import torch
    >>> p = torch.tensor([[0.3, 0.4, 0.3]], dtype=torch.float64)
    >>> q = torch.tensor([[0.6, 0.3, 0.1]], dtype=torch.float64)
    >>> round(float(kseq_rho(p, q, 2)[0]), 12)
    1.4
    """
    n = check_positive_int(n, "n")
    p, q = _checked_pair(p, q)
    check_device(p.device, draft=q)
    return _kseq_rho(p, q, n)


def _checked_pair(target, draft):
    """Target and draft rows checked as (B, V) distributions of one shape, in float64."""
    p = check_probabilities(target, "target", 2)
    q = check_probabilities(draft, "draft", 2)
    if p.shape != q.shape:
        raise ShapeMismatchError(
            f"target and draft must have the same shape (B, V); got {tuple(p.shape)} and "
            f"{tuple(q.shape)}"
        )
    return p, q


def _kseq_rho(p, q, n):
    """:func:`kseq_rho` on checked float64 rows (the verifier's own path)."""

    def g(rho):
        b = torch.minimum(p / rho[:, None], q).sum(dim=-1)
        return 1 - (1 - b) ** n - rho * b

    B = p.shape[0]
    lo = torch.ones(B, dtype=torch.float64, device=p.device)
    hi = torch.full((B,), float(n), dtype=torch.float64, device=p.device)
    active = g(lo) > 0
    hi = torch.where(active, hi, lo)
    for _ in range(_KSEQ_STEPS):
        mid = 0.5 * (lo + hi)
        active = active & (mid != lo) & (mid != hi)
        if not bool(active.any()):
            break
        below = g(mid) <= 0
        hi = torch.where(active & below, mid, hi)
        lo = torch.where(active & ~below, mid, lo)
    return hi


def _kseq(p, q, d, u):
    """K-SEQ: accept ``x_k`` w.p. ``min(1, p/(rho* q))``; residual ``norm(p - s min(q, p/rho))``."""
    B, n = d.shape
    rho = _kseq_rho(p, q, n)
    out = torch.full((B,), -1, dtype=torch.int64, device=p.device)
    for k in range(n):
        x = d[:, k]
        prob = _ops.accept_prob(_ops.gather(p, x), rho * _ops.gather(q, x))
        out = torch.where((out < 0) & _ops.bernoulli(u[:, k], prob), x, out)
    first = torch.minimum(q, p / rho[:, None])
    b = first.sum(dim=-1)
    p_acc = 1 - (1 - b) ** n
    scale = torch.where(b > 0, p_acc / torch.where(b > 0, b, torch.ones_like(b)), 0.0)
    law = _ops.normalise_or(torch.clamp_min(p - scale[:, None] * first, 0.0), p)
    return torch.where(out < 0, _ops.inverse_cdf(law, u[:, n]), out)


def _spechub(p, q, d, u):
    """SpecHub (docs/theory.md §3.4): pair-type coin, the two accept coins, then the residual."""
    T, qt = _ops.greedy_split(q, 2)
    a = T[:, 0]
    i = d[:, 1]
    off = torch.ones_like(p, dtype=torch.bool).scatter(-1, a[:, None], False)
    zero = torch.zeros((), dtype=p.dtype, device=p.device)
    qa = _ops.gather(q, a)
    p1 = torch.where(off, torch.clamp_min(p - q, 0.0), zero)
    e_ia = torch.where(off, torch.clamp_min(q - p, 0.0), zero)
    q_ai = qa[:, None] * qt
    e_ai = torch.where(off, torch.clamp_min(q_ai - p1, 0.0), zero)
    s_ia, s_ai = e_ia.sum(dim=-1), e_ai.sum(dim=-1)
    pa = _ops.gather(p, a)
    p2a = torch.clamp_min(pa - s_ai, 0.0)
    pair_ia = _ops.bernoulli(u[:, 0], 1 - qa)  # i was the first draft, a ~ q
    first_ok = torch.where(
        pair_ia,
        _ops.accept_prob(_ops.gather(p, i), _ops.gather(q, i)),
        _ops.accept_prob(_ops.gather(p1, i), _ops.gather(q_ai, i)),
    )
    hub_ok = torch.where(pair_ia, _ops.accept_prob(p2a, s_ia), _ops.accept_prob(pa, s_ai))
    accept_i = _ops.bernoulli(u[:, 1], first_ok)
    accept_a = ~accept_i & _ops.bernoulli(u[:, 2], hub_ok)
    rest = torch.where(off, torch.clamp_min(p1 - q_ai, 0.0), zero)
    rest = rest.scatter(-1, a[:, None], torch.clamp_min(p2a - s_ia, 0.0)[:, None])
    y = _ops.inverse_cdf(_ops.normalise_or(rest, p), u[:, 3])
    return torch.where(accept_i, i, torch.where(accept_a, a, y))


def _nss(p, q, d, u):
    """Point-mass recursion over the distinct drafts; coin ``m`` for the ``m``-th distinct one."""
    B, n = d.shape
    out = torch.full((B,), -1, dtype=torch.int64, device=p.device)
    m = torch.zeros(B, dtype=torch.int64, device=p.device)  # coins used so far
    r = p
    for k in range(n):
        x = d[:, k]
        dup = (d[:, :k] == x[:, None]).any(dim=-1)
        live = (out < 0) & ~dup
        coin = _ops.gather(u, m)
        acc = live & _ops.bernoulli(coin, _ops.gather(r, x))
        out = torch.where(acc, x, out)
        rejected = live & ~acc
        m = m + rejected.to(torch.int64)
        zeroed = _ops.normalise_or(r.scatter(-1, x[:, None], 0.0), r)
        r = torch.where(rejected[:, None], zeroed, r)
    return torch.where(out < 0, _ops.inverse_cdf(r, _ops.gather(u, m)), out)


def _typical(p, q, d, u):
    """Medusa's typical acceptance (lossy): no coin; fallback to the target's argmax."""
    entropy = -(p * torch.log(p + 1e-5)).sum(dim=-1)
    threshold = torch.clamp_max(POSTERIOR_ALPHA * torch.exp(-entropy), POSTERIOR_THRESHOLD)
    out = torch.argmax(p, dim=-1)
    for k in reversed(range(d.shape[1])):  # the first passing draft wins
        x = d[:, k]
        out = torch.where(_ops.gather(p, x) > threshold, x, out)
    return out



def optimal_torch(p, q, d, u, sampling="iid"):
    """Tokens (B,) of ``optimal`` on float64 rows (B, V), drafts (B, n), uniforms (B, 3).

    ``sampling="greedy"`` runs Hu et al.'s verifier (the reference's delegation);
    ``n = 1`` runs standard speculative sampling; two drafts without
    replacement the ramp score rule of
    :func:`spectheory.torch._pair_scores.pair_scores_torch`, more the
    priority-coin rule of :func:`spectheory.torch._priority_coins.priority_coins_torch`;
    otherwise the tier rule of :func:`spectheory.torch._optimal.optimal_iid`.
    """
    if sampling == "greedy":
        return _greedy(p, q, d, u)
    if d.shape[1] == 1:
        return _single(p, q, d, u)
    if sampling == "without_replacement":
        if d.shape[1] > 2:
            return priority_coins_torch(p, q, d, u)
        return pair_scores_torch(p, q, d, u)
    return optimal_iid(p, q, d, u)


_FUNCTIONS = {
    "sd": _single,
    "naive": _single,
    "rrs": _rrs,
    "rrs_wor": _rrs_wor,
    "kseq": _kseq,
    "greedy": _greedy,
    "spechub": _spechub,
    "nss": _nss,
    "typical": _typical,
    "optimal": optimal_torch,  # spectheory.torch._optimal; reads the draft law
    "pair_scores": pair_scores_torch,  # spectheory.torch._pair_scores
}
#: Forms that take the draft law (``optimal`` delegates greedy drafts to ``greedy``).
_LAW_AWARE = frozenset({"optimal"})


# --------------------------------------------------------------------------- checks


def _check_drafts_law(v, q, d, sampling):
    """Raise if a row's drafts have probability 0 under ``sampling`` (``verify``'s rule)."""
    n = d.shape[1]
    if sampling != "iid":
        support = (q != 0).sum(dim=-1)
        short = support < n
        if bool(short.any()):
            r = int(torch.nonzero(short)[0, 0])
            raise InvalidParameterError(
                f"n={n} is larger than the support of draft row {r} ({int(support[r])} tokens "
                f"with probability > 0); sampling={sampling!r} needs at least n such tokens"
            )
    if not v.needs_draft_law:
        return
    if sampling == "greedy":
        T, qt = _ops.greedy_split(q, n)
        ok = (d[:, :-1] == T).all(dim=-1) & (_ops.gather(qt, d[:, -1]) > 0)
    else:
        ok = (q.gather(-1, d) > 0).all(dim=-1)
        if sampling == "without_replacement":
            ok = ok & ~(d[:, :, None] == d[:, None, :]).triu(diagonal=1).any(dim=(1, 2))
    if not bool(ok.all()):
        r = int(torch.nonzero(~ok)[0, 0])
        raise InvalidParameterError(
            f"drafts (row {r})={tuple(d[r].tolist())!r} has probability 0 under "
            f"sampling={sampling!r} with this draft distribution; verifier {v.name!r} needs "
            "drafts drawn from it"
        )


def _torch_record(name):
    """The registry record of ``name`` (a name or a record), which must have a torch form.

    Dispatch is by the record's ``torch_form``, which the record guarantees to
    implement its function: a user record named like a built-in has none.
    """
    v = as_verifier(name) if isinstance(name, str | Verifier) else None
    if v is None or v.torch_form is None:
        label = v.name if v is not None else name
        raise InvalidParameterError(
            f"name must be one of {', '.join(map(repr, TORCH_VERIFIERS))} (verifiers with a "
            f"batched torch form); got {label!r}"
        )
    return v


def prepare(name, target, draft, drafts, generator, uniforms, sampling):
    """Check a :func:`verify` call; return float64 ``p``, ``q`` (B, V), int64 drafts, uniforms."""
    _torch_record(name)
    if not isinstance(drafts, torch.Tensor) or drafts.ndim != 2 or drafts.shape[1] == 0:
        shape = tuple(drafts.shape) if isinstance(drafts, torch.Tensor) else type(drafts).__name__
        raise ShapeMismatchError(
            f"drafts must be a tensor of shape (B, n) with n >= 1; got {shape}"
        )
    n = check_positive_int(drafts.shape[1], "n")
    v, sampling = check_verifier_law(_torch_record(name), n, sampling)
    p, q = _checked_pair(target, draft)
    B, V = p.shape
    check_device(p.device, draft=q, drafts=drafts)
    d = check_token_ids(drafts, "drafts", (B, n), V)
    _check_drafts_law(v, q, d, sampling)
    K = v.uniforms(n)
    if uniforms is None:
        u = draw_uniforms((B, K), p.device, generator)
    else:
        u = check_uniforms(uniforms, (B, K), p.device)
    return p, q, d, u


def verify(name, target, draft, drafts, *, generator=None, uniforms=None, sampling=None):
    r"""Run a registered verifier on a batch of positions.

    Row ``b`` is one verification of drafts ``drafts[b]`` of target
    ``target[b]`` against draft ``draft[b]``, with the semantics of
    ``spectheory.verify(name, target[b], draft[b], drafts[b])`` (e.g. for
    ``sd``: accept :math:`x` if :math:`u < \min(1, p(x)/q(x))`, else draw from
    :math:`\mathrm{norm}((p - q)_+)`).

    Parameters
    ----------
    name : str or Verifier
        One of :data:`TORCH_VERIFIERS`, or a record whose ``torch_form`` is set
        (dispatch by the record's function, never by its name).
    target, draft : torch.Tensor, shape (B, V)
        Target ``p`` and draft ``q`` probabilities, floating (float16 to
        float64), on one device; checked and computed in float64.
    drafts : torch.Tensor, integer, shape (B, n)
        Draft tokens in draw order, drawn from ``draft`` under ``sampling``
        (checked unless the verifier is valid for any drafter: ``nss``, ``typical``).
    generator : torch.Generator, optional
        Source of the uniforms when ``uniforms`` is not given (torch's default
        generator if None); must be on the tensors' device type.
    uniforms : torch.Tensor, floating, shape (B, K), optional
        Injected uniforms in [0, 1), ``K = verifier_uniforms(name, n)``, read
        in the reference's coin order (module docstring).
    sampling : {"iid", "without_replacement", "greedy"}, optional
        The law the drafts were drawn from; default the verifier's first law.

    Returns
    -------
    TorchVerification
        ``tokens`` (B,) int64 and ``accepted`` (B,) bool, on the input's device.

    Raises
    ------
    InvalidDistributionError, ShapeMismatchError, InvalidParameterError
        Bad probabilities, shapes, devices, token ids, uniforms, ``n`` or
        ``sampling``; drafts impossible under ``sampling``.

    Examples
    --------
    docs/theory.md §8.1 with SD: ``p/q = 0.5`` at token 0.

    >>> import torch
    >>> p = torch.tensor([[0.3, 0.4, 0.3]] * 2, dtype=torch.float64)
    >>> q = torch.tensor([[0.6, 0.3, 0.1]] * 2, dtype=torch.float64)
    >>> u = torch.tensor([[0.4, 0.0], [0.6, 0.1]], dtype=torch.float64)
    >>> out = verify("sd", p, q, torch.tensor([[0], [0]]), uniforms=u)
    >>> out.tokens.tolist(), out.accepted.tolist()  # accept; reject, residual [0, .5, .5]
    ([0, 1], [True, False])
    """
    p, q, d, u = prepare(name, target, draft, drafts, generator, uniforms, sampling)
    form = _torch_record(name).torch_form
    if form in _LAW_AWARE:
        law = check_verifier_law(_torch_record(name), d.shape[1], sampling)[1]
        tokens = _FUNCTIONS[form](p, q, d, u, sampling=law)
    else:
        tokens = _FUNCTIONS[form](p, q, d, u)
    return TorchVerification(tokens, (d == tokens[:, None]).any(dim=-1))
