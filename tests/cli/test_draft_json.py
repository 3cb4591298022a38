"""`spectheory draft evaluate` prints standard JSON (no NaN), without running a model."""

from __future__ import annotations

import json
import types

import numpy as np

from spectheory.cli import ExitCode, main
from spectheory.lm.draft_eval import AdapterEvaluation


def _no_nan(token):
    raise ValueError(f"not JSON: {token}")


def test_quantised_evaluation_prints_strict_json(monkeypatch, capsys):
    # raw_exit is NaN for quant:TYPE (no exit to compare with); json.dumps wrote `NaN`,
    # which jq, JavaScript and every strict parser reject.
    import spectheory.lm._loader as loader
    import spectheory.lm.draft_eval as draft_eval
    import spectheory.lm.quantised as quantised

    ev = AdapterEvaluation(
        temperatures=(1.0,), acceptance=(0.7,), raw_exit=(float("nan"),), coverage=(1.0,),
        positions=(4,), per_prompt=(np.array([[2.0, 3.0], [0.8, 1.0]]),),
    )  # fmt: skip
    monkeypatch.setattr(loader, "load_model", lambda *a, **k: types.SimpleNamespace())
    monkeypatch.setattr(draft_eval, "evaluate_quantised", lambda *a, **k: ev)
    monkeypatch.setattr(quantised, "memory_ratio", lambda *a, **k: 0.3)
    code = main(["draft", "evaluate", "quant:Q4_0", "--no-cost", "--temperatures", "1"])
    assert code == ExitCode.OK
    out = json.loads(capsys.readouterr().out, parse_constant=_no_nan)
    row = out["held_out"]["T=1"]
    assert row["raw_exit"] is None and row["acceptance"] == 0.7 and row["positions"] == 4
