r"""Drafts for live speculative generation: a small interface and the early-exit draft.

A live draft maps the tokens it has not seen yet and its own key-value cache
to the draft logits of the next token:

.. math::

    z^{\mathrm{draft}}_{t+1} = f\big(x_{\le t}\big),\qquad
    \text{computed from the cache of } x_{<s} \text{ and the new tokens } x_{s..t}.

The generator (:func:`spectheory.torch.live.speculative_generate`) owns the
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
from ..lm.drafts import parse_draft

__all__ = ["EarlyExitDraft", "LiveDraft", "make_draft"]


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
    layers of the target.  No weight is copied: a shallow causal LM of the
    target's class is built on the meta device and given the target's own
    embedding, first ``L`` blocks, norm, rotary embedding and head
    (:func:`spectheory.lm.acceptance._shallow_draft`), so it runs with its
    own ``DynamicCache`` of ``L`` layers.  Its logits equal
    :func:`spectheory.lm.early_exit_logits` of a full forward pass (tested).

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
    layer : int, 1 <= layer < num_layers
    """

    def __init__(self, loaded, layer: int):
        from ..lm.acceptance import _shallow_draft

        if isinstance(layer, bool) or not isinstance(layer, int):
            raise InvalidParameterError(f"layer must be an integer; got {layer!r}")
        if not 1 <= layer < loaded.num_layers:
            raise InvalidParameterError(
                f"early-exit layer must be in [1, {loaded.num_layers}); got {layer}"
            )
        self.layer = layer
        self.spec = f"exit:{layer}"
        self.net = _shallow_draft(loaded.model, layer)

    def new_cache(self):
        """An empty ``transformers.DynamicCache``."""
        from transformers import DynamicCache

        return DynamicCache()

    def __call__(self, input_ids, cache):
        """Logits ``(B, V)`` of the token after ``input_ids`` ``(B, k)``; extends ``cache``."""
        out = self.net(input_ids=input_ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        return out.logits[:, -1]

    def __repr__(self):
        return f"EarlyExitDraft({self.spec!r})"


def make_draft(loaded, draft) -> LiveDraft:
    """Resolve a draft specification into a :class:`LiveDraft`.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
        The target; drafts built from a specification share its weights.
    draft : str or LiveDraft
        ``"exit:L"`` (early exit after ``L`` layers), or an object that
        already implements :class:`LiveDraft` (passed through).

    Returns
    -------
    LiveDraft
    """
    if isinstance(draft, str):
        if draft.startswith("exit:"):
            _, layer = parse_draft(draft, loaded.num_layers)
            return EarlyExitDraft(loaded, layer)
        raise InvalidParameterError(
            f"draft must be 'exit:L' (1 <= L < {loaded.num_layers}) or an object with "
            f"new_cache() and __call__(input_ids, cache); got {draft!r}"
        )
    if isinstance(draft, LiveDraft) and isinstance(getattr(draft, "spec", None), str):
        return draft
    raise InvalidParameterError(
        f"draft must be a specification string such as 'exit:15' or a LiveDraft object "
        f"(spec, new_cache(), __call__(input_ids, cache)); got {draft!r}"
    )
