"""Where a Hugging Face causal LM keeps its decoder blocks and final norm, and shallow copies.

Early-exit and adapter drafts run the target's first ``L`` decoder blocks.
Architectures name them differently (``model.layers`` in Llama, Mistral,
Qwen2/3, Gemma, Phi; ``transformer.h`` in GPT-2, GPT-J, Bloom, Falcon;
``gpt_neox.layers`` in GPT-NeoX; ``model.decoder.layers`` in OPT), so they are
found by attribute path (:data:`LAYER_PATHS`), like the final norm
(:func:`spectheory.lm.drafts.exit_head`).

:func:`shallow_model` builds a causal LM of the target's own class with
``L`` layers, on the meta device (nothing allocated), whose modules *are* the
target's: the blocks ``0..L-1``, the embeddings, the final norm and the head.
It runs with its own key-value cache, and its logits are
:math:`W_{\\mathrm{head}}\\,\\mathrm{norm}(h_L)`, the early-exit draft of
LayerSkip (Elhoushi et al., arXiv 2404.16710).
"""

from __future__ import annotations

import copy

from .._errors import InvalidParameterError
from .drafts import _FINAL_NORMS

__all__ = ["LAYER_PATHS", "decoder_layers", "final_norm_path", "parameter_count", "shallow_model"]

#: Attribute paths of the decoder blocks (a ``ModuleList``), by architecture family.
LAYER_PATHS = (
    ("model", "layers"),  # Llama, Mistral, Qwen2/3, Gemma, SmolLM, Phi, OLMo
    ("transformer", "h"),  # GPT-2, GPT-J, Bloom, Falcon, CodeGen
    ("gpt_neox", "layers"),  # GPT-NeoX, Pythia
    ("model", "decoder", "layers"),  # OPT
)


def _walk(model, path):
    obj = model
    for attr in path:
        obj = getattr(obj, attr, None)
        if obj is None:
            return None
    return obj


def decoder_layers(model) -> tuple[tuple[str, ...], object]:
    """``(path, blocks)``: the attribute path and the ``ModuleList`` of the decoder blocks.

    Raises
    ------
    InvalidParameterError
        An architecture whose blocks are not at a known place (naming the class).
    """
    import torch

    for path in LAYER_PATHS:
        obj = _walk(model, path)
        if isinstance(obj, torch.nn.ModuleList):
            return path, obj
    raise InvalidParameterError(
        f"cannot find the decoder blocks of a {type(model).__name__} (looked for "
        f"{', '.join('.'.join(p) for p in LAYER_PATHS)}); early-exit and adapter drafts need them"
    )


def final_norm_path(model) -> tuple[str, ...]:
    """Attribute path of the final norm (the one :func:`~spectheory.lm.drafts.exit_head` uses)."""
    for path in _FINAL_NORMS:
        obj = _walk(model, path)
        if obj is not None and callable(obj):
            return path
    raise InvalidParameterError(
        f"cannot find the final norm of a {type(model).__name__} (looked for "
        f"{', '.join('.'.join(p) for p in _FINAL_NORMS)}); early-exit drafts need it"
    )


def shallow_model(model, layer: int, *, final_norm: bool = True):
    """A causal LM of ``model``'s class running its first ``layer`` blocks (no weight copied).

    Built on the meta device from a copy of the config with
    ``num_hidden_layers = layer``; then, along the path to the blocks
    (:func:`decoder_layers`), every module is replaced by the target's own
    (embeddings, rotary embedding, final norm, head) and the blocks by the
    target's first ``layer``.

    Parameters
    ----------
    model : transformers causal LM
    layer : int, 1 <= layer <= num_hidden_layers
    final_norm : bool
        ``False`` replaces the final norm by the identity (the output is
        :math:`h_L` itself: an adapter comes before the norm).

    Returns
    -------
    transformers causal LM, eval mode
    """
    import torch

    path, blocks = decoder_layers(model)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= len(blocks):
        raise InvalidParameterError(
            f"layer must be an integer in [1, {len(blocks)}]; got {layer!r}"
        )
    cfg = copy.deepcopy(model.config)
    cfg.num_hidden_layers = layer
    if isinstance(getattr(cfg, "layer_types", None), list):
        cfg.layer_types = cfg.layer_types[:layer]
    with torch.device("meta"):
        draft = type(model)(cfg)
    src, dst = model, draft
    for depth, attr in enumerate(path):
        for name, _ in list(dst.named_children()):
            if name != attr:
                setattr(dst, name, getattr(src, name))
        if depth == len(path) - 1:
            setattr(dst, attr, torch.nn.ModuleList(list(blocks[:layer])))
        else:
            src, dst = getattr(src, attr), getattr(dst, attr)
    if not final_norm:
        *parent, name = final_norm_path(draft)
        setattr(_walk(draft, parent), name, torch.nn.Identity())
    draft.eval()
    left = [n for n, t in (*draft.named_parameters(), *draft.named_buffers()) if t.is_meta]
    if left:  # a module outside the path to the blocks that the target does not share
        raise InvalidParameterError(
            f"cannot build a shallow {type(model).__name__}: tensors {left[:3]} are not the "
            f"target's"
        )
    return draft


def parameter_count(*modules) -> int:
    """Parameters of ``modules``, each tensor counted once (tied weights, shared blocks)."""
    seen, total = set(), 0
    for mod in modules:
        for prm in mod.parameters():
            if prm.data_ptr() not in seen:
                seen.add(prm.data_ptr())
                total += prm.numel()
    return int(total)
