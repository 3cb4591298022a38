"""Sweeps on Dask over sharded traces: one table, identical across schedulers and splits.

Synthetic traces only (random logits at V = 300, 20 positions over 4 prompts;
tests/lm/test_shards.py builds them).  The distributed tests use a LocalCluster
with ``processes=False`` (two worker threads in this process): it starts in
well under a second instead of spawning interpreters that import numpy, numba
and spectheory, and the monkeypatched task functions (counting, failing) reach
its workers.  One test runs ``scheduler="local"``, the real multi-process
cluster, so that the pickling of tasks to other processes is exercised too.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import numpy as np
import pytest
from distributed import Client, LocalCluster

import spectheory as stt
from spectheory._errors import InvalidParameterError
from spectheory.lm import Trace
from spectheory.lm.shards import shard_trace
from spectheory.sim import sweeps as sweep_module
from spectheory.sim.replay import replay
from spectheory.sim.sweeps import (
    BOUND_COLUMNS,
    SWEEP_COLUMNS,
    SweepGrid,
    sweep,
    sweep_bounds,
)
from tests.lm.test_shards import synthetic_trace

V = 300
# Both drafts (an early exit and a 2-gram), two temperatures, n = 1 and 3, every law and
# every kernel verifier: 24 configurations.
GRID = SweepGrid(temperatures=(0.7, 1.0), ns=(1, 3), trials=100)
SEED = 7


def canonical(table, drop_shard=True):
    """The table as JSON text (exact float reprs, NaN included); without ``shard`` by default."""
    return json.dumps([{k: v for k, v in r.items() if not (drop_shard and k == "shard")}
                       for r in table])  # fmt: skip


@pytest.fixture(scope="module")
def trace():
    return synthetic_trace(vocab=V)


@pytest.fixture(scope="module")
def splits(trace, tmp_path_factory):
    """The same trace split three ways: 4 shards (one prompt each), 2 shards, 1 shard."""
    root = tmp_path_factory.mktemp("splits")
    out = {k: shard_trace(trace, root / str(k), limit)
           for k, limit in ((4, 12_000), (2, 20_000), (1, 10**6))}  # fmt: skip
    assert {k: len(s) for k, s in out.items()} == {4: 4, 2: 2, 1: 1}
    return out


@pytest.fixture(scope="module")
def reference(splits):
    return sweep(splits[4], GRID, seed=SEED)


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as c:
        yield c


@pytest.fixture
def client(cluster):
    with Client(cluster) as c:
        yield c


@pytest.fixture
def counted(monkeypatch):
    """Count the executions of sweep tasks (``_compute_piece``); optionally make some fail."""

    class Counter:
        calls = 0
        fail: ClassVar[set] = set()  # call numbers (1-based) that raise

    real = sweep_module._compute_piece

    def wrapped(task):
        Counter.calls += 1
        if Counter.calls in Counter.fail:
            raise RuntimeError(f"worker lost at call {Counter.calls}")
        return real(task)

    monkeypatch.setattr(sweep_module, "_compute_piece", wrapped)
    return Counter


def num_tasks(grid, sharded):
    from spectheory.sim.replay import _applicable

    drafts = grid.drafts or sharded.drafts
    configs = sum(
        any(_applicable(v, n, s) for v in grid.verifiers) for n in grid.ns for s in grid.samplings
    )
    return len(drafts) * len(grid.temperatures) * configs * len(sharded)


def test_table_matches_replay_and_the_closed_forms(trace, reference):
    assert all(tuple(r) == SWEEP_COLUMNS for r in reference)
    assert {r["shard"] for r in reference} == {0, 1, 2, 3}
    table = replay(trace, temperatures=GRID.temperatures, ns=GRID.ns, trials=GRID.trials)
    assert len(reference) == len(table)

    def key(r):
        return r["draft"], r["temperature"], r["n"], r["sampling"], r["verifier"], r["position"]

    by_key = {key(r): r for r in table}
    for r in reference:
        other = by_key[key(r)]
        assert (r["prompt_id"], r["step"], r["lossless"]) == (
            other["prompt_id"],
            other["step"],
            other["lossless"],
        )
        # The same row-wise float64 computation on other batches of rows: equal to
        # rounding (observed equal bit for bit).
        assert r["bound"] == pytest.approx(other["bound"], abs=1e-12)
        if not math.isnan(other["exact"]):
            assert r["exact"] == pytest.approx(other["exact"], abs=1e-12)
            if r["lossless"]:
                assert r["exact"] <= r["bound"] + 1e-12
    # Monte Carlo against the closed forms: pooled z-test per configuration and
    # verifier, each at a false-alarm rate of 1e-6 (|z| > 4.89).
    groups: dict = {}
    for r in reference:
        if not math.isnan(r["exact"]):
            groups.setdefault(key(r)[:5], []).append(r)
    assert len(groups) >= 40
    for rows in groups.values():
        k = sum(r["mc"] * r["trials"] for r in rows)
        mean = sum(r["exact"] * r["trials"] for r in rows)
        var = sum(r["exact"] * (1 - r["exact"]) * r["trials"] for r in rows)
        if var > 0:
            assert abs(k - mean) / math.sqrt(var) < 4.89
        else:
            assert k == pytest.approx(mean)
    # PIT of the lossless verifiers' outputs: U(0, 1) per trial; pooled mean, |z| < 4.89.
    pits = [r["pit_mean"] for r in reference if r["lossless"]]
    z = (np.mean(pits) - 0.5) / math.sqrt(1 / (12 * GRID.trials * len(pits)))
    assert abs(z) < 4.89


def test_identical_across_splits_chunks_and_thread_pools(splits, reference):
    expected = canonical(reference)
    assert canonical(sweep(splits[1], GRID, seed=SEED)) == expected
    assert canonical(sweep(splits[2], GRID, seed=SEED, chunk=3)) == expected
    assert canonical(sweep(splits[4], GRID, seed=SEED, scheduler="threads")) == expected
    # the shard column follows the split
    assert [r["shard"] for r in sweep(splits[1], GRID, seed=SEED)] == [0] * len(reference)


def test_identical_on_a_distributed_cluster(splits, reference, client, cluster):
    expected = canonical(reference)
    assert canonical(sweep(splits[4], GRID, seed=SEED, scheduler=client)) == expected
    got = sweep(splits[2], GRID, seed=SEED, scheduler=cluster.scheduler_address)
    assert canonical(got) == expected


def test_identical_on_a_local_cluster_of_processes(splits, reference):
    got = sweep(str(splits[2].folder), GRID, seed=SEED, scheduler="local")
    assert canonical(got) == canonical(reference)


def test_streams_depend_on_the_seed_and_the_configuration_not_the_grid(splits, reference):
    other = sweep(splits[4], GRID, seed=SEED + 1)
    assert [r["bound"] for r in other] == [r["bound"] for r in reference]
    assert [r["mc"] for r in other] != [r["mc"] for r in reference]
    # A smaller grid gives exactly the rows of the same configurations in the full one.
    small = SweepGrid(drafts=("ngram:2",), temperatures=(1.0,), ns=(3,),
                      samplings=("without_replacement",), verifiers=("kseq", "rrs_wor"),
                      trials=100)  # fmt: skip
    got = sweep(splits[1], small, seed=SEED)
    subset = [r for r in reference
              if (r["draft"], r["temperature"], r["n"], r["sampling"]) ==
              ("ngram:2", 1.0, 3, "without_replacement")
              and r["verifier"] in ("kseq", "rrs_wor")]  # fmt: skip
    assert len(got) >= 10 and canonical(got) == canonical(subset)


def test_resume_from_a_partial_cache_computes_only_the_missing_pieces(
    splits, reference, tmp_path, counted, caplog
):
    n = num_tasks(GRID, splits[4])
    first = sweep(splits[4], GRID, seed=SEED, cache_dir=tmp_path)
    assert counted.calls == n and canonical(first, False) == canonical(reference, False)
    files = sorted(tmp_path.glob("replay-*.json"))
    assert len(files) == n
    for f in files[:3]:
        f.unlink()
    files[3].write_text(files[3].read_text()[:-20])  # truncated: recomputed
    data = json.loads(files[4].read_text())
    data["rows"][0][9] = 0.5  # a bound changed: fails the checksum, recomputed
    files[4].write_text(json.dumps(data))
    counted.calls = 0
    with caplog.at_level("WARNING"):
        again = sweep(splits[4], GRID, seed=SEED, cache_dir=tmp_path)
    assert counted.calls == 5
    # the bad piece is named once (the worker's second look logged it again)
    assert sum("fails its checksum" in r.getMessage() for r in caplog.records) == 1
    assert canonical(again, False) == canonical(reference, False)
    counted.calls = 0
    assert canonical(sweep(splits[4], GRID, seed=SEED, cache_dir=tmp_path), False) == canonical(
        reference, False
    )
    assert counted.calls == 0
    # another seed is another piece
    sweep(splits[4], SweepGrid(ns=(1,), samplings=("iid",), verifiers=("sd",), trials=100),
          seed=SEED + 1, cache_dir=tmp_path)  # fmt: skip
    assert counted.calls == 2 * 4  # two drafts x one temperature x four shards
    assert len(list(tmp_path.glob("replay-*.json"))) == n + 8


def _first_draft(p, q, drafts, coins, *, sampling):
    return drafts[0]  # accepts every draft: lossy


def _speculative(p, q, drafts, coins, *, sampling):
    x = drafts[0]
    if coins.bernoulli(min(1, p[x] / q[x])):
        return x
    rest = np.maximum(p - q, 0 * p[0])
    return coins.categorical(rest / rest.sum())


def test_a_verifier_edited_under_the_same_name_is_computed_again(splits, tmp_path, counted):
    """The cache was keyed by the verifiers' names: a verifier of one's own, fixed and
    registered again under its name, got the rows of its buggy version back (acceptance 1
    instead of SD's), silently.  The key now holds the code's fingerprint: the fixed code
    computes its pieces, equal to an uncached sweep, and a rerun of unchanged code reads
    them."""
    tables = {}
    try:
        for fn in (_first_draft, _speculative):
            stt.register_verifier(stt.verifier(fn, name="mine_cached", samplings=("iid",)),
                                  replace=True)  # fmt: skip
            grid = SweepGrid(drafts=("exit:2",), temperatures=(1.0,), ns=(1,),
                             samplings=("iid",), verifiers=("mine_cached",), trials=50)
            counted.calls = 0
            tables[fn] = sweep(splits[4], grid, seed=SEED, cache_dir=tmp_path)
            assert counted.calls == 4  # one piece per shard, computed
            assert canonical(tables[fn]) == canonical(sweep(splits[4], grid, seed=SEED))
        counted.calls = 0
        again = sweep(splits[4], grid, seed=SEED, cache_dir=tmp_path)
        assert counted.calls == 0 and canonical(again) == canonical(tables[_speculative])
        # the same code declared lossy: the rows' lossless column changes, so new pieces
        stt.register_verifier(stt.verifier(_speculative, name="mine_cached", samplings=("iid",),
                                           lossless=False), replace=True)  # fmt: skip
        declared = sweep(splits[4], grid, seed=SEED, cache_dir=tmp_path)
        assert counted.calls == 4 and not any(r["lossless"] for r in declared)
    finally:
        stt.unregister_verifier("mine_cached")
    assert all(r["mc"] == 1.0 for r in tables[_first_draft])
    assert np.mean([r["mc"] for r in tables[_speculative]]) < 0.9
    assert len(list(tmp_path.glob("replay-*.json"))) == 12


def test_an_interrupted_sweep_loses_nothing(splits, reference, tmp_path, counted):
    n = num_tasks(GRID, splits[4])
    counted.fail = {10}
    with pytest.raises(RuntimeError, match="worker lost at call 10"):
        sweep(splits[4], GRID, seed=SEED, cache_dir=tmp_path, retries=0)
    assert len(list(tmp_path.glob("replay-*.json"))) == 9  # the finished pieces
    counted.calls, counted.fail = 0, set()
    got = sweep(splits[4], GRID, seed=SEED, cache_dir=tmp_path)
    assert counted.calls == n - 9
    assert canonical(got, False) == canonical(reference, False)


def test_a_failing_task_is_retried(splits, reference, counted):
    n = num_tasks(GRID, splits[4])
    counted.fail = {3, 20, 21}  # the 3rd task fails once, the 19th twice
    got = sweep(splits[4], GRID, seed=SEED, retries=2)
    assert counted.calls == n + 3
    assert canonical(got, False) == canonical(reference, False)
    counted.calls, counted.fail = 0, {5, 6, 7}  # three failures exhaust two retries
    with pytest.raises(RuntimeError, match="worker lost at call 7"):
        sweep(splits[4], GRID, seed=SEED, retries=2)


def test_a_failing_task_is_retried_on_a_cluster(splits, reference, client, counted):
    n = num_tasks(GRID, splits[4])
    counted.fail = {1}
    got = sweep(splits[4], GRID, seed=SEED, scheduler=client, retries=1)
    assert counted.calls == n + 1
    assert canonical(got, False) == canonical(reference, False)


def test_sweep_bounds(trace, splits):
    grid = SweepGrid(temperatures=(0.0, 1.0), ns=(1, 2, 4))
    table = sweep_bounds(splits[4], grid)
    assert all(tuple(r) == BOUND_COLUMNS for r in table)
    assert canonical(sweep_bounds(splits[1], grid, chunk=5)) == canonical(table)
    for r in table:
        p = stt.process_logits(trace.target_logits[r["position"]].astype(np.float64),
                               r["temperature"])  # fmt: skip
        q = stt.process_logits(trace.draft_logits(r["draft"], [r["position"]])[0],
                               r["temperature"])  # fmt: skip
        assert r["bound"] == pytest.approx(stt.bound(p, q, r["n"], r["sampling"]), abs=1e-12)
    # temperature 0: one-hot drafts have one token, too few for n >= 2 without replacement
    cold = {(r["n"], r["sampling"]) for r in table if r["temperature"] == 0.0}
    assert (2, "without_replacement") not in cold and (4, "greedy") not in cold
    assert (4, "iid") in cold and (1, "greedy") in cold
    per = {(d, t, n, s): 0 for d in ("exit:2", "ngram:2") for t in (0.0, 1.0)
           for n in (1, 2, 4) for s in stt.SAMPLINGS}  # fmt: skip
    for r in table:
        per[(r["draft"], r["temperature"], r["n"], r["sampling"])] += 1
    assert per[("exit:2", 1.0, 4, "greedy")] == 20 and per[("exit:2", 0.0, 4, "iid")] == 20


def test_bad_input(splits, tmp_path):
    s = splits[4]
    with pytest.raises(InvalidParameterError, match=r"grid drafts \['exit:3'\]"):
        sweep(s, SweepGrid(drafts=("exit:3",)))
    with pytest.raises(InvalidParameterError, match="scheduler must be"):
        sweep(s, GRID, scheduler=3)
    with pytest.raises(InvalidParameterError, match="seed must be an integer >= 0; got -1"):
        sweep(s, GRID, seed=-1)
    with pytest.raises(InvalidParameterError, match="retries must be an integer >= 0; got -1"):
        sweep(s, GRID, retries=-1)
    with pytest.raises(InvalidParameterError, match="chunk must be >= 1; got 0"):
        sweep(s, GRID, chunk=0)
    with pytest.raises(InvalidParameterError, match="shards must be a ShardedTrace"):
        sweep(3, GRID)
    with pytest.raises(stt.TraceError, match=r"manifest\.json"):
        sweep(tmp_path, GRID)
    with pytest.raises(InvalidParameterError, match=r"verifiers must be registered .*\['nope'\]"):
        SweepGrid(verifiers=("nope",))
    with pytest.raises(InvalidParameterError, match=r"samplings must be among .*\['foo'\]"):
        SweepGrid(samplings=("foo",))
    with pytest.raises(InvalidParameterError, match="temperatures must be finite and >= 0"):
        SweepGrid(temperatures=(-1.0,))
    with pytest.raises(InvalidParameterError, match="ns must be >= 1; got 0"):
        SweepGrid(ns=(0,))
    with pytest.raises(InvalidParameterError, match="trials must be a positive integer"):
        SweepGrid(trials=2.5)
    with pytest.raises(InvalidParameterError, match="temperatures must not be empty"):
        SweepGrid(temperatures=())
    assert SweepGrid(ns=(2, 2, 1)).ns == (2, 1)


def test_command_line(splits, tmp_path, capsys):
    from spectheory.cli import main

    bounds = ["sweep", "--shards", str(splits[2].folder), "--cache-dir", str(tmp_path / "c"),
              "--temperatures", "1.0", "--n", "2", "--samplings", "iid", "greedy",
              "--quiet"]  # fmt: skip
    # the verifiers' options, refused with --bounds-only (they would be ignored there)
    common = [*bounds, "--verifiers", "rrs", "spechub", "--trials", "50", "--seed", "3"]
    assert main([*common, "--out", str(tmp_path / "t.csv")]) == 0
    assert "rows in" in capsys.readouterr().out
    with open(tmp_path / "t.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    grid = SweepGrid(temperatures=(1.0,), ns=(2,), samplings=("iid", "greedy"),
                     verifiers=("rrs", "spechub"), trials=50)  # fmt: skip
    table = sweep(splits[2], grid, seed=3)
    assert tuple(rows[0]) == SWEEP_COLUMNS and len(rows) == len(table)
    assert [float(r["mc"]) for r in rows] == [r["mc"] for r in table]
    assert [int(r["shard"]) for r in rows] == [r["shard"] for r in table]
    assert main([*common, "--bounds-only", "--out", str(tmp_path / "b.csv")]) == 2
    assert "--seed, --trials, --verifiers cannot be combined with --bounds-only" in (
        capsys.readouterr().err)
    assert main([*bounds, "--bounds-only", "--out", str(tmp_path / "b.csv")]) == 0
    with open(tmp_path / "b.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == BOUND_COLUMNS
    assert [float(r["bound"]) for r in rows] == [r["bound"] for r in sweep_bounds(splits[2], grid)]


def test_sweep_takes_a_spec_naming_a_verifier_record(tmp_path, monkeypatch):
    """The rows are named by the record (as replay names them); the final sort used to look
    them up by the spec and died with a KeyError after computing every piece."""
    (tmp_path / "rec_verifiers_t1.py").write_text(textwrap.dedent('''
        import spectheory as st

        @st.verifier(samplings=("iid",), n_values=(1,))
        def first_draft(p, q, drafts, coins, *, sampling):
            return drafts[0]
    '''))
    monkeypatch.chdir(tmp_path)
    try:
        rng = np.random.default_rng(0)
        P, Q = rng.dirichlet(np.ones(5), size=4), rng.dirichlet(np.ones(5), size=4)
        tr = Trace.from_arrays(P, {"d": Q}, kind="probs")
        spec = "rec_verifiers_t1:first_draft"
        grid = SweepGrid(ns=(1,), samplings=("iid",), verifiers=(spec, "sd"), trials=20)
        shard_trace(tr, tmp_path / "shards", max_shard_bytes=10_000)
        table = sweep(tmp_path / "shards", grid)
        expected = replay(tr, ns=(1,), samplings=("iid",), verifiers=[spec, "sd"], trials=20)
        # repr: the `exact` column is NaN (no closed form), and NaN != NaN
        assert repr([{k: v for k, v in r.items() if k != "shard"} for r in table]) == repr(expected)
        assert [r["verifier"] for r in table] == ["first_draft"] * 4 + ["sd"] * 4
    finally:
        sys.modules.pop("rec_verifiers_t1", None)


def test_verifiers_of_one_name_are_refused(tmp_path, monkeypatch):
    """Two specs naming records of one name shared the rows' name and streams: the sweep
    returned each row four times (replay refuses them)."""
    src = textwrap.dedent('''
        import spectheory as st

        @st.verifier(samplings=("iid",), n_values=(1,))
        def first_draft(p, q, drafts, coins, *, sampling):
            return drafts[0]
    ''')
    for mod in ("dup_names_a", "dup_names_b"):
        (tmp_path / f"{mod}.py").write_text(src)
    monkeypatch.chdir(tmp_path)
    try:
        specs = ("dup_names_a:first_draft", "dup_names_b:first_draft")
        with pytest.raises(InvalidParameterError, match=r"distinct names; \['first_draft'\]"):
            SweepGrid(ns=(1,), samplings=("iid",), verifiers=specs)
    finally:
        sys.modules.pop("dup_names_a", None)
        sys.modules.pop("dup_names_b", None)


def test_a_worker_running_an_old_verifier_module_is_refused(tmp_path, monkeypatch):
    """A long-lived worker keeps a spec's module as first imported: after the file was
    fixed, a new client's key named the fixed code and the worker computed (and cached)
    the old code's rows under it (acceptance 1 where replay gives SD's), silently."""
    old = textwrap.dedent('''
        import spectheory as st

        @st.verifier(samplings=("iid",), n_values=(1,))
        def mine(p, q, drafts, coins, *, sampling):
            return drafts[0]
    ''')
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "stale_worker_mod.py").write_text(old)
    rng = np.random.default_rng(0)
    P, Q = rng.dirichlet(np.ones(8), size=6), rng.dirichlet(np.ones(8), size=6)
    shard_trace(Trace.from_arrays(P, {"d": Q}, kind="probs"), tmp_path / "s", 10**6)
    grid = SweepGrid(ns=(1,), samplings=("iid",), verifiers=("stale_worker_mod:mine",), trials=50)
    try:
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                               dashboard_address=":0")  # fmt: skip
        with cluster, Client(cluster) as client:
            sweep(tmp_path / "s", grid, scheduler=client)  # the worker imports the module
            fixed = old.replace(
                "return drafts[0]",
                "return drafts[0] if coins.bernoulli(min(1, p[drafts[0]] / q[drafts[0]])) "
                "else int(p.argmax())",
            )
            (tmp_path / "stale_worker_mod.py").write_text(fixed)
            sys.modules.pop("stale_worker_mod")  # this process imports the fixed file
            grid = SweepGrid(ns=(1,), samplings=("iid",), verifiers=("stale_worker_mod:mine",),
                             trials=50)  # fmt: skip
            with pytest.raises(stt.VerifierError, match="restart the workers"):
                sweep(tmp_path / "s", grid, scheduler=client, cache_dir=tmp_path / "c")
        assert not list((tmp_path / "c").glob("replay-*.json"))
    finally:
        sys.modules.pop("stale_worker_mod", None)


def test_a_worker_whose_spectheory_changed_since_its_import_is_refused(monkeypatch):
    """A worker that imported spectheory before an upgrade or an edit runs the old code,
    while the files it reads (and so the key) are the new ones: its rows were cached under
    the new code's key.  The worker's check compares the files with those it imported."""
    task = SimpleNamespace(verifiers=(), code=sweep_module.code_fingerprint())
    sweep_module._check_code(task)  # the files as imported: accepted
    stamps = list(sweep_module._IMPORTED_STAMPS)
    path, size, mtime = stamps[0]
    stamps[0] = (path, size, mtime - 1)  # one file's stamp then was another
    monkeypatch.setattr(sweep_module, "_IMPORTED_STAMPS", tuple(stamps))
    with pytest.raises(stt.VerifierError, match="imported spectheory before its files changed"):
        sweep_module._check_code(task)


def test_a_relative_cache_dir_is_the_same_folder_for_the_workers(splits, tmp_path, monkeypatch):
    """The cache folder went to the workers as given: a relative one was resolved in each
    worker's own working folder, so this process never found their pieces."""
    seen = []
    real = sweep_module._run_task

    def spy(task, cache_dir, *args):
        seen.append(cache_dir)
        return real(task, cache_dir, *args)

    monkeypatch.setattr(sweep_module, "_run_task", spy)
    monkeypatch.chdir(tmp_path)
    grid = SweepGrid(drafts=("exit:2",), ns=(1,), samplings=("iid",), verifiers=("sd",),
                     trials=10)  # fmt: skip
    sweep(splits[4], grid, cache_dir="pieces")
    where = (tmp_path / "pieces").resolve()
    assert seen and all(Path(c).is_absolute() and Path(c) == where for c in seen)
    assert len(list((tmp_path / "pieces").glob("replay-*.json"))) == 4


def test_reordering_the_grids_verifiers_reuses_the_pieces(splits, tmp_path, counted):
    """The pieces' key held the applicable verifiers in grid order: the same grid with its
    verifiers reordered recomputed every piece, though only the table's order changes."""
    grids = [SweepGrid(drafts=("exit:2",), ns=(1,), samplings=("iid",), verifiers=vs,
                       trials=10) for vs in (("sd", "rrs"), ("rrs", "sd"))]  # fmt: skip
    sweep(splits[4], grids[0], seed=SEED, cache_dir=tmp_path)
    counted.calls = 0
    got = sweep(splits[4], grids[1], seed=SEED, cache_dir=tmp_path)
    assert counted.calls == 0
    assert canonical(got, False) == canonical(sweep(splits[4], grids[1], seed=SEED), False)
    assert [r["verifier"] for r in got] == ["rrs"] * 20 + ["sd"] * 20
