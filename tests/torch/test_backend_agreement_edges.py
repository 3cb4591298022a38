"""The three backends agree on rows at the edges: drafts of tiny mass under `optimal`, rows
whose sums are 1 within rounding (kept as given) or off by more (renormalised alike)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import spectheory
from spectheory._validate import as_distribution_pair
from spectheory.coins import ReplayCoins
from spectheory.sim import _kernels as K
from spectheory.verifiers import REGISTRY


def _three(name, p, q, drafts, u, sampling):
    """Tokens of the coins reference, the numba kernel and the torch form on one trial."""
    P, Q, _ = as_distribution_pair(p, q)
    ref = REGISTRY[name].function(P[0], Q[0], tuple(drafts), ReplayCoins(u), sampling=sampling)
    nb = K.run_verifier(name, P, Q, np.array(drafts)[None, None], u[None, None], sampling)
    tt = spectheory.torch.verify(name, torch.tensor(p)[None], torch.tensor(q)[None],
                                 torch.tensor([drafts]), uniforms=torch.tensor(u)[None],
                                 sampling=sampling).tokens
    return ref, int(nb[0, 0]), int(tt[0])


@pytest.mark.parametrize("eps", [1e-300, 1e-20, 1e-15])
@pytest.mark.parametrize("u0", [0.25, 0.5, 0.9])
def test_torch_optimal_tiny_mass_draft_selects_as_reference(eps, u0):
    """p = [eps, 0, 1], q = [eps, 1/2, 1/2], drafts (0, 2): the set {0, 2} selects 2
    (worked out in Fractions: y_0 = p_0 is already covered by {0, 0} and {0, 1})."""
    p = np.array([eps, 0.0, 1.0 - eps])
    q = np.array([eps, 0.5, 0.5 - eps])
    u = np.array([u0, 0.5, 0.5])
    assert _three("optimal", p, q, (0, 2), u, "iid") == (2, 2, 2)


def test_torch_check_keeps_rows_the_numpy_check_keeps():
    """Rows valid to rounding are used as given by every backend: p[0] == q[0] accepts at
    u = 1 - 2^-53 (the torch check divided p by its sequential sum 1 + 2^-52)."""
    p = np.array([0.09016015534055195, 0.30506682871399377, 0.22164480942755554,
                  0.03583731620854278, 0.16490312349402156, 0.18238776681533447])
    q = np.array([0.09016015534055195, 0.18238776681533447, 0.30506682871399377,
                  0.03583731620854278, 0.22164480942755554, 0.16490312349402156])
    u = np.array([1 - 2.0**-53, 0.5])
    assert _three("sd", p, q, (0,), u, "iid") == (0, 0, 0)


@pytest.mark.parametrize("V", [3, 4, 7, 130])
def test_torch_check_renormalises_as_numpy(V):
    """Rows off 1 beyond rounding are divided by the same sum on both checks (CPU)."""
    from spectheory.torch._checks import check_probabilities

    rng = np.random.default_rng(V)
    x = rng.random((3, V))
    x = x / x.sum(axis=1, keepdims=True) * (1 + 3e-10)
    want, _, _ = as_distribution_pair(x, x)
    got = check_probabilities(torch.tensor(x), "target", 2).numpy()
    assert np.array_equal(got, want)
