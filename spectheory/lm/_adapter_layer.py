r"""The trainable module of an early-exit adapter (private; see :mod:`.adapters`).

Two architectures, both acting on the hidden state :math:`h_L` after the
target's first ``L`` decoder layers, shape ``(B, T, d)``:

``"layer"``
    One Llama decoder layer (RMSNorm, grouped-query attention with rotary
    positions, RMSNorm, SwiGLU MLP, two residual connections), initialised
    from the target's layer ``L + 1`` (index ``L``), as Kangaroo [1]_ builds
    its adapter from a transformer block.  At initialisation the adapter
    maps :math:`h_L` to :math:`h_{L+1}` exactly, so the draft equals
    ``exit:L+1``; training moves it towards the target's last layer.  With
    ``depth`` :math:`k > 1`, :math:`k` such layers in sequence, copies of
    the target's layers ``L + 1 .. L + k`` (the draft starts as
    ``exit:L+k``): more trainable capacity for :math:`k` layers' cost.
``"linear"``
    A residual linear map :math:`h \mapsto h + W h` with :math:`W = 0` at
    initialisation, so the draft starts as ``exit:L`` exactly.

The attention keeps its own key-value cache (a dict with ``"k"`` and
``"v"``) for token-by-token drafting.

References
----------
.. [1] Liu et al. "Kangaroo: Lossless Self-Speculative Decoding via Double
   Early Exiting". arXiv:2404.18911.
.. [2] Touvron et al. "LLaMA: Open and Efficient Foundation Language
   Models". arXiv:2302.13971 (the decoder layer).
"""

from __future__ import annotations

import torch
from torch import nn


def rms_norm(x, weight, eps):
    """Llama RMSNorm: ``weight * x / sqrt(mean(x^2) + eps)`` in float32."""
    xf = x.float()
    return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def _rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class DecoderLayer(nn.Module):
    """A Llama decoder layer with its own key-value cache (as HF ``LlamaDecoderLayer``)."""

    def __init__(self, hidden, intermediate, heads, kv_heads, head_dim, eps):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim, self.eps = heads, kv_heads, head_dim, eps
        self.input_layernorm = nn.Parameter(torch.ones(hidden))
        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, hidden, bias=False)
        self.post_attention_layernorm = nn.Parameter(torch.ones(hidden))
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    @classmethod
    def from_target(cls, model, index):
        """A copy of ``model.model.layers[index]`` (weights cloned, trainable)."""
        cfg = model.config
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        out = cls(
            cfg.hidden_size,
            cfg.intermediate_size,
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            head_dim,
            float(cfg.rms_norm_eps),
        )
        src = model.model.layers[index]
        with torch.no_grad():
            out.input_layernorm.copy_(src.input_layernorm.weight)
            out.post_attention_layernorm.copy_(src.post_attention_layernorm.weight)
            for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
                getattr(out, name).weight.copy_(getattr(src.self_attn, name).weight)
            for name in ("gate_proj", "up_proj", "down_proj"):
                getattr(out, name).weight.copy_(getattr(src.mlp, name).weight)
        return out

    def forward(self, x, cos, sin, cache=None):
        """``x`` (B, T, d); ``cos``, ``sin`` (B, T, head_dim); returns (B, T, d)."""
        B, T, _ = x.shape
        h = rms_norm(x, self.input_layernorm, self.eps)
        q = self.q_proj(h).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        c, s = cos[:, None], sin[:, None]
        q = q * c + _rotate_half(q) * s
        k = k * c + _rotate_half(k) * s
        if cache is not None:
            if "k" in cache:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        S = k.shape[2]
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        if S == T:
            a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # T new queries after S - T cached positions
            ar = torch.arange(S, device=x.device)
            mask = ar[None, :] <= (S - T + ar[:T])[:, None]
            a = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.o_proj(a.transpose(1, 2).reshape(B, T, -1))
        h = rms_norm(x, self.post_attention_layernorm, self.eps)
        return x + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


class ResidualLinear(nn.Module):
    """``h + W h`` with ``W`` zero at initialisation (d x d, no bias)."""

    def __init__(self, hidden):
        super().__init__()
        self.proj = nn.Linear(hidden, hidden, bias=False)
        nn.init.zeros_(self.proj.weight)

    def forward(self, x, cos=None, sin=None, cache=None):
        return x + self.proj(x)


class DecoderStack(nn.Module):
    """Several :class:`DecoderLayer` in sequence, each with its own key-value cache."""

    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x, cos, sin, cache=None):
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, None if cache is None else cache.setdefault(i, {}))
        return x


def build(arch, model, layer, depth=1):
    """The untrained module of architecture ``arch`` for exit layer ``layer``.

    ``depth`` decoder layers (``"layer"`` only): copies of the target's
    layers ``layer + 1 .. layer + depth`` (indices ``layer ..``).
    """
    if arch == "layer":
        if depth == 1:  # a bare layer: the parameter names of format-1 files
            return DecoderLayer.from_target(model, layer)
        return DecoderStack([DecoderLayer.from_target(model, layer + i) for i in range(depth)])
    return ResidualLinear(model.config.hidden_size)


def empty(arch, model, depth=1):
    """A module of the right shapes for loading saved weights into."""
    if arch == "layer":
        return build(arch, model, 0, depth)
    return ResidualLinear(model.config.hidden_size)
