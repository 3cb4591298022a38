"""Live generation with a user's own tiny model, draft and verifier: bad outputs are refused.

A two-layer Llama of six tokens (random weights, no download) stands in for the
target, so these run in seconds; the real model's tests are in test_generate.py.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from spectheory._errors import InvalidParameterError, ShapeMismatchError  # noqa: E402
from spectheory.live import EarlyExitDraft, ModelDraft, speculative_generate  # noqa: E402
from spectheory.lm import LoadedModel  # noqa: E402

V = 6
PROMPT = np.array([1, 2, 3])


class _Tok:
    eos_token_id = None
    chat_template = None

    def __init__(self, shift=0):
        self.shift = shift

    def get_vocab(self):
        return {f"t{(i + self.shift) % V}": i for i in range(V)}

    def __len__(self):
        return V


def tiny_llama(seed=0):
    """A two-layer Llama over ``V`` tokens with random weights (seeded), no end token."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=V,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    model = LlamaForCausalLM(cfg)
    model.generation_config.eos_token_id = None
    return model


def _tiny(seed=0, shift=0):
    return LoadedModel.from_model(tiny_llama(seed), _Tok(shift), name=f"tiny{seed}-{shift}")


@pytest.fixture(scope="module")
def tiny():
    return _tiny()


@pytest.mark.parametrize(
    "bad",
    [
        lambda p, q, drafts, rng: 2.7,  # was truncated to token 2 and emitted
        lambda p, q, drafts, rng: -1,  # was emitted, then an IndexError in the embedding
        lambda p, q, drafts, rng: V,
        lambda p, q, drafts, rng: None,
    ],
)
def test_user_verifier_must_return_a_token_id(tiny, bad):
    with pytest.raises(InvalidParameterError, match=r"must return a token id .* in \[0, 6\)"):
        speculative_generate(tiny, PROMPT, draft="exit:1", verifier=bad, max_new_tokens=4, seed=0)


def test_coins_verifier_float_is_refused(tiny):
    def half(p, q, drafts, coins, *, sampling):
        return 1.5

    with pytest.raises(InvalidParameterError, match=r"returned 1\.5"):
        speculative_generate(tiny, PROMPT, draft="exit:1", verifier=half, max_new_tokens=4, seed=0)


def test_valid_user_verifier_still_runs(tiny):
    def first(p, q, drafts, rng):
        return np.int64(drafts[0])  # accepts every draft: lossy, but a valid token id

    r = speculative_generate(
        tiny, PROMPT, draft="exit:1", verifier=first, max_new_tokens=5, seed=0, stop_at_eos=False
    )
    assert r.num_tokens == 5


class _Wrapped:
    """A user's LiveDraft around the early exit, its output transformed by ``fn``."""

    def __init__(self, loaded, fn, spec="mine"):
        self.base, self.fn, self.spec = EarlyExitDraft(loaded, 1), fn, spec

    def new_cache(self):
        return self.base.new_cache()

    def __call__(self, input_ids, cache):
        return self.fn(self.base(input_ids, cache), input_ids)


@pytest.mark.parametrize(
    "fn, mode, match",
    [
        # every position's logits, (B, k, V), not the last one's: was an IndexError in the verifier
        (lambda z, x: z[:, None].expand(-1, x.shape[1], -1), "chain", r"shape \(1, 1, 6\)"),
        # one row for n draft rows: was an IndexError (or another row's law)
        (lambda z, x: z[:1], "multi", r"shape \(1, 6\) for input_ids of shape \(3, 1\)"),
        (lambda z, x: z.numpy(), "chain", "returned ndarray"),
        (lambda z, x: z.long(), "chain", "dtype torch.int64"),
    ],
)
def test_draft_logits_of_the_wrong_shape_or_type_are_refused(tiny, fn, mode, match):
    n = 3 if mode == "multi" else 1
    with pytest.raises(ShapeMismatchError, match=match):
        speculative_generate(
            tiny, PROMPT, draft=_Wrapped(tiny, fn), mode=mode, n=n, gamma=3, max_new_tokens=6,
            seed=0, stop_at_eos=False,
        )  # fmt: skip


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_draft_logits_run(tiny, dtype):
    d = _Wrapped(tiny, lambda z, x: z.to(getattr(torch, dtype)))
    r = speculative_generate(tiny, PROMPT, draft=d, max_new_tokens=5, seed=0, stop_at_eos=False)
    assert r.num_tokens == 5 and r.draft_probs.dtype == np.float32


def test_model_draft_with_another_tokenizer_is_refused(tiny):
    other = _tiny(seed=1, shift=1)  # same size, another token-to-id map
    with pytest.raises(ShapeMismatchError, match="another tokenizer"):
        speculative_generate(tiny, PROMPT, draft=ModelDraft(other, "mine"), max_new_tokens=3)
    same = _tiny(seed=1)
    r = speculative_generate(
        tiny, PROMPT, draft=ModelDraft(same, "mine"), max_new_tokens=3, seed=0, stop_at_eos=False
    )
    assert r.num_tokens == 3


def test_generation_past_the_model_context_is_refused(tiny):
    """A 64-position model generated 80 tokens without a word (positions extrapolated)."""
    from spectheory.live import target_generate

    with pytest.raises(InvalidParameterError, match=r"exceeds the model's context of 64"):
        speculative_generate(tiny, PROMPT, draft="exit:1", max_new_tokens=62, seed=0)
    with pytest.raises(InvalidParameterError, match="max_position_embeddings"):
        target_generate(tiny, PROMPT, max_new_tokens=10**12, seed=0)
    out = speculative_generate(tiny, PROMPT, draft="exit:1", max_new_tokens=61, seed=0)
    assert len(out.tokens) <= 61


@pytest.mark.parametrize("sampling", ["without_replacement", "greedy"])
def test_the_default_multi_draft_verifier_follows_the_draft_law(tiny, sampling):
    """With no verifier named, multi mode refused these laws naming 'rrs', never given."""
    out = speculative_generate(tiny, PROMPT, draft="exit:1", mode="multi", n=2,
                               sampling=sampling, max_new_tokens=4, seed=0)
    assert len(out.tokens) >= 1


def test_live_generation_runs_optimal_with_four_drafts_without_replacement(tiny):
    """``optimal`` with four drafts without replacement (the priority-coin rule, refused
    before it existed) verifies live: the first node of a round has four drafts, and
    the generation reaches its length (nodes past the first hold the drafts still alive)."""
    out = speculative_generate(tiny, PROMPT, draft="exit:1", mode="multi", n=4,
                               verifier="optimal", sampling="without_replacement",
                               max_new_tokens=8, seed=0)
    assert len(out.tokens) == 8
    assert len(out.node_hit) >= 1
    assert int(np.max(out.node_drafts)) == 4
