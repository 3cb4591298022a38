"""benchmarks/train_adapter_gpu.py run end to end on the CPU with the real model and tiny settings.

What the script hands back must be what it trained: the best variant's pieces join to an
adapter file whose SHA-256 the summary states and that loads with every checksum; a variant
that the time budget leaves out is listed as skipped, never silently dropped.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from spectheory.lm import adapters as A
from spectheory.lm import draft_eval as E

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "train_adapter_gpu.py"
TINY = ["--device", "cpu", "--steps", "2", "--batch-size", "2", "--doc-sequences", "4",
        "--prompts", "2", "--samples-per-prompt", "1", "--sampled-tokens", "4", "--vocab", "512",
        "--max-len", "64"]  # fmt: skip


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("train_adapter_gpu", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture()
def held_out(smol, tmp_cache):
    path = tmp_cache / "held.npz"
    E.save_held_out(E.held_out_table(smol, (1.0,), 4, prompts=(3, 12)), path)
    return path


def test_the_best_variant_comes_back_whole_and_verified(
    script, smol, held_out, tmp_path, monkeypatch
):
    monkeypatch.setattr("spectheory.lm._loader.load_model", lambda **kw: smol)
    out = tmp_path / "out"
    argv = ["--held-out", str(held_out), "--out", str(out), "--variants", "4:1:kl", "4:1:tv"]
    assert script.main([*argv, *TINY, "--piece-mb", "1"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    rows = {r["variant"]: r for r in summary["variants"]}
    assert set(rows) == {"4:1:kl", "4:1:tv"} and summary["corpus"]["sequences"] == 6
    best = summary["best"]
    means = {k: r["mean_acceptance"] for k, r in rows.items()}
    assert best["variant"] == max(means, key=means.get)
    assert len(best["pieces"]) > 1 and not (out / "best.safetensors").exists()
    blob = b"".join((out / name).read_bytes() for name in best["pieces"])
    assert hashlib.sha256(blob).hexdigest() == best["sha256"] and len(blob) == best["bytes"]
    joined = tmp_path / "best.safetensors"
    joined.write_bytes(blob)
    adapter = A.load_adapter(smol, joined)
    assert adapter.metadata["loss"] == best["variant"].split(":", 2)[2]
    held = adapter.metadata["held_out"]["T=1"]
    assert held["acceptance"] == rows[best["variant"]]["held_out"]["T=1"]["acceptance"]
    # evaluated again from the file: the acceptance the summary reports
    again = E.evaluate_adapter(smol, adapter, (1.0,), sequences=E.load_held_out(held_out))
    assert again.acceptance[0] == pytest.approx(held["acceptance"], rel=1e-12)


def test_variants_past_the_budget_are_listed_as_skipped(
    script, smol, held_out, tmp_path, monkeypatch
):
    monkeypatch.setattr("spectheory.lm._loader.load_model", lambda **kw: smol)
    out = tmp_path / "out"
    argv = ["--held-out", str(held_out), "--out", str(out), "--variants", "4:1:kl", "4:2:kl"]
    assert script.main([*argv, *TINY, "--budget", "0"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert [r.get("skipped") for r in summary["variants"]] == ["time budget"] * 2
    assert "best" not in summary and list(out.iterdir()) == [out / "summary.json"]
