r"""A quantised self-draft: the target's own weights re-quantised coarsely, then de-quantised.

The draft ``"quant:TYPE"`` is a copy of the target in which every weight
matrix (attention and MLP projections of every layer, and the tied
embedding / LM head) is rounded through the GGUF block quantiser ``TYPE`` of
the ``gguf`` package and de-quantised back to float32; RMSNorm weights stay
in float32, as llama.cpp keeps them.  Its distribution :math:`q` differs from
the target's :math:`p` only through the rounding, so its acceptance
:math:`\sum_x \min(p, q)` is high; its cost is another matter:

- on this CPU the de-quantised float32 weights run at full cost, so the
  measured cost ratio is :math:`c \approx 1` (no draft can pay off with
  that);
- a memory-bound decoder that read the packed blocks (llama.cpp kernels)
  would move :math:`b_\mathrm{TYPE} / b_\mathrm{target}` of the bytes per
  token, the bandwidth-bound estimate of :math:`c` given by
  :func:`bits_per_weight` (docs/theory.md §1.4).

Types: the ``gguf`` quantisers available in this version are probed at run
time (:func:`quantisable_types`); with gguf 0.17 the K-quants ``Q2_K``,
``Q3_K``, ``Q4_K`` ... raise ``NotImplementedError`` for quantisation, so the
coarsest general-purpose type is ``Q4_0`` (4.5 bits per weight: blocks of 32
weights, one float16 scale :math:`d = m / (-8)` with :math:`m` the entry of
largest magnitude, codes :math:`\mathrm{clamp}(\lfloor x/d + 8.5 \rfloor,
0, 15)`, value :math:`(k - 8) d`).  ``TQ1_0`` / ``TQ2_0`` are ternary formats
for ternary-trained models (BitNet); on an ordinary model they destroy it.

Note that the embedded SmolLM2 is itself stored as ``Q4_1`` (5 bits per
weight) and de-quantised by the loader, so ``quant:Q4_0`` re-rounds weights
that already lie on a 4-bit grid per block.

References
----------
.. [1] ggml / llama.cpp block quantisation formats (``ggml-quants.c``); the
   ``gguf`` Python package, ``gguf.quants``.
.. [2] Leviathan, Kalman, Matias. arXiv:2211.17192 (cost ratio :math:`c`).
"""

from __future__ import annotations

import copy
import weakref

import numpy as np

from .._errors import InvalidParameterError, MissingDependencyError
from ._kv import cache_kwargs, cache_of
from ._loader import require_cpu

__all__ = [
    "QuantStepper",
    "bits_per_weight",
    "memory_ratio",
    "quantisable_types",
    "quantised_model",
    "requantise",
    "step_bound",
]

_CACHE: dict = {}


def _gguf():
    try:
        import gguf
        import gguf.quants
    except ImportError:
        raise MissingDependencyError(
            "quantised drafts need the gguf package: pip install gguf"
        ) from None
    return gguf


def _qtype(name):
    gguf = _gguf()
    try:
        return gguf.GGMLQuantizationType[name]
    except KeyError:
        raise InvalidParameterError(
            f"quantisation type must be a GGUF type name such as 'Q4_0'; got {name!r}"
        ) from None


def quantisable_types() -> tuple[str, ...]:
    """GGUF types that this ``gguf`` version can quantise *and* de-quantise (probed).

    >>> "Q4_0" in quantisable_types()
    True
    """
    gguf = _gguf()
    out = []
    x = np.linspace(-1, 1, 256 * 2, dtype=np.float32).reshape(2, 256)
    for t in gguf.GGMLQuantizationType:
        if t.name in ("F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64"):
            continue
        try:
            block = gguf.GGML_QUANT_SIZES[t][0]
            if 256 % block:
                continue
            y = gguf.quants.dequantize(gguf.quants.quantize(x, t), t)
        except (NotImplementedError, KeyError, ValueError, TypeError, AttributeError):
            continue
        if y.shape == x.shape:
            out.append(t.name)
    return tuple(out)


def bits_per_weight(qtype: str) -> float:
    """Stored bits per weight of a GGUF type: ``8 * bytes_per_block / block_size``.

    >>> bits_per_weight("Q4_0"), bits_per_weight("Q8_0")
    (4.5, 8.5)
    """
    gguf = _gguf()
    block, size = gguf.GGML_QUANT_SIZES[_qtype(qtype)]
    return 8.0 * size / block


def requantise(weights, qtype: str) -> np.ndarray:
    """Quantise ``weights`` with the GGUF type and de-quantise back (float32, same shape).

    Parameters
    ----------
    weights : array_like, float (..., n)
        ``n`` must be a multiple of the type's block size.
    qtype : str
        A name from :func:`quantisable_types`.
    """
    gguf = _gguf()
    t = _qtype(qtype)
    if qtype not in quantisable_types():
        raise InvalidParameterError(
            f"gguf {getattr(gguf, '__version__', '')} cannot quantise {qtype!r}; "
            f"use one of {quantisable_types()}"
        )
    x = np.ascontiguousarray(np.asarray(weights, dtype=np.float32))
    block = gguf.GGML_QUANT_SIZES[t][0]
    if x.ndim < 1 or x.shape[-1] % block:
        raise InvalidParameterError(
            f"weights' last dimension must be a multiple of {block} for {qtype}; got {x.shape}"
        )
    return gguf.quants.dequantize(gguf.quants.quantize(x, t), t).astype(np.float32)


def step_bound(weights, qtype: str) -> np.ndarray:
    r"""Largest rounding error the format allows at each entry (float64, same shape).

    Per block of the last axis, with the float16 scale rounding included
    (:math:`2^{-10}` relative, times the largest code magnitude):

    - ``Q4_0`` / ``Q5_0`` / ``Q8_0`` (symmetric, :math:`d = m / (-2^{b-1})`, or
      :math:`\max|x| / 127` for ``Q8_0``): :math:`|d|` for 4 and 5 bits (the
      code of :math:`-m` is clipped to :math:`2^{b-1} - 1`, one step off),
      :math:`|d| / 2` for 8 bits;
    - ``Q4_1`` / ``Q5_1`` (affine, :math:`d = (\max - \min) / (2^b - 1)`):
      :math:`d / 2`, plus the float16 rounding of the minimum.
    """
    x = np.asarray(weights, dtype=np.float64)
    spec = {
        "Q4_0": (32, "sym", 8, 1.0),
        "Q5_0": (32, "sym", 16, 1.0),
        "Q8_0": (32, "sym127", 127, 0.5),
        "Q4_1": (32, "affine", 15, 0.5),
        "Q5_1": (32, "affine", 31, 0.5),
    }
    if qtype not in spec:
        raise InvalidParameterError(f"step_bound knows {sorted(spec)}; got {qtype!r}")
    block, kind, levels, share = spec[qtype]
    xb = x.reshape(*x.shape[:-1], -1, block)
    if kind == "affine":
        lo, hi = xb.min(-1, keepdims=True), xb.max(-1, keepdims=True)
        d = (hi - lo) / levels
        fp16 = 2.0**-10 * (np.abs(d) * levels + np.abs(lo))
    else:
        d = np.abs(xb).max(-1, keepdims=True) / levels
        fp16 = 2.0**-10 * np.abs(d) * (levels + 1)
    bound = share * np.abs(d) + fp16 + 1e-12
    return np.broadcast_to(bound, xb.shape).reshape(x.shape)


def _is_conv1d(mod) -> bool:
    """GPT-2's ``Conv1D``: a linear layer whose weight is stored transposed, (in, out)."""
    return type(mod).__name__ == "Conv1D" and type(mod).__module__.startswith("transformers.")


def _weight_modules(model):
    """(name, module) of every Linear / Conv1D / Embedding whose weight is re-quantised
    (tied once)."""
    import torch

    seen, out = set(), []
    for name, mod in model.named_modules():
        if isinstance(mod, (torch.nn.Linear, torch.nn.Embedding)) or _is_conv1d(mod):
            ptr = mod.weight.data_ptr()
            if ptr not in seen:
                seen.add(ptr)
                out.append((name, mod))
    return out


def quantised_model(loaded, qtype: str = "Q4_0"):
    """A copy of the target with every weight matrix re-quantised through ``qtype``.

    Every ``Linear``, ``Embedding`` and Hugging Face ``Conv1D`` (GPT-2's
    transposed linear layer) weight is rounded, blocks running along the input
    features as in GGUF files.

    Memoised per target model and type within the process (the copy costs
    one model of memory and some seconds of numpy quantisation).

    Returns
    -------
    transformers causal LM, eval mode, float32
    """
    import torch

    require_cpu(loaded, "quantised_model")
    from .fingerprint import weights_fingerprint

    # Not the model's id alone: an edit of the target's weights in place (an ablation, a
    # fine-tuning step) kept returning the quantised copy of the old weights.  In-place
    # edits bump every tensor's version counter; the fingerprint also sees .data swaps.
    state = (
        tuple(p._version for p in loaded.model.parameters()),
        weights_fingerprint(loaded.model),
    )
    key = (id(loaded.model), qtype)
    hit = _CACHE.get(key)
    if hit is not None and hit[2] != state:
        hit = None
    if hit is not None and hit[0]() is loaded.model:
        return hit[1]
    if qtype not in quantisable_types():
        raise InvalidParameterError(
            f"quantisation type must be one of {quantisable_types()} (what this gguf can "
            f"quantise); got {qtype!r}"
        )
    qmodel = copy.deepcopy(loaded.model)
    with torch.no_grad():
        for _, mod in _weight_modules(qmodel):
            w = mod.weight.detach().float().numpy()  # numpy has no bfloat16
            if _is_conv1d(mod):
                # blocks run along the input features, as for a Linear (out, in) weight
                w = requantise(np.ascontiguousarray(w.T), qtype).T
            else:
                w = requantise(w, qtype)
            mod.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
    qmodel.eval()
    _CACHE[key] = (weakref.ref(loaded.model), qmodel, state)
    return qmodel


def memory_ratio(loaded, qtype: str, reference_bits: float = 16.0) -> float:
    r"""Bandwidth-bound cost estimate: bytes per token of the quantised weights over the target's.

    All re-quantised matrices at :func:`bits_per_weight`, the rest (norms) at
    32 bits, against every parameter at ``reference_bits`` (16: a bf16
    target).  In a memory-bound decode step, time is proportional to bytes
    read, so this estimates :math:`c` for a llama.cpp-style kernel.
    """
    quant = {id(m.weight) for _, m in _weight_modules(loaded.model)}
    bits_q = bits_per_weight(qtype)
    num, den = 0.0, 0.0
    seen = set()
    for p in loaded.model.parameters():
        if p.data_ptr() in seen:
            continue
        seen.add(p.data_ptr())
        num += p.numel() * (bits_q if id(p) in quant else 32.0)
        den += p.numel() * reference_bits
    return num / den


class QuantStepper:
    """Token-by-token logits of the quantised draft during trace recording (own cache)."""

    def __init__(self, qmodel):
        self.qmodel = qmodel
        self.reset()

    def reset(self):
        """Start a new sequence."""
        self.past = None

    def step(self, input_ids, hidden_states=None):
        """Logits (V,) after feeding ``input_ids`` (the same tokens the target is fed)."""
        import torch

        with torch.no_grad():
            kv = cache_kwargs(self.qmodel, self.past)
            out = self.qmodel(input_ids=input_ids, **kv, use_cache=True)
        self.past = cache_of(out)
        return out.logits[0, -1]
