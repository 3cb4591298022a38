"""The registry of draft kinds: what each kind of draft provides to trace recording and the cache.

A draft is named by a specification ``"KIND:ARG"`` (:func:`~spectheory.lm.drafts.parse_draft`).
Each kind is one :class:`DraftKind` in :data:`DRAFT_KINDS`, which says

* whether a trace stores its logits (``stored``; the n-gram draft is rebuilt
  from the tokens instead);
* the fingerprint of its own weights for the trace cache key
  (:meth:`DraftKind.fingerprint`: a trained adapter's weights, a separate
  model's files; ``None`` when the draft is a function of the target alone);
* the recorder that produces its logits position by position while the
  target is traced (:meth:`DraftKind.recorder`, an object with ``reset()``
  and ``step(input_ids, hidden_states) -> logits (V,)``).

Trace recording and the cache key go through this table only, so a new kind
is one class here.
"""

from __future__ import annotations

from .._errors import InvalidParameterError, TraceError
from .drafts import early_exit_logits, parse_draft

__all__ = ["DRAFT_KINDS", "DraftKind", "draft_kind"]


class DraftKind:
    """One kind of draft (see the module docstring); subclasses override what they provide."""

    name = ""
    stored = True

    def fingerprint(self, model: str, arg) -> str | None:
        """Fingerprint of the draft's own weights (``None``: a function of the target only)."""
        return None

    def recorder(self, loaded, arg):
        """The object that yields the draft's logits during recording (``None``: not recorded)."""
        raise InvalidParameterError(f"{self.name!r} drafts cannot be recorded from a model")


class _ExitRecorder:
    """Early exit: the final norm and head on layer ``L``'s hidden state of the target's forward."""

    def __init__(self, model, layer):
        self.model, self.layer = model, layer

    def reset(self):
        """Nothing to reset: the draft is a function of the target's hidden states."""

    def step(self, input_ids, hidden_states):
        last = tuple(h[:, -1] for h in hidden_states)
        return early_exit_logits(self.model, last, self.layer)[0]


class ExitKind(DraftKind):
    """``"exit:L"``: self-speculative early exit (LayerSkip, arXiv 2404.16710)."""

    name = "exit"

    def recorder(self, loaded, arg):
        return _ExitRecorder(loaded.model, int(arg))


class AdapterKind(DraftKind):
    """``"adapter:L"``: a trained adapter on layer ``L`` (:mod:`.adapters`)."""

    name = "adapter"

    def fingerprint(self, model, arg):
        from .adapters import adapter_fingerprint, adapter_path

        path = adapter_path(int(arg), model)
        if not path.is_file():
            raise TraceError(
                f"no trained adapter for 'adapter:{arg}' at {str(path)!r}; train it with: "
                f"spectheory draft train --layer {arg}"
            )
        return adapter_fingerprint(path)

    def recorder(self, loaded, arg):
        from .adapters import AdapterStepper, resolve_adapter

        return AdapterStepper(resolve_adapter(loaded, int(arg)))


class QuantKind(DraftKind):
    """``"quant:TYPE"``: the target re-quantised to a GGUF type (:mod:`.quantised`)."""

    name = "quant"

    def recorder(self, loaded, arg):
        from .quantised import QuantStepper, quantised_model

        return QuantStepper(quantised_model(loaded, str(arg)))


class LMKind(DraftKind):
    """``"lm:PATH"``: a separate causal LM sharing the target's tokenizer (:mod:`.draft_lm`)."""

    name = "lm"

    def fingerprint(self, model, arg):
        from ._loader import model_source
        from .fingerprint import file_fingerprint

        return file_fingerprint(model_source(str(arg)))

    def recorder(self, loaded, arg):
        from .draft_lm import DraftLM

        return DraftLM.load(str(arg), loaded)


class NgramKind(DraftKind):
    """``"ngram:K"``: context lookup, rebuilt from a trace's tokens (never stored)."""

    name = "ngram"
    stored = False

    def recorder(self, loaded, arg):
        return None


class LogitsKind(DraftKind):
    """``"logits:NAME"``: logits supplied as arrays (:mod:`.arrays`); nothing to record."""

    name = "logits"


#: The draft kinds by name.
DRAFT_KINDS: dict[str, DraftKind] = {
    k.name: k for k in (ExitKind(), AdapterKind(), QuantKind(), LMKind(), NgramKind(), LogitsKind())
}


def draft_kind(spec: str, num_layers: int | None = None) -> tuple[DraftKind, object]:
    """``(DraftKind, argument)`` of a draft specification, checked by :func:`parse_draft`.

    >>> kind, arg = draft_kind("exit:12", num_layers=30)
    >>> kind.name, kind.stored, arg
    ('exit', True, 12)
    """
    kind, arg = parse_draft(spec, num_layers)
    return DRAFT_KINDS[kind], arg
