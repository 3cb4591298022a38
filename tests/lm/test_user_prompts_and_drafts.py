"""A user's prompt files, corpus, adapters and cost steppers on a tiny model, against oracles.

The two-layer Llama of tests/live/test_user_models.py, grown to 258 tokens, stands in
for the user's model, with a byte-level tokenizer written here (one token per UTF-8
byte, ``<|im_start|>`` and ``<|im_end|>``, a ChatML template): every prompt's tokens
decode back to the exact text the model was given, so a prompt dropped, split, stripped
or sent through the wrong template shows up as a different string.  Corpus sequences,
teacher states, adapters and the cost steppers are compared with plain recomputation:
one unpadded forward pass of the whole sequence without any cache, per sequence.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from spectheory import lm  # noqa: E402
from spectheory._errors import InvalidParameterError  # noqa: E402
from spectheory.lm import adapters as A  # noqa: E402
from spectheory.lm import corpus as C  # noqa: E402
from spectheory.lm.steppers import AdapterCostStepper, HFStepper  # noqa: E402
from tests.live.test_user_models import tiny_llama  # noqa: E402

TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def byte_tokenizer():
    """Every UTF-8 byte one token (ids 0..255), then ``<|im_start|>`` 256, ``<|im_end|>`` 257."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=core)
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.chat_template = TEMPLATE
    return tok


def chat(*turns, prompt=True):
    """The ChatML text of ``(role, content)`` turns, written by hand (the template's oracle)."""
    text = "".join(f"<|im_start|>{r}\n{c}<|im_end|>\n" for r, c in turns)
    return text + ("<|im_start|>assistant\n" if prompt else "")


def decode(tok, ids):
    return tok.decode([int(i) for i in ids], clean_up_tokenization_spaces=False)


@pytest.fixture(scope="module")
def bytes_model():
    tok = byte_tokenizer()
    model = tiny_llama(0)
    model.resize_token_embeddings(len(tok), mean_resizing=False)
    with torch.no_grad():  # resized rows are random: seed them for every run alike
        g = torch.Generator().manual_seed(1)
        w = model.get_input_embeddings().weight
        w.copy_(torch.randn(w.shape, generator=g) * 0.5)
        h = model.get_output_embeddings().weight
        h.copy_(torch.randn(h.shape, generator=g) * 2.0)
    return lm.LoadedModel.from_model(model, tok, name="bytes-tiny")


def _full(model, ids):
    """One forward pass of ``ids`` (1-D) without cache: (hidden states, logits)."""
    with torch.no_grad():
        out = model(input_ids=torch.as_tensor(np.asarray(ids))[None], output_hidden_states=True)
    return out.hidden_states, out.logits[0]


# --------------------------------------------------------------------------- prompt files

_TXT = (
    "\ufeffFirst café\r\nline one\u2028still line one\r\n\r\n  Zwölf 😀  \n"
    "Tabbed\x85next\x0cpage\rOld Mac\n\n"
)
_TXT_WANT = [
    ("file", chat(("user", "First café"))),
    ("file", chat(("user", "line one\u2028still line one"))),
    ("file", chat(("user", "Zwölf 😀"))),
    ("file", chat(("user", "Tabbed\x85next\x0cpage"))),
    ("file", chat(("user", "Old Mac"))),
]
_CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi\u2029there"}]
_ITEMS = [
    {"prompt": "a\u2028b", "category": "sep"},
    {"text": "  raw text  "},
    {"messages": _CHAT, "category": "chat"},
    {"prompt": "a\u2028b", "category": "sep"},  # a duplicate is its own prompt
]
_ITEMS_WANT = [
    ("sep", chat(("user", "a\u2028b"))),
    ("file", "  raw text  "),
    ("chat", chat(("system", "Be brief."), ("user", "Hi\u2029there"))),
    ("sep", chat(("user", "a\u2028b"))),
]
_JSONL = "\ufeff" + "\r\n\r\n".join(json.dumps(d, ensure_ascii=False) for d in _ITEMS) + "\r\n"
_JSON = json.dumps(_ITEMS, ensure_ascii=False, indent=1)


@pytest.mark.parametrize(
    "name, content, want",
    [("p.txt", _TXT, _TXT_WANT), ("p.jsonl", _JSONL, _ITEMS_WANT), ("p.json", _JSON, _ITEMS_WANT)],
    ids=["txt", "jsonl", "json"],
)
def test_every_prompt_of_a_file_reaches_the_model_exactly(bytes_model, tmp_path, name, content,
                                                          want):  # fmt: skip
    """A line holding U+2028, U+0085 or a form feed was split into two prompts (.txt) or
    refused as "not JSON" (.jsonl, a valid file): lines end at \\n, \\r\\n and \\r only."""
    f = tmp_path / name
    f.write_bytes(content.encode("utf-8"))
    assert [c for c, _, _ in lm.load_prompts(f)] == [c for c, _ in want]
    calls = []
    hook = bytes_model.model.register_forward_pre_hook(
        lambda mod, args, kwargs: calls.append(kwargs["input_ids"][0].tolist()), with_kwargs=True
    )
    try:
        settings = lm.TraceSettings(
            model="bytes-tiny", drafts=("exit:1",), prompt_file=str(f), max_new_tokens=2
        )
        tr = lm.record_trace(settings, loaded=bytes_model, cache=False, progress=False)
    finally:
        hook.remove()
    o = tr.prompt_offsets
    assert tr.metadata["prompt_order"] == list(range(len(want)))
    assert [decode(bytes_model.tokenizer, tr.prompt_tokens[o[j] : o[j + 1]])
            for j in range(len(want))] == [text for _, text in want]  # fmt: skip
    # what the model was fed: each prompt whole, then one token per step
    assert len(calls) == 2 * len(want)
    assert calls[0::2] == [tr.prompt_tokens[o[j] : o[j + 1]].tolist() for j in range(len(want))]
    assert [c[0] for c in calls[1::2]] == tr.tokens[0::2].tolist()


# --------------------------------------------------------------------------- corpus


def test_doc_sequences_are_the_docs_cut_after_their_chat_prefix(bytes_model):
    tok = bytes_model.tokenizer
    s = C.CorpusSettings(max_len=120, doc_sequences=7, samples_per_prompt=0)
    corpus = C.build_corpus(bytes_model, s, cache=False)
    assert corpus.sources == ("doc",) * 7 and len(corpus.sequences) == 7
    texts = iter(C._doc_texts())
    k = 0
    while k < 7:
        question, text = next(texts)
        prefix = chat(("user", question))
        body = tok(text.strip())["input_ids"]
        room = 120 - len(tok(prefix)["input_ids"]) - 1
        if room < 16:
            continue
        for start in range(0, len(body), room):
            if k == 7:
                break
            seq, b = corpus.sequences[k], int(corpus.loss_start[k])
            piece = body[start : start + room]
            last = start + room >= len(body)
            assert decode(tok, seq[: b + 1]) == prefix  # the loss starts after "assistant\n"
            assert seq[b + 1 :].tolist() == piece + ([257] if last else [])
            assert seq.size <= 120
            k += 1
    assert corpus.num_loss_tokens == sum(q.size - 1 - b for q, b in
                                         zip(corpus.sequences, corpus.loss_start))  # fmt: skip
    empty = C.build_corpus(bytes_model, C.CorpusSettings(doc_sequences=0, samples_per_prompt=0),
                           cache=False)  # fmt: skip
    assert empty.sequences == ()


def test_sampled_continuations_follow_the_unpadded_model(bytes_model, monkeypatch, tmp_cache):
    """Left-padded batches with a cache must draw from the law of each sequence alone, at its
    temperature (0.7 and 1.0 alternating over prompts and rounds), cut at ``max_len``."""
    drawn = []

    def argmax(probs, num, generator=None):  # records the law, takes its mode
        drawn.append(probs.detach().clone())
        return probs.argmax(-1, keepdim=True)

    monkeypatch.setattr(torch, "multinomial", argmax)
    tok = bytes_model.tokenizer
    prompts = C.training_prompts(3)
    sizes = [len(tok(chat(("user", q)))["input_ids"]) for q in prompts]
    cut = max(sizes) + 3  # the longest prompt's continuation is cut at max_len, the others not
    assert min(sizes) + 6 <= cut
    s = C.CorpusSettings(max_len=cut, doc_sequences=0, prompts=3, samples_per_prompt=2,
                         sampled_tokens=6)  # fmt: skip
    corpus = C.build_corpus(bytes_model, s, cache=True)
    jobs = [(0.7 if (i + r) % 2 == 0 else 1.0, q) for r in range(2) for i, q in enumerate(prompts)]
    assert len(corpus.sequences) == len(jobs) == 6 and corpus.sources == ("sampled",) * 6
    laws = torch.stack(drawn, 1)  # (jobs, steps, V)
    assert laws.shape[:2] == (6, 6)
    for j, ((T, q), seq, b) in enumerate(zip(jobs, corpus.sequences, corpus.loss_start)):
        prefix = tok(chat(("user", q)))["input_ids"]
        n = len(prefix)
        assert int(b) == n - 1 and seq[:n].tolist() == prefix
        full = prefix + [int(x) for x in laws[j].argmax(-1)]
        assert seq.tolist() == full[:cut]  # cut at max_len
        _, logits = _full(bytes_model.model, full)
        want = torch.softmax(logits[n - 1 : n + 5].double() / T, -1)
        torch.testing.assert_close(laws[j].double(), want, atol=2e-6, rtol=1e-4)
    # the cache gives back the same sequences without sampling again
    drawn.clear()
    again = C.build_corpus(bytes_model, s, cache=True)
    assert drawn == [] and again.sha256 == corpus.sha256
    assert [x.tolist() for x in again.sequences] == [x.tolist() for x in corpus.sequences]
    # with an end token, each continuation stops at it (kept), the others run on
    n0 = len(tok(chat(("user", prompts[0])))["input_ids"])
    end = int(corpus.sequences[0][n0 + 1])
    monkeypatch.setattr(bytes_model.model.generation_config, "eos_token_id", end)
    ended = C.build_corpus(bytes_model, s, cache=False)
    for seq, b, old in zip(ended.sequences, ended.loss_start, corpus.sequences):
        cont = old[b + 1 :].tolist()  # within max_len: the argmax path is the same
        stop = cont.index(end) + 1 if end in cont else len(cont)
        assert seq.tolist() == old[: b + 1].tolist() + cont[:stop]
    assert ended.sequences[0].size == n0 + 2


# --------------------------------------------------------------------------- adapters


def _rms(x, w, eps):
    return w * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


IDS = [256, 3, 77, 200, 12, 257, 5, 140, 99, 31]


@pytest.mark.parametrize("arch", ["layer", "linear"])
def test_initial_adapters_are_the_exits_and_step_like_a_full_pass(bytes_model, arch):
    model = bytes_model.model
    vocab = np.array([0, 5, 31, 140, 257])
    ad = A.init_adapter(bytes_model, 1, arch, vocab=vocab)
    hs, logits = _full(model, IDS)
    # "layer": a copy of layer 2, so the draft is the whole target; "linear": exit:1
    h = hs[2] if arch == "layer" else hs[1]
    eps = model.config.rms_norm_eps
    want = _rms(h[0], model.model.norm.weight, eps) @ model.lm_head.weight.T
    if arch == "layer":
        torch.testing.assert_close(want, logits, atol=1e-5, rtol=1e-5)
    pos = torch.arange(len(IDS))[None]
    with torch.no_grad():
        z = ad.subset_logits(hs[1], pos)[0]
    torch.testing.assert_close(z, want[:, vocab], atol=1e-5, rtol=1e-5)
    full = ad.full_logits(z)
    assert full.shape == (len(IDS), 258)
    assert torch.isinf(full[:, np.setdiff1d(np.arange(258), vocab)]).all()
    torch.testing.assert_close(full[:, vocab], z)
    # token by token with the adapter's own cache (the recorder's stepper)
    st = A.AdapterStepper(ad)
    rows = [st.step(torch.tensor([IDS[:4]]), tuple(x[:, :4] for x in hs))]
    for i in range(4, len(IDS)):
        rows.append(st.step(torch.tensor([[IDS[i]]]), tuple(x[:, i : i + 1] for x in hs)))
    torch.testing.assert_close(torch.stack(rows)[:, vocab], want[3:, vocab], atol=1e-5,
                               rtol=1e-5)  # fmt: skip
    st.reset()
    torch.testing.assert_close(st.step(torch.tensor([IDS[:2]]), tuple(x[:, :2] for x in hs)),
                               full[1], atol=1e-5, rtol=1e-5)  # fmt: skip


@pytest.mark.parametrize("arch", ["layer", "linear"])
def test_cost_steppers_compute_what_a_full_pass_does(bytes_model, arch):
    """The timed step must be the real work: the next position's logit on the cached context."""
    model = bytes_model.model
    vocab = np.array([7, 31, 140])
    ad = A.init_adapter(bytes_model, 1, arch, vocab=vocab)
    if arch == "linear":
        g = torch.Generator().manual_seed(2)
        with torch.no_grad():  # a non-zero map: the draft is no longer exit:1 itself
            ad.module.proj.weight.copy_(torch.randn(16, 16, generator=g))
    hs, logits = _full(model, IDS)
    with torch.no_grad():
        z = ad.subset_logits(hs[1], torch.arange(len(IDS))[None])[0]
    target, draft = HFStepper(model), AdapterCostStepper(model, ad)
    ids = torch.tensor([IDS])
    with torch.no_grad():
        target.prefill(ids[:, :4])
        draft.prefill(ids[:, :4])
        got_t = [target.step(ids[:, i : i + 1]) for i in range(4, 7)]
        got_d = [draft.step(ids[:, i : i + 1]) for i in range(4, 7)]
        got_t.append(target.step(ids[:, 7:]))  # several tokens at once: the last one's logit
        got_d.append(draft.step(ids[:, 7:]))
    np.testing.assert_allclose(got_t, logits[[4, 5, 6, 9], 0].numpy(), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(got_d, z[[4, 5, 6, 9], 0].numpy(), atol=1e-5, rtol=1e-5)
    assert draft.n == len(IDS)


def _sequences():
    rng = np.random.default_rng(4)
    seqs = [rng.integers(0, 258, size=m) for m in (9, 14, 6, 11, 8, 12, 7, 10)]
    starts = [3, 5, 2, 4, 3, 6, 1, 4]
    return C.Corpus(tuple(seqs), np.array(starts), ("doc",) * 8, C.CorpusSettings())


def test_teacher_states_are_each_sequence_alone(bytes_model):
    corpus = _sequences()
    st = A.teacher_states(bytes_model, corpus, [1], batch_size=3)
    mass = torch.zeros(258, dtype=torch.float64)
    for s, (seq, b) in enumerate(zip(corpus.sequences, corpus.loss_start.tolist())):
        hs, logits = _full(bytes_model.model, seq)
        torch.testing.assert_close(st.hidden[1][s], hs[1][0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(st.final[s], hs[-1][0, b:], atol=1e-5, rtol=1e-5)
        mass += torch.softmax(logits[b:].double(), -1).sum(0)
    np.testing.assert_allclose(st.mass, mass.numpy(), rtol=1e-5, atol=1e-9)
    assert st.num_positions == sum(q.size - b for q, b in zip(corpus.sequences, corpus.loss_start))
    assert st.corpus_sha256 == corpus.sha256
    assert A.frequency_vocab(np.array([0.2, 0.5, 0.2, 0.2, 0.1]), 3).tolist() == [0, 1, 2]


def _kl_by_hand(ad, states, idx):
    """Position-weighted mean KL(p_S || q) over the sequences ``idx``, one by one."""
    total, count = 0.0, 0
    with torch.no_grad():
        for i in idx:
            h, b = states.hidden[ad.layer][i], int(states.loss_start[i])
            z = ad.subset_logits(h[None], torch.arange(h.shape[0])[None])[0, b:].double()
            t = (states.final[i] @ ad.head_weight.T).double()
            logp, logq = torch.log_softmax(t, -1), torch.log_softmax(z, -1)
            total += float((logp.exp() * (logp - logq)).sum())
            count += h.shape[0] - b
    return total / count


def test_training_records_its_split_its_losses_and_its_files(bytes_model, tmp_path, tmp_cache):
    corpus = _sequences()
    states = A.teacher_states(bytes_model, corpus, [1])
    train_idx, val_idx = A._split(8, 0.25, 5)
    order = train_idx[np.random.default_rng([5, 11]).permutation(train_idx.size)]
    sizes = [states.final[i].shape[0] for i in range(8)]
    # 'tokens': the most whole training sequences (in the seeded order) within that many
    # positions; exactly the first two here (a budget met exactly keeps the second)
    budget = sizes[order[0]] + sizes[order[1]]
    s = A.TrainSettings(arch="linear", vocab=40, steps=3, batch_size=3, validation=0.25, seed=5,
                        tokens=budget)  # fmt: skip
    ad = A.train_adapter(bytes_model, states, 1, s)
    m = ad.metadata
    assert len(val_idx) == 2 == m["validation_sequences"] and not set(train_idx) & set(val_idx)
    assert (m["train_sequences"], m["train_tokens"]) == (2, budget)
    assert m["tokens_seen"] == 3 * budget  # 3 steps, each of both sequences (batch 3 > 2)
    one = A.train_adapter(bytes_model, states, 1, dataclasses.replace(s, tokens=budget - 1))
    assert (one.metadata["train_sequences"], one.metadata["train_tokens"]) == (1, sizes[order[0]])
    assert ad.vocab.tolist() == A.frequency_vocab(states.mass, 40).tolist()
    assert m["validation_kl"] == pytest.approx(_kl_by_hand(ad, states, val_idx), rel=1e-3)
    fresh = A.init_adapter(bytes_model, 1, "linear", vocab=ad.vocab.numpy())
    assert m["validation_kl_initial"] == pytest.approx(_kl_by_hand(fresh, states, val_idx),
                                                       rel=1e-3)  # fmt: skip
    again = A.train_adapter(bytes_model, states, 1, s)
    assert again.weights_sha256() == ad.weights_sha256()
    # saved and loaded: the same draft, every checksum kept
    path = A.save_adapter(ad, tmp_path / "a.safetensors")
    back = A.load_adapter(bytes_model, path)
    assert back.weights_sha256() == ad.weights_sha256() and back.layer == 1
    h = states.hidden[1][0][None]
    pos = torch.arange(h.shape[1])[None]
    with torch.no_grad():
        torch.testing.assert_close(back.subset_logits(h, pos), ad.subset_logits(h, pos))


def test_prompts_without_a_chat_template(tmp_path):
    """No template: a user turn is its raw text, a chat is refused, no tokens is an error."""
    from spectheory.lm.prompts import encode_prompt

    tok = byte_tokenizer()
    tok.chat_template = None
    assert encode_prompt(tok, "Hé", "user").tolist() == tok("Hé")["input_ids"]
    assert decode(tok, encode_prompt(tok, "Hé", "user")) == "Hé"
    with pytest.raises(InvalidParameterError, match=r"prompt 3 is a chat .* no chat template"):
        encode_prompt(tok, [{"role": "user", "content": "x"}], "messages", "prompt 3")
    with pytest.raises(InvalidParameterError, match="prompt 4 tokenizes to no tokens"):
        encode_prompt(tok, "", "raw", "prompt 4")


def test_doc_pieces_end_token_and_short_room(bytes_model, monkeypatch):
    """A text filling its last piece exactly still ends with <|im_end|>; a question leaving
    fewer than 16 tokens of room is skipped, one leaving 16 is kept."""
    tok = bytes_model.tokenizer
    m = 64
    over = len(tok(chat(("user", "")))["input_ids"])  # the template's own tokens
    keep, skip = "W" * (m - over - 17), "L" * (m - over - 16)  # rooms 16 and 15
    room = {q: m - len(tok(chat(("user", q)))["input_ids"]) - 1 for q in ("Q?", keep, skip)}
    assert (room[keep], room[skip]) == (16, 15)
    k = room["Q?"]
    docs = [(skip, "skipped"), ("Q?", "ab" * k), (keep, "w" * 20)]
    monkeypatch.setattr(C, "_doc_texts", lambda: docs)
    corpus = C.build_corpus(bytes_model, C.CorpusSettings(max_len=m, doc_sequences=4,
                                                          samples_per_prompt=0), cache=False)
    bodies = [decode(tok, s[b + 1 :]) for s, b in zip(corpus.sequences, corpus.loss_start)]
    # "ab" * k fills exactly two pieces of k tokens: the second still ends the turn
    assert bodies == [("ab" * k)[:k], ("ab" * k)[k:] + "<|im_end|>",
                      "w" * 16, "w" * 4 + "<|im_end|>"]  # fmt: skip
