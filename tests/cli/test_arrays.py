"""Logits from another framework through the command line: replay and check on the array layout."""

from __future__ import annotations

import csv

import numpy as np

import spectheory.lm as lm
from spectheory.cli import main


def test_replay_and_check_run_on_an_array_file(tmp_path, capsys):
    rng = np.random.default_rng(7)
    t = rng.standard_normal((6, 11)).astype(np.float32)
    d = (t + 0.5 * rng.standard_normal((6, 11))).astype(np.float32)
    path = lm.save_arrays(tmp_path / "mine.safetensors", t, {"small": d}, name="theirs")
    out = tmp_path / "replay.csv"
    argv = ["replay", "--trace", str(path), "--n", "1", "--samplings", "iid", "--verifiers", "sd"]
    assert main([*argv, "--trials", "50", "--out", str(out), "--quiet"]) == 0
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert {r["draft"] for r in rows} == {"logits:small"} and len(rows) == 6
    p = np.exp(t - t.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    q = np.exp(d - d.max(1, keepdims=True))
    q /= q.sum(1, keepdims=True)
    want = np.minimum(p, q).sum(1)
    got = np.array([float(r["bound"]) for r in sorted(rows, key=lambda r: int(r["position"]))])
    np.testing.assert_allclose(got, want, rtol=1e-5)  # float32 logits: see test_trace_files
    capsys.readouterr()
    code = main(["check", "sd", "--trace", str(path), "--on", "logits:small", "--quiet"])
    assert code == 0, capsys.readouterr()
