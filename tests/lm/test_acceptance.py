"""Tests of spectheory.lm.acceptance on the real SmolLM2 (session fixture ``smol``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

import spectheory as stt
import spectheory.lm as lm
from spectheory.lm.acceptance import (
    acceptance_profile,
    capacity_law,
    capacity_profile,
    draft_parameter_count,
    measure_cost_ratio,
)

SMALL = lm.TraceSettings(
    prompts=(3, 12, 20), max_new_tokens=6, drafts=("exit:8", "exit:20", "ngram:3")
)


@pytest.fixture(scope="module")
def small_trace(smol):
    return lm.record_trace(SMALL, loaded=smol, cache=False, progress=False)


@pytest.mark.parametrize("draft", ["exit:8", "exit:20", "ngram:3"])
@pytest.mark.parametrize("temperature", [0.7, 1.0])
def test_profile_is_sum_min_of_the_trace_logits(small_trace, draft, temperature):
    prof = acceptance_profile(small_trace, draft, temperature)
    assert prof.prompt_ids == (3, 12, 20)
    assert sum(b.size for b in prof.beta) == small_trace.num_positions
    for i in range(small_trace.num_positions):
        p = softmax(small_trace.target_logits[i].astype(np.float64) / temperature)
        if draft.startswith("ngram"):
            q = lm.ngram_distribution(small_trace.context(i), small_trace.vocab_size, 3)
            q = q ** (1 / temperature) / np.sum(q ** (1 / temperature))
        else:
            q = softmax(small_trace.exit_logits[draft][i].astype(np.float64) / temperature)
        assert prof.values[i] == pytest.approx(np.minimum(p, q).sum(), abs=1e-12)
    assert 0 < prof.mean < 1


def test_greedy_profile_is_argmax_agreement(small_trace):
    prof = acceptance_profile(small_trace, "exit:20", 0)
    agree = small_trace.target_logits.argmax(1) == small_trace.exit_logits["exit:20"].argmax(1)
    np.testing.assert_array_equal(prof.values, agree.astype(float))


def test_capacity_profile_matches_acceptance_profile(smol, small_trace):
    cap = capacity_profile(smol, small_trace, temperatures=(0.7, 1.0), layers=(8, 20))
    assert cap.acceptance.shape == (2, 2) and cap.positions.sum() == small_trace.num_positions
    for m, T in enumerate((0.7, 1.0)):
        for k, L in enumerate((8, 20)):
            ref = acceptance_profile(small_trace, f"exit:{L}", T)
            # The trace stores float16 logits (relative rounding 2^-11, |z| < 40, so
            # logit errors < 0.02 and probability ratios within exp(+-0.04/T));
            # the teacher-forced pass recomputes float32 logits without a cache.
            # Each beta_t then moves by < 0.03; the means by < 0.01.
            assert cap.acceptance[m, k] == pytest.approx(ref.mean, abs=0.01)
            per = np.array([b.mean() for b in ref.beta])
            np.testing.assert_allclose(cap.per_prompt[m, k], per, atol=0.02)
    assert cap.parameters.tolist() == [
        draft_parameter_count(smol, 8),
        draft_parameter_count(smol, 20),
    ]


def test_teacher_forced_target_matches_the_recorded_logits(smol, small_trace):
    import torch

    from spectheory.lm.acceptance import teacher_forced_hidden

    rows = []
    with torch.no_grad():
        for _, hs in teacher_forced_hidden(smol, small_trace):
            rows.append(smol.model.lm_head(hs[-1]).numpy())
    z = np.concatenate(rows)
    # float16 storage: |error| <= 2^-11 |z| + float32 recomputation noise
    np.testing.assert_allclose(
        z, small_trace.target_logits.astype(np.float32), rtol=2e-3, atol=2e-2
    )


def test_draft_parameter_count(smol):
    emb = 49152 * 576
    per_layer = (draft_parameter_count(smol, 12) - draft_parameter_count(smol, 2)) / 10
    assert draft_parameter_count(smol, 30) == sum(p.numel() for p in smol.model.parameters())
    assert draft_parameter_count(smol, 1) == emb + per_layer + 576  # tied head counted once
    assert per_layer == 3 * 576 * 1536 + 2 * 576 * 576 + 2 * 576 * 192 + 2 * 576


def test_capacity_law_fits(smol, small_trace):
    law = capacity_law(
        smol, small_trace, temperatures=(1.0,), layers=(4, 10, 16, 22, 28), n_boot=200
    )
    fit = law.fits_parameters[1.0]
    assert fit.n == 5 and fit.slope > 0  # deeper exits agree more with the target
    assert np.all(np.diff(law.profile.parameters) > 0)
    text = law.comparison_text()
    assert "per decade" in text and "0.07..0.09" in text
    # the text names the model it measured and its own embedding size, not constants
    assert smol.name in text and "28.3M-parameter embedding" in text
    assert law.profile.embedding_parameters == 49152 * 576


def test_cost_ratio_is_measured(smol):
    r = measure_cost_ratio(smol, 10, repeats=5, context=16, warmup=1)
    assert r.device == "cpu" and r.repeats == 5 and r.layer == 10
    assert r.t_draft > 0 and r.t_target > 0 and 0 < r.c == pytest.approx(r.t_draft / r.t_target)
    # the shallow draft really runs 10 of 30 layers: it is faster than the target
    assert r.c < 1


def test_errors(smol, small_trace):
    with pytest.raises(
        stt.InvalidParameterError, match=r"temperature must be finite and >= 0; got -1"
    ):
        acceptance_profile(small_trace, "exit:8", -1)
    with pytest.raises(stt.InvalidParameterError, match=r"'exit:9' is not in this trace"):
        acceptance_profile(small_trace, "exit:9", 1.0)
    with pytest.raises(stt.InvalidParameterError, match=r"in \[1, 30\); got 30 in layers"):
        capacity_profile(smol, small_trace, layers=(5, 30))
    with pytest.raises(stt.InvalidParameterError, match=r"layer must be < 30"):
        measure_cost_ratio(smol, 30)
