r"""The torch backend: batched verifiers and fused Triton kernels, on CPU and CUDA tensors.

:func:`verify`
    Every registered verifier with a batched form (:data:`TORCH_VERIFIERS`)
    on (B, V) target and draft rows and (B, n) drafts, with the registry's
    names and semantics and the coins protocol's uniforms
    (:func:`verifier_uniforms` per row), so that it returns the reference's
    tokens for the same uniforms.
:func:`bound`
    The optimal multi-draft acceptance on (B, V) tensors, differentiable
    (envelope-theorem gradient), equal to :func:`spectheory.bound`;
    :func:`draft_loss` turns it (and KL, ``-log sum min(p, q)``) into draft
    training losses.
:func:`chain_speculative_sampling`
    One round of chain speculative sampling per row, with the semantics of
    FlashInfer's kernel of that name: plain torch, or one fused Triton kernel.
:func:`recursive_rejection_sampling`
    Multi-draft RRS, i.i.d. or without replacement: plain torch, or one fused
    Triton kernel (one row per program).
:func:`speculative_generate`, :func:`target_generate`
    Live speculative generation with a Hugging Face causal LM and its
    early-exit draft (key-value caches for both), chain or multi-draft mode,
    any registered verifier; :func:`check_live_lossless` tests the recorded
    target distributions of a run.

Triton kernels run on CUDA tensors, or on the CPU under Triton's interpreter
(``TRITON_INTERPRET=1`` set before triton is imported; slow, for tests).
This package needs torch (``pip install 'spectheory[torch]'``); triton is
needed only for ``backend="triton"``.
"""

from .bound import bound
from .chain import ChainSamplingResult, chain_speculative_sampling
from .live import (
    AdapterDraft,
    EarlyExitDraft,
    LiveDraft,
    LiveLosslessReport,
    LiveResult,
    chat_prompt_ids,
    check_live_lossless,
    make_draft,
    speculative_generate,
    target_generate,
)
from .losses import draft_loss
from .multidraft import recursive_rejection_sampling
from .verifiers import TORCH_VERIFIERS, TorchVerification, kseq_rho, verifier_uniforms, verify

__all__ = [
    "TORCH_VERIFIERS",
    "AdapterDraft",
    "ChainSamplingResult",
    "EarlyExitDraft",
    "LiveDraft",
    "LiveLosslessReport",
    "LiveResult",
    "TorchVerification",
    "bound",
    "chain_speculative_sampling",
    "chat_prompt_ids",
    "check_live_lossless",
    "draft_loss",
    "kseq_rho",
    "make_draft",
    "recursive_rejection_sampling",
    "speculative_generate",
    "target_generate",
    "verifier_uniforms",
    "verify",
]
