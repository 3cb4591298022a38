"""Cheap, stable fingerprints of model weights and tokenizers (part of the trace cache key).

Two fingerprints, both SHA-256 (hex):

:func:`file_fingerprint`
    Of the files a model is loaded from, without loading it: for each file
    (a GGUF or safetensors file, or every file of a Hugging Face folder, by
    sorted relative name): its name and size; its header (a safetensors
    file's 8-byte length and JSON header exactly; otherwise its first
    16 MiB, which holds a GGUF file's metadata and vocabulary); files up to
    16 MiB (configs, tokenizers) whole; and for larger files 1,024 blocks of
    4 KiB at evenly spaced offsets.  Reading ~20 MiB per weight file takes
    milliseconds; any change of the header (dtypes, shapes, names, the GGUF
    vocabulary) or of the configuration or tokenizer files changes it, and
    so does any edit of the weights that touches a sampled block (a
    fine-tuned model changes every block).  Results are memoised by
    ``(path, size, mtime)``.
:func:`weights_fingerprint`
    Of a model object in memory: per parameter and buffer (sorted by name) its
    name, dtype, shape and every element's bytes, plus the tokenizer's
    vocabulary, special tokens and chat template.  It identifies in-memory
    models (which have no files) and detects a loaded model whose weights
    differ from the file it names.  About 0.4 s per 500 MB of weights.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .._errors import InvalidParameterError

__all__ = ["file_fingerprint", "tokenizer_fingerprint", "weights_fingerprint"]

_HEAD = 16 << 20
_BLOCKS = 1024
_BLOCK = 4096
_memo: dict = {}
#: Scheme of :func:`weights_fingerprint`, stored beside it in a trace: 2 hashes every
#: element (1 hashed 4,096 strided ones per tensor).
WEIGHTS_SCHEME = 2


def _file_digest(path: Path, h) -> None:
    size = path.stat().st_size
    h.update(f"{path.name}\0{size}\0".encode())
    with open(path, "rb") as f:
        head = f.read(min(size, _HEAD))
        if path.suffix == ".safetensors" and len(head) >= 8:
            n = int.from_bytes(head[:8], "little")
            if 8 + n <= size and 8 + n > _HEAD:
                f.seek(0)
                head = f.read(8 + n)
        h.update(head)
        if size > _HEAD:
            for i in range(_BLOCKS):
                f.seek((size - _BLOCK) * i // (_BLOCKS - 1))
                h.update(f.read(_BLOCK))


def file_fingerprint(path) -> str:
    """SHA-256 fingerprint of a model file or folder (see the module docstring).

    Raises
    ------
    InvalidParameterError
        ``path`` is neither a file nor a folder.
    """
    path = Path(path)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(
            p
            for p in path.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
    else:
        raise InvalidParameterError(f"model path {str(path)!r} is neither a file nor a folder")
    stamp = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if stamp in _memo:
        return _memo[stamp]
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(path) if p != path else p.name).encode() + b"\0")
        _file_digest(p, h)
    _memo[stamp] = h.hexdigest()
    return _memo[stamp]


def tokenizer_fingerprint(tokenizer) -> str:
    """SHA-256 of a tokenizer's vocabulary, special tokens and chat template."""
    h = hashlib.sha256()
    vocab = tokenizer.get_vocab()
    h.update(json.dumps(sorted(vocab.items(), key=lambda kv: kv[1])).encode())
    special = getattr(tokenizer, "all_special_tokens", [])
    h.update(json.dumps([str(t) for t in special]).encode())
    h.update(str(getattr(tokenizer, "chat_template", None)).encode())
    return h.hexdigest()


def weights_fingerprint(model, tokenizer=None) -> str:
    """SHA-256 fingerprint of a torch model in memory and its tokenizer (see the module)."""
    import torch

    h = hashlib.sha256()
    with torch.no_grad():
        items = sorted([*model.named_parameters(), *model.named_buffers()], key=lambda kv: kv[0])
        seen = set()
        for name, t in items:
            if name in seen:
                continue
            seen.add(name)
            # Every element: 4,096 strided ones missed an edit between them (one row of
            # the output head), and the edited model got the other's cached trace.
            data = t.detach().reshape(-1).contiguous().cpu().view(torch.uint8).numpy()
            h.update(f"{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
            h.update(memoryview(data))
    if tokenizer is not None:
        h.update(tokenizer_fingerprint(tokenizer).encode())
    return h.hexdigest()
