"""Tests of the quantised self-draft (spectheory.lm.quantised, 'quant:TYPE')."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectheory as stt
import spectheory.lm as lm
from spectheory.lm import quantised as Q


@pytest.fixture(scope="module")
def q4(smol):
    return Q.quantised_model(smol, "Q4_0")


def test_available_types_and_bits():
    types = Q.quantisable_types()
    assert {"Q4_0", "Q4_1", "Q5_0", "Q8_0"} <= set(types)
    assert Q.bits_per_weight("Q4_0") == 4.5 and Q.bits_per_weight("Q4_1") == 5.0
    with pytest.raises(stt.InvalidParameterError, match="'Q9_9'"):
        Q.bits_per_weight("Q9_9")
    for name in ("Q2_K", "Q3_K"):  # de-quantisation only in this gguf
        if name not in types:
            with pytest.raises(stt.InvalidParameterError, match=name):
                Q.requantise(np.zeros((1, 256), np.float32), name)


@pytest.mark.parametrize("qtype", ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"])
def test_rounding_error_within_the_format_step(qtype):
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.standard_normal((8, 128)),
            rng.standard_normal((4, 128)) * 1e-3 + 0.5,  # a shifted block (affine types)
            np.tile([-1.0] + [1.0] * 31, (1, 4)),  # the clipped code: -m maps to (2^{b-1}-1) d
        ]
    ).astype(np.float32)
    y = Q.requantise(x, qtype)
    err = np.abs(y.astype(np.float64) - x)
    bound = Q.step_bound(x, qtype)
    assert y.shape == x.shape and np.all(err <= bound)
    assert err.max() > 0  # it really rounds
    # and the bound is not loose by more than the format's factor
    assert np.quantile(err / bound, 0.999) > 0.25
    with pytest.raises(stt.InvalidParameterError, match="multiple of 32"):
        Q.requantise(np.zeros((2, 40), np.float32), qtype)


def test_quantised_copy_of_the_target(smol, q4):
    assert q4 is Q.quantised_model(smol, "Q4_0")  # memoised
    w0 = smol.model.model.layers[3].mlp.up_proj.weight.detach().numpy()
    w1 = q4.model.layers[3].mlp.up_proj.weight.detach().numpy()
    assert not np.array_equal(w0, w1)
    assert np.all(np.abs(w1.astype(np.float64) - w0) <= Q.step_bound(w0, "Q4_0"))
    # norms stay, tied head and embedding stay tied
    assert torch.equal(q4.model.norm.weight, smol.model.model.norm.weight)
    assert q4.lm_head.weight.data_ptr() == q4.model.embed_tokens.weight.data_ptr()
    ratio = Q.memory_ratio(smol, "Q4_0")
    assert 4.5 / 16 < ratio < 0.3
    with pytest.raises(stt.InvalidParameterError, match=r"Q2_K|quantisation type"):
        Q.quantised_model(smol, "Q2_K" if "Q2_K" not in Q.quantisable_types() else "BOGUS")


def test_quant_draft_in_a_trace(smol, q4, tmp_cache):
    settings = lm.TraceSettings(prompts=(12,), max_new_tokens=4, drafts=("quant:Q4_0", "exit:8"))
    trace = lm.record_trace(settings, loaded=smol, progress=False)
    ids = torch.as_tensor(np.concatenate([trace.prompt_tokens, trace.tokens[:-1]])[None])
    with torch.no_grad():
        ref = q4(input_ids=ids).logits[0, trace.prompt_tokens.size - 1 :].numpy()
    np.testing.assert_allclose(trace.draft_logits("quant:Q4_0"), ref, atol=0.05, rtol=0.01)
    beta = lm.acceptance_profile(trace, "quant:Q4_0", 1.0).values
    exit8 = lm.acceptance_profile(trace, "exit:8", 1.0).values
    assert np.all(beta <= 1) and beta.mean() > exit8.mean()
    cr = lm.measure_cost_ratio(smol, "quant:Q4_0", repeats=2, context=8, warmup=0)
    assert cr.draft == "quant:Q4_0" and cr.layer == smol.num_layers
