"""The bug zoo on real model positions: the checker flags every bug, passes every correct verifier.

Each check runs at the checker's default settings (20,000 trials per row,
false-alarm rate alpha = 1e-6), on four real positions of SmolLM2 with its
early exit after 25 layers, chosen by a rule (the highest-entropy targets
among positions whose draft overlaps the target by 0.1 to 0.9), not by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

import spectheory as stt
from spectheory.sim.bugzoo import BUGS


@pytest.fixture(scope="module")
def positions(smol):
    from spectheory.lm import TraceSettings, record_trace

    settings = TraceSettings(prompts=(0, 6, 12), max_new_tokens=8, drafts=("exit:25",))
    trace = record_trace(settings, loaded=smol, cache=False, progress=False)
    p = stt.process_logits(trace.target_logits.astype(np.float64), 1.0)
    q = stt.process_logits(trace.draft_logits("exit:25"), 1.0)
    overlap = np.minimum(p, q).sum(axis=1)
    entropy = -(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=1)
    candidates = np.flatnonzero((overlap > 0.1) & (overlap < 0.9))
    assert candidates.size >= 4
    rows = candidates[np.argsort(-entropy[candidates])[:4]]
    return trace, rows


@pytest.mark.parametrize("bug", list(BUGS))
def test_every_bug_is_flagged(positions, bug):
    trace, rows = positions
    fn, n, sampling = BUGS[bug]
    report = stt.check_lossless(fn, trace, "exit:25", n=n, sampling=sampling, rows=rows, seed=0)
    assert report.lossy, report.verdict
    assert report.trials == 20_000 and report.alpha == 1e-6


@pytest.mark.parametrize(
    ("verifier", "n", "sampling"),
    [("sd", 1, "iid"), ("rrs", 4, "iid"), ("nss", 4, "iid"), ("naive", 4, "iid"),
     ("kseq", 4, "iid"), ("greedy", 4, "greedy"), ("spechub", 2, "greedy"),
     ("rrs_wor", 4, "without_replacement")],
)  # fmt: skip
def test_correct_verifiers_pass(positions, verifier, n, sampling):
    trace, rows = positions
    report = stt.check_lossless(verifier, trace, "exit:25", n=n, sampling=sampling, rows=rows)
    assert not report.lossy, report.verdict
    assert report.acceptance_interval[0] <= report.bound + 1e-12
