r"""Sweeps over sharded traces on Dask: one tidy table, reproducible and restartable.

A sweep replays every shard of a :class:`~spectheory.lm.shards.ShardedTrace`
through every configuration of a :class:`SweepGrid` (draft model, temperature,
number of drafts ``n``, draft law) with the grid's verifiers and trials, and
returns the tidy table of :func:`spectheory.sim.replay.replay` (columns
:data:`~spectheory.sim.replay.COLUMNS`) with one more column, ``shard``.
``position`` is the global position in the whole trace.

Tasks and schedulers
--------------------
One task is one (shard, configuration): it loads only its shard (verifying
its checksums), processes the logits chunk by chunk (``chunk`` positions at a
time) and runs every applicable verifier and the bound
(:func:`spectheory.solve_bound`).  The tasks run on Dask [1]_:

* ``scheduler=None`` or ``"serial"``: in-process, Dask's synchronous scheduler;
  ``"threads"``: Dask's thread pool in this process;
* ``"local"``: a :class:`distributed.LocalCluster` of ``local_workers`` worker
  processes (one thread each; :func:`local_cluster`), started and closed by the
  call (scripts that use it need the ``if __name__ == "__main__":`` guard of
  multiprocessing's spawn start method);
* any other string: the address of a running Dask scheduler
  (``"tcp://host:8786"``), connected with a :class:`distributed.Client`;
* a :class:`distributed.Client` instance: used as is (not closed).

Reproducibility
---------------
Every random number of position :math:`g` (global) for verifier :math:`v`
in configuration :math:`c` comes from its own stream,
``numpy.random.default_rng([seed, *h(c, v), g])`` with :math:`h` four 32-bit
words of the SHA-256 of the configuration's values (draft, temperature, n, law,
verifier): first the draft uniforms (``trials x n``, greedy ``trials x 1``),
then the verifier uniforms, then the ``trials`` PIT uniforms; they are passed
to :func:`spectheory.simulate` (:func:`spectheory.sim.replay.config_rows`,
shared with :func:`~spectheory.sim.replay.replay`, a serial sweep of a trace
in memory: same table for the same seed).  So the table does not depend on the order in
which tasks run, on the number of workers, on how the trace is split into
shards or chunks, nor on which other configurations the grid holds.

Restarts
--------
With ``cache_dir``, every finished task writes its rows atomically to
``cache_dir/<kind>-<key>.json`` (JSON with a SHA-256 of its content), keyed
by the SHA-256 of its shard file, the configuration, the verifiers, the
trials, the seed and the code that computes the rows (:func:`code_fingerprint`:
the spectheory sources, and each verifier's function with the state it
depends on: code, source file, closure, defaults, the globals it reads and the
functions of yours it calls, a callable object's attributes), so a piece
computed by other code (an edited verifier of yours, or one built with other
parameters, registered under the same name; another version of the package)
is computed again rather than read.  A later sweep reads the pieces that are there (a
corrupted piece is recomputed) and runs only the others, so an interrupted
sweep resumes where it stopped and nothing is computed twice.  A task that
raises is retried up to ``retries`` times in place; a task lost with its
worker is rescheduled by Dask.  The cache folder must be visible to the
workers (it is written by them).

References
----------
.. [1] Dask Development Team, "Dask: library for dynamic task scheduling",
   https://dask.org (2016); M. Rocklin, "Dask: parallel computation with
   blocked algorithms and task scheduling", Proc. SciPy 2015.

Examples
--------
>>> import tempfile
>>> import numpy as np
>>> from spectheory.lm import Trace
>>> from spectheory.lm.shards import shard_trace
>>> rng = np.random.default_rng(0)
>>> z = rng.standard_normal((4, 16)).astype(np.float16)
>>> trace = Trace(target_logits=z, exit_logits={"exit:1": z}, tokens=np.zeros(4, np.int64),
...               prompt_ids=np.array([0, 0, 1, 1]), steps=np.array([0, 1, 0, 1]),
...               prompt_tokens=np.array([1, 2]), prompt_offsets=np.array([0, 1, 2]),
...               metadata={"format": 1, "prompt_order": [0, 1],
...                         "settings": {"drafts": ["exit:1"]}})
>>> shards = shard_trace(trace, tempfile.mkdtemp(), max_shard_bytes=2**20)
>>> grid = SweepGrid(ns=(2,), samplings=("iid",), verifiers=("rrs",), trials=50)
>>> table = sweep(shards, grid, seed=1)
>>> len(table), table[0]["verifier"], table[0]["shard"]
(4, 'rrs', 0)
>>> [r["mc"] for r in table]  # target equal to the draft: always accepted
[1.0, 1.0, 1.0, 1.0]
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _files
from .._errors import InvalidParameterError, MissingDependencyError, VerifierError
from .._validate import check_positive_int
from ..distributions import process_logits
from ..drafting import SAMPLINGS
from ..solvers.ot_dual import solve_bound
from ..verifiers import REGISTRY, as_verifier
from ._state_digest import StateDigest
from .replay import COLUMNS, REPLAY_VERIFIERS, _applicable, check_grid_has_work, config_rows

__all__ = [
    "BOUND_COLUMNS",
    "SWEEP_COLUMNS",
    "SweepGrid",
    "code_fingerprint",
    "local_cluster",
    "sweep",
    "sweep_bounds",
    "write_table",
]

#: Columns of the sweep table: those of :func:`spectheory.sim.replay.replay`, then ``shard``.
SWEEP_COLUMNS = (*COLUMNS, "shard")
#: Columns of the bound-only table of :func:`sweep_bounds`.
BOUND_COLUMNS = (
    "position", "prompt_id", "step", "draft", "temperature", "n", "sampling", "bound", "shard",
)  # fmt: skip
#: Version of the cached pieces; part of their key (2: the key holds the code's fingerprint).
CACHE_VERSION = 2

_log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- the grid


def _tuple(value, name):
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        raise InvalidParameterError(f"{name} must be a sequence; got {value!r}")
    out = tuple(dict.fromkeys(value))  # duplicates dropped, order kept
    if not out:
        raise InvalidParameterError(f"{name} must not be empty; got {value!r}")
    return out


@dataclass(frozen=True)
class SweepGrid:
    """The configurations of a sweep.

    Every combination of ``drafts x temperatures x ns x samplings`` is one
    configuration, run with each of ``verifiers`` that supports its ``n`` and
    draft law, ``trials`` Monte Carlo trials per position.  Duplicates are
    dropped, order is kept (it is the order of the table).

    Attributes
    ----------
    drafts : tuple of str or None
        Draft specifications (``"exit:L"``, ``"ngram:K"``); None: every draft
        of the trace.
    temperatures : tuple of float
        Each >= 0, applied to both models' logits.
    ns : tuple of int
        Numbers of drafts, each >= 1.
    samplings : tuple of str
        Draft laws, among :data:`spectheory.drafting.SAMPLINGS`.
    verifiers : tuple of str
        Registered names (:data:`spectheory.verifiers.REGISTRY`) or
        ``"package.module:function"`` specs (imported by every process that runs tasks);
        default every built-in verifier with a numba kernel
        (:data:`spectheory.sim.replay.REPLAY_VERIFIERS`).  Others run in Python,
        slower.  A user verifier given by name must be registered
        (:func:`spectheory.register_verifier`) in every process that runs tasks.
    trials : int
        Monte Carlo trials per position, configuration and verifier.
    """

    drafts: tuple[str, ...] | None = None
    temperatures: tuple[float, ...] = (1.0,)
    ns: tuple[int, ...] = (1, 2, 4)
    samplings: tuple[str, ...] = SAMPLINGS
    verifiers: tuple[str, ...] = REPLAY_VERIFIERS
    trials: int = 200

    def __post_init__(self):
        from ..lm.drafts import parse_draft

        if self.drafts is not None:
            drafts = _tuple(self.drafts, "drafts")
            for d in drafts:
                parse_draft(d)
            object.__setattr__(self, "drafts", drafts)
        temps = _tuple(self.temperatures, "temperatures")
        for t in temps:
            if isinstance(t, bool) or not isinstance(t, int | float | np.floating | np.integer):
                raise InvalidParameterError(f"temperatures must be numbers; got {t!r}")
            if not (math.isfinite(t) and t >= 0):
                raise InvalidParameterError(f"temperatures must be finite and >= 0; got {t!r}")
        object.__setattr__(self, "temperatures", tuple(float(t) for t in temps))
        ns = tuple(check_positive_int(n, "ns") for n in _tuple(self.ns, "ns"))
        object.__setattr__(self, "ns", ns)
        samplings = _tuple(self.samplings, "samplings")
        bad = [s for s in samplings if s not in SAMPLINGS]
        if bad:
            raise InvalidParameterError(f"samplings must be among {SAMPLINGS}; got {bad}")
        object.__setattr__(self, "samplings", samplings)
        verifiers = _tuple(self.verifiers, "verifiers")
        bad = [v for v in verifiers
               if not isinstance(v, str) or (v not in REGISTRY and ":" not in v)]
        if bad:
            raise InvalidParameterError(
                f"verifiers must be registered names ({', '.join(REGISTRY)}; add yours with "
                f"spectheory.register_verifier) or 'package.module:function'; got {bad}"
            )
        # an import error now, not in a worker; and names that repeat are refused, as
        # replay refuses them: rows are named (and their streams seeded) by the record's
        # name, so two specs of one name ("a:first_draft", "b:first_draft") shared their
        # streams and every piece held each row once per verifier of that name
        names = [as_verifier(v).name for v in verifiers]
        dup = sorted({x for x in names if names.count(x) > 1})
        if dup:
            raise InvalidParameterError(
                f"verifiers must have distinct names; {dup} repeat (in {list(verifiers)})"
            )
        object.__setattr__(self, "verifiers", verifiers)
        object.__setattr__(self, "trials", check_positive_int(self.trials, "trials"))


# --------------------------------------------------------------------------- tasks


#: The last package digest: (the files' stamps, digest).
_PACKAGE_DIGEST: list = [None, ""]


def _source_stamps() -> tuple:
    """The spectheory source files, sorted, each as (path, size, mtime in ns)."""
    root = Path(__file__).resolve().parents[1]
    return tuple((str(p), st.st_size, st.st_mtime_ns)
                 for p in sorted(root.rglob("*.py")) for st in [p.stat()])  # fmt: skip


#: The sources' stamps when this process imported the sweeps: a worker whose files
#: changed since runs the code it loaded then (:func:`_check_code`).
_IMPORTED_STAMPS = _source_stamps()


def _package_digest() -> str:
    """SHA-256 of every spectheory source file (path and content).

    Memoised by the files' (path, size, mtime) stamps, not once per process: a source
    edited and reloaded in a running session (autoreload, ``importlib.reload``) kept the
    old digest, so the sweep served the pieces of the old code.
    """
    root = Path(__file__).resolve().parents[1]
    stamps = _source_stamps()
    if _PACKAGE_DIGEST[0] != stamps:
        h = hashlib.sha256()
        for path in (Path(s[0]) for s in stamps):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
        _PACKAGE_DIGEST[:] = [stamps, h.hexdigest()]
    return _PACKAGE_DIGEST[1]


def code_fingerprint(verifiers=()) -> str:
    """A digest of the code and state that compute a sweep's rows: part of every piece's key.

    It holds the SHA-256 of the spectheory sources (so another version, or an edited
    kernel, computes its pieces again) and, for each registered verifier name, a digest of
    everything its function's behaviour depends on
    (:class:`spectheory.sim._state_digest.StateDigest`): its compiled code and source file,
    its closure cells, default arguments, the module globals it reads, the functions and
    classes of yours it reaches through them (recursively), a callable object's attributes,
    a :func:`functools.partial`'s arguments (numpy arrays by dtype, shape and bytes).  A
    verifier of your own edited, or built again with other parameters (a factory's
    closure, another default, a changed global constant, another object) and registered
    under the same name therefore gets new pieces; the cached rows of the old one are never
    returned for the new one.  The record's other fields count too: its closed form (the
    ``exact`` column) and uniforms function as code, its declarations (``lossless``, draft
    laws, ``n``) by value.

    A value it reaches that has no deterministic digest (pickle refuses it: a lock, an open
    file, a generator) makes the fingerprint unique to this call: the sweep recomputes its
    pieces, and a warning names the value.  Attributes read through a module of yours
    (``mylab.settings.THRESHOLD``) count as globals do.  Not seen: the attributes of an
    installed package's module (``np.pi``, taken by name), modules imported inside the
    function's body, and the globals of installed packages' functions; clear the cache
    after changing those (the ``cache_dir`` pieces;
    ``spectheory cache clear --kind sweeps`` for the command's default folder).

    Parameters
    ----------
    verifiers : sequence of str
        Registered verifier names (:data:`spectheory.verifiers.REGISTRY`).

    Returns
    -------
    str
        Hex digest.
    """
    digest, opaque = _code_state(verifiers)
    if opaque:
        _log.warning(
            "verifiers %s reach values with no deterministic digest (%s): their sweep "
            "pieces are computed again on every sweep",
            list(verifiers),
            "; ".join(opaque),
        )
    return digest


def _code_state(verifiers) -> tuple[str, list]:
    """``(code_fingerprint(verifiers), the values it could not digest)``, without warning."""
    h = hashlib.sha256(_package_digest().encode())
    state = StateDigest()
    for name in verifiers:
        record = as_verifier(name)
        h.update(name.encode())
        # the rows carry the record's declarations too (the lossless column; the closed
        # form gives `exact`; the laws and n it takes decide which rows exist)
        for field in dataclasses.fields(record):
            value = getattr(record, field.name)
            if callable(value):
                where = f"verifier {name!r}, {field.name}"
                h.update(f"{field.name}:{state.digest(value, where)}".encode())
            else:
                h.update(f"{field.name}={value!r}".encode())
    return h.hexdigest(), state.opaque


#: This process's token: a task run in another process checks its code (:func:`_check_code`).
_PROCESS = secrets.token_hex(8)


def _check_code(task: _Task) -> None:
    """Refuse to compute ``task`` with other code than the code its key was taken from.

    The key holds the fingerprint taken where the sweep started, but a worker process
    runs what it imported: a long-lived worker keeps a verifier module of yours as it
    first imported it, however often the file is edited since (or runs another
    spectheory), and its rows were returned and cached under the new code's key.  Its
    own spectheory likewise: the package's files read the same in both processes after
    an upgrade or an edit, but a worker that imported spectheory before it runs the old
    code, so a worker whose spectheory files changed since its import is refused too
    (a file only touched counts as changed: restarting costs nothing).
    """
    if _source_stamps() != _IMPORTED_STAMPS:
        raise VerifierError(
            f"sweep worker (pid {os.getpid()}) imported spectheory before its files changed "
            "(an upgrade or an edit since): it would run the old code under the new code's "
            "key; restart the workers"
        )
    digest, opaque = _code_state(task.verifiers)
    if not opaque and digest != task.code:  # an opaque value: a fresh key every time
        raise VerifierError(
            f"sweep worker (pid {os.getpid()}) runs other code than the process that started "
            f"the sweep, for verifiers {list(task.verifiers)} (a module of yours imported "
            "before it was edited, or another spectheory): restart the workers"
        )


@dataclass(frozen=True)
class _Task:
    """One (shard, configuration) piece of a sweep."""

    kind: str  # "replay": one (draft, temperature, n, law); "bound": one (draft, temperature)
    folder: str
    shard: int
    shard_sha256: str
    draft: str
    temperature: float
    ns: tuple[int, ...]
    samplings: tuple[str, ...]
    verifiers: tuple[str, ...]
    trials: int
    seed: int
    chunk: int
    code: str  # code_fingerprint of the verifiers, taken where the sweep starts

    def key(self) -> str:
        """Cache key: everything the rows depend on (not the folder, nor the chunk size)."""
        blob = {
            "version": CACHE_VERSION,
            **{k: v for k, v in dataclasses.asdict(self).items() if k not in ("folder", "chunk")},
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:32]

    def cache_file(self, cache_dir) -> Path:
        return Path(cache_dir) / f"{self.kind}-{self.key()}.json"


#: The last shard loaded in this process: (folder, index, sha256) -> Trace.
_SHARD_MEMO: dict = {}


def _load_shard(folder, index, sha256):
    """Shard ``index`` of ``folder``, reusing the last one loaded in this process."""
    from ..lm.shards import ShardedTrace

    key = (folder, index, sha256)
    hit = _SHARD_MEMO.get(key)
    if hit is not None:
        return hit
    _SHARD_MEMO.clear()  # one shard in memory per worker
    sharded = ShardedTrace.open(folder)
    if sharded.shards[index].sha256 != sha256:
        from .._errors import TraceError

        raise TraceError(
            f"shard file {str(Path(folder) / sharded.shards[index].file)!r} changed since the "
            "sweep started (its manifest SHA-256 differs)"
        )
    trace = sharded.load_shard(index)
    _SHARD_MEMO[key] = trace
    return trace


def _replay_rows(task: _Task, trace) -> list[dict]:
    """Rows of one replay task: every applicable verifier, every position of the shard.

    The rows of :func:`spectheory.sim.replay.config_rows`, the code
    :func:`~spectheory.sim.replay.replay` runs on a trace in memory.
    """
    (n,), (sampling,) = task.ns, task.samplings
    records = [as_verifier(v) for v in task.verifiers if _applicable(v, n, sampling)]
    if not records:
        return []
    return config_rows(
        trace, np.arange(trace.num_positions), start=int(trace.metadata["shard"]["start"]),
        draft=task.draft, temperature=task.temperature, n=n, sampling=sampling,
        verifiers=records, trials=task.trials, seed=task.seed, chunk=task.chunk,
        extra={"shard": int(task.shard)},
    )  # fmt: skip


def _bound_rows(task: _Task, trace) -> list[dict]:
    """Rows of one bound task: alpha* for every (n, law), every position of the shard."""
    start = int(trace.metadata["shard"]["start"])
    cases = [(n, s) for n in task.ns for s in task.samplings]
    rows: dict = {c: [] for c in cases}
    N = trace.num_positions
    for c0 in range(0, N, task.chunk):
        loc_all = np.arange(c0, min(N, c0 + task.chunk))
        p_all = process_logits(trace.target_logits[loc_all].astype(np.float64), task.temperature)
        q_all = process_logits(trace.draft_logits(task.draft, loc_all), task.temperature)
        support = np.count_nonzero(q_all, axis=1)
        for n, sampling in cases:
            ok = np.ones(loc_all.size, bool) if sampling == "iid" else support >= n
            if not ok.any():
                continue
            values = np.atleast_1d(solve_bound(p_all[ok], q_all[ok], n, sampling).value)
            for i, value in zip(loc_all[ok], values):
                rows[(n, sampling)].append(
                    {
                        "position": start + int(i),
                        "prompt_id": int(trace.prompt_ids[i]),
                        "step": int(trace.steps[i]),
                        "draft": task.draft,
                        "temperature": float(task.temperature),
                        "n": int(n),
                        "sampling": sampling,
                        "bound": float(value),
                        "shard": int(task.shard),
                    }
                )
    return [r for c in cases for r in rows[c]]


def _compute_piece(task: _Task) -> list[dict]:
    """Load the task's shard and compute its rows (the unit that is retried and cached)."""
    trace = _load_shard(task.folder, task.shard, task.shard_sha256)
    if task.kind == "bound":
        return _bound_rows(task, trace)
    return _replay_rows(task, trace)


# --------------------------------------------------------------------------- the cache


def _columns(kind):
    return BOUND_COLUMNS if kind == "bound" else SWEEP_COLUMNS


def _payload_digest(columns, rows) -> str:
    blob = json.dumps({"columns": list(columns), "rows": rows}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _read_piece(task: _Task, cache_dir, warn: bool = True) -> list[dict] | None:
    """The cached rows of ``task``, or None if absent, unreadable or failing its checksum.

    ``warn``: log a piece that fails its checksum (the scheduler's pass does; the
    worker's second look at a piece the scheduler found bad does not repeat it).
    """
    path = task.cache_file(cache_dir)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        columns, rows = raw["columns"], raw["rows"]
        ok = (
            raw.get("key") == task.key()
            and tuple(columns) == _columns(task.kind)
            and raw.get("sha256") == _payload_digest(columns, rows)
        )
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None
    if not ok:
        if warn:
            _log.warning("cached sweep piece %s fails its checksum; computing it again", path)
        return None
    return [dict(zip(columns, r)) for r in rows]


def _write_piece(task: _Task, cache_dir, rows: list[dict]) -> None:
    """Write ``rows`` to the task's cache file atomically (JSON with its SHA-256)."""
    columns = _columns(task.kind)
    data = [[r[c] for c in columns] for r in rows]
    doc = {
        "format": CACHE_VERSION,
        "key": task.key(),
        "task": {k: v for k, v in dataclasses.asdict(task).items() if k != "folder"},
        "columns": list(columns),
        "rows": data,
        "sha256": _payload_digest(columns, data),
    }
    with (
        _files.atomic_path(task.cache_file(cache_dir)) as tmp,
        open(tmp, "w", encoding="utf-8") as f,
    ):
        json.dump(doc, f)


def _run_task(task: _Task, cache_dir, retries: int, numba_threads=None, origin=None):
    """Run one task on a worker: cached rows if present, else compute (retrying) and cache.

    ``numba_threads``: threads of numba's parallel kernels in this task (numba's
    setting is per calling thread); None leaves it as it is.  ``origin``: the
    :data:`_PROCESS` token of the process that made the task; in another process the
    code is checked against the task's fingerprint first (:func:`_check_code`).
    """
    if cache_dir is not None:
        cached = _read_piece(task, cache_dir, warn=False)
        if cached is not None:
            return cached
    if origin is not None and origin != _PROCESS:
        _check_code(task)
    old = None
    if numba_threads is not None:
        import numba

        old = numba.get_num_threads()
        numba.set_num_threads(max(1, min(numba_threads, numba.config.NUMBA_NUM_THREADS)))
    try:
        rows = _attempts(task, retries)
    finally:
        if old is not None:
            numba.set_num_threads(old)
    if cache_dir is not None:
        _write_piece(task, cache_dir, rows)
    return rows


def _attempts(task: _Task, retries: int) -> list[dict]:
    """``_compute_piece(task)``, run again up to ``retries`` times if it raises."""
    for attempt in range(retries + 1):
        try:
            return _compute_piece(task)
        except Exception as exc:
            if attempt == retries:
                raise
            _log.warning(
                "sweep task (shard %d, %s, T=%s, n=%s, %s) failed (%r); retry %d of %d",
                task.shard, task.draft, task.temperature, task.ns, task.samplings,
                exc, attempt + 1, retries,
            )  # fmt: skip
    raise AssertionError("unreachable")  # pragma: no cover


# --------------------------------------------------------------------------- running


def _dask():
    try:
        import dask
    except ImportError:
        raise MissingDependencyError(
            "sweeps run on Dask: pip install 'spectheory[distributed]' (dask, distributed)"
        ) from None
    return dask


def _distributed():
    try:
        import distributed
    except ImportError:
        raise MissingDependencyError(
            "a local cluster or a scheduler address needs distributed: "
            "pip install 'spectheory[distributed]'"
        ) from None
    return distributed


def _default_numba_threads(scheduler, local_workers):
    """Numba threads per task: the machine's cores shared among the local workers."""
    cores = os.cpu_count() or 1
    if scheduler == "threads":
        return 1
    if scheduler == "local":
        return max(1, cores // local_workers)
    return None  # serial: numba's own setting; a cluster: its workers' environment


def _run_on_dask(tasks, scheduler, cache_dir, retries, local_workers, numba_threads):
    """Results of ``_run_task`` for each task, in order, on the chosen scheduler."""
    dask = _dask()
    if scheduler == "local":
        n = check_positive_int(local_workers, "local_workers")
    if numba_threads is None:
        numba_threads = _default_numba_threads(scheduler, local_workers)
    else:
        numba_threads = check_positive_int(numba_threads, "numba_threads")
    run = dask.delayed(_run_task, pure=False)
    parts = [run(t, cache_dir, retries, numba_threads, _PROCESS) for t in tasks]
    if scheduler is None or scheduler in ("serial", "sync", "threads"):
        try:
            mode = "threads" if scheduler == "threads" else "sync"
            return list(dask.compute(*parts, scheduler=mode))
        finally:
            _SHARD_MEMO.clear()  # in-process: hold no shard after the sweep
    distributed = _distributed()
    if isinstance(scheduler, distributed.Client):
        return scheduler.gather(scheduler.compute(parts))
    if scheduler == "local":
        with local_cluster(n) as cluster, distributed.Client(cluster) as client:
            return client.gather(client.compute(parts))
    if isinstance(scheduler, str) and scheduler:
        with distributed.Client(scheduler) as client:
            return client.gather(client.compute(parts))
    raise InvalidParameterError(
        "scheduler must be None, 'serial', 'threads', 'local', a scheduler address "
        f"('tcp://host:8786') or a distributed.Client; got {scheduler!r}"
    )


def local_cluster(workers: int = 2, **kwargs):
    """A :class:`distributed.LocalCluster` set up for sweeps (what ``scheduler="local"`` uses).

    ``workers`` processes of one thread each, the dashboard on a free port, and
    glibc's default allocator behaviour in the workers: distributed sets
    ``MALLOC_TRIM_THRESHOLD_=65536`` in its workers' environment, which turns off
    glibc's adaptive mmap threshold, so that every float64 array of a chunk
    (megabytes at a full vocabulary) is a fresh ``mmap`` with page faults on
    first touch; that made the numpy work of a task 2.3 times slower in a
    measurement at V = 49,152.  Use it as a context manager.

    Parameters
    ----------
    workers : int
    **kwargs
        Passed on to :class:`distributed.LocalCluster` (overriding the above).

    Returns
    -------
    distributed.LocalCluster
    """
    dask = _dask()
    distributed = _distributed()
    workers = check_positive_int(workers, "workers")
    options = {
        "n_workers": workers,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": ":0",
        **kwargs,
    }
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        return distributed.LocalCluster(**options)


def _open(shards):
    from ..lm.shards import ShardedTrace

    if isinstance(shards, ShardedTrace):
        return shards
    if isinstance(shards, str | os.PathLike):
        return ShardedTrace.open(shards)
    raise InvalidParameterError(
        f"shards must be a ShardedTrace or the path of its folder; got {type(shards).__name__}"
    )


def _check_drafts(sharded, grid):
    drafts = grid.drafts or sharded.drafts
    bad = [d for d in drafts if d not in sharded.drafts]
    if bad:
        raise InvalidParameterError(
            f"grid drafts {bad} are not in the sharded trace; it has {list(sharded.drafts)}"
        )
    return drafts


def _execute(sharded, tasks, scheduler, cache_dir, retries, local_workers, threads, progress, what):
    """Rows of every task (a list per task, in task order): cached pieces, the rest on Dask."""
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise InvalidParameterError(f"retries must be an integer >= 0; got {retries!r}")
    if cache_dir is not None:
        # absolute, as the shard folder is: a worker resolves a relative path in its own
        # working folder, so its pieces went where this process never looks for them
        cache_dir = Path(cache_dir).resolve()
    results: list = [None] * len(tasks)
    todo = []
    for k, t in enumerate(tasks):
        cached = _read_piece(t, cache_dir) if cache_dir is not None else None
        if cached is None:
            todo.append(k)
        else:
            results[k] = cached
    if progress:
        print(
            f"{what}: {len(tasks)} tasks over {len(sharded)} shards, "
            f"{len(tasks) - len(todo)} cached, {len(todo)} to run on {scheduler or 'serial'}",
            file=sys.stderr,
        )
    if todo:
        # Shard-major order, so that a worker running tasks in order reuses its shard.
        todo.sort(key=lambda k: (tasks[k].shard, k))
        t0 = time.perf_counter()
        out = _run_on_dask(
            [tasks[k] for k in todo], scheduler, cache_dir, retries, local_workers, threads
        )
        for k, rows in zip(todo, out):
            results[k] = rows
        if progress:
            print(f"{what}: {len(todo)} tasks in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return results


def _assemble(results, group_size, rank):
    """Rows of consecutive groups of tasks (one configuration over all shards), each group
    sorted by ``(rank(row), position)``: an order that does not depend on the sharding."""
    table = []
    for g in range(0, len(results), group_size):
        rows = [r for piece in results[g : g + group_size] for r in piece]
        rows.sort(key=lambda r: (rank(r), r["position"]))
        table.extend(rows)
    return table


def _check_seed(seed):
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InvalidParameterError(f"seed must be an integer >= 0; got {seed!r}")
    return int(seed)


def sweep(
    shards,
    grid: SweepGrid | None = None,
    *,
    scheduler=None,
    cache_dir=None,
    seed: int = 0,
    retries: int = 2,
    chunk: int = 64,
    local_workers: int = 2,
    numba_threads: int | None = None,
    progress: bool = False,
) -> list[dict]:
    """Replay every shard through every configuration of ``grid``; one tidy table.

    Parameters
    ----------
    shards : ShardedTrace or str or path-like
        A sharded trace (:mod:`spectheory.lm.shards`) or its folder.  Workers
        open the folder by its path, so it must be visible to them.
    grid : SweepGrid, optional
        Default ``SweepGrid()``.
    scheduler : None, str or distributed.Client
        ``None``/``"serial"`` (in-process, synchronous), ``"threads"``,
        ``"local"`` (a LocalCluster of ``local_workers`` processes), a
        scheduler address, or a connected client (see the module docstring).
    cache_dir : str or path-like, optional
        Folder of finished pieces; a sweep with the same folder resumes.
    seed : int
        Base of every random stream (>= 0).
    retries : int
        Times a failing task is run again before the sweep fails.
    chunk : int
        Positions processed together in a task; its working set is about
        ``10 x chunk x V`` float64 values (216 to 243 MB measured at
        ``chunk = 64``, V = 49,152).  Does not change the result.
    local_workers : int
        Workers of the ``"local"`` cluster.
    numba_threads : int, optional
        Threads of numba's parallel kernels within each task.  Default: numba's
        setting for the serial scheduler, 1 for ``"threads"``, the cores
        divided among the workers for ``"local"``, and the workers' own
        setting (``NUMBA_NUM_THREADS``) on a cluster.  Does not change the result.
    progress : bool
        Task counts and timing on stderr.

    Returns
    -------
    list of dict
        One dict per (position, configuration, verifier) with the keys
        :data:`SWEEP_COLUMNS`, ordered by configuration (grid order: draft,
        temperature, n, law), then verifier (grid order), then position.  Positions
        whose draft has fewer than ``n`` tokens of positive probability are
        left out for the laws that need them.

    Raises
    ------
    InvalidParameterError
        Bad grid, seed, retries, chunk or scheduler, or a grid draft that the
        trace does not have.
    TraceError
        A shard or the manifest is corrupted (after the retries).
    MissingDependencyError
        dask (or, for a cluster, distributed) is not installed.
    """
    grid = grid or SweepGrid()
    if not isinstance(grid, SweepGrid):
        raise InvalidParameterError(f"grid must be a SweepGrid; got {type(grid).__name__}")
    sharded = _open(shards)
    seed = _check_seed(seed)
    chunk = check_positive_int(chunk, "chunk")
    drafts = _check_drafts(sharded, grid)
    check_grid_has_work(grid.verifiers, grid.ns, grid.samplings)
    folder = str(Path(sharded.folder).resolve())
    tasks = []
    code = {}

    # A piece's verifiers in a fixed order (part of its key): the grid's order only orders
    # the table (_assemble sorts by it), so reordering the grid recomputed every piece.
    def applicable(n, sampling):
        return tuple(sorted(v for v in grid.verifiers if _applicable(v, n, sampling)))

    for n in grid.ns:
        for sampling in grid.samplings:
            names = applicable(n, sampling)
            if names not in code:
                code[names] = code_fingerprint(names)
    for draft in drafts:
        for temp in grid.temperatures:
            for n in grid.ns:
                for sampling in grid.samplings:
                    names = applicable(n, sampling)
                    if not names:
                        continue
                    for s in sharded.shards:
                        tasks.append(
                            _Task("replay", folder, s.index, s.sha256, draft, temp, (n,),
                                  (sampling,), names, grid.trials, seed, chunk, code[names])
                        )  # fmt: skip
    results = _execute(
        sharded, tasks, scheduler, cache_dir, retries, local_workers, numba_threads, progress,
        "sweep",
    )  # fmt: skip
    # rows carry the record's name: a spec naming a Verifier record keeps the record's
    # name (as in replay), so rank by the resolved name, not by the spec
    rank = {as_verifier(v).name: k for k, v in enumerate(grid.verifiers)}
    return _assemble(results, len(sharded), lambda r: rank[r["verifier"]])


def sweep_bounds(
    shards,
    grid: SweepGrid | None = None,
    *,
    scheduler=None,
    cache_dir=None,
    retries: int = 2,
    chunk: int = 64,
    local_workers: int = 2,
    numba_threads: int | None = None,
    progress: bool = False,
) -> list[dict]:
    r"""The optimal acceptance :math:`\alpha^*` of every position for each grid point.

    For every draft, temperature, ``n`` and draft law of ``grid`` (its
    verifiers and trials are not used), every position's
    :func:`spectheory.bound`, computed on the shards as by :func:`sweep`: one
    task per (shard, draft, temperature), cached and retried the same way.
    Deterministic (no randomness).

    Parameters
    ----------
    shards, grid, scheduler, cache_dir, retries, local_workers, numba_threads, progress
        As for :func:`sweep`.
    chunk : int
        Positions processed together in a task (working set as for :func:`sweep`).

    Returns
    -------
    list of dict
        Keys :data:`BOUND_COLUMNS`, ordered by draft, temperature, n, law,
        position.
    """
    grid = grid or SweepGrid()
    if not isinstance(grid, SweepGrid):
        raise InvalidParameterError(f"grid must be a SweepGrid; got {type(grid).__name__}")
    sharded = _open(shards)
    chunk = check_positive_int(chunk, "chunk")
    drafts = _check_drafts(sharded, grid)
    folder = str(Path(sharded.folder).resolve())
    tasks = [
        _Task("bound", folder, s.index, s.sha256, draft, temp, grid.ns, grid.samplings, (), 0, 0,
              chunk, code_fingerprint())
        for draft in drafts
        for temp in grid.temperatures
        for s in sharded.shards
    ]  # fmt: skip
    results = _execute(
        sharded, tasks, scheduler, cache_dir, retries, local_workers, numba_threads, progress,
        "sweep_bounds",
    )  # fmt: skip
    rank = {(n, s): k for k, (n, s) in enumerate((n, s) for n in grid.ns for s in grid.samplings)}
    return _assemble(results, len(sharded), lambda r: rank[(r["n"], r["sampling"])])


def write_table(table, path, columns=SWEEP_COLUMNS) -> Path:
    """Write a sweep table atomically as CSV.

    Parameters
    ----------
    table : list of dict
    path : str or path-like
    columns : sequence of str
        :data:`SWEEP_COLUMNS` (default) or :data:`BOUND_COLUMNS`.
    """
    return _files.write_csv(table, path, columns)
