"""One losslessness report for simulated, logged and live samples (spectheory.LosslessReport).

The three checkers return the same type, with ``source`` saying where the
samples came from; the report's table row and text render each of them.
Every checker runs here on samples of a correct verifier ("sd"), so each
verdict below is wrong with probability at most its alpha = 1e-6.
"""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import spectheory as stt
from spectheory._errors import InvalidParameterError
from spectheory._files import write_csv
from spectheory.live import check_live_lossless
from spectheory.report._html import Page
from spectheory.sim.audit import check_lossless_from_samples
from spectheory.sim.check import LOSSLESS_COLUMNS, SOURCES, LosslessReport

ALPHA = 1e-6
RNG = np.random.default_rng(11)
B, V = 600, 6
P_ROWS = RNG.dirichlet(np.ones(V), size=B)
Q_ROWS = RNG.dirichlet(np.ones(V), size=B)


def _simulated():
    return stt.check_lossless("sd", P_ROWS[:3], Q_ROWS[:3], sampling="iid", trials=3000, seed=1)


def _sd_samples():
    """One "sd" trial per row: drafts (B, 1), outputs (B,)."""
    sim = stt.simulate("sd", P_ROWS, Q_ROWS, n=1, trials=1, rng=2)
    return sim.drafts[:, 0, :], sim.tokens[:, 0]


def _logged():
    drafts, outputs = _sd_samples()
    return check_lossless_from_samples(P_ROWS, Q_ROWS, drafts, outputs, rng=3)


def _live_run(nodes=True):
    """A recorded run as check_live_lossless reads it: every position a single-draft node."""
    drafts, outputs = _sd_samples()
    hit = drafts[:, 0] == outputs
    bound = np.minimum(P_ROWS, Q_ROWS).sum(axis=1)
    return SimpleNamespace(
        target_probs=P_ROWS,
        tokens=outputs,
        node_bound=bound if nodes else np.zeros(0),
        node_hit=hit if nodes else np.zeros(0, dtype=bool),
        draft_probs=Q_ROWS if nodes else None,
        node_token=np.arange(B) if nodes else None,
        settings={"verifier": "sd"},
    )


def _live():
    return check_live_lossless(_live_run(), alpha=ALPHA, seed=4)


CHECKS = {"simulated": _simulated, "logged": _logged, "live": _live}


@pytest.fixture(scope="module")
def reports():
    return {source: check() for source, check in CHECKS.items()}


def test_three_sources_one_type(reports):
    assert tuple(reports) == SOURCES
    for source, r in reports.items():
        assert type(r) is LosslessReport
        assert r.source == source
        assert not r.lossy, (source, r.verdict)
        assert r.verdict == "consistent with lossless"
        assert 0 < r.p_value <= 1 and r.alpha == ALPHA
        assert r.impossible_outputs == 0 and not r.exceeds_bound
        lo, hi = r.acceptance_interval
        assert 0 <= lo <= r.acceptance <= hi <= 1
        assert math.isfinite(r.bound) and math.isfinite(r.detectable_tv)
        assert r.bound_samples > 0 and r.samples > 0
    assert reports["simulated"].samples == 3 * 3000 == reports["simulated"].bound_samples
    assert reports["logged"].samples == B == reports["logged"].bound_samples
    assert reports["live"].samples == B == reports["live"].bound_samples


def test_live_and_logged_agree_on_the_acceptance_of_the_same_samples(reports):
    live, logged = reports["live"], reports["logged"]
    # The same hits over the same rows, against the same single-draft bound sum(min(p, q)).
    assert live.acceptance == logged.acceptance
    np.testing.assert_allclose(live.bound, logged.bound, rtol=1e-12)
    np.testing.assert_allclose(live.acceptance_interval, logged.acceptance_interval, rtol=1e-12)
    assert live.verifier == "sd" and live.rows == B and live.trials == 1
    assert set(live.tests) == {"pit", "pit_ks", "acceptance"}
    assert live.excess_p_value == live.tests["acceptance"]


def test_report_rendering_handles_every_source(reports, tmp_path):
    rows = [{"check": source} | r.table_row() for source, r in reports.items()]
    for source, row in zip(SOURCES, rows):
        assert tuple(row)[1:] == LOSSLESS_COLUMNS and row["source"] == source
    columns = ["check", *LOSSLESS_COLUMNS]
    page = Page("checks")
    page.table(rows, columns)
    html = page.html()
    for source, r in reports.items():
        assert f'<td class="text">{source}</td>' in html
        assert f"<td>{r.samples}</td>" in html
    assert html.count("consistent with lossless") == 3
    # and as the report's CSV
    path = write_csv(rows, tmp_path / "lossless.csv", columns)
    with open(path, newline="") as f:
        back = list(csv.DictReader(f))
    assert [b["source"] for b in back] == list(SOURCES)
    assert [int(b["samples"]) for b in back] == [r.samples for r in reports.values()]
    for source, r in reports.items():
        first = r.summary().splitlines()[0]
        law = f", sampling={r.sampling}" if r.sampling else ""
        assert first == f"{r.verifier} ({source}{law}, {r.samples} samples): {r.verdict}"
        assert f"over {r.bound_samples} samples" in r.summary()


def test_live_report_without_nodes_has_no_acceptance():
    r = check_live_lossless(_live_run(nodes=False), alpha=ALPHA, seed=4)
    assert r.source == "live" and not r.lossy
    assert r.bound_samples == 0 and math.isnan(r.acceptance) and math.isnan(r.bound)
    assert all(math.isnan(x) for x in r.acceptance_interval)
    assert math.isnan(r.excess_p_value) and not r.exceeds_bound
    assert "acceptance" not in r.summary()
    row = r.table_row()
    page = Page("x")
    page.table([row], list(LOSSLESS_COLUMNS))
    assert '<td class="text">live</td>' in page.html()


def test_live_report_with_every_draft_accepted_exceeds_the_bound():
    run = _live_run()
    run.node_hit = np.ones(B, dtype=bool)  # 600 hits against bounds near 0.6: impossible
    r = check_live_lossless(run, alpha=ALPHA, seed=4)
    assert r.lossy and r.exceeds_bound and r.excess_p_value < ALPHA
    assert r.acceptance == 1.0 and r.acceptance_interval[1] == 1.0
    assert r.table_row()["above bound"] is True and r.table_row()["verdict"] == "lossy"


def test_live_report_names_the_recorded_verifiers():
    a, b = _live_run(), _live_run()
    b.settings = {"verifier": None}  # a target-only run
    r = check_live_lossless([a, b], alpha=ALPHA, seed=4)
    assert r.verifier == "sd, target only" and r.samples == 2 * B


def test_unknown_source_is_refused(reports):
    import dataclasses

    with pytest.raises(InvalidParameterError, match=r"source.*'replayed'"):
        dataclasses.replace(reports["live"], source="replayed")


def test_the_report_type_does_not_import_torch():
    code = (
        "import sys; import spectheory.sim.check, spectheory.sim.audit; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_power_line_names_what_each_source_can_see(reports):
    """The summary's power statement: per row for simulated samples; for logs and live runs
    a TV of the pooled PIT's binned law, with the bias it cannot see named.  It used to
    read "detects a TV bias >= x" for every source."""
    assert "on one row" in reports["simulated"].summary()
    for source in ("logged", "live"):
        text = reports[source].summary()
        assert "detects a TV bias" not in text, source
        assert f"PIT law at TV >= {reports[source].detectable_tv:.3f}" in text, source
        assert "within one bin is not covered" in text, source

