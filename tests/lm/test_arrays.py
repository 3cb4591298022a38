"""Trace files without a model: header checksums, arrays from any framework, settings, the cache."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import spectheory as stt
import spectheory.lm as lm
from spectheory.lm import arrays as arrays_mod
from spectheory.lm import cache as cache_mod


def _pair(seed=0, n=12, v=7):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, v)) * 2, rng.standard_normal((n, v)) * 2


def _small_trace():
    t, d = _pair()
    pids = np.repeat([2, 5, 9], 4)
    return lm.Trace.from_arrays(
        t,
        {"exit:3": d, "small": d[::-1].copy()},
        prompt_ids=pids,
        tokens=np.arange(12) % 7,
        prompt_tokens=[np.array([1, 2]), np.array([3]), np.array([4, 5, 6])],
        ngram_orders=(2,),
        name="unit",
        dtype="float16",
    )


# --------------------------------------------------------------------------- header checksum


def _header(raw: bytes):
    n = struct.unpack("<Q", raw[:8])[0]
    return n, raw[8 : 8 + n].decode()


def _with_header(raw: bytes, text: str) -> bytes:
    """Replace the JSON header by ``text`` of the same byte length (data offsets unchanged)."""
    n, _ = _header(raw)
    assert len(text.encode()) == n, "the edit must keep the header's length"
    return raw[:8] + text.encode() + raw[8 + n :]


@pytest.fixture()
def trace_file(tmp_path):
    path = _small_trace().save(tmp_path / "t.safetensors")
    assert lm.load_trace(path).num_positions == 12  # the unedited file loads
    return path


def _expect_refused(tmp_path, raw, match):
    bad = tmp_path / "edited.safetensors"
    bad.write_bytes(raw)
    with pytest.raises(stt.TraceError, match=match):
        lm.load_trace(bad)


def test_same_length_dtype_edit_is_refused(trace_file, tmp_path):
    raw = trace_file.read_bytes()
    _, text = _header(raw)
    assert '"dtype":"F16"' in text
    _expect_refused(tmp_path, _with_header(raw, text.replace('"dtype":"F16"', '"dtype":"I16"', 1)),
                    "header .* fails its SHA-256 checksum")


def test_swapped_shape_is_refused(trace_file, tmp_path):
    raw = trace_file.read_bytes()
    _, text = _header(raw)
    doc = json.loads(text)
    assert doc["target_logits"]["shape"] == [12, 7]
    edited = text.replace('"shape":[12,7]', '"shape":[7,12]', 1)
    assert edited != text
    _expect_refused(tmp_path, _with_header(raw, edited), "header .* fails its SHA-256 checksum")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('\\"temperature\\": 1.0', '\\"temperature\\": 2.0'),  # settings
        ("[2, 5, 9]", "[5, 2, 9]"),  # prompt order (settings.prompts and prompt_order)
        ("logits:small", "logits:smalL"),  # a draft's name
    ],
)
def test_same_length_metadata_edits_are_refused(trace_file, tmp_path, old, new):
    raw = trace_file.read_bytes()
    _, text = _header(raw)
    assert old in text, (old, text[:400])
    _expect_refused(tmp_path, _with_header(raw, text.replace(old, new)),
                    "fails its SHA-256 checksum|lists tensors")


def test_broken_inner_json_is_a_trace_error(trace_file, tmp_path):
    raw = trace_file.read_bytes()
    _, text = _header(raw)
    i = text.index('{\\"checksums')
    edited = text[:i] + "[" + text[i + 1 :]  # the inner JSON now opens a list it never closes
    _expect_refused(tmp_path, _with_header(raw, edited), "metadata is not valid JSON")


def test_old_format_is_refused_with_advice(trace_file, tmp_path):
    raw = trace_file.read_bytes()
    _, text = _header(raw)
    edited = text.replace('\\"format\\": 2', '\\"format\\": 1')
    assert edited != text
    _expect_refused(tmp_path, _with_header(raw, edited), "has format 1; this version reads 2")


def test_every_single_byte_flip_of_the_header_is_caught_or_harmless(trace_file, tmp_path):
    """Flip one bit in each of 200 spread header bytes: the load raises TraceError or the data
    and metadata are unchanged (a bit flip in JSON whitespace-free text always changes it)."""
    raw = trace_file.read_bytes()
    n, _ = _header(raw)
    good = lm.load_trace(trace_file)
    bad = tmp_path / "flip.safetensors"
    for pos in np.linspace(8, 8 + n - 1, 200).astype(int):
        flipped = bytearray(raw)
        flipped[pos] ^= 0x01
        bad.write_bytes(bytes(flipped))
        try:
            back = lm.load_trace(bad)
        except stt.TraceError:
            continue
        # only a flip inside padding spaces can load; then nothing may differ
        assert back.metadata == good.metadata
        np.testing.assert_array_equal(back.target_logits, good.target_logits)


# --------------------------------------------------------------------------- rows


def test_rows_do_not_wrap_and_out_of_range_is_clear():
    tr = _small_trace()
    with pytest.raises(stt.InvalidParameterError, match=r"rows must be .*\[0, 12\).* -1"):
        tr.draft_logits("exit:3", [-1])
    with pytest.raises(stt.InvalidParameterError, match=r"got 999"):
        tr.draft_logits("exit:3", [999])
    with pytest.raises(stt.InvalidParameterError, match=r"got 999"):
        tr.context(999)
    with pytest.raises(stt.InvalidParameterError, match="integer position"):
        tr.draft_logits("exit:3", [0.5])
    np.testing.assert_array_equal(tr.draft_logits("exit:3", [11]), tr.draft_logits("exit:3")[[11]])


# --------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"temperature": float("inf")}, "temperature must be a finite number >= 0; got inf"),
        ({"temperature": float("nan")}, "temperature must be a finite number >= 0; got nan"),
        ({"seed": -1}, "seed must be .*; got -1"),
        ({"seed": 1.5}, "seed must be a non-negative integer; got 1.5"),
        ({"seed": True}, "seed must be a non-negative integer; got True"),
        ({"prompts": (0.5,)}, r"prompts must be .* got \[0.5\]"),
        ({"prompts": (-1,)}, r"prompts must be .* got \[-1\]"),
        ({"prompts": ()}, r"prompts must be a non-empty"),
        # recorded twice, a prompt's positions weighed double in every mean
        ({"prompts": (0, 3, 0)}, r"prompts must not repeat an id; \[0\] repeat"),
        ({"drafts": ("exit:15", "exit:15")}, r"drafts must not repeat a spec"),
        ({"model": 3}, "model must be a non-empty string; got 3"),
        ({"drafts": "exit:3"}, "drafts must be a sequence"),
        ({"prompt_file": 5}, "prompt_file must be a path string"),
    ],
)
def test_trace_settings_validation(kwargs, match):
    with pytest.raises(stt.InvalidParameterError, match=match):
        lm.TraceSettings(**kwargs)


def test_default_settings_are_the_built_in_prompts():
    assert lm.TraceSettings().prompts == tuple(range(len(lm.PROMPTS)))
    assert lm.TraceSettings(prompts=None) == lm.TraceSettings()


# --------------------------------------------------------------------------- arrays


def test_from_arrays_replays_like_an_oracle():
    """Replay of an array trace: at n = 1 the per-position bound is sum_x min(p, q), computed
    here independently from the logits the test built."""
    from spectheory.sim.replay import replay

    t, d = _pair(3, n=30, v=9)
    tr = lm.Trace.from_arrays(t, {"mine": d}, name="oracle")
    table = replay(tr, samplings=("iid",), ns=(1,), temperatures=(1.0,), trials=20)
    p = np.exp(t - t.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    q = np.exp(d - d.max(1, keepdims=True))
    q /= q.sum(1, keepdims=True)
    want = np.minimum(p, q).sum(1)
    rows = [r for r in table if r["draft"] == "logits:mine"]
    by_pos = {r["position"]: r["bound"] for r in rows}
    assert sorted(by_pos) == list(range(30))
    # float32 storage of the logits: relative error of p, q below 1e-6, so 1e-5 is ample
    np.testing.assert_allclose([by_pos[i] for i in range(30)], want, rtol=1e-5)


def test_from_probs_keeps_the_distributions_and_zeros():
    p = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    q = np.array([[0.0, 1.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    tr = lm.Trace.from_arrays(p, q, kind="probs")
    back = stt.process_logits(tr.draft_logits("logits:draft"), 1.0)
    np.testing.assert_allclose(back, q, rtol=1e-6, atol=0)
    assert tr.target_logits[0, 2] == -np.inf


def test_probabilities_are_never_read_as_logits(tmp_path):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(4)
    p, q = rng.dirichlet(np.ones(6), size=5), rng.dirichlet(np.ones(6), size=5)
    with pytest.raises(stt.InvalidParameterError, match="target rows are probabilities"):
        lm.Trace.from_arrays(p, {"small": q})  # kind defaults to logits
    save_file({"target": p, "draft/small": q}, str(tmp_path / "probs.safetensors"))
    with pytest.raises(stt.TraceError, match="pass kind='probs'"):
        lm.load_trace(tmp_path / "probs.safetensors")  # no 'kind' metadata
    # The same rows shifted by a constant are logits of another law, accepted.
    tr = lm.Trace.from_arrays(p + 1.0, {"small": q + 1.0})
    np.testing.assert_allclose(stt.process_logits(tr.target_logits, 1.0).sum(1), 1, rtol=1e-6)


def test_float32_probabilities_use_the_float32_tolerance(tmp_path):
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(3, 49152, generator=g) * 3, dim=-1)  # float32
    assert abs(float(p.double().sum(1).max()) - 1) > 1e-9  # beyond the float64 tolerance
    tr = lm.Trace.from_arrays(p, {"small": p.flip(1)}, kind="probs")
    assert tr.target_logits.shape == (3, 49152)
    path = lm.save_arrays(tmp_path / "f32.safetensors", p.numpy(), {"s": p.numpy()}, kind="probs")
    assert lm.load_trace(path).target_logits.shape == (3, 49152)
    with pytest.raises(stt.InvalidDistributionError):
        lm.Trace.from_arrays(p * 1.01, {"small": p}, kind="probs")  # 1e-2 off: refused


def test_bfloat16_array_files_are_read_exactly(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(1)
    t, d = torch.randn(4, 6, generator=g), torch.randn(4, 6, generator=g)
    save_file({"target": t.bfloat16(), "draft/small": d.bfloat16()}, str(tmp_path / "b.st"))
    (tmp_path / "b.st").rename(tmp_path / "b.safetensors")
    tr = lm.load_trace(tmp_path / "b.safetensors")  # numpy has no bfloat16: was a TypeError
    np.testing.assert_array_equal(tr.target_logits, t.bfloat16().float().numpy())
    np.testing.assert_array_equal(
        tr.draft_logits("logits:small", np.arange(4)), d.bfloat16().float().numpy()
    )


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_float16_storage_keeps_the_law_of_large_and_offset_logits():
    """float16 rows are stored minus their maximum: the law survives any offset.

    Cast as is, a row offset by +3000 moved its probabilities by up to 0.33
    (float16's spacing there is 2); a finite logit of 3e5, or a row 7e4 below
    zero, were refused although their law is representable.
    """
    t, d = _pair()
    for offset in (3000.0, -7e4, 20.0):
        tr = lm.Trace.from_arrays(t + offset, d + offset, dtype="float16")
        assert np.abs(_softmax(tr.target_logits.astype(float)) - _softmax(t)).max() < 2e-3
        assert tr.target_logits.max() == 0
    t[3, 2] = 3e5  # finite, beyond float16: one-hot at token 2 in float64 too
    tr = lm.Trace.from_arrays(t, d, dtype="float16")
    np.testing.assert_array_equal(_softmax(tr.target_logits[3:4].astype(float))[0], np.eye(7)[2])
    assert lm.Trace.from_arrays(t, d, dtype="float32").target_logits[3, 2] == 3e5
    masked, _ = _pair()
    masked[:, 0] = -1e9  # a masking value: probability 0 either way, stored as -inf
    tr = lm.Trace.from_arrays(masked, d, dtype="float16")
    assert np.all(tr.target_logits[:, 0] == -np.inf)


def test_logits_beyond_the_storage_range_are_refused():
    t, d = _pair()
    d[1, 0] = 1e39  # beyond float32
    with pytest.raises(stt.InvalidParameterError, match="draft 'draft' row 1 has logit 1e\\+39"):
        lm.Trace.from_arrays(t, d)


def test_from_arrays_bad_input():
    t, d = _pair()
    with pytest.raises(stt.ShapeMismatchError, match=r"draft 'x' has shape \(12, 6\), the target"):
        lm.Trace.from_arrays(t, {"x": d[:, :6]})
    with pytest.raises(stt.InvalidParameterError, match="row 0 has logit nan"):
        lm.Trace.from_arrays(np.where(np.eye(12, 7) > 0, np.nan, t), d)
    with pytest.raises(stt.InvalidDistributionError):
        lm.Trace.from_arrays(np.full((2, 3), 0.5), np.full((2, 3), 1 / 3), kind="probs")
    with pytest.raises(stt.InvalidParameterError, match="non-decreasing"):
        lm.Trace.from_arrays(t, d, prompt_ids=np.arange(12)[::-1])
    with pytest.raises(stt.InvalidParameterError, match="never repeated"):  # was accepted
        lm.Trace.from_arrays(t, d, steps=[0, 1, 2, 3, 3, 5, 6, 7, 8, 9, 10, 11])
    with pytest.raises(stt.InvalidParameterError, match="ngram_orders needs tokens"):
        lm.Trace.from_arrays(t, d, ngram_orders=(3,))
    with pytest.raises(stt.InvalidParameterError, match="n-gram drafts are rebuilt"):
        lm.Trace.from_arrays(t, {"ngram:3": d})
    with pytest.raises(stt.InvalidParameterError, match="kind must be"):
        lm.Trace.from_arrays(t, d, kind="logprobs")


@pytest.mark.parametrize("meta", [{"Kind": "probs"}, {"kind": "probs", "temperature": "0.7"}])
def test_array_layout_refuses_metadata_it_does_not_read(tmp_path, meta):
    """A misspelt ``Kind`` or a ``temperature`` was ignored without a word (the rows read
    with the defaults, the temperature never applied); ``format``, which torch's writer
    adds by itself, is still read past."""
    from safetensors.numpy import save_file

    p = np.random.default_rng(0).dirichlet(np.ones(8), size=3)
    save_file({"target": p, "draft/x": p}, str(tmp_path / "a.safetensors"), metadata=meta)
    bad = sorted(set(meta) - {"kind"})
    with pytest.raises(stt.TraceError, match=rf"unknown metadata \{bad}"):
        lm.load_trace(tmp_path / "a.safetensors")
    save_file({"target": p, "draft/x": p}, str(tmp_path / "b.safetensors"),
              metadata={"kind": "probs", "format": "pt"})  # fmt: skip
    assert lm.load_trace(tmp_path / "b.safetensors").target_logits.shape == (3, 8)


def test_array_layout_file_roundtrip_and_missing_tensors(tmp_path):
    from safetensors.numpy import save_file

    t, d = _pair(1)
    path = lm.save_arrays(tmp_path / "a.safetensors", t.astype(np.float32), {"small": d})
    tr = lm.load_trace(path)  # load_trace reads the array layout too
    assert tr.drafts == ("logits:small",)
    np.testing.assert_array_equal(tr.target_logits, t.astype(np.float32))
    save_file({"target": t}, str(tmp_path / "nodraft.safetensors"))
    with pytest.raises(stt.TraceError, match="at least one 'draft/<name>'"):
        lm.load_trace(tmp_path / "nodraft.safetensors")
    save_file({"target": t, "draft/x": d[:5]}, str(tmp_path / "short.safetensors"))
    with pytest.raises(stt.TraceError, match=r"draft 'x' has shape \(5, 7\)"):
        lm.load_trace(tmp_path / "short.safetensors")
    save_file({"target": t, "draft/x": d, "tokenz": np.zeros(12)}, str(tmp_path / "x.safetensors"))
    with pytest.raises(stt.TraceError, match=r"unknown tensors \['tokenz'\]"):
        lm.load_trace(tmp_path / "x.safetensors")


def test_array_trace_saves_loads_and_rebuilds_ngrams(tmp_path):
    tr = _small_trace()
    back = lm.load_trace(tr.save(tmp_path / "t.safetensors"))
    assert back.drafts == ("exit:3", "logits:small", "ngram:2")
    np.testing.assert_array_equal(back.draft_logits("ngram:2"), tr.draft_logits("ngram:2"))
    # position 5 is prompt 5's second step: context = its prompt [3] then token 4
    np.testing.assert_array_equal(back.context(5), [3, 4])
    assert back.settings.model == "arrays:unit"


def test_missing_stored_tensor_is_a_trace_error(tmp_path):
    from safetensors.numpy import save_file

    tr = _small_trace()
    tensors = tr._tensors()
    del tensors["exit_logits/exit:3"]
    meta = dict(tr.metadata)
    from spectheory.lm.trace import _header_sha256, _sha256

    meta["checksums"] = {k: _sha256(v) for k, v in tensors.items()}
    meta["header_sha256"] = _header_sha256(meta, tensors)
    save_file(tensors, str(tmp_path / "m.safetensors"), {"spectheory": json.dumps(meta)})
    with pytest.raises(stt.TraceError, match="draft 'exit:3' is listed but its logits are missing"):
        lm.load_trace(tmp_path / "m.safetensors")


# --------------------------------------------------------------------------- prompts


def test_prompt_files(tmp_path):
    txt = tmp_path / "p.txt"
    txt.write_text("first prompt\n\n  second one  \n")
    want = (("file", "first prompt", "user"), ("file", "second one", "user"))
    assert lm.load_prompts(txt) == want
    jl = tmp_path / "p.jsonl"
    jl.write_text(
        '{"messages": [{"role": "system", "content": "Be brief."}, '
        '{"role": "user", "content": "Hi"}], "category": "chat"}\n{"text": "raw text"}\n'
    )
    got = lm.load_prompts(jl)
    assert got[0][2] == "messages" and got[1] == ("file", "raw text", "raw")
    s = lm.TraceSettings(prompt_file=str(jl))
    assert s.prompts == (0, 1)
    with pytest.raises(stt.InvalidParameterError, match=r"in \[0, 2\); got \[2\]"):
        lm.TraceSettings(prompt_file=str(jl), prompts=(2,))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\n{"prompt": 3}\n')
    with pytest.raises(stt.InvalidParameterError, match="line 2: prompt must be a string"):
        lm.load_prompts(bad)
    bad.write_text('{"prompt": "a", "text": "b"}\n')
    with pytest.raises(stt.InvalidParameterError, match="line 1 must be an object with exactly"):
        lm.load_prompts(bad)
    bad.write_text("{oops\n")
    with pytest.raises(stt.InvalidParameterError, match="line 1 is not JSON"):
        lm.load_prompts(bad)
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(stt.InvalidParameterError, match="holds no prompt"):
        lm.load_prompts(tmp_path / "empty.txt")
    with pytest.raises(stt.InvalidParameterError, match="cannot be read"):
        lm.load_prompts(tmp_path / "none.txt")


def test_json_prompt_files_are_never_sent_raw(tmp_path):
    # .json and .JSONL went through the plain-text layout: the model got the
    # JSON text itself as the prompt, and the category was lost.
    want = (("poems", "Write a haiku about rain.", "user"),)
    line = '{"prompt": "Write a haiku about rain.", "category": "poems"}\n'
    for name in ("p.json", "p.JSONL", "p.Jsonl"):
        (tmp_path / name).write_text(line)
        assert lm.load_prompts(tmp_path / name) == want
    (tmp_path / "a.json").write_text("[" + line.strip() + "]")
    assert lm.load_prompts(tmp_path / "a.json") == want
    (tmp_path / "p.txt").write_text(line)
    with pytest.raises(stt.InvalidParameterError, match="line 1 is a JSON prompt object"):
        lm.load_prompts(tmp_path / "p.txt")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a", "sytem": "Be brief."}\n')
    with pytest.raises(stt.InvalidParameterError, match=r"unknown key\(s\) \['sytem'\]"):
        lm.load_prompts(bad)
    bad.write_text('{"prompt": "a", "prompt": "b"}\n')
    with pytest.raises(stt.InvalidParameterError, match="line 1 repeats the key"):
        lm.load_prompts(bad)
    (tmp_path / "brace.txt").write_text("{not json, a prompt in braces}\n")
    assert lm.load_prompts(tmp_path / "brace.txt")[0][1] == "{not json, a prompt in braces}"


def test_prompt_file_content_is_in_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path))
    f = tmp_path / "p.txt"
    f.write_text("one\ntwo\n")
    s = lm.TraceSettings(prompt_file=str(f), model="arrays:x", prompts=(0, 1))
    k1 = s.key()
    f.write_text("one\nTWO\n")
    assert s.key() != k1


# --------------------------------------------------------------------------- cache


def test_cache_dir_variables(tmp_path, monkeypatch):
    for var in ("SPECTHEORY_CACHE", "SPECTHEORY_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert lm.cache_dir() == tmp_path / "home" / ".cache" / "spectheory"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert lm.cache_dir() == tmp_path / "home" / ".cache" / "spectheory"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert lm.cache_dir() == tmp_path / "xdg" / "spectheory"
    monkeypatch.setenv("SPECTHEORY_CACHE_DIR", str(tmp_path / "old"))
    assert lm.cache_dir() == tmp_path / "old"
    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path / "new"))
    assert lm.cache_dir() == tmp_path / "new"


def test_cache_list_and_clear(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path))
    path = _small_trace().save(tmp_path / "traces" / "abc.safetensors")
    (tmp_path / "traces" / "abc.safetensors123.tmp").write_bytes(b"half")
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "a.safetensors").write_bytes(b"12345")
    (tmp_path / "keep.txt").write_text("not a cache entry")
    entries = lm.cache_entries()
    assert [(e.kind, e.name, e.partial) for e in entries] == [
        ("traces", "abc.safetensors", False),
        ("traces", "abc.safetensors123.tmp", True),
        ("adapters", "a.safetensors", False),
    ]
    size = path.stat().st_size
    assert entries[0].bytes == size
    assert lm.clear_cache("traces") == (2, size + 4)
    assert [e.kind for e in lm.cache_entries()] == ["adapters"]
    with pytest.raises(stt.InvalidParameterError, match="kind must be None or one of"):
        lm.clear_cache("everything")
    assert lm.clear_cache() == (1, 5)
    assert (tmp_path / "keep.txt").is_file()
    assert cache_mod.CACHE_KINDS[0] == "traces"


def test_fingerprint_changes_with_any_byte(tmp_path):
    f = tmp_path / "w.gguf"
    rng = np.random.default_rng(0)
    data = bytearray(rng.integers(0, 256, 40 << 20, dtype=np.uint8).tobytes())
    f.write_bytes(bytes(data))
    a = lm.file_fingerprint(f)
    data[100] ^= 1  # inside the 16 MiB head
    f.write_bytes(bytes(data))
    b = lm.file_fingerprint(f)
    data[-1] ^= 1  # the last byte
    f.write_bytes(bytes(data))
    c = lm.file_fingerprint(f)
    # Past the head and between the 1,024 blocks of 4 KiB an earlier form sampled (one small
    # tensor edited on disk kept the key, and the unedited model's trace was served).
    size, gap = len(data), (len(data) - 4096) // 1023
    middle = (size - 4096) * 600 // 1023 + 4096 + gap // 2
    data[middle] ^= 1
    f.write_bytes(bytes(data))
    d = lm.file_fingerprint(f)
    assert len({a, b, c, d}) == 4
    with pytest.raises(stt.InvalidParameterError, match="neither a file nor a folder"):
        lm.file_fingerprint(tmp_path / "none")
    assert arrays_mod.__name__.endswith("arrays")


def test_array_trace_is_sharded_and_swept(tmp_path):
    """An array trace goes through shard_trace and the serial sweep; n = 1 bound = sum min(p, q)."""
    from spectheory.lm.shards import shard_trace
    from spectheory.sim.sweeps import SweepGrid, sweep

    t, d = _pair(5, n=12, v=7)
    tr = lm.Trace.from_arrays(t, {"mine": d}, prompt_ids=np.repeat([0, 1, 2], 4))
    sharded = shard_trace(tr, tmp_path / "sh", max_shard_bytes=4000)
    assert len(sharded) >= 2
    grid = SweepGrid(ns=(1,), samplings=("iid",), verifiers=("sd",), trials=20)
    table = sweep(sharded, grid)
    got = {r["position"]: r["bound"] for r in table}
    p = np.exp(t - t.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    q = np.exp(d - d.max(1, keepdims=True))
    q /= q.sum(1, keepdims=True)
    np.testing.assert_allclose([got[i] for i in range(12)], np.minimum(p, q).sum(1), rtol=1e-5)


def test_prompt_files_with_a_byte_order_mark(tmp_path):
    # Read as utf-8, a BOM stayed in the first .txt prompt ('\ufeffHello there', extra tokens
    # for the model), hid a JSON object line from the "never sent raw" guard, and made a
    # .jsonl file's first line "not JSON".
    bom = b"\xef\xbb\xbf"
    (tmp_path / "p.txt").write_bytes(bom + b"Hello there\nSecond\n")
    assert lm.load_prompts(tmp_path / "p.txt") == (
        ("file", "Hello there", "user"),
        ("file", "Second", "user"),
    )
    (tmp_path / "p.jsonl").write_bytes(bom + b'{"prompt": "Hi"}\n')
    assert lm.load_prompts(tmp_path / "p.jsonl") == (("file", "Hi", "user"),)
    (tmp_path / "j.txt").write_bytes(bom + b'{"prompt": "Hi"}\n')
    with pytest.raises(stt.InvalidParameterError, match="line 1 is a JSON prompt object"):
        lm.load_prompts(tmp_path / "j.txt")


@pytest.mark.parametrize("line", ['{"prompt": ""}', '{"prompt": "   "}', '{"text": "\\n"}'])
def test_blank_json_prompts_are_refused(tmp_path, line):
    """A blank prompt reached the model: the chat template turns an empty turn into tokens."""
    (tmp_path / "p.jsonl").write_text('{"prompt": "Hi"}\n' + line + "\n")
    with pytest.raises(stt.InvalidParameterError, match=r"line 2: (prompt|text) is blank"):
        lm.load_prompts(tmp_path / "p.jsonl")


def test_a_chat_of_blank_messages_is_refused_as_a_blank_prompt_is(tmp_path):
    """A chat whose every message was blank passed, where a blank prompt is refused."""
    blank = {"messages": [{"role": "system", "content": " "}, {"role": "user", "content": ""}]}
    (tmp_path / "p.jsonl").write_text('{"prompt": "Hi"}\n' + json.dumps(blank) + "\n")
    with pytest.raises(stt.InvalidParameterError, match=r"line 2: every message of the chat"):
        lm.load_prompts(tmp_path / "p.jsonl")
    one = {"messages": [{"role": "system", "content": ""}, {"role": "user", "content": "Hi"}]}
    (tmp_path / "q.jsonl").write_text(json.dumps(one) + "\n")
    assert lm.load_prompts(tmp_path / "q.jsonl")[0][2] == "messages"


def test_out_of_range_tokens_are_named():
    # the message gave the largest token (2 here), not the offending -1
    p = np.full((4, 5), 0.2)
    with pytest.raises(stt.InvalidParameterError, match=r"\[0, 5\); tokens\[3\] = -1"):
        lm.Trace.from_arrays(p, {"d": p}, kind="probs", tokens=[0, 1, 2, -1])


def test_prompt_lines_end_only_at_newlines(tmp_path):
    """str.splitlines cut a .txt line at U+2028, U+0085 or a form feed (one prompt became
    two, silently) and a .jsonl line at a U+2028 inside a JSON string (a valid file
    refused as "not JSON"); \\r\\n and a lone \\r still end a line."""
    (tmp_path / "p.txt").write_bytes("one\u2028line\r\nx\x85y\x0cz\rlast\n".encode())
    assert lm.load_prompts(tmp_path / "p.txt") == (
        ("file", "one\u2028line", "user"),
        ("file", "x\x85y\x0cz", "user"),
        ("file", "last", "user"),
    )
    (tmp_path / "p.jsonl").write_bytes('{"prompt": "a\u2028b"}\n{"text": "c\u2029"}\n'.encode())
    assert lm.load_prompts(tmp_path / "p.jsonl") == (("file", "a\u2028b", "user"),
                                                     ("file", "c\u2029", "raw"))  # fmt: skip


def test_json_array_after_whitespace_and_built_in_prompts_are_user_turns(tmp_path):
    (tmp_path / "a.json").write_text('\n  [{"prompt": "Hi"}, {"text": "raw"}]\n')
    assert lm.load_prompts(tmp_path / "a.json") == (("file", "Hi", "user"), ("file", "raw", "raw"))
    from spectheory.lm.prompts import PROMPTS, prompt_set

    assert prompt_set("") == tuple((c, t, "user") for c, t in PROMPTS)
