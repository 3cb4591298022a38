"""Atomic file writes: a temporary file beside the target, then ``os.replace``.

A reader never sees a half-written trace, head, manifest, cache piece or table:
either the old file or the complete new one (docs/design.md, "Numerics and bad input").
"""

from __future__ import annotations

import csv
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ._errors import TraceError

__all__ = ["atomic_path", "read_safetensors", "write_csv"]


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
            return f.metadata() or {}, {k: f.get_tensor(k) for k in f.keys()}
    except (SafetensorError, OSError, ValueError) as exc:
        raise TraceError(f"{what} {str(path)!r} is truncated or not safetensors: {exc}") from None
