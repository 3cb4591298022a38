"""Tests of the trained early-exit drafts (spectheory.lm.adapters, corpus, 'adapter:L', CLI)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectheory as stt
import spectheory.lm as lm
from spectheory.lm import adapters as A
from spectheory.lm import draft_eval as E
from spectheory.lm.corpus import CorpusSettings, build_corpus, held_out_overlap

TINY = CorpusSettings(max_len=64, doc_sequences=6, samples_per_prompt=0)
LAYER = 4


@pytest.fixture(scope="module")
def tiny(smol):
    corpus = build_corpus(smol, TINY, cache=False)
    return corpus, A.teacher_states(smol, corpus, [LAYER])


@pytest.fixture(scope="module")
def trained(smol, tiny):
    settings = A.TrainSettings(vocab=1024, steps=4, batch_size=2, lr=1e-3, validation=0.25, seed=3)
    return A.train_adapter(smol, tiny[1], LAYER, settings)


def test_corpus_is_deterministic_chat_formatted_and_held_out(smol, tiny):
    corpus, _ = tiny
    again = build_corpus(smol, TINY, cache=False)
    assert again.sha256 == corpus.sha256 and len(corpus.sequences) == 6
    assert held_out_overlap() == ()
    start = smol.tokenizer.encode("<|im_start|>assistant\n")
    for seq, b in zip(corpus.sequences, corpus.loss_start.tolist()):
        assert seq.size <= 64
        # the last prompt token closes the assistant header: the loss covers only the answer
        assert seq[b - len(start) + 1 : b + 1].tolist() == start
    sizes = [s.size - 1 - b for s, b in zip(corpus.sequences, corpus.loss_start)]
    assert corpus.num_loss_tokens == sum(sizes)
    # training reads one position more per sequence (its last); the CLI reports both counts
    states = tiny[1]
    assert states.num_positions == corpus.num_loss_tokens + len(corpus.sequences)
    trained = sum(s.size - b for s, b in zip(corpus.sequences, corpus.loss_start))
    assert states.num_positions == trained
    with pytest.raises(stt.InvalidParameterError, match="max_len"):
        CorpusSettings(max_len=10)


def test_training_prompts_are_many_distinct_balanced_and_held_out():
    from spectheory.lm.corpus import TRAINING_PROMPTS, training_prompts
    from spectheory.lm.prompts import PROMPTS
    from spectheory.lm.training_prompts import _by_category, generated_prompts

    every = training_prompts()
    assert every[: len(TRAINING_PROMPTS)] == TRAINING_PROMPTS
    assert len(every) == len(set(every)) > 300
    assert not set(every) & {p for _, p in PROMPTS}
    assert generated_prompts() == generated_prompts()  # a pure function (seeded numbers)
    # round-robin: any prefix of the generated list draws on every category
    groups = [set(g) for g in _by_category()]
    head = generated_prompts()[: 2 * len(groups)]
    assert all(any(p in g for p in head) for g in groups)
    assert training_prompts(5) == TRAINING_PROMPTS[:5]
    # the prompt count enters the cache key of the sampled continuations
    assert CorpusSettings(prompts=5).key() != CorpusSettings().key()
    with pytest.raises(stt.InvalidParameterError, match="prompts"):
        CorpusSettings(prompts=0)


def test_initial_adapters_reproduce_the_raw_exits(smol):
    ids = torch.tensor([[1, 504, 3287, 314, 253, 600, 700, 12, 99]])
    pos = torch.arange(ids.shape[1])[None]
    with torch.no_grad():
        hs = smol.model(ids, output_hidden_states=True).hidden_states
        layer = A.init_adapter(smol, LAYER, "layer")  # a copy of layer L + 1
        torch.testing.assert_close(
            layer.subset_logits(hs[LAYER], pos), lm.early_exit_logits(smol.model, hs, LAYER + 1)
        )
        linear = A.init_adapter(smol, LAYER, "linear")  # h + 0 h: exactly exit:L
        assert torch.equal(
            linear.subset_logits(hs[LAYER], pos), lm.early_exit_logits(smol.model, hs, LAYER)
        )
        # token-by-token with the adapter's own cache = one pass over the sequence
        cache, parts = {}, []
        for a, b in ((0, 5), (5, 6), (6, 9)):
            parts.append(layer.subset_logits(hs[LAYER][:, a:b], pos[:, a:b], cache))
        # (float32 sums in another order: logits of size ~20 agree to 1e-4)
        torch.testing.assert_close(
            torch.cat(parts, 1), layer.subset_logits(hs[LAYER], pos), atol=1e-4, rtol=1e-4
        )


def test_vocabulary_subset_and_full_logits(smol):
    assert A.frequency_vocab(np.array([0.2, 0.2, 0.5, 0.1]), 2).tolist() == [0, 2]
    vocab = np.arange(0, 4000, 4)
    ad = A.init_adapter(smol, LAYER, "linear", vocab=vocab)
    h = torch.randn(1, 3, 576)
    z = ad.subset_logits(h, torch.arange(3)[None])
    full = ad.full_logits(z)
    assert full.shape == (1, 3, smol.vocab_size)
    assert torch.isinf(full[..., 1]).all() and torch.equal(full[..., vocab], z)
    ref = A.init_adapter(smol, LAYER, "linear").subset_logits(h, torch.arange(3)[None])
    torch.testing.assert_close(z, ref[..., vocab])
    with pytest.raises(stt.InvalidParameterError, match="sorted"):
        A.init_adapter(smol, LAYER, "linear", vocab=[5, 3])
    with pytest.raises(stt.InvalidParameterError, match="arch"):
        A.init_adapter(smol, LAYER, "mlp")
    with pytest.raises(stt.InvalidParameterError, match=r"at most 29.*layer 29, depth 1"):
        A.init_adapter(smol, 29)
    with pytest.raises(stt.InvalidParameterError, match="layer 28, depth 2"):
        A.init_adapter(smol, 28, depth=2)
    with pytest.raises(stt.InvalidParameterError, match="depth must be 1"):
        A.init_adapter(smol, LAYER, "linear", depth=2)
    with pytest.raises(stt.InvalidParameterError, match="depth"):
        A.TrainSettings(depth=0)


def test_deeper_adapters_start_as_the_deeper_exit_and_save_and_load(smol, tmp_path):
    ids = torch.tensor([[1, 504, 3287, 314, 253, 600]])
    pos = torch.arange(ids.shape[1])[None]
    with torch.no_grad():
        hs = smol.model(ids, output_hidden_states=True).hidden_states
        ad = A.init_adapter(smol, LAYER, "layer", depth=3)  # copies of layers L+1 .. L+3
        torch.testing.assert_close(
            ad.subset_logits(hs[LAYER], pos), lm.early_exit_logits(smol.model, hs, LAYER + 3)
        )
        cache, parts = {}, []  # one cache per layer of the stack
        for a, b in ((0, 4), (4, 6)):
            parts.append(ad.subset_logits(hs[LAYER][:, a:b], pos[:, a:b], cache))
        assert sorted(cache) == [0, 1, 2]
        torch.testing.assert_close(
            torch.cat(parts, 1), ad.subset_logits(hs[LAYER], pos), atol=1e-4, rtol=1e-4
        )
    path = A.save_adapter(ad, tmp_path / "deep.safetensors")
    back = A.load_adapter(smol, path)
    assert back.depth == 3 and back.metadata["depth"] == 3
    assert back.weights_sha256() == ad.weights_sha256()
    n_module = sum(p.numel() for p in ad.module.parameters())
    assert lm.draft_parameter_count(smol, ad) == lm.draft_parameter_count(smol, LAYER) + n_module


def test_training_is_reproducible_and_lowers_the_kl(smol, tiny, trained):
    states = tiny[1]
    settings = A.TrainSettings(**trained.metadata["settings"])
    again = A.train_adapter(smol, states, LAYER, settings)
    for (k, v), (k2, v2) in zip(
        trained.module.state_dict().items(), again.module.state_dict().items()
    ):
        assert k == k2 and torch.equal(v, v2)
    assert again.weights_sha256() == trained.weights_sha256()
    reseeded = A.TrainSettings(**{**settings.__dict__, "seed": 4})
    other = A.train_adapter(smol, states, LAYER, reseeded)
    assert other.weights_sha256() != trained.weights_sha256()
    # training lowers the KL on the positions it was trained on
    untrained = A.init_adapter(smol, LAYER, "layer", vocab=trained.vocab.numpy())
    every = list(range(len(states.final)))
    assert A.mean_kl(trained, states, every) < A.mean_kl(untrained, states, every)
    meta = trained.metadata
    assert meta["validation_sequences"] == 2 and meta["train_tokens"] > 0
    assert meta["corpus_sha256"] == tiny[0].sha256
    with pytest.raises(stt.InvalidParameterError, match="layers"):
        A.train_adapter(smol, states, LAYER + 1, settings)
    with pytest.raises(stt.InvalidParameterError, match="lr"):
        A.TrainSettings(lr=0)


def test_save_load_roundtrip_and_corruption(smol, trained, tmp_path):
    path = A.save_adapter(trained, tmp_path / "a.safetensors", extra={"note": "x"})
    back = A.load_adapter(smol, path)
    assert back.weights_sha256() == trained.weights_sha256()
    assert back.metadata["note"] == "x" and back.metadata["layer"] == LAYER
    assert A.adapter_fingerprint(path) == trained.weights_sha256()
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0xFF  # a byte inside the last tensor's data
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(bytes(raw))
    with pytest.raises(stt.TraceError, match=r"bad\.safetensors.*checksum"):
        A.load_adapter(smol, bad)
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(path.read_bytes()[:200])
    with pytest.raises(stt.TraceError, match=r"cut\.safetensors"):
        A.load_adapter(smol, cut)
    from safetensors.numpy import save_file

    save_file({"x": np.zeros(2)}, str(tmp_path / "plain.safetensors"))
    with pytest.raises(stt.TraceError, match="not a spectheory adapter"):
        A.load_adapter(smol, tmp_path / "plain.safetensors")


def test_adapter_draft_in_a_trace(smol, trained, tmp_cache):
    settings = lm.TraceSettings(prompts=(3,), max_new_tokens=4, drafts=(f"adapter:{LAYER}",))
    with pytest.raises(stt.TraceError, match=f"spectheory draft train --layer {LAYER}"):
        settings.key()
    A.save_adapter(trained, A.adapter_path(LAYER))
    key = settings.key()
    trace = lm.record_trace(settings, loaded=smol, progress=False)
    assert trace.metadata["adapter_weights"] == {f"adapter:{LAYER}": trained.weights_sha256()}
    z = trace.draft_logits(f"adapter:{LAYER}")
    # the recorded logits are the adapter's on the teacher-forced sequence
    prompt = trace.prompt_tokens
    ids = torch.as_tensor(np.concatenate([prompt, trace.tokens[:-1]])[None])
    with torch.no_grad():
        hs = smol.model(ids, output_hidden_states=True).hidden_states
        pos = torch.arange(ids.shape[1])[None]
        ref = trained.full_logits(trained.subset_logits(hs[LAYER], pos))
    ref = ref[0, prompt.size - 1 :].numpy()
    finite = np.isfinite(ref)
    assert np.array_equal(finite, np.isfinite(z))
    np.testing.assert_allclose(z[finite], ref[finite], atol=0.05, rtol=0.01)
    prof = lm.acceptance_profile(trace, f"adapter:{LAYER}", 1.0)
    assert np.all((prof.values >= 0) & (prof.values <= 1))
    # a retrained adapter is a different trace
    other = A.init_adapter(smol, LAYER, "layer", vocab=trained.vocab.numpy())
    other.metadata = {"model": smol.name}
    A.save_adapter(other, A.adapter_path(LAYER))
    assert settings.key() != key


def test_held_out_evaluation_against_a_direct_computation(smol, trained, tmp_cache):
    ev = E.evaluate_adapter(smol, trained, (1.0,), max_new_tokens=4, prompts=(3, 12))
    (ids, b), (ids2, b2) = list(E.held_out_sequences(smol, 1.0, 4, prompts=(3, 12)))
    # oracle: a fresh forward, full-vocabulary q (zero outside S), sum of min(p, q)
    rows = []
    with torch.no_grad():
        for x, start in ((ids, b), (ids2, b2)):
            out = smol.model(torch.as_tensor(x[None]), output_hidden_states=True)
            p = torch.softmax(out.logits[0, start:].double(), -1)
            pos = torch.arange(x.size)[None]
            z = trained.full_logits(trained.subset_logits(out.hidden_states[LAYER], pos))
            q = torch.softmax(z[0, start:].double(), -1)
            rows.append((float(torch.minimum(p, q).sum()), p.shape[0]))
    np.testing.assert_allclose(ev.per_prompt[0], np.array(rows), rtol=1e-9, atol=1e-9)
    assert ev.acceptance[0] == pytest.approx(sum(r[0] for r in rows) / sum(r[1] for r in rows))
    assert ev.acceptance[0] <= ev.coverage[0] + 1e-12 and ev.positions == (8,)
    (lo, hi), = ev.acceptance_ci(n_boot=500)
    assert lo <= ev.acceptance[0] <= hi
    # paired resampling: the difference of a table with itself is exactly zero
    (dlo, dhi), d = E.prompt_bootstrap(
        [ev.per_prompt[0]] * 2, lambda r: r[0] - r[1], n_boot=100
    )
    assert dlo == dhi == d == 0.0
    with pytest.raises(stt.InvalidParameterError, match="tables"):
        E.prompt_bootstrap([np.zeros((3, 3))])


def test_cost_ratio_and_parameters_of_an_adapter(smol, trained):
    cr = lm.measure_cost_ratio(smol, trained, repeats=2, context=8, warmup=0)
    assert cr.draft == f"adapter:{LAYER}" and cr.layer == LAYER and cr.c > 0
    n_module = sum(p.numel() for p in trained.module.parameters())
    base = lm.draft_parameter_count(smol, LAYER)
    assert lm.draft_parameter_count(smol, trained) == base + n_module


def _cli(argv):
    from spectheory.cli import main

    return main(argv)


def test_cli_list_refuse_and_missing(smol, trained, tmp_cache, capsys, monkeypatch):
    assert _cli(["draft", "list"]) == 0
    assert "no adapters" in capsys.readouterr().out
    A.save_adapter(trained, A.adapter_path(LAYER), extra={"held_out": {}})
    assert _cli(["draft", "list"]) == 0
    assert f"L{LAYER}: layer {LAYER}, layer x1, vocab 1024" in capsys.readouterr().out
    assert _cli(["draft", "train", "--layer", str(LAYER)]) == 2  # usage: exists, no --force
    assert "--force" in capsys.readouterr().err
    monkeypatch.setattr("spectheory.lm._loader.load_model", lambda *a, **k: smol)
    assert _cli(["draft", "evaluate", "adapter:7", "--quiet"]) == 2
    assert "spectheory draft train --layer 7" in capsys.readouterr().err


# --------------------------------------------------------------------------- training losses


def test_train_settings_loss_normal_form_and_errors():
    assert A.TrainSettings().loss == "kl"
    assert A.TrainSettings(loss="1*kl").loss == "kl"
    assert A.TrainSettings(loss="alpha:04:iid").loss == "alpha:4:iid"
    assert A.TrainSettings(loss=" 0.50*kl + tv").loss == "0.5*kl+tv"
    for bad, why in (
        ("foo", "foo"),
        ("alpha:0:iid", "alpha:0:iid"),
        ("alpha:4:sorted", "alpha:4:sorted"),
        ("-1*kl", "-1"),
        ("0*kl", "all zero"),
        ("x*tv", "'x'"),
    ):
        with pytest.raises(stt.InvalidParameterError, match=rf"loss .*{why}"):
            A.TrainSettings(loss=bad)
    with pytest.raises(stt.InvalidParameterError, match="loss must be a string"):
        A.TrainSettings(loss=3)


def test_the_cache_key_of_an_adapter_includes_its_loss():
    from spectheory.lm._loader import SMOLLM2

    kl = A.adapter_path(12)
    assert kl.name == f"{SMOLLM2}-L12.safetensors"  # the key of 'adapter:12' is unchanged
    assert A.adapter_path(12, loss="kl") == A.adapter_path(12, loss="1*kl") == kl
    specs = ["tv", "alpha:4:iid", "alpha:4:without_replacement", "alpha:2:iid", "0.5*kl+tv",
             "kl+tv"]  # fmt: skip
    paths = [A.adapter_path(12, loss=s) for s in specs]
    assert len({kl, *paths}) == len(specs) + 1
    assert all(p.parent == kl.parent and p.name.startswith(f"{SMOLLM2}-L12-") for p in paths)
    assert A.adapter_path(12, loss="alpha:04:iid") == paths[1]
    assert paths[1].name == f"{SMOLLM2}-L12-alpha-4-iid.safetensors"
    with pytest.raises(stt.InvalidParameterError, match="loss"):
        A.adapter_path("some-name", loss="tv")


@pytest.mark.parametrize(
    "loss", ["kl", "tv", "alpha:3:iid", "alpha:2:without_replacement", "0.5*kl+alpha:2:greedy"]
)
def test_each_loss_family_trains_and_lowers_its_own_loss(smol, tiny, loss):
    states = tiny[1]
    settings = A.TrainSettings(
        arch="linear", vocab=256, steps=5, batch_size=4, lr=1e-3, validation=0.25, seed=1,
        loss=loss,
    )  # fmt: skip
    train_idx, _ = A._split(len(states.final), settings.validation, settings.seed)
    assert train_idx.size == 4  # batch_size = all of them: full-batch steps
    ad = A.train_adapter(smol, states, LAYER, settings)
    start = A.init_adapter(smol, LAYER, "linear", vocab=ad.vocab.numpy())
    before = A.mean_loss(start, states, train_idx, settings.loss)
    after = A.mean_loss(ad, states, train_idx, settings.loss)
    assert np.isfinite(before) and after < before
    meta = ad.metadata
    assert meta["loss"] == settings.loss == meta["settings"]["loss"]
    assert np.isfinite(meta["validation_loss"]) and np.isfinite(meta["validation_kl"])
    # the metric recorded is the loss itself, on the validation sequences
    _, val_idx = A._split(len(states.final), settings.validation, settings.seed)
    own = A.mean_loss(ad, states, val_idx, loss)
    assert meta["validation_loss"] == pytest.approx(own, rel=1e-6)
    if loss == "kl":  # the KL path is the original one: the same number both ways
        assert meta["validation_loss"] == meta["validation_kl"]


def test_lumped_rows_keep_every_optimal_acceptance():
    rng = np.random.default_rng(5)
    V, K = 30, 12
    for _ in range(20):
        vocab = np.sort(rng.choice(V, size=K, replace=False))
        p = rng.dirichlet(np.full(V, 0.3), size=3)
        q = rng.dirichlet(np.full(K, 0.3), size=3)
        full = np.zeros((3, V))
        full[:, vocab] = q
        pl, ql = E.lumped_rows(p, q, vocab)
        assert pl.shape == ql.shape == (3, K + 1)
        for n, law in ((1, "iid"), (2, "iid"), (3, "iid"), (2, "without_replacement"),
                       (3, "without_replacement")):  # fmt: skip
            np.testing.assert_allclose(
                stt.bound(pl, ql, n, law), stt.bound(p, full, n, law), rtol=1e-12, atol=1e-13
            )
    assert E.lumped_rows(p, full, None)[1] is not None


def test_multidraft_evaluation_against_full_vocabulary_rows(smol, trained, tmp_cache):
    ev = E.evaluate_multidraft(
        smol, {"a": trained}, (1.0,), (1, 2), ("iid", "without_replacement"),
        max_new_tokens=4, prompts=(3, 12),
    )  # fmt: skip
    single = E.evaluate_adapter(smol, trained, (1.0,), max_new_tokens=4, prompts=(3, 12))
    np.testing.assert_allclose(ev.tables[("a", 1.0, 1, "iid")], single.per_prompt[0], rtol=1e-12)
    rows = {"iid": [], "without_replacement": []}
    with torch.no_grad():
        for x, start in E.held_out_sequences(smol, 1.0, 4, prompts=(3, 12)):
            out = smol.model(torch.as_tensor(x[None]), output_hidden_states=True)
            p = torch.softmax(out.logits[0, start:].double(), -1).numpy()
            pos = torch.arange(x.size)[None]
            z = trained.full_logits(trained.subset_logits(out.hidden_states[LAYER], pos))
            q = torch.softmax(z[0, start:].double(), -1).numpy()
            for law in rows:  # oracle: the solver on full-vocabulary rows
                a = stt.bound(p, q, 2, law)
                rows[law].append((a.sum(), a.size))
    for law, r in rows.items():
        np.testing.assert_allclose(ev.tables[("a", 1.0, 2, law)], np.array(r), rtol=1e-9)
    assert ev.value("a", 1.0, 2, "iid") >= ev.value("a", 1.0, 1) - 1e-12  # more drafts help
    (lo, hi), v = ev.interval("a", 1.0, 2, "without_replacement", n_boot=200)
    assert lo <= v <= hi and v == pytest.approx(ev.value("a", 1.0, 2, "without_replacement"))
    (dlo, dhi), d = ev.interval("a", 1.0, 2, versus="a", n_boot=50)
    assert dlo == dhi == d == 0.0
    with pytest.raises(stt.InvalidParameterError, match="laws"):
        E.evaluate_multidraft(smol, {"a": trained}, (1.0,), (2,), ("sorted",))


def test_cli_train_loss_option_key_and_errors(smol, tmp_cache, capsys, monkeypatch):
    assert _cli(["draft", "train", "--layer", "4", "--loss", "foo"]) == 2
    err = capsys.readouterr().err
    assert "--loss" in err and "'foo'" in err
    monkeypatch.setattr("spectheory.lm._loader.load_model", lambda *a, **k: smol)
    base = ["draft", "train", "--layer", str(LAYER), "--arch", "linear", "--vocab", "256",
            "--steps", "2", "--batch-size", "2", "--doc-sequences", "4",
            "--samples-per-prompt", "0", "--no-eval", "--quiet"]  # fmt: skip
    assert _cli([*base, "--loss", "alpha:2:iid"]) == 0
    capsys.readouterr()
    path = A.adapter_path(LAYER, smol.name, "alpha:2:iid")
    assert path.is_file() and not A.adapter_path(LAYER, smol.name).exists()
    assert A.load_adapter(smol, path).metadata["loss"] == "alpha:2:iid"
    assert _cli([*base, "--loss", "alpha:2:iid", "--as-draft"]) == 0
    draft = A.load_adapter(smol, A.adapter_path(LAYER, smol.name))  # what 'adapter:L' loads
    assert draft.metadata["loss"] == "alpha:2:iid"
    assert _cli([*base, "--loss", "alpha:2:iid"]) == 2  # exists: --force needed
    assert "--force" in capsys.readouterr().err


def test_batched_held_out_sample_matches_the_trace_when_greedy(smol, tmp_cache):
    from spectheory.lm.prompts import encode_prompt, prompt_set

    # T = 0: the batched, left-padded continuation is the trace's prompt-by-prompt argmax
    got = E.sampled_held_out_sequences(smol, 0.0, 4, prompts=(12, 3))
    ref = list(E.held_out_sequences(smol, 0.0, 4, prompts=(3, 12)))
    assert len(got) == 2
    for (ids, b), (rids, rb) in zip(got, ref):
        assert b == rb and np.array_equal(ids, rids)
    # T = 1: seeded, the prompt then the continuation, positions b.. predict it
    one = E.sampled_held_out_sequences(smol, 1.0, 5, seed=1, prompts=(3, 12))
    again = E.sampled_held_out_sequences(smol, 1.0, 5, seed=1, prompts=(3, 12))
    other = E.sampled_held_out_sequences(smol, 1.0, 5, seed=2, prompts=(3, 12))
    assert all(np.array_equal(a[0], c[0]) for a, c in zip(one, again))
    assert any(not np.array_equal(a[0], c[0]) for a, c in zip(one, other))
    for pid, (ids, b) in zip((3, 12), one):
        prompt = encode_prompt(smol.tokenizer, prompt_set()[pid][1], "user")
        assert b == prompt.size - 1 and np.array_equal(ids[: prompt.size], prompt)
        assert 0 <= ids.size - prompt.size <= 4 and ids.max() < smol.vocab_size


def test_prompt_bootstrap_refuses_invalid_tables_and_never_returns_nan():
    t = np.array([[1.0, 2.0], [3.0, 4.0], [2.0, 4.0]])
    bad = [
        ([np.array([[np.nan, 2.0], [3.0, 4.0]])], "tables\\[0\\] prompt 0"),
        ([np.array([[1.0, -2.0], [3.0, 4.0]])], "tables\\[0\\] prompt 0"),
        ([np.array([[1.0, 0.0], [3.0, 4.0]])], "count 0 must have sum 0"),
        ([np.array([[0.0, 0.0], [0.0, 0.0]])], "total count 0"),
        ([np.zeros((0, 2))], "no prompts"),
        ([np.array([["1", "2"], ["1", "2"]])], "real numbers"),
        ([np.array([[True, True], [False, True]])], "real numbers"),
        ([], "tables"),
        ("ab", "tables"),
    ]
    for tables, match in bad:
        with pytest.raises(stt.InvalidParameterError, match=match):
            E.prompt_bootstrap(tables, n_boot=50)
    for kw, match in [({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
                      ({"level": float("nan")}, "level"), ({"level": "0.9"}, "level"),
                      ({"statistic": 3}, "statistic")]:  # fmt: skip
        with pytest.raises(stt.InvalidParameterError, match=match):
            E.prompt_bootstrap([t], n_boot=50, **kw)
    # Prompts of count 0: resamples drawing only them have ratio 0/0 -> refused, not NaN.
    empty = np.array([[1.0, 2.0], [0.0, 0.0], [0.0, 0.0], [2.0, 4.0]])
    with pytest.raises(stt.InvalidParameterError, match="resamples draw only prompts of count 0"):
        E.prompt_bootstrap([empty], n_boot=2000, seed=0)
    # A few zero-count prompts among many: every resample is defined, and they change nothing
    # in the point estimate.
    many = np.vstack([np.tile([[1.0, 2.0], [2.0, 4.0], [3.0, 5.0]], (4, 1)), [[0.0, 0.0]]])
    (lo, hi), v = E.prompt_bootstrap([many], n_boot=500, seed=1)
    assert np.isfinite([lo, hi]).all() and lo <= v <= hi
    assert v == pytest.approx(24 / 44)
    (lo2, hi2), _ = E.prompt_bootstrap([many], n_boot=500, seed=np.random.default_rng(1))
    assert (lo2, hi2) == (lo, hi)


def test_an_adapter_of_another_model_under_the_same_name_is_refused(smol, trained, tmp_path):
    """Adapters are found by the model's name: another model under it (a folder's weights
    replaced, a user-named model in memory) loaded this one's adapter as its own draft.  The
    same weights loaded another way (in memory) still load it."""
    import copy

    path = A.save_adapter(trained, tmp_path / "a.safetensors")
    assert trained.metadata["model_fingerprint"] == smol.fingerprint()
    same = lm.LoadedModel.from_model(smol.model, smol.tokenizer, name=smol.name)
    assert A.load_adapter(same, path).weights_sha256() == trained.weights_sha256()
    other_model = copy.deepcopy(smol.model)
    with torch.no_grad():
        other_model.model.norm.weight.mul_(1.5)
    other = lm.LoadedModel.from_model(other_model, smol.tokenizer, name=smol.name)
    with pytest.raises(stt.TraceError, match="trained on another model"):
        A.load_adapter(other, path)
