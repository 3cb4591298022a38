"""The cache folder of traces, adapters, heads, corpora and sweep pieces: where, what, clearing.

Location, first that is set:

1. ``$SPECTHEORY_CACHE``;
2. ``$SPECTHEORY_CACHE_DIR`` (the older name, kept as an alias);
3. ``$XDG_CACHE_HOME/spectheory`` (the XDG base-directory convention);
4. ``~/.cache/spectheory``.

Each kind of entry has its own sub-folder (``traces/``, ``adapters/``,
``heads/``, ``corpus/``, ``sweeps/``).  Entries are written atomically
(:func:`spectheory._files.atomic_path`), so a crash leaves at worst a
``*.tmp`` file beside them, never a half-written entry; :func:`clear_cache`
removes those too.

Examples
--------
>>> import os, tempfile
>>> os.environ["SPECTHEORY_CACHE"] = tempfile.mkdtemp()
>>> _ = (cache_dir() / "traces").mkdir()
>>> _ = (cache_dir() / "traces" / "0123.safetensors").write_bytes(b"x" * 10)
>>> [(e.kind, e.name, e.bytes) for e in cache_entries()]
[('traces', '0123.safetensors', 10)]
>>> clear_cache("traces")
(1, 10)
>>> cache_entries()
[]
>>> del os.environ["SPECTHEORY_CACHE"]
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .._errors import InvalidParameterError

__all__ = ["CACHE_KINDS", "CacheEntry", "cache_dir", "cache_entries", "clear_cache"]

#: The sub-folders of the cache, one per kind of entry.
CACHE_KINDS = ("traces", "adapters", "heads", "corpus", "sweeps")


def cache_dir() -> Path:
    """The cache folder (see the module docstring for the order of the variables)."""
    for var in ("SPECTHEORY_CACHE", "SPECTHEORY_CACHE_DIR"):
        if os.environ.get(var):
            return Path(os.environ[var])
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG specification says relative paths are invalid and are to be ignored.
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "spectheory"
    return Path.home() / ".cache" / "spectheory"


@dataclass(frozen=True)
class CacheEntry:
    """One file of the cache.

    Attributes
    ----------
    kind : str
        Sub-folder (one of :data:`CACHE_KINDS`).
    name : str
        Path relative to the sub-folder.
    path : pathlib.Path
    bytes : int
    mtime : float
        Modification time (seconds since the epoch).
    partial : bool
        A temporary file left by an interrupted write (``*.tmp``).
    """

    kind: str
    name: str
    path: Path
    bytes: int
    mtime: float
    partial: bool


def _check_kind(kind):
    if kind is not None and kind not in CACHE_KINDS:
        raise InvalidParameterError(f"kind must be None or one of {CACHE_KINDS}; got {kind!r}")


def cache_entries(kind: str | None = None) -> list[CacheEntry]:
    """The files of the cache (of one ``kind``, or all), sorted by kind and name."""
    _check_kind(kind)
    root = cache_dir()
    out = []
    for k in CACHE_KINDS if kind is None else (kind,):
        folder = root / k
        if not folder.is_dir():
            continue
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                st = p.stat()
                out.append(
                    CacheEntry(
                        kind=k,
                        name=str(p.relative_to(folder)),
                        path=p,
                        bytes=st.st_size,
                        mtime=st.st_mtime,
                        partial=p.name.endswith(".tmp"),
                    )
                )
    return out


def clear_cache(kind: str | None = None) -> tuple[int, int]:
    """Remove the cache's files (of one ``kind``, or all); ``(files removed, bytes freed)``.

    Only files under the known sub-folders (:data:`CACHE_KINDS`) are touched;
    anything else in the cache folder is left alone.
    """
    n = size = 0
    for e in cache_entries(kind):
        e.path.unlink(missing_ok=True)
        n, size = n + 1, size + e.bytes
    return n, size
