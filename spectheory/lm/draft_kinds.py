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
  and ``step(input_ids, hidden_states) -> logits (V,)``);
* what cost measurement needs (:meth:`DraftKind.cost_stepper`, an object
  with ``prefill(ids)`` and ``step(tok)`` timed by
  :func:`~spectheory.lm.measure_cost_ratio`; :meth:`DraftKind.parameters`,
  its parameter count for :func:`~spectheory.lm.draft_parameter_count`);
* the tree-node forward (:meth:`DraftKind.path_draft`, a
  :mod:`~spectheory.lm.path_drafts` object used by
  :class:`spectheory.trees.lm.LMTreeModels`);
* the live draft (:meth:`DraftKind.live_draft`, a
  :class:`spectheory.live.LiveDraft` for :func:`spectheory.live.speculative_generate`).

Trace recording, the cache key, cost measurement, trees and live generation
go through this table only, so a new kind is one class here.  What a kind
cannot do is refused with an :class:`~spectheory.InvalidParameterError` that
names the draft and says why (:meth:`DraftKind.refuse`).

=============  ======  ==========  ====  ====  ======================
kind           traces  cost, size  tree  live  needs
=============  ======  ==========  ====  ====  ======================
``exit:L``     yes     yes         yes   yes   any known layout
``adapter:L``  yes     yes         yes   yes   a Llama-layout target
``quant:T``    yes     yes         yes   yes   the ``gguf`` package
``lm:PATH``    yes     yes         yes   yes   the same tokenizer
``ngram:K``    rebuilt no          yes   no    nothing
``logits:N``   arrays  no          no    no    a trace from arrays
=============  ======  ==========  ====  ====  ======================
"""

from __future__ import annotations

import numbers
from typing import ClassVar

from .._errors import InvalidParameterError, TraceError
from .drafts import early_exit_logits, parse_draft

__all__ = ["DRAFT_KINDS", "DraftKind", "draft_kind", "resolve_draft"]


class DraftKind:
    """One kind of draft (see the module docstring); subclasses override what they provide."""

    name = ""
    stored = True

    def fingerprint(self, model: str, arg) -> str | None:
        """Fingerprint of the draft's own weights (``None``: a function of the target only)."""
        return None

    #: Why the kind cannot do each job it refuses (job -> reason).
    cannot: ClassVar[dict] = {}

    def label(self, arg) -> str:
        """The specification string of the draft with argument ``arg``."""
        return f"{self.name}:{arg}"

    def refuse(self, job: str, arg):
        """Raise :class:`~spectheory.InvalidParameterError` naming the draft, the job and why."""
        why = self.cannot.get(job, f"{self.name!r} drafts do not provide it")
        raise InvalidParameterError(f"draft {self.label(arg)!r} cannot be used for {job}: {why}")

    def recorder(self, loaded, arg):
        """The object that yields the draft's logits during recording (``None``: not recorded)."""
        self.refuse("trace recording", arg)

    def cost_stepper(self, loaded, arg):
        """``(stepper, layers)``: what :func:`~spectheory.lm.measure_cost_ratio` times."""
        self.refuse("cost measurement", arg)

    def parameters(self, loaded, arg) -> int:
        """The draft's parameter count (:func:`~spectheory.lm.draft_parameter_count`)."""
        self.refuse("parameter counts", arg)

    def path_draft(self, loaded, arg):
        """The tree-node forward (:mod:`~spectheory.lm.path_drafts`)."""
        self.refuse("tree drafting", arg)

    def live_draft(self, loaded, arg):
        """The :class:`~spectheory.live.LiveDraft` of live generation."""
        self.refuse("live generation", arg)


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

    def cost_stepper(self, loaded, arg):
        from .layout import shallow_model
        from .steppers import HFStepper

        return HFStepper(shallow_model(loaded.model, int(arg))), int(arg)

    def parameters(self, loaded, arg):
        from .layout import parameter_count, shallow_model

        # arg == num_layers is the target itself (draft_parameter_count allows it)
        return parameter_count(shallow_model(loaded.model, int(arg)))

    def path_draft(self, loaded, arg):
        from .path_drafts import ExitPathDraft

        return ExitPathDraft(loaded.model, int(arg))

    def live_draft(self, loaded, arg):
        from .live_drafts import EarlyExitDraft

        return EarlyExitDraft(loaded, int(arg))


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

    def label(self, arg):
        return f"adapter:{int(getattr(arg, 'layer', arg))}"

    def adapter(self, loaded, arg):
        """The adapter object: ``arg`` itself, or the cached one of ``adapter:arg``.

        Adapters are Llama decoder layers with rotary embeddings
        (:mod:`spectheory.lm._adapter_layer`): other layouts are refused.
        """
        if getattr(getattr(loaded.model, "model", None), "rotary_emb", None) is None:
            raise InvalidParameterError(
                f"draft {self.label(arg)!r} needs a Llama-layout target (model.model.rotary_emb: "
                f"adapters are Llama decoder layers); got a {type(loaded.model).__name__}"
            )
        if hasattr(arg, "subset_logits"):
            return arg
        from .adapters import resolve_adapter

        return resolve_adapter(loaded, int(arg))

    def recorder(self, loaded, arg):
        from .adapters import AdapterStepper

        return AdapterStepper(self.adapter(loaded, arg))

    def cost_stepper(self, loaded, arg):
        from .steppers import AdapterCostStepper

        ad = self.adapter(loaded, arg)
        return AdapterCostStepper(loaded.model, ad), int(ad.layer)

    def parameters(self, loaded, arg):
        from .layout import parameter_count, shallow_model

        ad = self.adapter(loaded, arg)
        return parameter_count(shallow_model(loaded.model, int(ad.layer)), ad.module)

    def path_draft(self, loaded, arg):
        from .path_drafts import AdapterPathDraft

        return AdapterPathDraft(self.adapter(loaded, arg))

    def live_draft(self, loaded, arg):
        from .live_drafts import AdapterDraft

        return AdapterDraft(loaded, self.adapter(loaded, arg))


class QuantKind(DraftKind):
    """``"quant:TYPE"``: the target re-quantised to a GGUF type (:mod:`.quantised`)."""

    name = "quant"

    def recorder(self, loaded, arg):
        from .quantised import QuantStepper, quantised_model

        return QuantStepper(quantised_model(loaded, str(arg)))

    def net(self, loaded, arg):
        """The de-quantised copy of the target (memoised by :func:`.quantised.quantised_model`)."""
        from .quantised import quantised_model

        return quantised_model(loaded, str(arg))

    def cost_stepper(self, loaded, arg):
        from .steppers import HFStepper

        return HFStepper(self.net(loaded, arg)), loaded.num_layers

    def parameters(self, loaded, arg):
        from .layout import parameter_count

        self.net(loaded, arg)  # checks the type; the count is the target's, at fewer bits
        return parameter_count(loaded.model)

    def path_draft(self, loaded, arg):
        from .path_drafts import ModelPathDraft

        return ModelPathDraft(self.net(loaded, arg))

    def live_draft(self, loaded, arg):
        from .live_drafts import ModelDraft

        return ModelDraft(self.net(loaded, arg), self.label(arg))


class LMKind(DraftKind):
    """``"lm:PATH"``: a separate causal LM sharing the target's tokenizer (:mod:`.draft_lm`)."""

    name = "lm"

    def fingerprint(self, model, arg):
        from ._loader import model_source
        from .fingerprint import file_fingerprint

        try:
            source = model_source(str(arg))
        except InvalidParameterError as exc:  # it said "model must be ...", naming no draft
            raise InvalidParameterError(f"draft {self.label(arg)!r}: {exc}") from None
        return file_fingerprint(source)

    def recorder(self, loaded, arg):
        from ._loader import model_source
        from .draft_lm import DraftLM

        try:
            model_source(str(arg))
        except InvalidParameterError as exc:  # live generation, trees, costs: name the draft
            raise InvalidParameterError(f"draft {self.label(arg)!r}: {exc}") from None
        return DraftLM.load(str(arg), loaded)

    def draft_model(self, loaded, arg):
        """The draft's :class:`~spectheory.lm.LoadedModel`, checked to share the vocabulary."""
        return self.recorder(loaded, arg).loaded

    def cost_stepper(self, loaded, arg):
        from .steppers import HFStepper

        draft = self.draft_model(loaded, arg)
        return HFStepper(draft.model), draft.num_layers

    def parameters(self, loaded, arg):
        from .layout import parameter_count

        return parameter_count(self.draft_model(loaded, arg).model)

    def path_draft(self, loaded, arg):
        from .path_drafts import ModelPathDraft

        return ModelPathDraft(self.draft_model(loaded, arg).model)

    def live_draft(self, loaded, arg):
        from .live_drafts import ModelDraft

        return ModelDraft(self.draft_model(loaded, arg).model, self.label(arg))


class NgramKind(DraftKind):
    """``"ngram:K"``: context lookup, rebuilt from a trace's tokens (never stored)."""

    name = "ngram"
    stored = False
    cannot: ClassVar[dict] = {
        "cost measurement": "an n-gram lookup has no forward pass to time (its cost is a "
        "context search, not a fraction of the target's step)",
        "parameter counts": "an n-gram lookup has no parameters",
        "live generation": "the live generator feeds drafts through a key-value cache; an "
        "n-gram lookup has none (replay it from a trace instead)",
    }

    def recorder(self, loaded, arg):
        return None

    def path_draft(self, loaded, arg):
        from .path_drafts import NgramPathDraft

        return NgramPathDraft(int(arg), loaded.vocab_size)


class LogitsKind(DraftKind):
    """``"logits:NAME"``: logits supplied as arrays (:mod:`.arrays`); nothing to record."""

    name = "logits"
    cannot: ClassVar[dict] = {
        job: "its logits were recorded elsewhere and exist only at a trace's positions"
        for job in (
            "trace recording",
            "cost measurement",
            "parameter counts",
            "tree drafting",
            "live generation",
        )
    }


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


def resolve_draft(loaded, draft, *, allow_target: bool = False) -> tuple[DraftKind, object]:
    """``(DraftKind, argument)`` of a draft given in any of the accepted forms.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
        The target (its layer count checks exit layers).
    draft : str, int or Adapter
        A specification (:func:`parse_draft`), an early-exit layer ``L`` in
        ``[1, num_layers)`` (``num_layers`` too with ``allow_target``: the
        target itself), or an :class:`~spectheory.lm.adapters.Adapter`.

    >>> from types import SimpleNamespace
    >>> kind, arg = resolve_draft(SimpleNamespace(num_layers=30), "quant:Q4_0")
    >>> kind.name, arg
    ('quant', 'Q4_0')
    """
    if isinstance(draft, str):
        return draft_kind(draft, loaded.num_layers)
    if hasattr(draft, "subset_logits"):  # an Adapter object
        return DRAFT_KINDS["adapter"], draft
    top = loaded.num_layers + (1 if allow_target else 0)
    if isinstance(draft, bool) or not isinstance(draft, numbers.Integral) or not 1 <= draft < top:
        raise InvalidParameterError(
            f"layer must be < {top} and >= 1 (an exit layer; the target has "
            f"{loaded.num_layers} layers), a specification such as 'exit:12' or an Adapter; "
            f"got {draft!r}"
        )
    return DRAFT_KINDS["exit"], int(draft)
