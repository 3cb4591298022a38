"""Traces: recorded runs of a real model, replayed without the model.

A trace holds, for every position of target-sampled continuations of a prompt
set, the target's and each early-exit draft's full-vocabulary logits (half
precision), the sampled token ids, the prompt tokens, and metadata (model,
settings, package version, per-tensor SHA-256 checksums).  n-gram drafts are a
deterministic function of the stored tokens and are rebuilt on load rather
than stored (:meth:`Trace.draft_logits`).

File format: one safetensors file; the JSON metadata sits in its header under
the key ``"spectheory"``.  Files are written atomically (temporary file, then
``os.replace``) and every tensor is checked against its checksum on load, so a
truncated or corrupted file raises :class:`~spectheory.TraceError` and is
never half-read.  Traces are cached under ``$SPECTHEORY_CACHE_DIR`` (default
``~/.cache/spectheory``) in ``traces/<key>.safetensors``, keyed by a hash of
the settings.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import InvalidParameterError, TraceError
from .._validate import check_positive_int
from .drafts import STORED_KINDS, ngram_distribution, parse_draft
from .prompts import PROMPTS

__all__ = ["FORMAT_VERSION", "Trace", "TraceSettings", "cache_dir", "load_trace", "record_trace"]

#: Version of the file layout; part of the cache key.
FORMAT_VERSION = 1


def cache_dir() -> Path:
    """The cache folder: ``$SPECTHEORY_CACHE_DIR`` or ``~/.cache/spectheory``."""
    return Path(os.environ.get("SPECTHEORY_CACHE_DIR", Path.home() / ".cache" / "spectheory"))


@dataclass(frozen=True)
class TraceSettings:
    """What a trace records; its hash is the cache key.

    Attributes
    ----------
    model : str
        ``"smollm2-135m-instruct"`` or a local model folder.
    drafts : tuple of str
        Draft specifications (``"exit:L"``, ``"adapter:L"``, ``"quant:TYPE"``,
        ``"ngram:K"``; see :mod:`.drafts`).
    prompts : tuple of int
        Indices into :data:`spectheory.lm.prompts.PROMPTS`.
    max_new_tokens : int
        Continuation length per prompt (shorter if the model ends its turn).
    temperature : float
        Temperature of the target's sampling of the continuation (0: greedy).
    seed : int
        Seed of the sampling (numpy Generator, one stream per prompt).
    """

    model: str = "smollm2-135m-instruct"
    drafts: tuple[str, ...] = ("exit:15", "exit:25", "ngram:3")
    prompts: tuple[int, ...] = tuple(range(len(PROMPTS)))
    max_new_tokens: int = 24
    temperature: float = 1.0
    seed: int = 0

    def __post_init__(self):
        check_positive_int(self.max_new_tokens, "max_new_tokens")
        if not (isinstance(self.temperature, (int, float)) and self.temperature >= 0):
            raise InvalidParameterError(f"temperature must be >= 0; got {self.temperature!r}")
        bad = [i for i in self.prompts if not 0 <= int(i) < len(PROMPTS)]
        if bad or not self.prompts:
            raise InvalidParameterError(
                f"prompts must be a non-empty list of ids in [0, {len(PROMPTS)}); got {bad or '[]'}"
            )
        for d in self.drafts:
            parse_draft(d)

    def key(self) -> str:
        """SHA-256 of the canonical JSON of the settings and the format version (16 hex).

        With ``"adapter:L"`` drafts the SHA-256 of each cached adapter's
        weights is part of the key (a retrained adapter gives a new trace); a
        missing adapter raises :class:`~spectheory.TraceError` with the
        training command.
        """
        doc = {"format": FORMAT_VERSION, **dataclasses.asdict(self)}
        weights = _adapter_fingerprints(self.model, self.drafts)
        if weights:
            doc["adapter_weights"] = weights
        blob = json.dumps(doc, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _adapter_fingerprints(model, drafts) -> dict:
    """``{"adapter:L": weights SHA-256}`` of the adapter drafts among ``drafts``."""
    from .adapters import adapter_fingerprint, adapter_path

    out = {}
    for d in drafts:
        kind, k = parse_draft(d)
        if kind == "adapter":
            path = adapter_path(int(k), model)
            if not path.is_file():
                raise TraceError(
                    f"no trained adapter for {d!r} at {str(path)!r}; train it with: "
                    f"spectheory draft train --layer {k}"
                )
            out[d] = adapter_fingerprint(path)
    return out


@dataclass
class Trace:
    """A recorded trace.

    Attributes
    ----------
    target_logits : ndarray, float16, (N, V)
        Target logits at each position (predicting ``tokens``).
    exit_logits : dict of str to ndarray, float16, (N, V)
        Logits of each model draft (early exit, adapter, quantised), keyed by
        its specification; ``-inf`` outside a draft's vocabulary subset.
    tokens : ndarray, int64, (N,)
        The token the target sampled at each position.
    prompt_ids, steps : ndarray, int64, (N,)
        Prompt of each position and its index within the continuation.
    prompt_tokens : ndarray, int64
        Chat-formatted prompt tokens of all prompts, concatenated.
    prompt_offsets : ndarray, int64, (P + 1,)
        Prompt ``j`` (the ``j``-th recorded) is ``prompt_tokens[o[j]:o[j+1]]``.
    metadata : dict
    """

    target_logits: np.ndarray
    exit_logits: dict
    tokens: np.ndarray
    prompt_ids: np.ndarray
    steps: np.ndarray
    prompt_tokens: np.ndarray
    prompt_offsets: np.ndarray
    metadata: dict = field(default_factory=dict)

    @property
    def num_positions(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def vocab_size(self) -> int:
        return int(self.target_logits.shape[1])

    @property
    def settings(self) -> TraceSettings:
        """The settings the trace was recorded with."""
        raw = self.metadata["settings"]
        return TraceSettings(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})

    @property
    def drafts(self) -> tuple[str, ...]:
        return tuple(self.metadata["settings"]["drafts"])

    def context(self, i: int) -> np.ndarray:
        """Token ids before position ``i``: its prompt and the continuation so far."""
        j = int(np.searchsorted(self.metadata["prompt_order"], self.prompt_ids[i]))
        prompt = self.prompt_tokens[self.prompt_offsets[j] : self.prompt_offsets[j + 1]]
        start = i - int(self.steps[i])
        return np.concatenate([prompt, self.tokens[start:i]])

    def draft_logits(self, draft: str, rows=None) -> np.ndarray:
        """Logits of a draft at positions ``rows`` (all by default), float64 (n, V).

        n-gram drafts are rebuilt from the tokens: their logits are
        ``log q`` with ``-inf`` where ``q = 0``.
        """
        rows = np.arange(self.num_positions) if rows is None else np.asarray(rows)
        kind, k = parse_draft(draft)
        if kind in STORED_KINDS:
            if draft not in self.exit_logits:
                raise InvalidParameterError(
                    f"draft {draft!r} is not in this trace; it has {list(self.drafts)}"
                )
            return self.exit_logits[draft][rows].astype(np.float64)
        out = np.empty((rows.size, self.vocab_size))
        with np.errstate(divide="ignore"):
            for r, i in enumerate(rows):
                out[r] = np.log(ngram_distribution(self.context(int(i)), self.vocab_size, k))
        return out

    def save(self, path) -> Path:
        """Write atomically to ``path`` (safetensors with JSON metadata and checksums)."""
        from safetensors.numpy import save_file

        tensors = {
            "target_logits": np.ascontiguousarray(self.target_logits),
            "tokens": self.tokens,
            "prompt_ids": self.prompt_ids,
            "steps": self.steps,
            "prompt_tokens": self.prompt_tokens,
            "prompt_offsets": self.prompt_offsets,
        }
        for name, arr in self.exit_logits.items():
            tensors[f"exit_logits/{name}"] = np.ascontiguousarray(arr)
        meta = dict(self.metadata)
        meta["checksums"] = {k: _sha256(v) for k, v in tensors.items()}
        with _files.atomic_path(path) as tmp:
            save_file(tensors, tmp, metadata={"spectheory": json.dumps(meta, sort_keys=True)})
        return Path(path)


def _sha256(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def load_trace(path) -> Trace:
    """Read a trace, verifying every tensor's checksum.

    Raises
    ------
    TraceError
        Missing, truncated or corrupted file, or not a spectheory trace.
    """
    path = Path(path)
    header, tensors = _files.read_safetensors(path, "trace file", "numpy")
    if "spectheory" not in header:
        raise TraceError(f"{str(path)!r} is a safetensors file but not a spectheory trace")
    meta = json.loads(header["spectheory"])
    if meta.get("format") != FORMAT_VERSION:
        raise TraceError(
            f"trace {str(path)!r} has format {meta.get('format')!r}; "
            f"this version reads {FORMAT_VERSION}"
        )
    expected = meta.pop("checksums", {})
    if set(expected) != set(tensors):
        raise TraceError(
            f"trace {str(path)!r} lists tensors {sorted(expected)}, has {sorted(tensors)}"
        )
    for name, arr in tensors.items():
        if _sha256(arr) != expected[name]:
            raise TraceError(f"trace {str(path)!r}: tensor {name!r} fails its SHA-256 checksum")
    exits = {k.split("/", 1)[1]: v for k, v in tensors.items() if k.startswith("exit_logits/")}
    return Trace(
        target_logits=tensors["target_logits"],
        exit_logits=exits,
        tokens=tensors["tokens"],
        prompt_ids=tensors["prompt_ids"],
        steps=tensors["steps"],
        prompt_tokens=tensors["prompt_tokens"],
        prompt_offsets=tensors["prompt_offsets"],
        metadata=meta,
    )


def _progress(iterable, enabled, total):
    if not enabled:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc="recording trace", unit="prompt", file=sys.stderr)


def record_trace(
    settings: TraceSettings | None = None,
    *,
    loaded=None,
    cache: bool = True,
    progress: bool = True,
) -> Trace:
    """Record (or reuse from the cache) a trace of the target and its drafts.

    For each prompt, the chat template is applied and the target samples a
    continuation token by token (with a key-value cache) from its processed
    distribution at ``settings.temperature`` (:func:`spectheory.process_logits`,
    numpy Generator seeded by ``(seed, prompt id)``), stopping at the end of
    turn.  At every step the target's logits and, from the same forward pass's
    hidden states, each early-exit draft's logits are kept.

    Parameters
    ----------
    settings : TraceSettings, optional
    loaded : spectheory.lm.LoadedModel, optional
        An already loaded model (must match ``settings.model``).
    cache : bool
        Reuse a cached trace with the same settings, and store a new one.
    progress : bool
        Show a progress bar on stderr.

    Returns
    -------
    Trace
    """
    import torch

    from .. import __version__
    from ..distributions import process_logits
    from ._loader import load_model
    from .drafts import early_exit_logits

    settings = settings or TraceSettings()
    path = cache_dir() / "traces" / f"{settings.key()}.safetensors"
    if cache and path.is_file():
        return load_trace(path)
    loaded = loaded or load_model(settings.model)
    model, tok = loaded.model, loaded.tokenizer
    exits = [parse_draft(d, loaded.num_layers)[1] for d in settings.drafts if d.startswith("exit:")]
    others = _model_drafts(loaded, settings.drafts)
    eos = {int(t) for t in np.atleast_1d(model.generation_config.eos_token_id)}
    if tok.eos_token_id is not None:
        eos.add(int(tok.eos_token_id))
    rows_o = {d: [] for d in others}
    rows_t, rows_e, tokens, pids, steps, ptoks, offsets = (
        [],
        {L: [] for L in exits},
        [],
        [],
        [],
        [],
        [0],
    )
    order = sorted(int(i) for i in settings.prompts)
    t0 = time.perf_counter()
    for pid in _progress(order, progress, len(order)):
        rng = np.random.default_rng([settings.seed, pid])
        messages = [{"role": "user", "content": PROMPTS[pid][1]}]
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
        ids = ids if torch.is_tensor(ids) else ids["input_ids"]
        ptoks.append(ids[0].numpy().astype(np.int64))
        offsets.append(offsets[-1] + ids.shape[1])
        past, inp = None, ids
        for drafter in others.values():
            drafter.reset()
        with torch.no_grad():
            for step in range(settings.max_new_tokens):
                out = model(
                    input_ids=inp, past_key_values=past, use_cache=True, output_hidden_states=True
                )
                past = out.past_key_values
                logits = out.logits[0, -1].float()
                rows_t.append(logits.numpy().astype(np.float16))
                for L in exits:
                    e = early_exit_logits(model, tuple(h[:, -1] for h in out.hidden_states), L)
                    rows_e[L].append(e[0].float().numpy().astype(np.float16))
                for d, drafter in others.items():
                    z = drafter.step(inp, out.hidden_states)
                    rows_o[d].append(z.float().numpy().astype(np.float16))
                probs = process_logits(logits.double().numpy(), temperature=settings.temperature)
                nxt = int(rng.choice(probs.size, p=probs))
                tokens.append(nxt)
                pids.append(pid)
                steps.append(step)
                if nxt in eos:
                    break
                inp = torch.tensor([[nxt]])
    meta = {
        "format": FORMAT_VERSION,
        "settings": dataclasses.asdict(settings),
        "key": settings.key(),
        "model": {
            "name": loaded.name,
            "source": Path(loaded.source).name,
            "num_layers": loaded.num_layers,
            "vocab_size": loaded.vocab_size,
        },
        "prompt_order": order,
        "spectheory_version": __version__,
        "torch_version": torch.__version__,
        "recording_seconds": round(time.perf_counter() - t0, 2),
    }
    weights = _adapter_fingerprints(settings.model, settings.drafts)
    if weights:
        meta["adapter_weights"] = weights
    meta = json.loads(json.dumps(meta))  # the form it takes after a save and load
    trace = Trace(
        target_logits=np.stack(rows_t),
        exit_logits={
            **{f"exit:{L}": np.stack(rows_e[L]) for L in exits},
            **{d: np.stack(r) for d, r in rows_o.items()},
        },
        tokens=np.asarray(tokens, dtype=np.int64),
        prompt_ids=np.asarray(pids, dtype=np.int64),
        steps=np.asarray(steps, dtype=np.int64),
        prompt_tokens=np.concatenate(ptoks),
        prompt_offsets=np.asarray(offsets, dtype=np.int64),
        metadata=meta,
    )
    if cache:
        trace.save(path)
    return trace


def _model_drafts(loaded, drafts) -> dict:
    """Step-wise drafters of the stored non-exit model drafts (adapter, quantised), by spec."""
    out = {}
    for d in drafts:
        kind, k = parse_draft(d, loaded.num_layers)
        if kind == "adapter":
            from .adapters import AdapterStepper, resolve_adapter

            out[d] = AdapterStepper(resolve_adapter(loaded, int(k)))
        elif kind == "quant":
            from .quantised import QuantStepper, quantised_model

            out[d] = QuantStepper(quantised_model(loaded, str(k)))
    return out
