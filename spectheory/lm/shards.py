"""Sharded traces: a trace split into bounded, self-describing files and a manifest.

A trace of a large model at a large vocabulary outgrows one machine's memory
(a 70B model's trace at a 152k vocabulary is about 30 GB per 100k positions
in half precision).  A *sharded trace* is a folder::

    manifest.json                 what the shards hold, with a SHA-256 of every shard file
    shard-00000.safetensors       positions [0, N0): whole prompts
    shard-00001.safetensors       positions [N0, N1): the next prompts
    ...

Each shard is itself a trace file in the layout of :mod:`spectheory.lm.trace`
(safetensors, JSON metadata, SHA-256 per tensor), holding a contiguous range
of positions made of whole prompts, so that every shard can be replayed on its
own (n-gram drafts only need the prompt and the continuation so far).  Its
metadata holds the full recording settings, its own ``prompt_order`` and a
``"shard"`` entry (index, first and one-past-last global position, prompts).
A shard file is at most ``max_shard_bytes`` bytes.

The manifest (JSON) holds the format version, the recording settings and model
metadata, the vocabulary size, the drafts, and per shard its file name,
global position range, prompts, size in bytes and the SHA-256 of the file; the
manifest carries a SHA-256 of its own content.  Every file is written
atomically (temporary file, then ``os.replace``) and the manifest last, so a
folder with a manifest is complete; a corrupted or truncated manifest or
shard raises :class:`~spectheory.TraceError` naming the file.

:func:`record_sharded` records prompt by prompt and writes shards as they fill;
an interrupted recording resumes: valid shards already written are kept and
their prompts are not recorded again.  Since :func:`~spectheory.lm.record_trace`
seeds each prompt's sampling by ``(seed, prompt id)``, a sharded recording holds
exactly the positions of the unsharded one.

Examples
--------
>>> import tempfile
>>> import numpy as np
>>> from spectheory.lm import Trace
>>> rng = np.random.default_rng(0)
>>> N, V = 6, 100
>>> trace = Trace(
...     target_logits=rng.standard_normal((N, V)).astype(np.float16),
...     exit_logits={"exit:1": rng.standard_normal((N, V)).astype(np.float16)},
...     tokens=rng.integers(0, V, N), prompt_ids=np.array([0, 0, 0, 1, 1, 1]),
...     steps=np.array([0, 1, 2, 0, 1, 2]), prompt_tokens=np.array([1, 2, 3, 4]),
...     prompt_offsets=np.array([0, 2, 4]),
...     metadata={"format": 1, "prompt_order": [0, 1], "settings": {"drafts": ["exit:1"]}},
... )
>>> folder = tempfile.mkdtemp()
>>> sharded = shard_trace(trace, folder, max_shard_bytes=4000)
>>> [(s.start, s.stop, s.prompts) for s in sharded.shards]
[(0, 3, (0,)), (3, 6, (1,))]
>>> bool((sharded.load_shard(1).tokens == trace.tokens[3:]).all())
True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import InvalidParameterError, TraceError
from .._validate import check_positive_int
from . import trace as _trace
from .trace import FORMAT_VERSION, Trace, TraceSettings, load_trace

__all__ = [
    "MANIFEST_NAME",
    "SHARD_FORMAT_VERSION",
    "ShardInfo",
    "ShardedTrace",
    "file_sha256",
    "record_sharded",
    "shard_trace",
]

#: Version of the manifest layout.
SHARD_FORMAT_VERSION = 1
#: File name of the manifest inside a sharded-trace folder.
MANIFEST_NAME = "manifest.json"
_KIND = "spectheory-sharded-trace"
_SHARD_RE = re.compile(r"^shard-(\d{5,})\.safetensors$")


def _shard_name(index: int) -> str:
    return f"shard-{index:05d}.safetensors"


def file_sha256(path) -> str:
    """SHA-256 (hex) of a file's bytes, read in 16 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def _atomic_write_text(path: Path, text: str) -> None:
    with _files.atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class ShardInfo:
    """One shard of a sharded trace, as listed in its manifest.

    Attributes
    ----------
    index : int
        Position of the shard in the manifest (0, 1, ...).
    file : str
        File name inside the folder.
    start, stop : int
        Global positions ``[start, stop)`` of the full trace held by the shard.
    prompts : tuple of int
        Prompt ids of the shard, in recording order (whole prompts).
    bytes : int
        Size of the file.
    sha256 : str
        SHA-256 of the file's bytes.
    """

    index: int
    file: str
    start: int
    stop: int
    prompts: tuple[int, ...]
    bytes: int
    sha256: str

    @property
    def num_positions(self) -> int:
        return self.stop - self.start


# --------------------------------------------------------------------------- splitting


def _prompt_ranges(trace: Trace) -> list[tuple[int, int, int, int]]:
    """``(prompt id, order index j, first position, one past last)`` per prompt, in order.

    Raises InvalidParameterError unless each prompt's positions are contiguous,
    in the order of ``metadata["prompt_order"]``.
    """
    order = [int(i) for i in trace.metadata.get("prompt_order", [])]
    ids = np.asarray(trace.prompt_ids, dtype=np.int64)
    if not order:
        order = list(dict.fromkeys(int(i) for i in ids))
    if len(trace.prompt_offsets) != len(order) + 1:
        raise InvalidParameterError(
            f"trace.prompt_offsets has {len(trace.prompt_offsets)} entries for "
            f"{len(order)} prompts (prompt_order {order}); expected {len(order) + 1}"
        )
    out, pos = [], 0
    for j, pid in enumerate(order):
        stop = pos
        while stop < ids.size and ids[stop] == pid:
            stop += 1
        out.append((pid, j, pos, stop))
        pos = stop
    if pos != ids.size:
        raise InvalidParameterError(
            f"trace positions must be grouped by prompt in the order {order}; "
            f"position {pos} has prompt id {int(ids[pos])}"
        )
    return out


def _subtrace(trace: Trace, ranges) -> Trace:
    """The positions of the prompts ``ranges`` (consecutive) as a Trace of their own (views)."""
    a, b = ranges[0][2], ranges[-1][3]
    j0, j1 = ranges[0][1], ranges[-1][1] + 1
    off = np.asarray(trace.prompt_offsets, dtype=np.int64)
    meta = {k: v for k, v in trace.metadata.items() if k not in ("checksums", "shard")}
    meta["prompt_order"] = [int(r[0]) for r in ranges]
    return Trace(
        target_logits=trace.target_logits[a:b],
        exit_logits={k: v[a:b] for k, v in trace.exit_logits.items()},
        tokens=trace.tokens[a:b],
        prompt_ids=trace.prompt_ids[a:b],
        steps=trace.steps[a:b],
        prompt_tokens=trace.prompt_tokens[off[j0] : off[j1]],
        prompt_offsets=off[j0 : j1 + 1] - off[j0],
        metadata=json.loads(json.dumps(meta)),
    )


def _concat(units: list[Trace], shard: dict) -> Trace:
    """Consecutive prompt units as one trace; metadata of the first plus the ``shard`` entry."""
    meta = dict(units[0].metadata)
    meta["prompt_order"] = [int(i) for u in units for i in u.metadata["prompt_order"]]
    meta["shard"] = shard
    offsets, total = [0], 0
    for u in units:
        off = np.asarray(u.prompt_offsets, dtype=np.int64)
        offsets.extend((off[1:] + total).tolist())
        total += int(off[-1])
    return Trace(
        target_logits=np.concatenate([u.target_logits for u in units]),
        exit_logits={
            k: np.concatenate([u.exit_logits[k] for u in units]) for k in units[0].exit_logits
        },
        tokens=np.concatenate([u.tokens for u in units]),
        prompt_ids=np.concatenate([u.prompt_ids for u in units]),
        steps=np.concatenate([u.steps for u in units]),
        prompt_tokens=np.concatenate([u.prompt_tokens for u in units]),
        prompt_offsets=np.asarray(offsets, dtype=np.int64),
        metadata=json.loads(json.dumps(meta)),
    )


def _write_shard(folder: Path, index: int, piece: Trace) -> ShardInfo:
    path = folder / _shard_name(index)
    piece.save(path)
    info = piece.metadata["shard"]
    return ShardInfo(
        index=index,
        file=path.name,
        start=int(info["start"]),
        stop=int(info["stop"]),
        prompts=tuple(int(i) for i in info["prompts"]),
        bytes=path.stat().st_size,
        sha256=file_sha256(path),
    )


class _Packer:
    """Greedy packing of consecutive prompts (one Trace each) into shards of bounded size.

    A prompt is added to the open shard while the file would stay within
    ``max_shard_bytes``; otherwise the open shard is written first.  Only the
    open shard's prompts are held.
    """

    def __init__(self, folder: Path, max_shard_bytes: int, written: list[ShardInfo]):
        self.folder, self.max, self.written = folder, max_shard_bytes, list(written)
        self.group: list[Trace] = []

    @property
    def index(self) -> int:
        return len(self.written)

    @property
    def start(self) -> int:
        return self.written[-1].stop if self.written else 0

    def _shard_entry(self, units) -> dict:
        stop = self.start + sum(u.num_positions for u in units)
        prompts = [int(i) for u in units for i in u.metadata["prompt_order"]]
        return {"index": self.index, "start": self.start, "stop": stop, "prompts": prompts}

    def bound(self, units) -> int:
        """An upper bound on the size of the shard file of ``units`` written by Trace.save.

        Tensor bytes, plus the JSON header: the metadata (with a 64-hex checksum per
        tensor) is stored as a JSON string inside JSON, so escaping at most doubles it;
        each tensor's header entry (dtype, shape, offsets) takes at most its name plus
        120 bytes; 8 bytes of length prefix and 8 of padding.
        """
        u0 = units[0]
        names = ["target_logits", "tokens", "prompt_ids", "steps", "prompt_tokens"]
        names += ["prompt_offsets", *(f"exit_logits/{k}" for k in u0.exit_logits)]
        data = 8 * (1 + sum(u.prompt_offsets.size - 1 for u in units))
        for u in units:
            data += u.target_logits.nbytes + sum(v.nbytes for v in u.exit_logits.values())
            data += u.tokens.nbytes + u.prompt_ids.nbytes + u.steps.nbytes
            data += u.prompt_tokens.nbytes
        meta = dict(u0.metadata)
        meta["shard"] = self._shard_entry(units)
        meta["prompt_order"] = meta["shard"]["prompts"]
        size = len(json.dumps(meta, sort_keys=True)) + 32 + sum(len(k) + 72 for k in names)
        # + 96: the header digest, '"header_sha256": "<64 hex>", ' (85 characters, 4 of them
        # quotes escaped inside the metadata string: 89 bytes)
        return data + 2 * size + sum(len(k) + 120 for k in names) + 64 + 96

    def add(self, unit: Trace) -> None:
        alone = self.bound([unit])
        if alone > self.max:
            raise InvalidParameterError(
                f"max_shard_bytes = {self.max} is too small: prompt "
                f"{unit.metadata['prompt_order'][0]} alone ({unit.num_positions} positions) "
                f"needs up to {alone} bytes"
            )
        if self.group and self.bound([*self.group, unit]) > self.max:
            self.flush()
        self.group.append(unit)

    def flush(self) -> None:
        if not self.group:
            return
        piece = _concat(self.group, self._shard_entry(self.group))
        info = _write_shard(self.folder, self.index, piece)
        if info.bytes > self.max:  # the bound above is an upper bound; this cannot happen
            raise TraceError(
                f"shard {str(self.folder / info.file)!r} has {info.bytes} bytes, "
                f"more than max_shard_bytes = {self.max}"
            )
        self.written.append(info)
        self.group = []


def _manifest_text(trace_meta: dict, shards: list[ShardInfo], max_shard_bytes, vocab, drafts):
    body = {
        "kind": _KIND,
        "format": SHARD_FORMAT_VERSION,
        "trace_format": FORMAT_VERSION,
        "settings": trace_meta.get("settings"),
        "key": trace_meta.get("key"),
        "model": trace_meta.get("model"),
        "spectheory_version": trace_meta.get("spectheory_version"),
        "vocab_size": int(vocab),
        "drafts": list(drafts),
        "num_positions": int(shards[-1].stop if shards else 0),
        "max_shard_bytes": int(max_shard_bytes),
        "shards": [dataclasses.asdict(s) | {"prompts": list(s.prompts)} for s in shards],
    }
    body = json.loads(json.dumps(body))
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return json.dumps({**body, "sha256": digest}, indent=1, sort_keys=True) + "\n"


def _clear_folder(folder: Path, keep: int = 0) -> None:
    """Remove the manifest and every shard file with index >= ``keep``."""
    (folder / MANIFEST_NAME).unlink(missing_ok=True)
    for f in folder.iterdir():
        m = _SHARD_RE.match(f.name)
        if m and int(m.group(1)) >= keep:
            f.unlink()


def _trace_drafts(trace: Trace) -> list[str]:
    settings = trace.metadata.get("settings") or {}
    return list(settings.get("drafts") or sorted(trace.exit_logits))


def shard_trace(trace: Trace, folder, max_shard_bytes: int) -> ShardedTrace:
    """Split an in-memory trace into shard files of at most ``max_shard_bytes`` bytes.

    Consecutive whole prompts are packed greedily into each shard; the manifest
    is written last.  A manifest and ``shard-*.safetensors`` files already in
    ``folder`` are replaced.

    Parameters
    ----------
    trace : Trace
        Positions grouped by prompt, in the order of ``metadata["prompt_order"]``
        (as :func:`~spectheory.lm.record_trace` writes them).
    folder : str or path-like
        Created if missing.
    max_shard_bytes : int
        Largest shard file; a prompt that does not fit alone raises.

    Returns
    -------
    ShardedTrace

    Raises
    ------
    InvalidParameterError
        ``max_shard_bytes`` not a positive integer or too small for one prompt,
        or positions not grouped by prompt.
    """
    max_shard_bytes = check_positive_int(max_shard_bytes, "max_shard_bytes")
    if not isinstance(trace, Trace):
        raise InvalidParameterError(f"trace must be a spectheory.lm.Trace; got {type(trace)!r}")
    ranges = _prompt_ranges(trace)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _clear_folder(folder)
    packer = _Packer(folder, max_shard_bytes, [])
    for r in ranges:
        packer.add(_subtrace(trace, [r]))
    packer.flush()
    text = _manifest_text(
        trace.metadata, packer.written, max_shard_bytes, trace.vocab_size, _trace_drafts(trace)
    )
    _atomic_write_text(folder / MANIFEST_NAME, text)
    return ShardedTrace.open(folder)


# --------------------------------------------------------------------------- recording


def _resume_point(folder: Path, key: str, order: list[int]):
    """Valid shards already written under the recording key ``key``: (infos, first metadata).

    Shards are checked in index order (every tensor's checksum, the settings
    key, the prompts that follow the previous shard); the first missing or
    invalid one and all later ones are deleted so that they are recorded again.
    """
    infos: list[ShardInfo] = []
    meta0 = None
    start, nprompt = 0, 0
    while True:
        path = folder / _shard_name(len(infos))
        if not path.is_file():
            break
        try:
            piece = load_trace(path)
        except TraceError:
            break
        meta = piece.metadata
        if meta.get("key") != key:
            raise InvalidParameterError(
                f"folder {str(folder)!r} holds shards of another recording "
                f"({path.name} has settings key {meta.get('key')!r}, these settings "
                f"{key!r}); use another folder"
            )
        shard = meta.get("shard", {})
        prompts = [int(i) for i in shard.get("prompts", [])]
        if (
            shard.get("start") != start
            or shard.get("stop") != start + piece.num_positions
            or prompts != order[nprompt : nprompt + len(prompts)]
            or not prompts
        ):
            break
        infos.append(
            ShardInfo(
                index=len(infos),
                file=path.name,
                start=start,
                stop=start + piece.num_positions,
                prompts=tuple(prompts),
                bytes=path.stat().st_size,
                sha256=file_sha256(path),
            )
        )
        meta0 = meta0 or meta
        start += piece.num_positions
        nprompt += len(prompts)
    _clear_folder(folder, keep=len(infos))
    return infos, meta0


def record_sharded(
    settings: TraceSettings | None,
    folder,
    max_shard_bytes: int,
    loaded=None,
    progress: bool = True,
    *,
    recorder=None,
) -> ShardedTrace:
    """Record a trace prompt by prompt into shards of at most ``max_shard_bytes`` bytes.

    Each prompt is recorded on its own by ``recorder`` (default
    :func:`spectheory.lm.record_trace`, looked up at call time) with the
    settings restricted to that prompt and ``cache=False``; whole prompts are
    packed greedily into shards, each written as soon as the next prompt does
    not fit.  The manifest is written last.  Only one shard's worth of
    positions (plus one prompt) is held in memory.

    Resumable: when ``folder`` already holds a complete sharded trace of the
    same settings and ``max_shard_bytes`` it is returned as is; otherwise the
    shards written by an interrupted run are verified and kept, and recording
    continues with the first prompt they do not hold.  The shard boundaries are
    those of an uninterrupted run.

    Parameters
    ----------
    settings : TraceSettings or None
        Default ``TraceSettings()``.
    folder : str or path-like
    max_shard_bytes : int
    loaded : spectheory.lm.LoadedModel, optional
        Loaded once (``load_model(settings.model)``) if omitted and the default
        recorder is used.
    progress : bool
        One line per prompt on stderr.
    recorder : callable, optional
        ``recorder(settings, *, loaded, cache, progress) -> Trace``, the
        signature of :func:`~spectheory.lm.record_trace`.

    Returns
    -------
    ShardedTrace

    Raises
    ------
    InvalidParameterError
        ``max_shard_bytes`` too small for a prompt, or ``folder`` holds a trace
        of other settings.
    """
    import spectheory.lm as _lm

    settings = settings or TraceSettings()
    max_shard_bytes = check_positive_int(max_shard_bytes, "max_shard_bytes")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    # The key of what is recorded, as record_trace takes it: with a model passed in, its
    # weights' fingerprint (a model in memory has no files to fingerprint; a dtype other
    # than float32), so that another model under the same name never finds, nor resumes,
    # this model's shards.
    key = settings.key(loaded) if loaded is not None else settings.key()
    if (folder / MANIFEST_NAME).is_file():
        try:
            existing = ShardedTrace.open(folder)
        except TraceError:
            existing = None
        if existing is not None:
            same = (
                existing.manifest.get("key") == key
                and existing.manifest.get("max_shard_bytes") == max_shard_bytes
            )
            if not same:
                raise InvalidParameterError(
                    f"folder {str(folder)!r} holds a sharded trace of other settings or "
                    f"another max_shard_bytes (key {existing.manifest.get('key')!r}, "
                    f"max_shard_bytes {existing.manifest.get('max_shard_bytes')}); "
                    "use another folder"
                )
            existing.verify()
            return existing
    order = sorted(int(i) for i in settings.prompts)
    infos, meta = _resume_point(folder, key, order)
    done = {p for s in infos for p in s.prompts}
    recorder = recorder or _lm.record_trace
    if loaded is None and recorder is _trace.record_trace:
        from ._loader import load_model

        loaded = load_model(settings.model)
    packer = _Packer(folder, max_shard_bytes, infos)
    vocab = drafts = None
    todo = [p for p in order if p not in done]
    for k, pid in enumerate(todo):
        if progress:
            print(f"record_sharded: prompt {pid} ({k + 1}/{len(todo)})", file=sys.stderr)
        one = dataclasses.replace(settings, prompts=(pid,))
        piece = recorder(one, loaded=loaded, cache=False, progress=False)
        piece.metadata["settings"] = json.loads(json.dumps(dataclasses.asdict(settings)))
        piece.metadata["key"] = key
        ranges = _prompt_ranges(piece)
        if [r[0] for r in ranges] != [pid]:
            raise TraceError(
                f"the recorder returned prompts {[r[0] for r in ranges]} for prompt {pid}"
            )
        packer.add(_subtrace(piece, ranges))
        meta = meta or piece.metadata
        vocab, drafts = piece.vocab_size, _trace_drafts(piece)
    packer.flush()
    if vocab is None:  # everything was already recorded
        first = load_trace(folder / packer.written[0].file)
        vocab, drafts = first.vocab_size, _trace_drafts(first)
    text = _manifest_text(meta, packer.written, max_shard_bytes, vocab, drafts)
    _atomic_write_text(folder / MANIFEST_NAME, text)
    return ShardedTrace.open(folder)


# --------------------------------------------------------------------------- reading


class ShardedTrace:
    """A sharded trace on disk, read lazily one shard at a time.

    Open with :meth:`open`.  The manifest is read and verified at once, and
    every shard file's presence and size are checked; a shard's bytes are read
    (and its file SHA-256 and per-tensor checksums verified) only by
    :meth:`load_shard`.

    Attributes
    ----------
    folder : pathlib.Path
    manifest : dict
        The parsed manifest.
    shards : list of ShardInfo
    """

    def __init__(self, folder: Path, manifest: dict, shards: list[ShardInfo]):
        self.folder = folder
        self.manifest = manifest
        self.shards = shards

    @classmethod
    def open(cls, folder) -> ShardedTrace:
        """Read and verify ``folder/manifest.json``.

        Raises
        ------
        TraceError
            Missing, truncated or corrupted manifest (its SHA-256), another
            format, or a shard file missing or of the wrong size.
        """
        folder = Path(folder)
        path = folder / MANIFEST_NAME
        if not path.is_file():
            raise TraceError(f"sharded-trace manifest {str(path)!r} does not exist")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TraceError(
                f"sharded-trace manifest {str(path)!r} is truncated or not JSON: {exc}"
            ) from None
        if not isinstance(raw, dict) or raw.get("kind") != _KIND:
            raise TraceError(f"{str(path)!r} is not a spectheory sharded-trace manifest")
        body = {k: v for k, v in raw.items() if k != "sha256"}
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        if raw.get("sha256") != digest:
            raise TraceError(f"sharded-trace manifest {str(path)!r} fails its SHA-256 checksum")
        if raw.get("format") != SHARD_FORMAT_VERSION or raw.get("trace_format") != FORMAT_VERSION:
            raise TraceError(
                f"sharded-trace manifest {str(path)!r} has format {raw.get('format')!r} "
                f"(traces {raw.get('trace_format')!r}); this version reads "
                f"{SHARD_FORMAT_VERSION} (traces {FORMAT_VERSION})"
            )
        shards = []
        for s in raw.get("shards", []):
            try:
                info = ShardInfo(**{**s, "prompts": tuple(s["prompts"])})
            except (TypeError, KeyError) as exc:
                raise TraceError(
                    f"sharded-trace manifest {str(path)!r}: bad shard entry {s!r}"
                ) from exc
            f = folder / info.file
            if not f.is_file():
                raise TraceError(f"shard file {str(f)!r} listed in {str(path)!r} does not exist")
            size = f.stat().st_size
            if size != info.bytes:
                raise TraceError(
                    f"shard file {str(f)!r} has {size} bytes; the manifest says {info.bytes}"
                )
            shards.append(info)
        return cls(folder, raw, shards)

    @property
    def num_positions(self) -> int:
        """Positions of the whole trace."""
        return int(self.manifest["num_positions"])

    @property
    def vocab_size(self) -> int:
        return int(self.manifest["vocab_size"])

    @property
    def drafts(self) -> tuple[str, ...]:
        """Draft specifications (early exits stored, n-grams rebuilt from the tokens)."""
        return tuple(self.manifest["drafts"])

    @property
    def settings(self) -> TraceSettings | None:
        """The recording settings, or None for a trace split without them."""
        raw = self.manifest.get("settings")
        if not raw:
            return None
        return TraceSettings(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})

    @property
    def checksum(self) -> str:
        """SHA-256 of the manifest's content (identifies the whole sharded trace)."""
        return str(self.manifest["sha256"])

    def __len__(self) -> int:
        return len(self.shards)

    def __repr__(self) -> str:
        return (
            f"ShardedTrace({str(self.folder)!r}: {self.num_positions} positions x "
            f"{self.vocab_size} tokens in {len(self.shards)} shards)"
        )

    def _path(self, i) -> Path:
        if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 0 <= i < len(self):
            raise InvalidParameterError(f"shard index must be in [0, {len(self)}); got {i!r}")
        return self.folder / self.shards[int(i)].file

    def verify_shard(self, i: int) -> None:
        """Check shard ``i``'s file against the manifest's SHA-256 (TraceError if not)."""
        path = self._path(i)
        try:
            digest = file_sha256(path)
        except OSError as exc:
            raise TraceError(f"shard file {str(path)!r} cannot be read: {exc}") from None
        if digest != self.shards[int(i)].sha256:
            raise TraceError(f"shard file {str(path)!r} fails the manifest's SHA-256 checksum")

    def verify(self) -> None:
        """Check every shard file against the manifest's SHA-256 (reads every byte)."""
        for i in range(len(self)):
            self.verify_shard(i)

    def load_shard(self, i: int) -> Trace:
        """Shard ``i`` as a :class:`Trace` (its positions ``shards[i].start`` onward).

        The file's SHA-256 and every tensor's checksum are verified.

        Raises
        ------
        InvalidParameterError
            ``i`` out of range.
        TraceError
            Corrupted or truncated shard, or one that disagrees with the manifest.
        """
        self.verify_shard(i)
        path = self._path(i)
        piece = load_trace(path)
        info = self.shards[int(i)]
        shard = piece.metadata.get("shard", {})
        if (shard.get("start"), shard.get("stop"), piece.num_positions) != (
            info.start,
            info.stop,
            info.num_positions,
        ):
            raise TraceError(
                f"shard file {str(path)!r} holds positions [{shard.get('start')}, "
                f"{shard.get('stop')}); the manifest says [{info.start}, {info.stop})"
            )
        return piece

    def iter_shards(self):
        """Yield ``(ShardInfo, Trace)`` one shard at a time."""
        for i, info in enumerate(self.shards):
            yield info, self.load_shard(i)
