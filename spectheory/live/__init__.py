r"""Live speculative generation with Hugging Face causal LMs.

:func:`speculative_generate`
    Chain or multi-draft speculative generation of a target model with a draft
    (an early exit of the target, a trained adapter, a quantised copy, a separate
    causal LM sharing the tokenizer, or your own :class:`LiveDraft`), key-value
    caches for both, any registered verifier or a verifier of your own (either
    protocol), recording the target's and the draft's processed distributions.
:func:`target_generate`
    Target-only generation with the same sampling settings (the baseline).
:func:`check_live_lossless`
    Tests whether the tokens of recorded runs follow the recorded target
    distributions (randomised PIT and goodness of fit); it returns the one
    report type of every losslessness check, :class:`spectheory.LosslessReport`,
    with ``source="live"``.

The batched kernels (verifiers on (B, V) tensors, chain speculative sampling,
multi-draft RRS, Triton kernels, the differentiable bound) stay in
:mod:`spectheory.torch`; this package uses models and needs the ``models``
and ``torch`` extras.
"""

from ._check import check_live_lossless
from ._draft import AdapterDraft, EarlyExitDraft, LiveDraft, ModelDraft, make_draft
from .generate import LiveResult, chat_prompt_ids, speculative_generate, target_generate

__all__ = [
    "AdapterDraft",
    "EarlyExitDraft",
    "LiveDraft",
    "LiveResult",
    "ModelDraft",
    "chat_prompt_ids",
    "check_live_lossless",
    "make_draft",
    "speculative_generate",
    "target_generate",
]
