"""Issue 22 regressions: exact verifiers and laws at the edges of float64.

Each test is named after the defect it pins (issue 22, items 3 and 4).
"""

from __future__ import annotations

import numpy as np
import pytest

import spectheory as stt

LOSSLESS = ("sd", "rrs", "rrs_wor", "kseq", "spechub", "greedy", "nss", "naive", "khisti",
            "optimal_lp")
# Output laws are sums of a handful of products of probabilities: a few ulp.
LAW_TOL = 1e-14


def _n(verifier):
    return 1 if verifier == "sd" else 2


@pytest.mark.parametrize("verifier", LOSSLESS)
@pytest.mark.parametrize("tiny", [5e-324, 1e-310, 1e-300])
def test_issue22_verifiers_where_p_over_q_overflows(verifier, tiny):
    # acceptance("sd", [.5, .5], [1e-310, 1 - 1e-310]) raised "bernoulli prob nan";
    # khisti and optimal_lp failed already at 1e-300 (class probabilities 0/0).
    p, q = np.array([0.5, 0.5]), np.array([tiny, 1 - tiny])
    n = _n(verifier)
    out = stt.output_distribution(verifier, p, q, n=n)
    np.testing.assert_allclose(out, p, rtol=0, atol=LAW_TOL)
    acc = stt.acceptance(verifier, p, q, n=n)
    assert 0.0 <= acc <= 1.0
    sampling = "greedy" if verifier in ("spechub", "greedy") else (
        "without_replacement" if verifier in ("rrs_wor", "nss") else "iid")
    assert acc <= stt.bound(p, q, n, sampling) + 1e-12


@pytest.mark.parametrize("verifier", ["rrs_wor", "nss"])
def test_issue22_wor_verifiers_on_a_peaked_draft_stay_lossless_and_below_the_bound(verifier):
    # q_max = 1 - 1e-12: the law summed to 1.0000221 and acceptance exceeded the bound.
    q = np.array([1 - 1e-12, 4e-13, 3e-13, 2e-13, 1e-13])
    q /= q.sum()
    p = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    out = stt.output_distribution(verifier, p, q, n=3)
    np.testing.assert_allclose(out, p, rtol=0, atol=LAW_TOL)
    assert stt.acceptance(verifier, p, q, n=3) <= stt.bound(p, q, 3, "without_replacement") + 1e-12


def test_issue22_accept_prob_compares_before_dividing():
    from fractions import Fraction

    from spectheory.verifiers._ops import accept_prob

    assert accept_prob(0.5, 1e-310) == 1.0
    assert accept_prob(1e-310, 0.5) == 1e-310 / 0.5
    assert accept_prob(Fraction(1, 3), Fraction(1, 2)) == Fraction(2, 3)
    assert accept_prob(Fraction(1, 2), Fraction(1, 3)) == 1


# --- trees: size limits and verify_tree arguments (items 7 and 10) ---


def _half(prefix):
    return [0.5, 0.5]


@pytest.mark.parametrize(
    "build",
    [
        lambda c: stt.trees.draft_chain(_half, 10**9, c),
        lambda c: stt.trees.draft_spectr(_half, 10**5, 10**5, c),
        lambda c: stt.trees.draft_rsd_c(_half, (2,) * 40, c),
        lambda c: stt.trees.draft_rsd_s(_half, 10**6, 10**6, c),
    ],
)
def test_issue22_tree_builders_refuse_huge_trees(build):
    from spectheory.coins import RandomCoins

    with pytest.raises(stt.InstanceTooLargeError, match="MAX_TREE_NODES"):
        build(RandomCoins(0))


def test_issue22_fixed_shape_entries_must_be_ints():
    from spectheory.coins import RandomCoins

    with pytest.raises(stt.InvalidParameterError, match="shape entries must be ints"):
        stt.trees.draft_fixed(_half, (-1, 0.7), RandomCoins(0))


def test_issue22_verify_tree_checks_coins_vocabulary_and_draft_law():
    from spectheory.coins import RandomCoins

    one = lambda prefix: [0.0, 1.0]  # noqa: E731
    chain = stt.trees.draft_chain(one, 3, RandomCoins(0))  # tokens (1, 1, 1)
    verify = stt.trees.verify_tree
    with pytest.raises(stt.InvalidParameterError, match="coins must be a Coins"):
        verify("block", one, one, chain, None)
    with pytest.raises(stt.InvalidParameterError, match="different vocabularies: 3 and 2"):
        verify("block", lambda prefix: [0.2, 0.3, 0.5], one, chain, RandomCoins(1))
    # The chain's tokens have probability 0 under this draft: drawn from another law.
    with pytest.raises(stt.InvalidParameterError, match="draft probability 0"):
        verify("block", one, lambda prefix: [1.0, 0.0], chain, RandomCoins(1))
    assert verify("block", one, one, chain, RandomCoins(1)) == (1, 1, 1, 1)


# --- item 10: fit_log_linear and kseq_rho arguments ---


@pytest.mark.parametrize(
    ("x", "pattern"),
    [
        (["1", "10", "100"], "real numbers"),
        ([True, False, True], "real numbers"),
        ([1j, 10, 100], "real numbers"),
        ([1.0, 1.0 + 2.3e-16, 1.0 + 4.5e-16], "logarithms of x collapse"),
    ],
)
def test_issue22_fit_log_linear_refuses_non_real_or_collapsing_x(x, pattern):
    from spectheory.solvers.scaling import fit_log_linear

    with pytest.raises(stt.InvalidParameterError, match=pattern):
        fit_log_linear(x, [1.0, 2.0, 3.0])


def test_issue22_fit_log_linear_seed_and_bootstrap_size():
    from spectheory.solvers.scaling import fit_log_linear

    for seed in ("abc", 1.5, -1, [1, 2]):
        with pytest.raises(stt.InvalidParameterError, match="seed must be"):
            fit_log_linear([1, 10, 100], [1, 3, 5], seed=seed)
    with pytest.raises(stt.InstanceTooLargeError, match="n_boot"):
        fit_log_linear([1, 10, 100], [1, 3, 5], n_boot=10**9)
    a = fit_log_linear([1, 10, 100, 1000], [1, 3.5, 5, 7.2], n_boot=50, seed=3)
    b = fit_log_linear([1, 10, 100, 1000], [1, 3.5, 5, 7.2], n_boot=50,
                       seed=np.random.default_rng(3))
    assert a.slope_ci.tolist() == b.slope_ci.tolist()


def test_issue22_kseq_rho_checks_its_rows():
    from spectheory.verifiers.kseq import kseq_rho

    with pytest.raises(stt.InvalidDistributionError, match="nan"):
        kseq_rho(np.array([np.nan, 0.5]), np.array([0.5, 0.5]), 2)  # returned 1.0
    with pytest.raises(stt.InvalidParameterError, match="n must be"):
        kseq_rho(np.array([0.5, 0.5]), np.array([0.5, 0.5]), 0)
    # docs/theory.md §8.1 instance A: rho* = 7/5 for n = 2.
    np.testing.assert_allclose(kseq_rho(np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1]), 2),
                               1.4, rtol=1e-12)
