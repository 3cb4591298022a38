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
"""

from __future__ import annotations

import re

import numpy as np

from .._errors import InvalidParameterError

__all__ = ["STORED_KINDS", "early_exit_logits", "ngram_distribution", "parse_draft"]

_SPEC = re.compile(r"^(exit|ngram|adapter):(\d+)$")
_QUANT = re.compile(r"^quant:([A-Z][A-Z0-9_]*)$")

#: Draft kinds whose logits a trace stores (the n-gram draft is rebuilt from tokens).
STORED_KINDS = ("exit", "adapter", "quant")


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
    """
    if isinstance(spec, str) and (mq := _QUANT.match(spec)) is not None:
        return "quant", mq.group(1)
    m = _SPEC.match(spec) if isinstance(spec, str) else None
    if m is None:
        raise InvalidParameterError(
            f"draft must look like 'adapter:L', 'quant:TYPE', 'exit:L' or 'ngram:K'; got {spec!r}"
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


def early_exit_logits(model, hidden_states, layer: int):
    """Logits of the early-exit draft after ``layer`` decoder layers.

    Parameters
    ----------
    model : transformers Llama-style causal LM
        Its ``model.norm`` (final RMSNorm) and ``lm_head`` are reused, frozen.
    hidden_states : tuple of tensors
        ``output_hidden_states=True`` output: entry 0 is the embeddings, entry
        ``l`` the output of layer ``l`` (the last entry is already normed).
    layer : int, 1 <= layer < num_layers

    Returns
    -------
    torch.Tensor, (..., V)
    """
    return model.lm_head(model.model.norm(hidden_states[layer]))


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
