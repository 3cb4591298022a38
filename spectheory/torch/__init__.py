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

Live speculative generation with models is :mod:`spectheory.live` (its names
stay reachable here for code written against the earlier layout).

Triton kernels run on CUDA tensors, or on the CPU under Triton's interpreter
(``TRITON_INTERPRET=1`` set before triton is imported; slow, for tests).
This package needs torch (``pip install 'spectheory[torch]'``); triton is
needed only for ``backend="triton"``.
"""

from .bound import bound
from .chain import ChainSamplingResult, chain_speculative_sampling
from .losses import draft_loss
from .multidraft import recursive_rejection_sampling
from .verifiers import TORCH_VERIFIERS, TorchVerification, kseq_rho, verifier_uniforms, verify

__all__ = [
    "TORCH_VERIFIERS",
    "ChainSamplingResult",
    "TorchVerification",
    "bound",
    "chain_speculative_sampling",
    "draft_loss",
    "kseq_rho",
    "recursive_rejection_sampling",
    "verifier_uniforms",
    "verify",
]


#: Names of live generation, which moved to :mod:`spectheory.live`; still reachable
#: here (imported on first use) so that code written against the earlier layout runs.
_MOVED_TO_LIVE = frozenset({
    "AdapterDraft", "EarlyExitDraft", "LiveDraft", "LiveResult",
    "chat_prompt_ids", "check_live_lossless", "make_draft", "speculative_generate",
    "target_generate",
})  # fmt: skip


def __getattr__(name):
    if name in _MOVED_TO_LIVE:
        from .. import live

        return getattr(live, name)
    raise AttributeError(f"module 'spectheory.torch' has no attribute {name!r}")
