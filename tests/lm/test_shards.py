"""Sharded traces: manifest and shard round trip, bounded sizes, corruption, resumable recording.

Every trace here is synthetic (random logits at a small vocabulary), built in
memory: the real model is never loaded.
"""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest

from spectheory import TraceError
from spectheory._errors import InvalidParameterError
from spectheory.lm import Trace, TraceSettings, load_trace
from spectheory.lm.shards import (
    MANIFEST_NAME,
    ShardedTrace,
    record_sharded,
    shard_trace,
)


def prompt_length(pid: int) -> int:
    """Continuation length of synthetic prompt ``pid`` (3 to 7 positions)."""
    return (6, 4, 7, 3)[pid % 4]


def prompt_piece(settings: TraceSettings, pid: int, vocab: int) -> Trace:
    """The synthetic recording of one prompt, a function of ``(settings.seed, pid)`` only.

    Target logits are 2 N(0, 1); each early exit adds N(0, 1) noise.  Tokens
    come from the first 8 ids so that n-gram drafts find repeated contexts.
    """
    rng = np.random.default_rng([settings.seed, pid])
    N = prompt_length(pid)
    z = 2.0 * rng.standard_normal((N, vocab))
    exits = {
        d: (z + rng.standard_normal((N, vocab))).astype(np.float16)
        for d in settings.drafts
        if d.startswith("exit:")
    }
    meta = {
        "format": 1,
        "settings": dataclasses.asdict(dataclasses.replace(settings, prompts=(pid,))),
        "key": dataclasses.replace(settings, prompts=(pid,)).key(),
        "model": {"name": "synthetic", "source": "none", "num_layers": 4, "vocab_size": vocab},
        "prompt_order": [pid],
        "spectheory_version": "test",
    }
    return Trace(
        target_logits=z.astype(np.float16),
        exit_logits=exits,
        tokens=rng.integers(0, 8, N).astype(np.int64),
        prompt_ids=np.full(N, pid, dtype=np.int64),
        steps=np.arange(N, dtype=np.int64),
        prompt_tokens=rng.integers(0, 8, 3 + pid % 3).astype(np.int64),
        prompt_offsets=np.array([0, 3 + pid % 3], dtype=np.int64),
        metadata=json.loads(json.dumps(meta)),
    )


def synthetic_trace(vocab: int = 200, prompts=(0, 1, 2, 3), seed: int = 0, drafts=None) -> Trace:
    """The whole synthetic trace: the prompt pieces concatenated, as record_trace lays them out."""
    settings = TraceSettings(
        model="synthetic",
        drafts=tuple(drafts or ("exit:2", "ngram:2")),
        prompts=tuple(prompts),
        max_new_tokens=8,
        seed=seed,
    )
    pieces = [prompt_piece(settings, pid, vocab) for pid in sorted(prompts)]
    offsets = np.cumsum([0] + [p.prompt_tokens.size for p in pieces])
    meta = dict(pieces[0].metadata)
    meta.update(
        settings=json.loads(json.dumps(dataclasses.asdict(settings))),
        key=settings.key(),
        prompt_order=sorted(prompts),
    )
    return Trace(
        target_logits=np.concatenate([p.target_logits for p in pieces]),
        exit_logits={
            k: np.concatenate([p.exit_logits[k] for p in pieces]) for k in pieces[0].exit_logits
        },
        tokens=np.concatenate([p.tokens for p in pieces]),
        prompt_ids=np.concatenate([p.prompt_ids for p in pieces]),
        steps=np.concatenate([p.steps for p in pieces]),
        prompt_tokens=np.concatenate([p.prompt_tokens for p in pieces]),
        prompt_offsets=offsets.astype(np.int64),
        metadata=meta,
    )


class Recorder:
    """A record_trace-compatible stub: records synthetic prompts, counts them, can fail."""

    def __init__(self, vocab=200, fail_at=None):
        self.vocab, self.fail_at, self.recorded = vocab, fail_at, []

    def __call__(self, settings, *, loaded=None, cache=True, progress=True):
        assert cache is False and len(settings.prompts) == 1
        (pid,) = settings.prompts
        if pid == self.fail_at:
            raise KeyboardInterrupt(f"recording interrupted at prompt {pid}")
        self.recorded.append(pid)
        return prompt_piece(settings, pid, self.vocab)


def concat_shards(sharded: ShardedTrace) -> dict:
    """The shards' tensors concatenated, keyed like the trace's fields."""
    pieces = [sharded.load_shard(i) for i in range(len(sharded))]
    return {
        "target_logits": np.concatenate([p.target_logits for p in pieces]),
        "exit:2": np.concatenate([p.exit_logits["exit:2"] for p in pieces]),
        "tokens": np.concatenate([p.tokens for p in pieces]),
        "prompt_ids": np.concatenate([p.prompt_ids for p in pieces]),
        "steps": np.concatenate([p.steps for p in pieces]),
        "prompt_tokens": np.concatenate([p.prompt_tokens for p in pieces]),
        "ngram:2": np.concatenate([p.draft_logits("ngram:2") for p in pieces]),
    }


# Sizes of the synthetic trace at V = 200: positions 6, 4, 7, 3 (20); one position of
# its two float16 logit tensors is 800 bytes, a shard's header under 4 KB.
MAX_BYTES = 12_000


@pytest.fixture(scope="module")
def trace():
    return synthetic_trace()


def test_round_trip(trace, tmp_path):
    sharded = shard_trace(trace, tmp_path / "s", MAX_BYTES)
    assert len(sharded) >= 2
    again = ShardedTrace.open(tmp_path / "s")
    assert again.shards == sharded.shards
    assert again.num_positions == trace.num_positions == 20
    assert again.vocab_size == 200 and again.drafts == ("exit:2", "ngram:2")
    assert again.settings == trace.settings
    got = concat_shards(again)
    np.testing.assert_array_equal(got["target_logits"], trace.target_logits)
    np.testing.assert_array_equal(got["exit:2"], trace.exit_logits["exit:2"])
    for name in ("tokens", "prompt_ids", "steps", "prompt_tokens"):
        np.testing.assert_array_equal(got[name], getattr(trace, name))
    # n-gram drafts are rebuilt from each shard's own prompts and tokens: the same rows
    np.testing.assert_array_equal(got["ngram:2"], trace.draft_logits("ngram:2"))
    # each shard knows its global positions
    for info, piece in again.iter_shards():
        assert piece.metadata["shard"]["start"] == info.start
        assert piece.num_positions == info.stop - info.start
        assert tuple(piece.metadata["prompt_order"]) == info.prompts


def test_shard_sizes_are_bounded_and_prompts_whole(trace, tmp_path):
    ends = {0, 6, 10, 17, 20}  # prompt boundaries
    counts = []
    for k, limit in enumerate((9_000, MAX_BYTES, 17_500, 40_000)):
        sharded = shard_trace(trace, tmp_path / str(k), limit)
        counts.append(len(sharded))
        assert sharded.shards[0].start == 0 and sharded.shards[-1].stop == 20
        for a, b in zip(sharded.shards, sharded.shards[1:]):
            assert a.stop == b.start
        for s in sharded.shards:
            size = (tmp_path / str(k) / s.file).stat().st_size
            assert size == s.bytes <= limit
            assert s.start in ends and s.stop in ends
    assert counts == sorted(counts, reverse=True) and counts[0] == 4 and counts[-1] == 1
    with pytest.raises(InvalidParameterError, match="max_shard_bytes = 5000 is too small"):
        shard_trace(trace, tmp_path / "tiny", 5_000)
    with pytest.raises(InvalidParameterError, match="max_shard_bytes"):
        shard_trace(trace, tmp_path / "zero", 0)


def test_resharding_replaces_the_old_shards(trace, tmp_path):
    shard_trace(trace, tmp_path, 9_000)
    sharded = shard_trace(trace, tmp_path, 40_000)
    assert len(sharded) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST_NAME, sharded.shards[0].file]


def test_ungrouped_positions_are_refused(trace, tmp_path):
    bad = dataclasses.replace(trace, prompt_ids=trace.prompt_ids[::-1].copy())
    with pytest.raises(InvalidParameterError, match="grouped by prompt"):
        shard_trace(bad, tmp_path, MAX_BYTES)


def _flip_byte(path, offset_from_end=100):
    data = bytearray(path.read_bytes())
    data[-offset_from_end] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupted_shard_is_detected(trace, tmp_path):
    sharded = shard_trace(trace, tmp_path, MAX_BYTES)
    path = tmp_path / sharded.shards[1].file
    _flip_byte(path)  # inside the tensor data: same size
    opened = ShardedTrace.open(tmp_path)  # the manifest itself is fine
    opened.load_shard(0)
    with pytest.raises(TraceError, match=f"{path.name}.*SHA-256"):
        opened.load_shard(1)
    with pytest.raises(TraceError, match=path.name):
        opened.verify()
    # the shard's own per-tensor checksums catch it too, without the manifest
    with pytest.raises(TraceError, match="fails its SHA-256 checksum"):
        load_trace(path)


def test_truncated_or_missing_shard_is_detected(trace, tmp_path):
    sharded = shard_trace(trace, tmp_path, MAX_BYTES)
    path = tmp_path / sharded.shards[0].file
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(TraceError, match=f"{path.name}.*bytes; the manifest says"):
        ShardedTrace.open(tmp_path)
    path.unlink()
    with pytest.raises(TraceError, match=f"{path.name}.*does not exist"):
        ShardedTrace.open(tmp_path)


def test_valid_shard_of_another_trace_is_detected(trace, tmp_path):
    # A valid shard of another recording (seed 1: same shapes, same file size) in place
    # of ours: its own checksums pass, the manifest's file SHA-256 does not.
    sharded = shard_trace(trace, tmp_path / "a", MAX_BYTES)
    other = shard_trace(synthetic_trace(seed=1), tmp_path / "b", MAX_BYTES)
    mine, theirs = tmp_path / "a" / sharded.shards[1].file, tmp_path / "b" / other.shards[1].file
    assert mine.stat().st_size == theirs.stat().st_size
    mine.write_bytes(theirs.read_bytes())
    load_trace(mine)
    with pytest.raises(TraceError, match=f"{mine.name}.*manifest's SHA-256"):
        ShardedTrace.open(tmp_path / "a").load_shard(1)


def test_corrupted_manifest_is_detected(trace, tmp_path):
    shard_trace(trace, tmp_path, MAX_BYTES)
    path = tmp_path / MANIFEST_NAME
    text = path.read_text()
    raw = json.loads(text)
    raw["num_positions"] = 19
    path.write_text(json.dumps(raw))
    with pytest.raises(TraceError, match=f"{MANIFEST_NAME}.*fails its SHA-256"):
        ShardedTrace.open(tmp_path)
    path.write_text(text[: len(text) // 2])
    with pytest.raises(TraceError, match=f"{MANIFEST_NAME}.*truncated or not JSON"):
        ShardedTrace.open(tmp_path)
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(TraceError, match="not a spectheory sharded-trace manifest"):
        ShardedTrace.open(tmp_path)
    path.unlink()
    with pytest.raises(TraceError, match="does not exist"):
        ShardedTrace.open(tmp_path)


def test_bad_shard_index(trace, tmp_path):
    sharded = shard_trace(trace, tmp_path, MAX_BYTES)
    with pytest.raises(InvalidParameterError, match=r"shard index must be in \[0, \d+\); got 99"):
        sharded.load_shard(99)


def test_record_sharded_equals_splitting_the_whole_trace(trace, tmp_path):
    recorder = Recorder()
    recorded = record_sharded(
        trace.settings, tmp_path / "rec", MAX_BYTES, progress=False, recorder=recorder
    )
    split = shard_trace(trace, tmp_path / "split", MAX_BYTES)
    assert recorder.recorded == [0, 1, 2, 3]
    assert [(s.start, s.stop, s.prompts) for s in recorded.shards] == [
        (s.start, s.stop, s.prompts) for s in split.shards
    ]
    for name, arr in concat_shards(recorded).items():
        np.testing.assert_array_equal(arr, concat_shards(split)[name], err_msg=name)
    assert recorded.settings == trace.settings
    assert recorded.manifest["model"]["name"] == "synthetic"
    # a complete folder is returned as is
    again = Recorder()
    assert (
        record_sharded(
            trace.settings, tmp_path / "rec", MAX_BYTES, progress=False, recorder=again
        ).shards
        == recorded.shards
    )
    assert again.recorded == []


def test_record_sharded_resumes_after_an_interruption(trace, tmp_path):
    full = record_sharded(
        trace.settings, tmp_path / "full", 9_000, progress=False, recorder=Recorder()
    )
    assert len(full) == 4  # one prompt per shard: each written before the next is recorded
    with pytest.raises(KeyboardInterrupt):
        record_sharded(
            trace.settings, tmp_path / "cut", 9_000, progress=False, recorder=Recorder(fail_at=2)
        )
    assert not (tmp_path / "cut" / MANIFEST_NAME).exists()
    resumed = Recorder()
    out = record_sharded(trace.settings, tmp_path / "cut", 9_000, progress=False, recorder=resumed)
    # Prompt 0's shard was written when prompt 1 did not fit beside it; prompt 1 was still
    # in memory when the recording stopped, so it is recorded again, prompt 0 is not.
    assert resumed.recorded == [1, 2, 3]
    assert [s.sha256 for s in out.shards] == [s.sha256 for s in full.shards]


def test_record_sharded_rerecords_a_corrupted_shard(trace, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        record_sharded(
            trace.settings, tmp_path, 9_000, progress=False, recorder=Recorder(fail_at=3)
        )
    _flip_byte(tmp_path / "shard-00001.safetensors")
    resumed = Recorder()
    out = record_sharded(trace.settings, tmp_path, 9_000, progress=False, recorder=resumed)
    assert resumed.recorded == [1, 2, 3]  # shard 0 kept, shard 1 and later recorded again
    out.verify()
    np.testing.assert_array_equal(concat_shards(out)["tokens"], trace.tokens)


def test_record_sharded_refuses_a_folder_of_other_settings(trace, tmp_path):
    record_sharded(trace.settings, tmp_path, MAX_BYTES, progress=False, recorder=Recorder())
    other = dataclasses.replace(trace.settings, seed=1)
    with pytest.raises(InvalidParameterError, match="other settings"):
        record_sharded(other, tmp_path, MAX_BYTES, progress=False, recorder=Recorder())
    (tmp_path / MANIFEST_NAME).unlink()  # an interrupted recording of other settings
    with pytest.raises(InvalidParameterError, match="shards of another recording"):
        record_sharded(other, tmp_path, MAX_BYTES, progress=False, recorder=Recorder())


def test_record_sharded_uses_spectheory_lm_record_trace(trace, tmp_path, monkeypatch):
    import spectheory.lm

    recorder = Recorder()
    monkeypatch.setattr(spectheory.lm, "record_trace", recorder)
    out = record_sharded(trace.settings, tmp_path, MAX_BYTES, loaded=_Model(1.0), progress=False)
    assert recorder.recorded == [0, 1, 2, 3] and out.num_positions == 20


def test_command_line_splits_a_trace_file(trace, tmp_path, capsys):
    trace.save(tmp_path / "t.safetensors")
    from spectheory.cli import main

    argv = ["trace", "shard", "--trace", str(tmp_path / "t.safetensors"),
            "--out", str(tmp_path / "s"), "--max-shard-mb", str(MAX_BYTES / 2**20)]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    sharded = ShardedTrace.open(tmp_path / "s")
    assert f"{len(sharded)} shards" in out and "20 positions x 200 tokens" in out
    np.testing.assert_array_equal(concat_shards(sharded)["tokens"], trace.tokens)


class _Model:
    """A stand-in for a LoadedModel in memory: its weights scale the recorded logits."""

    def __init__(self, scale):
        weights = SimpleNamespace(dtype="torch.float32")
        self.scale, self.source = scale, ""
        self.model = SimpleNamespace(parameters=lambda: iter([weights]))

    def fingerprint(self):
        return f"weights-{self.scale}"


def _scaled_recorder(settings, *, loaded=None, cache=True, progress=True):
    (pid,) = settings.prompts
    piece = prompt_piece(settings, pid, 200)
    piece.target_logits = (piece.target_logits * loaded.scale).astype(np.float16)
    return piece


def test_record_sharded_keys_a_model_passed_in_by_its_weights(trace, tmp_path):
    """The key left out the model passed in: another model under the same name got the
    first one's complete sharded trace back, or resumed its shards (a mixed trace)."""
    settings = dataclasses.replace(trace.settings, model="memory:mine")
    a = record_sharded(settings, tmp_path / "a", 9_000, _Model(1.0), progress=False,
                       recorder=_scaled_recorder)  # fmt: skip
    with pytest.raises(InvalidParameterError, match="other settings"):
        record_sharded(settings, tmp_path / "a", 9_000, _Model(2.0), progress=False,
                       recorder=_scaled_recorder)  # fmt: skip
    (tmp_path / "a" / MANIFEST_NAME).unlink()  # as if interrupted before the manifest
    with pytest.raises(InvalidParameterError, match="shards of another recording"):
        record_sharded(settings, tmp_path / "a", 9_000, _Model(2.0), progress=False,
                       recorder=_scaled_recorder)  # fmt: skip
    again = record_sharded(settings, tmp_path / "a", 9_000, _Model(1.0), progress=False,
                           recorder=_scaled_recorder)  # fmt: skip
    assert [s.sha256 for s in again.shards] == [s.sha256 for s in a.shards]
