"""The report's verifier section with ``optimal``: the gap it closes, with and without replacement.

A synthetic trace (random logits, no model; tests/sim/test_replay.py) goes
through the real replay with ``optimal`` beside ``rrs`` and ``rrs_wor``.  The
oracle for the gap is the OT dual (``bound`` column, :func:`spectheory.bound`):
``optimal``'s exact acceptance (its plan's :math:`\\sum \\min(p, y)`) must
equal it to 1e-12 at every i.i.d. position (both are sums of O(V) float64
terms), its Monte Carlo acceptance must agree within a z-test at 1e-6 (i.i.d.,
and without replacement, where it runs the pair-score rule for two drafts and
the priority-coin rule for four), and the report must say so in words and in
summary.json, with the gap the best other verifier leaves at four drafts.
"""

from __future__ import annotations

import csv

import numpy as np
from scipy import stats

from spectheory.report._html import Page
from tests.sim.test_replay import synthetic_trace


def test_report_shows_optimal_at_the_bound_with_and_without_replacement(
    tmp_path, monkeypatch
):
    import spectheory.sim.replay as replay_mod
    from spectheory.report._core import ReportContext, section_bounds_and_verifiers

    monkeypatch.setattr(replay_mod, "REPLAY_VERIFIERS", ("rrs", "rrs_wor", "optimal"))
    trace = synthetic_trace(positions=24, vocab=300, seed=3)
    ctx = ReportContext(out_dir=tmp_path, quick=True, progress=False, trace=trace)
    page = Page("t")
    section_bounds_and_verifiers(ctx, page)
    with open(tmp_path / "replay.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    mine = [r for r in table if r["verifier"] == "optimal"]
    wor = [r for r in mine if r["sampling"] == "without_replacement"]
    assert {int(r["n"]) for r in wor} == {1, 2, 4}  # n = 4: the priority-coin rule
    for n in (2, 4):
        rows = [r for r in wor if int(r["n"]) == n]
        b2 = np.array([float(r["bound"]) for r in rows])
        t2 = np.array([int(r["trials"]) for r in rows])
        hits2 = np.array([float(r["mc"]) for r in rows]) * t2
        var2 = (b2 * (1 - b2) * t2).sum()
        assert abs(hits2.sum() - (b2 * t2).sum()) / np.sqrt(var2) < stats.norm.isf(0.5e-6)
    iid = [r for r in mine if r["sampling"] == "iid"]
    assert {int(r["n"]) for r in iid} == {1, 2, 4}
    exact = np.array([float(r["exact"]) for r in iid])
    bound = np.array([float(r["bound"]) for r in iid])
    np.testing.assert_allclose(exact, bound, rtol=0, atol=1e-12)
    trials = np.array([int(r["trials"]) for r in iid])
    hits = np.array([float(r["mc"]) for r in iid]) * trials
    var = (bound * (1 - bound) * trials).sum()
    assert abs(hits.sum() - (bound * trials).sum()) / np.sqrt(var) < stats.norm.isf(0.5e-6)
    # rrs stays below the bound for n > 1 on these rows: optimal closes a real gap.
    rrs = [float(r["bound"]) - float(r["exact"]) for r in table
           if r["verifier"] == "rrs" and int(r["n"]) == 4]  # fmt: skip
    assert np.mean(rrs) > 1e-3
    o = ctx.summary["verifiers"]["optimal"]
    assert o["iid_largest_abs_gap"] < 1e-12 and o["iid_configurations"] == 6
    assert o["without_replacement"].startswith("n = 2: the ramp score rule")
    assert o["without_replacement_n2_configurations"] == 2
    assert o["without_replacement_more_configurations"] == 2
    assert o["without_replacement_best_other_gap"] > 1e-3  # n = 4: what optimal closes
    html = page.write(tmp_path / "r.html").read_text()
    assert "With two drafts without replacement it runs the ramp score rule" in html
    assert "and with more the priority-coin rule" in html
    assert "There the best other registered verifier stays up to" in html
