r"""Batched torch form of the priority-coin rule (three or more drafts without replacement).

The plan of each row (the preferred part ``T``, each token's rank in its part's
order, the coins :math:`\kappa`, the selection marginal ``y`` and the residual)
is the coins reference's own (:func:`spectheory.verifiers.priority_coins.coin_plan`,
cached per row): greedy passes over a log-time grid with data-dependent order
repairs, run on the host in float64 from the rows' float64 copy, so every table
is the reference's bit for bit on any device.  The trials then run on the rows'
device with the reference's coin order: ``u[:, 0]`` selects among the drafts of
the part selected from, listed by rank, with weights
:math:`\kappa_{x_j} \prod_{i<j} (1 - \kappa_{x_i})` (the last: the product
alone), times the component's weight for a plan that mixes rules, by a linear
inverse-CDF scan; ``u[:, 1]`` accepts the selected ``x``
below :math:`\min(1, p_x / y_x)`; ``u[:, 2]`` draws the residual by inverse CDF.
The scan over the ``n`` drafts is a loop of elementwise operations in the
reference's order (no parallel scan), so the weights are the same floats on
every device.
"""

from __future__ import annotations

import torch

from . import _ops

__all__ = ["priority_coins_torch"]


def _plan_tensors(p, q, n):
    from ..verifiers.priority_coins import coin_tables

    pn = p.detach().to("cpu", torch.float64).numpy()
    qn = q.detach().to("cpu", torch.float64).numpy()
    tb = coin_tables(pn, qn, n)  # the rows' rules, padded to the batch's largest count

    def put(name):
        return torch.as_tensor(tb[name], device=p.device)

    return (put("pref"), put("lam"), put("rank"), put("kappa"), put("y"), put("residual"))


def _select(preferred, lam, rank, kappa, d, u):
    """Selected draft per row (B,), -1 where no draft has a rank (q = 0, unvalidated).

    One linear inverse-CDF scan over the pairs (component, draft), component by
    component, the component's weight times its selection weights: the reference's
    order of operations (padding components have weight 0 and add nothing).
    """
    B, n = d.shape
    pref_d = torch.gather(preferred, 1, d)
    valid = torch.gather(rank[:, 0], 1, d) >= 0
    top = (valid & pref_d).any(dim=1, keepdim=True)
    member = valid & (pref_d | ~top)
    m = member.sum(dim=1)
    acc = torch.zeros(B, dtype=torch.float64, device=d.device)
    chosen = torch.full((B,), -1, dtype=torch.int64, device=d.device)
    done = torch.zeros(B, dtype=torch.bool, device=d.device)
    for c in range(lam.shape[1]):
        # the part's drafts first, by this component's rank (distinct within a part)
        key = torch.where(member, torch.gather(rank[:, c], 1, d), torch.iinfo(torch.int64).max)
        order = torch.argsort(key, dim=1, stable=True)
        part = torch.gather(d, 1, order)
        k = torch.gather(kappa[:, c], 1, part)
        fail = torch.ones(B, dtype=torch.float64, device=d.device)
        for j in range(n):
            last = m - 1 == j
            w = torch.where(last, fail, fail * k[:, j])
            w = torch.where(j < m, w, torch.zeros_like(w))
            fail = torch.where(last | (j >= m), fail, fail * (1.0 - k[:, j]))
            w = lam[:, c] * w
            positive = w > 0.0
            acc = torch.where(positive, acc + w, acc)
            live = positive & ~done
            chosen = torch.where(live, part[:, j], chosen)
            done = done | (live & (u < acc))
    return torch.where(m > 0, chosen, torch.full_like(chosen, -1))


def priority_coins_torch(p, q, d, u):
    """Tokens (B,) of the priority-coin rule: float64 rows (B, V), drafts (B, n), uniforms (B, 3).
    """
    preferred, lam, rank, kappa, y, residual = _plan_tensors(p, q, d.shape[1])
    x = _select(preferred, lam, rank, kappa, d, u[:, 0])
    ok = x >= 0
    xs = x.clamp(min=0)
    accept = ok & _ops.bernoulli(u[:, 1], _ops.accept_prob(_ops.gather(p, xs), _ops.gather(y, xs)))
    return torch.where(accept, xs, _ops.inverse_cdf(residual, u[:, 2]))
