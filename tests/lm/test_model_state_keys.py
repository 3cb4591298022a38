"""What a trace and a quantised draft depend on: dtype, context length, weights edited in place.

Each case failed silently before its fix:
- a trace recorded from a bfloat16 load was returned from the cache to a float32
  (default) request: the key held the files' fingerprint only;
- ``record_trace`` recorded positions past the model's context (live generation refused
  the same prompt);
- ``quant:TYPE`` drafts were memoised by the model's id: after an in-place edit of the
  target they kept quantising the old weights;
- and, with an error: ``quant:`` on a bfloat16 model failed inside numpy, and an
  ``lm:`` draft that is no model said "model must be ...", naming no draft.

A randomly initialised GPT-2 with SmolLM2's tokenizer stands in for a user's model.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectheory as stt
import spectheory.lm as lm
from spectheory.lm.quantised import quantised_model

SETTINGS = dict(prompts=(3,), max_new_tokens=3)


def _folder(smol, root, positions):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=49152, n_embd=32, n_layer=2, n_head=2, n_positions=positions)
    model = GPT2LMHeadModel(cfg)
    model.generation_config.eos_token_id = smol.tokenizer.eos_token_id
    model.save_pretrained(root)
    smol.tokenizer.save_pretrained(root)
    return str(root)


@pytest.fixture(scope="module")
def folder(smol, tmp_path_factory):
    return _folder(smol, tmp_path_factory.mktemp("gpt2_keys"), 256)


def test_a_bfloat16_trace_is_not_served_to_a_float32_request(folder, tmp_cache):
    settings = lm.TraceSettings(model=folder, drafts=("exit:1",), **SETTINGS)
    bf16 = lm.load_model(folder, dtype="bfloat16")
    f32 = lm.load_model(folder)
    assert settings.key(bf16) != settings.key()
    assert settings.key(f32) == settings.key()  # the default keeps the key it had
    lm.record_trace(settings, loaded=bf16, progress=False)  # fills the cache
    served = lm.record_trace(settings, progress=False)  # a float32 request
    fresh = lm.record_trace(settings, loaded=f32, cache=False, progress=False)
    np.testing.assert_array_equal(served.target_logits, fresh.target_logits)


def test_a_trace_past_the_model_context_is_refused(smol, tmp_path, tmp_cache):
    short = _folder(smol, tmp_path / "short", 24)
    settings = lm.TraceSettings(model=short, drafts=("exit:1",), prompts=(3,),
                                max_new_tokens=8)
    with pytest.raises(stt.InvalidParameterError,
                       match=r"prompt 3 .* exceeds the model's context of 24 positions"):
        lm.record_trace(settings, loaded=lm.load_model(short), cache=False, progress=False)


def test_the_quantised_draft_follows_weights_edited_in_place(folder):
    loaded = lm.load_model(folder)
    first = quantised_model(loaded, "Q8_0")
    assert quantised_model(loaded, "Q8_0") is first  # memoised while nothing changes
    w = loaded.model.transformer.h[0].mlp.c_fc.weight
    with torch.no_grad():
        w.mul_(3.0)
    again = quantised_model(loaded, "Q8_0")
    assert again is not first
    got = again.transformer.h[0].mlp.c_fc.weight.detach()
    # Q8_0 keeps 8 bits per block of 32: within 1% of the edited weights, not the old ones
    scale = float(w.detach().abs().max())
    assert float((got - w.detach()).abs().max()) < 0.01 * scale
    assert float((got - w.detach() / 3).abs().max()) > 0.3 * scale


def test_a_bfloat16_model_is_quantised(folder):
    bf16 = lm.load_model(folder, dtype="bfloat16")
    q = quantised_model(bf16, "Q8_0")
    assert q.transformer.h[0].mlp.c_fc.weight.dtype == torch.bfloat16


def test_an_lm_draft_that_is_no_model_is_named():
    with pytest.raises(stt.InvalidParameterError, match=r"draft 'lm:/nonexistent/model'"):
        lm.TraceSettings(drafts=("lm:/nonexistent/model",), **SETTINGS).key()
