"""Traces: recorded runs of a real model, replayed without the model.

A trace holds, for every position of target-sampled continuations of a prompt
set, the target's and each model draft's full-vocabulary logits (half
precision), the sampled token ids, the prompt tokens, and metadata (model,
settings, fingerprints, package version, checksums).  n-gram drafts are a
deterministic function of the stored tokens and are rebuilt on load rather
than stored (:meth:`Trace.draft_logits`).  Traces of logits recorded by
another framework are built with :meth:`Trace.from_arrays`.

File format (:data:`FORMAT_VERSION` 2): one safetensors file; the JSON
metadata sits in its header under the key ``"spectheory"``, with the SHA-256
of every tensor's bytes and a SHA-256 of the header itself (the metadata and
every tensor's dtype and shape).  Files are written atomically (temporary
file, then ``os.replace``) and checked on load, so a truncated or corrupted
file, or an edited header, raises :class:`~spectheory.TraceError` and is
never half-read.  Traces are cached in :func:`~spectheory.lm.cache.cache_dir`
as ``traces/<key>.safetensors``, the key hashing the settings and the
fingerprints of the target's and drafts' weights and tokenizer
(:meth:`TraceSettings.key`, :mod:`spectheory.lm.fingerprint`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import numbers
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import InvalidParameterError, ShapeMismatchError, TraceError
from .._threads import with_torch_threads
from .._validate import check_positive_int, check_rng
from ._kv import cache_kwargs, cache_of
from ._loader import require_cpu
from .arrays import fields_from_tensors, trace_fields
from .cache import cache_dir
from .draft_kinds import draft_kind
from .drafts import ngram_distribution, parse_draft
from .prompts import encode_prompt, prompt_set

_log = logging.getLogger(__name__)

__all__ = [
    "FORMAT_VERSION",
    "Trace",
    "TraceSettings",
    "cache_dir",
    "load_arrays",
    "load_trace",
    "record_trace",
    "trace_cache_path",
]

#: Version of the file layout; part of the cache key.
FORMAT_VERSION = 2


def _check_settings_int(value, name, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise InvalidParameterError(f"{name} must be an integer >= {low}; got {value!r}")
    return int(value)


@dataclass(frozen=True)
class TraceSettings:
    """What a trace records; with the model's fingerprint, its hash is the cache key.

    Attributes
    ----------
    model : str
        The target: smollm2-135m-instruct, a Hugging Face model folder or a GGUF file.
        Also the name of a model object passed as ``loaded``
        (:meth:`~spectheory.lm.LoadedModel.from_model`), or ``"arrays:NAME"``
        for a trace built from arrays (:meth:`Trace.from_arrays`).
    drafts : tuple of str
        Draft specs: exit:L, adapter:L, quant:TYPE, ngram:K, lm:PATH.
        ``"logits:NAME"`` names logits stored by :meth:`Trace.from_arrays`;
        see :mod:`.drafts`.
    prompts : tuple of int, optional
        Ids of the prompts to record (None: all of the prompt set).
    max_new_tokens : int
        Continuation length per prompt (shorter if the model ends its turn).
    temperature : float
        Temperature of the target's sampling of the continuation (0: greedy).
    seed : int
        Seed of the sampling (numpy Generator, one stream per prompt), >= 0.
    prompt_file : str
        A text or JSON-lines prompt file (empty: the built-in prompts).
        ``""`` selects :data:`~spectheory.lm.prompts.PROMPTS`; a file is read
        by :func:`~spectheory.lm.prompts.load_prompts` and the SHA-256 of its
        bytes is part of the cache key.
    """

    model: str = "smollm2-135m-instruct"
    drafts: tuple[str, ...] = ("exit:15", "exit:25", "ngram:3")
    prompts: tuple[int, ...] | None = None
    max_new_tokens: int = 24
    temperature: float = 1.0
    seed: int = 0
    prompt_file: str = ""

    def __post_init__(self):
        if not isinstance(self.model, str) or not self.model:
            raise InvalidParameterError(f"model must be a non-empty string; got {self.model!r}")
        check_positive_int(self.max_new_tokens, "max_new_tokens")
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, numbers.Real) or not 0 <= t < math.inf:
            raise InvalidParameterError(f"temperature must be a finite number >= 0; got {t!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral):
            raise InvalidParameterError(f"seed must be a non-negative integer; got {self.seed!r}")
        check_rng(self.seed, "seed")
        if not isinstance(self.prompt_file, str):
            raise InvalidParameterError(
                f"prompt_file must be a path string ('' for the built-in prompts); "
                f"got {self.prompt_file!r}"
            )
        external = self.model.startswith("arrays:")
        size = None if external else len(prompt_set(self.prompt_file))
        prompts = tuple(range(size)) if self.prompts is None and size else self.prompts
        if isinstance(prompts, (str, bytes)) or not hasattr(prompts, "__iter__"):
            raise InvalidParameterError(
                f"prompts must be a sequence of prompt ids; got {prompts!r}"
            )
        prompts = tuple(prompts)
        bad = [
            i
            for i in prompts
            if isinstance(i, bool)
            or not isinstance(i, numbers.Integral)
            or i < 0
            or (size is not None and i >= size)
        ]
        if bad or not prompts:
            top = "" if size is None else f" in [0, {size})"
            raise InvalidParameterError(
                f"prompts must be a non-empty list of integer ids{top}; got {bad or '[]'}"
            )
        prompts = tuple(int(i) for i in prompts)
        twice = sorted({i for i in prompts if prompts.count(i) > 1})
        if twice:  # recorded twice, its positions would weigh double in every mean
            raise InvalidParameterError(f"prompts must not repeat an id; {twice} repeat")
        object.__setattr__(self, "prompts", prompts)
        if isinstance(self.drafts, str) or not hasattr(self.drafts, "__iter__"):
            raise InvalidParameterError(f"drafts must be a sequence of specs; got {self.drafts!r}")
        object.__setattr__(self, "drafts", tuple(self.drafts))
        for d in self.drafts:
            parse_draft(d)
        twice = sorted({d for d in self.drafts if self.drafts.count(d) > 1})
        if twice:
            raise InvalidParameterError(f"drafts must not repeat a spec; {twice} repeat")

    def key(self, loaded=None) -> str:
        """SHA-256 (16 hex) of the settings, the format and the fingerprints of what is recorded.

        The canonical JSON hashed holds the settings, :data:`FORMAT_VERSION`
        and the fingerprints of: the target's weights and tokenizer
        (:meth:`~spectheory.lm.LoadedModel.fingerprint` of ``loaded``, else
        :func:`~spectheory.lm.fingerprint.file_fingerprint` of the files
        ``model`` names); each ``"adapter:L"`` draft's weights (a missing
        adapter raises :class:`~spectheory.TraceError` with the training
        command); each ``"lm:PATH"`` draft's files; and the prompt file's
        bytes, or the built-in prompts' texts.  A model object in memory (no files)
        needs ``loaded``.
        """
        doc = {"format": FORMAT_VERSION, **dataclasses.asdict(self)}
        if not doc["prompt_file"]:
            del doc["prompt_file"]  # keeps the key of the built-in prompt set's settings short
        doc["fingerprints"] = self.fingerprints(loaded)
        blob = json.dumps(doc, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def fingerprints(self, loaded=None) -> dict:
        """The fingerprints in :meth:`key`: ``{"model", "prompt_file" or "prompts", spec: ...}``."""
        from ._loader import model_source
        from .fingerprint import file_fingerprint

        out = {}
        if loaded is not None:
            out["model"] = loaded.fingerprint()
            dtype = str(next(iter(loaded.model.parameters())).dtype).replace("torch.", "")
            if loaded.source and dtype != "float32":
                # The files' fingerprint says nothing of the dtype they were loaded in: a
                # bfloat16 load's trace was returned to a float32 (default) request.  The
                # default, float32 (record_trace's own load_model), keeps the key it had.
                out["dtype"] = dtype
        elif not self.model.startswith(("arrays:", "memory:")):
            try:
                out["model"] = file_fingerprint(model_source(self.model))
            except InvalidParameterError:
                # A name that is no model on disk: nothing can be loaded under it, so
                # record_trace only records it from a `loaded` model (whose fingerprint
                # it then uses); the key of the name alone serves synthetic traces.
                pass
        if self.prompt_file:
            out["prompt_file"] = hashlib.sha256(Path(self.prompt_file).read_bytes()).hexdigest()
        else:
            # The built-in texts too: the settings name prompts by index, and a package whose
            # prompt set changed would serve the traces of the old texts.
            texts = json.dumps(prompt_set(""), sort_keys=True, default=str)
            out["prompts"] = hashlib.sha256(texts.encode()).hexdigest()
        for d in self.drafts:
            kind, arg = draft_kind(d)
            fp = kind.fingerprint(self.model, arg)
            if fp is not None:
                out[d] = fp
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
        raw = self.metadata.get("settings")
        if not isinstance(raw, dict):
            raise TraceError("this trace's metadata holds no recording settings")
        return TraceSettings(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})

    @property
    def drafts(self) -> tuple[str, ...]:
        return tuple(self.metadata["settings"]["drafts"])

    def _rows(self, rows, name="rows") -> np.ndarray:
        """``rows`` as int64 positions, each in [0, num_positions) (no wrapping of -1)."""
        n = self.num_positions
        if rows is None:
            return np.arange(n)
        arr = np.asarray(rows)
        if arr.ndim > 1 or (arr.size and arr.dtype.kind not in "iu"):
            raise InvalidParameterError(
                f"{name} must be an integer position or a 1-D sequence of them; got {rows!r}"
            )
        arr = arr.astype(np.int64).reshape(-1) if arr.size else np.zeros(0, np.int64)
        bad = arr[(arr < 0) | (arr >= n)]
        if bad.size:
            raise InvalidParameterError(
                f"{name} must be positions in [0, {n}) of this trace; got {int(bad[0])}"
            )
        return arr

    def context(self, i: int) -> np.ndarray:
        """Token ids before position ``i``: its prompt and the continuation so far."""
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise InvalidParameterError(f"i must be an integer position; got {i!r}")
        i = int(self._rows(i, "i")[0])
        j = int(np.searchsorted(self.metadata["prompt_order"], self.prompt_ids[i]))
        prompt = self.prompt_tokens[self.prompt_offsets[j] : self.prompt_offsets[j + 1]]
        start = i - int(self.steps[i])
        return np.concatenate([prompt, self.tokens[start:i]])

    def draft_logits(self, draft: str, rows=None) -> np.ndarray:
        """Logits of a draft at positions ``rows`` (all by default), float64 (n, V).

        n-gram drafts are rebuilt from the tokens: their logits are
        ``log q`` with ``-inf`` where ``q = 0``.  ``rows`` outside
        ``[0, num_positions)`` raise (a ``-1`` is not the last row).
        """
        rows = self._rows(rows)
        kind, k = draft_kind(draft)
        if kind.stored:
            if draft not in self.exit_logits:
                raise InvalidParameterError(
                    f"draft {draft!r} is not in this trace; it has {list(self.drafts)}"
                )
            return self.exit_logits[draft][rows].astype(np.float64)
        if draft not in self.drafts:
            raise InvalidParameterError(
                f"draft {draft!r} is not in this trace; it has {list(self.drafts)}"
            )
        out = np.empty((rows.size, self.vocab_size))
        with np.errstate(divide="ignore"):
            for r, i in enumerate(rows):
                out[r] = np.log(ngram_distribution(self.context(int(i)), self.vocab_size, k))
        return out

    @classmethod
    def from_arrays(cls, target, drafts, **kwargs) -> Trace:
        """A trace from logits or probabilities recorded by any framework.

        See :func:`spectheory.lm.arrays.trace_fields` for the parameters
        and checks; the result goes through ``replay``, ``check --trace``,
        ``sweep`` and ``report`` like a recorded trace.
        """
        return _from_fields(cls, trace_fields(target, drafts, **kwargs), "trace from arrays")

    def _tensors(self) -> dict:
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
        return tensors

    def save(self, path) -> Path:
        """Write atomically to ``path`` (safetensors with JSON metadata and checksums).

        The metadata holds the SHA-256 of every tensor's bytes
        (``"checksums"``) and the SHA-256 of the header (``"header_sha256"``:
        the canonical JSON of the rest of the metadata and of every tensor's
        name, dtype, shape and checksum), so that an edit of the header
        (a dtype, a shape, the settings, the prompt order, a draft's name) is
        caught on load as surely as an edit of the data.
        """
        from safetensors.numpy import save_file

        tensors = self._tensors()
        meta = {k: v for k, v in self.metadata.items() if k not in ("checksums", "header_sha256")}
        meta = json.loads(json.dumps(meta))
        meta["format"] = FORMAT_VERSION  # the layout this method writes (header checksum)
        meta["checksums"] = {k: _sha256(v) for k, v in tensors.items()}
        meta["header_sha256"] = _header_sha256(meta, tensors)
        with _files.atomic_path(path) as tmp:
            save_file(tensors, tmp, metadata={"spectheory": json.dumps(meta, sort_keys=True)})
        return Path(path)


def _sha256(arr: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def _header_sha256(meta: dict, tensors: dict) -> str:
    """SHA-256 of the canonical JSON of the metadata (less this digest) and the tensor layout."""
    body = {k: v for k, v in meta.items() if k != "header_sha256"}
    layout = {k: [np.asarray(v).dtype.str, list(np.shape(v))] for k, v in tensors.items()}
    blob = json.dumps({"metadata": body, "tensors": layout}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


_REQUIRED = ("target_logits", "tokens", "prompt_ids", "steps", "prompt_tokens", "prompt_offsets")


def load_trace(path) -> Trace:
    """Read a trace, verifying its header's and every tensor's checksum.

    A plain safetensors file in the array layout of :mod:`spectheory.lm.arrays`
    (tensors ``target`` and ``draft/<name>``, no spectheory metadata) is read
    with :func:`~spectheory.lm.arrays.load_arrays`.

    Raises
    ------
    TraceError
        Missing, truncated or corrupted file (tensor bytes or header), missing
        tensors, or not a spectheory trace.
    """
    path = Path(path)
    header, tensors = _files.read_safetensors(path, "trace file", "numpy")
    where = f"trace {str(path)!r}"
    if "spectheory" not in header:
        if "target" in tensors:
            return _from_fields(Trace, fields_from_tensors(tensors, header, where), where)
        raise TraceError(
            f"{str(path)!r} is a safetensors file but not a spectheory trace (no spectheory "
            f"metadata, and no 'target' tensor of the array layout)"
        )
    try:
        meta = json.loads(header["spectheory"])
    except json.JSONDecodeError as exc:
        raise TraceError(f"{where}: its metadata is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise TraceError(f"{where}: its metadata is not a JSON object")
    if meta.get("format") != FORMAT_VERSION:
        raise TraceError(
            f"{where} has format {meta.get('format')!r}; this version reads {FORMAT_VERSION}"
            + (" (record it again)" if meta.get("format") == 1 else "")
        )
    expected = meta.get("checksums")
    digest = meta.get("header_sha256")
    if not isinstance(expected, dict) or not isinstance(digest, str):
        raise TraceError(f"{where}: its metadata lacks the checksums")
    if set(expected) != set(tensors):
        raise TraceError(f"{where} lists tensors {sorted(expected)}, has {sorted(tensors)}")
    if _header_sha256(meta, tensors) != digest:
        raise TraceError(
            f"{where}: its header (metadata, tensor dtypes or shapes) fails its SHA-256 checksum"
        )
    for name, arr in tensors.items():
        if _sha256(arr) != expected[name]:
            raise TraceError(f"{where}: tensor {name!r} fails its SHA-256 checksum")
    missing = [k for k in _REQUIRED if k not in tensors]
    if missing:
        raise TraceError(f"{where} lacks the tensors {missing}")
    del meta["checksums"], meta["header_sha256"]
    exits = {k.split("/", 1)[1]: v for k, v in tensors.items() if k.startswith("exit_logits/")}
    trace = Trace(
        target_logits=tensors["target_logits"],
        exit_logits=exits,
        tokens=tensors["tokens"],
        prompt_ids=tensors["prompt_ids"],
        steps=tensors["steps"],
        prompt_tokens=tensors["prompt_tokens"],
        prompt_offsets=tensors["prompt_offsets"],
        metadata=meta,
    )
    check_layout(trace, where)
    return trace


def _from_fields(cls, fields: dict, where: str) -> Trace:
    """A trace from :func:`~spectheory.lm.arrays.trace_fields`: settings and layout checked."""
    meta = fields["metadata"]
    meta["format"] = FORMAT_VERSION
    try:
        TraceSettings(**meta["settings"])  # temperature, seed, names: the one validation
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"{where}: {exc}") from None
    trace = cls(**fields)
    check_layout(trace, where)
    return trace


def load_arrays(path) -> Trace:
    """Read a safetensors file in the array layout of :mod:`spectheory.lm.arrays` as a Trace.

    Raises
    ------
    TraceError
        Missing or truncated file, missing or unknown tensors, mismatched shapes.
    """
    where = f"array file {str(path)!r}"
    header, tensors = _files.read_safetensors(Path(path), "array file", "numpy")
    return _from_fields(Trace, fields_from_tensors(tensors, header, where), where)


def check_layout(trace: Trace, where: str = "trace") -> None:
    """Check that a trace's tensors agree in shape and its listed drafts are stored."""
    n, v = np.shape(trace.target_logits) if np.ndim(trace.target_logits) == 2 else (-1, -1)
    if n < 1 or v < 1:
        raise ShapeMismatchError(
            f"{where}: target_logits must be (positions, vocabulary); "
            f"got shape {np.shape(trace.target_logits)}"
        )
    for name, arr in trace.exit_logits.items():
        if np.shape(arr) != (n, v):
            raise ShapeMismatchError(
                f"{where}: draft {name!r} has logits of shape {np.shape(arr)}, the target "
                f"{(n, v)} (a different vocabulary or number of positions)"
            )
    for name in ("tokens", "prompt_ids", "steps"):
        if np.shape(getattr(trace, name)) != (n,):
            raise ShapeMismatchError(
                f"{where}: {name} has shape {np.shape(getattr(trace, name))}; expected ({n},)"
            )
    settings = trace.metadata.get("settings") or {}
    for d in settings.get("drafts", ()):
        if parse_draft(d)[0] != "ngram" and d not in trace.exit_logits:
            raise TraceError(f"{where}: draft {d!r} is listed but its logits are missing")


def _progress(iterable, enabled, total):
    if not enabled:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc="recording trace", unit="prompt", file=sys.stderr)


def trace_cache_path(key: str):
    """Where :func:`record_trace` caches the trace of cache key ``key`` (may not exist yet).

    >>> trace_cache_path("0123").name
    '0123.safetensors'
    """
    return cache_dir() / "traces" / f"{key}.safetensors"


@with_torch_threads
def record_trace(
    settings: TraceSettings | None = None,
    *,
    loaded=None,
    cache: bool = True,
    progress: bool = True,
) -> Trace:
    """Record (or reuse from the cache) a trace of the target and its drafts.

    For each prompt (of the built-in set or ``settings.prompt_file``), the
    chat template is applied when the tokenizer has one (raw text otherwise,
    :func:`~spectheory.lm.prompts.encode_prompt`) and the target samples a
    continuation token by token (with a key-value cache) from its processed
    distribution at ``settings.temperature`` (:func:`spectheory.process_logits`,
    numpy Generator seeded by ``(seed, prompt id)``), stopping at the end of
    turn.  At every step the target's logits and, from the same forward pass's
    hidden states, each early-exit draft's logits are kept; adapter, quantised
    and separate-model (``"lm:PATH"``) drafts are run on the same tokens.

    The cache file is ``cache_dir()/traces/<key>.safetensors`` with
    ``key = settings.key(loaded)``: it changes with the settings and with the
    fingerprints of the target's and the drafts' weights and tokenizers
    (:meth:`TraceSettings.key`), so another model never gets this model's
    trace.  A cached trace also records the fingerprint of the weights in
    memory (:func:`~spectheory.lm.fingerprint.weights_fingerprint`) and is
    refused when ``loaded`` has other weights under the same name.

    Parameters
    ----------
    settings : TraceSettings, optional
    loaded : spectheory.lm.LoadedModel, optional
        An already loaded model; it must be the model ``settings.model`` names
        (same name, or loaded from the same file or folder).
    cache : bool
        Reuse a cached trace with the same key, and store a new one.
    progress : bool
        Show a progress bar on stderr.

    Returns
    -------
    Trace

    Raises
    ------
    InvalidParameterError
        ``loaded`` is not the model of ``settings.model``; a prompt that
        tokenizes to nothing; a draft whose vocabulary differs from the target's.
    TraceError
        A corrupt or truncated cache entry (named, with how to remove it).
    """
    import torch

    from .. import __version__
    from ..distributions import process_logits
    from ._loader import load_model
    from .fingerprint import WEIGHTS_SCHEME, weights_fingerprint

    settings = settings or TraceSettings()
    if not isinstance(settings, TraceSettings):
        raise InvalidParameterError(f"settings must be a TraceSettings; got {type(settings)!r}")
    if settings.model.startswith("arrays:"):
        raise InvalidParameterError(
            f"settings.model {settings.model!r} names a trace built from arrays; it cannot be "
            f"recorded"
        )
    if loaded is not None:
        _check_loaded_matches(loaded, settings.model)
        require_cpu(loaded, "record_trace")
    elif settings.model.startswith("memory:"):
        raise InvalidParameterError(
            f"settings.model {settings.model!r} is a model object in memory: pass it as loaded="
        )
    key = settings.key(loaded)
    path = trace_cache_path(key)
    if cache and path.is_file():
        try:
            trace = load_trace(path)
        except TraceError as exc:
            raise TraceError(
                f"the cached trace {str(path)!r} is corrupt or truncated ({exc}); remove it "
                f"with `spectheory cache clear --kind traces` (or delete the file) and record again"
            ) from None
        if trace.metadata.get("key") != key:
            # A file copied or renamed into the cache: its name is no proof of its settings.
            raise TraceError(
                f"the cached trace {str(path)!r} holds the trace of key "
                f"{trace.metadata.get('key')!r}, not {key!r}; remove it with `spectheory cache "
                f"clear --kind traces` (or delete the file) and record again"
            )
        stored = trace.metadata.get("weights_fingerprint")
        current = trace.metadata.get("weights_scheme") == WEIGHTS_SCHEME
        if loaded is not None and not current:
            # Recorded under the sampled fingerprint, which cannot be compared with this one:
            # recorded again (and overwritten) rather than refused.
            _log.info(f"re-recording {path.name}: its weights fingerprint is of an older scheme")
        elif loaded is not None and stored != weights_fingerprint(loaded.model, loaded.tokenizer):
            raise TraceError(
                f"the cached trace {str(path)!r} was recorded from weights with fingerprint "
                f"{str(stored)[:16]}, but the model passed as loaded ({loaded.name!r}) has other "
                f"weights in memory (edited, or another dtype); pass cache=False"
            )
        else:
            return trace
    loaded = loaded or load_model(settings.model)
    model, tok = loaded.model, loaded.tokenizer
    # every stored draft's recorder (the registry of draft kinds), in the order of the settings
    kinds = {d: draft_kind(d, loaded.num_layers) for d in settings.drafts}
    others = {d: k.recorder(loaded, arg) for d, (k, arg) in kinds.items() if k.stored}
    eos = set()
    gen = getattr(model, "generation_config", None)
    if gen is not None and gen.eos_token_id is not None:
        eos = {int(t) for t in np.atleast_1d(gen.eos_token_id)}
    if tok.eos_token_id is not None:
        eos.add(int(tok.eos_token_id))
    rows_o = {d: [] for d in others}
    rows_t, tokens, pids, steps, ptoks, offsets = [], [], [], [], [], [0]
    order = sorted(int(i) for i in settings.prompts)
    pset = prompt_set(settings.prompt_file)
    source = repr(settings.prompt_file) if settings.prompt_file else "the built-in set"
    encoded = {
        pid: encode_prompt(tok, pset[pid][1], pset[pid][2], f"prompt {pid} of {source}")
        for pid in order
    }
    # Past its trained context a model's positions are extrapolated (as live generation
    # refuses, spectheory.live.generate._common_checks): the trace would hold numbers about
    # a model nobody trained.
    context = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if isinstance(context, int):
        for pid in order:
            if encoded[pid].size + settings.max_new_tokens > context:
                raise InvalidParameterError(
                    f"prompt {pid} of {source} has {encoded[pid].size} tokens; with "
                    f"max_new_tokens = {settings.max_new_tokens} it exceeds the model's context "
                    f"of {context} positions (max_position_embeddings)"
                )
    t0 = time.perf_counter()
    for pid in _progress(order, progress, len(order)):
        rng = np.random.default_rng([settings.seed, pid])
        ids = torch.from_numpy(encoded[pid])[None, :]
        ptoks.append(encoded[pid])
        offsets.append(offsets[-1] + ids.shape[1])
        past, inp = None, ids
        for drafter in others.values():
            drafter.reset()
        with torch.no_grad():
            for step in range(settings.max_new_tokens):
                out = model(
                    input_ids=inp,
                    **cache_kwargs(model, past),
                    use_cache=True,
                    output_hidden_states=True,
                )
                past = cache_of(out)
                logits = out.logits[0, -1].float()
                rows_t.append(logits.numpy().astype(np.float16))
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
        "key": key,
        "fingerprints": settings.fingerprints(loaded),
        "weights_fingerprint": weights_fingerprint(model, tok),
        "weights_scheme": WEIGHTS_SCHEME,
        "model": {
            "name": loaded.name,
            "source": Path(loaded.source).name if loaded.source else "",
            "architecture": type(model).__name__,
            "num_layers": loaded.num_layers,
            "vocab_size": loaded.vocab_size,
        },
        "prompt_order": order,
        "spectheory_version": __version__,
        "torch_version": torch.__version__,
        "recording_seconds": round(time.perf_counter() - t0, 2),
    }
    weights = {d: v for d, v in meta["fingerprints"].items() if d.startswith("adapter:")}
    if weights:
        meta["adapter_weights"] = weights
    meta = json.loads(json.dumps(meta))  # the form it takes after a save and load
    trace = Trace(
        target_logits=np.stack(rows_t),
        exit_logits={d: np.stack(r) for d, r in rows_o.items()},
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


def _check_loaded_matches(loaded, model: str) -> None:
    """Refuse a loaded model that is not the one ``model`` names (by name or by source path)."""
    from ._loader import model_source

    if not all(hasattr(loaded, a) for a in ("model", "tokenizer", "name", "source")):
        raise InvalidParameterError(
            f"loaded must be a spectheory.lm.LoadedModel (load_model or LoadedModel.from_model); "
            f"got {type(loaded)!r}"
        )
    if loaded.name == model:
        return
    if loaded.source and not model.startswith(("arrays:", "memory:")):
        try:
            same = Path(model_source(model)).resolve() == Path(loaded.source).resolve()
        except InvalidParameterError:
            same = False
        if same:
            return
    raise InvalidParameterError(
        f"loaded is the model {loaded.name!r} (from {loaded.source or 'memory'!r}), but "
        f"settings.model is {model!r}: pass TraceSettings(model={loaded.name!r}, ...) to "
        f"record this model, or load {model!r}"
    )
