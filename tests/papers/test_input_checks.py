"""Input checks of the paper modules' public and private entry points."""

from fractions import Fraction as F

import numpy as np
import pytest

from spectheory import (
    InvalidDistributionError,
    InvalidParameterError,
    ShapeMismatchError,
    bound,
)
from spectheory._errors import InstanceTooLargeError
from spectheory.papers import _spectr_blocks as blocks
from spectheory.papers import blockverify, specdecpp, spectr
from spectheory.papers._block_chains import (
    block_stop_probabilities,
    chain_exact,
    chain_monte_carlo,
)

P = np.array([0.3, 0.4, 0.3])
Q = np.array([0.6, 0.3, 0.1])
NAN = np.array([np.nan, 0.7, 0.3])
NEG = np.array([-0.1, 0.8, 0.3])


# --------------------------------------------------------------------------- iid_optimum


def test_iid_optimum_accepts_lists_and_agrees_with_bound():
    assert spectr.iid_optimum(P.tolist(), Q.tolist(), 2) == pytest.approx(float(bound(P, Q, 2)))


@pytest.mark.parametrize(
    "p, q, err, match",
    [
        (2 * P, Q, InvalidDistributionError, "target sums to 2"),  # 1.0 before
        (P, 2 * Q, InvalidDistributionError, "draft sums to"),
        (NEG, Q, InvalidDistributionError, "negative"),
        (NAN, Q, InvalidDistributionError, "non-finite"),
        (P, np.array([0.5, 0.5]), ShapeMismatchError, "vocabularies"),
        (np.array([P, P]), np.array([Q, Q]), ShapeMismatchError, "one row"),
    ],
)
def test_iid_optimum_refuses_bad_rows(p, q, err, match):
    with pytest.raises(err, match=match):
        spectr.iid_optimum(p, q, 2)


@pytest.mark.parametrize("n", [0, -1, 1.5, True, "2"])
def test_iid_optimum_refuses_bad_n(n):
    with pytest.raises(InvalidParameterError, match="n must"):
        spectr.iid_optimum(P, Q, n)


# --------------------------------------------------------------------------- SpecTr blocks


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: blocks.kseq_rhos(P, Q, [0, 1]), InvalidParameterError, "ks entry"),
        (lambda: blocks.kseq_rhos(P, Q, [2.5]), InvalidParameterError, "ks entry"),
        (lambda: blocks.kseq_rhos(P, Q, []), InvalidParameterError, "ks"),
        (lambda: blocks.kseq_rhos(P, Q, 3), InvalidParameterError, "ks"),
        (lambda: blocks.kseq_rhos(P, Q, [2], iterations=0), InvalidParameterError, "iterations"),
        (lambda: blocks.kseq_rhos(3 * P, Q, [2]), InvalidDistributionError, "target sums"),
        (lambda: blocks.kseq_rhos(NAN, Q, [2]), InvalidDistributionError, "non-finite"),
        (lambda: blocks.kseq_transition(P, Q, 0, 1.0), InvalidParameterError, "m must"),
        (lambda: blocks.kseq_transition(P, Q, 2.5, 1.0), InvalidParameterError, "m must"),
        (lambda: blocks.kseq_transition(P, Q, 2, 0.5), InvalidParameterError, "rho"),
        (lambda: blocks.kseq_transition(P, Q, 2, np.nan), InvalidParameterError, "rho"),
        (lambda: blocks.kseq_transition(P, Q, 2, True), InvalidParameterError, "rho"),
        (lambda: blocks.kseq_transition(P, 2 * Q, 2, 1.4), InvalidDistributionError, "draft"),
        (lambda: blocks.kseq_transition(NEG, Q, 2, 1.4), InvalidDistributionError, "negative"),
    ],
)
def test_spectr_block_helpers_refuse_bad_input(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_kseq_helpers_accept_lists_and_numpy_ints():
    rhos = blocks.kseq_rhos(P.tolist(), Q.tolist(), np.array([1, 2, 3]))
    np.testing.assert_allclose(rhos, [1.0, 1.4, 1.75], rtol=1e-12)
    t = blocks.kseq_transition(P.tolist(), Q.tolist(), np.int64(2), np.float64(rhos[1]))
    assert t.shape == (3,) and abs(t.sum() - 1) < 1e-12


@pytest.mark.parametrize(
    "mats, K, err, match",
    [
        ([{1: np.array([0.5, 0.5])}], 0, InvalidParameterError, "K must"),
        ([{1: np.array([0.5, 0.5])}], 2, InvalidParameterError, r"mats\[0\] has no .* m = 2"),
        ([{1: np.array([1.0, 1.0])}], 1, InvalidDistributionError, r"mats\[0\]\[1\] sums to 2"),
        ([{1: np.array([np.nan, 1.0])}], 1, InvalidDistributionError, "invalid entry"),
        ([{1: np.array([-0.5, 1.5])}], 1, InvalidDistributionError, "invalid entry"),
        ([{1: np.array([0.2, 0.3, 0.5])}], 1, ShapeMismatchError, r"shape \(2,\)"),
        ([{1: np.array(["a", "b"])}], 1, InvalidDistributionError, "dtype"),
        (None, 1, InvalidParameterError, "mats"),
    ],
)
def test_tau_from_transitions_refuses_bad_input(mats, K, err, match):
    with pytest.raises(err, match=match):
        blocks.tau_from_transitions(mats, K)


def test_tau_from_transitions_accepts_rounding_negatives():
    t = blocks.kseq_transition(P, Q, 3, blocks.kseq_rhos(P, Q, [3])[0])
    t[0] -= 1e-16
    assert blocks.tau_from_transitions([{1: np.array([0.5, 0.5]), 2: t[:3] / t[:3].sum(),
                                        3: t}], 3)[1] > 1  # fmt: skip


# --------------------------------------------------------------------------- block chains


def _frac(*v):
    return lambda s: [F(x) for x in v]


@pytest.mark.parametrize(
    "target, draft, gamma, err, match",
    [
        (_frac("1/3", "2/3"), _frac("2/3", "2/3"), 2, InvalidDistributionError, "draft"),
        (_frac("-1/3", "4/3"), _frac("2/3", "1/3"), 2, InvalidDistributionError, "negative"),
        (lambda s: [np.nan, 1.0], lambda s: [0.5, 0.5], 1, InvalidDistributionError, "target"),
        (_frac("1/3", "2/3", "0"), _frac("2/3", "1/3"), 2, ShapeMismatchError, "vocabularies"),
        (_frac("1/3", "2/3"), _frac("2/3", "1/3"), 2.5, InvalidParameterError, "gamma"),
    ],
)
def test_chain_exact_refuses_bad_rows(target, draft, gamma, err, match):
    with pytest.raises(err, match=match):
        chain_exact(target, draft, gamma)


def _rows(seed):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(3), size=(2, 2)), rng.dirichlet(np.ones(3), size=(2, 2))


@pytest.mark.parametrize(
    "change, err, match",
    [
        (lambda p, q: (p, 2 * q), InvalidDistributionError, r"q_rows\[0\] row 0 sums to 2"),
        (lambda p, q: (3 * p, q), InvalidDistributionError, r"p_rows\[0\] row 0 sums to 3"),
        (lambda p, q: (np.where(p == p[0, 0, 0], np.nan, p), q), InvalidDistributionError,
         "non-finite"),
        (lambda p, q: (p, q[:, :, :2]), ShapeMismatchError, "same shape"),
        (lambda p, q: (p[0], q[0]), ShapeMismatchError, "same shape"),
    ],
)  # fmt: skip
def test_chain_monte_carlo_refuses_bad_rows(change, err, match):
    p, q = change(*_rows(0))
    with pytest.raises(err, match=match):
        chain_monte_carlo(p, q, 2, 10, np.random.default_rng(0))


def test_chain_monte_carlo_takes_a_seed_and_refuses_other_rngs():
    p, q = _rows(0)
    a = chain_monte_carlo(p, q, 2, 50, 7)  # AttributeError before
    b = chain_monte_carlo(p, q, 2, 50, np.random.default_rng(7))
    np.testing.assert_array_equal(a["block"], b["block"])
    for bad in (-1, 1.5, "x"):
        with pytest.raises(InvalidParameterError, match="rng"):
            chain_monte_carlo(p, q, 2, 10, bad)


def test_block_stop_probabilities_names_mismatched_lengths():
    with pytest.raises(ShapeMismatchError, match="z must hold at least"):
        block_stop_probabilities([F(1, 2), F(1, 4), F(1, 3)], [F(0)])  # IndexError before
    with pytest.raises(ShapeMismatchError, match="w must hold"):
        block_stop_probabilities([], [])


@pytest.mark.parametrize(
    "instance, gamma, err, match",
    [
        (([0.5, 0.5], [0.5, 0.6]), 2, InvalidDistributionError, "draft sums"),  # TypeError before
        (([0.5, 0.5], [0.5, 0.5]), 0, InvalidParameterError, "gamma"),
        (([0.5, 0.5], [0.5, 0.5]), 1.5, InvalidParameterError, "gamma"),
        (([0.5, 0.5], [0.2, 0.3, 0.5]), 1, ShapeMismatchError, "vocabularies"),
        (([0.5, 0.5],), 1, InvalidParameterError, "pair"),
        (([0.5, 0.5], [0.5, 0.5]), 8, InstanceTooLargeError, "V \\*\\* gamma"),
    ],
)
def test_ideal_by_lp_refuses_bad_input(instance, gamma, err, match):
    with pytest.raises(err, match=match):
        blockverify.ideal_by_lp(instance, gamma)


def test_ideal_by_lp_equals_the_joint_bound_on_float_rows():
    got = blockverify.ideal_by_lp(([0.2, 0.5, 0.3], [0.5, 0.3, 0.2]), 2)
    want = chain_exact(_frac("2/10", "5/10", "3/10"), _frac("5/10", "3/10", "2/10"), 2)
    assert got == pytest.approx(float(want["joint_bound"][1]), abs=1e-9)


# --------------------------------------------------------------------------- SpecDec++


@pytest.mark.parametrize("gammas", [[2.7], [], [True], [-1], "12", [1, "2"]])
def test_best_fixed_gamma_refuses_bad_gammas(gammas):
    with pytest.raises(InvalidParameterError, match="gammas"):
        specdecpp.best_fixed_gamma([np.full(20, 0.9)], 0.05, gammas)


def test_best_fixed_gamma_accepts_numpy_ints():
    assert specdecpp.best_fixed_gamma([np.full(20, 0.1)], 0.9, np.arange(3)) == 0


@pytest.mark.parametrize("h", [1.5, -0.1, np.nan, True, "0.5"])
def test_threshold_round_refuses_thresholds_outside_0_1(h):
    with pytest.raises(InvalidParameterError, match=r"h must be a threshold in \[0, 1\]"):
        specdecpp.threshold_round({0.5: 1.0}, 0.2, h)


@pytest.mark.parametrize("h", [0.0, 0.3, 0.6, 0.9, 1.0])
def test_threshold_round_at_zero_cost_gives_the_drafted_tokens(h):
    # ZeroDivisionError before; D does not depend on c.
    law = {0.5: 0.4, 0.9: 0.6}
    s0, d0 = specdecpp.threshold_round(law, 0.0, h)
    s1, d1 = specdecpp.threshold_round(law, 0.2, h)
    assert d0 == pytest.approx(d1, abs=1e-12)
    assert s0 == pytest.approx(s1 * (1 + 0.2 * d1), abs=1e-12)  # S(0) = 1 + N


def test_threshold_round_refuses_a_negative_cost():
    with pytest.raises(InvalidParameterError, match="t_draft"):
        specdecpp.threshold_round({0.5: 1.0}, -0.1, 0.5)


@pytest.mark.parametrize("points", [True, 0, 2.5, "3"])
def test_threshold_grid_refuses_bad_points(points):
    with pytest.raises(InvalidParameterError, match="points"):
        specdecpp.threshold_grid(points)


def test_block_helpers_refuse_values_outside_the_unit_interval():
    from spectheory.papers._block_chains import block_stop_probabilities, expected_block

    with pytest.raises(InvalidParameterError, match=r"w\[1\] must be a probability"):
        block_stop_probabilities([0.5, 1.5], [0.0])
    with pytest.raises(InvalidParameterError, match=r"h\[0\] must be a probability"):
        expected_block([float("nan"), 0.5])  # gave nan
    with pytest.raises(InvalidParameterError, match=r"h\[1\] must be a probability"):
        expected_block([0.5, 1.5])
    assert expected_block([0.5, 0.5]) == 1.25


def test_tree_builder_refuses_a_negative_token():
    from spectheory.trees._tree import TreeBuilder

    with pytest.raises(InvalidParameterError, match="token must be a token id"):
        TreeBuilder().draw(0, -1)
