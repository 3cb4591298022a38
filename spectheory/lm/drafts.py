"""Draft models that share the target's vocabulary: early exit and n-gram lookup.

Drafts are named by short specifications so that traces and command lines can
refer to them:

``"exit:L"``
    Self-speculative early exit (LayerSkip, arXiv 2404.16710; DEL; SWIFT): the
    hidden state after the first ``L`` decoder layers, then the target's own
    final norm and LM head.
``"ngram:K"``
    Model-free lookup in the context (as in prompt-lookup decoding): the
    next-token counts after earlier occurrences of the last ``K - 1`` tokens,
    backing off to shorter suffixes, and to the context's unigram counts.
``"adapter:L"``
    Trained early exit: layer ``L``'s hidden state through a small trained
    adapter, then the target's final norm and LM head (possibly on a
    vocabulary subset); the adapter is read from the cache
    (:mod:`.adapters`, trained by ``spectheory draft train --layer L``).
``"quant:TYPE"``
    The target itself with its weights re-quantised to the GGUF type
    ``TYPE`` (for example ``Q4_0``) and de-quantised (:mod:`.quantised`).
``"lm:PATH"``
    A separate causal LM sharing the target's tokenizer: a local Hugging
    Face folder or a ``.gguf`` file (:mod:`.draft_lm`).
``"logits:NAME"``
    Logits recorded elsewhere and stored in a trace built from arrays
    (:meth:`spectheory.lm.Trace.from_arrays`).
"""

from __future__ import annotations

import re

import numpy as np

from .._errors import InvalidParameterError

__all__ = ["STORED_KINDS", "early_exit_logits", "exit_head", "ngram_distribution", "parse_draft"]

_SPEC = re.compile(r"^(exit|ngram|adapter):(\d+)$")
_QUANT = re.compile(r"^quant:([A-Z][A-Z0-9_]*)$")
_NAMED = re.compile(r"^(lm|logits):(\S.*)$")

#: Draft kinds whose logits a trace stores (the n-gram draft is rebuilt from tokens).
STORED_KINDS = ("exit", "adapter", "quant", "lm", "logits")


def parse_draft(spec: str, num_layers: int | None = None) -> tuple[str, int | str]:
    """Split a draft specification into ``(kind, number)`` and check the number.

    ``"quant:TYPE"`` gives ``("quant", "TYPE")`` (the GGUF type name is
    checked when the draft is built).

    >>> parse_draft("exit:12", num_layers=30)
    ('exit', 12)
    >>> parse_draft("adapter:8")
    ('adapter', 8)
    >>> parse_draft("quant:Q4_0")
    ('quant', 'Q4_0')
    >>> parse_draft("lm:/models/draft")
    ('lm', '/models/draft')
    """
    if isinstance(spec, str) and (mq := _QUANT.match(spec)) is not None:
        return "quant", mq.group(1)
    if isinstance(spec, str) and (mn := _NAMED.match(spec)) is not None:
        return mn.group(1), mn.group(2)
    m = _SPEC.match(spec) if isinstance(spec, str) else None
    if m is None:
        raise InvalidParameterError(
            f"draft must look like 'adapter:L', 'quant:TYPE', 'exit:L', 'ngram:K', 'lm:PATH' "
            f"or 'logits:NAME'; got {spec!r}"
        )
    kind, k = m.group(1), int(m.group(2))
    if kind == "adapter" and not (1 <= k and (num_layers is None or k < num_layers - 1)):
        top = "" if num_layers is None else f" and < {num_layers - 1}"
        raise InvalidParameterError(f"adapter exit layer must be >= 1{top}; got {spec!r}")
    if kind == "exit" and not (1 <= k and (num_layers is None or k < num_layers)):
        top = "" if num_layers is None else f" and < {num_layers} (the target's layer count)"
        raise InvalidParameterError(f"early-exit layer must be >= 1{top}; got {spec!r}")
    if kind == "ngram" and k < 1:
        raise InvalidParameterError(f"n-gram order must be >= 1; got {spec!r}")
    return kind, k


#: Where causal-LM architectures keep the final norm applied before the LM head.
_FINAL_NORMS = (
    ("model", "norm"),  # Llama, Mistral, Qwen2/3, Gemma, SmolLM, Phi-3, OLMo
    ("transformer", "ln_f"),  # GPT-2, GPT-J, Bloom, Falcon, CodeGen
    ("gpt_neox", "final_layer_norm"),  # GPT-NeoX, Pythia
    ("model", "decoder", "final_layer_norm"),  # OPT
    ("model", "final_layernorm"),  # Phi-1/2
)


def exit_head(model):
    """The final norm and the LM head of a Hugging Face causal LM: ``(norm, head)``.

    The norm is found by architecture (:data:`_FINAL_NORMS`, the attribute
    paths of Llama-, GPT-2-, GPT-NeoX-, OPT- and Phi-style models), the head
    is ``model.get_output_embeddings()``; the number of layers comes from
    ``model.config.num_hidden_layers``.

    Raises
    ------
    InvalidParameterError
        An architecture whose final norm is not at a known place.
    """
    for path in _FINAL_NORMS:
        obj = model
        for attr in path:
            obj = getattr(obj, attr, None)
            if obj is None:
                break
        if obj is not None and callable(obj):
            return obj, model.get_output_embeddings()
    raise InvalidParameterError(
        f"cannot find the final norm of a {type(model).__name__} (looked for "
        f"{', '.join('.'.join(p) for p in _FINAL_NORMS)}); early-exit drafts need it"
    )


def early_exit_logits(model, hidden_states, layer: int):
    """Logits of the early-exit draft after ``layer`` decoder layers.

    Parameters
    ----------
    model : transformers causal LM
        Its final norm and LM head (:func:`exit_head`) are reused, frozen.
    hidden_states : tuple of tensors
        ``output_hidden_states=True`` output: entry 0 is the embeddings, entry
        ``l`` the output of layer ``l`` (the last entry is already normed).
    layer : int, 1 <= layer < num_layers

    Returns
    -------
    torch.Tensor, (..., V)
    """
    norm, head = exit_head(model)
    return head(norm(hidden_states[layer]))


def ngram_distribution(context, vocab_size: int, order: int = 3) -> np.ndarray:
    """Next-token distribution of the n-gram lookup draft.

    With ``s`` the last ``m = order - 1`` tokens of ``context``, count the
    tokens that followed earlier occurrences of ``s``; if there are none, try
    ``m - 1``, ..., 1; if no suffix recurs, use the unigram counts of the
    context.  The result is a distribution with zeros (no smoothing): a
    draft token is always drawn from it, so verifiers see its true law.

    Parameters
    ----------
    context : sequence of int
        Token ids so far (prompt and continuation), non-empty.
    vocab_size : int
    order : int >= 1

    Returns
    -------
    ndarray, float64, (vocab_size,)

    Examples
    --------
    >>> ngram_distribution([5, 6, 7, 5, 6, 9, 5, 6], vocab_size=10, order=3)[[7, 9]].tolist()
    [0.5, 0.5]
    """
    ctx = np.asarray(context, dtype=np.int64)
    if ctx.ndim != 1 or ctx.size == 0:
        raise InvalidParameterError("context must be a non-empty 1-D sequence of token ids")
    counts = np.zeros(vocab_size)
    for m in range(min(order - 1, ctx.size - 1), 0, -1):
        suffix = ctx[-m:]
        windows = np.lib.stride_tricks.sliding_window_view(ctx[:-1], m)
        hits = np.flatnonzero((windows == suffix).all(axis=1))
        if hits.size:
            np.add.at(counts, ctx[hits + m], 1.0)
            return counts / counts.sum()
    np.add.at(counts, ctx, 1.0)
    return counts / counts.sum()
