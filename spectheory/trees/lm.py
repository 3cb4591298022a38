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

Drafts are given by specification strings (:func:`spectheory.lm.parse_draft`) or
adapter objects; each draft kind's tree-node forward comes from the registry
(:meth:`spectheory.lm.draft_kinds.DraftKind.path_draft`,
:mod:`spectheory.lm.path_drafts`).  ``"exit:L"`` (self-speculative early
exit, the target's own final norm and head on layer ``L``'s hidden state, on
any layout :mod:`spectheory.lm.layout` knows) and the trained ``"adapter:L"``
are computed from the same forward as the target; ``"quant:TYPE"`` and
``"lm:PATH"`` run their own network over a copy of their context cache;
``"ngram:K"`` is a function of the tokens.  ``"logits:NAME"`` (logits that
exist only at a trace's positions) is refused, naming the draft.
"""

from __future__ import annotations

import numpy as np

from .._errors import InvalidParameterError
from ..distributions import process_logits
from ..lm._kv import cache_kwargs, cache_of
from ..lm._loader import require_cpu

__all__ = ["LMTreeModels", "chat_context"]


def chat_context(loaded, prompt: str) -> np.ndarray:
    """Token ids of ``prompt`` in the model's chat template, ready for generation."""
    import torch

    ids = loaded.tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, return_tensors="pt"
    )
    ids = ids if torch.is_tensor(ids) else ids["input_ids"]
    return ids[0].numpy().astype(np.int64)


class LMTreeModels:
    """Target and draft next-token laws after ``context + path``.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
    context : array_like of int, shape (C,)
        Token ids before the drafted paths (non-empty).
    draft : str, int or spectheory.lm.adapters.Adapter
        Draft specification of any kind with a tree-node forward
        (``"exit:L"``, ``"adapter:L"``, ``"quant:TYPE"``, ``"lm:PATH"``,
        ``"ngram:K"``), an exit layer, or an adapter object.
    temperature, top_k, top_p
        Processing applied to both models (:func:`spectheory.process_logits`).

    Attributes
    ----------
    forwards : int
        Target forward passes run so far (the context's included).
    spec : str
        The draft's specification.
    """

    def __init__(self, loaded, context, draft: str = "exit:15", *, temperature=1.0, top_k=None,
                 top_p=None):  # fmt: skip
        import torch

        from ..lm.draft_kinds import resolve_draft

        require_cpu(loaded, "LMTreeModels")
        ctx = np.asarray(context, dtype=np.int64)
        if ctx.ndim != 1 or ctx.size == 0:
            raise InvalidParameterError(f"context must be a non-empty 1-D id sequence; got {ctx}")
        kind, arg = resolve_draft(loaded, draft)
        self.spec = kind.label(arg)
        self._draft = kind.path_draft(loaded, arg)
        self.loaded = loaded
        self.settings = {"temperature": temperature, "top_k": top_k, "top_p": top_p}
        self.rows: dict = {}
        self.forwards = 0
        with torch.no_grad():
            out = loaded.model(
                input_ids=torch.from_numpy(ctx)[None], use_cache=True, output_hidden_states=True
            )
        self.forwards += 1
        self._past = cache_of(out)
        self._put((), out.logits[0, -1], self._draft.start(ctx, out))

    def _put(self, path, target_logits, draft_logits):
        t = target_logits.double().numpy()
        self.rows[path] = (
            process_logits(t, **self.settings),
            process_logits(np.asarray(draft_logits, dtype=np.float64), **self.settings),
        )

    def _run(self, path):
        import copy

        import torch

        with torch.no_grad():
            out = self.loaded.model(
                input_ids=torch.tensor([list(path)], dtype=torch.long),
                # a copy: the context's cache stays intact
                **cache_kwargs(self.loaded.model, copy.deepcopy(self._past)),
                use_cache=True,
                output_hidden_states=True,
            )
        self.forwards += 1
        q = self._draft.extend(tuple(path), out)
        for j in range(len(path)):
            prefix = tuple(path[: j + 1])
            if prefix not in self.rows:
                self._put(prefix, out.logits[0, j], q[j])

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
