"""Live drafts from a specification: :func:`make_draft` (the draft classes live in
:mod:`spectheory.lm.live_drafts`, beside the draft-kind registry that builds them)."""

from __future__ import annotations

from .._errors import InvalidParameterError
from ..lm.live_drafts import AdapterDraft, EarlyExitDraft, LiveDraft, ModelDraft

__all__ = ["AdapterDraft", "EarlyExitDraft", "LiveDraft", "ModelDraft", "make_draft"]


def make_draft(loaded, draft) -> LiveDraft:
    """Resolve a draft specification into a :class:`LiveDraft`.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
        The target; drafts built from a specification share its weights.
    draft : str or LiveDraft
        ``"exit:L"`` (early exit after ``L`` layers), ``"adapter:L"`` (the
        trained adapter in the cache, :func:`spectheory.lm.adapters.resolve_adapter`),
        ``"lm:PATH"`` (a separate causal LM sharing the target's tokenizer,
        :class:`ModelDraft`), ``"quant:TYPE"`` (the re-quantised target, a
        :class:`ModelDraft`), or an object that already implements
        :class:`LiveDraft` (passed through).  Each kind's live draft comes
        from the registry (:meth:`spectheory.lm.draft_kinds.DraftKind.live_draft`);
        kinds without one (``"ngram:K"``, ``"logits:NAME"``) are refused,
        naming the draft.

    Returns
    -------
    LiveDraft
    """
    if isinstance(draft, str):
        from ..lm.draft_kinds import draft_kind

        kind, arg = draft_kind(draft, loaded.num_layers)
        return kind.live_draft(loaded, arg)
    if isinstance(draft, LiveDraft) and isinstance(getattr(draft, "spec", None), str):
        if isinstance(draft, ModelDraft) and draft.loaded is not None:
            from ..lm.draft_lm import check_same_vocabulary

            check_same_vocabulary(loaded, draft.loaded, f"draft {draft.spec!r}")
        return draft
    raise InvalidParameterError(
        f"draft must be a specification string such as 'exit:15' or a LiveDraft object "
        f"(spec, new_cache(), __call__(input_ids, cache)); got {draft!r}"
    )
