"""Traces from arrays: logits or probabilities recorded by any framework.

A :class:`~spectheory.lm.Trace` needs, per position ``i`` of ``N``, the
target's and each draft's next-token logits over one vocabulary of size
``V``.  :meth:`~spectheory.lm.Trace.from_arrays` (with :func:`trace_fields`)
builds one from numpy (or torch) arrays; the result replays, checks, sweeps
and reports like a recorded trace.

Array layout on disk (read by :func:`~spectheory.lm.load_arrays` and by
:func:`~spectheory.lm.load_trace`, written by :func:`save_arrays`): a plain safetensors file with

=================  ==========  ===============================================
tensor             shape       meaning
=================  ==========  ===============================================
``target``         (N, V)      target logits (or probabilities, see ``kind``)
``draft/<name>``   (N, V)      one per draft, same kind as ``target``
``tokens``         (N,)        optional: token taken at each position
``prompt_ids``     (N,)        optional: prompt of each position (default 0),
                               non-decreasing (positions grouped by prompt)
``steps``          (N,)        optional: index of the position in its prompt's
                               continuation (default 0, 1, ... per prompt)
``prompt_tokens``  (M,)        optional: the prompts' tokens, concatenated
``prompt_offsets`` (P + 1,)    with ``prompt_tokens``: prompt ``j`` is
                               ``prompt_tokens[o[j]:o[j+1]]``
=================  ==========  ===============================================

and optional string metadata ``kind`` (``"logits"``, the default, or
``"probs"``) and ``name`` (the model's name); any other key but ``format``
(which writers add) is refused.  Any float dtype is read;
integers must be integer tensors.  Rows given as logits that are in fact
probabilities (every entry in [0, 1], every row summing to 1) are refused
rather than softmaxed a second time; probabilities are checked at the
tolerance of their own dtype (1e-4 for float32); finite logits beyond the
storage dtype's range are refused rather than stored as ``inf``.

Probabilities are stored as logits ``log p`` (``-inf`` where ``p = 0``), so
``process_logits(logits, temperature=1)`` gives them back.  Draft names that
are not draft specifications become ``"logits:<name>"``.  n-gram drafts
(``ngram_orders``) are rebuilt from ``prompt_tokens`` and ``tokens``, which
they then require.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> p = rng.dirichlet(np.ones(5), size=4)
>>> q = rng.dirichlet(np.ones(5), size=4)
>>> from spectheory.lm import Trace
>>> tr = Trace.from_arrays(p, {"small": q}, kind="probs", name="mine")
>>> tr.drafts, tr.num_positions, tr.vocab_size
(('logits:small',), 4, 5)
>>> from spectheory import process_logits
>>> bool(np.allclose(process_logits(tr.draft_logits("logits:small"), 1.0), q, rtol=1e-6))
True
"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np

from .._errors import InvalidParameterError, ShapeMismatchError, TraceError
from .drafts import parse_draft

__all__ = ["METADATA_KEYS", "fields_from_tensors", "save_arrays", "trace_fields"]

#: String metadata the array layout reads (besides "format", which writers add and is ignored).
METADATA_KEYS = ("kind", "name")

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


def _as_matrix(x, name, kind):
    """``x`` as a finite (N, V) float64 matrix of logits (``-inf`` allowed) or probabilities.

    Probabilities are checked at the tolerance of their own dtype (a float32
    softmax sums to 1 within 1e-4, not 1e-9) before the cast to float64.
    """
    if kind == "probs":
        from .._validate import _to_numpy, as_distribution

        arr, _ = _to_numpy(x, name)
        _check_matrix(arr, name)
        probs, _ = as_distribution(x, name)
        with np.errstate(divide="ignore"):
            return np.log(probs)
    if type(x).__module__.startswith("torch"):
        x = x.detach().cpu().double().numpy()
    arr = np.asarray(x)
    _check_matrix(arr, name)
    arr = arr.astype(np.float64)
    bad = np.isnan(arr) | (arr == np.inf)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise InvalidParameterError(
            f"{name} row {r} has logit {float(arr[r, c])} at token {c}; logits must be finite "
            f"or -inf"
        )
    empty = np.flatnonzero(np.all(arr == -np.inf, axis=1))
    if empty.size:
        raise InvalidParameterError(f"{name} row {empty[0]} is -inf everywhere (no token possible)")
    # Probabilities read as logits would be softmaxed a second time, silently.
    # Real logits whose every row lies in [0, 1] and sums to 1 are practically
    # impossible (and shifting a row by a constant leaves its law unchanged).
    if np.all((arr >= 0) & (arr <= 1)) and np.allclose(arr.sum(axis=1), 1.0, rtol=0, atol=1e-4):
        raise InvalidParameterError(
            f"{name} rows are probabilities (every entry in [0, 1], every row summing to 1), "
            f"not logits: pass kind='probs' (a file: its 'kind' metadata)"
        )
    return arr


def _check_matrix(arr, name):
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 2 or arr.dtype.kind not in "fiu":
        raise ShapeMismatchError(
            f"{name} must be a real (positions, vocabulary) matrix with >= 1 row and >= 2 "
            f"columns; got shape {arr.shape} and dtype {arr.dtype}"
        )


def _stored(m, dtype, name):
    """``m`` cast to the storage dtype; refuses finite logits that the cast makes infinite.

    float16 rows are stored shifted so that their largest finite logit is 0
    (the law is unchanged): float16's spacing grows with magnitude, so a row
    carrying an offset of 3,000 moved its probabilities by up to 0.33 when
    cast as is (1.6% relative at SmolLM2's logits of about 30), and the shift
    puts the finest spacing on the likeliest tokens.  A masking value such as
    ``-1e9`` may become ``-inf``: its probability is already 0 in float64
    (more than 745 below the row's maximum).
    """
    top = np.max(np.where(np.isfinite(m), m, -np.inf), axis=1, keepdims=True)
    if dtype == "float16":
        m, top = m - top, np.zeros_like(top)
    with np.errstate(over="ignore"):
        out = m.astype(dtype)
    negligible = (out == -np.inf) & (m - top < -745.0)
    over = np.isinf(out) & np.isfinite(m) & ~negligible
    if over.any():
        r, c = np.argwhere(over)[0]
        raise InvalidParameterError(
            f"{name} row {r} has logit {float(m[r, c])} at token {c}, beyond the range of "
            f"{dtype} storage: subtract each row's maximum (the law is unchanged) or use "
            f"dtype='float32'"
        )
    return out


def _as_ints(x, name, n=None):
    from .._validate import integer_vector

    arr = integer_vector(x, name)
    if n is not None and arr.size != n:
        raise ShapeMismatchError(f"{name} has {arr.size} entries; the target has {n} positions")
    return arr.astype(np.int64)


def _draft_name(name) -> str:
    if not isinstance(name, str):
        raise InvalidParameterError(f"draft names must be strings; got {name!r}")
    try:
        kind, _ = parse_draft(name)
    except InvalidParameterError:
        if not _NAME.match(name):
            raise InvalidParameterError(
                f"draft name must be a draft spec or letters, digits, '_', '.', '-'; got {name!r}"
            ) from None
        return f"logits:{name}"
    if kind == "ngram":
        raise InvalidParameterError(
            f"draft {name!r}: n-gram drafts are rebuilt from the tokens; pass ngram_orders"
        )
    return name


def trace_fields(
    target,
    drafts,
    *,
    kind: str = "logits",
    tokens=None,
    prompt_ids=None,
    steps=None,
    prompt_tokens=None,
    prompt_offsets=None,
    ngram_orders=(),
    name: str = "arrays",
    temperature: float = 1.0,
    seed: int = 0,
    dtype: str = "float32",
):
    """The fields of a :class:`~spectheory.lm.Trace` from the target's and drafts' logits or probs.

    :meth:`spectheory.lm.Trace.from_arrays` (which takes the same arguments)
    builds the trace from them and checks the settings and the layout.

    Parameters
    ----------
    target : array_like, (N, V)
        Target logits (``kind="logits"``: finite or ``-inf``) or probabilities
        (``kind="probs"``: rows of a distribution, checked and renormalised as
        everywhere in spectheory).
    drafts : array_like (N, V), or dict of str to array_like (N, V)
        One draft (named ``"draft"``) or several by name, of the same ``kind``.
    kind : {"logits", "probs"}
    tokens : array_like of int, (N,), optional
        The token taken at each position (default: the target's most likely
        token; needed for n-gram drafts).
    prompt_ids, steps : array_like of int, (N,), optional
        Prompt of each position (non-decreasing; default all 0) and index in
        its continuation (default 0, 1, ... within each prompt).
    prompt_tokens : array_like of int or list of them, optional
        The prompts' tokens: one flat array with ``prompt_offsets``, or a list
        of one array per prompt (in increasing prompt id); default empty.
    prompt_offsets : array_like of int, (P + 1,), optional
    ngram_orders : sequence of int
        n-gram drafts ``"ngram:K"`` to rebuild from the tokens.
    name : str
        Model name; the trace's ``settings.model`` is ``"arrays:<name>"``.
    temperature, seed
        Recorded in the settings (the temperature the tokens were sampled at).
    dtype : {"float32", "float16"}
        Storage of the logits (recordings use float16).  float16 rows are
        stored minus their largest finite logit (the law is unchanged; an
        offset such as +3000 would otherwise cost every digit of precision).

    Returns
    -------
    dict
        Keyword arguments of :class:`~spectheory.lm.Trace`.

    Raises
    ------
    ShapeMismatchError
        Drafts of another shape than the target (another vocabulary or
        number of positions); per-position arrays of another length.
    InvalidParameterError, InvalidDistributionError
        NaN or +inf logits, rows that are not distributions, bad names,
        prompt ids that are not grouped, n-gram drafts without tokens.
    """
    from .._validate import check_positive_int

    if kind not in ("logits", "probs"):
        raise InvalidParameterError(f"kind must be 'logits' or 'probs'; got {kind!r}")
    if dtype not in ("float32", "float16"):
        raise InvalidParameterError(f"dtype must be 'float32' or 'float16'; got {dtype!r}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidParameterError(f"name must be letters, digits, '_', '.', '-'; got {name!r}")
    t = _as_matrix(target, "target", kind)
    n, v = t.shape
    if not isinstance(drafts, dict):
        drafts = {"draft": drafts}
    if not drafts and not ngram_orders:
        raise InvalidParameterError("drafts must hold at least one draft (or pass ngram_orders)")
    stored = {}
    for key, arr in drafts.items():
        spec = _draft_name(key)
        m = _as_matrix(arr, f"draft {key!r}", kind)
        if m.shape != (n, v):
            raise ShapeMismatchError(
                f"draft {key!r} has shape {m.shape}, the target {(n, v)}: the draft must have "
                f"the target's vocabulary and number of positions"
            )
        stored[spec] = _stored(m, dtype, f"draft {key!r}")
    orders = []
    for k in ngram_orders:
        orders.append(check_positive_int(k, "ngram_orders"))
    if orders and (tokens is None or prompt_tokens is None):
        raise InvalidParameterError("ngram_orders needs tokens and prompt_tokens (their context)")
    pids = np.zeros(n, np.int64) if prompt_ids is None else _as_ints(prompt_ids, "prompt_ids", n)
    if pids.size and (pids.min() < 0 or np.any(np.diff(pids) < 0)):
        raise InvalidParameterError(
            "prompt_ids must be non-negative and non-decreasing (positions grouped by prompt)"
        )
    order = np.unique(pids)
    starts = np.searchsorted(pids, pids, side="left")
    st = np.arange(n) - starts if steps is None else _as_ints(steps, "steps", n)
    same_prompt = pids[1:] == pids[:-1]
    if np.any(st < 0) or np.any(st > np.arange(n) - starts) or np.any(
        same_prompt & (st[1:] <= st[:-1])
    ):
        raise InvalidParameterError(
            "steps must count the positions of each prompt's continuation from 0 up "
            "(increasing within a prompt, never repeated)"
        )
    toks = np.argmax(t, axis=1) if tokens is None else _as_ints(tokens, "tokens", n)
    if toks.size and (toks.min() < 0 or toks.max() >= v):
        i = int(np.argmax((toks < 0) | (toks >= v)))  # the offending entry, not the maximum
        raise InvalidParameterError(f"tokens must be ids in [0, {v}); tokens[{i}] = {int(toks[i])}")
    if prompt_tokens is None:
        ptoks, offs = np.zeros(0, np.int64), np.zeros(order.size + 1, np.int64)
    elif prompt_offsets is None:
        parts = [_as_ints(p, f"prompt_tokens[{j}]") for j, p in enumerate(prompt_tokens)]
        if len(parts) != order.size:
            raise ShapeMismatchError(
                f"prompt_tokens holds {len(parts)} prompts; prompt_ids has {order.size}"
            )
        ptoks = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        offs = np.concatenate([[0], np.cumsum([p.size for p in parts])]).astype(np.int64)
    else:
        ptoks = _as_ints(prompt_tokens, "prompt_tokens")
        offs = _as_ints(prompt_offsets, "prompt_offsets", order.size + 1)
        if offs[0] != 0 or offs[-1] != ptoks.size or np.any(np.diff(offs) < 0):
            raise InvalidParameterError(
                f"prompt_offsets must rise from 0 to len(prompt_tokens) = {ptoks.size}"
            )
    drafts_all = (*stored, *(f"ngram:{k}" for k in orders))
    settings = {
        "model": f"arrays:{name}",
        "drafts": list(drafts_all),
        "prompts": [int(i) for i in order],
        "max_new_tokens": int(st.max()) + 1,
        "temperature": temperature,
        "seed": seed,
        "prompt_file": "",
    }
    target_stored = _stored(t, dtype, "target")
    digest = hashlib.sha256(target_stored.tobytes())
    for spec in sorted(stored):
        digest.update(spec.encode() + stored[spec].tobytes())
    meta = {
        "settings": settings,
        "key": digest.hexdigest()[:16],
        "model": {"name": f"arrays:{name}", "source": "arrays", "vocab_size": int(v)},
        "prompt_order": [int(i) for i in order],
        "input_kind": kind,
    }
    return {
        "target_logits": target_stored,
        "exit_logits": stored,
        "tokens": toks,
        "prompt_ids": pids,
        "steps": st,
        "prompt_tokens": ptoks,
        "prompt_offsets": offs,
        "metadata": json.loads(json.dumps(meta)),
    }


def fields_from_tensors(tensors: dict, header: dict, where: str = "arrays") -> dict:
    """:func:`trace_fields` of the tensors and string metadata of the array layout."""
    drafts = {k.split("/", 1)[1]: v for k, v in tensors.items() if k.startswith("draft/")}
    known = {"target", "tokens", "prompt_ids", "steps", "prompt_tokens", "prompt_offsets"}
    extra = sorted(k for k in tensors if k not in known and not k.startswith("draft/"))
    if "target" not in tensors or not drafts:
        raise TraceError(
            f"{where}: the array layout needs a 'target' tensor and at least one 'draft/<name>' "
            f"tensor; it has {sorted(tensors)}"
        )
    if extra:
        raise TraceError(f"{where}: unknown tensors {extra} in the array layout")
    # A metadata key the layout does not read was ignored: a misspelt "Kind": "probs" read
    # probabilities as logits' defaults, a "temperature" was never applied.  ("format" is
    # what torch's and other writers add by themselves.)
    unread = sorted(set(header) - set(METADATA_KEYS) - {"format"})
    if unread:
        raise TraceError(
            f"{where}: unknown metadata {unread} in the array layout (it reads "
            f"{', '.join(METADATA_KEYS)}; a temperature is applied when replaying, not stored)"
        )
    if ("prompt_tokens" in tensors) != ("prompt_offsets" in tensors):
        raise TraceError(f"{where}: prompt_tokens and prompt_offsets come together")
    try:
        return trace_fields(
            tensors["target"],
            drafts,
            kind=header.get("kind", "logits"),
            name=header.get("name", "arrays"),
            **{k: tensors[k] for k in known - {"target"} if k in tensors},
        )
    except (InvalidParameterError, ShapeMismatchError, ValueError) as exc:
        raise TraceError(f"{where}: {exc}") from None


def save_arrays(path, target, drafts, *, kind="logits", name="arrays", **optional):
    """Write the array layout (see the module) atomically: what ``load_arrays`` reads."""
    from safetensors.numpy import save_file

    from .. import _files

    tensors = {"target": np.ascontiguousarray(target)}
    if not isinstance(drafts, dict):
        drafts = {"draft": drafts}
    tensors.update({f"draft/{k}": np.ascontiguousarray(v) for k, v in drafts.items()})
    tensors.update({k: np.ascontiguousarray(v) for k, v in optional.items()})
    with _files.atomic_path(path) as tmp:
        save_file(tensors, tmp, metadata={"kind": kind, "name": name})
    return path
