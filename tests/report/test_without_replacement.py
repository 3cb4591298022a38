"""The report's without-replacement section: embedded_iid beside rrs_wor on the same drafts.

A synthetic trace with a 6-token vocabulary (random logits, no model), so that
every oracle is exact: the bounds come from the OT dual and are checked against
the LP, and each verifier's Monte Carlo acceptance is tested against its exact
acceptance (:func:`spectheory.acceptance`, enumeration over draws and coins) with
a z-test at false-alarm rate 1e-6 per configuration.
"""

from __future__ import annotations

import csv

import numpy as np
from scipy import stats

from spectheory import acceptance, process_logits, solve_bound
from spectheory.report._core import ReportContext
from spectheory.report._html import Page
from spectheory.report._wor import pooled, section_without_replacement, wor_comparison
from tests.sim.test_replay import synthetic_trace

Z = stats.norm.isf(0.5e-6)


def test_section_table_against_exact_acceptances(tmp_path):
    trace = synthetic_trace(positions=8, vocab=6, seed=5)
    ctx = ReportContext(out_dir=tmp_path, quick=True, progress=False, trace=trace)
    page = Page("t")
    section_without_replacement(ctx, page)
    with open(tmp_path / "without_replacement.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert {(r["T"], r["n"]) for r in table} == {
        (t, n) for t in ("0.7", "1.0") for n in ("2", "4")
    }
    positions = np.unique(np.linspace(0, 7, 8).astype(int))
    for r in table:
        T, n = float(r["T"]), int(r["n"])
        p = process_logits(trace.target_logits[positions].astype(np.float64), T)
        q = process_logits(trace.draft_logits("exit:1", positions), T)
        wor = solve_bound(p, q, n, "without_replacement", method="lp").value.mean()
        iid = solve_bound(p, q, n, "iid", method="lp").value.mean()
        np.testing.assert_allclose(float(r["alpha*_wor"]), wor, atol=1e-9)
        np.testing.assert_allclose(float(r["alpha*_iid"]), iid, atol=1e-9)
        trials = 100 * len(positions)
        if n == 2:  # exact acceptances by enumeration (n = 4 takes minutes)
            for v in ("rrs_wor", "embedded_iid", "optimal", "pair_tiers", "pair_scores"):
                exact = np.mean([float(acceptance(v, p[b], q[b], n, "without_replacement"))
                                 for b in range(len(positions))])  # fmt: skip
                se = np.sqrt(exact * (1 - exact) / trials)
                assert abs(float(r[v]) - exact) <= Z * se + 1e-12, (v, T, n)
            from spectheory.verifiers.pair_scores import score_plan
            from spectheory.verifiers.pair_tiers import pair_plan

            for name, plan in (("pair_tiers", pair_plan), ("pair_scores", score_plan),
                               ("optimal", score_plan)):
                reached = sum(plan(p[b], q[b]).reached for b in range(len(positions)))
                assert r[f"{name} reached"] == f"{reached}/{len(positions)}"
        else:  # embedded_iid between the bounds, up to its Monte Carlo error
            se = 0.5 / np.sqrt(trials)
            assert iid - Z * se <= float(r["embedded_iid"]) <= wor + Z * se
            # optimal: the priority-coin rule; where every plan reaches, alpha*_wor exactly
            from spectheory.verifiers.priority_coins import coin_plan

            reached = sum(coin_plan(p[b], q[b], n).reached for b in range(len(positions)))
            assert r["optimal reached"] == f"{reached}/{len(positions)}"
            if reached == len(positions):
                se = np.sqrt(wor * (1 - wor) / trials)
                assert abs(float(r["optimal"]) - wor) <= Z * se + 1e-12
            for name in ("pair_tiers", "pair_scores"):
                assert r[name] == "nan" and r[f"{name} reached"] == ""
        assert float(r["difference"]) == float(r["embedded_iid"]) - float(r["rrs_wor"])
    summary = ctx.summary["without_replacement"]
    assert summary["positions"] == 8 and summary["trials"] == 100
    (pool,) = summary["pooled"]
    assert pool["configurations"] == 4
    np.testing.assert_allclose(pool["difference"],
                               np.mean([float(r["difference"]) for r in table]), atol=1e-12)
    html = page.write(tmp_path / "r.html").read_text()
    assert "Without replacement: the gap to the bound" in html


def test_every_n_compares_the_same_positions(tmp_path):
    """Positions whose draft has 2 or 3 tokens of support can draw two drafts but not four.
    Each n used to keep its own positions, so the n = 2 row averaged over more (and other)
    positions than the n = 4 row, and alpha*_wor seemed to fall as n grew.  Both rows must
    count the positions with at least 4 tokens, and there alpha*_wor (which cannot fall
    as n grows: four drafts without replacement hold the first two) must not fall."""
    trace = synthetic_trace(positions=8, vocab=6, seed=5)
    d = trace.exit_logits["exit:1"]
    d[[1, 4], 2:] = -np.inf  # support 2
    d[6, 3:] = -np.inf  # support 3
    ctx = ReportContext(out_dir=tmp_path, quick=True, progress=False, trace=trace)
    section_without_replacement(ctx, Page("t"))
    with open(tmp_path / "without_replacement.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    for T in ("0.7", "1.0"):
        two, four = (next(r for r in table if r["T"] == T and r["n"] == n) for n in ("2", "4"))
        assert two["positions"] == four["positions"] == "5"
        assert float(four["alpha*_wor"]) >= float(two["alpha*_wor"]) - 1e-12


def test_both_verifiers_see_the_same_drafts(monkeypatch):
    """The comparison is paired: every simulate call gets the same draft uniforms."""
    import importlib

    sim_mod = importlib.import_module("spectheory.sim.simulate")
    seen = []
    real = sim_mod.simulate

    def spy(v, *args, **kwargs):
        seen.append((v, kwargs["draft_uniforms"]))
        return real(v, *args, **kwargs)

    monkeypatch.setattr(sim_mod, "simulate", spy)
    trace = synthetic_trace(positions=4, vocab=6, seed=1)
    row = wor_comparison(trace, "exit:1", 1.0, 2, [0, 1, 2, 3], 20)
    assert [v for v, _ in seen] == ["rrs_wor", "embedded_iid", "optimal", "pair_tiers",
                                    "pair_scores"]
    assert all(du is seen[0][1] for _, du in seen)
    assert row["positions"] == 4


def test_pooled_weights_configurations_equally():
    rows = [
        {"draft": "d", "difference": 0.02, "_diff_var": 1e-4, "alpha*_wor": 0.5,
         "rrs_wor": 0.46, "embedded_iid": 0.48},
        {"draft": "d", "difference": 0.0, "_diff_var": 1e-4, "alpha*_wor": 0.3,
         "rrs_wor": 0.28, "embedded_iid": 0.28},
    ]  # fmt: skip
    (p,) = pooled(rows)
    assert p["difference"] == 0.01 and p["configurations"] == 2
    np.testing.assert_allclose(p["gap alpha*_wor - rrs_wor"], 0.03)
    np.testing.assert_allclose(p["gap closed"], 1 / 3)
    np.testing.assert_allclose(p["gap left"], 0.02)
    half = 1.96 * np.sqrt(2e-4) / 2
    assert p["difference 95%"] == f"[{0.01 - half:+.4f}, {0.01 + half:+.4f}]"
    # A gap within twice the difference's half-width gets no share: it would be noise.
    rows[0]["alpha*_wor"], rows[1]["alpha*_wor"] = 0.47, 0.29
    (p,) = pooled(rows)
    assert p["gap alpha*_wor - rrs_wor"] < 2 * half and p["gap closed"] != p["gap closed"]


def test_the_difference_variance_is_that_of_the_mean_over_every_trial():
    """Bug: the variance behind the difference's 95% interval was the per-trial variance,
    not divided by the number of trials, so the interval did not narrow with more trials.

    Four times the trials must give a quarter of the variance.  The per-trial
    differences lie in {-1, 0, 1}; over 1,600 and 6,400 of them the sample
    variances are each within about 8% (one standard deviation, kurtosis at most
    1/P(difference != 0)) of theirs, so the ratio lies in [2, 8] (log-ratio within
    eight standard deviations of log 4) except with probability below 1e-9; the bug
    gives a ratio near 1.
    """
    trace = synthetic_trace(positions=8, vocab=6, seed=5)
    rows = {t: wor_comparison(trace, "exit:1", 1.0, 2, np.arange(8), t) for t in (200, 800)}
    ratio = rows[200]["_diff_var"] / rows[800]["_diff_var"]
    assert 2.0 <= ratio <= 8.0, ratio
