"""Live generation with the ``optimal`` verifier on the real SmolLM2 target and an early-exit draft.

Oracles as in tests/live/test_generate.py: at temperature 0 the output equals
target-only greedy generation token for token; sampled at T = 1 with i.i.d.
multi-draft nodes, the pooled randomised PIT and the acceptance bound
(:func:`spectheory.live.check_live_lossless`, false-alarm rate 1e-6) must find
the run consistent with the target's law.  The multi-draft nodes run the
coins reference of ``optimal`` on the live ``p`` and ``q`` rows (V = 49,152),
whose tokens equal those of the numba kernel and the torch form for the same
uniforms (tests/torch/test_optimal.py).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from spectheory.live import (
    chat_prompt_ids,
    check_live_lossless,
    speculative_generate,
    target_generate,
)
from spectheory.lm import PROMPTS

ALPHA = 1e-6


@pytest.fixture(scope="module")
def prompt(smol):
    return chat_prompt_ids(smol, PROMPTS[12][1])


def test_greedy_optimal_equals_target(smol, prompt):
    want = target_generate(smol, prompt, max_new_tokens=6, temperature=0).tokens
    res = speculative_generate(
        smol, prompt, max_new_tokens=6, temperature=0, mode="multi", n=3, gamma=2,
        verifier="optimal", draft="exit:22",
    )  # fmt: skip
    assert res.tokens.tolist() == want.tolist()
    assert res.settings["verifier"] == "optimal" and res.settings["sampling"] == "iid"


def test_sampled_optimal_is_lossless(smol, prompt):
    res = speculative_generate(
        smol, prompt, max_new_tokens=30, temperature=1.0, mode="multi", n=3, gamma=2,
        verifier="optimal", draft="exit:25", seed=21, stop_at_eos=False,
    )  # fmt: skip
    assert res.num_tokens == 30
    assert (res.node_drafts >= 2).any()  # the optimal plan ran on multi-draft nodes
    assert res.accepted.sum() > 0 and res.node_hit.any()
    report = check_live_lossless(res, alpha=ALPHA)
    assert not report.lossy, report.verdict
    assert np.all(res.target_probs[np.arange(res.num_tokens), res.tokens] > 0)
