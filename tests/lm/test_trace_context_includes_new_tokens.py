"""``record_trace`` refuses a prompt that fits the model's context but not with its
``max_new_tokens`` continuation.

Oracle: the documented rule, prompt tokens + max_new_tokens > max_position_embeddings is
refused.  The prompt's length is read from the refusal on a 24-position model, then a model
of exactly that many positions plus one is built: the prompt fits, the continuation of 8
tokens does not.  A tiny random GPT-2 (two layers) with SmolLM2's tokenizer (about 20 s,
for the GGUF tokenizer).
"""

import re

import pytest
import torch

import spectheory as stt
import spectheory.lm as lm
from spectheory.lm._loader import SMOLLM2, model_source


def _folder(tok, root, positions):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=49152, n_embd=16, n_layer=2, n_head=2, n_positions=positions)
    model = GPT2LMHeadModel(cfg)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.save_pretrained(root)
    tok.save_pretrained(root)
    return str(root)


def test_prompt_plus_new_tokens_past_the_context_is_refused(tmp_path, monkeypatch):
    from transformers import AutoTokenizer

    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path / "cache"))
    src = model_source(SMOLLM2)  # the embedded GGUF: its tokenizer only (no weights)
    tok = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    small = _folder(tok, tmp_path / "small", 24)
    settings = lm.TraceSettings(model=small, drafts=("exit:1",), prompts=(3,), max_new_tokens=8)
    with pytest.raises(stt.InvalidParameterError, match=r"has (\d+) tokens") as info:
        lm.record_trace(settings, loaded=lm.load_model(small), cache=False, progress=False)
    n = int(re.search(r"has (\d+) tokens", str(info.value)).group(1))
    assert n + 8 > 24
    fits = _folder(tok, tmp_path / "fits", n + 1)  # the prompt fits, its continuation not
    settings = lm.TraceSettings(model=fits, drafts=("exit:1",), prompts=(3,), max_new_tokens=8)
    with pytest.raises(stt.InvalidParameterError,
                       match=rf"prompt 3 .* exceeds the model's context of {n + 1} positions"):
        lm.record_trace(settings, loaded=lm.load_model(fits), cache=False, progress=False)
