"""The means ``spectheory replay`` and ``sweep`` print: configurations without any row are named."""

from __future__ import annotations

import numpy as np

from spectheory.cli import main


def test_configurations_without_rows_are_named(tmp_path, capsys):
    """At T = 0 the draft is one-hot: no position has the two tokens that two drafts without
    replacement or two greedy drafts need, so those configurations have no row.  The table
    and the means left them out without a word; the summary must name them (and only
    them), for replay and for sweep."""
    from spectheory.lm import Trace
    from spectheory.lm.trace import FORMAT_VERSION

    rng = np.random.default_rng(0)
    z = rng.standard_normal((4, 30))
    trace = Trace(
        target_logits=z.astype(np.float16),
        exit_logits={"exit:1": (z + rng.standard_normal((4, 30))).astype(np.float16)},
        tokens=rng.integers(0, 30, 4), prompt_ids=np.array([0, 0, 1, 1]),
        steps=np.array([0, 1, 0, 1]), prompt_tokens=np.array([1, 2]),
        prompt_offsets=np.array([0, 1, 2]),
        metadata={"format": FORMAT_VERSION, "prompt_order": [0, 1],
                  "settings": {"drafts": ["exit:1"]}},
    )  # fmt: skip
    path = str(trace.save(tmp_path / "t.safetensors"))
    common = ["--temperatures", "0", "1", "--n", "1", "2", "--verifiers", "optimal",
              "--trials", "10", "-q"]  # fmt: skip
    assert main(["replay", "--trace", path, *common, "--out", str(tmp_path / "r.csv")]) == 0
    out = capsys.readouterr().out
    want = ("no rows (no position has the n tokens of draft support the law needs): "
            "exit:1, T = 0: n = 2 without_replacement, n = 2 greedy")
    assert want in out.splitlines()
    assert "T = 1:" not in out  # T = 1 has every configuration
    shards = tmp_path / "shards"
    assert main(["trace", "shard", "--trace", path, "--out", str(shards)]) == 0
    capsys.readouterr()
    argv = ["sweep", "--shards", str(shards), *common, "--no-cache", "--out", str(tmp_path / "s")]
    assert main(argv) == 0
    assert want in capsys.readouterr().out.splitlines()
