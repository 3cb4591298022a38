"""Cheap, stable fingerprints of model weights and tokenizers (part of the trace cache key).

Two fingerprints, both SHA-256 (hex):

:func:`file_fingerprint`
    Of the files a model is loaded from, without loading it: for each file
    (a GGUF or safetensors file, or every file of a Hugging Face folder, by
    sorted relative name) its name, size and every byte.  Hashing reads about
    1 GB/s (0.09 s for SmolLM2's 98 MB GGUF file), once per file and process:
    results are memoised by ``(path, size, mtime)``.  Any edit changes it; an
    earlier form read the header and 1,024 sampled blocks of 4 KiB, and an edit
    of one small tensor (a norm's weights) between them kept the key, so the
    edited model was served the unedited model's cached trace.
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

#: Bytes read at a time while hashing a file.
_CHUNK = 16 << 20
_memo: dict = {}
#: Scheme of :func:`weights_fingerprint`, stored beside it in a trace: 2 hashes every
#: element (1 hashed 4,096 strided ones per tensor).
WEIGHTS_SCHEME = 2


def _file_digest(path: Path, h) -> None:
    h.update(f"{path.name}\0{path.stat().st_size}\0".encode())
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)


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
