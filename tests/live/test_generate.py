"""Live speculative generation with the real SmolLM2 target and its early-exit drafts.

Oracles:

* temperature 0: the output equals target-only greedy generation token for
  token (chain and multi-draft), and target-only greedy generation is the
  argmax of one full forward pass over its own output (no cache);
* every recorded target and draft distribution equals the one computed
  from a full forward pass without cache over the final sequence (so the
  caches are cropped and selected correctly), within 1e-4: float32
  incremental and full passes differ by ~1e-5 in the logits, so ~1e-6 in
  the probabilities, while a stale or misaligned cache row changes them by
  O(1e-1);
* sampling: the pooled randomised PIT and the acceptance bound
  (:func:`spectheory.live.check_live_lossless`) at false-alarm rate
  1e-6, which must reject a verifier that accepts every draft token.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory._errors import InvalidParameterError, ShapeMismatchError  # noqa: E402
from spectheory.distributions import process_logits  # noqa: E402
from spectheory.live import (  # noqa: E402
    EarlyExitDraft,
    chat_prompt_ids,
    check_live_lossless,
    make_draft,
    speculative_generate,
    target_generate,
)
from spectheory.lm import PROMPTS, early_exit_logits  # noqa: E402

ALPHA = 1e-6
#: Largest |recorded - full-pass| probability; see the module docstring.
PROB_TOL = 1e-4


@pytest.fixture(scope="module")
def prompts(smol):
    return {i: chat_prompt_ids(smol, PROMPTS[i][1]) for i in (7, 12, 14)}


@pytest.fixture(scope="module")
def greedy(smol, prompts):
    kw = dict(max_new_tokens=8, temperature=0)
    return {i: target_generate(smol, ids, **kw) for i, ids in prompts.items()}


# --------------------------------------------------------------------------- greedy


def test_target_greedy_is_argmax_of_full_pass(smol, greedy):
    for res in greedy.values():
        full = np.concatenate([res.prompt_ids, res.tokens])
        with torch.no_grad():
            logits = smol.model(input_ids=torch.as_tensor(full[None]), use_cache=False).logits
        P, N = res.prompt_ids.size, res.tokens.size
        assert logits[0, P - 1 : P - 1 + N].argmax(-1).tolist() == res.tokens.tolist()
        assert res.block_efficiency == 1.0 and res.target_calls == N


@pytest.mark.parametrize(
    ("prompt", "kw"),
    [
        (7, dict(mode="chain", gamma=3, draft="exit:25")),
        (12, dict(mode="chain", gamma=5, draft="exit:20", verifier="nss")),
        (14, dict(mode="multi", gamma=3, n=2, verifier="rrs", draft="exit:25")),
        (12, dict(mode="multi", gamma=4, n=3, verifier="kseq", draft="exit:22")),
    ],
)
def test_greedy_speculative_equals_target(smol, prompts, greedy, prompt, kw):
    res = speculative_generate(smol, prompts[prompt], max_new_tokens=8, temperature=0, **kw)
    assert res.tokens.tolist() == greedy[prompt].tokens.tolist()
    # Bookkeeping: every token belongs to a round; each round emits A + 1 (or A at the end).
    assert res.accepted.sum() == res.from_draft.sum()
    assert np.all(res.accepted <= res.drafted)
    assert res.target_calls == res.accepted.size
    per_round = np.bincount(res.token_round, minlength=res.accepted.size)
    assert np.array_equal(per_round[:-1], res.accepted[:-1] + 1)
    assert per_round[-1] == res.accepted[-1] + 1 or (res.finished and res.from_draft[-1])


# --------------------------------------------------------------------------- recorded laws


def _full_pass_laws(smol, res, layer, **proc):
    full = np.concatenate([res.prompt_ids, res.tokens])
    with torch.no_grad():
        out = smol.model(
            input_ids=torch.as_tensor(full[None]), output_hidden_states=True, use_cache=False
        )
        P, N = res.prompt_ids.size, res.tokens.size
        hs = tuple(h[0, P - 1 : P - 1 + N] for h in out.hidden_states)
        p = process_logits(out.logits[0, P - 1 : P - 1 + N].double().numpy(), **proc)
        q = process_logits(early_exit_logits(smol.model, hs, layer).double().numpy(), **proc)
    return p, q


@pytest.fixture(scope="module")
def sampled_runs(smol, prompts):
    """Sampled runs of fixed length: chain (top-k) and multi-draft (i.i.d., without replacement)."""
    kw = dict(draft="exit:25", gamma=2, stop_at_eos=False)
    return [
        speculative_generate(
            smol, prompts[7], max_new_tokens=32, temperature=1.0, top_k=50, seed=11, **kw
        ),
        speculative_generate(
            smol, prompts[14], max_new_tokens=20, temperature=0.8, mode="multi", n=2,
            verifier="rrs", seed=12, **kw
        ),
        speculative_generate(
            smol, prompts[12], max_new_tokens=20, temperature=1.0, top_p=0.95, mode="multi", n=2,
            verifier="rrs_wor", seed=13, **kw
        ),
    ]  # fmt: skip


def test_recorded_laws_equal_full_pass(smol, sampled_runs):
    for res in sampled_runs:
        s = res.settings
        proc = dict(temperature=s["temperature"], top_k=s["top_k"], top_p=s["top_p"])
        p, q = _full_pass_laws(smol, res, int(s["draft"].split(":")[1]), **proc)
        assert np.abs(p - res.target_probs).max() < PROB_TOL
        assert np.abs(q[res.node_token] - res.draft_probs).max() < PROB_TOL
        # Each node's token is the emitted one; node bounds are sum min(p, q).
        single = res.node_drafts == 1
        bound = np.minimum(res.target_probs[res.node_token], res.draft_probs).sum(-1)
        np.testing.assert_allclose(res.node_bound[single], bound[single], atol=1e-5)
        assert np.all(np.isnan(res.node_bound[~single]))


def test_sampling_is_lossless(sampled_runs):
    runs = sampled_runs
    assert sum(r.num_tokens for r in runs) == 72
    assert any(r.accepted.sum() > 0 for r in runs)  # the acceptance branch is exercised
    assert any((r.node_drafts == 2).any() for r in runs)  # multi-draft nodes were verified
    report = check_live_lossless(runs, alpha=ALPHA)
    assert not report.lossy, report.verdict


def _accept_all(target, draft, drafts, rng):
    """A biased verifier: emits the first draft token, whatever p and q."""
    return int(drafts[0])


def test_accepting_every_draft_is_detected(smol, prompts):
    res = speculative_generate(
        smol, prompts[7], draft="exit:8", max_new_tokens=30, temperature=1.0, gamma=4,
        verifier=_accept_all, seed=5, stop_at_eos=False,
    )  # fmt: skip
    assert res.acceptance_rate == 1.0
    report = check_live_lossless(res, alpha=ALPHA)
    assert report.lossy
    assert report.tests["acceptance"] < ALPHA  # acceptance 1 against a bound ~0.05
    assert min(report.tests["pit"], report.tests["pit_ks"]) < ALPHA  # the PIT alone rejects


# --------------------------------------------------------------------------- reproducibility


def test_seeded_runs_are_reproducible(smol, prompts):
    kw = dict(draft="exit:25", max_new_tokens=4, temperature=1.0, gamma=2, record=False)
    a = speculative_generate(smol, prompts[12], seed=123, **kw)
    b = speculative_generate(smol, prompts[12], seed=123, **kw)
    assert a.tokens.tolist() == b.tokens.tolist()
    assert a.accepted.tolist() == b.accepted.tolist()
    g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    c = speculative_generate(smol, prompts[12], seed=g1, **kw)
    d = speculative_generate(smol, prompts[12], seed=g2, **kw)
    assert c.tokens.tolist() == d.tokens.tolist()
    assert a.target_probs is None and a.draft_probs is None


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(mode="tree"), "mode"),
        (dict(gamma=0), "gamma"),
        (dict(gamma=2.5), "gamma"),
        (dict(mode="chain", n=2), "chain"),
        (dict(mode="multi", n=0), "n"),
        (dict(verifier="nope"), "verifier"),
        (dict(mode="chain", verifier="spechub"), "spechub"),
        (dict(mode="multi", n=2, verifier="rrs", sampling="without_replacement"), "rrs"),
        (dict(mode="multi", n=2, verifier="rrs_wor", temperature=0), "distinct"),
        (dict(draft="exit:30"), "exit"),
        (dict(draft="exit:0"), "exit"),
        (dict(draft="ngram:3"), "draft"),
        (dict(draft=3), "draft"),
        (dict(temperature=-1.0), "temperature"),
        (dict(top_k=0), "top_k"),
        (dict(top_p=1.5), "top_p"),
        (dict(max_new_tokens=0), "max_new_tokens"),
        (dict(seed=-1), "seed"),
        (dict(seed="x"), "seed"),
        (dict(record=1), "record"),
        (dict(record_dtype="float16"), "record_dtype"),
    ],
)
def test_bad_arguments_raise(smol, prompts, kw, match):
    with pytest.raises(InvalidParameterError, match=match):
        speculative_generate(smol, prompts[12], **kw)


@pytest.mark.parametrize("ids", [[], [[1, 2]], [1.5, 2.0], [-1, 3], [49152]])
def test_bad_prompt_raises(smol, ids):
    with pytest.raises(InvalidParameterError, match="prompt_ids"):
        speculative_generate(smol, ids)
    with pytest.raises(InvalidParameterError, match="prompt_ids"):
        target_generate(smol, ids)


def test_bad_loaded_and_draft_objects(smol):
    with pytest.raises(InvalidParameterError, match="loaded"):
        speculative_generate(object(), [1, 2])
    with pytest.raises(InvalidParameterError, match="layer"):
        EarlyExitDraft(smol, 30)
    d = make_draft(smol, "exit:12")
    assert make_draft(smol, d) is d and d.spec == "exit:12"

    class Narrow:  # a user's draft over another vocabulary: was a numpy broadcast error
        spec = "narrow"

        def new_cache(self):
            return d.new_cache()

        def __call__(self, input_ids, cache):
            return d(input_ids, cache)[:, :-100]

    with pytest.raises(ShapeMismatchError, match="'narrow' returned logits over 49052 tokens"):
        speculative_generate(smol, [1, 2, 3], draft=Narrow(), max_new_tokens=2, temperature=0)


# --------------------------------------------------------------------------- helpers (no model)


def _fake_run(p_rows, tokens, bound=None, hit=None, q_rows=None):
    K = 0 if bound is None else len(bound)
    return SimpleNamespace(
        target_probs=np.asarray(p_rows),
        tokens=np.asarray(tokens),
        node_bound=np.zeros(0) if bound is None else np.asarray(bound, dtype=float),
        node_hit=np.zeros(K, dtype=bool) if hit is None else np.asarray(hit, dtype=bool),
        draft_probs=q_rows,
        node_token=None if q_rows is None else np.arange(len(q_rows)),
    )


def test_checker_on_exact_samples_and_on_biased_samples():
    rng = np.random.default_rng(1)
    N, V = 3000, 8
    P = rng.dirichlet(np.ones(V), size=N)
    Q = rng.dirichlet(np.ones(V), size=N)
    y_p = np.array([rng.choice(V, p=row) for row in P])
    y_q = np.array([rng.choice(V, p=row) for row in Q])
    assert not check_live_lossless(_fake_run(P, y_p), alpha=ALPHA).lossy
    assert not check_live_lossless(_fake_run(P, y_p, q_rows=Q), alpha=ALPHA).lossy
    biased = check_live_lossless(_fake_run(P, y_q), alpha=ALPHA)
    assert biased.lossy and biased.p_value < ALPHA
    # ordered by p/q at the nodes, the same 300 biased outputs are caught far more surely
    few = slice(0, 300)
    by_p = check_live_lossless(_fake_run(P[few], y_q[few]), alpha=ALPHA)
    by_ratio = check_live_lossless(_fake_run(P[few], y_q[few], q_rows=Q[few]), alpha=ALPHA)
    assert by_ratio.lossy and by_ratio.p_value < by_p.p_value
    # a zero-probability output is proof of bias
    P0 = P.copy()
    P0[0] = 0.0
    P0[0, (y_p[0] + 1) % V] = 1.0
    report = check_live_lossless(_fake_run(P0, y_p), alpha=ALPHA)
    assert report.lossy and report.impossible_outputs == 1
    # hits above the bound: 300 hits of 300 against bounds 0.5
    over = check_live_lossless(_fake_run(P, y_p, np.full(300, 0.5), np.ones(300)), alpha=ALPHA)
    assert over.lossy and over.tests["acceptance"] < ALPHA
    under = check_live_lossless(_fake_run(P, y_p, np.full(300, 0.5), np.zeros(300)), alpha=ALPHA)
    assert not under.lossy


def test_checker_bad_input():
    with pytest.raises(InvalidParameterError, match="alpha"):
        check_live_lossless(_fake_run(np.ones((1, 2)) / 2, [0]), alpha=2.0)
    with pytest.raises(InvalidParameterError, match="record=False"):
        check_live_lossless(SimpleNamespace(target_probs=None, tokens=np.zeros(1)))
    with pytest.raises(InvalidParameterError, match="at least one"):
        check_live_lossless([])


# --------------------------------------------------------------------------- adapter drafts


@pytest.fixture(scope="module")
def deep_adapter(smol):
    """An untrained two-layer adapter at layer 20 over a 4,096-token subset (q = 0 outside)."""
    from spectheory.lm import adapters as A

    vocab = np.unique(np.concatenate([np.arange(0, 49152, 12), np.arange(0, 2000)]))
    return A.init_adapter(smol, 20, "layer", vocab=vocab, depth=2)


def test_adapter_draft_live_greedy_and_recorded_laws(smol, prompts, greedy, deep_adapter):
    from spectheory.live import AdapterDraft

    draft = AdapterDraft(smol, deep_adapter)
    assert draft.spec == "adapter:20"
    res = speculative_generate(
        smol, prompts[14], draft=draft, max_new_tokens=8, temperature=0, mode="multi", n=2, gamma=3
    )
    assert res.tokens.tolist() == greedy[14].tokens.tolist()
    # sampled, multi-draft: the adapter's cache is replicated, selected and cropped with the trunk's
    res = speculative_generate(
        smol, prompts[12], draft=draft, max_new_tokens=16, temperature=1.0, mode="multi", n=2,
        gamma=3, verifier="rrs", seed=4, stop_at_eos=False,
    )  # fmt: skip
    full = np.concatenate([res.prompt_ids, res.tokens])
    with torch.no_grad():
        out = smol.model(
            input_ids=torch.as_tensor(full[None]), output_hidden_states=True, use_cache=False
        )
        pos = torch.arange(full.size)[None]
        z = deep_adapter.full_logits(deep_adapter.subset_logits(out.hidden_states[20], pos))
    P, N = res.prompt_ids.size, res.tokens.size
    q = process_logits(z[0, P - 1 : P - 1 + N].double().numpy(), temperature=1.0)
    assert np.abs(q[res.node_token] - res.draft_probs).max() < PROB_TOL
    outside = np.setdiff1d(np.arange(q.shape[1]), deep_adapter.vocab.numpy())
    assert np.all(res.draft_probs[:, outside] == 0)  # the subset head gives q = 0 off S


def test_make_draft_resolves_cached_adapters(smol, deep_adapter, tmp_path, monkeypatch):
    from spectheory import TraceError
    from spectheory.live import AdapterDraft
    from spectheory.lm import adapters as A

    monkeypatch.setenv("SPECTHEORY_CACHE_DIR", str(tmp_path))
    with pytest.raises(TraceError, match="spectheory draft train --layer 20"):
        make_draft(smol, "adapter:20")
    A.save_adapter(deep_adapter, A.adapter_path(20, smol.name))
    draft = make_draft(smol, "adapter:20")
    assert isinstance(draft, AdapterDraft) and draft.adapter.depth == 2
    assert draft.adapter.weights_sha256() == deep_adapter.weights_sha256()
