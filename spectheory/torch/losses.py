r"""Draft-training losses shaped by what verification rewards.

A draft ``q_theta`` (logits ``z``, (B, V)) is trained against target rows ``p``
(B, V).  Each loss is the mean over rows:

``"kl"``
    :math:`\mathrm{KL}(p \,\|\, q_\theta) = \sum_i p_i (\log p_i - \log q_i)`:
    distillation; its minimiser at finite capacity is not the acceptance
    optimum.
``"tv"``
    :math:`-\log \sum_i \min(p_i, q_i)`: minus the log of single-draft
    acceptance :math:`1 - \mathrm{TV}(p, q)` (docs/theory.md §1.2), the
    acceptance-shaped loss proposed for draft training (e.g. vLLM's
    speculators).
``"alpha:N:LAW"``
    :math:`-\log \alpha^*_N(p, q_\theta)`: minus the log of the optimal
    acceptance of ``N`` drafts under the draft law ``LAW`` (``iid``,
    ``without_replacement`` or ``greedy``), through :func:`.bound.bound`, whose
    gradient is the envelope-theorem gradient of the optimal token set.

A mixture is a mapping ``{name: weight}`` (non-negative weights, not all
zero), e.g. ``{"kl": 0.1, "alpha:4:without_replacement": 1.0}``.  The log
keeps the gradient of a row with low acceptance from vanishing (a row at
acceptance ``a`` gets weight ``1/a``), as cross-entropy does for likelihood.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from .._errors import InvalidParameterError
from ..drafting import SAMPLINGS
from ._checks import check_probabilities
from .bound import bound

__all__ = ["LOSSES", "draft_loss", "parse_loss"]

#: The loss names accepted by :func:`draft_loss` (``alpha`` takes ``:N:LAW``).
LOSSES = ("kl", "tv", "alpha")


def parse_loss(spec) -> dict[str, float]:
    """Normalise a loss specification to ``{name: weight}``, checking every part.

    Parameters
    ----------
    spec : str or mapping
        ``"kl"``, ``"tv"``, ``"alpha:N:LAW"``, a ``+``-separated weighted sum
        such as ``"0.1*kl+alpha:4:iid"`` (a name written twice gets the sum
        of its weights), or a mapping ``{name: weight}``.

    Examples
    --------
    >>> parse_loss("0.1*kl+alpha:4:iid")
    {'kl': 0.1, 'alpha:4:iid': 1.0}
    >>> parse_loss("0.5*kl+tv+0.5*kl+alpha:04:iid+alpha:4:iid")
    {'kl': 1.0, 'tv': 1.0, 'alpha:4:iid': 2.0}
    """
    if isinstance(spec, str):
        terms = []
        for term in spec.split("+"):
            weight, _, name = term.strip().rpartition("*")
            try:
                terms.append((name.strip(), float(weight) if weight else 1.0))
            except ValueError:
                raise InvalidParameterError(
                    f"loss term {term!r} must be NAME or WEIGHT*NAME; got weight {weight!r}"
                ) from None
    elif isinstance(spec, Mapping):
        terms = list(spec.items())
    else:
        terms = []
    if not terms:
        raise InvalidParameterError(f"loss must be a name or a non-empty mapping; got {spec!r}")
    out = {}
    for name, weight in terms:
        _check_name(name)
        try:
            w = float(weight)
        except (TypeError, ValueError):  # a mapping's weight: None, "abc", a list
            raise InvalidParameterError(
                f"loss weight of {name!r} must be a number; got {weight!r}"
            ) from None
        if not math.isfinite(w) or w < 0:
            raise InvalidParameterError(f"loss weight of {name!r} must be finite and >= 0; got {w}")
        # A name given twice ("kl+kl", or "alpha:04:iid" beside "alpha:4:iid") is one term
        # with the summed weight, as the sum it writes; the last weight alone dropped the others.
        key = _canonical(name)
        out[key] = out.get(key, 0.0) + w
        if not math.isfinite(out[key]):  # "1e308*kl+1e308*kl": each finite, the sum inf
            raise InvalidParameterError(
                f"loss weights of {key!r} sum to {out[key]}; they must sum to a finite number"
            )
    if not any(out.values()):
        raise InvalidParameterError(f"loss weights are all zero: {out}")
    return out


def _check_name(name):
    if name in ("kl", "tv"):
        return
    head, *rest = str(name).split(":")
    digits = len(rest) == 2 and rest[0].isascii() and rest[0].isdigit()  # not '²' or '٣'
    if head == "alpha" and digits and int(rest[0]) >= 1:
        if rest[1] in SAMPLINGS:
            return
    raise InvalidParameterError(
        f"loss name must be 'kl', 'tv' or 'alpha:N:LAW' with N >= 1 and LAW in "
        f"{', '.join(SAMPLINGS)}; got {name!r}"
    )


def _canonical(name):
    head, *rest = str(name).split(":")
    return f"alpha:{int(rest[0])}:{rest[1]}" if head == "alpha" else str(name)


def _term(name, p, logq):
    if name == "kl":
        logp = torch.log(p)
        return torch.where(p > 0, p * (logp - logq), 0.0).sum(dim=-1)
    if name == "tv":
        # in logarithms: exp(logq) underflows to 0 below 2^-1074 (inf loss, NaN gradient)
        return -torch.logsumexp(torch.minimum(torch.log(p), logq), dim=-1)
    _, n, law = name.split(":")
    q = logq.exp()
    if law == "without_replacement":
        # V >= n: the zeros are underflow (finite logits); V < n is bound's error
        short = ((q.detach() > 0).sum(dim=-1) < int(n)) & (q.shape[-1] >= int(n))
        if bool(short.any()):
            row = int(torch.nonzero(short)[0, 0])
            raise InvalidParameterError(
                f"softmax(draft_logits) row {row} has fewer than n = {n} entries above float64's "
                "smallest positive value (logits more than ~745 apart); loss "
                f"{name!r} needs n tokens of positive draft probability"
            )
    return -torch.log(bound(p, q, int(n), law))


def draft_loss(spec, target, draft_logits):
    r"""Mean training loss of draft logits against target rows.

    Parameters
    ----------
    spec : str or mapping
        See :func:`parse_loss`.
    target : torch.Tensor (B, V)
        Target distributions (no gradient is taken through them).
    draft_logits : torch.Tensor (B, V)
        The draft's logits; ``q = softmax(draft_logits)`` in float64.

    Returns
    -------
    torch.Tensor, float64 scalar

    Examples
    --------
    A draft equal to the target has zero KL and accepts every draft:

    >>> p = torch.tensor([[0.5, 0.25, 0.25]], dtype=torch.float64)
    >>> z = torch.log(p).requires_grad_()
    >>> abs(draft_loss("kl+tv+alpha:2:iid", p, z).item()) < 1e-15
    True
    """
    weights = parse_loss(spec)
    if not isinstance(draft_logits, torch.Tensor) or draft_logits.ndim != 2:
        raise InvalidParameterError(
            f"draft_logits must be a (B, V) torch.Tensor; got {type(draft_logits).__name__}"
            + (f" of shape {tuple(draft_logits.shape)}" if hasattr(draft_logits, "shape") else "")
        )
    if not bool(torch.isfinite(draft_logits.detach()).all()):
        raise InvalidParameterError("draft_logits has a non-finite entry")
    logq = torch.log_softmax(draft_logits.to(torch.float64), dim=-1)
    p = check_probabilities(target, "target", 2)  # float64, detached: no gradient to the target
    if p.shape != logq.shape:
        raise InvalidParameterError(
            f"target has shape {tuple(p.shape)}; draft_logits has {tuple(logq.shape)}"
        )
    total = 0.0
    for name, w in weights.items():
        if w:
            total = total + w * _term(name, p, logq).mean()
    return total
