r"""Batched torch form of the ``pair_scores`` rule (two drafts without replacement).

The plan of each row (the preferred part ``T``, the scores :math:`\mu`, the
selection marginal ``y`` and the residual) is the coins reference's own
(:func:`spectheory.verifiers.pair_scores.score_plan`, cached per row): a
projected Newton solve with data-dependent steps and line searches, run on the
host in float64 from the rows' float64 copy, so every table is the
reference's bit for bit on any device.  The trials then run on the rows'
device with the reference's coin order: ``u[:, 0]`` selects the first draft
below its weight (1 or 0 when exactly one draft lies in ``T``, else
:math:`\min(1, \max(0, 1/2 + (\mu_a - \mu_b)/2))`), ``u[:, 1]`` accepts the
selected ``x`` below :math:`\min(1, p_x / y_x)`, ``u[:, 2]`` draws the residual
by inverse CDF.

The host solve is the cost (about 10 window-sum passes of :math:`O(V \log V)`
a row); a device port of the Newton method would move the rows' sorts and
cumulative sums to the GPU but not the sequential line searches.
"""

from __future__ import annotations

import numpy as np
import torch

from .._errors import InvalidParameterError
from . import _ops

__all__ = ["pair_scores_torch"]


def _plan_tensors(p, q):
    from ..verifiers.pair_scores import score_plans

    pn = p.detach().to("cpu", torch.float64).numpy()
    qn = q.detach().to("cpu", torch.float64).numpy()
    plans = score_plans(pn, qn)

    def stack(field, dtype):
        return torch.as_tensor(np.array([getattr(pl, field) for pl in plans], dtype=dtype),
                               device=p.device)

    return (stack("preferred", np.bool_), stack("mu", np.float64), stack("y", np.float64),
            stack("residual", np.float64))


def pair_scores_torch(p, q, d, u):
    """Tokens (B,) of ``pair_scores`` on float64 rows (B, V), drafts (B, 2), uniforms (B, 3)."""
    if d.shape[1] != 2:  # unvalidated callers too: never verify on the first two drafts only
        raise InvalidParameterError(f"pair_scores needs two drafts per row; got n={d.shape[1]}")
    preferred, mu, y, residual = _plan_tensors(p, q)
    a, b = d[:, 0], d[:, 1]
    in_a, in_b = _ops.gather(preferred, a), _ops.gather(preferred, b)
    weight = torch.clamp(0.5 + 0.5 * (_ops.gather(mu, a) - _ops.gather(mu, b)), 0.0, 1.0)
    weight = torch.where(in_a != in_b, in_a.to(torch.float64), weight)
    x = torch.where(_ops.bernoulli(u[:, 0], weight), a, b)
    accept = _ops.bernoulli(u[:, 1], _ops.accept_prob(_ops.gather(p, x), _ops.gather(y, x)))
    return torch.where(accept, x, _ops.inverse_cdf(residual, u[:, 2]))
