"""A separate causal LM as the draft (``"lm:PATH"``), sharing the target's tokenizer.

The classic speculative-decoding pair (Leviathan et al., arXiv 2211.17192;
Chen et al., arXiv 2302.01318): an independent small model proposes, the
target verifies.  Verification compares distributions over one vocabulary, so
the draft must share the target's tokenizer: the same token-to-id map and the
same number of output logits; otherwise :meth:`DraftLM.load` refuses it.
"""

from __future__ import annotations

from .._errors import ShapeMismatchError
from ._kv import cache_kwargs, cache_of

__all__ = ["DraftLM", "check_same_vocabulary"]


def check_same_vocabulary(target, draft, what: str = "draft") -> None:
    """Raise :class:`~spectheory.ShapeMismatchError` unless two loaded models share a vocabulary.

    Both the output size (``vocab_size``) and the tokenizer's token-to-id map
    must agree.
    """
    if target.vocab_size != draft.vocab_size:
        raise ShapeMismatchError(
            f"{what} {draft.name!r} has {draft.vocab_size} output logits, the target "
            f"{target.name!r} {target.vocab_size}: a draft must share the target's vocabulary"
        )
    tv, dv = target.tokenizer.get_vocab(), draft.tokenizer.get_vocab()
    if tv != dv:
        diff = sorted(set(tv.items()) ^ set(dv.items()), key=str)[:3]
        raise ShapeMismatchError(
            f"{what} {draft.name!r} has another tokenizer than the target {target.name!r} "
            f"({len(dv)} vs {len(tv)} tokens; differing entries such as {diff}): a draft must "
            f"share the target's vocabulary"
        )


class DraftLM:
    """Token-by-token logits of a separate draft model during trace recording (own KV cache).

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
        The draft model.
    """

    def __init__(self, loaded):
        self.loaded = loaded
        self.reset()

    @classmethod
    def load(cls, path: str, target) -> DraftLM:
        """Load the draft model at ``path`` and check that it shares ``target``'s vocabulary."""
        from ._loader import load_model

        draft = load_model(path)
        check_same_vocabulary(target, draft, f"draft 'lm:{path}'")
        return cls(draft)

    def reset(self):
        """Start a new sequence."""
        self.past = None

    def step(self, input_ids, hidden_states=None):
        """Logits (V,) after feeding ``input_ids`` (the same tokens the target is fed)."""
        import torch

        with torch.no_grad():
            kv = cache_kwargs(self.loaded.model, self.past)
            out = self.loaded.model(input_ids=input_ids, **kv, use_cache=True)
        self.past = cache_of(out)
        return out.logits[0, -1]
