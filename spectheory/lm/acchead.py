r"""The SpecDec++ acceptance-prediction head for early-exit drafts.

SpecDec++ [1]_ (docs/theory.md §5.5) trains a small residual MLP on the draft's
last hidden state to predict whether the drafted token will be accepted:

.. math::

    \mathrm{head} = \mathrm{Linear}(h, 2) \circ \mathrm{ResBlock}^{\circ n},
    \qquad \mathrm{ResBlock}(x) = x + \mathrm{SiLU}(W x + b),

class 1 = accept.  The official code builds ``[ResBlock(h)] * num_layers``,
which repeats **one** module: all residual layers share their weights.  This
module reproduces that by default (``share_weights=True``); pass ``False``
for independent layers.

Here the draft is the early exit after ``L`` of the target's layers, so its
last hidden state is ``hidden_states[L]`` of the target at the draft
position (before the final norm), i.e. the state from which the draft
distribution :math:`q_{L,t}` is computed.  Differences from the paper, on
purpose:

- The head sees the state *before* the drafted token (it predicts the
  acceptance of the position, :math:`\beta_t`, the minimiser of the expected
  soft-label loss), whereas the official code scores the state after
  feeding :math:`Y_t`.  This matches the renewal model of
  :mod:`spectheory.sim.draft_length`, whose acceptance of position ``t`` is
  :math:`\beta_t`.
- Input mixing (the "BERT-like" replacement of draft tokens by target
  tokens with rate 0.15) is skipped: the context is always the target's
  recorded continuation (teacher forcing).
- Hidden states are standardised with the training set's mean and standard
  deviation (stored with the weights); training is Adam in float32 on CPU.

Labels (docs/theory.md §5.5): at each position the draft samples
:math:`y \sim q_{L,t}` (processed at the temperature, the same for the
target) and the soft label is :math:`\ell_t = \min(1, p_t(y)/q_{L,t}(y))`,
the realised acceptance probability.  Loss, with weight :math:`w` on the
reject class:

.. math::

    \mathcal L = \frac{\sum_t w(1 - \ell_t)(-\log \sigma_0(t))
                      + \ell_t(-\log \sigma_1(t))}
                     {\sum_t w(1 - \ell_t) + \ell_t}.

References
----------
.. [1] Huang, Guo, Wang. "SpecDec++: Boosting Speculative Decoding via
   Adaptive Candidate Lengths". COLM 2025, arXiv:2405.19715; code
   Kaffaljidhmah2/SpecDec_pp.
.. [2] Leviathan, Kalman, Matias. arXiv:2211.17192 (acceptance
   :math:`\min(1, p/q)`).
"""

from __future__ import annotations

import hashlib
import json
import numbers
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import InvalidParameterError, TraceError
from .._validate import check_positive_int

__all__ = [
    "HeadDataset",
    "build_head",
    "head_dataset",
    "head_loss",
    "load_head",
    "predict_acceptance",
    "save_head",
    "split_by_prompt",
    "train_head",
]


def build_head(hidden_size: int, num_layers: int = 3, *, share_weights: bool = True):
    """The SpecDec++ head: ``Sequential([ResBlock] * num_layers, Linear(h, 2))``.

    Parameters
    ----------
    hidden_size : int
    num_layers : int >= 1
    share_weights : bool
        ``True`` (default) repeats one ResBlock, as the official code does.

    Returns
    -------
    torch.nn.Module
        Maps standardised hidden states ``(..., h)`` to two logits
        (reject, accept).  Buffers ``mean`` and ``std`` hold the
        standardisation.
    """
    import torch
    from torch import nn

    hidden_size = check_positive_int(hidden_size, "hidden_size")
    num_layers = check_positive_int(num_layers, "num_layers")

    class ResBlock(nn.Module):
        def __init__(self, h):
            super().__init__()
            self.linear = nn.Linear(h, h)
            self.act = nn.SiLU()

        def forward(self, x):
            return x + self.act(self.linear(x))

    class AccHead(nn.Module):
        def __init__(self):
            super().__init__()
            if share_weights:
                block = ResBlock(hidden_size)
                blocks = [block] * num_layers
            else:
                blocks = [ResBlock(hidden_size) for _ in range(num_layers)]
            self.net = nn.Sequential(*blocks, nn.Linear(hidden_size, 2))
            self.register_buffer("mean", torch.zeros(hidden_size))
            self.register_buffer("std", torch.ones(hidden_size))

        def forward(self, x):
            return self.net((x - self.mean) / self.std)

    return AccHead()


@dataclass(frozen=True)
class HeadDataset:
    r"""Training data of the acceptance head for one exit layer.

    Attributes
    ----------
    features : ndarray, float32 (N, h)
        ``hidden_states[layer]`` at each continuation position.
    labels : ndarray, float64 (N,)
        Soft labels :math:`\min(1, p(y)/q(y))`, :math:`y \sim q`.
    beta : ndarray, float64 (N,)
        :math:`\sum \min(p, q)` at each position (the label's expectation).
    prompt_ids : ndarray, int64 (N,)
    layer : int
    temperature : float
    seed : int
    """

    features: np.ndarray
    labels: np.ndarray
    beta: np.ndarray
    prompt_ids: np.ndarray
    layer: int
    temperature: float
    seed: int


def head_dataset(loaded, trace, layer: int, temperature: float = 1.0, *, seed: int = 0):
    """Teacher-forced hidden states, draft samples and soft labels for one exit layer.

    One forward pass per prompt (:func:`spectheory.lm.acceptance.teacher_forced_hidden`);
    at each position :math:`y \\sim q_{L}` is drawn with
    ``numpy.random.default_rng([seed, prompt id])``.

    Returns
    -------
    HeadDataset
    """
    import torch

    from .acceptance import _check_temperature, _torch_probs, teacher_forced_hidden
    from .drafts import early_exit_logits

    layer = check_positive_int(layer, "layer")
    if layer >= loaded.num_layers:
        raise InvalidParameterError(f"layer must be < {loaded.num_layers}; got {layer}")
    temperature = _check_temperature(temperature)
    feats, labels, betas, pids = [], [], [], []
    with torch.no_grad():
        for pid, hs in teacher_forced_hidden(loaded, trace):
            p = _torch_probs(loaded.model.lm_head(hs[-1]), temperature).numpy()
            q = _torch_probs(early_exit_logits(loaded.model, hs, layer), temperature).numpy()
            rng = np.random.default_rng([seed, pid])
            for t in range(q.shape[0]):
                qt = q[t] / q[t].sum()
                y = int(rng.choice(qt.size, p=qt))
                labels.append(min(1.0, p[t, y] / q[t, y]))
            betas.append(np.minimum(p, q).sum(-1))
            feats.append(hs[layer].float().numpy())
            pids.append(np.full(q.shape[0], pid, dtype=np.int64))
    return HeadDataset(
        features=np.concatenate(feats).astype(np.float32),
        labels=np.asarray(labels, dtype=np.float64),
        beta=np.concatenate(betas),
        prompt_ids=np.concatenate(pids),
        layer=layer,
        temperature=temperature,
        seed=int(seed),
    )


def split_by_prompt(prompt_ids, holdout: float = 0.25, *, seed: int = 0):
    """Boolean train mask holding out a ``holdout`` share of the prompts (at least one).

    >>> split_by_prompt([0, 0, 1, 1, 2, 2, 3, 3], 0.25, seed=0).sum()
    np.int64(6)
    """
    pids = np.asarray(prompt_ids)
    if not (isinstance(holdout, numbers.Real) and 0 < holdout < 1):
        raise InvalidParameterError(f"holdout must be in (0, 1); got {holdout!r}")
    uniq = np.unique(pids)
    if uniq.size < 2:
        raise InvalidParameterError(f"a split by prompt needs >= 2 prompts; got {uniq.size}")
    k = min(uniq.size - 1, max(1, round(holdout * uniq.size)))
    held = np.random.default_rng(seed).choice(uniq, size=k, replace=False)
    return ~np.isin(pids, held)


def head_loss(logits, labels, weight: float = 6.0):
    """Weighted soft cross-entropy of docs/theory.md §5.5 (torch tensors; returns a scalar)."""
    import torch

    logp = torch.log_softmax(logits, dim=-1)
    wr = weight * (1.0 - labels)
    num = -(wr * logp[:, 0] + labels * logp[:, 1]).sum()
    return num / (wr + labels).sum()


def _check_weight(weight):
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real) or not weight > 0:
        raise InvalidParameterError(f"weight must be a number > 0; got {weight!r}")
    return float(weight)


def train_head(
    features,
    labels,
    *,
    weight: float = 6.0,
    num_layers: int = 3,
    share_weights: bool = True,
    epochs: int = 200,
    lr: float = 1e-3,
    weight_decay: float = 1e-2,
    batch_size: int = 64,
    seed: int = 0,
):
    """Train the head with AdamW on CPU, reproducibly.

    Initialisation and shuffling use ``torch.manual_seed(seed)`` inside
    ``torch.random.fork_rng`` (the caller's random state is untouched), so
    the same inputs and seed give bit-identical weights.

    Parameters
    ----------
    features : array_like (N, h)
    labels : array_like (N,) in [0, 1]
    weight : float > 0
        :math:`w` on the reject class.
    num_layers, share_weights
        See :func:`build_head`.
    epochs, lr, weight_decay, batch_size, seed

    Returns
    -------
    torch.nn.Module
        In eval mode; ``head.training_metadata`` holds the settings.
    """
    import torch

    X = np.asarray(features, dtype=np.float32)
    y = np.asarray(labels, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],) or X.shape[0] == 0:
        raise InvalidParameterError(
            f"features must be (N, h) and labels (N,); got {X.shape} and {y.shape}"
        )
    if not np.all((y >= 0) & (y <= 1)):
        raise InvalidParameterError("labels must lie in [0, 1]")
    weight = _check_weight(weight)
    epochs = check_positive_int(epochs, "epochs")
    for name, v, low in (("lr", lr, "> 0"), ("weight_decay", weight_decay, ">= 0")):
        real = isinstance(v, numbers.Real) and not isinstance(v, bool)
        if not real or not np.isfinite(v) or not (v > 0 if low == "> 0" else v >= 0):
            raise InvalidParameterError(f"{name} must be a finite number {low}; got {v!r}")
    batch_size = check_positive_int(batch_size, "batch_size")
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y.astype(np.float32))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        head = build_head(X.shape[1], num_layers, share_weights=share_weights)
        head.mean.copy_(Xt.mean(0))
        head.std.copy_(Xt.std(0) + 1e-6)
        opt = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=weight_decay)
        head.train()
        for _ in range(epochs):
            perm = torch.randperm(Xt.shape[0])
            for i in range(0, Xt.shape[0], batch_size):
                idx = perm[i : i + batch_size]
                opt.zero_grad()
                head_loss(head(Xt[idx]), yt[idx], weight).backward()
                opt.step()
    head.eval()
    head.training_metadata = {
        "weight": weight,
        "num_layers": int(num_layers),
        "share_weights": bool(share_weights),
        "hidden_size": int(X.shape[1]),
        "epochs": epochs,
        "lr": float(lr),
        "weight_decay": float(weight_decay),
        "batch_size": batch_size,
        "seed": int(seed),
        "n_train": int(X.shape[0]),
        "torch_version": torch.__version__,
    }
    return head


def predict_acceptance(head, features) -> np.ndarray:
    """Predicted acceptance, softmax(head(x))[1] as float64 (N,)."""
    import torch

    with torch.no_grad():
        z = head(torch.as_tensor(np.asarray(features, dtype=np.float32)))
        return torch.softmax(z.double(), dim=-1)[:, 1].numpy()


def save_head(head, metadata: dict | None = None, path=None) -> Path:
    """Save weights (safetensors) with the training metadata as JSON in the header.

    Written atomically (temporary file, then ``os.replace``).  Default path:
    ``spectheory.lm.cache_dir()/heads/<hash>.safetensors``, the hash being the
    SHA-256 (16 hex) of the canonical JSON metadata.  Shared weights are
    stored once.
    """
    from safetensors.torch import save_file

    from .trace import cache_dir

    meta = dict(getattr(head, "training_metadata", {}))
    meta.update(metadata or {})
    blob = json.dumps(meta, sort_keys=True)
    state = {}
    seen = {}
    for k, v in head.state_dict().items():
        ptr = v.data_ptr()
        if ptr not in seen:  # shared ResBlock: keep the first name only
            seen[ptr] = k
            state[k] = v.contiguous().clone()
    if path is None:
        # the settings alone do not tell two heads apart (other features, same settings)
        h = hashlib.sha256(blob.encode())
        for k in sorted(state):
            h.update(k.encode())
            h.update(state[k].cpu().numpy().tobytes())
        path = cache_dir() / "heads" / f"{h.hexdigest()[:16]}.safetensors"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _files.atomic_path(path) as tmp:
        save_file(state, tmp, metadata={"spectheory_head": blob})
    return path


def load_head(path):
    """Load a head saved by :func:`save_head`; returns the module (eval mode).

    Raises
    ------
    TraceError
        Missing, truncated or foreign file.
    """
    path = Path(path)
    header, state = _files.read_safetensors(path, "head file", "pt")
    if "spectheory_head" not in header:
        raise TraceError(f"{str(path)!r} is not a spectheory acceptance head")
    meta = json.loads(header["spectheory_head"])
    head = build_head(meta["hidden_size"], meta["num_layers"], share_weights=meta["share_weights"])
    missing, unexpected = head.load_state_dict(state, strict=False)
    sd = head.state_dict()
    loaded_ptrs = {sd[k].data_ptr() for k in state if k in sd}
    bad = [k for k in missing if sd[k].data_ptr() not in loaded_ptrs]
    if unexpected or bad:
        raise TraceError(f"head file {str(path)!r}: missing {bad}, unexpected {unexpected}")
    head.eval()
    head.training_metadata = meta
    return head
