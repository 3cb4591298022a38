"""Objects that run one draft step at a time with a cache, for timing (:mod:`spectheory.lm.cost`).

Each has ``prefill(ids)`` (fill the cache with a context) and ``step(tok)`` (one new
token on it); the draft kinds of :mod:`spectheory.lm.draft_kinds` build them.
"""

from __future__ import annotations

from ._kv import cache_kwargs, cache_of

__all__ = ["AdapterCostStepper", "HFStepper"]


class HFStepper:
    """Times a Hugging Face causal LM (target, shallow exit, quantised copy) with its cache.

    ``prefill(ids)`` fills the cache with a context; ``step(tok)`` runs one
    new token on it (each draft kind's cost stepper has these two methods).
    """

    def __init__(self, net):
        self.net = net

    def prefill(self, ids):
        self.past = cache_of(self.net(input_ids=ids, use_cache=True))

    def step(self, tok):
        out = self.net(input_ids=tok, **cache_kwargs(self.net, self.past), use_cache=True)
        self.past = cache_of(out)
        return out.logits[0, -1, 0].item()


class AdapterCostStepper:
    """The adapter draft as it would run: ``L`` shared layers, adapter, norm, subset head."""

    def __init__(self, model, adapter):
        from .layout import shallow_model

        self.adapter = adapter
        # keep h_L: the adapter comes before the final norm
        self.trunk = shallow_model(model, int(adapter.layer), final_norm=False).base_model

    def prefill(self, ids):
        import torch

        out = self.trunk(input_ids=ids, use_cache=True)
        self.past, self.cache, self.n = cache_of(out), {}, ids.shape[1]
        pos = torch.arange(self.n)[None]
        self.adapter.subset_logits(out.last_hidden_state, pos, self.cache)

    def step(self, tok):
        import torch

        out = self.trunk(input_ids=tok, **cache_kwargs(self.trunk, self.past), use_cache=True)
        self.past = cache_of(out)
        pos = torch.arange(self.n, self.n + tok.shape[1])[None]
        z = self.adapter.subset_logits(out.last_hidden_state, pos, self.cache)
        self.n += tok.shape[1]
        return z[0, -1, 0].item()
