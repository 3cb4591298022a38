"""The draft-kind registry on a second architecture: GPT-2 (transformer.h, transformer.ln_f).

Every kind in cost measurement, parameter counts, tree nodes and live
generation, or refused naming it.  The models are tiny randomly initialised
GPT-2s with a 64-token word-level tokenizer built here (no download, no
SmolLM2 load): each check compares the registry's fast path (shallow models
with their own caches, node forwards on a copied cache) with an independent
full forward pass.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch  # the models extra is part of the README's test set-up: no skip

import spectheory as stt
import spectheory.lm as lm
from spectheory.distributions import process_logits
from spectheory.lm import Trace
from spectheory.lm.draft_kinds import DRAFT_KINDS, resolve_draft
from spectheory.lm.layout import decoder_layers, shallow_model

V = 64


def _tokenizer():
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(V)}, unk_token="t0"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="t1", unk_token="t0")


def _gpt2(n_layer, seed):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=V, n_embd=32, n_layer=n_layer, n_head=2, n_positions=64,
                     bos_token_id=1, eos_token_id=1)  # fmt: skip
    return GPT2LMHeadModel(cfg).eval()


@pytest.fixture(scope="module")
def gpt2():
    return lm.LoadedModel.from_model(_gpt2(3, 0), _tokenizer())


@pytest.fixture(scope="module")
def draft_folder(tmp_path_factory):
    """A separate 1-layer GPT-2 sharing the tokenizer, saved as a local model folder."""
    folder = tmp_path_factory.mktemp("gpt2_draft")
    _gpt2(1, 1).save_pretrained(folder)
    _tokenizer().save_pretrained(folder)
    return folder


def _exit_logits(model, ids, layer):
    """Oracle: LayerNorm ln_f and the head on layer ``layer``'s output of a full forward."""
    with torch.no_grad():
        out = model(torch.as_tensor([list(ids)]), output_hidden_states=True)
        return model.lm_head(model.transformer.ln_f(out.hidden_states[layer][0, -1]))


def _draft_oracle(gpt2, spec, ids, draft_folder):
    """q's logits after ``ids`` from a full forward of the draft, computed independently."""
    with torch.no_grad():
        if spec.startswith("exit:"):
            return _exit_logits(gpt2.model, ids, int(spec[5:])).double().numpy()
        if spec.startswith("quant:"):
            from spectheory.lm.quantised import quantised_model

            net = quantised_model(gpt2, spec[6:])
            return net(torch.as_tensor([list(ids)])).logits[0, -1].double().numpy()
        if spec.startswith("lm:"):
            net = lm.load_model(str(draft_folder)).model
            return net(torch.as_tensor([list(ids)])).logits[0, -1].double().numpy()
    with np.errstate(divide="ignore"):
        return np.log(lm.ngram_distribution(ids, V, int(spec[6:])))


def test_layout_is_found_from_the_architecture(gpt2):
    path, blocks = decoder_layers(gpt2.model)
    assert path == ("transformer", "h") and blocks is gpt2.model.transformer.h
    ids = torch.tensor([[3, 9, 4, 22, 7]])
    for L in (1, 2):
        shallow = shallow_model(gpt2.model, L)
        assert len(shallow.transformer.h) == L
        assert shallow.transformer.h[0] is gpt2.model.transformer.h[0]  # shared, not copied
        with torch.no_grad():
            got = shallow(ids).logits[0, -1]
        # the same float32 operations, batched differently (the head on 5 rows against 1):
        # |logit| < 2 and 32-term dot products, so rounding stays far below 1e-6
        want = _exit_logits(gpt2.model, ids[0], L)
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
        assert int(got.argmax()) == int(want.argmax())


def test_parameter_counts_against_modules_counted_by_hand(gpt2, draft_folder):
    m = gpt2.model.transformer

    def numel(*mods):
        return sum(p.numel() for mod in mods for p in mod.parameters())

    # wte is tied to lm_head: counted once
    for L in (1, 2):
        want = numel(m.wte, m.wpe, *m.h[:L], m.ln_f)
        assert lm.draft_parameter_count(gpt2, L) == want
        assert lm.draft_parameter_count(gpt2, f"exit:{L}") == want
    assert lm.draft_parameter_count(gpt2, 3) == numel(gpt2.model)  # the target itself
    assert lm.draft_parameter_count(gpt2, "quant:Q8_0") == numel(gpt2.model)
    assert lm.draft_parameter_count(gpt2, f"lm:{draft_folder}") == numel(
        lm.load_model(str(draft_folder)).model
    )
    with pytest.raises(stt.InvalidParameterError, match=r"'ngram:3' cannot be used for parameter"):
        lm.draft_parameter_count(gpt2, "ngram:3")
    with pytest.raises(stt.InvalidParameterError, match="layer must be < 4 and >= 1"):
        lm.draft_parameter_count(gpt2, 4)


@pytest.mark.parametrize("spec", ["exit:1", "quant:Q8_0", "lm"])
def test_cost_ratio_of_every_model_kind(gpt2, draft_folder, spec):
    spec = f"lm:{draft_folder}" if spec == "lm" else spec
    r = lm.measure_cost_ratio(gpt2, spec, repeats=3, context=8, warmup=1)
    assert r.draft == spec and r.repeats == 3
    assert r.layer == {"exit": 1, "quant": 3, "lm": 1}[spec.split(":")[0]]
    assert r.t_draft > 0 and r.t_target > 0 and r.c == pytest.approx(r.t_draft / r.t_target)


@pytest.mark.parametrize(
    ("spec", "job"),
    [("ngram:3", "cost measurement"), ("logits:mine", "cost measurement")],
)
def test_cost_of_kinds_without_a_forward_is_refused_naming_them(gpt2, spec, job):
    with pytest.raises(
        stt.InvalidParameterError, match=rf"draft '{spec}' cannot be used for {job}"
    ):
        lm.measure_cost_ratio(gpt2, spec, repeats=1, context=4)


def test_adapters_on_a_gpt2_are_refused_naming_the_layout(gpt2):
    kind, arg = resolve_draft(gpt2, "adapter:1")
    for job in (kind.cost_stepper, kind.path_draft, kind.live_draft):
        with pytest.raises(stt.InvalidParameterError, match="'adapter:1' needs a Llama-layout"):
            job(gpt2, arg)


@pytest.mark.parametrize("spec", ["exit:1", "exit:2", "quant:Q8_0", "lm", "ngram:2"])
def test_tree_node_q_equals_a_full_forward(gpt2, draft_folder, spec):
    from spectheory.trees.lm import LMTreeModels

    spec = f"lm:{draft_folder}" if spec == "lm" else spec
    context = np.array([3, 9, 4, 22, 7, 3, 9], dtype=np.int64)
    models = LMTreeModels(gpt2, context, spec, temperature=0.8)
    # two branches from the root and a deeper path: the context caches must stay intact
    for path in [(), (4,), (5, 6), (4, 22, 7), (5,), (4, 22)]:
        ids = [*context, *path]
        q = process_logits(_draft_oracle(gpt2, spec, ids, draft_folder), temperature=0.8)
        with torch.no_grad():
            z = gpt2.model(torch.as_tensor([ids])).logits[0, -1].double().numpy()
        p = process_logits(z, temperature=0.8)
        # KV-cached and full forwards differ by float32 rounding (~1e-6 on these logits);
        # the n-gram lookup is exact
        np.testing.assert_allclose(models.draft(path), q, rtol=0, atol=1e-5)
        np.testing.assert_allclose(models.target(path), p, rtol=0, atol=1e-5)
    assert models.forwards <= 1 + 5  # the context, then one per new path at most


def test_tree_refuses_logits_drafts(gpt2):
    from spectheory.trees.lm import LMTreeModels

    with pytest.raises(stt.InvalidParameterError, match=r"'logits:x' cannot be used for tree"):
        LMTreeModels(gpt2, [1, 2, 3], "logits:x")


def test_live_exit_draft_decodes_greedily_like_the_exit_model(gpt2):
    """The live exit draft, fed token by token through its own cache, is the exit model."""
    from spectheory.live import make_draft

    draft = make_draft(gpt2, "exit:2")
    seq = [3, 9, 4, 22]
    cache, new, mine = draft.new_cache(), list(seq), list(seq)
    with torch.no_grad():
        for _ in range(8):
            z = draft(torch.tensor([new]), cache)[0]
            torch.testing.assert_close(z, _exit_logits(gpt2.model, mine, 2), rtol=1e-5, atol=1e-5)
            new = [int(z.argmax())]
            mine.append(new[0])
            seq.append(int(_exit_logits(gpt2.model, seq, 2).argmax()))  # full forward each token
    assert mine == seq


@pytest.mark.parametrize("spec", ["exit:1", "exit:2", "quant:Q8_0", "lm"])
def test_live_generation_at_temperature_0_is_the_targets_greedy(gpt2, draft_folder, spec):
    from spectheory.live import speculative_generate

    spec = f"lm:{draft_folder}" if spec == "lm" else spec
    prompt = [3, 9, 4, 22, 7]
    seq = list(prompt)
    with torch.no_grad():  # the target's own greedy continuation, one full forward per token
        for _ in range(10):
            seq.append(int(gpt2.model(torch.tensor([seq])).logits[0, -1].argmax()))
    res = speculative_generate(gpt2, prompt, draft=spec, gamma=3, max_new_tokens=10,
                               temperature=0, stop_at_eos=False)  # fmt: skip
    assert res.tokens.tolist() == seq[len(prompt) :]
    # each verified draft node's q is the one-hot argmax of the draft's full forward
    assert res.draft_probs is not None and np.all(res.draft_probs.max(axis=1) == 1)


def test_live_generation_refuses_ngram_naming_it(gpt2):
    from spectheory.live import speculative_generate

    with pytest.raises(stt.InvalidParameterError, match=r"'ngram:2' cannot be used for live"):
        speculative_generate(gpt2, [3, 4, 5], draft="ngram:2", max_new_tokens=2)


def test_every_kind_is_in_the_registry_table():
    assert set(DRAFT_KINDS) == {"exit", "adapter", "quant", "lm", "ngram", "logits"}
    for kind in DRAFT_KINDS.values():
        assert lm.draft_kinds.__doc__.count(f"``{kind.name}:") == 1  # one row per kind


def test_capacity_profile_on_gpt2_against_full_forwards(gpt2):
    """The teacher-forced capacity profile uses GPT-2's own head and ln_f (not Llama's names)."""
    from scipy.special import softmax

    rng = np.random.default_rng(3)
    prompts = [np.array([3, 9, 4]), np.array([22, 7, 5, 6])]
    conts = [rng.integers(2, V, size=5), rng.integers(2, V, size=4)]
    n = sum(c.size for c in conts)
    tr = Trace.from_arrays(rng.normal(size=(n, V)), {"x": rng.normal(size=(n, V))},
                           tokens=np.concatenate(conts), prompt_ids=[0] * 5 + [1] * 4,
                           prompt_tokens=prompts)  # fmt: skip
    cap = lm.capacity_profile(gpt2, tr, temperatures=(0.7, 1.0), layers=(1, 2))
    m = gpt2.model
    want = np.zeros((2, 2))
    for prompt, cont in zip(prompts, conts, strict=True):
        ids = np.concatenate([prompt, cont[:-1]])
        with torch.no_grad():
            out = m(torch.as_tensor(ids)[None], output_hidden_states=True)
            rows = slice(prompt.size - 1, None)
            zt = out.logits[0, rows].double().numpy()
            for k, L in enumerate((1, 2)):
                zd = m.lm_head(m.transformer.ln_f(out.hidden_states[L][0, rows])).double().numpy()
                for i, T in enumerate((0.7, 1.0)):
                    want[i, k] += np.minimum(softmax(zt / T, 1), softmax(zd / T, 1)).sum()
    # the same float32 logits up to batching (rounding ~1e-7 on |z| < 2), then float64:
    # each sum of minima moves by far less than 1e-6
    np.testing.assert_allclose(cap.acceptance, want / n, rtol=0, atol=1e-6)
    assert cap.parameters.tolist() == [lm.draft_parameter_count(gpt2, L) for L in (1, 2)]


def test_quantised_draft_rounds_every_gpt2_conv1d_weight(gpt2):
    """GPT-2 keeps its linear layers in transformers' Conv1D (weight (in, out)): every one is
    re-quantised along its input features, within the format's step bound, not left as is."""
    from spectheory.lm.quantised import quantised_model, requantise, step_bound

    q = quantised_model(gpt2, "Q4_0")
    target = dict(gpt2.model.named_modules())
    convs = [n for n, m in q.named_modules() if type(m).__name__ == "Conv1D"]
    assert len(convs) == 4 * gpt2.num_layers  # c_attn, c_proj, c_fc, mlp.c_proj per block
    for name in convs:
        w = target[name].weight.detach().numpy().T.astype(np.float64)  # (out, in)
        wq = dict(q.named_modules())[name].weight.detach().numpy().T.astype(np.float64)
        assert not np.array_equal(w, wq), name
        assert np.all(np.abs(wq - w) <= step_bound(w, "Q4_0") * (1 + 1e-6)), name
        np.testing.assert_array_equal(wq, requantise(w, "Q4_0"))
