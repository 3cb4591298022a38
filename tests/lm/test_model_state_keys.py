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


@pytest.mark.model  # the key fingerprints the default target, the packaged SmolLM2
def test_an_lm_draft_that_is_no_model_is_named():
    with pytest.raises(stt.InvalidParameterError, match=r"draft 'lm:/nonexistent/model'"):
        lm.TraceSettings(drafts=("lm:/nonexistent/model",), **SETTINGS).key()


def test_weights_fingerprint_sees_an_edit_between_sampled_elements():
    """The fingerprint hashed 4,096 strided elements per tensor: an edit of one row of a
    large matrix (one token's output logit) kept it, hence the ``memory:`` name and the
    trace key, and record_trace served the unedited model's cached trace."""
    from spectheory.lm.fingerprint import weights_fingerprint

    net = torch.nn.Linear(32, 16384, bias=False)  # 524,288 elements: 1 in 128 was sampled
    before = weights_fingerprint(net)
    with torch.no_grad():
        net.weight[2, 5] += 1.0  # element 69, between the samples 0 and 128
    assert weights_fingerprint(net) != before


def test_a_corpus_is_not_served_to_another_model_of_the_same_name(tmp_cache):
    """The corpus cache was keyed by the model's name: another model under that name (a
    folder's weights replaced, a user-named model in memory) got the first one's samples."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from spectheory.lm.corpus import CorpusSettings, build_corpus

    V = 512
    vocab = {"<unk>": 0, "</s>": 1, **{f"w{i}": i for i in range(2, V)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="</s>")
    tok.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"

    def model(seed):
        torch.manual_seed(seed)
        cfg = LlamaConfig(vocab_size=V, hidden_size=32, intermediate_size=64,
                          num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                          eos_token_id=1)  # fmt: skip
        net = LlamaForCausalLM(cfg).eval()
        with torch.no_grad():
            net.lm_head.weight.mul_(300.0)  # peaked laws: the two models sample apart
        return lm.LoadedModel.from_model(net, tok, name="my-model")

    settings = CorpusSettings(doc_sequences=0, prompts=1, samples_per_prompt=1,
                              sampled_tokens=8)  # fmt: skip
    build_corpus(model(0), settings)
    got = build_corpus(model(1), settings).sequences[0]
    want = build_corpus(model(1), settings, cache=False).sequences[0]
    assert np.array_equal(got, want)


def test_a_trace_cached_under_the_older_weights_scheme_is_recorded_again(folder, tmp_cache):
    """Traces cached when the fingerprint sampled 4,096 elements a tensor hold a fingerprint
    that the full one never equals: recorded again and overwritten, not refused (the report
    would have stopped on every upgraded cache); a current-scheme mismatch is still refused."""
    from spectheory.lm.fingerprint import WEIGHTS_SCHEME
    from spectheory.lm.trace import trace_cache_path

    settings = lm.TraceSettings(model=folder, drafts=("exit:1",), **SETTINGS)
    f32 = lm.load_model(folder)
    first = lm.record_trace(settings, loaded=f32, progress=False)
    assert first.metadata["weights_scheme"] == WEIGHTS_SCHEME
    path = trace_cache_path(settings.key(f32))
    old = lm.load_trace(path)
    del old.metadata["weights_scheme"]
    old.metadata["weights_fingerprint"] = "0" * 64  # what the sampled scheme stored
    old.save(path)
    again = lm.record_trace(settings, loaded=f32, progress=False)
    assert again.metadata["weights_scheme"] == WEIGHTS_SCHEME
    np.testing.assert_array_equal(again.target_logits, first.target_logits)
    assert lm.load_trace(path).metadata["weights_scheme"] == WEIGHTS_SCHEME  # overwritten
    with torch.no_grad():
        next(f32.model.parameters()).add_(1.0)  # edited in memory: same key, other weights
    with pytest.raises(stt.TraceError, match="other weights in memory"):
        lm.record_trace(settings, loaded=f32, progress=False)


def test_the_key_follows_the_built_in_prompt_texts(monkeypatch):
    """Settings name built-in prompts by index: a package whose prompt set changed kept the
    key and served the traces of the old texts."""
    import spectheory.lm.prompts as prompts_mod

    settings = lm.TraceSettings(model="arrays:mine", drafts=("ngram:2",), **SETTINGS)
    before = settings.key()
    edited = list(prompts_mod.PROMPTS)
    edited[3] = (edited[3][0], edited[3][1] + " Answer briefly.")
    monkeypatch.setattr(prompts_mod, "PROMPTS", tuple(edited))
    assert settings.key() != before


def test_a_cache_entry_under_another_key_is_refused(folder, tmp_cache):
    """A trace copied or renamed into the cache was served by its file name alone, whatever
    settings it was recorded with."""
    from spectheory.lm.trace import trace_cache_path

    three = lm.TraceSettings(model=folder, drafts=("exit:1",), **SETTINGS)
    four = lm.TraceSettings(model=folder, drafts=("exit:1",), prompts=(3,), max_new_tokens=4)
    recorded = lm.record_trace(three, progress=False)
    trace_cache_path(four.key()).write_bytes(trace_cache_path(three.key()).read_bytes())
    with pytest.raises(stt.TraceError, match="holds the trace of key"):
        lm.record_trace(four, progress=False)
    assert lm.record_trace(three, progress=False).num_positions == recorded.num_positions
