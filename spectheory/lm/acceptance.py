r"""Per-position acceptance along real continuations, draft capacity, and draft cost.

For a target :math:`p_t` and a draft :math:`q_t` at position :math:`t` of a
recorded continuation, both processed with the same temperature (docs/theory.md
section 0, processing rule), the single-draft acceptance probability is

.. math::

    \beta_t = \sum_x \min\big(p_t(x), q_t(x)\big) = 1 - \mathrm{TV}(p_t, q_t)

(Leviathan et al. [1]_, Theorem 3.5).  Along a continuation, :math:`\beta_t`
is the conditional acceptance of the token drafted at position :math:`t`
given that the ones before it were accepted, when the drafted context is the
recorded one; it drives the renewal simulations of
:mod:`spectheory.sim.draft_length`.

- :func:`acceptance_profile`: :math:`\beta_t` from a trace's stored logits.
- :func:`capacity_profile`: the mean acceptance of *every* early-exit draft
  (exit layer :math:`L = 1, \dots, 29`) at several temperatures, from one
  teacher-forced forward pass per prompt, without storing logits.
- :func:`measure_cost_ratio`: the cost ratio :math:`c = t_d / t_t` of an
  early-exit draft, **measured on this machine's CPU**.
- :func:`draft_parameter_count`: parameters of the early-exit draft
  (embedding, ``L`` decoder layers, final norm, LM head; tied weights once).

References
----------
.. [1] Leviathan, Kalman, Matias. "Fast Inference from Transformers via
   Speculative Decoding". ICML 2023, arXiv:2211.17192.
.. [2] Huang, Guo, Wang. "SpecDec++: Boosting Speculative Decoding via
   Adaptive Candidate Lengths". COLM 2025, arXiv:2405.19715.
.. [3] Elhoushi et al. "LayerSkip: Enabling Early Exit Inference and
   Self-Speculative Decoding". ACL 2024, arXiv:2404.16710.
"""

from __future__ import annotations

import copy
import numbers
import operator
import statistics
import time
from dataclasses import dataclass, field

import numpy as np

from .._errors import InvalidParameterError
from .._validate import check_positive_int
from .drafts import early_exit_logits, parse_draft

__all__ = [
    "AcceptanceProfile",
    "CapacityLaw",
    "CapacityProfile",
    "CostRatio",
    "acceptance_profile",
    "capacity_law",
    "capacity_profile",
    "draft_parameter_count",
    "measure_cost_ratio",
]


def _check_temperature(temperature, name="temperature"):
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise InvalidParameterError(f"{name} must be a real number >= 0; got {temperature!r}")
    if not np.isfinite(temperature) or temperature < 0:
        raise InvalidParameterError(f"{name} must be finite and >= 0; got {temperature!r}")
    return float(temperature)


def _prompt_slices(trace):
    """(prompt id, slice of positions) for each prompt of the trace, in trace order."""
    out = []
    pids = trace.prompt_ids
    start = 0
    n = trace.num_positions
    while start < n:
        stop = start
        while stop < n and pids[stop] == pids[start]:
            stop += 1
        out.append((int(pids[start]), slice(start, stop)))
        start = stop
    return out


@dataclass(frozen=True)
class AcceptanceProfile:
    r"""Per-position acceptance :math:`\beta_t` of one draft along a trace.

    Attributes
    ----------
    beta : tuple of ndarray, float64
        One array per prompt, in the trace's order; ``beta[j][t]`` is
        :math:`\sum_x \min(p_t(x), q_t(x))` at step ``t`` of prompt ``j``'s
        continuation.
    prompt_ids : tuple of int
        The prompt id of each array.
    draft : str
    temperature : float
    """

    beta: tuple
    prompt_ids: tuple
    draft: str
    temperature: float

    @property
    def values(self) -> np.ndarray:
        """All :math:`\\beta_t` concatenated in trace order, float64 (N,)."""
        return np.concatenate(self.beta) if self.beta else np.zeros(0)

    @property
    def mean(self) -> float:
        """Mean acceptance over positions, :math:`\\alpha = E[\\beta]` (Leviathan Cor. 3.6)."""
        return float(self.values.mean())


def _beta_rows(p, q):
    return np.minimum(p, q).sum(axis=-1)


def acceptance_profile(trace, draft: str, temperature: float = 1.0) -> AcceptanceProfile:
    r"""Per-position acceptance of ``draft`` along the trace's continuations.

    .. math::

        \beta_t = \sum_x \min\big(p_t(x), q_t(x)\big),\qquad
        p_t = \mathrm{proc}_T(z^{\mathrm{target}}_t),\;
        q_t = \mathrm{proc}_T(z^{\mathrm{draft}}_t)

    with :math:`\mathrm{proc}_T` = :func:`spectheory.process_logits` at
    ``temperature`` (the same for both models).  The stored logits are
    half precision; they are processed in float64.

    Parameters
    ----------
    trace : spectheory.lm.Trace
    draft : str
        A draft of the trace: ``"exit:L"`` (stored) or ``"ngram:K"`` (rebuilt).
    temperature : float >= 0
        0 gives greedy (one-hot) distributions: :math:`\beta_t \in \{0, 1\}`.

    Returns
    -------
    AcceptanceProfile
    """
    from ..distributions import process_logits

    temperature = _check_temperature(temperature)
    parse_draft(draft)
    betas, pids = [], []
    for pid, sl in _prompt_slices(trace):
        rows = np.arange(sl.start, sl.stop)
        p = process_logits(trace.target_logits[rows].astype(np.float64), temperature)
        q = process_logits(trace.draft_logits(draft, rows), temperature)
        betas.append(_beta_rows(p, q))
        pids.append(pid)
    return AcceptanceProfile(
        beta=tuple(betas), prompt_ids=tuple(pids), draft=draft, temperature=temperature
    )


# --------------------------------------------------------------------------- teacher forcing


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

    order = list(trace.metadata["prompt_order"])
    with torch.no_grad():
        for pid, sl in _prompt_slices(trace):
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
    """

    layers: np.ndarray
    temperatures: np.ndarray
    acceptance: np.ndarray
    per_prompt: np.ndarray = field(repr=False)
    positions: np.ndarray = field(repr=False)
    prompt_ids: tuple = field(repr=False)
    parameters: np.ndarray = field(repr=False)


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
    temps = [_check_temperature(t, "temperatures") for t in np.atleast_1d(temperatures).tolist()]
    if not temps:
        raise InvalidParameterError("temperatures must not be empty")
    layer_arr = _check_layers(layers, loaded.num_layers)
    model = loaded.model
    sums, counts, pids = [], [], []
    with torch.no_grad():
        for pid, hs in teacher_forced_hidden(loaded, trace):
            target = model.lm_head(hs[-1])
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
    )


def draft_parameter_count(loaded, layer: int) -> int:
    """Parameters of the early-exit draft after ``layer`` decoder layers.

    Embedding + the first ``layer`` decoder layers + final norm + LM head,
    each tensor counted once (SmolLM2 ties the LM head to the embedding, so
    it is not counted twice).  For an adapter draft, its trained module is
    added (a vocabulary subset uses rows of the tied matrix already counted).

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
    layer : int, 1 <= layer <= num_layers (``num_layers`` gives the target), or
        ``"exit:L"`` / ``"adapter:L"``, or an :class:`~spectheory.lm.adapters.Adapter`

    Returns
    -------
    int
    """
    extra = []
    if isinstance(layer, str):
        kind, k = parse_draft(layer, loaded.num_layers)
        if kind == "adapter":
            from .adapters import resolve_adapter

            layer = resolve_adapter(loaded, int(k))
        elif kind == "exit":
            layer = int(k)
        else:
            raise InvalidParameterError(
                f"parameters are counted for exit and adapter drafts; got {layer!r}"
            )
    if hasattr(layer, "subset_logits"):  # an Adapter: its module on top of exit:L
        extra, layer = [layer.module], int(layer.layer)
    layer = check_positive_int(layer, "layer")
    if layer > loaded.num_layers:
        raise InvalidParameterError(f"layer must be <= {loaded.num_layers}; got {layer}")
    m = loaded.model
    mods = [m.model.embed_tokens, *m.model.layers[:layer], m.model.norm, m.lm_head, *extra]
    seen, total = set(), 0
    for mod in mods:
        for prm in mod.parameters():
            if prm.data_ptr() not in seen:
                seen.add(prm.data_ptr())
                total += prm.numel()
    return int(total)


# --------------------------------------------------------------------------- cost ratio


@dataclass(frozen=True)
class CostRatio:
    r"""Result of :func:`measure_cost_ratio` (a CPU wall-clock measurement).

    Attributes
    ----------
    c : float
        :math:`t_d / t_t`: median draft step time over median target step time.
    layer : int
    t_draft, t_target : float
        Median seconds of one single-token forward with a key-value cache.
    repeats : int
    context : int
        Tokens in the cache before the timed steps.
    threads : int
        ``torch.get_num_threads()`` during the measurement.
    device : str
        Always ``"cpu"``.
    draft : str
        The draft timed (``"exit:L"``, ``"adapter:L"``, ``"quant:TYPE"``).
    """

    c: float
    layer: int
    t_draft: float
    t_target: float
    repeats: int
    context: int
    threads: int
    device: str = "cpu"
    draft: str = ""


def _shallow_draft(model, layer):
    """A causal LM of the same class sharing the first ``layer`` blocks, norm and head.

    Built on the meta device (no weight allocation), then the target's own
    modules are attached: no parameter is copied.
    """
    import torch

    cfg = copy.deepcopy(model.config)
    cfg.num_hidden_layers = layer
    if isinstance(getattr(cfg, "layer_types", None), list):
        cfg.layer_types = cfg.layer_types[:layer]
    with torch.device("meta"):
        draft = type(model)(cfg)
    draft.model.embed_tokens = model.model.embed_tokens
    draft.model.layers = torch.nn.ModuleList(list(model.model.layers[:layer]))
    draft.model.norm = model.model.norm
    draft.model.rotary_emb = model.model.rotary_emb
    draft.lm_head = model.lm_head
    draft.eval()
    return draft


class _HFStepper:
    """Times a Hugging Face causal LM (target, shallow exit, quantised copy) with its cache."""

    def __init__(self, net):
        self.net = net

    def prefill(self, ids):
        self.past = self.net(input_ids=ids, use_cache=True).past_key_values

    def step(self, tok):
        out = self.net(input_ids=tok, past_key_values=self.past, use_cache=True)
        self.past = out.past_key_values
        return out.logits[0, -1, 0].item()


class _AdapterCostStepper:
    """The adapter draft as it would run: ``L`` shared layers, adapter, norm, subset head."""

    def __init__(self, model, adapter):
        import torch

        self.adapter = adapter
        self.shallow = _shallow_draft(model, adapter.layer)
        self.shallow.model.norm = torch.nn.Identity()  # keep h_L: the adapter comes first

    def prefill(self, ids):
        import torch

        out = self.shallow.model(input_ids=ids, use_cache=True)
        self.past, self.cache, self.n = out.past_key_values, {}, ids.shape[1]
        pos = torch.arange(self.n)[None]
        self.adapter.subset_logits(out.last_hidden_state, pos, self.cache)

    def step(self, tok):
        import torch

        out = self.shallow.model(input_ids=tok, past_key_values=self.past, use_cache=True)
        self.past = out.past_key_values
        pos = torch.arange(self.n, self.n + tok.shape[1])[None]
        z = self.adapter.subset_logits(out.last_hidden_state, pos, self.cache)
        self.n += tok.shape[1]
        return z[0, -1, 0].item()


def _cost_stepper(loaded, draft):
    """(stepper, layer) of the draft named by ``draft`` (int: ``exit:L``)."""
    if isinstance(draft, str):
        kind, k = parse_draft(draft, loaded.num_layers)
        if kind == "exit":
            draft = int(k)
        elif kind == "adapter":
            from .adapters import resolve_adapter

            return _AdapterCostStepper(loaded.model, resolve_adapter(loaded, int(k))), int(k)
        elif kind == "quant":
            from .quantised import quantised_model

            qmodel = quantised_model(loaded, str(k))
            return _HFStepper(qmodel), loaded.num_layers
        else:
            raise InvalidParameterError(
                f"the cost ratio is measured for model drafts (exit, adapter, quant); got {draft!r}"
            )
    if hasattr(draft, "subset_logits"):  # an Adapter object
        return _AdapterCostStepper(loaded.model, draft), int(draft.layer)
    layer = check_positive_int(draft, "layer")
    if layer >= loaded.num_layers:
        raise InvalidParameterError(
            f"layer must be < {loaded.num_layers} (the target's layer count); got {layer}"
        )
    return _HFStepper(_shallow_draft(loaded.model, layer)), layer


def _draft_label(draft, layer):
    return f"adapter:{layer}" if hasattr(draft, "subset_logits") else f"exit:{layer}"


def measure_cost_ratio(loaded, layer, *, repeats: int = 30, context: int = 64, warmup=5):
    r"""Measure :math:`c = t_d / t_t` of a draft on this CPU.

    :math:`t_d` is the wall-clock time of one draft forward on one new token
    with a key-value cache: for ``exit:L`` the first ``L`` decoder layers +
    final norm + LM head; for ``adapter:L`` the first ``L`` layers + the
    adapter (with its own cache) + final norm + the head rows of its
    vocabulary subset (what the draft really computes); for ``quant:TYPE``
    the whole de-quantised copy of the target.  :math:`t_t` is that of one
    target forward (all layers) on one token with a cache.  Both start from a
    cache of ``context`` tokens; steps are interleaved (draft, target, draft,
    ...) so that drifts of the machine hit both alike; after ``warmup``
    untimed steps each, the median of ``repeats`` timings is taken.
    ``torch.set_num_threads`` is left as it is.

    This is a CPU measurement at batch size 1 and is hardware specific: the
    LM head (49,152 x 576) is a large fixed share of a 135M model's step, so
    the early exit's :math:`c` is well above :math:`L / 30`.  On a GPU the
    ratio differs.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
    layer : int, 1 <= layer < num_layers, or str, or Adapter
        An exit layer, a draft specification (``"exit:L"``, ``"adapter:L"``,
        ``"quant:TYPE"``), or an :class:`spectheory.lm.adapters.Adapter`.
    repeats : int >= 1
    context : int >= 1
        Length of the cached context (tokens of a fixed pseudo-random sequence).
    warmup : int >= 0

    Returns
    -------
    CostRatio
    """
    import torch

    if isinstance(layer, bool):
        raise InvalidParameterError(f"layer must be an integer or a draft; got {layer!r}")
    repeats = check_positive_int(repeats, "repeats")
    context = check_positive_int(context, "context")
    if isinstance(warmup, bool) or not isinstance(warmup, numbers.Integral) or warmup < 0:
        raise InvalidParameterError(f"warmup must be an integer >= 0; got {warmup!r}")
    draft, L = _cost_stepper(loaded, layer)
    target = _HFStepper(loaded.model)
    rng = np.random.default_rng(0)
    ids = torch.as_tensor(rng.integers(100, loaded.vocab_size - 100, size=(1, context + 1)))
    times = {"draft": [], "target": []}
    with torch.no_grad():
        for net in (draft, target):
            net.prefill(ids[:, :context])
        tok = ids[:, context:]
        for i in range(int(warmup) + repeats):
            for name, net in (("draft", draft), ("target", target)):
                t0 = time.perf_counter()
                net.step(tok)
                dt = time.perf_counter() - t0
                if i >= warmup:
                    times[name].append(dt)
    td, tt = statistics.median(times["draft"]), statistics.median(times["target"])
    return CostRatio(
        c=td / tt,
        layer=L,
        t_draft=td,
        t_target=tt,
        repeats=repeats,
        context=context,
        threads=int(torch.get_num_threads()),
        draft=layer if isinstance(layer, str) else _draft_label(layer, L),
    )


# --------------------------------------------------------------------------- capacity law



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
            "Measured capacity law: SmolLM2-135M-Instruct early-exit drafts "
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
            f"({np.log10(hi / lo):.2f} decades; the tied 28.3M embedding is shared by all)."
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
