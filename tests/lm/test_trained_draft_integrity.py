"""Trained drafts are what their names say: adapter files, acceptance heads, corpora, CLI.

Each case failed silently before its fix:
- ``adapter:14`` ran the adapter of layer 12 that ``draft train --layer 12 --name ...-L14``
  (or a copied file) left at its key;
- an adapter file's header edited from layer 12 to 14 loaded as layer 14 (only the
  tensors were checksummed);
- two acceptance heads trained on other features with the same settings shared one cache
  file, so loading the first returned the second; ``lr=inf`` trained a NaN head;
- ``draft train --seed 1`` re-seeded and re-sampled the corpus, whose help says the seed
  is the data order's, the split's and the initialisation's;
- a ``max_len`` that leaves no room for any documentation sequence gave a corpus without
  them.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import spectheory as stt
from spectheory.lm import acchead as ah
from spectheory.lm import adapters as A
from spectheory.lm.corpus import CorpusSettings, build_corpus


def test_an_adapter_file_of_another_layer_is_refused(smol, tmp_cache):
    ad = A.init_adapter(smol, 12, "layer", None, 1)
    ad.metadata = {"model": smol.name}
    A.save_adapter(ad, A.adapter_path(f"{smol.name}-L14"))
    with pytest.raises(stt.TraceError, match=r"holds an adapter of layer 12"):
        A.resolve_adapter(smol, 14)


def test_an_edited_adapter_header_fails_its_checksum(smol, tmp_path):
    from safetensors import safe_open
    from safetensors.numpy import save_file

    ad = A.init_adapter(smol, 12, "layer", None, 1)
    path = A.save_adapter(ad, tmp_path / "a.safetensors")
    with safe_open(str(path), "np") as f:
        header = dict(f.metadata())
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    key = next(k for k, v in header.items() if '"layer"' in v)
    meta = json.loads(header[key])
    meta["layer"] = 14
    header[key] = json.dumps(meta)
    save_file(tensors, str(tmp_path / "b.safetensors"), metadata=header)
    assert A.load_adapter(smol, path).layer == 12
    with pytest.raises(stt.TraceError, match="metadata fails its SHA-256 checksum"):
        A.load_adapter(smol, tmp_path / "b.safetensors")


def test_heads_trained_on_other_features_get_other_files(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTHEORY_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(0)
    X1, X2 = rng.standard_normal((2, 40, 8)).astype(np.float32)
    y = rng.random(40)
    h1 = ah.train_head(X1, y, epochs=1, seed=0)
    h2 = ah.train_head(X2, y, epochs=1, seed=0)
    p1, p2 = ah.save_head(h1), ah.save_head(h2)
    assert p1 != p2
    np.testing.assert_array_equal(ah.predict_acceptance(ah.load_head(p1), X1),
                                  ah.predict_acceptance(h1, X1))


@pytest.mark.parametrize(("kw", "words"), [({"lr": float("inf")}, "lr must be a finite number > 0"),
                                           ({"lr": -1.0}, "lr must be"),
                                           ({"weight_decay": float("nan")}, "weight_decay must")])
def test_head_training_refuses_bad_rates(kw, words):
    with pytest.raises(stt.InvalidParameterError, match=words):
        ah.train_head(np.zeros((4, 3), np.float32), np.zeros(4), epochs=1, **kw)


def test_draft_train_seed_leaves_the_corpus_seed_alone(tmp_cache, monkeypatch):
    """The corpus settings ``draft train --seed 1`` builds, captured before the model loads."""
    import spectheory.cli._common as common
    import spectheory.lm._loader as loader
    from spectheory.cli import main

    built = []
    real = common.settings_from_args

    def spy(cls, args, **fixed):
        out = real(cls, args, **fixed)
        built.append(out)
        return out

    class Stop(Exception):
        pass

    def no_model(*a, **k):
        raise Stop

    monkeypatch.setattr("spectheory.cli.draft.settings_from_args", spy)
    monkeypatch.setattr(loader, "load_model", no_model)
    try:  # the command stops at the model load (the CLI may report it as an error)
        main(["draft", "train", "--layer", "4", "--seed", "1", "--max-len", "64"])
    except Stop:
        pass
    corpus = next(x for x in built if isinstance(x, CorpusSettings))
    train = next(x for x in built if isinstance(x, A.TrainSettings))
    assert train.seed == 1
    assert corpus.seed == CorpusSettings().seed and corpus.max_len == 64


def test_a_corpus_without_room_for_its_documentation_sequences_is_refused(smol):
    settings = CorpusSettings(max_len=48, doc_sequences=4, samples_per_prompt=0)
    with pytest.raises(stt.InvalidParameterError, match=r"doc_sequences=4 asked, but max_len=48"):
        build_corpus(smol, settings, cache=False)


def test_a_corpus_that_cuts_its_prompts_is_refused(smol):
    """52 of the 331 training prompts are over 48 tokens with the chat template: their
    sequences were cut inside the prompt, with negative training-position counts."""
    settings = CorpusSettings(max_len=48, doc_sequences=0, samples_per_prompt=1)
    with pytest.raises(stt.InvalidParameterError, match=r"max_len=48 cuts training prompt"):
        build_corpus(smol, settings, cache=False)
