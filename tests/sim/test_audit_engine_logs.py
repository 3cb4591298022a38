"""Logs written as an engine writes them, audited and tabulated against independent counts.

The engine below runs rounds of a chain (up to ``GAMMA`` drafts, a bonus row without
drafts after all are accepted), with multi-draft nodes (up to 3 i.i.d. drafts verified by
recursive rejection sampling, ``-1`` padding the unused slots) at depth 0 and target-only
rounds.  It records the depth of every node and whether it accepted, so the acceptance
table is compared with counts kept by the engine itself and with scipy's Wilson and
Student-t intervals.  Also: the arguments a log already holds, logs built directly as a
``SampleLog``, ids beyond int64, logs without draft slots and the command's JSON.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from spectheory import InvalidDistributionError, InvalidParameterError
from spectheory.sim.audit import check_lossless_from_samples as audit
from spectheory.sim.log_metrics import acceptance_table
from spectheory.sim.samplelog import SampleLog, as_sample_log, save_log

GAMMA, NMAX, V = 3, 3, 8


def _cat(rng, probs):
    return int(min(np.searchsorted(np.cumsum(probs), rng.random(), side="right"), probs.size - 1))


def _node(rng, p, q, xs):
    """Recursive rejection sampling of i.i.d. drafts ``xs``: (output, accepted)."""
    r = p.copy()
    for x in xs:
        if rng.random() < min(1.0, r[x] / q[x]):
            return x, True
        r = np.maximum(r - q, 0.0)
        r /= r.sum()
    return _cat(rng, r), False


def _engine(seed, N):
    """The log's arrays and the engine's own record of every row's depth and acceptance."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((N, V)) * 1.5
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    q = np.exp(np.log(p) + rng.standard_normal((N, V)))
    q /= q.sum(axis=1, keepdims=True)
    drafts = np.full((N, NMAX), -1, dtype=np.int64)
    out = np.empty(N, dtype=np.int64)
    rnd = np.empty(N, dtype=np.int64)
    depth = np.full(N, -1)
    acc = np.zeros(N, dtype=bool)
    t = k = 0
    while t < N:
        if rng.random() < 0.05:  # a target-only round
            out[t], rnd[t] = _cat(rng, p[t]), k
            t, k = t + 1, k + 1
            continue
        d = 0
        while t < N:
            rnd[t] = k
            if d == GAMMA:  # every draft accepted: the bonus row
                out[t] = _cat(rng, p[t])
                t += 1
                break
            n = int(rng.integers(1, NMAX + 1)) if d == 0 and rng.random() < 0.3 else 1
            xs = [_cat(rng, q[t]) for _ in range(n)]
            drafts[t, :n] = xs
            out[t], acc[t] = _node(rng, p[t], q[t], xs)
            depth[t] = d
            t += 1
            if not acc[t - 1]:
                break
            d += 1
        k += 1
    return (p, q, drafts, out, rnd), depth, acc


@pytest.mark.parametrize("confidence", [0.95, 0.5, 1 - 1e-6])
def test_acceptance_table_equals_the_engines_own_counts(confidence):
    """Every count, value and interval of the table against the engine's record and scipy.

    Mutants the earlier tests let through, each caught here: rows without drafts (bonus,
    target-only) given a depth, the membership total counting them, and the accepted
    length's interval at 95% whatever ``confidence``.
    """
    arrays, depth, acc = _engine(11, 3000)
    _, _, d, y, rnd = arrays
    # a correct RRS emits one of its drafts exactly when it accepts one
    np.testing.assert_array_equal((d == y[:, None]).any(axis=1), acc)
    has = (d >= 0).any(axis=1)
    want = {("membership", -1): (acc[has].sum(), has.sum())}
    for j in range(NMAX):
        reach = d[:, j] >= 0
        first_j = np.array([acc[t] and list(d[t]).index(y[t]) == j for t in range(y.size)])
        want["slot", j] = (first_j[reach].sum(), reach.sum())
    for k in range(GAMMA):
        want["depth", k] = (acc[depth == k].sum(), (depth == k).sum())
    lengths = np.array([acc[rnd == k].sum() for k in np.unique(rnd)])
    table = acceptance_table(as_sample_log(*arrays), confidence=confidence)
    got = {(r["quantity"], r["index"]): r for r in table}
    assert set(got) == set(want) | {("accepted_length", -1)}
    for key, (k, n) in want.items():
        ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence, method="wilson")
        assert (got[key]["count"], got[key]["total"]) == (k, n), key
        assert got[key]["value"] == k / n
        np.testing.assert_allclose([got[key]["low"], got[key]["high"]], [ci.low, ci.high],
                                   rtol=1e-9, atol=1e-12)  # fmt: skip
    row = got["accepted_length", -1]
    lo, hi = stats.t.interval(confidence, lengths.size - 1, loc=lengths.mean(),
                              scale=stats.sem(lengths))  # fmt: skip
    assert (row["count"], row["total"]) == (lengths.sum(), lengths.size)
    assert row["value"] == pytest.approx(lengths.mean(), rel=1e-15)
    np.testing.assert_allclose([row["low"], row["high"]], [lo, hi], rtol=1e-9)


def test_a_correct_engines_log_passes_and_its_bound_test_is_reported(tmp_path, capsys):
    """The command's JSON carries the acceptance-above-the-bound test, recomputed here.

    It printed the verdict, the tests and the table only: the audited acceptance, the
    bound it is compared with, their rows, the power, the sampling and the seed were
    nowhere (``spectheory check --json`` prints them).  For single-draft rows the bound
    is sum min(p, q); the multi-draft rows' bound is spectheory's, so the oracle uses a
    log with at most one draft per row.
    """
    from spectheory.cli import ExitCode, main

    p, q, d, y, rnd = _engine(12, 3000)[0]
    d[:, 1:] = -1  # the first draft of each node alone, verified again below
    one = d[:, 0] >= 0
    rng = np.random.default_rng(0)
    for t in np.flatnonzero(one):
        y[t] = _node(rng, p[t], q[t], [int(d[t, 0])])[0]
    path = save_log(as_sample_log(p, q, d, y, rnd), tmp_path / "log.npz")
    assert main(["audit", str(path), "--json", "--seed", "4"]) == ExitCode.OK
    out = json.loads(capsys.readouterr().out)
    assert out["sampling"] == "iid" and out["seed"] == 4 and out["impossible_outputs"] == 0
    assert out["bound_rows"] == one.sum()
    assert out["accepted"] == pytest.approx((d[one, 0] == y[one]).mean(), rel=1e-12)
    assert out["bound"] == pytest.approx(np.minimum(p, q)[one].sum(axis=1).mean(), rel=1e-12)
    ci = stats.binomtest(int((d[one, 0] == y[one]).sum()), int(one.sum())).proportion_ci(
        1 - out["alpha"], method="wilson")  # fmt: skip
    np.testing.assert_allclose(out["accepted_interval"], [ci.low, ci.high], rtol=1e-9)
    assert out["exceeds_bound"] is False and 0 < out["excess_p_value"] <= 1
    want = audit(path, rng=4)
    assert out["detectable_tv"] == pytest.approx(want.detectable_tv, rel=1e-12)
    assert want.sampling == "iid"
    assert main(["audit", str(path)]) == ExitCode.OK
    text = capsys.readouterr().out
    assert f"over {one.sum()} rows with drafts, optimal bound {out['bound']:.4f}" in text


def test_a_log_refuses_the_arrays_it_already_holds(tmp_path):
    """``audit(log, draft, drafts, outputs, round=...)`` audited the log and ignored the rest.

    A SampleLog with other outputs (all 0) passed "consistent with lossless" on the log's
    own; a log file's ``round`` was dropped.  Both now raise, naming what was given.
    """
    u = np.full((3, 4), 0.25)
    log = as_sample_log(u, u, [[0], [1], [2]], [0, 1, 2])
    with pytest.raises(InvalidParameterError, match=r"with a SampleLog, .*got drafts, outputs"):
        audit(log, drafts=[[0], [0], [0]], outputs=[0, 0, 0])
    with pytest.raises(InvalidParameterError, match=r"with a SampleLog, .*got round"):
        audit(log, round=[0, 1, 0])
    path = save_log(log, tmp_path / "log.npz")
    with pytest.raises(InvalidParameterError, match=r"with a log file, .*got round"):
        audit(path, round=[0, 0, 1])
    with pytest.raises(InvalidParameterError, match=r"needs target, draft, drafts and outputs"):
        audit(u, None, [[0], [1], [2]], [0, 1, 2])
    assert not audit(log).lossy and not audit(path).lossy


def test_a_sample_log_built_directly_is_checked():
    """``SampleLog(...)`` (exported, documented as "a checked log") skipped every check.

    Rows scaled by 3 were audited: "lossy: the pit test rejects" with a bound of 3.0; ids
    beyond the vocabulary crashed with numpy's IndexError.  Both now raise spectheory's
    errors naming the row, as :func:`as_sample_log` does.
    """
    p = np.tile([0.5, 0.25, 0.25], (4, 1))
    y = np.array([0, 1, 2, 0])
    with pytest.raises(InvalidDistributionError, match=r"target row 0 sums to 3"):
        SampleLog(target=3 * p, draft=p, drafts=y[:, None], outputs=y)
    with pytest.raises(InvalidParameterError, match=r"drafts row 0 slot 0 holds token 10"):
        SampleLog(target=p, draft=p, drafts=y[:, None] + 10, outputs=y)
    log = SampleLog(target=p.astype(np.float32), draft=p, drafts=y, outputs=y.astype(float))
    assert log.drafts.shape == (4, 1) and log.outputs.dtype == np.int64
    assert log.target.dtype == np.float64


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("drafts", np.array([[0], [2**64 - 1], [2]], dtype=np.uint64),
         r"drafts row 1 slot 0 holds 18446744073709551615, beyond the int64 range"),
        ("outputs", np.array([0, 1, 2**63], dtype=np.uint64),
         r"outputs row 2 holds 9223372036854775808, beyond the int64 range"),
        ("outputs", np.array([0.0, 1.0, 1e300]), r"outputs row 2 holds 1e\+300, beyond"),
    ],
)  # fmt: skip
def test_ids_beyond_int64_are_refused_not_wrapped(key, value, match):
    """uint64 2**64 - 1 became the padding -1 (the row's draft silently dropped); 2**63
    became -2**63 and the error named that value; a float 1e300 warned and did the same."""
    u = np.full((3, 4), 0.25)
    arrays = {"drafts": np.array([[0], [1], [2]]), "outputs": np.array([0, 1, 2])}
    arrays[key] = value
    with pytest.raises(InvalidParameterError, match=match):
        as_sample_log(u, u, arrays["drafts"], arrays["outputs"])


def test_acceptance_table_of_a_log_without_draft_slots():
    """drafts of shape (N, 0) (an engine that drafted nothing) crashed the table with
    numpy's "attempt to get argmax of an empty sequence"; the audit accepted the log."""
    u = np.full((3, 4), 0.25)
    log = as_sample_log(u, u, np.zeros((3, 0), dtype=np.int64), [0, 1, 2], round=[0, 1, 2])
    table = {(r["quantity"], r["index"]): r for r in acceptance_table(log)}
    assert set(table) == {("membership", -1), ("accepted_length", -1)}
    assert (table["membership", -1]["count"], table["membership", -1]["total"]) == (0, 0)
    assert np.isnan(table["membership", -1]["value"])
    length = table["accepted_length", -1]
    assert (length["count"], length["total"], length["value"]) == (0, 3, 0.0)
    assert not audit(log).lossy
