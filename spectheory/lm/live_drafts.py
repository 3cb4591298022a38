r"""Drafts for live speculative generation: a small interface and the early-exit draft.

A live draft maps the tokens it has not seen yet and its own key-value cache
to the draft logits of the next token:

.. math::

    z^{\mathrm{draft}}_{t+1} = f\big(x_{\le t}\big),\qquad
    \text{computed from the cache of } x_{<s} \text{ and the new tokens } x_{s..t}.

The generator (:func:`spectheory.live.speculative_generate`) owns the
bookkeeping: it creates the cache with :meth:`LiveDraft.new_cache`, feeds the
uncached tokens, replicates the cache over the draft rows of multi-draft
rounds (``batch_repeat_interleave``), keeps one row (``batch_select_indices``)
and crops it back to the accepted prefix (``crop``).  Any object with the two
methods below and a cache with those three operations (every Hugging Face
``DynamicCache`` has them) plugs in, so trained drafts (adapters) need no
change to the generator.

References
----------
.. [1] Elhoushi et al. "LayerSkip: Enabling Early Exit Inference and
   Self-Speculative Decoding". ACL 2024, arXiv:2404.16710.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .._errors import InvalidParameterError
from ._kv import cache_kwargs

__all__ = ["AdapterDraft", "EarlyExitDraft", "LiveDraft", "ModelDraft"]


@runtime_checkable
class LiveDraft(Protocol):
    """What the live generator needs from a draft model.

    Attributes
    ----------
    spec : str
        A short name of the draft (``"exit:15"``), recorded in results.
    """

    spec: str

    def new_cache(self):
        """An empty cache (with ``crop``, ``batch_repeat_interleave``, ``batch_select_indices``)."""

    def __call__(self, input_ids, cache):
        """Run the new tokens ``input_ids`` (LongTensor ``(B, k)``, ``k >= 1``) through the draft.

        Appends them to ``cache`` (``B`` rows) and returns the logits of the
        token after the last one: a float tensor of shape ``(B, V)``.
        """


class EarlyExitDraft:
    r"""The early-exit draft ``"exit:L"``: the target's first ``L`` layers, final norm and head.

    .. math::

        z^{\mathrm{draft}} = W_{\mathrm{head}}\,
            \mathrm{RMSNorm}\big(h_L(x_{\le t})\big)

    where :math:`h_L` is the hidden state after the first ``L`` decoder
    layers of the target (RMSNorm for Llama, the final LayerNorm for GPT-2:
    whatever final norm the architecture has).  No weight is copied: a
    shallow causal LM of the target's class is built on the meta device and
    given the target's own embeddings, first ``L`` blocks, norm and head
    (:func:`spectheory.lm.layout.shallow_model`, which finds them by
    architecture), so it runs with its own ``DynamicCache`` of ``L`` layers.
    Its logits equal :func:`spectheory.lm.early_exit_logits` of a full forward
    pass (tested on SmolLM2 and GPT-2).

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
    layer : int, 1 <= layer < num_layers
    """

    def __init__(self, loaded, layer: int):
        from .layout import shallow_model

        if isinstance(layer, bool) or not isinstance(layer, int):
            raise InvalidParameterError(f"layer must be an integer; got {layer!r}")
        if not 1 <= layer < loaded.num_layers:
            raise InvalidParameterError(
                f"early-exit layer must be in [1, {loaded.num_layers}); got {layer}"
            )
        self.layer = layer
        self.spec = f"exit:{layer}"
        self.net = shallow_model(loaded.model, layer)

    def new_cache(self):
        """An empty ``transformers.DynamicCache``."""
        from transformers import DynamicCache

        return DynamicCache()

    def __call__(self, input_ids, cache):
        """Logits ``(B, V)`` of the token after ``input_ids`` ``(B, k)``; extends ``cache``."""
        kv = cache_kwargs(self.net, cache)
        out = self.net(input_ids=input_ids, **kv, use_cache=True, logits_to_keep=1)
        return out.logits[:, -1]

    def __repr__(self):
        return f"EarlyExitDraft({self.spec!r})"


def _map_kv(tree, fn):
    """Apply ``fn`` to every key/value tensor of an adapter cache (nested dicts), in place."""
    for key, val in tree.items():
        if isinstance(val, dict):
            _map_kv(val, fn)
        else:
            tree[key] = fn(val)


class _AdapterCache:
    """The trunk's ``DynamicCache`` and the adapter's own key-value tensors, cropped together.

    The adapter's tensors have shape ``(B, kv_heads, S, head_dim)`` (sequence
    on axis 2, as in the trunk's cache).
    """

    def __init__(self):
        from transformers import DynamicCache

        self.trunk, self.adapter = DynamicCache(), {}

    def get_seq_length(self):
        return self.trunk.get_seq_length()

    def crop(self, max_length):
        self.trunk.crop(max_length)
        keep = self.trunk.get_seq_length()
        _map_kv(self.adapter, lambda t: t[:, :, :keep])

    def batch_repeat_interleave(self, repeats):
        self.trunk.batch_repeat_interleave(repeats)
        _map_kv(self.adapter, lambda t: t.repeat_interleave(repeats, dim=0))

    def batch_select_indices(self, indices):
        self.trunk.batch_select_indices(indices)
        _map_kv(self.adapter, lambda t: t[indices])


class AdapterDraft:
    r"""The trained draft ``"adapter:L"`` live: the target's first ``L`` layers, adapter, head.

    .. math::

        z^{\mathrm{draft}} = W_S\,\mathrm{RMSNorm}\big(A_\theta(h_L(x_{\le t}))\big),

    scattered to the full vocabulary with :math:`-\infty` outside the
    adapter's vocabulary subset :math:`S`
    (:class:`spectheory.lm.adapters.Adapter`).  The trunk is a shallow causal
    LM sharing the target's modules (as in :class:`EarlyExitDraft`, with the
    final norm removed: the adapter comes first); the adapter keeps its own
    key-value tensors, which the cache crops and replicates with the trunk's.
    Its logits equal the adapter's on a full forward pass (tested).

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
    adapter : spectheory.lm.adapters.Adapter
    """

    def __init__(self, loaded, adapter):
        from .layout import shallow_model

        self.adapter = adapter
        self.layer = int(adapter.layer)
        self.spec = f"adapter:{self.layer}"
        # the trunk's base model without its final norm: the adapter comes first
        self.trunk = shallow_model(loaded.model, self.layer, final_norm=False).base_model

    def new_cache(self):
        """An empty cache of the trunk and the adapter."""
        return _AdapterCache()

    def __call__(self, input_ids, cache):
        """Logits ``(B, V)`` of the token after ``input_ids`` ``(B, k)``; extends ``cache``."""
        import torch

        start = cache.get_seq_length()
        kv = cache_kwargs(self.trunk, cache.trunk)
        out = self.trunk(input_ids=input_ids, **kv, use_cache=True)
        k = input_ids.shape[1]
        pos = torch.arange(start, start + k)[None].expand(input_ids.shape[0], -1)
        z = self.adapter.subset_logits(out.last_hidden_state, pos, cache.adapter)[:, -1]
        return self.adapter.full_logits(z)

    def __repr__(self):
        return f"AdapterDraft({self.spec!r})"


class ModelDraft:
    """A network of its own as the live draft (``"lm:PATH"``, ``"quant:TYPE"``), own cache.

    The classic pair of Leviathan et al. (arXiv 2211.17192): a smaller model
    sharing the target's tokenizer (checked by
    :func:`spectheory.lm.draft_lm.check_same_vocabulary`); or the target
    re-quantised (:func:`spectheory.lm.quantised.quantised_model`).

    Parameters
    ----------
    draft : transformers causal LM or spectheory.lm.LoadedModel
        The draft network.  A ``LoadedModel``'s tokenizer is checked against
        the target's when the draft is used (:func:`spectheory.live.make_draft`);
        a bare network has no tokenizer, so only the width of its logits is
        checked.
    spec : str
        Its name in results (``"lm:PATH"``).
    """

    def __init__(self, draft, spec: str):
        from ._loader import LoadedModel

        # With a LoadedModel, its tokenizer is kept so that make_draft checks it against the
        # target's (check_same_vocabulary), as "lm:PATH" does: another tokenizer of the same
        # size would otherwise pass the generator's width check and draft in another id space.
        self.loaded = draft if isinstance(draft, LoadedModel) else None
        self.net = draft.model if isinstance(draft, LoadedModel) else draft
        self.spec = spec

    def new_cache(self):
        """An empty ``transformers.DynamicCache``."""
        from transformers import DynamicCache

        return DynamicCache()

    def __call__(self, input_ids, cache):
        import torch

        with torch.no_grad():
            out = self.net(input_ids=input_ids, **cache_kwargs(self.net, cache), use_cache=True)
        return out.logits[:, -1]

    def __repr__(self) -> str:
        return f"ModelDraft({self.spec!r})"
