r"""The cost of a draft: its parameters, and its step time against the target's on this CPU.

- :func:`draft_parameter_count`: parameters of a draft (for ``exit:L`` the
  embedding, ``L`` decoder layers, final norm and LM head; tied weights once).
- :func:`measure_cost_ratio`: the cost ratio :math:`c = t_d / t_t` of a draft,
  **measured on this machine's CPU** (the :math:`c` of Leviathan et al.,
  arXiv 2211.17192, Section 3.4).

Both go through the draft-kind registry (:mod:`spectheory.lm.draft_kinds`):
each kind says how to time one step of its draft and which parameters it
has, or refuses with an error naming the kind (an n-gram lookup has no
forward pass to time).
"""

from __future__ import annotations

import numbers
import statistics
import time
from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError
from .._validate import check_positive_int
from ._loader import require_cpu
from .steppers import AdapterCostStepper, HFStepper

__all__ = [
    "AdapterCostStepper",
    "CostRatio",
    "HFStepper",
    "draft_parameter_count",
    "measure_cost_ratio",
]


def draft_parameter_count(loaded, layer) -> int:
    """Parameters of a draft, each tensor counted once.

    For ``exit:L`` (or an integer ``L``): the embeddings, the first ``L``
    decoder blocks, the final norm and the LM head (SmolLM2 ties the head to
    the embedding: counted once); ``L = num_layers`` gives the target.  For
    ``adapter:L`` (or an :class:`~spectheory.lm.adapters.Adapter`): that plus
    its trained module (a vocabulary subset uses rows of the head already
    counted).  For ``quant:TYPE``: the target's count (the same tensors at
    fewer bits).  For ``lm:PATH``: the draft model's.  The kinds without
    parameters (``ngram:K``, ``logits:NAME``) are refused
    (:mod:`spectheory.lm.draft_kinds`).

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
    layer : int in [1, num_layers], draft specification, or Adapter

    Returns
    -------
    int
    """
    from .draft_kinds import resolve_draft

    kind, arg = resolve_draft(loaded, layer, allow_target=True)
    return kind.parameters(loaded, arg)


@dataclass(frozen=True)
class CostRatio:
    r"""Result of :func:`measure_cost_ratio` (a CPU wall-clock measurement).

    Attributes
    ----------
    c : float
        :math:`t_d / t_t`: median draft step time over median target step time.
    layer : int
        Decoder layers the draft runs (``L`` for exit and adapter drafts, all
        of them for a quantised copy or a separate draft model).
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
        The draft timed (``"exit:L"``, ``"adapter:L"``, ``"quant:TYPE"``, ``"lm:PATH"``).
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


def measure_cost_ratio(loaded, layer, *, repeats: int = 30, context: int = 64, warmup=5):
    r"""Measure :math:`c = t_d / t_t` of a draft on this CPU.

    :math:`t_d` is the wall-clock time of one draft forward on one new token
    with a key-value cache: for ``exit:L`` the first ``L`` decoder layers +
    final norm + LM head; for ``adapter:L`` the first ``L`` layers + the
    adapter (with its own cache) + final norm + the head rows of its
    vocabulary subset (what the draft really computes); for ``quant:TYPE``
    the whole de-quantised copy of the target; for ``lm:PATH`` the separate
    draft model (its own cache).  :math:`t_t` is that of one
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
        An exit layer, a draft specification of a kind with a forward pass
        (``"exit:L"``, ``"adapter:L"``, ``"quant:TYPE"``, ``"lm:PATH"``; an
        ``"ngram:K"`` or ``"logits:NAME"`` draft is refused, naming the kind),
        or an :class:`spectheory.lm.adapters.Adapter`.
    repeats : int >= 1
    context : int >= 1
        Length of the cached context (tokens of a fixed pseudo-random sequence).
    warmup : int >= 0

    Returns
    -------
    CostRatio
    """
    import torch

    require_cpu(loaded, "measure_cost_ratio")
    if isinstance(layer, bool):
        raise InvalidParameterError(f"layer must be an integer or a draft; got {layer!r}")
    repeats = check_positive_int(repeats, "repeats")
    context = check_positive_int(context, "context")
    if isinstance(warmup, bool) or not isinstance(warmup, numbers.Integral) or warmup < 0:
        raise InvalidParameterError(f"warmup must be an integer >= 0; got {warmup!r}")
    from .draft_kinds import resolve_draft

    kind, arg = resolve_draft(loaded, layer)
    draft, L = kind.cost_stepper(loaded, arg)
    target = HFStepper(loaded.model)
    rng = np.random.default_rng(0)
    lo = min(100, loaded.vocab_size // 4)  # away from the special tokens of small vocabularies
    ids = torch.as_tensor(rng.integers(lo, loaded.vocab_size - lo, size=(1, context + 1)))
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
        draft=kind.label(arg),
    )
