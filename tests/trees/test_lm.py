"""Tree node laws from the real model (the session fixture ``smol``): cache and KV consistency."""

import numpy as np
import pytest

from spectheory import InvalidParameterError
from spectheory.coins import RandomCoins
from spectheory.distributions import process_logits
from spectheory.lm.drafts import early_exit_logits
from spectheory.trees import draft_rsd_c, verify_tree
from spectheory.trees.lm import LMTreeModels


def test_node_rows_match_a_full_forward_and_are_cached(smol):
    import torch

    context = np.array([1, 504, 3060, 314, 253], dtype=np.int64)
    lm = LMTreeModels(smol, context, "exit:20")
    tree = draft_rsd_c(lm.draft, (2, 1), RandomCoins(0))
    block = verify_tree("traversal", lm.target, lm.draft, tree, RandomCoins(1))
    assert 1 <= len(block) <= 3
    path = tree.path(tree.size - 1)
    lm.target(path)
    forwards = lm.forwards
    assert forwards <= tree.size + 1  # the context, then at most one per node
    with torch.no_grad():
        out = smol.model(input_ids=torch.tensor([[*context, *path]]), output_hidden_states=True)
        hidden = tuple(h[:, -1] for h in out.hidden_states)
        q = process_logits(early_exit_logits(smol.model, hidden, 20)[0].double().numpy())
    p = process_logits(out.logits[0, -1].double().numpy())
    # KV-cached and full forwards differ by float32 rounding only.
    assert np.abs(lm.target(path) - p).sum() < 1e-3
    assert np.abs(lm.draft(path) - q).sum() < 1e-3
    assert lm.forwards == forwards  # cached
    assert lm.target(path).shape == (smol.vocab_size,)


def test_adapter_draft_rows_match_a_full_forward(smol):
    import torch

    from spectheory.lm import adapters as A

    vocab = np.arange(0, 49152, 3)
    ad = A.init_adapter(smol, 18, "layer", vocab=vocab, depth=2)
    context = np.array([1, 504, 3060, 314, 253], dtype=np.int64)
    lm = LMTreeModels(smol, context, ad, temperature=0.8)
    tree = draft_rsd_c(lm.draft, (2, 2), RandomCoins(2))
    for node in range(tree.size):  # every node, two branches: the context cache is not altered
        path = tree.path(node)
        ids = torch.tensor([[*context, *path]])
        with torch.no_grad():
            out = smol.model(input_ids=ids, output_hidden_states=True)
            pos = torch.arange(ids.shape[1])[None]
            z = ad.full_logits(ad.subset_logits(out.hidden_states[18], pos))[0, -1]
        q = process_logits(z.double().numpy(), temperature=0.8)
        assert np.abs(lm.draft(path) - q).sum() < 1e-3
        assert np.all(lm.draft(path)[np.setdiff1d(np.arange(smol.vocab_size), vocab)] == 0)


def test_ngram_node_rows_are_the_lookup_of_context_and_path(smol):
    from spectheory.lm import ngram_distribution

    context = np.array([5, 6, 7, 5, 6, 9, 5], dtype=np.int64)
    lm = LMTreeModels(smol, context, "ngram:3", temperature=1.0)
    for path in [(), (6,), (6, 7), (6, 9, 5)]:
        want = ngram_distribution([*context, *path], smol.vocab_size, 3)
        np.testing.assert_array_equal(lm.draft(path), want)  # T = 1: process_logits(log q) = q
    assert lm.spec == "ngram:3"


def test_drafts_without_a_node_forward_are_refused_naming_them(smol):
    with pytest.raises(InvalidParameterError, match=r"'logits:mine' cannot be used for tree"):
        LMTreeModels(smol, [1, 2, 3], "logits:mine")
    with pytest.raises(InvalidParameterError, match="context"):
        LMTreeModels(smol, [], "exit:3")
