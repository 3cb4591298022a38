"""Live drafts, the cached generator and quantised copies checked against plain recomputation.

A two-layer Llama of six tokens (random weights, no download) is the target and
its one-layer early exit the draft.  Every recorded law of a live generation is
compared with a full forward pass of the whole context without any cache
(the target's softmax; for the draft, the hidden state after layer 1 through
the final norm and head, computed here by hand), so a cache cropped to the
wrong length, a draft row kept from the wrong branch, or a token fed twice
shows up as a different law.  The quantised copy is checked against the GGUF
round trip computed in the test.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")

from spectheory.live import speculative_generate, target_generate  # noqa: E402
from spectheory.lm import LoadedModel  # noqa: E402
from tests.live.test_user_models import _Tok, tiny_llama  # noqa: E402

PROMPT = np.array([1, 2, 3, 4])


@pytest.fixture(scope="module")
def tiny():
    model = tiny_llama(3).eval()
    # larger weights: laws far from uniform, so an off-by-one context shows
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(8.0)
    return LoadedModel.from_model(model, _Tok(), name="tiny-drafts")


def _full_laws(loaded, ctx):
    """(target softmax, exit-after-layer-1 softmax) of the next token after ``ctx``, no cache."""
    m = loaded.model
    with torch.no_grad():
        out = m(input_ids=torch.as_tensor([list(ctx)]), output_hidden_states=True)
        p = torch.softmax(out.logits[0, -1].double(), -1).numpy()
        h1 = out.hidden_states[1][0, -1]
        zq = m.lm_head(m.model.norm(h1))
        q = torch.softmax(zq.double(), -1).numpy()
    return p, q


def _check_against_full_passes(loaded, res):
    prompt = list(res.prompt_ids)
    toks = list(res.tokens)
    assert len(toks) == res.target_probs.shape[0]
    for i in range(len(toks)):
        p, _ = _full_laws(loaded, prompt + toks[:i])
        np.testing.assert_allclose(res.target_probs[i], p, atol=2e-5)
    for k, t in enumerate(res.node_token):
        p, q = _full_laws(loaded, prompt + toks[: int(t)])
        np.testing.assert_allclose(res.draft_probs[k], q, atol=2e-5)
        if res.node_drafts[k] == 1:
            assert res.node_bound[k] == pytest.approx(np.minimum(p, q).sum(), abs=1e-4)


@pytest.mark.parametrize(
    "kw",
    [
        dict(mode="chain", gamma=3),
        dict(mode="chain", gamma=1),
        dict(mode="multi", n=3, gamma=3),
        dict(mode="multi", n=2, gamma=2, sampling="iid"),
    ],
)
def test_recorded_laws_equal_a_full_pass_without_cache(tiny, kw):
    """The target and draft caches were cropped, replicated or selected wrongly between rounds.

    Each recorded target law must equal the softmax of a cache-free forward pass on
    the prompt and the tokens emitted before it, and each recorded draft law the
    early-exit softmax of such a pass (computed here from the hidden states).
    """
    for seed in range(2):
        res = speculative_generate(
            tiny, PROMPT, draft="exit:1", max_new_tokens=12, seed=seed, record_dtype="float64",
            **kw,
        )
        assert len(res.tokens) == 12
        assert res.accepted.sum() + len(res.accepted) >= len(res.tokens)
        _check_against_full_passes(tiny, res)


@pytest.mark.parametrize("kw", [dict(mode="chain", gamma=3), dict(mode="multi", n=2, gamma=3)])
def test_adapter_draft_laws_equal_a_full_pass_without_cache(tiny, kw):
    """The adapter's own key-value tensors were cropped on the wrong axis (heads, not
    sequence), so rejected drafts stayed in its cache and shifted every later law.

    An untrained one-layer adapter after layer 1 of the tiny Llama: each recorded
    draft law must equal the adapter's softmax on a cache-free pass over the prompt
    and the tokens emitted before it.
    """
    from spectheory.live import AdapterDraft
    from spectheory.lm import adapters as A

    torch.manual_seed(0)
    adapter = A.init_adapter(tiny, 1, "layer")
    with torch.no_grad():  # far from uniform, so a shifted context shows
        for p in adapter.module.parameters():
            if p.dim() == 2:
                p.mul_(8.0)
    res = speculative_generate(
        tiny, PROMPT, draft=AdapterDraft(tiny, adapter), max_new_tokens=14, seed=1,
        record_dtype="float64", **kw,
    )
    assert res.accepted.size > 2 and (res.accepted < kw["gamma"]).any()  # some rejections
    prompt, toks = list(res.prompt_ids), list(res.tokens)
    for k, t in enumerate(res.node_token):
        ctx = prompt + toks[: int(t)]
        with torch.no_grad():
            out = tiny.model(input_ids=torch.as_tensor([ctx]), output_hidden_states=True)
            pos = torch.arange(len(ctx))[None]
            z = adapter.full_logits(adapter.subset_logits(out.hidden_states[1], pos))[0, -1]
        q = torch.softmax(z.double(), -1).numpy()
        np.testing.assert_allclose(res.draft_probs[k], q, atol=2e-5)


def test_round_bookkeeping_is_consistent(tiny):
    """Accepted counts, draft flags and rounds disagreed with the emitted tokens.

    In every round the first ``A`` tokens are accepted drafts (from_draft True) and
    the next one is the target's; a round drafts ``min(gamma, left - 1)`` tokens.
    """
    res = speculative_generate(
        tiny, PROMPT, draft="exit:1", mode="chain", gamma=3, max_new_tokens=17, seed=5
    )
    assert len(res.tokens) == 17
    for r, (a, g) in enumerate(zip(res.accepted, res.drafted)):
        idx = np.flatnonzero(res.token_round == r)
        flags = res.from_draft[idx]
        assert flags[:a].all() and not flags[a:].any()
        assert len(idx) == min(a + 1, 17 - idx[0])
        assert g == min(3, 17 - idx[0] - 1)
    assert list(res.prompt_ids) == list(PROMPT)


@pytest.mark.parametrize("kw", [dict(mode="chain", gamma=3), dict(mode="multi", n=2, gamma=3)])
def test_greedy_speculative_equals_cache_free_argmax(tiny, kw):
    """Greedy speculative generation drifted from the target's argmax continuation.

    The reference is the argmax of a cache-free full pass, token by token.
    """
    sampling = {} if kw["mode"] == "chain" else {"sampling": "iid"}
    res = speculative_generate(
        tiny, PROMPT, draft="exit:1", temperature=0.0, max_new_tokens=12, seed=0, **kw, **sampling
    )
    ctx = list(PROMPT)
    for _ in range(12):
        p, _ = _full_laws(tiny, ctx)
        ctx.append(int(np.argmax(p)))
    assert list(res.tokens) == ctx[len(PROMPT):]
    ref = target_generate(tiny, PROMPT, temperature=0.0, max_new_tokens=12, seed=0)
    assert list(ref.tokens) == ctx[len(PROMPT):]


def test_quantised_copy_rounds_gpt2_conv1d_along_input_features():
    """GPT-2's Conv1D weight (stored in x out) was rounded in blocks along the wrong axis.

    The reference is the Q8_0 round trip of ``W.T`` (blocks along the input
    features), computed here with gguf directly; tied embedding and head are
    rounded once, and norms are left alone.
    """
    import gguf
    import gguf.quants
    from transformers import GPT2Config, GPT2LMHeadModel

    from spectheory.lm.quantised import memory_ratio, quantised_model

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=64, n_layer=1, n_head=2)
    model = GPT2LMHeadModel(cfg).eval()
    loaded = LoadedModel.from_model(model, _Tok(), name="tiny-gpt2-quant")
    q = quantised_model(loaded, "Q8_0")
    t = gguf.GGMLQuantizationType.Q8_0

    def rt(w):
        return gguf.quants.dequantize(gguf.quants.quantize(np.ascontiguousarray(w), t), t)

    w = model.transformer.h[0].attn.c_attn.weight.detach().numpy()  # (in=64, out=192)
    got = q.transformer.h[0].attn.c_attn.weight.detach().numpy()
    np.testing.assert_array_equal(got, rt(w.T).T)
    assert not np.array_equal(got, rt(w))
    emb = model.transformer.wte.weight.detach().numpy()
    np.testing.assert_array_equal(q.transformer.wte.weight.detach().numpy(), rt(emb))
    assert q.lm_head.weight.data_ptr() == q.transformer.wte.weight.data_ptr()
    np.testing.assert_array_equal(
        q.transformer.ln_f.weight.detach().numpy(), model.transformer.ln_f.weight.detach().numpy()
    )
    # bytes per token by hand: rounded matrices at 8.5 bits, everything else at 32
    n_q = sum(
        m.weight.numel()
        for m in {id(m.weight): m for m in model.modules()
                  if isinstance(m, torch.nn.Embedding) or type(m).__name__ == "Conv1D"}.values()
    )
    n_all = sum(p.numel() for p in model.parameters())  # parameters() lists tied ones once
    expect = (n_q * 8.5 + (n_all - n_q) * 32.0) / (n_all * 16.0)
    assert memory_ratio(loaded, "Q8_0") == pytest.approx(expect, rel=1e-12)


def test_quantised_copy_follows_in_place_edits_of_the_target():
    """The memoised quantised copy was returned for a target whose weights were edited in place."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from spectheory.lm.quantised import quantised_model

    torch.manual_seed(1)
    cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=1, n_head=2)
    model = GPT2LMHeadModel(cfg).eval()
    loaded = LoadedModel.from_model(model, _Tok(), name="tiny-gpt2-edit")
    a = quantised_model(loaded, "Q8_0").transformer.wte.weight.detach().clone()
    with torch.no_grad():
        model.transformer.wte.weight.mul_(3.0)
    b = quantised_model(loaded, "Q8_0").transformer.wte.weight.detach()
    assert not torch.equal(a, b)
    assert torch.allclose(b, 3.0 * a, rtol=0.02, atol=1e-3)


def test_ngram_falls_back_to_shorter_suffixes_before_unigrams():
    """The n-gram draft skipped the one-token suffix, or counted the wrong follower.

    Context 1 2 3 1 2 4 2, order 3: the suffix ``4 2`` never recurs; the
    suffix ``2`` occurred at positions 1 and 4, followed by 3 and 4, so the law
    is 1/2 on each (by hand), not the unigram counts.
    """
    from spectheory.lm.drafts import ngram_distribution

    got = ngram_distribution([1, 2, 3, 1, 2, 4, 2], vocab_size=6, order=3)
    np.testing.assert_array_equal(got, [0, 0, 0, 0.5, 0.5, 0])
    got = ngram_distribution([0, 5, 0, 5, 0, 1, 0, 5], vocab_size=6, order=3)
    # suffix "0 5" at 0 and 2 -> followed by 0 and 0
    np.testing.assert_array_equal(got, [1, 0, 0, 0, 0, 0])


def test_exit_recorder_and_path_draft_use_layer_l_at_the_right_positions(tiny):
    """The early exit read the wrong layer's hidden state or the wrong position.

    Reference: the final norm and head applied by hand to ``hidden_states[1]``
    of a full forward pass, at the last position (recorder, path start) and at
    every position (path extension).
    """
    from spectheory.lm.draft_kinds import resolve_draft

    m = tiny.model
    ids = torch.as_tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        out = m(input_ids=ids, output_hidden_states=True)
        want = m.lm_head(m.model.norm(out.hidden_states[1][0])).double().numpy()
    kind, arg = resolve_draft(tiny, "exit:1")
    rec = kind.recorder(tiny, arg)
    rec.reset()
    with torch.no_grad():
        z = rec.step(ids, out.hidden_states)
    np.testing.assert_allclose(z.double().numpy(), want[-1], rtol=1e-6, atol=1e-6)
    pd = kind.path_draft(tiny, arg)
    np.testing.assert_allclose(pd.start(ids[0].tolist(), out), want[-1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(pd.extend(ids[0].tolist(), out), want, rtol=1e-6, atol=1e-6)


def test_rows_that_died_in_the_draft_tree_are_never_matched(tiny):
    """Guards draft rows dropped for lack of distinct tokens (top-p leaves fewer than n).

    Were such a row matched later through its unset tokens (0), it would count as an
    accepted draft with no draft law behind it.  Every emitted token flagged as a
    draft must be a hit of its node, the number of drafts at a node cannot exceed
    the support of the node's draft law, and the run must not fail.
    """
    for seed in range(12):
        res = speculative_generate(
            tiny, PROMPT, draft="exit:1", mode="multi", n=3, gamma=3, top_p=0.7,
            sampling="without_replacement", max_new_tokens=12, seed=seed,
        )
        assert len(res.tokens) == 12
        hit_tokens = set(res.node_token[res.node_hit].tolist())
        assert set(np.flatnonzero(res.from_draft).tolist()) == hit_tokens
        assert (res.node_drafts <= (res.draft_probs > 0).sum(axis=1)).all()


def test_model_draft_returns_the_last_positions_logits(tiny):
    """A separate-network draft returned the logits after the first new token, not the last.

    Reference: the last row of a cache-free forward pass; a second call on the
    same cache must equal the pass over the whole sequence.
    """
    from spectheory.lm.live_drafts import ModelDraft

    d = ModelDraft(tiny, "lm:tiny")
    cache = d.new_cache()
    with torch.no_grad():
        full = tiny.model(input_ids=torch.as_tensor([[1, 2, 3, 4, 5]])).logits[0]
    z = d(torch.as_tensor([[1, 2, 3]]), cache)
    np.testing.assert_allclose(z[0].numpy(), full[2].numpy(), rtol=1e-5, atol=1e-5)
    z = d(torch.as_tensor([[4, 5]]), cache)
    np.testing.assert_allclose(z[0].numpy(), full[4].numpy(), rtol=1e-5, atol=1e-5)


def test_early_exit_after_every_layer_is_refused(tiny):
    """An early exit after all the target's layers (the target itself) was accepted as a draft."""
    from spectheory._errors import InvalidParameterError
    from spectheory.lm.live_drafts import EarlyExitDraft

    with pytest.raises(InvalidParameterError, match=r"\[1, 2\)"):
        EarlyExitDraft(tiny, 2)
    with pytest.raises(InvalidParameterError):
        EarlyExitDraft(tiny, 0)
    assert EarlyExitDraft(tiny, 1).spec == "exit:1"


def test_q8_step_bound_is_half_a_step_plus_the_scale_rounding():
    """The Q8_0 rounding bound was a whole step (twice too loose), hiding coarser rounding.

    By hand for one block with largest magnitude 1.27: d = 1.27 / 127 = 0.01, the
    bound is d / 2 + 2^-10 * d * 128 (float16 scale) + 1e-12 at every entry.
    """
    from spectheory.lm.quantised import step_bound

    x = np.linspace(-1.27, 0.5, 32)
    d = 0.01
    want = d / 2 + 2.0**-10 * d * 128 + 1e-12
    np.testing.assert_allclose(step_bound(x, "Q8_0"), np.full(32, want), rtol=1e-12)


def test_temperature_zero_is_allowed_and_negative_refused():
    """Greedy analyses (temperature 0) were refused, or a negative temperature accepted."""
    from types import SimpleNamespace

    from spectheory._errors import InvalidParameterError
    from spectheory.lm._positions import check_temperature, prompt_slices

    assert check_temperature(0) == 0.0 and check_temperature(0.7) == 0.7
    for bad in (-1e-9, float("nan"), float("inf"), True, "1"):
        with pytest.raises(InvalidParameterError):
            check_temperature(bad)
    trace = SimpleNamespace(prompt_ids=np.array([4, 4, 7, 2, 2, 2]), num_positions=6)
    assert prompt_slices(trace) == [(4, slice(0, 2)), (7, slice(2, 3)), (2, slice(3, 6))]
    trace = SimpleNamespace(prompt_ids=np.array([9]), num_positions=1)
    assert prompt_slices(trace) == [(9, slice(0, 1))]
