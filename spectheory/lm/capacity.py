r"""Draft capacity: mean acceptance of every early-exit draft, and its log-linear law.

- :func:`teacher_forced_hidden`: one teacher-forced forward per prompt of a
  trace, with hidden states.
- :func:`capacity_profile`: the mean acceptance
  :math:`\bar\beta(L, T) = \frac1N \sum_t \sum_x \min(p_t(x), q_{L,t}(x))` of
  *every* early-exit draft (exit layer :math:`L`) at several temperatures,
  from those passes, without storing logits.
- :func:`capacity_law`: the fit :math:`\bar\beta = a + b \log_{10} N_{draft}`
  compared with the published +0.07..0.09 per decade (docs/theory.md §6.1/6.2;
  Leviathan et al., arXiv 2211.17192, Table 3; Scylla, arXiv 2505.07858).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import numpy as np

from .._errors import InvalidParameterError
from ._loader import require_cpu
from ._positions import check_temperature, prompt_slices
from .cost import draft_parameter_count
from .drafts import early_exit_logits

__all__ = [
    "CapacityLaw",
    "CapacityProfile",
    "capacity_law",
    "capacity_profile",
    "teacher_forced_hidden",
]


def _prompt_and_continuation(trace, j, sl):
    prompt = trace.prompt_tokens[trace.prompt_offsets[j] : trace.prompt_offsets[j + 1]]
    return prompt, trace.tokens[sl]


def teacher_forced_hidden(loaded, trace):
    """Yield ``(prompt id, hidden_states)`` of one teacher-forced forward per prompt.

    The input is the prompt followed by the continuation without its last
    token, so that the ``n`` kept positions predict the ``n`` continuation
    tokens.  ``hidden_states`` is the model's tuple (entry 0: embeddings,
    entry ``l``: after layer ``l``, the last entry already normed), sliced to
    those positions: tensors ``(n, h)``.
    """
    import torch

    require_cpu(loaded, "teacher_forced_hidden")
    order = list(trace.metadata["prompt_order"])
    with torch.no_grad():
        for pid, sl in prompt_slices(trace):
            j = order.index(pid)
            prompt, cont = _prompt_and_continuation(trace, j, sl)
            ids = np.concatenate([prompt, cont[:-1]])
            out = loaded.model(
                input_ids=torch.as_tensor(ids[None], dtype=torch.long),
                output_hidden_states=True,
                use_cache=False,
            )
            start = prompt.size - 1
            yield pid, tuple(h[0, start:] for h in out.hidden_states)


def _torch_probs(logits, temperature):
    import torch

    z = logits.double()
    if temperature == 0:
        out = torch.zeros_like(z)
        out.scatter_(-1, z.argmax(dim=-1, keepdim=True), 1.0)  # first maximum, as numpy
        return out
    return torch.softmax(z / temperature, dim=-1)


@dataclass(frozen=True)
class CapacityProfile:
    r"""Mean acceptance of every early-exit draft, from teacher-forced passes.

    Attributes
    ----------
    layers : ndarray, int64 (K,)
        Exit layers :math:`L`.
    temperatures : ndarray, float64 (M,)
    acceptance : ndarray, float64 (M, K)
        :math:`\bar\beta(L, T)`: the mean over all positions of
        :math:`\sum_x \min(p_t(x), q_{L,t}(x))`.
    per_prompt : ndarray, float64 (M, K, P)
        The same mean within each prompt.
    positions : ndarray, int64 (P,)
        Positions per prompt (the weights of ``acceptance``).
    prompt_ids : tuple of int
    parameters : ndarray, int64 (K,)
        Draft parameter count at each exit layer (:func:`draft_parameter_count`).
    model : str
        The target's name (``LoadedModel.name``).
    embedding_parameters : int
        Parameters of the input embedding, which every early exit shares with the target.
    """

    layers: np.ndarray
    temperatures: np.ndarray
    acceptance: np.ndarray
    per_prompt: np.ndarray = field(repr=False)
    positions: np.ndarray = field(repr=False)
    prompt_ids: tuple = field(repr=False)
    parameters: np.ndarray = field(repr=False)
    model: str = "the target"
    embedding_parameters: int = 0


def _check_layers(layers, num_layers):
    try:
        arr = [_index(x) for x in layers]
    except TypeError:
        raise InvalidParameterError(
            f"layers must be a sequence of integers; got {layers!r}"
        ) from None
    if not arr:
        raise InvalidParameterError("layers must not be empty")
    for L in arr:
        if not 1 <= L < num_layers:
            raise InvalidParameterError(
                f"every exit layer must be in [1, {num_layers}); got {L} in layers"
            )
    return np.asarray(arr, dtype=np.int64)


def _index(x):
    if isinstance(x, (bool, np.bool_)):
        raise TypeError("bool")
    return operator.index(x)


def capacity_profile(loaded, settings_or_trace=None, temperatures=(0.7, 1.0), layers=range(1, 30)):
    r"""Mean acceptance of the early-exit drafts at every exit layer and temperature.

    One forward pass of the target per prompt over the prompt and its
    recorded continuation (teacher forcing, ``output_hidden_states=True``);
    for each exit layer :math:`L` the draft logits
    :math:`z_{L,t} = W_{\mathrm{head}}\,\mathrm{norm}(h_{L,t})` are formed
    in float32 one layer at a time and reduced at once:

    .. math::

        \bar\beta(L, T) = \frac{1}{N}\sum_t \sum_x
            \min\big(\mathrm{softmax}(z_t / T)(x),\;
                     \mathrm{softmax}(z_{L,t} / T)(x)\big)

    (float64 softmax; :math:`T = 0` is greedy).  No logits are stored, so all
    29 exits cost one pass plus 29 LM-head products per prompt.  At exits
    that a trace also stores, this equals :func:`acceptance_profile`'s mean up
    to the half-precision storage of the trace's logits.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
    settings_or_trace : spectheory.lm.Trace or TraceSettings, optional
        The continuations; a ``TraceSettings`` is recorded (or read from the
        cache) with :func:`spectheory.lm.record_trace`.  Default: the default
        settings.
    temperatures : sequence of float >= 0
    layers : sequence of int in [1, num_layers)

    Returns
    -------
    CapacityProfile
    """
    import torch

    from .trace import Trace, TraceSettings, record_trace

    if settings_or_trace is None or isinstance(settings_or_trace, TraceSettings):
        trace = record_trace(settings_or_trace, loaded=loaded, progress=False)
    elif isinstance(settings_or_trace, Trace):
        trace = settings_or_trace
    else:
        raise InvalidParameterError(
            f"settings_or_trace must be a Trace or TraceSettings; got {type(settings_or_trace)!r}"
        )
    temps = [check_temperature(t, "temperatures") for t in np.atleast_1d(temperatures).tolist()]
    if not temps:
        raise InvalidParameterError("temperatures must not be empty")
    layer_arr = _check_layers(layers, loaded.num_layers)
    model = loaded.model
    sums, counts, pids = [], [], []
    with torch.no_grad():
        for pid, hs in teacher_forced_hidden(loaded, trace):
            target = model.get_output_embeddings()(hs[-1])
            p = [_torch_probs(target, T) for T in temps]
            row = np.zeros((len(temps), layer_arr.size))
            for k, L in enumerate(layer_arr.tolist()):
                z = early_exit_logits(model, hs, L)
                for m, T in enumerate(temps):
                    row[m, k] = torch.minimum(p[m], _torch_probs(z, T)).sum(-1).sum().item()
            sums.append(row)
            counts.append(int(target.shape[0]))
            pids.append(pid)
    sums = np.stack(sums, axis=-1)  # (M, K, P)
    counts = np.asarray(counts, dtype=np.int64)
    return CapacityProfile(
        layers=layer_arr,
        temperatures=np.asarray(temps),
        acceptance=sums.sum(-1) / counts.sum(),
        per_prompt=sums / counts,
        positions=counts,
        prompt_ids=tuple(pids),
        parameters=np.array([draft_parameter_count(loaded, int(L)) for L in layer_arr]),
        model=loaded.name,
        embedding_parameters=int(loaded.model.get_input_embeddings().weight.numel()),
    )


@dataclass(frozen=True)
class CapacityLaw:
    r"""The measured capacity law of the early-exit drafts (:func:`capacity_law`).

    Attributes
    ----------
    profile : CapacityProfile
        The data: :math:`\bar\beta(L, T)` and the parameter counts.
    fits_parameters : dict {float: LogLinearFit}
        Per temperature, :math:`\bar\beta = a + b \log_{10} N_{draft}`.
    fits_layers : dict {float: LogLinearFit}
        Per temperature, :math:`\bar\beta = a + b \log_{10} L`.
    """

    profile: CapacityProfile
    fits_parameters: dict
    fits_layers: dict

    def comparison_text(self) -> str:
        """The fits beside the published slopes (Leviathan Table 3 fits, docs/theory.md §6.2)."""
        prof = self.profile
        lines = [
            f"Measured capacity law: {prof.model} early-exit drafts "
            f"(L = {prof.layers.min()}..{prof.layers.max()}, "
            f"{int(prof.positions.sum())} positions, {len(prof.prompt_ids)} prompts)",
            "  acceptance = a + b log10(draft parameters)   [95% bootstrap CI]",
        ]
        for T, fit in self.fits_parameters.items():
            lines.append(
                f"  T = {T:g}: a = {fit.intercept:+.3f} [{fit.intercept_ci[0]:+.3f}, "
                f"{fit.intercept_ci[1]:+.3f}], b = {fit.slope:.3f} per decade "
                f"[{fit.slope_ci[0]:.3f}, {fit.slope_ci[1]:.3f}], R^2 = {fit.r_squared:.3f}"
            )
        for T, fit in self.fits_layers.items():
            lines.append(
                f"  T = {T:g}: per decade of exit layer L: b = {fit.slope:.3f} "
                f"[{fit.slope_ci[0]:.3f}, {fit.slope_ci[1]:.3f}], R^2 = {fit.r_squared:.3f}"
            )
        lo, hi = prof.parameters.min(), prof.parameters.max()
        lines.append(
            f"  The drafts span {lo / 1e6:.1f}M..{hi / 1e6:.1f}M parameters "
            f"({np.log10(hi / lo):.2f} decades; the "
            f"{prof.embedding_parameters / 1e6:.1f}M-parameter embedding is shared by all)."
        )
        from ..solvers.scaling import leviathan_capacity_slopes

        pub = ", ".join(f"{k}: {v:.3f}" for k, v in leviathan_capacity_slopes().items())
        lines.append(
            "  Published (separately trained drafts; log-linear fits of Leviathan et al. "
            f"Table 3, docs/theory.md §6.2): {pub}; about +0.07..0.09 per decade."
        )
        for T, fit in self.fits_parameters.items():
            ratio = fit.slope / 0.08
            if fit.slope_ci[0] > 0.09:
                verdict = f"steeper than the published range ({ratio:.1f}x the mid-point 0.08)"
            elif fit.slope_ci[1] < 0.07:
                verdict = f"flatter than the published range ({ratio:.2f}x the mid-point 0.08)"
            else:
                verdict = "consistent with the published range (CI overlaps 0.07..0.09)"
            lines.append(f"  T = {T:g}: measured slope {fit.slope:.3f} per decade is {verdict}.")
        lines.append(
            "  Caveat: early-exit drafts are not separately trained models (they share the "
            "embedding, norm and head, and the exit is untrained), so the per-decade slope is "
            "not comparable one-to-one with laws for trained drafts (Scylla, arXiv 2505.07858)."
        )
        return "\n".join(lines)


def capacity_law(
    loaded,
    settings_or_trace=None,
    temperatures=(0.7, 1.0),
    layers=range(1, 30),
    *,
    n_boot=2000,
    seed=0,
):
    r"""Fit the capacity law :math:`\bar\beta = a + b \log_{10} x` of the early-exit drafts.

    :math:`x` is the draft parameter count (:func:`draft_parameter_count`)
    and, separately, the exit layer :math:`L`; :math:`\bar\beta(L, T)` comes
    from :func:`capacity_profile`.  Fits use
    :func:`spectheory.solvers.scaling.fit_log_linear` (OLS, percentile
    bootstrap intervals over the layers, ``n_boot`` resamples, ``seed``).
    Compare with the published +0.07 to 0.09 per decade (docs/theory.md §6.1/6.2;
    Leviathan et al. arXiv 2211.17192 Table 3; Scylla arXiv 2505.07858).

    Returns
    -------
    CapacityLaw
    """
    from ..solvers.scaling import fit_log_linear

    prof = capacity_profile(loaded, settings_or_trace, temperatures, layers)
    fp, fl = {}, {}
    for m, T in enumerate(prof.temperatures.tolist()):
        y = prof.acceptance[m]
        fp[T] = fit_log_linear(prof.parameters, y, n_boot=n_boot, seed=seed)
        fl[T] = fit_log_linear(prof.layers, y, n_boot=n_boot, seed=seed)
    return CapacityLaw(profile=prof, fits_parameters=fp, fits_layers=fl)
