"""Mutation kills for traces from arrays, trace files, the cache, shards, fingerprints, the
sweep cache's state digest, the draft-capacity reduction and the bug zoo.

Each test is deterministic and cheap, needs no model, and names in its docstring the
bug it catches.  Expected values come from an independent oracle: hand computation on
small arrays, safetensors bytes located by hand and flipped, files written and read back,
a second fresh computation (a key or digest must change with what it covers and only
with it), a scripted clock, or the bug zoo's documented biases (docs/theory.md §7.5)
worked out by hand in exact fractions.
"""

from __future__ import annotations

import json
import struct
from fractions import Fraction as F

import numpy as np
import pytest

import spectheory as stt
import spectheory.lm as lm


def _logits(seed=0, n=4, v=5):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, v)), rng.standard_normal((n, v))


# --------------------------------------------------------------------------- lm/arrays.py


def test_a_one_token_vocabulary_is_refused():
    """Bug: the shape check accepted a vocabulary of one token (``< 1`` for ``< 2``).

    A (positions, 1) matrix is no distribution over a choice: every documented
    reader of the layout needs ``>= 2`` columns.
    """
    with pytest.raises(stt.ShapeMismatchError, match=">= 2 columns"):
        lm.Trace.from_arrays(np.zeros((3, 1)), np.zeros((3, 1)))


def test_float32_probabilities_are_not_read_as_logits():
    """Bug: probabilities passed as logits were caught only at float64's tolerance (1e-9).

    By hand, float32(0.1) + float32(0.2) + float32(0.7) = 1 - 7.45e-9 in float64:
    outside 1e-9, inside the documented 1e-4 for float32 rows.  Read as logits they
    would be softmaxed a second time, silently.
    """
    p = np.array([[0.1, 0.2, 0.7], [0.7, 0.2, 0.1]], dtype=np.float32)
    dev = abs(float(p[0].astype(np.float64).sum()) - 1)
    assert 1e-9 < dev < 1e-4
    with pytest.raises(stt.InvalidParameterError, match="rows are probabilities"):
        lm.Trace.from_arrays(p, {"small": p[::-1].copy()})


def test_plus_infinite_logits_are_refused():
    """Bug: only NaN was refused, so a ``+inf`` logit was stored and reached the softmax.

    The module says logits must be finite or ``-inf``.
    """
    t, d = _logits()
    t[2, 3] = np.inf
    with pytest.raises(stt.InvalidParameterError, match="row 2 has logit inf at token 3"):
        lm.Trace.from_arrays(t, d)


def test_negative_steps_are_refused():
    """Bug: steps below 0 were accepted (the ``st < 0`` test dropped).

    With steps (-1, 0, 1, 2) position 0 would start its context one token after
    itself: ``context(i)`` reads ``tokens[i + 1 : i]``.
    """
    t, d = _logits()
    with pytest.raises(stt.InvalidParameterError, match="steps must count"):
        lm.Trace.from_arrays(t, d, steps=[-1, 0, 1, 2])


def test_steps_beyond_the_positions_of_their_prompt_are_refused():
    """Bug: a step larger than the positions recorded before it in its prompt was accepted.

    Prompt 1 starts at position 2; steps (0, 1, 0, 3) claim position 3 is the
    fourth token of prompt 1's continuation although only one came before it:
    its context would reach back into prompt 0's tokens.
    """
    t, d = _logits()
    with pytest.raises(stt.InvalidParameterError, match="steps must count"):
        lm.Trace.from_arrays(t, d, prompt_ids=[0, 0, 1, 1], steps=[0, 1, 0, 3])
    # the same prompts counted from 0 up are accepted
    tr = lm.Trace.from_arrays(t, d, prompt_ids=[0, 0, 1, 1], steps=[0, 1, 0, 1])
    assert tr.steps.tolist() == [0, 1, 0, 1]


def test_a_token_equal_to_the_vocabulary_size_is_refused():
    """Bug: tokens were checked with ``> V`` instead of ``>= V``: token id V accepted.

    Ids run over [0, V); V = 5 here.
    """
    t, d = _logits()
    with pytest.raises(stt.InvalidParameterError, match=r"\[0, 5\); tokens\[3\] = 5"):
        lm.Trace.from_arrays(t, d, tokens=[0, 1, 2, 5])


def test_prompt_offsets_must_end_at_the_prompt_tokens_length():
    """Bug: prompt offsets that stop short of ``len(prompt_tokens)`` were accepted.

    Offsets (0, 1) with three prompt tokens leave tokens 1 and 2 outside every
    prompt.
    """
    t, d = _logits()
    with pytest.raises(stt.InvalidParameterError, match="rise from 0 to len"):
        lm.Trace.from_arrays(t, d, prompt_tokens=[7, 8, 9], prompt_offsets=[0, 1])


def test_more_prompt_token_lists_than_prompts_are_refused():
    """Bug: only fewer prompt-token lists than prompts were refused (``<`` for ``!=``).

    One prompt id (all positions 0), two lists of prompt tokens.
    """
    t, d = _logits()
    with pytest.raises(stt.ShapeMismatchError, match="holds 2 prompts; prompt_ids has 1"):
        lm.Trace.from_arrays(t, d, prompt_tokens=[[1, 2], [3]])


def test_max_new_tokens_is_the_longest_continuation():
    """Bug: the settings' ``max_new_tokens`` was the largest step, not the largest step + 1.

    By hand: prompts 0 and 1 hold 3 and 1 positions (steps 0..2 and 0), so the
    longest continuation is 3 tokens; with one position per prompt it is 1.
    """
    t, d = _logits()
    tr = lm.Trace.from_arrays(t, d, prompt_ids=[0, 0, 0, 1])
    assert tr.settings.max_new_tokens == 3
    tr = lm.Trace.from_arrays(t, d, prompt_ids=[0, 1, 2, 3])
    assert tr.settings.max_new_tokens == 1


def test_the_array_trace_key_follows_the_target_the_drafts_and_their_names():
    """Bugs: the trace key hashed the drafts' logits without their names, or left the target out.

    The key identifies the trace (its manifest once sharded): two traces with
    another target, another draft name or other draft logits must differ, and
    the same arrays must give the same key (a second fresh computation).
    """
    t, d = _logits()
    key = lm.Trace.from_arrays(t, {"a": d}).metadata["key"]
    assert lm.Trace.from_arrays(t.copy(), {"a": d.copy()}).metadata["key"] == key
    t2 = t.copy()
    t2[0, 0] += 1.0
    others = [
        lm.Trace.from_arrays(t2, {"a": d}),  # another target
        lm.Trace.from_arrays(t, {"b": d}),  # another draft name, same logits
        lm.Trace.from_arrays(t, {"a": d + np.eye(4, 5)}),  # other draft logits
    ]
    keys = {o.metadata["key"] for o in others}
    assert key not in keys and len(keys) == 3


# --------------------------------------------------------------------------- lm/trace.py


def test_row_equal_to_the_number_of_positions_is_refused_by_name():
    """Bug: rows were checked with ``> N`` instead of ``>= N``: row N gave numpy's IndexError.

    A trace of 4 positions has rows 0..3; the documented error is an
    InvalidParameterError naming the row.
    """
    t, d = _logits()
    tr = lm.Trace.from_arrays(t, {"a": d})
    with pytest.raises(stt.InvalidParameterError, match=r"\[0, 4\) of this trace; got 4"):
        tr.draft_logits("logits:a", [4])
    with pytest.raises(stt.InvalidParameterError, match="got 4"):
        tr.context(4)


def test_greedy_temperature_zero_is_a_valid_setting():
    """Bug: the settings refused temperature 0 (``0 < t`` for ``0 <= t``).

    The attribute is documented as ``temperature >= 0`` with 0 meaning greedy.
    """
    assert lm.TraceSettings(model="arrays:x", prompts=(0,), temperature=0).temperature == 0
    t, d = _logits()
    assert lm.Trace.from_arrays(t, d, temperature=0.0).settings.temperature == 0.0


def test_draft_logits_are_float64_and_exactly_the_stored_values():
    """Bug: stored drafts came back in float32 (``astype(np.float32)``).

    ``draft_logits`` is documented to return float64; float16 storage converts
    exactly to float64, so the values are the stored ones bit for bit.
    """
    t, d = _logits()
    tr = lm.Trace.from_arrays(t, {"a": d}, dtype="float16")
    got = tr.draft_logits("logits:a")
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, tr.exit_logits["logits:a"].astype(np.float64))


def _data_offsets(raw: bytes):
    """(header length, {tensor: (begin, end)}) of a safetensors file, read by hand."""
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    return n, {k: v["data_offsets"] for k, v in header.items() if k != "__metadata__"}


@pytest.mark.parametrize("tensor", ["exit_logits/logits:a", "tokens", "steps", "prompt_offsets"])
def test_a_flipped_data_byte_in_any_tensor_is_caught(tmp_path, tensor):
    """Bug: only the target's checksum was verified on load; the other tensors' bytes were not.

    One bit of the tensor's data (located by hand from the safetensors header) is
    flipped; the header is untouched, so only that tensor's SHA-256 can tell.
    """
    t, d = _logits()
    path = lm.Trace.from_arrays(t, {"a": d}).save(tmp_path / "t.safetensors")
    raw = bytearray(path.read_bytes())
    n, offsets = _data_offsets(bytes(raw))
    begin, end = offsets[tensor]
    assert end > begin
    raw[8 + n + begin] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.raises(stt.TraceError, match=f"tensor '{tensor}' fails its SHA-256 checksum"):
        lm.load_trace(path)


@pytest.mark.parametrize("field", ["prompt_ids", "steps"])
def test_layout_check_refuses_per_position_arrays_of_another_length(field):
    """Bug: the layout check looked at ``tokens`` only, not ``prompt_ids`` and ``steps``.

    A trace of 4 positions whose ``prompt_ids`` or ``steps`` has 3 entries.
    """
    from spectheory.lm.trace import check_layout

    t, d = _logits()
    tr = lm.Trace.from_arrays(t, {"a": d})
    setattr(tr, field, getattr(tr, field)[:3])
    with pytest.raises(stt.ShapeMismatchError, match=rf"{field} has shape \(3,\); expected \(4,\)"):
        check_layout(tr)


# --------------------------------------------------------------------------- lm/cache.py


def test_cache_entries_and_clearing_reach_nested_files(tmp_path, monkeypatch):
    """Bug: the cache listed only the top level of each sub-folder (``glob`` for ``rglob``).

    Entries are named by their path relative to the sub-folder; a file one
    folder down is an entry and is removed by ``clear_cache`` (bytes counted
    from what the test wrote).
    """
    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path))
    (tmp_path / "sweeps" / "run1").mkdir(parents=True)
    (tmp_path / "sweeps" / "run1" / "piece.json").write_bytes(b"abc")
    (tmp_path / "sweeps" / "top.json").write_bytes(b"12345")
    got = [(e.kind, e.name, e.bytes) for e in lm.cache_entries("sweeps")]
    assert got == [("sweeps", "run1/piece.json", 3), ("sweeps", "top.json", 5)]
    assert lm.clear_cache("sweeps") == (2, 8)
    assert not (tmp_path / "sweeps" / "run1" / "piece.json").exists()


# --------------------------------------------------------------------------- lm/shards.py


def test_a_finished_folder_of_another_max_shard_bytes_is_refused(tmp_path):
    """Bug: a complete folder was returned whatever ``max_shard_bytes`` was asked for.

    The folder was recorded at 9,000 bytes per shard (four shards); asking for
    12,000 must not return those shards as if they were split at 12,000.
    """
    from spectheory.lm.shards import record_sharded
    from tests.lm.test_shards import Recorder, synthetic_trace

    settings = synthetic_trace().settings
    first = record_sharded(settings, tmp_path, 9_000, progress=False, recorder=Recorder())
    assert first.manifest["max_shard_bytes"] == 9_000
    with pytest.raises(stt.InvalidParameterError, match="another max_shard_bytes"):
        record_sharded(settings, tmp_path, 12_000, progress=False, recorder=Recorder())


def test_a_left_over_shard_of_the_wrong_prompts_is_recorded_again(tmp_path):
    """Bug: resuming kept a shard whose prompts are not the next ones of the recording order.

    An interrupted recording left shard 0 (prompt 0).  Its header is rewritten
    (checksums recomputed, so the file is valid) to claim prompt 1 instead.
    Resuming must record prompt 0 again: the result's prompt ids are those of
    the whole synthetic trace (the oracle), 0, 1, 2, 3 in order.
    """
    from spectheory.lm.shards import record_sharded
    from tests.lm.test_shards import Recorder, synthetic_trace

    whole = synthetic_trace()
    with pytest.raises(KeyboardInterrupt):
        record_sharded(whole.settings, tmp_path, 9_000, progress=False,
                       recorder=Recorder(fail_at=2))  # fmt: skip
    path = tmp_path / "shard-00000.safetensors"
    piece = lm.load_trace(path)
    assert piece.metadata["shard"]["prompts"] == [0]
    piece.metadata["shard"]["prompts"] = [1]
    piece.save(path)
    resumed = Recorder()
    out = record_sharded(whole.settings, tmp_path, 9_000, progress=False, recorder=resumed)
    assert resumed.recorded == [0, 1, 2, 3]
    ids = np.concatenate([out.load_shard(i).prompt_ids for i in range(len(out))])
    np.testing.assert_array_equal(ids, whole.prompt_ids)


def test_shard_index_equal_to_the_number_of_shards_is_refused_by_name(tmp_path):
    """Bug: shard indices were checked with ``<=`` instead of ``<``: index len(shards) gave
    an IndexError from the list instead of the documented InvalidParameterError."""
    from spectheory.lm.shards import shard_trace
    from tests.lm.test_shards import synthetic_trace

    sharded = shard_trace(synthetic_trace(), tmp_path, 10**6)
    assert len(sharded) == 1
    with pytest.raises(stt.InvalidParameterError, match=r"must be in \[0, 1\); got 1"):
        sharded.load_shard(1)


# --------------------------------------------------------------------------- lm/fingerprint.py


class _Tokenizer:
    """The three things a tokenizer's fingerprint reads, nothing else."""

    def __init__(self, template):
        self.chat_template = template
        self.all_special_tokens = ["<s>", "</s>"]

    def get_vocab(self):
        return {"<s>": 0, "</s>": 1, "a": 2, "b": 3}


def test_tokenizer_fingerprint_follows_the_chat_template():
    """Bug: the chat template was left out of the tokenizer's fingerprint.

    Two tokenizers with the same vocabulary and special tokens but another chat
    template encode every prompt differently; their traces must not share a key.
    """
    from spectheory.lm.fingerprint import tokenizer_fingerprint

    a = tokenizer_fingerprint(_Tokenizer("{{ messages }}"))
    assert a == tokenizer_fingerprint(_Tokenizer("{{ messages }}"))  # a fresh computation
    assert a != tokenizer_fingerprint(_Tokenizer("<|user|>{{ messages }}"))


def _module(**tensors):
    import torch
    m = torch.nn.Module()
    for name, t in tensors.items():
        if name.startswith("buf_"):
            m.register_buffer(name, t)
        else:
            m.register_parameter(name, torch.nn.Parameter(t, requires_grad=False))
    return m


def test_weights_fingerprint_follows_dtype_and_shape_not_only_bytes():
    """Bug: the weights fingerprint hashed each tensor's bytes without its dtype and shape.

    By hand: four float32 zeros and two float64 zeros are the same 16 zero bytes;
    a (2, 2) and a (4,) tensor of the same values are the same bytes too.  Each
    pair is another model.
    """
    import torch

    from spectheory.lm.fingerprint import weights_fingerprint

    f32 = _module(w=torch.zeros(4, dtype=torch.float32))
    f64 = _module(w=torch.zeros(2, dtype=torch.float64))
    assert bytes(f32.w.numpy().tobytes()) == bytes(f64.w.numpy().tobytes())
    assert weights_fingerprint(f32) != weights_fingerprint(f64)
    flat = _module(w=torch.arange(4.0))
    square = _module(w=torch.arange(4.0).reshape(2, 2))
    assert weights_fingerprint(flat) != weights_fingerprint(square)


def test_weights_fingerprint_follows_an_edited_buffer():
    """Bug: buffers (a rotary table, a causal mask) were left out of the weights fingerprint.

    The module's only difference is one element of a registered buffer; the
    same module built again gives the same fingerprint.
    """
    import torch

    from spectheory.lm.fingerprint import weights_fingerprint

    a = _module(w=torch.ones(3), buf_inv_freq=torch.tensor([1.0, 0.5, 0.25]))
    b = _module(w=torch.ones(3), buf_inv_freq=torch.tensor([1.0, 0.5, 0.125]))
    again = _module(w=torch.ones(3), buf_inv_freq=torch.tensor([1.0, 0.5, 0.25]))
    assert weights_fingerprint(a) == weights_fingerprint(again)
    assert weights_fingerprint(a) != weights_fingerprint(b)


def test_folder_fingerprint_follows_where_a_file_sits(tmp_path):
    """Bug: a folder's fingerprint hashed each file's base name, not its relative path.

    Two folders holding the same bytes under ``a/w.bin`` and ``b/w.bin`` are
    different model folders (a loader reads them by path).
    """
    for sub in ("one/a", "two/b"):
        (tmp_path / sub).mkdir(parents=True)
        (tmp_path / sub / "w.bin").write_bytes(b"\x00\x01\x02")
    assert lm.file_fingerprint(tmp_path / "one") != lm.file_fingerprint(tmp_path / "two")


# --------------------------------------------------------------------------- sim/_state_digest.py


def _digest(obj):
    from spectheory.sim._state_digest import StateDigest

    return StateDigest().digest(obj)  # a fresh instance: it memoises by id


_LIMIT = 0.5


def _reads_global_in_a_lambda(p):
    keep = lambda x: x > _LIMIT  # noqa: E731 - the global is read by nested code only
    return [x for x in p if keep(x)]


def test_state_digest_sees_a_global_read_by_nested_code(monkeypatch):
    """Bug: the globals a function loads were collected from its own code only, not from the
    lambdas, inner functions and generator expressions nested in it.

    ``_LIMIT`` is loaded by the lambda alone; changing it changes what the function
    returns, so it must change the digest (and the same value must not).
    """
    a = _digest(_reads_global_in_a_lambda)
    assert _digest(_reads_global_in_a_lambda) == a
    monkeypatch.setitem(globals(), "_LIMIT", 0.9)
    assert _reads_global_in_a_lambda([0.7]) == []
    assert _digest(_reads_global_in_a_lambda) != a


def test_state_digest_of_arrays_follows_dtype_and_shape():
    """Bug: an array's digest hashed its bytes only, not its dtype and shape.

    By hand: four float32 zeros and two float64 zeros are the same 16 bytes,
    and ``arange(4)`` as (4,) or (2, 2) the same 32 bytes.
    """
    assert _digest(np.zeros(4, np.float32)) != _digest(np.zeros(2, np.float64))
    assert _digest(np.arange(4)) != _digest(np.arange(4).reshape(2, 2))
    assert _digest(np.arange(4)) == _digest(np.arange(4))


def _with_attribute(p):
    return p > _with_attribute.threshold


_with_attribute.threshold = 0.5


def test_state_digest_follows_a_function_attribute(monkeypatch):
    """Bug: a function's ``__dict__`` (attributes it reads through its own name) was left out.

    ``_with_attribute.threshold`` decides the result; setting it to another value
    must change the digest.
    """
    a = _digest(_with_attribute)
    monkeypatch.setattr(_with_attribute, "threshold", 0.9)
    assert _digest(_with_attribute) != a


class _Thresholded:
    THRESHOLD = 0.5

    def __call__(self, p):
        return p > self.THRESHOLD


def test_state_digest_follows_a_class_attribute(monkeypatch):
    """Bug: plain (non-callable) class attributes were skipped as if they were dunders.

    ``THRESHOLD`` is read by ``__call__``; another value is another verifier.
    """
    a = _digest(_Thresholded)
    monkeypatch.setattr(_Thresholded, "THRESHOLD", 0.9)
    assert _digest(_Thresholded) != a


def test_state_digest_follows_a_code_constant():
    """Bug: a code object's constants were left out of its digest.

    Two functions compiled from source text (no file on disk, so no file digest)
    with the same name, module and bytecode, differing only in a constant.
    """

    def build(constant):
        ns = {"__name__": "user_verifiers"}
        exec(compile(f"def f(x):\n    return x > {constant}\n", "<verifier>", "exec"), ns)
        return ns["f"]

    assert _digest(build(0.5)) == _digest(build(0.5))
    assert _digest(build(0.5)) != _digest(build(0.9))


class _LowBase:
    def limit(self):
        return 0.1


class _HighBase:
    def limit(self):
        return 0.9


def test_state_digest_follows_a_class_base():
    """Bug: a class's bases were left out of its digest.

    Two classes of the same name, module and body whose inherited ``limit``
    differs (built with ``type``, so neither is importable by name).
    """
    low = type("Verifier", (_LowBase,), {})
    high = type("Verifier", (_HighBase,), {})
    assert low().limit() != high().limit()
    assert _digest(low) != _digest(high)


def test_state_digest_of_equal_sets_is_equal_whatever_their_order():
    """Bug: a set's elements were digested in iteration order, not sorted.

    By hand (CPython): 0 and 8 share a slot of an 8-slot table, so ``{0, 8}``
    built in either order iterates in that order.  Equal sets, equal digests.
    """
    a, b = set([0, 8]), set([8, 0])
    assert a == b
    assert list(a) != list(b)  # the premise: the iteration orders differ
    assert _digest(a) == _digest(b)
    assert _digest(frozenset([0, 8])) == _digest(frozenset([8, 0]))


# --------------------------------------------------------------------------- lm/capacity.py


class _Head:
    """A model whose LM head is the identity and whose embedding has 7 parameters."""

    def get_output_embeddings(self):
        return lambda h: h

    def get_input_embeddings(self):
        import torch

        return torch.nn.Embedding(7, 1)


def _capacity(monkeypatch, layers=(1,), temperatures=(1.0, 0.0)):
    """capacity_profile on two prompts with hand-made hidden states (no model).

    The hidden state after the last layer is ``log p`` and after layer 1 ``log q``
    (the head is the identity), so the softmaxes are p and q:

    * prompt 4, one position: p = (1/2, 1/4, 1/4), q = (6/10, 3/10, 1/10);
    * prompt 9, three positions: p = q = (1/2, 1/4, 1/4).
    """
    from types import SimpleNamespace

    import torch

    from spectheory.lm import capacity

    p = np.array([0.5, 0.25, 0.25])
    q = np.array([0.6, 0.3, 0.1])

    def hidden(loaded, trace):
        for pid, qs in ((4, [q]), (9, [p, p, p])):
            last = torch.as_tensor(np.log([p] * len(qs)))
            exit1 = torch.as_tensor(np.log(qs))
            yield pid, (exit1, exit1, exit1, exit1, last)  # 4 layers: entries 0..4

    monkeypatch.setattr(capacity, "teacher_forced_hidden", hidden)
    monkeypatch.setattr(capacity, "early_exit_logits", lambda model, hs, L: hs[L])
    monkeypatch.setattr(capacity, "draft_parameter_count", lambda loaded, L: 1000 * L)
    loaded = SimpleNamespace(model=_Head(), num_layers=4, name="hand")
    trace = lm.Trace.from_arrays(*_logits())
    return capacity.capacity_profile(loaded, trace, temperatures=temperatures, layers=layers)


def test_capacity_acceptance_is_the_mean_over_positions(monkeypatch):
    """Bug: the mean acceptance averaged the per-prompt means (each prompt weighing 1)
    instead of pooling all positions.

    By hand at T = 1: prompt 4's position has sum min(p, q) = 1/2 + 1/4 + 1/10 =
    17/20, prompt 9's three positions 1 each; the mean over the 4 positions is
    (17/20 + 3) / 4 = 77/80, not (17/20 + 1) / 2 = 37/40.
    """
    prof = _capacity(monkeypatch)
    assert prof.positions.tolist() == [1, 3] and prof.prompt_ids == (4, 9)
    assert prof.acceptance[0, 0] == pytest.approx(float(F(77, 80)), abs=1e-12)
    np.testing.assert_allclose(prof.per_prompt[0, 0], [17 / 20, 1.0], rtol=0, atol=1e-12)
    assert prof.parameters.tolist() == [1000] and prof.embedding_parameters == 7


def test_capacity_greedy_acceptance_compares_the_argmax_tokens(monkeypatch):
    """Bug: at T = 0 the one-hot law sat on the least likely token (argmin for argmax).

    By hand: p and q share their most likely token (0) at every position, so the
    greedy acceptance is 1; their least likely tokens differ at prompt 4
    (token 1 for p, token 2 for q), which would give 3/4.
    """
    prof = _capacity(monkeypatch)
    assert prof.temperatures.tolist() == [1.0, 0.0]
    assert prof.acceptance[1, 0] == 1.0


def test_capacity_refuses_the_last_layer_as_an_exit(monkeypatch):
    """Bug: the exit layer L = num_layers (the target itself) was accepted (``<=`` for ``<``).

    With 4 layers the exits are 1, 2, 3.
    """
    with pytest.raises(stt.InvalidParameterError, match=r"in \[1, 4\); got 4"):
        _capacity(monkeypatch, layers=(1, 4))


# --------------------------------------------------------------------------- sim/bugzoo.py


class _ZeroCoin:
    """A generator whose every uniform is exactly 0 (float32 ``rand`` can return it)."""

    def random(self):
        return 0.0


def test_bug_zoo_never_emits_a_zero_probability_token_on_a_zero_coin():
    """Bug: the inverse-CDF draw used ``side="left"``: a uniform of exactly 0 picked token 0
    even where its mass is 0 (the zero-coin boundary class of docs/theory.md §7.5).

    ``target_at_temperature(0.7)`` with p = (0, 1/2, 1/2) and the draft on token 0:
    its ratio p(0)/q(0) = 0 rejects, and the residual norm((norm(p^0.7) - q)_+) =
    (0, 1/2, 1/2) has no mass on token 0.  Its first token with mass is 1.
    """
    from spectheory.sim.bugzoo import BUGS

    fn = BUGS["target_at_temperature(0.7)"][0]
    p, q = np.array([0.0, 0.5, 0.5]), np.array([1.0, 0.0, 0.0])
    assert fn(p, q, np.array([0]), _ZeroCoin()) == 1


def test_fp16_flush_keeps_a_probability_of_exactly_two_to_the_minus_14():
    """Bug: the flush to zero used ``<=`` the smallest normal float16 (2^-14) instead of ``<``.

    The bug is documented to lose tokens *below* 2^-14.  Here 8,192 tail tokens of
    exactly 2^-14 hold half the mass (exact in float16), token 0 the other half, and
    the draft is token 0 for sure.  By hand, SD then accepts token 0 with
    probability (1/2) / 1 and otherwise draws from the tail: the tail's exact
    share is 1/2.  Flushing the tail leaves only token 0.  Two-sided binomial test
    on 2,000 trials, false-alarm rate 1e-6.
    """
    from scipy import stats

    from spectheory.sim.bugzoo import BUGS

    fn = BUGS["fp16_flush_to_zero"][0]
    p = np.concatenate([[0.5], np.full(8192, 2.0**-14)])
    q = np.zeros_like(p)
    q[0] = 1.0
    assert F(float(p.astype(np.float16)[1])) == F(1, 2**14) and p.sum() == 1.0
    rng = np.random.default_rng(0)
    tail = sum(fn(p, q, np.array([0]), rng) != 0 for _ in range(2000))
    assert stats.binomtest(int(tail), 2000, 0.5).pvalue > 1e-6, tail


def test_fp16_flush_accepts_an_underflowed_draft_for_sure():
    """Bug: the ``q(x) == 0`` shortcut was dropped, so a draft whose float16 probability
    underflowed was accepted only where its (also underflowed) target mass was > 0.

    The bug is documented to accept such a draft for sure: p(2) = q(2) = 1e-5 < 2^-14
    both flush to 0, and drafting token 2 must return token 2 on every trial.
    """
    from spectheory.sim.bugzoo import BUGS

    fn = BUGS["fp16_flush_to_zero"][0]
    p = np.array([0.5, 0.5 - 1e-5, 1e-5])
    q = np.array([0.5 - 1e-5, 0.5, 1e-5])
    rng = np.random.default_rng(0)
    assert {fn(p, q, np.array([2]), rng) for _ in range(50)} == {2}


# --------------------------------------------------------------------------- lm/cost.py


def test_cost_ratio_is_the_median_draft_step_over_the_median_target_step(monkeypatch):
    """Bugs: the warm-up steps were timed (``i > warmup`` for ``i >= warmup`` drops the first
    timed step instead), the mean replaced the median, or the ratio was inverted.

    The steppers advance a scripted clock: with ``warmup = 1`` and ``repeats = 3``
    the draft takes 100 (warm-up), then 1, 2, 9 and the target 100, then 4, 4, 4.
    By hand: median draft step 2, median target step 4, c = 2 / 4 = 1/2 (the
    mean draft step would be 4, dropping the first timed step 5.5).
    """
    from types import SimpleNamespace

    import torch  # noqa: F401  (the cost helpers time torch models)

    from spectheory.lm import cost, draft_kinds

    clock = [0.0]

    class Stepper:
        def __init__(self, durations):
            self.durations = list(durations)

        def prefill(self, ids):
            pass

        def step(self, tok):
            clock[0] += self.durations.pop(0)

    draft = Stepper([100, 1, 2, 9])
    kind = SimpleNamespace(cost_stepper=lambda loaded, arg: (draft, 3), label=lambda arg: "exit:3")
    monkeypatch.setattr(draft_kinds, "resolve_draft", lambda loaded, layer: (kind, 3))
    monkeypatch.setattr(cost, "HFStepper", lambda model: Stepper([100, 4, 4, 4]))
    monkeypatch.setattr(cost, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    loaded = SimpleNamespace(model=None, vocab_size=1000)
    r = cost.measure_cost_ratio(loaded, 3, repeats=3, context=4, warmup=1)
    assert (r.c, r.t_draft, r.t_target, r.layer, r.draft) == (0.5, 2, 4, 3, "exit:3")


def test_bug_zoo_prepares_again_when_a_row_is_rewritten_in_place():
    """Bug: each zoo entry reused its per-row preparation while the data address, the size
    and the sums of p and q were unchanged; every distribution sums to 1, so a row
    written into the same buffer was served the previous row's preparation.

    ``argmax_draft_sampled_ratio`` on p = (3/5, 2/5, 0), q = (4/5, 1/5, 0), then the
    same buffers rewritten to p = (0, 2/5, 3/5), q = (0, 1/5, 4/5).  By hand, the
    second row's law (docs/theory.md §7.5: argmax draft, softmax ratio) drafts token
    2, accepts it with probability (3/5) / (4/5) = 3/4, and otherwise draws the
    residual norm((p - q)_+) = token 1: the law (0, 1/4, 3/4).  The stale
    preparation drafts token 0, of target mass 0.  Binomial test on token 2's
    count, false-alarm rate 1e-6.
    """
    from scipy import stats

    from spectheory.sim.bugzoo import BUGS

    fn = BUGS["argmax_draft_sampled_ratio"][0]
    rng = np.random.default_rng(0)
    p, q = np.array([0.6, 0.4, 0.0]), np.array([0.8, 0.2, 0.0])
    first = [fn(p, q, np.array([0]), rng) for _ in range(20)]
    assert set(first) <= {0, 1}
    p[:] = [0.0, 0.4, 0.6]
    q[:] = [0.0, 0.2, 0.8]
    out = np.array([fn(p, q, np.array([2]), rng) for _ in range(2000)])
    counts = np.bincount(out, minlength=3)
    assert counts[0] == 0, counts
    assert stats.binomtest(int(counts[2]), 2000, 0.75).pvalue > 1e-6, counts
