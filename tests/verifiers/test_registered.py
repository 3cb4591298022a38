"""Every registered verifier: lossless by exact enumeration, below the bound, replayable.

Also the pitfalls of docs/theory.md §7.5 (P1-P4), written here as deliberately biased
variants and caught by the exact law, and typical acceptance shown lossy.
"""

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import chi2

from spectheory import (
    InvalidDistributionError,
    InvalidParameterError,
    ShapeMismatchError,
    bound,
    sample_drafts,
    solve_bound,
)
from spectheory.coins import ReplayCoins, enumerate_outcomes
from spectheory.drafting import SAMPLINGS, top_tokens
from spectheory.exact import acceptance, exact_row, output_distribution
from spectheory.verifiers import REGISTRY, get_verifier, verify
from spectheory.verifiers._ops import accept_prob, normalise_or, residual
from spectheory.verifiers.kseq import kseq, kseq_rho
from spectheory.verifiers.pointmass import nss
from spectheory.verifiers.rrs import rrs

P_A = np.array([0.3, 0.4, 0.3])
Q_A = np.array([0.6, 0.3, 0.1])
P_AF = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
Q_AF = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)

LOSSLESS = [name for name, v in REGISTRY.items() if v.lossless]
#: Verifiers whose acceptance equals the optimum of their draft law.
OPTIMAL = ("greedy", "spechub", "optimal_lp", "khisti", "pair_scores", "optimal")


def tv(a, b):
    return 0.5 * float(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float)).sum())


@st.composite
def instances(draw, name):
    """A draft law the verifier supports, n, and integer weights for p and q (zeros allowed)."""
    v = REGISTRY[name]
    sampling = draw(st.sampled_from(v.samplings))
    n = draw(st.sampled_from(v.n_values_for(sampling) or (1, 2, 3)))
    V = draw(st.integers(max(2, n), 4))
    wp = draw(st.lists(st.integers(0, 6), min_size=V, max_size=V).filter(any))
    wq = draw(st.lists(st.integers(0, 6), min_size=V, max_size=V))
    order = draw(st.permutations(range(V)))
    if sampling == "iid" and draw(st.booleans()):
        # i.i.d. drafts from a support of at most n tokens (one-hot q: every draft the
        # same token), which forcing n positive tokens left to chance (< 10% of examples).
        k = draw(st.integers(1, n))
        wq = [w if i in order[:k] else 0 for i, w in enumerate(wq)]
        order = order[:k]
    for i in order[:n]:  # at least n tokens with q > 0, or the k above
        wq[i] = max(wq[i], 1)
    return sampling, n, wp, wq


def as_float(w):
    return np.array(w, dtype=float) / sum(w)


def as_fraction(w):
    return np.array([F(x, sum(w)) for x in w], dtype=object)


# --- registry ---------------------------------------------------------------------------


def test_registry_holds_every_published_verifier_with_valid_metadata():
    expected = {"sd", "rrs", "rrs_wor", "kseq", "spechub", "greedy", "nss", "naive", "khisti"}
    assert set(REGISTRY) == expected | {"optimal_lp", "optimal", "embedded_iid", "pair_tiers",
                                        "pair_scores", "random_utility", "typical"}
    for name, v in REGISTRY.items():
        assert v.name == name
        assert set(v.samplings) <= set(SAMPLINGS) and v.samplings
        assert set(v.closed_form_samplings) <= set(v.samplings)
        assert (v.closed_form is None) == (not v.closed_form_samplings)
        assert v.cost and v.paper
    assert [n for n, v in REGISTRY.items() if not v.lossless] == ["typical"]
    assert get_verifier(REGISTRY["rrs"]) is REGISTRY["rrs"]


def test_unknown_verifier_names_the_valid_ones():
    with pytest.raises(InvalidParameterError, match=r"'rrs'.*got 'rss'"):
        get_verifier("rss")


# --- losslessness and the bound, exactly -------------------------------------------------


@pytest.mark.parametrize("name", LOSSLESS)
@given(data=st.data())
def test_lossless_verifiers_output_the_target_exactly(name, data):
    sampling, n, wp, wq = data.draw(instances(name))
    p, q = as_float(wp), as_float(wq)
    law = output_distribution(name, p, q, n=n, sampling=sampling)
    assert law.dtype == np.float64
    assert tv(law, p) < 1e-12
    pf, qf = as_fraction(wp), as_fraction(wq)
    law_f = output_distribution(name, pf, qf, n=n, sampling=sampling)
    assert law_f.dtype == object
    assert list(law_f) == list(pf)  # exact rational equality


@pytest.mark.parametrize("name", LOSSLESS)
@given(data=st.data())
def test_acceptance_never_exceeds_the_bound_and_optimal_verifiers_reach_it(name, data):
    sampling, n, wp, wq = data.draw(instances(name))
    p, q = as_float(wp), as_float(wq)
    acc = acceptance(name, p, q, n=n, sampling=sampling)
    best = bound(p, q, n=n, sampling=sampling)
    assert acc <= best + 1e-12
    if name in OPTIMAL:
        assert abs(acc - best) < 1e-12
    # greedy and spechub: a rational closed form; pair_scores: its scores solved again
    # exactly; optimal: its plan in Fractions (i.i.d.), pair_scores' (without replacement)
    # or Hu et al.'s closed form (greedy).  Each equals the bound in exact arithmetic.
    if name in ("greedy", "spechub", "pair_scores", "optimal"):
        pf, qf = as_fraction(wp), as_fraction(wq)
        exact = solve_bound(pf, qf, n=n, sampling=sampling, method="enumerate").exact_value
        assert acceptance(name, pf, qf, n=n, sampling=sampling) == exact


# Shrunk failures of the random hypothesis profile, frozen (float first, then exact:
# 0.5 and Fraction(1, 2) share a hash, so a per-instance cache must tell them apart).
REGRESSIONS = [
    ("optimal_lp", "iid", 3, [0, 1, 1], [1, 1, 2]),
    ("khisti", "without_replacement", 3, [0, 1, 4], [1, 1, 1]),
    ("kseq", "iid", 1, [1, 4, 1], [1, 4, 1]),
]


@pytest.mark.parametrize(("name", "sampling", "n", "wp", "wq"), REGRESSIONS)
def test_frozen_regressions_are_lossless(name, sampling, n, wp, wq):
    p, q = as_float(wp), as_float(wq)
    assert tv(output_distribution(name, p, q, n=n, sampling=sampling), p) < 1e-12
    assert acceptance(name, p, q, n=n, sampling=sampling) <= bound(p, q, n, sampling) + 1e-12
    pf, qf = as_fraction(wp), as_fraction(wq)
    assert list(output_distribution(name, pf, qf, n=n, sampling=sampling)) == list(pf)


@given(data=st.data())
def test_kseq_is_lossless_for_every_rho_between_the_root_and_n(data):
    _, n, wp, wq = data.draw(instances("kseq"))
    p, q = as_fraction(wp), as_fraction(wq)
    root = kseq_rho(p, q, n)
    for rho in (root, (root + n) / 2, F(n)):
        law, _ = exact_row(lambda *a, r=rho, **k: kseq(*a, rho=r, **k), p, q, n, "iid")
        assert list(law) == list(p)


# --- typical acceptance is lossy ---------------------------------------------------------


def test_typical_acceptance_is_lossy_on_an_explicit_instance():
    # On instance A every token clears min(0.09, 0.3 exp(-H(p))) = 0.09, so the
    # first draft is always output: the law is q, not p, and acceptance 1 > 0.7.
    law = output_distribution("typical", P_AF, Q_AF, n=1)
    assert list(law) == list(Q_AF)
    assert tv(law, P_AF) == pytest.approx(0.3, abs=1e-15)
    assert acceptance("typical", P_AF, Q_AF, n=1) == 1
    assert acceptance("typical", P_A, Q_A, n=1) > bound(P_A, Q_A, n=1) + 0.29


def test_typical_falls_back_to_the_target_argmax():
    p = np.array([0.96, 0.02, 0.02])
    q = np.array([0.1, 0.45, 0.45])
    law = output_distribution("typical", p, q, n=2)  # 0.02 < 0.09: nothing accepted
    assert law.tolist() == [1.0, 0.0, 0.0]


# --- replay: identical tokens for identical uniforms --------------------------------------

HAND_FED = [
    ("sd", (0,), [0.4], 0),
    ("sd", (0,), [0.6, 0.1], 1),
    ("sd", (0,), [0.6, 0.5], 2),
    ("naive", (0, 1), [0.6, 0.1], 1),
    ("rrs", (0, 2), [0.7, 0.3], 2),
    ("rrs", (0, 0), [0.7, 0.9, 0.05], 1),  # r_3 = [0, 1/18, 17/18]
    ("rrs", (0, 0), [0.7, 0.9, 0.06], 2),
    ("rrs_wor", (0, 1), [0.9, 0.44], 1),  # b accepted w.p. 4/9
    ("rrs_wor", (0, 1), [0.9, 0.45, 0.0], 2),
    ("kseq", (0, 1), [0.2], 0),  # p(a) / (1.4 q(a)) = 5/14
    ("kseq", (1, 0), [0.96, 0.5, 0.0], 2),  # residual is c
    ("spechub", (0, 1), [0.3, 0.9], 1),  # pair (b, a): b accepted w.p. 1
    ("spechub", (0, 1), [0.5, 0.1], 1),  # pair (a, b): b accepted w.p. 2/9
    ("spechub", (0, 1), [0.5, 0.5, 0.5], 0),  # then a w.p. 6/7
    ("spechub", (0, 1), [0.5, 0.5, 0.9, 0.0], 2),
    ("greedy", (0, 1), [0.5], 1),  # q_tilde = [0, 3/4, 1/4]: b w.p. 8/15
    ("greedy", (0, 1), [0.9, 0.5], 0),  # residual [6/7, 0, 1/7]
    ("greedy", (0, 1), [0.9, 0.95], 2),
    ("nss", (1, 1, 0), [0.5, 0.3], 0),  # reject b; r = [1/2, 0, 1/2]; a w.p. 1/2
    ("nss", (1, 1, 0), [0.5, 0.7, 0.2], 2),
    ("typical", (2, 1), [], 2),
]


@pytest.mark.parametrize(("name", "drafts", "uniforms", "token"), HAND_FED)
def test_hand_fed_uniforms_give_the_hand_computed_token(name, drafts, uniforms, token):
    v = REGISTRY[name]
    for p, q in ((P_A, Q_A), (P_AF, Q_AF)):
        coins = ReplayCoins(uniforms)
        assert v.function(p, q, drafts, coins, sampling=v.samplings[0]) == token
    assert coins.position == len(uniforms)  # every uniform was used, none was left over


@pytest.mark.parametrize("name", list(REGISTRY))
@given(seed=st.integers(0, 2**32 - 1), data=st.data())
def test_verify_equals_replay_of_the_same_generator_stream(name, seed, data):
    v = REGISTRY[name]
    sampling = data.draw(st.sampled_from(v.samplings))  # every law, not only the last
    n = max(v.n_values_for(sampling) or (3,))
    drafts = sample_drafts(Q_A, n, sampling, rng=seed)
    token = verify(name, P_A, Q_A, drafts, rng=seed + 1, sampling=sampling)
    stream = np.random.default_rng(seed + 1).random(64)
    replayed = v.function(P_A, Q_A, tuple(drafts.tolist()), ReplayCoins(stream), sampling=sampling)
    assert token == replayed


def test_verify_samples_the_target_by_a_chi_square_test():
    # 20,000 independent rounds of RRS-wor (n = 2); chi-square on 3 bins, df = 2.
    # The false-alarm probability of the threshold is 1e-6 (fixed seed, so deterministic).
    N = 20_000
    rng = np.random.default_rng(7)
    drafts = sample_drafts(np.tile(Q_A, (N, 1)), 2, "without_replacement", rng=rng)
    y = verify("rrs_wor", np.tile(P_A, (N, 1)), np.tile(Q_A, (N, 1)), drafts, rng=rng)
    counts = np.bincount(y, minlength=3)
    stat = float(((counts - N * P_A) ** 2 / (N * P_A)).sum())
    assert stat < chi2.isf(1e-6, df=2)
    member = (y[:, None] == drafts).any(axis=1).mean()
    assert abs(member - 7 / 8) < 6 * np.sqrt(7 / 8 / 8 / N)  # 6-sigma band around 7/8


# --- input checks -------------------------------------------------------------------------


def test_a_verifier_outside_its_draft_laws_is_refused_naming_both():
    with pytest.raises(InvalidParameterError, match=r"'spechub'.*'iid'"):
        acceptance("spechub", P_A, Q_A, n=2, sampling="iid")
    with pytest.raises(InvalidParameterError, match=r"'rrs'.*'without_replacement'"):
        output_distribution("rrs", P_A, Q_A, n=2, sampling="without_replacement")
    with pytest.raises(InvalidParameterError, match="n=3"):
        acceptance("spechub", P_A, Q_A, n=3, sampling="greedy")
    with pytest.raises(InvalidParameterError, match="sampling"):
        acceptance("nss", P_A, Q_A, n=2, sampling="beam")


def test_bad_distributions_and_sizes_are_refused():
    with pytest.raises(InvalidDistributionError, match="target"):
        acceptance("rrs", [0.5, 0.6, -0.1], Q_A, n=2)
    with pytest.raises(ShapeMismatchError):
        acceptance("rrs", [0.5, 0.5], Q_A, n=2)
    with pytest.raises(InvalidParameterError, match="support"):
        acceptance("rrs_wor", P_A, [0.5, 0.5, 0.0], n=3)
    with pytest.raises(InvalidParameterError, match="n must be"):
        acceptance("rrs", P_A, Q_A, n=0)


def test_verify_refuses_drafts_the_law_cannot_produce():
    q = np.array([0.5, 0.5, 0.0])
    with pytest.raises(InvalidParameterError, match="outside"):
        verify("rrs", P_A, q, [0, 3], rng=0)
    with pytest.raises(InvalidParameterError, match="probability 0"):
        verify("rrs", P_A, q, [0, 2], rng=0)
    with pytest.raises(InvalidParameterError, match="probability 0"):
        verify("rrs_wor", P_A, q, [1, 1], rng=0)
    with pytest.raises(InvalidParameterError, match="probability 0"):
        verify("greedy", P_A, Q_A, [1, 2], rng=0)
    with pytest.raises(InvalidParameterError, match="integer"):
        verify("rrs", P_A, Q_A, [0.5], rng=0)
    with pytest.raises(ShapeMismatchError):
        verify("rrs", np.tile(P_A, (2, 1)), np.tile(Q_A, (2, 1)), [[0, 1]] * 3, rng=0)
    # Point-mass verification accepts any drafter, even tokens the draft model rules out.
    assert verify("nss", P_A, q, [2, 2], rng=0) in (0, 1, 2)


# --- pitfalls (docs/theory.md §7.5), deliberately biased, caught by the exact law ----------------


def rrs_dedup(p, q, drafts, coins, *, sampling="iid"):
    """P1: RRS that skips a repeated i.i.d. draft without updating the residual."""
    r, seen = p, set()
    for x in drafts:
        if x in seen:
            continue
        seen.add(x)
        if coins.bernoulli(accept_prob(r[x], q[x])):
            return x
        r = residual(r, q)
    return coins.categorical(r)


def rrs_wor_original_q(p, q, drafts, coins, *, sampling="without_replacement"):
    """P3: RRS without replacement whose residual subtracts the ORIGINAL q."""
    r, qc = p, q
    for x in drafts:
        if coins.bernoulli(accept_prob(r[x], qc[x])):
            return x
        r = residual(r, q)
        removed = qc.copy()
        removed[x] = 0 * removed[x]
        qc = normalise_or(removed, qc)
    return coins.categorical(r)


def kseq_rho_one(p, q, drafts, coins, *, sampling="iid"):
    """P4: K-SEQ with rho = 1 (below rho*) and the residual norm((p - rho q)_+)."""
    for x in drafts:
        if coins.bernoulli(accept_prob(p[x], q[x])):
            return x
    return coins.categorical(residual(p, q))


def test_p1_dedup_of_iid_drafts_in_rrs_is_biased():
    law, _ = exact_row(rrs_dedup, P_AF, Q_AF, 3, "iid")
    assert tv(law, P_AF) > 0.075  # exactly 0.08
    fair, _ = exact_row(rrs, P_AF, Q_AF, 3, "iid")
    assert list(fair) == list(P_AF)


def test_p1_dedup_can_exceed_the_optimum():
    # Found by a random search over small instances: dedup beats the optimum by 0.057.
    p = as_fraction([0, 6, 5])
    q = as_fraction([9, 1, 4])
    law, acc = exact_row(rrs_dedup, p, q, 3, "iid")
    assert tv(law, p) > 0.17
    assert float(acc) > bound(p.astype(float), q.astype(float), n=3) + 0.05


def test_p2_rrs_on_deterministic_top_k_drafts_is_biased_and_point_mass_is_not():
    drafts = tuple(int(t) for t in top_tokens(Q_AF, 2))  # (a, b), always
    law = enumerate_outcomes(lambda c: rrs(P_AF, Q_AF, drafts, c))
    assert law == {0: F(1, 2), 1: F(1, 2)}  # TV 0.3 from p
    fair = enumerate_outcomes(lambda c: nss(P_AF, Q_AF, drafts, c))
    assert fair == {0: F(3, 10), 1: F(4, 10), 2: F(3, 10)}  # false alarm 7.6: lossless


def test_p3_rrs_wor_residual_against_the_original_q_is_biased():
    # Found by a random search over small instances (TV 0.0857); on instance A, n = 2
    # the bias is only 1/144.
    p, q = as_fraction([0, 7, 1, 8]), as_fraction([8, 3, 8, 1])
    law, _ = exact_row(rrs_wor_original_q, p, q, 3, "without_replacement")
    assert tv(law, p) > 0.08
    law_a, _ = exact_row(rrs_wor_original_q, P_AF, Q_AF, 2, "without_replacement")
    assert tv(law_a, P_AF) == pytest.approx(1 / 144, abs=1e-15)
    fair = output_distribution("rrs_wor", p, q, n=3, sampling="without_replacement")
    assert list(fair) == list(p)


def test_p4_kseq_with_the_wrong_rho_is_biased():
    law, _ = exact_row(kseq_rho_one, P_AF, Q_AF, 2, "iid")
    assert tv(law, P_AF) > 0.1  # exactly 0.11
    assert list(output_distribution("kseq", P_AF, Q_AF, n=2)) == list(P_AF)
