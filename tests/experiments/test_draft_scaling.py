"""Tests of spectheory.experiments.draft_scaling and its cost model spectheory.solvers.roofline."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import spectheory as stt
from spectheory.experiments import draft_scaling as DS
from spectheory.solvers import roofline as R
from spectheory.solvers.scaling import fit_log_linear


def _brute_speedup(alpha, B, Pt, Pd, r):
    out = []
    for n, a in enumerate(alpha, start=1):
        t = lambda P, x: max(P * r.bytes_per_param / r.bandwidth, 2 * P * x / r.flops)  # noqa: E731
        out.append((1 + a) * t(Pt, B) / (t(Pd, B) + t(Pt, B * (n + 1))))
    return np.array(out)


def test_speedup_and_optimal_width_match_the_formula():
    r = R.Roofline(bandwidth=2.0, flops=50.0, bytes_per_param=1.0)
    alpha = 1 - 0.6 * 0.8 ** np.arange(12)  # increasing, concave
    for B in (1, 3, 16, 200):
        np.testing.assert_allclose(
            R.batch_speedup(alpha, B, 100.0, 10.0, r), _brute_speedup(alpha, B, 100.0, 10.0, r)
        )
    batches = [1, 2, 4, 8, 16, 64, 256]
    n_star, s_star = R.optimal_width(alpha, batches, 100.0, 10.0, r)
    for B, n, s in zip(batches, n_star, s_star):
        brute = _brute_speedup(alpha, B, 100.0, 10.0, r)
        assert n == int(np.argmax(brute)) + 1 and s == pytest.approx(brute.max())
    # memory-bound up to the knee P s / W = 2 P x / F, x = 12.5 tokens: at B = 1 the verifier
    # takes n + 1 <= 12 tokens for free, n* = 11; far above the knee one draft is best
    assert n_star[0] == 11 and n_star[-1] == 1
    assert np.all(np.diff(n_star) <= 0)
    with pytest.raises(stt.InvalidParameterError, match="alpha"):
        R.batch_speedup([1.5], 1, 10, 1)


def _read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_quick_run_writes_tables_figures_and_the_fits_of_its_tables(
    smol, tmp_path, monkeypatch, capsys
):
    # through the command line, its one entry point, with the session's model
    import spectheory.cli.experiment as E
    from spectheory.cli import main
    from spectheory.lm import draft_parameter_count

    monkeypatch.setenv("SPECTHEORY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(E, "_load_model", lambda: smol)
    out = tmp_path / "out"
    assert main(["experiment", "draft-scaling", "-q", "--quick", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert (out / "comparison.txt").read_text() in printed
    assert DS.QUICK["layers"] == (2, 4, 6)
    for name in ("capacity.csv", "tokens.csv", "width.csv", "fits.csv", "alpha_n.csv"):
        assert (out / name).is_file()
    for name in ("capacity_T1.png", "tokens_T1.png", "width.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cap = _read(out / "capacity.csv")
    assert [int(r["layer"]) for r in cap] == [2, 4, 6]
    assert int(cap[0]["parameters"]) < int(cap[1]["parameters"]) < int(cap[2]["parameters"])
    x, y = [float(r["parameters"]) for r in cap], [float(r["acceptance"]) for r in cap]
    fit = fit_log_linear(x, y)
    fits = {r["law"]: r for r in _read(out / "fits.csv")}
    row = fits["capacity T=1"]
    # the table's acceptance is rounded to 5 decimals, the fit uses the exact values
    assert float(row["slope_per_decade"]) == pytest.approx(fit.slope, abs=1e-4)
    lo, hi = float(row["slope_ci_low"]), float(row["slope_ci_high"])
    assert lo <= fit.slope <= hi  # t-interval around the estimate
    assert float(row["slope_ci_prompts_low"]) <= float(row["slope_ci_prompts_high"])
    for r in cap:  # each point's prompt-bootstrap interval holds it
        assert float(r["ci_low"]) <= float(r["acceptance"]) <= float(r["ci_high"])
    tok = _read(out / "tokens.csv")
    assert int(tok[0]["tokens"]) < int(tok[1]["tokens"]) < int(tok[2]["tokens"])
    alpha = [float(r["alpha"]) for r in _read(out / "alpha_n.csv")]
    assert all(0 <= a <= 1 for a in alpha) and np.all(np.diff(alpha) >= -1e-9)  # bound grows in n
    # n*(B) is the maximiser of the roofline speedup of the tabled alpha(n) (rounded to 6
    # decimals: S moves by ~1e-6, hence rtol 1e-4 and the near-tie allowance), with P_d the
    # adapter:6 row's parameters
    pt = draft_parameter_count(smol, smol.num_layers)
    pd = float(cap[-1]["parameters"])
    for r in _read(out / "width.csv"):
        s = R.batch_speedup(alpha, int(r["batch"]), pt, pd)
        n = int(r["n_star"])
        assert 1 <= n <= DS.QUICK["ns"] and s[n - 1] >= s.max() * (1 - 1e-5)
        np.testing.assert_allclose(float(r["speedup"]), s[n - 1], rtol=1e-4)
    assert "QUICK" in (out / "comparison.txt").read_text()
