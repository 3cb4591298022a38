r"""Held-out evaluation of trained and quantised drafts: acceptance on the target's continuations.

Both :func:`evaluate_adapter` (``adapter:L``) and :func:`evaluate_quantised`
(``quant:TYPE``) replay the target's sampled continuations of the held-out
prompts (:func:`held_out_sequences`, the evaluation prompts of the default
trace) with teacher forcing and report the mean acceptance
:math:`\frac1N\sum_t\sum_x \min(p_t, q_t)` (the single-draft acceptance of
Leviathan et al., arXiv 2211.17192) with cluster-bootstrap intervals over
prompts (:func:`prompt_bootstrap`).  Split from :mod:`.adapters` and
:mod:`.quantised` so that those stay free of traces and recording (no import
cycle inside ``spectheory.lm``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError
from .._validate import check_positive_int
from .adapters import Adapter
from .quantised import quantised_model

__all__ = [
    "AdapterEvaluation",
    "evaluate_adapter",
    "evaluate_quantised",
    "held_out_sequences",
    "prompt_bootstrap",
]


@dataclass(frozen=True)
class AdapterEvaluation:
    r"""Held-out acceptance of an adapter draft (:func:`evaluate_adapter`).

    Attributes
    ----------
    temperatures : tuple of float
    acceptance : tuple of float
        Mean :math:`\sum_x \min(p_t, q_t)` over the held-out positions, per temperature.
    raw_exit : tuple of float
        The same for the untrained ``exit:L`` on the same positions.
    coverage : tuple of float
        Mean :math:`p_t(S)` (1 without a subset): the ceiling of the acceptance.
    positions : tuple of int
    per_prompt : tuple of ndarray (P, 2)
        Per temperature and held-out prompt: the sum of
        :math:`\sum_x \min(p_t, q_t)` over its positions, and their number
        (the unit of resampling of :meth:`acceptance_ci`).
    """

    temperatures: tuple
    acceptance: tuple
    raw_exit: tuple
    coverage: tuple
    positions: tuple
    per_prompt: tuple = ()

    def acceptance_ci(self, level=0.95, n_boot=2000, seed=0):
        r"""Percentile bootstrap intervals of :attr:`acceptance`, resampling prompts.

        Positions within a prompt are dependent, so whole prompts are
        resampled (a cluster bootstrap); the statistic is the ratio
        :math:`\sum_{\text{prompts}} \text{sum} / \sum_{\text{prompts}} \text{count}`.

        Returns
        -------
        tuple of (lo, hi), one per temperature.
        """
        return tuple(
            prompt_bootstrap([pp], level=level, n_boot=n_boot, seed=seed)[0]
            for pp in self.per_prompt
        )


def prompt_bootstrap(tables, statistic=None, *, level=0.95, n_boot=2000, seed=0):
    r"""Cluster-bootstrap interval of a statistic of several per-prompt tables.

    Parameters
    ----------
    tables : sequence of ndarray (P, 2)
        Per draft (or condition), ``(sum, count)`` per held-out prompt, the
        prompts in the same order in every table: one resample of prompt
        indices is applied to all tables alike (paired).
    statistic : callable, optional
        Maps the vector of ratio estimates (one per table) to a float; default
        is the first table's ratio.
    level : float in (0, 1)
    n_boot : int
    seed : int

    Returns
    -------
    (lo, hi), and the point estimate: ``((lo, hi), value)``.

    Examples
    --------
    >>> t = np.array([[1.0, 2.0], [3.0, 4.0], [2.0, 4.0]])
    >>> (lo, hi), v = prompt_bootstrap([t], n_boot=200)
    >>> round(v, 4), bool(lo <= v <= hi)
    (0.6, True)
    """
    if not 0 < level < 1:
        raise InvalidParameterError(f"level must be in (0, 1); got {level!r}")
    n_boot = check_positive_int(n_boot, "n_boot")
    arrs = [np.asarray(t, dtype=np.float64) for t in tables]
    if not arrs or any(a.ndim != 2 or a.shape[1] != 2 or a.shape != arrs[0].shape for a in arrs):
        raise InvalidParameterError("tables must be equal-shaped (P, 2) arrays of (sum, count)")
    stat = statistic or (lambda r: float(r[0]))
    value = stat(np.array([a[:, 0].sum() / a[:, 1].sum() for a in arrs]))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arrs[0].shape[0], size=(n_boot, arrs[0].shape[0]))
    ratios = np.stack([a[idx, 0].sum(1) / a[idx, 1].sum(1) for a in arrs], axis=1)
    boots = np.array([stat(r) for r in ratios])
    lo, hi = np.percentile(boots, [50 * (1 - level), 50 * (1 + level)])
    return (float(lo), float(hi)), value


def held_out_sequences(loaded, temperature, max_new_tokens=24, prompts=None):
    """Yield ``(ids, b)`` per held-out prompt: prompt + continuation (minus its last token).

    The continuations are those of the default trace
    (:func:`spectheory.lm.record_trace`, ``TraceSettings(temperature=...,
    max_new_tokens=...)``, cached) over the 38 evaluation prompts; positions
    ``b = len(prompt) - 1 ..`` of ``ids`` predict the continuation's tokens.
    """
    from .acceptance import _prompt_slices
    from .trace import TraceSettings, record_trace

    extra = {} if prompts is None else {"prompts": tuple(int(i) for i in prompts)}
    trace = record_trace(
        TraceSettings(temperature=temperature, max_new_tokens=max_new_tokens, **extra),
        loaded=loaded,
        progress=False,
    )
    order = list(trace.metadata["prompt_order"])
    for pid, sl in _prompt_slices(trace):
        j = order.index(pid)
        prompt = trace.prompt_tokens[trace.prompt_offsets[j] : trace.prompt_offsets[j + 1]]
        yield np.concatenate([prompt, trace.tokens[sl][:-1]]), prompt.size - 1


def evaluate_adapter(
    loaded, adapter: Adapter, temperatures=(0.7, 1.0), *, max_new_tokens=24, prompts=None
):
    r"""Mean acceptance on target-sampled continuations of the 38 held-out prompts.

    For each temperature :math:`T` the target's continuations come from
    :func:`held_out_sequences`; one teacher-forced pass per prompt gives
    :math:`p_t = \mathrm{softmax}(z_t / T)` and the adapter's :math:`q_t` (its
    attention sees the prompt and the continuation so far), and

    .. math:: \bar\beta(T) = \frac1N \sum_t \sum_x \min(p_t(x), q_t(x)).

    Returns
    -------
    AdapterEvaluation
        With the raw ``exit:L`` on the same positions for comparison.
    """
    import torch

    from .acceptance import _check_temperature
    from .drafts import early_exit_logits

    temps = tuple(_check_temperature(t, "temperatures") for t in temperatures)
    accs, raws, covs, npos, per = [], [], [], [], []
    for T in temps:
        tot, n, rows = np.zeros(3), 0, []
        with torch.no_grad():
            for ids, b in held_out_sequences(loaded, T, max_new_tokens, prompts):
                out = loaded.model(
                    input_ids=torch.as_tensor(ids[None]), output_hidden_states=True, use_cache=False
                )
                p = _softmax_t(out.logits[0, b:].double(), T)
                pos = torch.arange(ids.size)[None]
                z = adapter.subset_logits(out.hidden_states[adapter.layer], pos)[0, b:]
                q = _softmax_t(z.double(), T)
                raw = early_exit_logits(loaded.model, out.hidden_states, adapter.layer)[0, b:]
                praw = _softmax_t(raw.double(), T)
                pS = p if adapter.vocab is None else p[:, adapter.vocab]
                acc = float(torch.minimum(pS, q).sum())
                tot += [acc, float(torch.minimum(p, praw).sum()), float(pS.sum())]
                n += p.shape[0]
                rows.append((acc, p.shape[0]))
        accs.append(tot[0] / n)
        raws.append(tot[1] / n)
        covs.append(tot[2] / n)
        npos.append(n)
        per.append(np.asarray(rows, dtype=np.float64))
    return AdapterEvaluation(
        temperatures=temps,
        acceptance=tuple(accs),
        raw_exit=tuple(raws),
        coverage=tuple(covs),
        positions=tuple(npos),
        per_prompt=tuple(per),
    )


def _softmax_t(z, T):
    import torch

    if T == 0:
        out = torch.zeros_like(z)
        out.scatter_(-1, z.argmax(-1, keepdim=True), 1.0)
        return out
    return torch.softmax(z / T, dim=-1)


def evaluate_quantised(loaded, qtype: str = "Q4_0", temperatures=(0.7, 1.0), *, max_new_tokens=24):
    r"""Held-out acceptance :math:`\frac1N\sum_t\sum_x \min(p_t, q_t)` of ``quant:TYPE``.

    Same positions as :func:`evaluate_adapter` (the
    target's continuations of the 38 held-out prompts); ``raw_exit`` holds
    NaN (no exit to compare with) and ``coverage`` 1.

    Returns
    -------
    AdapterEvaluation
    """
    import torch

    from .acceptance import _check_temperature

    temps = tuple(_check_temperature(t, "temperatures") for t in temperatures)
    qmodel = quantised_model(loaded, qtype)
    accs, npos, per = [], [], []
    for T in temps:
        rows = []
        with torch.no_grad():
            for ids, b in held_out_sequences(loaded, T, max_new_tokens):
                x = torch.as_tensor(ids[None])
                p = _softmax_t(loaded.model(input_ids=x, use_cache=False).logits[0, b:].double(), T)
                q = _softmax_t(qmodel(input_ids=x, use_cache=False).logits[0, b:].double(), T)
                rows.append((float(torch.minimum(p, q).sum()), p.shape[0]))
        rows = np.asarray(rows, dtype=np.float64)
        accs.append(rows[:, 0].sum() / rows[:, 1].sum())
        npos.append(int(rows[:, 1].sum()))
        per.append(rows)
    nan = tuple(float("nan") for _ in temps)
    return AdapterEvaluation(
        temperatures=temps,
        acceptance=tuple(accs),
        raw_exit=nan,
        coverage=tuple(1.0 for _ in temps),
        positions=tuple(npos),
        per_prompt=tuple(per),
    )
