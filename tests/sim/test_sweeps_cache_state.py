"""The sweep cache's key covers the state a verifier's behaviour depends on, not only its code.

The key held each verifier's compiled code and source file: a verifier built again with
another parameter and registered under the same name (a factory's closure, a default
argument, a module global changed at runtime, a helper's global, a callable object's
attribute, a partial's argument) has the same code and file, and got the old verifier's
cached rows (acceptance 0.0.. of SD where the new one accepts every draft), silently.
Each case below builds SD (``accept_all=False``), then the lossy always-accept verifier:
the second gets new pieces, equal to an uncached sweep, and a rerun with the same state
(built again: a new object) reads the cache.
"""

from __future__ import annotations

import functools
import json
import threading

import numpy as np
import pytest

import spectheory as stt
from spectheory.lm.shards import shard_trace
from spectheory.sim import sweeps as sweep_module
from spectheory.sim.sweeps import SweepGrid, sweep
from tests.lm.test_shards import synthetic_trace

NAME = "mine_state"
SEED = 7


def grid():
    """One configuration, one piece per sweep (the verifier must be registered first)."""
    return SweepGrid(drafts=("exit:2",), temperatures=(1.0,), ns=(1,), samplings=("iid",),
                     verifiers=(NAME,), trials=50)  # fmt: skip


def canonical(table):
    return json.dumps(table)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return shard_trace(synthetic_trace(vocab=300), tmp_path_factory.mktemp("shards"), 10**6)


@pytest.fixture
def counted(monkeypatch):
    """Count the sweep tasks computed (not read from the cache)."""

    class Counter:
        calls = 0

    real = sweep_module._compute_piece

    def wrapped(task):
        Counter.calls += 1
        return real(task)

    monkeypatch.setattr(sweep_module, "_compute_piece", wrapped)
    return Counter


@pytest.fixture
def registered():
    yield lambda fn: stt.register_verifier(stt.verifier(fn, name=NAME, samplings=("iid",)),
                                           replace=True)  # fmt: skip
    if NAME in stt.REGISTRY:
        stt.unregister_verifier(NAME)


def _sd(p, q, drafts, coins, accept_all):
    """Speculative decoding, or (``accept_all``) the first draft always: lossy."""
    x = drafts[0]
    if accept_all or coins.bernoulli(min(1, p[x] / q[x])):
        return x
    rest = np.maximum(p - q, 0 * p[0])
    return coins.categorical(rest / rest.sum())


def _closure(accept_all, monkeypatch):
    def fn(p, q, drafts, coins, *, sampling):
        return _sd(p, q, drafts, coins, accept_all)

    return fn


def _default(accept_all, monkeypatch):
    def fn(p, q, drafts, coins, flag=accept_all, *, sampling):
        return _sd(p, q, drafts, coins, flag)

    return fn


def _kwdefault(accept_all, monkeypatch):
    def fn(p, q, drafts, coins, *, sampling, flag=accept_all):
        return _sd(p, q, drafts, coins, flag)

    return fn


_ACCEPT_ALL = False


def _reads_global(p, q, drafts, coins, *, sampling):
    return _sd(p, q, drafts, coins, _ACCEPT_ALL)


def _global(accept_all, monkeypatch):
    monkeypatch.setitem(globals(), "_ACCEPT_ALL", accept_all)
    return _reads_global


_HELPER_ACCEPT_ALL = False


def _helper(p, q, drafts, coins):
    return _sd(p, q, drafts, coins, _HELPER_ACCEPT_ALL)


def _calls_helper(p, q, drafts, coins, *, sampling):
    return _helper(p, q, drafts, coins)


def _helper_global(accept_all, monkeypatch):
    """The global read by a function the verifier calls (walked recursively)."""
    monkeypatch.setitem(globals(), "_HELPER_ACCEPT_ALL", accept_all)
    return _calls_helper


class _Verifier:
    def __init__(self, accept_all):
        self.accept_all = accept_all

    def __call__(self, p, q, drafts, coins, *, sampling):
        return _sd(p, q, drafts, coins, self.accept_all)


def _callable_object(accept_all, monkeypatch):
    return _Verifier(accept_all)


def _masked(p, q, drafts, coins, *, sampling, mask):
    return _sd(p, q, drafts, coins, bool(mask[drafts[0]]))


def _partial(accept_all, monkeypatch):
    # More than 1000 entries: numpy's repr shows only the first and last three, so both
    # masks print alike (tokens 0, 1, 2 keep SD)
    mask = np.zeros(2048, dtype=bool)
    mask[3:-3] = accept_all
    return functools.partial(_masked, mask=mask)


@pytest.mark.parametrize(
    "build",
    [_closure, _default, _kwdefault, _global, _helper_global, _callable_object, _partial],
)
def test_a_verifier_with_other_state_gets_new_pieces(
    build, shards, tmp_path, counted, registered, monkeypatch
):
    tables = []
    for accept_all in (False, True):
        registered(build(accept_all, monkeypatch))
        counted.calls = 0
        got = sweep(shards, grid(), seed=SEED, cache_dir=tmp_path)
        assert counted.calls == 1  # computed: not the other state's piece
        assert canonical(got) == canonical(sweep(shards, grid(), seed=SEED))
        tables.append(got)
    assert np.mean([r["mc"] for r in tables[0]]) < 0.9 < np.mean([r["mc"] for r in tables[1]])
    # the same state, built again: read from the cache
    registered(build(True, monkeypatch))
    counted.calls = 0
    assert canonical(sweep(shards, grid(), seed=SEED, cache_dir=tmp_path)) == canonical(tables[1])
    assert counted.calls == 0
    assert len(list(tmp_path.glob("replay-*.json"))) == 2


_LOCK = threading.Lock()


def _reads_lock(p, q, drafts, coins, *, sampling):
    with _LOCK:
        return _sd(p, q, drafts, coins, False)


def test_a_value_without_a_digest_makes_every_sweep_recompute(
    shards, tmp_path, counted, registered, caplog
):
    """A lock has no deterministic digest (pickle refuses it): the key must never match
    an earlier one, so each sweep computes its piece, and a warning says why."""
    registered(_reads_lock)
    for _ in range(2):
        counted.calls = 0
        with caplog.at_level("WARNING"):
            sweep(shards, grid(), seed=SEED, cache_dir=tmp_path)
        assert counted.calls == 1
    assert any("_LOCK" in r.getMessage() and "no deterministic digest" in r.getMessage()
               for r in caplog.records)  # fmt: skip


def test_package_digest_follows_a_source_edited_in_a_running_process(tmp_path):
    """The digest was taken once per process: a spectheory source edited and reloaded
    (autoreload, importlib.reload) kept the old key, and the sweep served the old code's
    pieces.  Run on a copy of the package, in a child process."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    shutil.copytree(Path(stt.__file__).parent, tmp_path / "spectheory",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    child = (
        "import spectheory.sim.sweeps as s, spectheory.verifiers.single as m\n"
        "from pathlib import Path\n"
        f"assert Path(m.__file__).is_relative_to({str(tmp_path)!r}), m.__file__\n"
        "a = s._package_digest()\n"
        "f = Path(m.__file__); f.write_text(f.read_text() + '\\nEDITED = 1\\n')\n"
        "print(a != s._package_digest())\n"
    )
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                         cwd=tmp_path,  # not the checkout's folder: -c puts the cwd first
                         env={**os.environ, "PYTHONPATH": str(tmp_path)},
                         check=True, timeout=120)  # fmt: skip
    assert out.stdout.split()[-1] == "True", out.stderr
