"""The README's entry points ``optimal_token`` and ``run_optimal`` check their input.

numba indexes without bounds checks: before these checks, a draft id of 5 in a row of
three tokens returned token 0, an id of -1 read the last token's tables, two uniforms
instead of three read past the array, and an unnormalised or negative target gave a token
without a word, all silently.  One draft took the three-uniform path, not the reference's
speculative sampling on two uniforms, so the "same token for the same uniforms" promise
did not hold at n = 1.  Each case below raised nothing and returned a token before.
"""

import numpy as np
import pytest

from spectheory import InvalidDistributionError, InvalidParameterError, ShapeMismatchError
from spectheory.sim._optimal_kernel import optimal_token, run_optimal

P = np.array([0.3, 0.4, 0.3])
Q = np.array([0.6, 0.3, 0.1])
HALF = np.full(3, 0.5)


@pytest.mark.parametrize(
    ("p", "q", "drafts", "u", "error", "words"),
    [
        (P, Q, [0, 5], HALF, InvalidParameterError, "drafts[1] = 5 is outside [0, 3)"),
        (P, Q, [0, -1], HALF, InvalidParameterError, "drafts[1] = -1 is outside [0, 3)"),
        (P, Q, [0], HALF, InvalidParameterError, "n >= 2"),
        (P, Q, [0.0, 1.0], HALF, InvalidParameterError, "integer array"),
        (P, Q, [0, 1], [0.5, 0.5], ShapeMismatchError, "u must have shape (3,)"),
        (P, Q, [0, 1], [0.5, 1.0, 0.2], InvalidParameterError, "u[(1,)] = 1.0 is not in [0, 1)"),
        (P, np.array([0.6, 0.4, 0.0]), [0, 2], HALF, InvalidParameterError, "probability 0"),
        (2 * P, Q, [0, 1], HALF, InvalidDistributionError, "target sums to 2.0"),
        (np.array([0.5, -0.1, 0.6]), Q, [0, 1], HALF, InvalidDistributionError, "negative"),
        (P, Q[:2] / Q[:2].sum(), [0, 1], HALF, ShapeMismatchError, "vocabularies"),
    ],
)
def test_optimal_token_names_the_bad_argument(p, q, drafts, u, error, words):
    with pytest.raises(error) as info:
        optimal_token(p, q, drafts, u)
    assert words in str(info.value)


@pytest.mark.parametrize(
    ("drafts", "u", "error", "words"),
    [
        ([[[0, 1], [2, 2]]], np.full((1, 2, 2), 0.5), ShapeMismatchError, "(B, T, 3)"),
        ([[[0, 5]]], np.full((1, 1, 3), 0.5), InvalidParameterError, "drafts[0, 0, 1] = 5"),
        ([[[0, -1]]], np.full((1, 1, 3), 0.5), InvalidParameterError, "drafts[0, 0, 1] = -1"),
        ([[[0], [2]]], np.full((1, 2, 3), 0.5), InvalidParameterError, "n >= 2"),
        ([[[0, 1]], [[0, 1]]], np.full((2, 1, 3), 0.5), ShapeMismatchError, "2 rows"),
    ],
)
def test_run_optimal_names_the_bad_argument(drafts, u, error, words):
    with pytest.raises(error) as info:
        run_optimal(P[None], Q[None], np.array(drafts), u)
    assert words in str(info.value)


def test_checked_entry_points_still_replay_the_reference():
    """Valid input: the same tokens as the coins reference, list input accepted."""
    from spectheory.coins import ReplayCoins
    from spectheory.verifiers.optimal import optimal

    rng = np.random.default_rng(7)
    drafts = rng.choice(3, size=(1, 50, 2), p=Q)
    u = rng.random((1, 50, 3))
    batch = run_optimal(P[None], Q[None], drafts, u)[0]
    for t in range(50):
        want = optimal(P, Q, tuple(int(x) for x in drafts[0, t]), ReplayCoins(u[0, t]))
        assert batch[t] == want == optimal_token(list(P), list(Q), list(drafts[0, t]),
                                                 list(u[0, t]))
