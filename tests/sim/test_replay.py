"""spectheory.sim.replay: a serial sweep over a trace in memory (issue 15 item 3).

Synthetic traces (random logits, tests/lm/test_shards.py), no model.  Replay and
sweep share their row builder and per-position random streams, so the tables
must be identical, number for number (JSON text equality, NaN included),
whatever the chunk size, the subset of positions or the sharding.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from spectheory._errors import InvalidParameterError, VerifierError
from spectheory.lm.shards import shard_trace
from spectheory.sim.replay import COLUMNS, replay
from spectheory.sim.sweeps import SweepGrid, sweep
from spectheory.verifiers import Verifier, register_verifier, unregister_verifier

V = 120
KW = dict(temperatures=(1.0,), ns=(1, 2), samplings=("iid", "greedy"), trials=60, seed=5)
VERIFIERS = ("sd", "rrs", "greedy", "nss")


def text(table, drop=("shard",)):
    return json.dumps([{k: v for k, v in r.items() if k not in drop} for r in table])


def synthetic_trace(positions=12, vocab=V, seed=0):
    """Random float16 logits over two prompts; the draft is a noisy copy of the target."""
    from spectheory.lm import Trace
    from spectheory.lm.trace import FORMAT_VERSION

    rng = np.random.default_rng(seed)
    z = rng.standard_normal((positions, vocab)).astype(np.float16) * 2
    d = (z + rng.standard_normal(z.shape)).astype(np.float16)
    half = positions // 2
    return Trace(
        target_logits=z, exit_logits={"exit:1": d}, tokens=np.zeros(positions, np.int64),
        prompt_ids=np.repeat([0, 1], [half, positions - half]),
        steps=np.concatenate([np.arange(half), np.arange(positions - half)]),
        prompt_tokens=np.array([1, 2]), prompt_offsets=np.array([0, 1, 2]),
        metadata={"format": FORMAT_VERSION, "prompt_order": [0, 1],
                  "settings": {"drafts": ["exit:1"]}},
    )  # fmt: skip


@pytest.fixture(scope="module")
def trace():
    return synthetic_trace()


@pytest.fixture(scope="module")
def table(trace):
    return replay(trace, verifiers=VERIFIERS, chunk=64, **KW)


def test_replay_is_independent_of_the_chunk_size(trace, table):
    # Regression: the streams used to be keyed by the chunk, so the numbers moved with it.
    assert all(tuple(r) == COLUMNS for r in table)
    assert len(table) > 0
    for chunk in (1, 7):
        assert text(replay(trace, verifiers=VERIFIERS, chunk=chunk, **KW)) == text(table)


def test_replay_of_a_subset_equals_the_same_rows_of_the_whole(trace, table):
    rows = [9, 2, 5]
    part = replay(trace, verifiers=VERIFIERS, rows=rows, chunk=2, **KW)
    whole = [r for r in table if r["position"] in rows]
    assert text(part) == text(whole)


def test_replay_equals_a_serial_sweep_whatever_the_sharding(trace, table, tmp_path):
    grid = SweepGrid(temperatures=KW["temperatures"], ns=KW["ns"], samplings=KW["samplings"],
                     verifiers=VERIFIERS, trials=KW["trials"])  # fmt: skip
    for name, limit in (("one", 10**7), ("many", 6_000)):
        sharded = shard_trace(trace, tmp_path / name, limit)
        swept = sweep(sharded, grid, seed=KW["seed"], chunk=3)
        assert {r["shard"] for r in swept} == set(range(len(sharded)))
        assert text(swept) == text(table)
    assert len(sharded) > 1


def test_seed_changes_the_numbers(trace, table):
    other = replay(trace, verifiers=VERIFIERS, **{**KW, "seed": 6})
    assert [r["mc"] for r in other] != [r["mc"] for r in table]
    assert [r["bound"] for r in other] == [r["bound"] for r in table]


def biased_rrs(p, q, drafts, coins, *, sampling="iid"):
    """Accept the first draft always: biased towards q (a coins-protocol user verifier)."""
    return drafts[0]


def test_user_verifiers_replay_in_python_with_the_same_columns(trace):
    # Named like the registered "rrs" on purpose: it must run its own code, never rrs's kernel.
    mine = Verifier("rrs", biased_rrs, samplings=("iid",), lossless=False)

    def blackbox(target, draft, drafts, rng):
        return int(drafts[0])

    kw = {**KW, "samplings": ("iid",), "ns": (2,)}
    out = replay(trace, verifiers=(mine,), rows=range(6), **kw)
    assert all(tuple(r) == COLUMNS for r in out) and len(out) == 6
    assert all(r["mc"] == 1.0 for r in out)  # always accepted, unlike RRS
    assert all(math.isnan(r["exact"]) for r in out)  # no closed form for a user function
    again = replay(trace, verifiers=(blackbox,), rows=range(6), chunk=1, **kw)
    assert [r["mc"] for r in again] == [1.0] * 6
    real = replay(trace, verifiers=("rrs",), rows=range(6), **kw)
    assert any(r["mc"] < 1.0 for r in real)


def _leaky(p, q, drafts, coins, *, sampling="iid"):
    """Outputs the draft even where the target gives it probability 0 (w.p. 0.3)."""
    if p[drafts[0]] == 0 and coins.bernoulli(0.3):
        return int(drafts[0])
    return coins.categorical(p)


def _exact(p, q, drafts, coins, *, sampling="iid"):
    return coins.categorical(p)


def test_outputs_of_target_probability_zero_give_chi2_p_zero():
    from spectheory.lm import Trace

    # Targets with zeros, drafts with mass there: the leaky verifier's other
    # cells alone would give an ordinary-looking Pearson p-value.
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(8), size=4)
    P[:, 5:] = 0
    P /= P.sum(1, keepdims=True)
    Q = rng.dirichlet(np.ones(8), size=4)
    tr = Trace.from_arrays(P, {"d": Q}, kind="probs")
    kw = {"ns": (1,), "samplings": ("iid",), "trials": 2000}
    leaky = replay(tr, verifiers=(_leaky,), **kw)
    assert all(r["impossible"] > 0 and r["chi2_p"] == 0.0 for r in leaky)
    exact = replay(tr, verifiers=(_exact,), **kw)
    # Lossless: no impossible output; all four p-values above 1e-4 fails w.p. < 4e-4.
    assert all(r["impossible"] == 0 and r["chi2_p"] > 1e-4 for r in exact)


def test_registered_user_verifier_in_a_sweep(trace, tmp_path):
    register_verifier(Verifier("first_draft", biased_rrs, samplings=("iid",), lossless=False))
    try:
        grid = SweepGrid(ns=(2,), samplings=("iid",), verifiers=("first_draft",), trials=20)
        swept = sweep(shard_trace(trace, tmp_path / "s", 10**7), grid, seed=1)
        mine = replay(trace, verifiers=("first_draft",), ns=(2,), samplings=("iid",),
                      trials=20, seed=1)  # fmt: skip
        assert text(swept) == text(mine)
        assert {r["mc"] for r in swept} == {1.0}
    finally:
        unregister_verifier("first_draft")


def _sd(p, q, drafts, coins, *, sampling="iid"):
    x = drafts[0]
    if coins.bernoulli(min(1, p[x] / q[x])):
        return x
    rest = np.maximum(p - q, 0 * p[0])
    return coins.categorical(rest / rest.sum())


def _overlap_times_5(p, q, n, sampling):
    """A wrong closed form of SD: five times its acceptance, above 1 on most rows."""
    return float(np.minimum(p, q).sum() * 5)


def test_a_closed_form_outside_0_1_is_refused_everywhere(trace, tmp_path, monkeypatch):
    """replay (and so sweep) wrote a user's closed form into the `exact` column unchecked
    (1.28 on a real trace) where spectheory.acceptance refuses it naming the verifier: all
    three now raise the same error."""
    import spectheory as stt
    from spectheory.exact import _law

    record = Verifier("bad_closed_form", _sd, samplings=("iid",), n_values=(1,),
                      closed_form=_overlap_times_5, closed_form_samplings=("iid",))  # fmt: skip
    match = (r"the closed form of verifier 'bad_closed_form' returned \S+, not an acceptance "
             r"probability in \[0, 1\]")  # fmt: skip
    kw = {"ns": (1,), "samplings": ("iid",), "trials": 5}
    with pytest.raises(VerifierError, match=match):
        replay(trace, verifiers=(record,), **kw)
    register_verifier(record)
    try:
        grid = SweepGrid(verifiers=("bad_closed_form",), **kw)
        with pytest.raises(VerifierError, match=match):
            sweep(shard_trace(trace, tmp_path / "s", 10**7), grid, retries=0)
    finally:
        unregister_verifier("bad_closed_form")
    monkeypatch.setattr(_law, "MAX_CALLS", 0)  # too large to enumerate: the closed form
    p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    with pytest.raises(VerifierError, match=match):
        stt.acceptance(record, p, q, n=1, sampling="iid")


def test_a_grid_with_nothing_to_replay_is_refused(trace, tmp_path):
    # It returned an empty table (and the CLI exit 0), which reads like a result.
    with pytest.raises(InvalidParameterError, match=r"no verifier of \['sd'\] supports any n"):
        replay(trace, verifiers=("sd",), ns=(2,), samplings=("iid",), trials=5)
    with pytest.raises(InvalidParameterError, match="nothing to replay"):
        grid = SweepGrid(ns=(1, 2), samplings=("greedy",), verifiers=("rrs",), trials=5)
        sweep(shard_trace(trace, tmp_path / "s", 10**7), grid)
    # A grid with some work replays it (sd at n = 1 only).
    out = replay(trace, verifiers=("sd",), ns=(1, 2), samplings=("iid",), trials=5, rows=[0])
    assert {r["n"] for r in out} == {1}


def test_bad_input(trace):
    with pytest.raises(InvalidParameterError, match="rows must be positions"):
        replay(trace, verifiers=("sd",), rows=[10**6])
    with pytest.raises(InvalidParameterError, match="seed must be an integer >= 0"):
        replay(trace, verifiers=("sd",), seed=-1)
    with pytest.raises(InvalidParameterError, match="distinct names"):
        replay(trace, verifiers=("sd", "sd"))
    with pytest.raises(InvalidParameterError, match="verifier must be"):
        replay(trace, verifiers=("nope",))
    with pytest.raises(InvalidParameterError, match="registered names"):
        SweepGrid(verifiers=("nope",))
    np.testing.assert_equal(len(replay(trace, verifiers=("sd",), ns=(1,), rows=[], **{
        k: v for k, v in KW.items() if k != "ns"})), 0)


@pytest.mark.parametrize(
    "rows, match",
    [
        ([1.7, 2.2], "rows must be integers"),  # was truncated to positions 1 and 2
        ([True], "rows must be integers"),  # was position 1
        ([0, True], "rows must be integers"),
        (np.array([True, False]), "rows must be integers"),
        ([[0, 1], [2, 3]], "1-D"),  # was flattened
        ("12", "1-D sequence of integers"),
    ],
)
def test_replay_refuses_rows_that_are_not_integer_positions(trace, rows, match):
    with pytest.raises(InvalidParameterError, match=match):
        replay(trace, verifiers=("sd",), ns=(1,), samplings=("iid",), trials=5, rows=rows)


def test_replay_takes_integer_rows_of_any_integer_type(trace):
    kw = {"verifiers": ("sd",), "ns": (1,), "samplings": ("iid",), "trials": 5}
    want = replay(trace, rows=[1, 3], **kw)
    for rows in (np.array([3, 1], dtype=np.int32), [np.int64(1), 3], range(1, 4, 2)):
        assert replay(trace, rows=rows, **kw) == want


def test_replay_drops_repeated_grid_values_as_sweep_does(trace, tmp_path):
    # A repeated temperature repeated every row of its configuration (36 rows against
    # sweep's 18 on the same arguments); SweepGrid drops duplicates.
    kw = {"temperatures": (1.0, 1, 1.0), "ns": (2, 2), "samplings": ("iid", "iid"),
          "verifiers": ("rrs",), "trials": 5}  # fmt: skip
    table = replay(trace, drafts=(trace.drafts[0], trace.drafts[0]), **kw)
    once = replay(trace, drafts=(trace.drafts[0],), temperatures=(1.0,), ns=(2,),
                  samplings=("iid",), verifiers=("rrs",), trials=5)  # fmt: skip
    assert table == once
    shards = shard_trace(trace, tmp_path / "s", max_shard_bytes=2**24)
    swept = sweep(shards, SweepGrid(drafts=(trace.drafts[0],), **kw))
    assert [{k: v for k, v in r.items() if k != "shard"} for r in swept] == table
