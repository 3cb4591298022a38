r"""Draft logits along drafted paths on top of one cached context (what tree drafting needs).

A tree drafter asks for the draft's next-token logits after ``context + path``
for many short paths sharing one context (:class:`spectheory.trees.lm.LMTreeModels`).
The target runs each path on a copy of the context's key-value cache, with
hidden states; a *path draft* turns that forward (or its own) into the
draft's logits after every prefix of the path:

``start(context, out)``
    Called once with the context's ids and the target's forward over them;
    returns the logits ``(V,)`` after the context.
``extend(path, out)``
    ``out`` is the target's forward over ``path`` on top of the context;
    returns the logits ``(len(path), V)`` after ``context + path[:j+1]``.

The draft's own state (a key-value cache of the context) is never altered by
``extend``: paths branch from the same context.  One class per way of
computing a draft; each draft kind of :mod:`spectheory.lm.draft_kinds` picks
one.  Logits are float64 numpy arrays (``-inf`` for tokens a draft cannot
propose).
"""

from __future__ import annotations

import copy

import numpy as np

from ._kv import cache_kwargs, cache_of

__all__ = ["AdapterPathDraft", "ExitPathDraft", "ModelPathDraft", "NgramPathDraft"]


def _np(z):
    return z.detach().double().numpy()


class ExitPathDraft:
    """``exit:L``: the target's final norm and head on layer ``L``'s hidden state of its forward."""

    def __init__(self, model, layer: int):
        self.model, self.layer = model, int(layer)

    def _logits(self, out, rows):
        import torch

        from .drafts import early_exit_logits

        hidden = tuple(h[0, rows] for h in out.hidden_states)
        with torch.no_grad():
            return _np(early_exit_logits(self.model, hidden, self.layer))

    def start(self, context, out):
        return self._logits(out, slice(-1, None))[0]  # the head on the last position only

    def extend(self, path, out):
        return self._logits(out, slice(None))


def _copy_tree(tree):
    """A copy of nested dicts of tensors (the tensors are shared: the adapter never edits them)."""
    return {k: _copy_tree(v) if isinstance(v, dict) else v for k, v in tree.items()}


class AdapterPathDraft:
    """``adapter:L``: the adapter on layer ``L``'s hidden state of the target's forward.

    The adapter's own attention keeps the context's key-value tensors and
    extends a copy of them along each path.
    """

    def __init__(self, adapter):
        self.adapter = adapter

    def _logits(self, out, start, cache):
        import torch

        h = out.hidden_states[int(self.adapter.layer)]
        pos = torch.arange(start, start + h.shape[1])[None]
        with torch.no_grad():
            return _np(self.adapter.full_logits(self.adapter.subset_logits(h, pos, cache))[0])

    def start(self, context, out):
        self.ctx_len, self.cache = len(context), {}
        return self._logits(out, 0, self.cache)[-1]

    def extend(self, path, out):
        return self._logits(out, self.ctx_len, _copy_tree(self.cache))


class ModelPathDraft:
    """A network of its own (``quant:TYPE``, ``lm:PATH``): its own cache of the context.

    Parameters
    ----------
    net : transformers causal LM
        Run on the context once, then on each path over a copy of that cache.
    """

    def __init__(self, net):
        self.net = net

    def start(self, context, out):
        import torch

        with torch.no_grad():
            own = self.net(input_ids=torch.as_tensor(np.asarray(context))[None], use_cache=True)
        self.past = cache_of(own)
        return _np(own.logits[0, -1])

    def extend(self, path, out):
        import torch

        with torch.no_grad():
            own = self.net(
                input_ids=torch.tensor([list(path)], dtype=torch.long),
                **cache_kwargs(self.net, copy.deepcopy(self.past)),  # the context's stays intact
                use_cache=True,
            )
        return _np(own.logits[0])


class NgramPathDraft:
    """``ngram:K``: the n-gram lookup of :func:`~spectheory.lm.ngram_distribution`, ``log q``."""

    def __init__(self, order: int, vocab_size: int):
        self.order, self.vocab_size = int(order), int(vocab_size)

    def _log(self, tokens):
        from .drafts import ngram_distribution

        with np.errstate(divide="ignore"):
            return np.log(ngram_distribution(tokens, self.vocab_size, self.order))

    def start(self, context, out):
        self.context = [int(t) for t in context]
        return self._log(self.context)

    def extend(self, path, out):
        seq = self.context + [int(t) for t in path]
        n = len(self.context)
        return np.stack([self._log(seq[: n + j + 1]) for j in range(len(path))])
