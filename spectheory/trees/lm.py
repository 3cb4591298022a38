r"""Target and draft laws at tree nodes from a real causal LM, cached by path.

:class:`LMTreeModels` holds one context (prompt ids and any continuation).
``target(path)`` and ``draft(path)`` are the model functions of
:mod:`spectheory.trees.models` for the paths drafted after it: on a cache miss
the target runs the path's tokens on top of the context's KV cache, with
hidden states, and the rows of *every* prefix of the path (target logits and
the draft's logits at each position) are processed
(:func:`spectheory.process_logits`, the same settings for both, docs/theory.md §0)
and cached.  One forward per new path; a tree of ``N`` nodes needs at most
``N`` of them.

Drafts are given by specification strings (:func:`spectheory.lm.parse_draft`).
``"exit:L"`` (self-speculative early exit, the target's own norm and head on
layer ``L``'s hidden state) is computed from the same forward as the target;
so is the trained ``"adapter:L"`` (:mod:`spectheory.lm.adapters`, from the
cache), whose own attention keeps the context's key-value tensors and extends
a copy of them along each path.  Other kinds (``"ngram:K"``,
``"quant:TYPE"``) are step-wise drafters with their own state and are
refused here with an error naming the supported kinds.
"""

from __future__ import annotations

import copy

import numpy as np

from .._errors import InvalidParameterError
from ..distributions import process_logits
from ..lm.drafts import early_exit_logits, parse_draft

__all__ = ["LMTreeModels", "chat_context"]


def _copy_tree(tree):
    """A copy of nested dicts of tensors (the tensors are shared: the adapter never edits them)."""
    return {k: _copy_tree(v) if isinstance(v, dict) else v for k, v in tree.items()}


def chat_context(loaded, prompt: str) -> np.ndarray:
    """Token ids of ``prompt`` in the model's chat template, ready for generation."""
    import torch

    ids = loaded.tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, return_tensors="pt"
    )
    ids = ids if torch.is_tensor(ids) else ids["input_ids"]
    return ids[0].numpy().astype(np.int64)


class LMTreeModels:
    """Target and early-exit draft next-token laws after ``context + path``.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
    context : array_like of int, shape (C,)
        Token ids before the drafted paths (non-empty).
    draft : str or spectheory.lm.adapters.Adapter
        Draft specification, ``"exit:L"`` with ``1 <= L < num_layers`` or
        ``"adapter:L"`` (the cached adapter), or an adapter object.
    temperature, top_k, top_p
        Processing applied to both models (:func:`spectheory.process_logits`).

    Attributes
    ----------
    forwards : int
        Forward passes run so far (the context's included).
    """

    def __init__(self, loaded, context, draft: str = "exit:15", *, temperature=1.0, top_k=None,
                 top_p=None):  # fmt: skip
        import torch

        self.adapter = None
        if hasattr(draft, "subset_logits"):  # an Adapter object
            kind, layer, self.adapter = "adapter", int(draft.layer), draft
        else:
            kind, layer = parse_draft(draft, loaded.num_layers)
        if kind == "adapter" and self.adapter is None:
            from ..lm.adapters import resolve_adapter

            self.adapter = resolve_adapter(loaded, int(layer))
        if kind not in ("exit", "adapter"):
            raise InvalidParameterError(
                f"tree drafting on the real model supports 'exit:L' and 'adapter:L' drafts (a "
                f"function of the path, computed with the target's forward); got {draft!r}"
            )
        ctx = np.asarray(context, dtype=np.int64)
        if ctx.ndim != 1 or ctx.size == 0:
            raise InvalidParameterError(f"context must be a non-empty 1-D id sequence; got {ctx}")
        self.loaded = loaded
        self.layer = int(layer)
        self.settings = {"temperature": temperature, "top_k": top_k, "top_p": top_p}
        self.rows: dict = {}
        self.forwards = 0
        with torch.no_grad():
            out = loaded.model(
                input_ids=torch.from_numpy(ctx)[None], use_cache=True, output_hidden_states=True
            )
        self.forwards += 1
        self._past = out.past_key_values
        self._ctx_len, self._ctx_cache = ctx.size, {}
        self._store((), out, -1, self._adapter_logits(out, 0, self._ctx_cache))

    def _adapter_logits(self, out, start, cache):
        """The adapter's full-vocabulary logits at every position of ``out`` (or None)."""
        import torch

        if self.adapter is None:
            return None
        h = out.hidden_states[self.layer]
        pos = torch.arange(start, start + h.shape[1])[None]
        with torch.no_grad():
            return self.adapter.full_logits(self.adapter.subset_logits(h, pos, cache))[0]

    def _store(self, path, out, pos, adapter_logits=None):
        import torch

        model = self.loaded.model
        hidden = tuple(h[:, pos] for h in out.hidden_states)
        with torch.no_grad():
            if adapter_logits is None:
                e = early_exit_logits(model, hidden, self.layer)[0].double().numpy()
            else:
                e = adapter_logits[pos].double().numpy()
        t = out.logits[0, pos].double().numpy()
        self.rows[path] = (
            process_logits(t, **self.settings),
            process_logits(e, **self.settings),
        )

    def _run(self, path):
        import torch

        with torch.no_grad():
            out = self.loaded.model(
                input_ids=torch.tensor([list(path)], dtype=torch.long),
                past_key_values=copy.deepcopy(self._past),  # the context's cache stays intact
                use_cache=True,
                output_hidden_states=True,
            )
        self.forwards += 1
        cache = _copy_tree(self._ctx_cache)  # the context's adapter cache stays intact
        z = self._adapter_logits(out, self._ctx_len, cache)
        for j in range(len(path)):
            prefix = tuple(path[: j + 1])
            if prefix not in self.rows:
                self._store(prefix, out, j, z)

    def _row(self, path, which):
        path = tuple(int(t) for t in path)
        if path not in self.rows:
            self._run(path)
        return self.rows[path][which]

    def target(self, path) -> np.ndarray:
        """:math:`p(\\cdot \\mid \\text{context}, \\text{path})`, float64 (V,)."""
        return self._row(path, 0)

    def draft(self, path) -> np.ndarray:
        """:math:`q(\\cdot \\mid \\text{context}, \\text{path})`, float64 (V,)."""
        return self._row(path, 1)
