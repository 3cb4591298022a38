"""The adapter pipeline on the model's device: sampling, the held-out table, CUDA against the CPU.

The CUDA test runs where CUDA is present (the GPU checks of
``benchmarks/gpu_checks.sh``); on the CPU it skips, and every other test here
runs.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

import spectheory as stt
from spectheory.lm import adapters as A
from spectheory.lm import draft_eval as E
from spectheory.lm._loader import LoadedModel, check_device, model_device
from spectheory.lm.corpus import CorpusSettings, build_corpus, training_prompts

LAYER = 4
TINY = CorpusSettings(max_len=64, doc_sequences=6, samples_per_prompt=0)
SAMPLED = CorpusSettings(max_len=64, doc_sequences=0, prompts=3, samples_per_prompt=2,
                         sampled_tokens=5, seed=7)  # fmt: skip
SETTINGS = A.TrainSettings(vocab=1024, steps=3, batch_size=2, lr=1e-3, validation=0.25, seed=3)
requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def test_check_device_accepts_the_cpu_and_names_what_it_refuses():
    assert check_device("cpu") == torch.device("cpu")
    for bad in ("tpu", "meta", "cpu:x"):
        with pytest.raises(stt.InvalidParameterError, match="device"):
            check_device(bad)
    if not torch.cuda.is_available():
        with pytest.raises(stt.InvalidParameterError, match="needs CUDA"):
            check_device("cuda")
    else:
        with pytest.raises(stt.InvalidParameterError, match="CUDA device"):
            check_device(f"cuda:{torch.cuda.device_count()}")


def test_sampled_continuations_are_seeded_cached_and_chat_formatted(smol, tmp_cache):
    corpus = build_corpus(smol, SAMPLED)
    assert corpus.sources == ("sampled",) * 6
    cached = list((tmp_cache / "corpus").glob("*.npz"))
    assert len(cached) == 1 and not cached[0].stem.endswith("-cuda")
    again = build_corpus(smol, SAMPLED)  # read back from the cache
    fresh = build_corpus(smol, SAMPLED, cache=False)  # sampled again with the same seed
    assert again.sha256 == corpus.sha256 == fresh.sha256
    other = build_corpus(smol, dataclasses.replace(SAMPLED, seed=8), cache=False)
    assert other.sha256 != corpus.sha256
    eos = set(np.atleast_1d(smol.model.generation_config.eos_token_id).tolist())
    prompts = training_prompts(3)
    for k, (seq, b) in enumerate(zip(corpus.sequences, corpus.loss_start.tolist())):
        answer = seq[b + 1 :].tolist()
        question = smol.tokenizer.decode(seq[: b + 1])
        assert prompts[k % 3] in question  # jobs run prompt by prompt, round by round
        assert 1 <= len(answer) <= 5
        # an answer ends where the model ends its turn, never later
        assert all(t not in eos for t in answer[:-1])


@pytest.fixture(scope="module")
def tiny_states(smol):
    corpus = build_corpus(smol, TINY, cache=False)
    return corpus, A.teacher_states(smol, corpus, [LAYER])


def test_held_out_table_round_trip_is_what_the_evaluation_replays(smol, tiny_states, tmp_cache):
    adapter = A.train_adapter(smol, tiny_states[1], LAYER, SETTINGS)
    table = E.held_out_table(smol, (1.0,), 4, prompts=(3, 12))
    path = tmp_cache / "held.npz"
    E.save_held_out(table, path)
    back = E.load_held_out(path)
    assert list(back) == [1.0] and len(back[1.0]) == 2
    for (ids, b), (ids2, b2) in zip(table[1.0], back[1.0]):
        assert b == b2 and np.array_equal(ids, ids2)
    direct = E.evaluate_adapter(smol, adapter, (1.0,), max_new_tokens=4, prompts=(3, 12))
    replayed = E.evaluate_adapter(smol, adapter, (1.0,), sequences=back)
    assert replayed.acceptance == direct.acceptance and replayed.positions == direct.positions
    np.testing.assert_array_equal(replayed.per_prompt[0], direct.per_prompt[0])
    with pytest.raises(stt.InvalidParameterError, match=r"no pairs for \[0.7\]"):
        E.evaluate_adapter(smol, adapter, (0.7,), sequences=back)
    bad_tables = {
        "non-empty": {},
        "no .ids, b. pairs": {1.0: []},
        "start 2 must be a position of its 2 ids": {1.0: [(np.array([1, 2]), 2)]},
        "start True": {1.0: [(np.array([1, 2]), True)]},
        "ids must be integers": {1.0: [([1.5, 2.0], 0)]},
        "temperature": {-1.0: [(np.array([1, 2]), 0)]},
    }
    for message, bad in bad_tables.items():
        with pytest.raises(stt.InvalidParameterError, match=message):
            E.save_held_out(bad, tmp_cache / "bad.npz")
    np.savez(tmp_cache / "empty.npz", x=np.zeros(1))
    with pytest.raises(stt.InvalidParameterError, match="no held-out table"):
        E.load_held_out(tmp_cache / "empty.npz")


def _cli(argv):
    from spectheory.cli import main

    return main(argv)


def test_cli_device_option_is_checked_before_the_model_loads(tmp_cache, capsys, monkeypatch):
    base = ["draft", "train", "--layer", str(LAYER), "--steps", "1", "--quiet"]
    assert _cli([*base, "--device", "tpu"]) == 2
    assert "--device" in capsys.readouterr().err
    assert _cli([*base, "--max-len", "10"]) == 2  # the corpus option the GPU run needed
    assert "max_len must be >= 48" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert _cli([*base, "--device", "cuda", "--no-eval"]) == 2
        assert "needs CUDA" in capsys.readouterr().err
    # a GPU device without --no-eval: the held-out trace is recorded on the CPU
    monkeypatch.setattr("spectheory.lm._loader.check_device", lambda d: torch.device("cuda"))
    assert _cli([*base, "--device", "cuda"]) == 2
    assert "--no-eval" in capsys.readouterr().err


def _on(loaded, device):
    model = copy.deepcopy(loaded.model).to(device)
    return LoadedModel(
        model=model,
        tokenizer=loaded.tokenizer,
        name=loaded.name,
        source=loaded.source,
        num_layers=loaded.num_layers,
        vocab_size=loaded.vocab_size,
    )


@requires_cuda
@pytest.mark.gpu
def test_cuda_pipeline_matches_the_cpu(smol, tiny_states, tmp_cache):
    gpu = _on(smol, "cuda")
    corpus, cpu_states = tiny_states
    gpu_states = A.teacher_states(gpu, corpus, [LAYER])
    assert gpu_states.hidden[LAYER][0].device.type == "cuda"
    for h, g in zip(cpu_states.hidden[LAYER], gpu_states.hidden[LAYER]):
        torch.testing.assert_close(g.cpu(), h, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(gpu_states.mass, cpu_states.mass, rtol=1e-3, atol=1e-4)
    cpu_adapter = A.train_adapter(smol, cpu_states, LAYER, SETTINGS)
    gpu_adapter = A.train_adapter(gpu, gpu_states, LAYER, SETTINGS)
    assert model_device(gpu_adapter.module).type == "cuda"
    assert torch.equal(gpu_adapter.vocab, cpu_adapter.vocab)
    for (k, v), (k2, w) in zip(
        cpu_adapter.module.state_dict().items(), gpu_adapter.module.state_dict().items()
    ):
        assert k == k2
        torch.testing.assert_close(w.cpu(), v, rtol=1e-3, atol=1e-4)
    meta, gmeta = cpu_adapter.metadata, gpu_adapter.metadata
    assert gmeta["validation_kl"] == pytest.approx(meta["validation_kl"], rel=1e-3)
    # a loss other than KL (float64 target rows, spectheory.torch.losses) trains on the GPU
    tv = A.train_adapter(gpu, gpu_states, LAYER, dataclasses.replace(SETTINGS, loss="tv"))
    assert tv.metadata["validation_loss"] < tv.metadata["validation_loss_initial"]
    # the CPU's held-out positions, evaluated on the GPU, give the CPU's acceptance
    table = E.held_out_table(smol, (1.0,), 4, prompts=(3, 12))
    ev_cpu = E.evaluate_adapter(smol, cpu_adapter, (1.0,), sequences=table)
    ev_gpu = E.evaluate_adapter(gpu, gpu_adapter, (1.0,), sequences=table)
    np.testing.assert_allclose(ev_gpu.per_prompt[0], ev_cpu.per_prompt[0], rtol=1e-3, atol=1e-4)
    # saved from the GPU, loaded on the CPU: the same weights
    path = A.save_adapter(gpu_adapter, tmp_cache / "gpu.safetensors")
    back = A.load_adapter(smol, path)
    for (k, v), (_, w) in zip(
        gpu_adapter.module.state_dict().items(), back.module.state_dict().items()
    ):
        assert torch.equal(v.cpu(), w), k
    # held-out continuations sampled on the GPU: the same prompts, encoded alike
    on_gpu = E.sampled_held_out_sequences(gpu, 1.0, 4, seed=1, prompts=(3, 12))
    on_cpu = E.sampled_held_out_sequences(smol, 1.0, 4, seed=1, prompts=(3, 12))
    for (g_ids, g_b), (c_ids, c_b) in zip(on_gpu, on_cpu):
        assert g_b == c_b and np.array_equal(g_ids[: g_b + 1], c_ids[: c_b + 1])
    # the GPU samples its corpus with its own generator, under its own cache key
    sampled = build_corpus(gpu, SAMPLED)
    assert [p.stem.endswith("-cuda") for p in (tmp_cache / "corpus").glob("*.npz")] == [True]
    assert len(sampled.sequences) == 6 and build_corpus(gpu, SAMPLED).sha256 == sampled.sha256


def test_paths_that_run_on_the_cpu_refuse_a_model_elsewhere(smol, tmp_cache):
    """A model on another device reached CPU tensors deep inside torch; now the entry refuses."""
    from spectheory.live import speculative_generate, target_generate
    from spectheory.lm import TraceSettings, measure_cost_ratio, record_trace
    from spectheory.lm.capacity import teacher_forced_hidden
    from spectheory.lm.quantised import quantised_model
    from spectheory.trees.lm import LMTreeModels

    away = _on(smol, "meta")  # no memory, no arithmetic: only its device differs
    ids = np.array([1, 2, 3])
    calls = {
        "live generation": lambda: speculative_generate(away, ids, max_new_tokens=2),
        "live generation ": lambda: target_generate(away, ids, max_new_tokens=2),
        "record_trace": lambda: record_trace(TraceSettings(prompts=(3,)), loaded=away),
        "measure_cost_ratio": lambda: measure_cost_ratio(away, 4),
        "quantised_model": lambda: quantised_model(away),
        "LMTreeModels": lambda: LMTreeModels(away, ids),
        "teacher_forced_hidden": lambda: next(teacher_forced_hidden(away, None)),
    }
    for what, call in calls.items():
        with pytest.raises(
            stt.InvalidParameterError, match=f"{what.strip()} runs the model on the CPU"
        ):
            call()


def test_multidraft_evaluation_takes_the_same_table(smol, tiny_states, tmp_cache):
    adapter = A.train_adapter(smol, tiny_states[1], LAYER, SETTINGS)
    table = E.held_out_table(smol, (1.0,), 4, prompts=(3, 12))
    kw = dict(temperatures=(1.0,), ns=(1, 2), laws=("iid",), max_new_tokens=4, prompts=(3, 12))
    direct = E.evaluate_multidraft(smol, {"a": adapter}, **kw)
    on_table = {k: v for k, v in kw.items() if k != "prompts"}  # the table holds its pairs
    from_table = E.evaluate_multidraft(smol, {"a": adapter}, **on_table, sequences=table)
    for n in (1, 2):
        assert from_table.value("a", 1.0, n) == direct.value("a", 1.0, n)
    with pytest.raises(stt.InvalidParameterError, match="no pairs for"):
        E.evaluate_multidraft(smol, {"a": adapter}, **{**on_table, "temperatures": (0.7,)},
                              sequences=table)  # fmt: skip
    with pytest.raises(stt.InvalidParameterError, match="table"):
        E.evaluate_adapter(smol, adapter, (1.0,), sequences=[1, 2])


def test_a_corpus_sampled_in_another_dtype_is_not_read_from_the_float32_key(smol, tmp_cache):
    """The cache key named the settings only: a bfloat16 model got the float32 model's tokens."""
    build_corpus(smol, SAMPLED)
    half = _on(smol, "cpu")
    half.model.to(torch.bfloat16)
    build_corpus(half, SAMPLED)
    names = sorted(p.name for p in (tmp_cache / "corpus").glob("*.npz"))
    assert len(names) == 2 and sum(n.endswith("-bfloat16.npz") for n in names) == 1, names


def test_a_table_refuses_a_prompt_selection_it_would_ignore(smol, tiny_states, tmp_cache):
    adapter = A.train_adapter(smol, tiny_states[1], LAYER, SETTINGS)
    table = {1.0: [(np.array([1, 2, 3, 4]), 1)]}
    with pytest.raises(stt.InvalidParameterError, match=r"prompts=.*own pairs"):
        E.evaluate_adapter(smol, adapter, (1.0,), prompts=(3,), sequences=table)
    assert E.evaluate_adapter(smol, adapter, (1.0,), sequences=table).positions == (3,)
