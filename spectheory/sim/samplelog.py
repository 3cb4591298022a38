r"""Logs of an engine's speculative samples: the format, its checks, and its files.

A log holds one row per emitted token ``t``:

========== =========== ====================================================
key        shape       meaning
========== =========== ====================================================
target     (N, V)      the processed target distribution :math:`p_t` the
                       token should follow given everything before it
draft      (N, V)      the draft distribution :math:`q_t` the drafts of the
                       row were sampled from (any row, e.g. uniform, where
                       the row has no draft)
drafts     (N, n) int  the drafted tokens verified at the row, in draw
                       order; ``-1`` pads rows with fewer than ``n`` drafts
                       (a bonus or target-only token has none)
outputs    (N,) int    the emitted token :math:`y_t`
round      (N,) int    optional: the verification round of the row; the rows
                       of a round are consecutive, in draft order (depth 0
                       first), so that per-depth acceptance and the accepted
                       length can be computed
========== =========== ====================================================

Files (:func:`load_log`, :func:`save_log`), chosen by suffix:

* ``.npz``: the keys above as arrays (read with ``allow_pickle=False``);
* ``.safetensors``: the same tensors (needs the ``safetensors`` package,
  extra ``models``);
* ``.jsonl``: one JSON object per row, ``{"target": [...], "draft": [...],
  "drafts": [...], "output": 7, "round": 0}`` (``round`` optional, ``drafts``
  of any length up to ``n``; ``[]`` for none).

Every check names the row (or the file line) and the value: nothing is
dropped silently.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import InvalidDistributionError, InvalidParameterError, ShapeMismatchError
from .._validate import as_distribution

__all__ = ["LOG_KEYS", "SampleLog", "as_sample_log", "load_log", "save_log"]

#: Keys of a log file, in order (``round`` optional).
LOG_KEYS = ("target", "draft", "drafts", "outputs", "round")


@dataclass(frozen=True)
class SampleLog:
    """A checked log; see the module docstring for the fields.

    Built directly or by :func:`as_sample_log`, the arrays are checked either
    way (:func:`as_sample_log` lists the errors): a log whose rows are not
    distributions, or whose ids lie outside ``[0, V)``, cannot be audited.
    """

    target: np.ndarray
    draft: np.ndarray
    drafts: np.ndarray
    outputs: np.ndarray
    round: np.ndarray | None = None

    def __post_init__(self):
        checked = _checked_arrays(self.target, self.draft, self.drafts, self.outputs, self.round)
        for key, value in zip(LOG_KEYS, checked):
            object.__setattr__(self, key, value)

    @property
    def positions(self) -> int:
        """Number of rows ``N``."""
        return int(self.outputs.size)

    @property
    def vocab(self) -> int:
        """Vocabulary size ``V``."""
        return int(self.target.shape[1])


def _int_array(x, name):
    what = "integers" if name == "round" else "integer token ids"
    arr = np.asarray(x)
    if arr.size and arr.dtype.kind not in "iu":
        if not (
            arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))
        ):
            raise InvalidParameterError(f"{name} must hold {what}; got dtype {arr.dtype}")
    if arr.size and arr.dtype.kind in "uf":
        # beyond int64 the cast wraps (uint64 2**64 - 1 became the padding -1) or
        # saturates: refuse, naming the value as given
        big = np.argwhere(np.abs(arr) >= 2.0**63 if arr.dtype.kind == "f" else arr > 2**63 - 1)
        if big.size:
            where = " ".join(f"{k} {int(i)}" for k, i in zip(("row", "slot"), big[0]))
            raise InvalidParameterError(
                f"{name} {where} holds {arr[tuple(big[0])].item()!r}, beyond the int64 range "
                f"of {what}"
            )
    return arr.astype(np.int64)


def as_sample_log(target, draft, drafts, outputs, round=None) -> SampleLog:
    """Check a log's arrays and return them as a :class:`SampleLog`.

    Raises
    ------
    InvalidDistributionError
        A ``target`` or ``draft`` row that is not a distribution (names the row).
    ShapeMismatchError
        Arrays whose numbers of rows or vocabularies disagree.
    InvalidParameterError
        A token outside ``[0, V)`` (``-1`` padding allowed in ``drafts``), a
        non-integer id, or a round that is not one consecutive block.

    Examples
    --------
    >>> log = as_sample_log([[0.5, 0.5]], [[0.9, 0.1]], [[1]], [0])
    >>> log.positions, log.vocab
    (1, 2)
    >>> as_sample_log([[0.5, 0.5]], [[0.9, 0.1]], [[1]], [2])
    Traceback (most recent call last):
    ...
    spectheory._errors.InvalidParameterError: outputs row 0 holds token 2, outside [0, 2)
    """
    return SampleLog(target, draft, drafts, outputs, round)


def _checked_arrays(target, draft, drafts, outputs, round):
    """The checks of :func:`as_sample_log`: the arrays as float64 rows and int64 ids."""
    for name, x in (("target", target), ("draft", draft)):
        if np.ndim(x) != 2:
            raise ShapeMismatchError(f"{name} must have shape (N, V); got shape {np.shape(x)}")
    p, _ = as_distribution(target, "target")
    q, _ = as_distribution(draft, "draft")
    if p.shape != q.shape:
        raise ShapeMismatchError(
            f"target and draft must have the same shape (N, V); got {p.shape} and {q.shape}"
        )
    N, V = p.shape
    y = _int_array(outputs, "outputs")
    if y.shape != (N,):
        raise ShapeMismatchError(f"outputs must have shape ({N},), one per row; got {y.shape}")
    bad = np.flatnonzero((y < 0) | (y >= V))
    if bad.size:
        r = int(bad[0])
        raise InvalidParameterError(f"outputs row {r} holds token {int(y[r])}, outside [0, {V})")
    d = _int_array(drafts, "drafts")
    if d.ndim == 1:
        d = d.reshape(-1, 1)
    if d.ndim != 2 or d.shape[0] != N:
        raise ShapeMismatchError(f"drafts must have shape ({N}, n); got {np.shape(drafts)}")
    bad = np.argwhere((d < -1) | (d >= V))
    if bad.size:
        r, j = (int(v) for v in bad[0])
        raise InvalidParameterError(
            f"drafts row {r} slot {j} holds token {int(d[r, j])}, outside [0, {V}) "
            f"(-1 marks an empty slot)"
        )
    gap = np.argwhere((d[:, :-1] < 0) & (d[:, 1:] >= 0))  # padding only at the end
    if gap.size:
        r, j = (int(v) for v in gap[0])
        raise InvalidParameterError(
            f"drafts row {r} has the padding -1 in slot {j} before the draft {int(d[r, j + 1])} "
            f"in slot {j + 1}; -1 pads only the end of a row (drafts in draw order)"
        )
    rd = None
    if round is not None:
        rd = _int_array(round, "round")
        if rd.shape != (N,):
            raise ShapeMismatchError(f"round must have shape ({N},); got {rd.shape}")
        starts = np.flatnonzero(np.r_[True, rd[1:] != rd[:-1]])
        seen, dup = np.unique(rd[starts], return_counts=True)
        if np.any(dup > 1):
            k = int(seen[np.argmax(dup > 1)])
            r = int(starts[rd[starts] == k][1])
            raise InvalidParameterError(
                f"round {k} is not one consecutive block of rows (it starts again at row {r})"
            )
    return p, q, d, y, rd


def _from_mapping(m, where) -> SampleLog:
    missing = [k for k in LOG_KEYS[:4] if k not in m]
    if missing:
        raise InvalidParameterError(f"{where} lacks the key(s) {', '.join(missing)}")
    extra = sorted(set(m) - set(LOG_KEYS))
    if extra:
        raise InvalidParameterError(
            f"{where} has unknown key(s) {', '.join(extra)}; expected {', '.join(LOG_KEYS)}"
        )
    return as_sample_log(m["target"], m["draft"], m["drafts"], m["outputs"], m.get("round"))


def _is_id(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _check_json_row(obj, path, i):
    """Types of one JSONL row: JSON would let 1.7, true or [[0]] through as ids."""
    for key in ("target", "draft"):
        row = obj[key]
        if not isinstance(row, list) or not all(_is_number(x) for x in row):
            raise InvalidParameterError(f"{path} line {i}: {key} must be a list of numbers")
    bad = [x for x in obj["drafts"] if not _is_id(x) or x < 0]
    if bad:
        raise InvalidParameterError(
            f"{path} line {i}: drafts must be integer token ids; got {bad[0]!r}"
            + (" (a JSON line lists only the drafts it verified: no -1 padding)"
               if _is_id(bad[0]) else "")
        )
    for key in ("output", "round"):
        if key in obj and not _is_id(obj[key]):
            raise InvalidParameterError(
                f"{path} line {i}: {key} must be an integer; got {obj[key]!r}"
            )


def _json_rows(rows):
    """JSON numbers as float64, or as float32 when every one is a float32 value.

    ``tolist()`` of a float32 engine's rows writes float32 values, whose sums
    miss 1 by float32 rounding: read as float32 they get float32's tolerance,
    as the same rows in a ``.npz`` or ``.safetensors`` file do.
    """
    arr = np.asarray(rows, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        a32 = arr.astype(np.float32)
    return a32 if np.array_equal(a32.astype(np.float64), arr) else arr


def _load_jsonl(path: Path) -> SampleLog:
    rows = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line, object_pairs_hook=_files.unique_keys)
            except json.JSONDecodeError as exc:
                raise InvalidParameterError(f"{path} line {i} is not JSON: {exc}") from None
            except InvalidParameterError as exc:
                raise InvalidParameterError(f"{path} line {i} {exc}") from None
            if not isinstance(obj, dict):
                raise InvalidParameterError(f"{path} line {i} is not a JSON object")
            need = {"target", "draft", "drafts", "output"}
            if not need <= set(obj) or set(obj) - need - {"round"}:
                raise InvalidParameterError(
                    f"{path} line {i} has keys {sorted(obj)}; expected target, draft, drafts, "
                    f"output and optionally round"
                )
            if not isinstance(obj["drafts"], list):
                raise InvalidParameterError(f"{path} line {i}: drafts must be a list")
            _check_json_row(obj, path, i)
            rows.append((i, obj))
    if not rows:
        raise InvalidParameterError(f"{path} holds no rows")
    V = {len(o["target"]) for _, o in rows} | {len(o["draft"]) for _, o in rows}
    if len(V) != 1:
        i, o = next((i, o) for i, o in rows if len(o["target"]) != len(rows[0][1]["target"])
                    or len(o["draft"]) != len(rows[0][1]["target"]))  # fmt: skip
        raise ShapeMismatchError(
            f"{path} line {i}: target has {len(o['target'])} entries and draft "
            f"{len(o['draft'])}, where line {rows[0][0]}'s target has "
            f"{len(rows[0][1]['target'])}: every row must have one vocabulary"
        )
    n = max(len(o["drafts"]) for _, o in rows)
    drafts = np.full((len(rows), max(n, 1)), -1, dtype=np.int64)
    for r, (_, o) in enumerate(rows):
        drafts[r, : len(o["drafts"])] = o["drafts"]
    has_round = [("round" in o) for _, o in rows]
    if any(has_round) and not all(has_round):
        i = rows[has_round.index(not has_round[0])][0]
        raise InvalidParameterError(f"{path} line {i}: round given on some lines only")
    try:
        return as_sample_log(
            _json_rows([o["target"] for _, o in rows]),
            _json_rows([o["draft"] for _, o in rows]),
            drafts,
            [o["output"] for _, o in rows],
            [o["round"] for _, o in rows] if all(has_round) else None,
        )
    except (InvalidDistributionError, InvalidParameterError) as exc:
        raise type(exc)(f"{path}: {exc} (row r is line r + 1 of the non-empty lines)") from None


def load_log(path) -> SampleLog:
    """Read a log file (``.npz``, ``.safetensors`` or ``.jsonl``) and check it.

    Raises :class:`~spectheory.InvalidParameterError` for an unknown suffix,
    a missing or unknown key, and every error of :func:`as_sample_log`.
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidParameterError(f"log file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        if not zipfile.is_zipfile(path):  # else np.load would try it as a pickle
            raise InvalidParameterError(f"{path} is not a readable .npz file (not a zip archive)")
        try:
            with np.load(path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except ValueError as exc:
            if "pickle" in str(exc):
                raise InvalidParameterError(f"{path} holds pickled objects; not read") from None
            raise InvalidParameterError(f"{path} is not a readable .npz file: {exc}") from None
        except (OSError, EOFError, zipfile.BadZipFile) as exc:
            raise InvalidParameterError(
                f"{path} is not a readable .npz file ({type(exc).__name__}: {exc})"
            ) from None
        return _from_mapping(arrays, str(path))
    if suffix == ".safetensors":
        _, tensors = _files.read_safetensors(path, "log file")
        return _from_mapping(tensors, str(path))
    if suffix in (".jsonl", ".json"):
        return _load_jsonl(path)
    raise InvalidParameterError(
        f"log file {str(path)!r} has suffix {suffix!r}; expected .npz, .safetensors or .jsonl"
    )


def save_log(log: SampleLog, path) -> Path:
    """Write ``log`` atomically to ``path`` (format by suffix, as :func:`load_log`).

    A ``.jsonl`` line lists only the drafts its row verified (no ``-1``
    padding), so the number of draft slots is not stored: a log whose last
    columns are padding on every row reads back with fewer columns (the same
    rows, drafts and outputs; :func:`~spectheory.sim.log_metrics.acceptance_table`
    then has no rows for those empty slots).  ``.npz`` and ``.safetensors``
    keep the shape.
    """
    path = Path(path)
    arrays = {
        "target": log.target,
        "draft": log.draft,
        "drafts": log.drafts,
        "outputs": log.outputs,
    }
    if log.round is not None:
        arrays["round"] = log.round
    suffix = path.suffix.lower()
    with _files.atomic_path(path) as tmp:
        if suffix == ".npz":
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)
        elif suffix == ".safetensors":
            from safetensors.numpy import save_file

            save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, tmp)
        elif suffix in (".jsonl", ".json"):
            with open(tmp, "w") as f:
                for r in range(log.positions):
                    obj = {
                        "target": log.target[r].tolist(),
                        "draft": log.draft[r].tolist(),
                        "drafts": [int(x) for x in log.drafts[r] if x >= 0],
                        "output": int(log.outputs[r]),
                    }
                    if log.round is not None:
                        obj["round"] = int(log.round[r])
                    f.write(json.dumps(obj) + "\n")
        else:
            raise InvalidParameterError(
                f"log file {str(path)!r} has suffix {suffix!r}; expected .npz, .safetensors "
                f"or .jsonl"
            )
    return path
