"""Atomic file writes: a temporary file beside the target, then ``os.replace``.

A reader never sees a half-written trace, head, manifest, cache piece or table:
either the old file or the complete new one (docs/design.md, "Numerics and bad input").
"""

from __future__ import annotations

import csv
import math
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ._errors import InvalidParameterError, TraceError

__all__ = ["atomic_path", "json_safe", "read_safetensors", "unique_keys", "write_csv"]


def json_safe(x):
    """``x`` with every NaN and infinity as None (null), dicts, lists and tuples walked.

    ``json.dumps`` writes them as ``NaN`` and ``Infinity``, which are not JSON: jq,
    JavaScript and every strict parser reject them.

    >>> json_safe({"a": [1.0, float("nan")], "b": (float("inf"), "x")})
    {'a': [1.0, None], 'b': [None, 'x']}
    """
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_safe(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def unique_keys(pairs):
    """``json.loads`` hook: the object as a dict, refusing a key given twice.

    JSON itself keeps the last value silently; the caller prefixes the file
    and line to the :class:`~spectheory.InvalidParameterError`.
    """
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise InvalidParameterError(f"repeats the key(s) {', '.join(dup)}")
    return dict(pairs)


@contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success it atomically becomes ``path``.

    The parent folder is created.  On an exception the temporary file is removed
    and ``path`` is left untouched.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = pathlib.Path(tmp).write_text("done")
    >>> target.read_text()
    'done'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    os.close(fd)
    try:
        yield tmp
        # mkstemp creates the file private (0600); give it the usual mode under the umask.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_csv(table, path, columns) -> Path:
    """Write a list of dicts atomically as CSV with the given column order."""
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(columns))
        w.writeheader()
        w.writerows(table)
    return Path(path)


def read_safetensors(path, what: str, framework: str = "numpy"):
    """Read a whole safetensors file: ``(header metadata dict, tensors dict)``.

    Raises :class:`~spectheory.TraceError` naming ``what`` (``"trace file"``,
    ``"head file"``) when the file is missing, truncated or not safetensors.
    """
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{what} {str(path)!r} does not exist")
    try:
        with safe_open(str(path), framework=framework) as f:
            keys = list(f.keys())
            bf16 = _bfloat16_keys(path) if framework == "numpy" else set()
            tensors = {k: f.get_tensor(k) for k in keys if k not in bf16}
            tensors |= {k: _read_bfloat16(path, k) for k in bf16}
            return f.metadata() or {}, {k: tensors[k] for k in keys}
    except (SafetensorError, OSError, ValueError) as exc:
        raise TraceError(f"{what} {str(path)!r} is truncated or not safetensors: {exc}") from None


def _header(path):
    import json
    import struct

    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(size)), 8 + size


def _bfloat16_keys(path) -> set:
    """Tensors stored as bfloat16, which numpy has no dtype for."""
    header, _ = _header(path)
    return {k for k, v in header.items() if k != "__metadata__" and v.get("dtype") == "BF16"}


def _read_bfloat16(path, key):
    """A bfloat16 tensor as float32, exactly: bfloat16 is the top half of a float32."""
    import numpy as np

    header, start = _header(path)
    entry = header[key]
    lo, hi = entry["data_offsets"]
    with open(path, "rb") as f:
        f.seek(start + lo)
        raw = np.frombuffer(f.read(hi - lo), dtype="<u2")
    if raw.size != int(np.prod(entry["shape"], dtype=np.int64)):
        raise ValueError(f"tensor {key!r} holds {raw.size} bfloat16 values, not {entry['shape']}")
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(entry["shape"])
