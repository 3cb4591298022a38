"""Tests of spectheory._threads: when batched kernels split their rows across threads."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import spectheory as stt
from spectheory import _threads


def test_small_batches_and_single_rows_run_serially(monkeypatch):
    monkeypatch.setattr(_threads, "load_average", lambda: 0.0)
    big = _threads.PARALLEL_MIN_WORK
    assert not _threads.run_parallel(big - 1, 16)
    assert not _threads.run_parallel(10 * big, 1)
    assert _threads.run_parallel(big, 2) == (numba.get_num_threads() > 1)


def test_a_busy_machine_runs_serially(monkeypatch):
    threads = numba.get_num_threads()
    big = _threads.PARALLEL_MIN_WORK
    monkeypatch.setattr(_threads, "load_average", lambda: threads - 0.5)
    assert not _threads.run_parallel(big, 16)
    monkeypatch.setattr(_threads, "load_average", lambda: threads - 0.6)
    assert _threads.run_parallel(big, 16) == (threads > 1)


def test_one_numba_thread_runs_serially(monkeypatch):
    monkeypatch.setattr(_threads, "load_average", lambda: 0.0)
    monkeypatch.setattr(_threads.numba, "get_num_threads", lambda: 1)
    assert not _threads.run_parallel(10 * _threads.PARALLEL_MIN_WORK, 16)


def test_load_average_without_the_platform_call(monkeypatch):
    def missing():
        raise OSError("no load average here")

    monkeypatch.setattr(_threads.os, "getloadavg", missing)
    assert _threads.load_average() == 0.0
    assert np.isfinite(_threads.load_average())


@pytest.mark.parametrize("sampling", ["iid", "without_replacement"])
def test_bound_is_the_same_either_way(monkeypatch, sampling):
    """The choice moves only time: bound's values and certificates are bit-identical."""
    rng = np.random.default_rng(5)
    B, V = 4, _threads.PARALLEL_MIN_WORK // 4 + 1
    p = stt.softmax(rng.standard_normal((B, V)) * 3)
    q = stt.softmax(rng.standard_normal((B, V)) * 3)
    out = []
    for parallel in (False, True):
        load = 0.0 if parallel else 1e9
        monkeypatch.setattr(_threads, "load_average", lambda load=load: load)
        res = stt.solve_bound(p, q, 4, sampling)
        out.append((res.value, res.certificate))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_torch_threads_follow_the_idle_cores(monkeypatch):
    monkeypatch.delenv(_threads.TORCH_THREADS_ENV, raising=False)
    monkeypatch.setattr(_threads, "own_cpu_rate", lambda: 0.0)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 4)
    monkeypatch.setitem(_threads._state, "end", None)
    for load, want in ((0.0, 4), (1.2, 3), (2.6, 1), (9.0, 1)):
        monkeypatch.setattr(_threads, "load_average", lambda load=load: load)
        assert _threads.torch_threads(8) == want
    monkeypatch.setattr(_threads, "load_average", lambda: 0.0)
    assert _threads.torch_threads(2) == 2  # never above the caller's own setting
    monkeypatch.setenv(_threads.TORCH_THREADS_ENV, "3")
    assert _threads.torch_threads(1) == 3
    monkeypatch.setenv(_threads.TORCH_THREADS_ENV, "0")
    with pytest.raises(stt.InvalidParameterError, match="SPECTHEORY_TORCH_THREADS"):
        _threads.torch_threads(2)


def test_a_model_loop_discounts_its_own_recent_load(monkeypatch):
    monkeypatch.delenv(_threads.TORCH_THREADS_ENV, raising=False)
    monkeypatch.setattr(_threads, "own_cpu_rate", lambda: 0.0)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(_threads, "load_average", lambda: 2.0)  # our own 2 threads, just now
    monkeypatch.setitem(_threads._state, "end", _threads.time.monotonic())
    monkeypatch.setitem(_threads._state, "threads", 2)
    assert _threads.torch_threads(2) == 2
    monkeypatch.setitem(_threads._state, "end", _threads.time.monotonic() - 600)  # long ago
    assert _threads.torch_threads(2) == 1


def test_with_torch_threads_sets_and_restores(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv(_threads.TORCH_THREADS_ENV, "1")
    before = torch.get_num_threads()
    seen = []

    @_threads.with_torch_threads
    def inner():
        seen.append(("inner", torch.get_num_threads()))

    @_threads.with_torch_threads
    def outer():
        seen.append(("outer", torch.get_num_threads()))
        monkeypatch.setenv(_threads.TORCH_THREADS_ENV, "2")  # nested: the outer choice stays
        inner()

    outer()
    assert seen == [("outer", 1), ("inner", 1)]
    assert torch.get_num_threads() == before


def test_this_process_s_own_work_is_not_another_s(monkeypatch):
    # A test session busy on one core makes the load 1 on its own: the model
    # loops of its tests must still get both cores of a quiet 2-core machine.
    monkeypatch.delenv(_threads.TORCH_THREADS_ENV, raising=False)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    monkeypatch.setitem(_threads._state, "end", None)
    monkeypatch.setattr(_threads, "load_average", lambda: 1.1)
    monkeypatch.setattr(_threads, "own_cpu_rate", lambda: 1.0)
    assert _threads.torch_threads(2) == 2
    monkeypatch.setattr(_threads, "own_cpu_rate", lambda: 0.0)  # the load is someone else's
    assert _threads.torch_threads(2) == 1
    assert _threads.own_cpu_rate() >= 0.0
