r"""Trained early-exit drafts: a small adapter on layer ``L``, the target's norm and head.

The draft ``"adapter:L"`` runs the target's first ``L`` decoder layers, then a
small trainable module :math:`A_\theta` (:mod:`._adapter_layer`: one Llama
decoder layer initialised from the target's layer ``L + 1``, Kangaroo-style
[1]_, or a residual linear map), then the target's final RMSNorm and LM head,
frozen and reused.  Optionally the head keeps only a frequency-ranked subset
:math:`S` of the vocabulary (FR-Spec [3]_): the draft computes logits on
:math:`S` only, and its distribution is the full-vocabulary

.. math::

    q_\theta(x) = \frac{\exp(z_x / T)}{\sum_{y \in S} \exp(z_y / T)}\,[x \in S],
    \qquad z = W_S\,\mathrm{norm}\big(A_\theta(h_L)\big),

so :math:`\sum_x \min(p, q) \le p(S)`.  Training is self-distillation
(LayerSkip [2]_, Kangaroo [1]_): with :math:`\tilde p_S = p(\cdot \mid S)`
the target's distribution at temperature 1 conditioned on :math:`S` (all of
:math:`p` when no subset is used), the loss per position is

.. math::

    \mathrm{KL}(\tilde p_S \,\|\, q_\theta)
        = \sum_{x \in S} \tilde p_S(x) \big(\log \tilde p_S(x) - \log q_\theta(x)\big),

averaged over the assistant positions of the corpus (:mod:`.corpus`).  (With a
subset, :math:`\mathrm{KL}(p \| q) = \infty` whenever :math:`p(S) < 1`; the
conditioned form is the finite part that the draft controls.)

Cheap training: one teacher pass stores per sequence the hidden states
:math:`h_L` (the adapter's input, every position, for its attention) and the
target's normed final hidden state (576 floats each); the teacher
distribution is recomputed from the latter through the frozen head rows
:math:`W_S` in every step (exact, no top-k truncation).  The subset :math:`S`
is the ``vocab`` tokens of largest expected frequency
:math:`\sum_t p_t(x)` over the training positions (ties by token id).

Files: ``cache_dir()/adapters/<name>.safetensors``; the name of the draft
``"adapter:L"`` is ``<model>-L<L>``.  Tensors are the module's weights and
the int64 ``vocab``; the JSON metadata in the header holds the layer,
architecture, corpus hash, token counts, seed, optimiser settings, held-out
metrics, package version and a SHA-256 per tensor; :func:`load_adapter`
verifies them and raises :class:`~spectheory.TraceError` naming the file.

References
----------
.. [1] Liu et al. "Kangaroo: Lossless Self-Speculative Decoding via Double
   Early Exiting". arXiv:2404.18911.
.. [2] Elhoushi et al. "LayerSkip: Enabling Early Exit Inference and
   Self-Speculative Decoding". ACL 2024, arXiv:2404.16710.
.. [3] Zhao et al. "FR-Spec: Accelerating Large-Vocabulary Language Models
   via Frequency-Ranked Speculative Sampling". arXiv:2502.14856.
.. [4] Leviathan, Kalman, Matias. arXiv:2211.17192 (acceptance
   :math:`\sum_x \min(p, q)`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import InvalidParameterError, TraceError
from .._threads import with_torch_threads
from .._validate import check_positive_int
from ._loader import model_device
from .fingerprint import weights_fingerprint

__all__ = [
    "ARCHITECTURES",
    "Adapter",
    "TeacherStates",
    "TrainSettings",
    "adapter_fingerprint",
    "adapter_name",
    "adapter_path",
    "list_adapters",
    "load_adapter",
    "loss_suffix",
    "normal_loss",
    "save_adapter",
    "teacher_states",
    "train_adapter",
]

#: Adapter architectures (:mod:`._adapter_layer`).
ARCHITECTURES = ("layer", "linear")

_META_KEY = "spectheory_adapter"
_FORMAT = 1


def _train_command(layer):
    return f"spectheory draft train --layer {layer}"


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class TrainSettings:
    r"""Settings of :func:`train_adapter` (all recorded in the saved metadata).

    Attributes
    ----------
    arch : {"layer", "linear"}
        Adapter architecture (:mod:`._adapter_layer`).
    depth : int
        Decoder layers of a ``"layer"`` adapter (1 for ``"linear"``); the draft
        ``adapter:L`` then costs :math:`L + \text{depth}` layers.
    vocab : int or None
        Size of the draft's vocabulary subset :math:`S`; ``None`` keeps the
        full vocabulary.
    tokens : int or None
        Training positions used at most (whole sequences, in a seeded order);
        ``None`` uses the whole training split.
    steps : int
        Optimiser steps.
    batch_size : int
        Sequences per step.
    lr : float
        Peak AdamW learning rate (linear warm-up over 5% of the steps, then
        cosine decay to 10%).
    weight_decay : float
    validation : float
        Share of the corpus's sequences held out for the validation KL.
    seed : int
        Seeds the data order, the split and any random initialisation.
    loss : str
        Training loss (:func:`spectheory.torch.losses.parse_loss`): ``"kl"``
        (distillation), ``"tv"`` (minus log acceptance), ``"alpha:N:LAW"``
        (minus log optimal ``N``-draft acceptance) or a weighted sum such as
        ``"0.5*kl+tv"``; stored in its normal form (:func:`normal_loss`).
    """

    arch: str = "layer"
    depth: int = 1
    vocab: int | None = 8192
    tokens: int | None = None
    steps: int = 800
    batch_size: int = 8
    lr: float = 1e-3
    weight_decay: float = 0.0
    validation: float = 0.05
    seed: int = 0
    loss: str = "kl"

    def __post_init__(self):
        if self.arch not in ARCHITECTURES:
            raise InvalidParameterError(f"arch must be one of {ARCHITECTURES}; got {self.arch!r}")
        check_positive_int(self.depth, "depth")
        if self.arch == "linear" and self.depth != 1:
            raise InvalidParameterError(f"depth must be 1 for arch 'linear'; got {self.depth!r}")
        if self.vocab is not None:
            check_positive_int(self.vocab, "vocab")
        if self.tokens is not None:
            check_positive_int(self.tokens, "tokens")
        check_positive_int(self.steps, "steps")
        check_positive_int(self.batch_size, "batch_size")
        for name in ("lr", "weight_decay"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
                raise InvalidParameterError(f"{name} must be a finite number; got {v!r}")
        if not self.lr > 0 or self.weight_decay < 0:
            raise InvalidParameterError(
                f"lr must be > 0 and weight_decay >= 0; got {self.lr!r}, {self.weight_decay!r}"
            )
        if not (isinstance(self.validation, numbers.Real) and 0 <= self.validation < 1):
            raise InvalidParameterError(f"validation must be in [0, 1); got {self.validation!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral):
            raise InvalidParameterError(f"seed must be an integer; got {self.seed!r}")
        object.__setattr__(self, "loss", normal_loss(self.loss))


def normal_loss(spec) -> str:
    """The normal form of a training-loss specification (checked; names the argument ``loss``).

    Terms in the given order, ``WEIGHT*NAME`` with the weight as Python's
    shortest round-trip ``repr`` (the weight trained with is the one given),
    left out where it is 1; zero-weight terms dropped; ``alpha:0N`` as
    ``alpha:N``: equal specifications share a cache key.

    >>> normal_loss("1*kl"), normal_loss("0.50*kl + alpha:04:iid + 0*tv")
    ('kl', '0.5*kl+alpha:4:iid')
    >>> normal_loss("0.5*kl+0.5*kl+alpha:2:iid+alpha:02:iid")
    'kl+2.0*alpha:2:iid'
    """
    if spec == "kl":  # the default: no torch import
        return "kl"
    if not isinstance(spec, str):
        raise InvalidParameterError(f"loss must be a string such as 'kl' or 'tv'; got {spec!r}")
    from ..torch.losses import parse_loss

    try:
        terms = parse_loss(spec)
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"loss {spec!r} is invalid: {exc}") from None
    # parse_loss has merged repeated terms and written alpha:0N as alpha:N
    kept = [(name, w) for name, w in terms.items() if w != 0]
    return "+".join(n if w == 1 else f"{w!r}*{n}" for n, w in kept)


def loss_suffix(loss) -> str:
    """File-name suffix of an adapter trained with ``loss``: empty for ``"kl"``.

    ``:`` becomes ``-`` and ``*`` becomes ``x``, so the key stays a plain
    file stem (the loss grammar has no other punctuation but ``.``, ``+``).

    >>> loss_suffix("kl"), loss_suffix("alpha:4:iid"), loss_suffix("0.5*kl+tv")
    ('', '-alpha-4-iid', '-0.5xkl+tv')
    """
    loss = normal_loss(loss)
    if loss == "kl":
        return ""
    return "-" + loss.replace(":", "-").replace("*", "x")


# --------------------------------------------------------------------------- the draft


@dataclass
class Adapter:
    r"""A trained (or freshly initialised) early-exit adapter bound to its target.

    Attributes
    ----------
    model : transformers causal LM
        The target; its first ``layer`` blocks, final norm, rotary embedding
        and LM head are used, never modified.
    layer : int
        Exit layer :math:`L`.
    module : torch.nn.Module
        The trainable adapter.
    vocab : torch.Tensor, int64 (K,) or None
        The draft vocabulary :math:`S` (sorted ids), or ``None`` for all.
    arch : str
    depth : int
        Decoder layers of the module (1 for ``"linear"``).
    metadata : dict
    path : pathlib.Path or None
        Where it was loaded from or saved to.
    """

    model: object
    layer: int
    module: object
    vocab: object
    arch: str
    depth: int = 1
    metadata: dict = field(default_factory=dict)
    path: Path | None = None

    def __post_init__(self):
        self._refresh_head()

    def _refresh_head(self):
        w = self.model.lm_head.weight.detach()
        # the vocabulary stays on the host (it is saved as numpy); the head rows follow the model
        self.head_weight = w if self.vocab is None else w.index_select(0, self.vocab.to(w.device))
        self.norm_weight = self.model.model.norm.weight.detach()
        self.norm_eps = float(self.model.config.rms_norm_eps)

    @property
    def vocab_size(self) -> int:
        """Size of the target's vocabulary (the draft's support is within it)."""
        return int(self.model.lm_head.weight.shape[0])

    def subset_logits(self, hidden, position_ids, cache=None):
        r"""Logits :math:`z` on :math:`S` from layer-``L`` states.

        Parameters
        ----------
        hidden : torch.Tensor (B, T, d)
            :math:`h_L` at positions ``position_ids``.
        position_ids : torch.Tensor, int64 (B, T)
        cache : dict, optional
            The adapter's key-value cache (filled in place).

        Returns
        -------
        torch.Tensor (B, T, K)
        """
        from ._adapter_layer import rms_norm

        cos, sin = self.model.model.rotary_emb(hidden, position_ids)
        x = self.module(hidden, cos, sin, cache)
        x = rms_norm(x, self.norm_weight, self.norm_eps)
        return x @ self.head_weight.T

    def full_logits(self, subset_logits):
        """Scatter subset logits into the full vocabulary, ``-inf`` outside :math:`S` (.., V)."""
        import torch

        if self.vocab is None:
            return subset_logits
        out = torch.full(
            (*subset_logits.shape[:-1], self.vocab_size),
            float("-inf"),
            dtype=subset_logits.dtype,
            device=subset_logits.device,
        )
        out[..., self.vocab.to(subset_logits.device)] = subset_logits
        return out

    def weights_sha256(self) -> str:
        """SHA-256 over the module's tensors and the vocabulary, in name order (hex)."""
        h = hashlib.sha256()
        for name, arr in sorted(_state_arrays(self).items()):
            h.update(name.encode())
            h.update(np.ascontiguousarray(arr).tobytes())
        return h.hexdigest()


def _state_arrays(adapter):
    state = adapter.module.state_dict()
    out = {f"module/{k}": v.detach().float().cpu().numpy() for k, v in state.items()}
    if adapter.vocab is not None:
        out["vocab"] = adapter.vocab.cpu().numpy().astype(np.int64)
    return out


def init_adapter(loaded, layer: int, arch: str = "layer", vocab=None, depth: int = 1) -> Adapter:
    """An untrained adapter for exit layer ``layer``.

    ``"layer"``: a copy of the target's layers ``layer + 1 .. layer + depth``
    (so the draft is ``exit:layer+depth``); ``"linear"``: zero residual map
    (the draft is ``exit:layer``).  ``vocab``: sorted token ids of
    :math:`S`, or ``None``.
    """
    import torch

    layer = _check_layer(layer, loaded.num_layers, depth)
    if arch not in ARCHITECTURES:
        raise InvalidParameterError(f"arch must be one of {ARCHITECTURES}; got {arch!r}")
    if arch == "linear" and depth != 1:
        raise InvalidParameterError(f"depth must be 1 for arch 'linear'; got {depth!r}")
    if vocab is not None:
        vocab = torch.as_tensor(np.asarray(vocab, dtype=np.int64))
        if vocab.ndim != 1 or vocab.numel() == 0 or not bool((vocab[1:] > vocab[:-1]).all()):
            raise InvalidParameterError("vocab must be a non-empty sorted array of distinct ids")
        if int(vocab[0]) < 0 or int(vocab[-1]) >= loaded.vocab_size:
            raise InvalidParameterError(f"vocab ids must lie in [0, {loaded.vocab_size})")
    from ._adapter_layer import build

    module = build(arch, loaded.model, layer, depth).to(model_device(loaded.model))
    return Adapter(
        model=loaded.model, layer=layer, module=module, vocab=vocab, arch=arch, depth=depth
    )


def _check_layer(layer, num_layers, depth=1):
    layer = check_positive_int(layer, "layer")
    depth = check_positive_int(depth, "depth")
    if layer + depth > num_layers - 1 and num_layers > 2:
        raise InvalidParameterError(
            f"adapter exit layer + depth must be at most {num_layers - 1} (a deeper draft would "
            f"cost as much as the target); got layer {layer}, depth {depth}"
        )
    return layer


# --------------------------------------------------------------------------- teacher pass


@dataclass(frozen=True)
class TeacherStates:
    r"""Hidden states of one teacher-forced pass over a corpus.

    Attributes
    ----------
    hidden : dict {int: tuple of torch.Tensor (n_s, d)}
        :math:`h_L` at every position of every sequence, per requested layer.
    final : tuple of torch.Tensor (m_s, d)
        The target's normed final hidden state at the training positions
        ``loss_start[s] .. n_s - 1`` of sequence ``s``.
    loss_start : ndarray, int64 (S,)
    mass : ndarray, float64 (V,)
        :math:`\sum_t p_t(x)` over the training positions (expected token
        frequencies; the FR-Spec ranking).
    corpus_sha256 : str
    """

    hidden: dict
    final: tuple
    loss_start: np.ndarray
    mass: np.ndarray
    corpus_sha256: str

    @property
    def num_positions(self) -> int:
        """Training positions, ``loss_start[s] .. n_s - 1`` of every sequence: the corpus's
        assistant tokens (:attr:`.corpus.Corpus.num_loss_tokens`) plus one per sequence."""
        return int(sum(f.shape[0] for f in self.final))

    def select(self, indices) -> TeacherStates:
        idx = [int(i) for i in indices]
        return TeacherStates(
            hidden={L: tuple(h[i] for i in idx) for L, h in self.hidden.items()},
            final=tuple(self.final[i] for i in idx),
            loss_start=self.loss_start[idx],
            mass=self.mass,
            corpus_sha256=self.corpus_sha256,
        )


@with_torch_threads
def teacher_states(loaded, corpus, layers, *, batch_size=None, progress=False) -> TeacherStates:
    """One teacher-forced pass of the target over ``corpus``, keeping ``h_L`` for each layer.

    Sequences go through in right-padded batches of ``batch_size`` (default 8
    on the CPU, 64 on a GPU); with causal attention the padding after a
    sequence does not change its states.  The states stay on the model's
    device, where :func:`train_adapter` reads them.  Memory: ``4 d (n + m)``
    bytes per layer and sequence.
    """
    import torch

    layers = sorted({_check_layer(L, loaded.num_layers) for L in layers})
    device = model_device(loaded.model)
    if batch_size is None:
        batch_size = 8 if device.type == "cpu" else 64
    batch_size = check_positive_int(batch_size, "batch_size")
    hidden = {L: [] for L in layers}
    final, mass = [], torch.zeros(loaded.vocab_size, dtype=torch.float64, device=device)
    t0 = time.perf_counter()
    seqs, starts = corpus.sequences, corpus.loss_start.tolist()
    with torch.no_grad():
        for s0 in range(0, len(seqs), batch_size):
            chunk = range(s0, min(s0 + batch_size, len(seqs)))
            n = max(seqs[s].size for s in chunk)
            ids = torch.zeros((len(chunk), n), dtype=torch.long)
            for r, s in enumerate(chunk):  # right padding: causal attention ignores it
                ids[r, : seqs[s].size] = torch.as_tensor(seqs[s])
            out = loaded.model(input_ids=ids.to(device), output_hidden_states=True, use_cache=False)
            for r, s in enumerate(chunk):
                m, b = seqs[s].size, starts[s]
                for L in layers:
                    hidden[L].append(out.hidden_states[L][r, :m].clone())
                final.append(out.hidden_states[-1][r, b:m].clone())
                mass += torch.softmax(out.logits[r, b:m].double(), dim=-1).sum(0)
            if progress:
                print(
                    f"  teacher pass: {chunk.stop}/{len(seqs)} sequences "
                    f"({time.perf_counter() - t0:.0f} s)",
                    file=sys.stderr,
                )
    return TeacherStates(
        hidden={L: tuple(v) for L, v in hidden.items()},
        final=tuple(final),
        loss_start=np.asarray(corpus.loss_start, dtype=np.int64),
        mass=mass.cpu().numpy(),
        corpus_sha256=corpus.sha256,
    )


def frequency_vocab(mass, size: int) -> np.ndarray:
    """The ``size`` ids of largest ``mass`` (ties: smaller id first), sorted by id.

    >>> frequency_vocab(np.array([0.1, 0.5, 0.1, 0.3]), 2).tolist()
    [1, 3]
    """
    mass = np.asarray(mass, dtype=np.float64)
    size = check_positive_int(size, "vocab")
    if size > mass.size:
        raise InvalidParameterError(f"vocab must be <= {mass.size}; got {size}")
    order = np.lexsort((np.arange(mass.size), -mass))
    return np.sort(order[:size]).astype(np.int64)


# --------------------------------------------------------------------------- training


def _batches(states, layer, idx, device_dtype):
    """Right-padded batch: h (B, T, d), final (B, T, d), mask (B, T) of training positions.

    On the device that holds the teacher states (the model's, :func:`teacher_states`).
    """
    import torch

    n = max(states.hidden[layer][i].shape[0] for i in idx)
    first = states.hidden[layer][idx[0]]
    d, device = first.shape[1], first.device
    h = torch.zeros((len(idx), n, d), dtype=device_dtype, device=device)
    f = torch.zeros((len(idx), n, d), dtype=device_dtype, device=device)
    mask = torch.zeros((len(idx), n), dtype=torch.bool, device=device)
    for r, i in enumerate(idx):
        hi, b = states.hidden[layer][i], int(states.loss_start[i])
        h[r, : hi.shape[0]] = hi
        f[r, b : hi.shape[0]] = states.final[i]
        mask[r, b : hi.shape[0]] = True
    return h, f, mask


def kl_loss(adapter, h, final, mask):
    r"""Mean over masked positions of :math:`\mathrm{KL}(\tilde p_S \| q_\theta)` (torch scalar).

    ``h``, ``final`` (B, T, d); ``mask`` (B, T) bool.
    """
    return batch_loss(adapter, h, final, mask, "kl")


def batch_loss(adapter, h, final, mask, loss="kl"):
    r"""Mean over masked positions of the training loss ``loss`` (torch scalar).

    ``"kl"`` is :math:`\mathrm{KL}(\tilde p_S \| q_\theta)` in float32 (the
    original training loss, unchanged).  Any other specification goes through
    :func:`spectheory.torch.losses.draft_loss` in float64 with the target rows
    :math:`\tilde p_S` (the target conditioned on the draft's vocabulary
    :math:`S`, as for KL: the part of the target the draft can match) and the
    draft's logits on :math:`S`.

    ``h``, ``final`` (B, T, d); ``mask`` (B, T) bool.
    """
    import torch

    pos = torch.arange(h.shape[1], device=h.device)[None].expand(h.shape[0], -1)
    z = adapter.subset_logits(h, pos)[mask]
    with torch.no_grad():
        teacher = final[mask] @ adapter.head_weight.T
    if loss == "kl":
        logp = torch.log_softmax(teacher, dim=-1)
        logq = torch.log_softmax(z, dim=-1)
        return (logp.exp() * (logp - logq)).sum(-1).mean()
    from ..torch.losses import draft_loss

    # float64 softmax: draft_loss checks that target rows sum to 1 within 1e-9
    p = torch.softmax(teacher.to(torch.float64), dim=-1)
    return draft_loss(loss, p, z)


def mean_kl(adapter, states, indices, batch_size=8) -> float:
    """Position-weighted mean KL over the sequences ``indices`` (no gradient)."""
    return mean_loss(adapter, states, indices, "kl", batch_size)


def mean_loss(adapter, states, indices, loss="kl", batch_size=8) -> float:
    """Position-weighted mean of the loss ``loss`` over the sequences ``indices`` (no gradient)."""
    import torch

    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(indices), batch_size):
            idx = list(indices[i : i + batch_size])
            h, f, m = _batches(states, adapter.layer, idx, torch.float32)
            k = int(m.sum())
            total += float(batch_loss(adapter, h, f, m, loss)) * k
            count += k
    return total / max(count, 1)


def _split(num, validation, seed):
    rng = np.random.default_rng([int(seed), 7])
    order = rng.permutation(num)
    k = round(validation * num) if validation > 0 else 0
    k = min(max(k, 1 if validation > 0 else 0), num - 1)
    return np.sort(order[k:]), np.sort(order[:k])


@with_torch_threads
def train_adapter(
    loaded,
    states: TeacherStates,
    layer: int,
    settings: TrainSettings | None = None,
    *,
    progress=False,
) -> Adapter:
    """Train an adapter for exit ``layer`` on a teacher pass, reproducibly.

    Sequences are split into training and validation parts (seeded);
    ``settings.tokens`` keeps a seeded prefix of the training sequences with
    at most that many training positions (at least one sequence).  AdamW on
    the adapter's parameters only; the data order comes from
    ``numpy.random.default_rng([seed, 11])`` and any initialisation from
    ``torch.manual_seed(seed)`` inside ``torch.random.fork_rng``, so the same
    inputs and settings give bit-identical weights on the same machine.

    Returns
    -------
    Adapter
        ``metadata`` holds the settings, token counts, the initial and final
        validation KL and the training time.
    """
    import torch

    settings = settings or TrainSettings()
    if layer not in states.hidden:
        raise InvalidParameterError(
            f"the teacher states hold layers {sorted(states.hidden)}; got layer {layer}"
        )
    num = len(states.final)
    if num < 2:
        raise InvalidParameterError(f"training needs >= 2 sequences; got {num}")
    train_idx, val_idx = _split(num, settings.validation, settings.seed)
    rng = np.random.default_rng([int(settings.seed), 11])
    train_idx = train_idx[rng.permutation(train_idx.size)]
    if settings.tokens is not None:
        sizes = np.array([states.final[i].shape[0] for i in train_idx])
        keep = max(1, int(np.searchsorted(np.cumsum(sizes), settings.tokens, side="right")))
        train_idx = train_idx[:keep]
    n_train = int(sum(states.final[i].shape[0] for i in train_idx))
    vocab = None if settings.vocab is None else frequency_vocab(states.mass, settings.vocab)
    t0 = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(settings.seed))
        adapter = init_adapter(loaded, layer, settings.arch, vocab, settings.depth)
        params = [p for p in adapter.module.parameters()]
        opt = torch.optim.AdamW(
            params, lr=settings.lr, weight_decay=settings.weight_decay, betas=(0.9, 0.98)
        )
        warm = max(1, settings.steps // 20)

        def lr_at(step):
            if step < warm:
                return (step + 1) / warm
            frac = (step - warm) / max(1, settings.steps - warm)
            return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
        kl0 = mean_kl(adapter, states, val_idx) if val_idx.size else float("nan")
        own0 = _own_loss(adapter, states, val_idx, settings.loss, kl0)
        order, pos, losses = [], 0, []
        adapter.module.train()
        for step in range(settings.steps):
            idx = []
            while len(idx) < min(settings.batch_size, train_idx.size):
                if pos >= len(order):
                    order, pos = train_idx[rng.permutation(train_idx.size)].tolist(), 0
                idx.append(order[pos])
                pos += 1
            h, f, m = _batches(states, layer, idx, torch.float32)
            opt.zero_grad()
            loss = batch_loss(adapter, h, f, m, settings.loss)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
            if progress and ((step + 1) % 25 == 0 or step + 1 == settings.steps):
                print(
                    f"  step {step + 1}/{settings.steps}: train {settings.loss} "
                    f"{np.mean(losses[-25:]):.4f} "
                    f"({time.perf_counter() - t0:.0f} s)",
                    file=sys.stderr,
                )
        adapter.module.eval()
    kl1 = mean_kl(adapter, states, val_idx) if val_idx.size else float("nan")
    own1 = _own_loss(adapter, states, val_idx, settings.loss, kl1)
    adapter.metadata = {
        "format": _FORMAT,
        "layer": int(layer),
        "arch": settings.arch,
        "depth": settings.depth,
        "settings": dataclasses.asdict(settings),
        "optimiser": {
            "name": "AdamW",
            "lr": settings.lr,
            "betas": [0.9, 0.98],
            "weight_decay": settings.weight_decay,
            "schedule": "linear warm-up 5%, cosine to 10%",
            "grad_clip": 1.0,
        },
        "corpus_sha256": states.corpus_sha256,
        "train_sequences": int(train_idx.size),
        "train_tokens": n_train,
        "tokens_seen": _tokens_seen(states, train_idx, settings),
        "model": str(loaded.name),
        # The target's identity, not only its name (another model under one name got this
        # adapter): its files' fingerprint, and its weights' in memory (dtype-dependent).
        "model_fingerprint": loaded.fingerprint(),
        "model_weights_fingerprint": weights_fingerprint(loaded.model, loaded.tokenizer),
        "validation_sequences": int(val_idx.size),
        "validation_kl_initial": kl0,
        "validation_kl": kl1,
        "loss": settings.loss,
        "validation_loss_initial": own0,
        "validation_loss": own1,
        "train_loss_last": float(np.mean(losses[-25:])),
        **({"train_kl_last": float(np.mean(losses[-25:]))} if settings.loss == "kl" else {}),
        "train_seconds": round(time.perf_counter() - t0, 2),
        "torch_version": torch.__version__,
        "threads": int(torch.get_num_threads()),
    }
    return adapter


def _own_loss(adapter, states, val_idx, loss, kl):
    """Validation value of the training loss itself (the KL already computed for ``"kl"``)."""
    if not val_idx.size:
        return float("nan")
    return kl if loss == "kl" else mean_loss(adapter, states, val_idx, loss)


def _tokens_seen(states, train_idx, settings):
    """Training positions processed over all steps (sequences cycle through train_idx)."""
    sizes = [states.final[i].shape[0] for i in train_idx]
    per_seq = float(np.mean(sizes))
    return round(per_seq * min(settings.batch_size, len(sizes)) * settings.steps)


# --------------------------------------------------------------------------- files


def adapter_name(loaded, layer: int, loss: str = "kl") -> str:
    """Cache name of an adapter: ``<model>-L<layer>`` plus :func:`loss_suffix` of its loss.

    With the default loss ``"kl"`` this is the draft ``"adapter:L"``.
    """
    return f"{_model_slug_from_name(loaded.name)}-L{int(layer)}{loss_suffix(loss)}"


def _model_slug_from_name(model_name):
    from ._loader import SMOLLM2

    if model_name == SMOLLM2:
        return SMOLLM2
    return "local-" + hashlib.sha256(str(model_name).encode()).hexdigest()[:8]


def adapter_path(name_or_layer, model_name: str | None = None, loss: str = "kl") -> Path:
    """Path of a cached adapter: by name, or by layer and training loss.

    By layer with the default ``loss="kl"`` it is the file of the draft
    ``"adapter:L"``; another loss adds :func:`loss_suffix` (its own cache key).
    """
    from ._loader import SMOLLM2
    from .cache import cache_dir

    if isinstance(name_or_layer, numbers.Integral) and not isinstance(name_or_layer, bool):
        slug = _model_slug_from_name(model_name or SMOLLM2)
        name = f"{slug}-L{int(name_or_layer)}{loss_suffix(loss)}"
    else:
        if loss != "kl":
            raise InvalidParameterError(f"loss applies to a layer, not a name; got {loss!r}")
        name = str(name_or_layer)
        if not name or "/" in name or name.startswith("."):
            raise InvalidParameterError(f"adapter name must be a plain file stem; got {name!r}")
    return cache_dir() / "adapters" / f"{name}.safetensors"


def save_adapter(adapter: Adapter, path=None, *, extra: dict | None = None) -> Path:
    """Write the adapter atomically as safetensors with JSON metadata and checksums."""
    from safetensors.numpy import save_file

    from .. import __version__

    tensors = {k: np.ascontiguousarray(v) for k, v in _state_arrays(adapter).items()}
    meta = dict(adapter.metadata)
    meta.update(extra or {})
    meta.update(
        format=_FORMAT,
        layer=int(adapter.layer),
        arch=adapter.arch,
        depth=int(adapter.depth),
        vocab_size=None if adapter.vocab is None else int(adapter.vocab.numel()),
        spectheory_version=__version__,
        checksums={k: hashlib.sha256(v.tobytes()).hexdigest() for k, v in tensors.items()},
        weights_sha256=adapter.weights_sha256(),
    )
    meta["header_sha256"] = _header_sha256(meta)
    if path is None:
        path = adapter_path(int(adapter.layer), meta.get("model"))
    path = Path(path)
    with _files.atomic_path(path) as tmp:
        save_file(tensors, tmp, metadata={_META_KEY: json.dumps(meta, sort_keys=True)})
    adapter.metadata, adapter.path = meta, path
    return path


def _header_sha256(meta):
    """SHA-256 of the metadata (all but this checksum), so that a header edit is caught."""
    rest = {k: v for k, v in meta.items() if k != "header_sha256"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()


def _read_meta(path):
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise TraceError(f"adapter file {str(path)!r} does not exist")
    try:
        with safe_open(str(path), framework="numpy") as f:
            header = f.metadata() or {}
    except (SafetensorError, OSError, ValueError) as exc:
        raise TraceError(
            f"adapter file {str(path)!r} is truncated or not safetensors: {exc}"
        ) from None
    if _META_KEY not in header:
        raise TraceError(f"{str(path)!r} is a safetensors file but not a spectheory adapter")
    return json.loads(header[_META_KEY])


def adapter_fingerprint(path) -> str:
    """The ``weights_sha256`` recorded in an adapter file's header (reads the header only)."""
    return str(_read_meta(path)["weights_sha256"])


def _check_target(meta, loaded, path) -> None:
    """Refuse an adapter trained on another model than ``loaded`` (files older than the
    fingerprints in the metadata name the model only, and load as before)."""
    if "model_fingerprint" not in meta or meta["model_fingerprint"] == loaded.fingerprint():
        return
    if meta.get("model_weights_fingerprint") == weights_fingerprint(loaded.model,
                                                                    loaded.tokenizer):
        return  # the same weights, loaded another way (from memory, or from the files)
    raise TraceError(
        f"adapter file {str(path)!r} was trained on another model than {loaded.name!r} (its "
        f"fingerprint {meta['model_fingerprint'][:16]} differs from this model's); retrain it "
        f"for this model with --force"
    )


def load_adapter(loaded, path) -> Adapter:
    """Load an adapter saved by :func:`save_adapter`, verifying every checksum.

    Raises
    ------
    TraceError
        Missing, truncated, foreign or corrupted file (the message names it).
    """
    import torch

    path = Path(path)
    header, tensors = _files.read_safetensors(path, "adapter file", "numpy")
    if _META_KEY not in header:
        raise TraceError(f"{str(path)!r} is a safetensors file but not a spectheory adapter")
    meta = json.loads(header[_META_KEY])
    if meta.get("format") != _FORMAT:
        raise TraceError(f"adapter file {str(path)!r} has format {meta.get('format')!r}")
    if "header_sha256" in meta and meta["header_sha256"] != _header_sha256(meta):
        raise TraceError(f"adapter file {str(path)!r}: its metadata fails its SHA-256 checksum")
    sums = meta.get("checksums", {})
    if set(sums) != set(tensors):
        raise TraceError(f"adapter file {str(path)!r} lists {sorted(sums)}, has {sorted(tensors)}")
    for k, v in tensors.items():
        if hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest() != sums[k]:
            raise TraceError(f"adapter file {str(path)!r}: tensor {k!r} fails its SHA-256 checksum")
    depth = meta.get("depth", 1)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise TraceError(f"adapter file {str(path)!r} has an invalid depth {depth!r}")
    layer = _check_layer(int(meta["layer"]), loaded.num_layers, depth)
    _check_target(meta, loaded, path)
    from ._adapter_layer import empty

    if meta.get("arch") not in ARCHITECTURES:
        raise TraceError(f"adapter file {str(path)!r} has an unknown arch {meta.get('arch')!r}")
    module = empty(meta["arch"], loaded.model, depth)
    state = {k.split("/", 1)[1]: torch.from_numpy(v.copy()) for k, v in tensors.items() if "/" in k}
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise TraceError(f"adapter file {str(path)!r} does not fit this model: {exc}") from None
    module.to(model_device(loaded.model)).eval()
    vocab = torch.from_numpy(tensors["vocab"].copy()) if "vocab" in tensors else None
    return Adapter(
        model=loaded.model,
        layer=layer,
        module=module,
        vocab=vocab,
        arch=meta["arch"],
        depth=depth,
        metadata=meta,
        path=path,
    )


def resolve_adapter(loaded, layer: int) -> Adapter:
    """The cached adapter of the draft ``"adapter:L"``; a clear error if it is missing."""
    path = adapter_path(int(layer), loaded.name)
    if not path.is_file():
        raise TraceError(
            f"no trained adapter for 'adapter:{layer}' at {str(path)!r}; train it with: "
            f"{_train_command(layer)}"
        )
    adapter = load_adapter(loaded, path)
    if adapter.layer != int(layer):
        raise TraceError(
            f"{str(path)!r}, the file of 'adapter:{layer}', holds an adapter of layer "
            f"{adapter.layer}; retrain it with: {_train_command(layer)} --force"
        )
    return adapter


def list_adapters():
    """``(name, metadata)`` of every adapter file in the cache, by name (unreadable: error text)."""
    from .cache import cache_dir

    out = []
    for p in sorted((cache_dir() / "adapters").glob("*.safetensors")):
        try:
            out.append((p.stem, _read_meta(p)))
        except TraceError as exc:
            out.append((p.stem, {"error": str(exc)}))
    return out


class AdapterStepper:
    """Token-by-token logits of an adapter draft during trace recording.

    Fed, at each target forward, the target's ``hidden_states`` of the new
    tokens (the draft shares the target's first ``L`` layers, so their states
    are the target's); keeps the adapter's own key-value cache.
    """

    def __init__(self, adapter: Adapter):
        self.adapter = adapter
        self.reset()

    def reset(self):
        """Start a new sequence (empty cache, position 0)."""
        self.cache, self.pos = {}, 0

    def step(self, input_ids, hidden_states):
        """Full-vocabulary logits (V,) at the last new position (``-inf`` outside S)."""
        import torch

        h = hidden_states[self.adapter.layer]
        n = h.shape[1]
        pos = torch.arange(self.pos, self.pos + n, device=h.device)[None]
        with torch.no_grad():
            z = self.adapter.subset_logits(h, pos, self.cache)[0, -1]
        self.pos += n
        return self.adapter.full_logits(z)
