"""Exact laws by enumeration: draft-tuple laws, closed forms, docs/theory.md §8.1, §8.2 vectors."""

from collections import defaultdict
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spectheory import InvalidParameterError, bound, sample_drafts, solve_bound
from spectheory.drafting import SAMPLINGS, set_law_row
from spectheory.exact import CLOSED_FORMS, acceptance, ordered_draft_law, output_distribution
from spectheory.verifiers import REGISTRY, kseq_rho

P_A = np.array([0.3, 0.4, 0.3])
Q_A = np.array([0.6, 0.3, 0.1])
P_AF = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
Q_AF = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)


def frac(*values):
    return np.array([F(v) for v in values], dtype=object)


# docs/theory.md §8.2, certified rational instances.
ROW1 = (frac("309/500", "177/500", "7/250"), frac("373/1000", "29/50", "47/1000"), 2)
ROW2 = (frac("469/1000", "31/250", "407/1000"), frac("201/1000", "11/40", "131/250"), 3)
ROW3 = (
    frac("37/250", "21/500", "149/200", "1/20", "3/200"),
    frac("62/125", "17/125", "151/1000", "1/125", "209/1000"),
    3,
)


@st.composite
def weights(draw, min_support=1, V=None, sampling=None):
    """Integer weights, ``min_support`` of them positive.

    For i.i.d. drafts (``sampling="iid"``) half the examples instead have a support of
    at most ``min_support`` tokens (one-hot included), which is otherwise rare.
    """
    V = V if V is not None else draw(st.integers(max(2, min_support), 4))
    w = draw(st.lists(st.integers(0, 6), min_size=V, max_size=V))
    order = draw(st.permutations(range(V)))
    if sampling == "iid" and draw(st.booleans()):
        k = draw(st.integers(1, min_support))
        w = [x if i in order[:k] else 0 for i, x in enumerate(w)]
        order = order[:k]
    for i in order[:min_support]:
        w[i] = max(w[i], 1)
    return w


def as_fraction(w):
    return np.array([F(x, sum(w)) for x in w], dtype=object)


# --- draft tuple laws ---------------------------------------------------------------------


@given(data=st.data())
def test_ordered_tuple_laws_sum_to_one_and_merge_to_the_set_laws(data):
    n = data.draw(st.integers(1, 3))
    sampling = data.draw(st.sampled_from(SAMPLINGS))
    q = as_fraction(data.draw(weights(min_support=n, sampling=sampling)))
    law = ordered_draft_law(q, n, sampling)
    assert sum(w for _, w in law) == 1
    assert all(w > 0 and len(t) == n for t, w in law)
    merged = defaultdict(int)
    for t, w in law:
        merged[frozenset(t)] += w
    assert dict(merged) == set_law_row(q, n, sampling)
    if sampling == "without_replacement":
        assert all(len(set(t)) == n for t, _ in law)


@pytest.mark.parametrize("sampling", SAMPLINGS)
def test_sampled_drafts_are_tuples_of_the_enumerated_law(sampling):
    q = np.array([0.1, 0.4, 0.1, 0.25, 0.15])
    support = {t for t, _ in ordered_draft_law(q, 3, sampling)}
    drafts = sample_drafts(np.tile(q, (300, 1)), 3, sampling, rng=3)
    assert {tuple(d) for d in drafts.tolist()} <= support


def test_greedy_tuples_put_the_top_tokens_first_in_descending_order_ties_lowest_id():
    q = frac("1/10", "3/10", "1/10", "3/10", "1/5")
    law = ordered_draft_law(q, 3, "greedy")
    assert [t for t, _ in law] == [(1, 3, 0), (1, 3, 2), (1, 3, 4)]
    assert [w for _, w in law] == [F(1, 4), F(1, 4), F(1, 2)]


# --- closed forms against enumeration -------------------------------------------------------

CLOSED = [(name, s) for name in CLOSED_FORMS for s in REGISTRY[name].closed_form_samplings]


@pytest.mark.parametrize(("name", "sampling"), CLOSED)
@given(data=st.data())
def test_closed_forms_equal_the_enumerated_acceptance(name, sampling, data):
    n = data.draw(st.sampled_from(REGISTRY[name].n_values or (1, 2, 3)))
    q = as_fraction(data.draw(weights(min_support=n, sampling=sampling)))
    p = as_fraction(data.draw(weights(V=len(q))))
    closed = CLOSED_FORMS[name](p, q, n, sampling)
    assert closed == acceptance(name, p, q, n=n, sampling=sampling)  # exact, rho rational
    pf, qf = p.astype(float), q.astype(float)
    assert abs(float(CLOSED_FORMS[name](pf, qf, n, sampling)) - float(closed)) < 1e-12
    assert abs(acceptance(name, pf, qf, n=n, sampling=sampling) - float(closed)) < 1e-12


def test_acceptance_uses_the_closed_form_when_the_coin_tree_outgrows_its_estimate():
    """``optimal``, V = 4, n = 7: estimated at 180,224 runs (4^7 tuples x (n + V) leaves, under
    MAX_CALLS), its coin tree holds up to V mixture components a tuple, so enumeration
    stops at MAX_CALLS.  Regression: ``acceptance`` then raised InstanceTooLargeError ("use
    spectheory.simulate") though the verifier has an exact closed form, which the module
    promises it falls back to.  Oracle: the bound by enumerating token subsets in Fractions
    (min over A of 1 - (1 - q(A))^n + p(V \\ A)); ``output_distribution`` has no closed form
    and still refuses."""
    import itertools

    from spectheory import InstanceTooLargeError
    from spectheory.exact._law import MAX_CALLS, estimated_calls

    a, b, n = [26, 22, 4, 2], [34, 30, 33, 21], 7
    p, q = np.array(a) / sum(a), np.array(b) / sum(b)
    assert estimated_calls(q, n, "iid") <= MAX_CALLS
    pf, qf = [F(x, sum(a)) for x in a], [F(x, sum(b)) for x in b]
    want = min(1 - (1 - sum(qf[i] for i in A)) ** n + sum(pf[i] for i in range(4) if i not in A)
               for r in range(5) for A in itertools.combinations(range(4), r))
    assert abs(acceptance("optimal", p, q, n) - float(want)) < 1e-12
    with pytest.raises(InstanceTooLargeError, match="bigger than estimated"):
        output_distribution("optimal", p, q, n)


def test_kseq_closed_form_when_rounding_puts_p_acc_just_below_one():
    # p = q: beta = 1 up to rounding (a shrunk failure of the random profile).
    p = np.array([1, 4, 1]) / 6
    assert abs(CLOSED_FORMS["kseq"](p, p, 1, "iid") - 1) < 1e-12
    assert abs(acceptance("kseq", p, p, n=1) - 1) < 1e-12


def test_closed_forms_refuse_draft_laws_they_do_not_cover():
    with pytest.raises(InvalidParameterError, match="without_replacement"):
        CLOSED_FORMS["naive"](P_A, Q_A, 2, "without_replacement")
    with pytest.raises(InvalidParameterError, match="n=3"):
        CLOSED_FORMS["spechub"](P_A, Q_A, 3, "greedy")


@pytest.mark.parametrize("value", [1.7, -0.2, float("nan"), "0.5", F(3, 2)])
def test_a_user_closed_form_that_is_not_a_probability_is_refused(value):
    """A closed form answering outside [0, 1] was passed on as the acceptance (1.7)."""
    from spectheory import Verifier, VerifierError

    def first(p, q, drafts, coins, *, sampling="iid"):
        return drafts[0]

    v = Verifier("mine", first, lossless=False, closed_form=lambda p, q, n, s: value,
                 closed_form_samplings=("iid",))  # fmt: skip
    u = np.ones(5000) / 5000  # too large to enumerate: the closed form answers
    with pytest.raises(VerifierError, match=r"closed form of verifier 'mine' returned"):
        acceptance(v, u, u, 2)


# --- docs/theory.md §8.1: instance A -------------------------------------------------------------

INSTANCE_A = [
    ("rrs", "iid", 2, F(41, 50)),
    ("rrs", "iid", 3, F(106, 125)),
    ("rrs_wor", "without_replacement", 2, F(7, 8)),
    ("rrs_wor", "without_replacement", 3, F(1)),
    ("kseq", "iid", 2, F(21, 25)),
    ("kseq", "iid", 3, F(7, 8)),
    ("nss", "iid", 2, F(513, 1000)),
    ("nss", "iid", 3, F(6249, 10000)),
    ("naive", "iid", 2, F(3, 4)),
    ("naive", "iid", 3, F(789, 1000)),
    ("spechub", "greedy", 2, F(19, 20)),
    ("greedy", "greedy", 2, F(19, 20)),
    ("greedy", "greedy", 3, F(1)),
    ("sd", "iid", 1, F(7, 10)),
    ("optimal_lp", "iid", 2, F(89, 100)),
    ("optimal_lp", "iid", 3, F(971, 1000)),
    ("optimal_lp", "without_replacement", 2, F(139, 140)),
    ("khisti", "iid", 2, F(89, 100)),
    ("khisti", "without_replacement", 2, F(139, 140)),
]


@pytest.mark.parametrize(("name", "sampling", "n", "expected"), INSTANCE_A)
def test_instance_a_acceptances(name, sampling, n, expected):
    assert abs(acceptance(name, P_A, Q_A, n=n, sampling=sampling) - float(expected)) < 1e-12
    exact = acceptance(name, P_AF, Q_AF, n=n, sampling=sampling)
    assert exact == expected


def test_instance_a_kseq_parameters():
    # (rho*, beta, p_acc) = (1.4, 0.6, 0.84) for n = 2 and (1.75, 0.5, 0.875) for n = 3.
    for n, rho, beta, p_acc in ((2, F(7, 5), F(3, 5), F(21, 25)), (3, F(7, 4), F(1, 2), F(7, 8))):
        assert kseq_rho(P_AF, Q_AF, n) == rho
        assert abs(kseq_rho(P_A, Q_A, n) - float(rho)) < 1e-12
        b = np.minimum(P_AF / rho, Q_AF).sum()
        assert b == beta and 1 - (1 - b) ** n == p_acc


def test_instance_a_rrs_residuals():
    # docs/theory.md §8.1: r_2 = [0, 1/3, 2/3], r_3 = [0, 1/18, 17/18]; the output law is p.
    from spectheory.verifiers._ops import residual

    r2 = residual(P_AF, Q_AF)
    assert list(r2) == [0, F(1, 3), F(2, 3)]
    assert list(residual(r2, Q_AF)) == [0, F(1, 18), F(17, 18)]


# --- docs/theory.md §8.2: certified rational instances -------------------------------------------


@pytest.mark.parametrize(
    ("row", "sampling", "name", "expected"),
    [
        (ROW1, "iid", "rrs", F(169277, 200000)),
        (ROW2, "iid", "rrs", F(207227133, 250000000)),
        (ROW1, "iid", "naive", F(169277, 200000)),  # first residual is a point mass
        (ROW2, "iid", "naive", F(207227133, 250000000)),
        (ROW3, "without_replacement", "rrs_wor", F(76025810217187, 101241861840000)),
        (ROW1, "iid", "optimal_lp", F(988871, 1000000)),
        (ROW1, "iid", "khisti", F(988871, 1000000)),
    ],
)
def test_certified_rational_rows(row, sampling, name, expected):
    p, q, n = row
    assert acceptance(name, p, q, n=n, sampling=sampling) == expected
    assert list(output_distribution(name, p, q, n=n, sampling=sampling)) == list(p)


@pytest.mark.parametrize(
    ("row", "sampling", "expected"),
    [
        (ROW1, "iid", F(988871, 1000000)),
        (ROW2, "iid", F(1)),
        (ROW3, "without_replacement", F(4440878158613, 5062093092000)),
    ],
)
def test_optimal_lp_reaches_the_certified_optimum(row, sampling, expected):
    p, q, n = row
    pf, qf = p.astype(float), q.astype(float)
    for name in ("optimal_lp", "khisti"):
        assert abs(acceptance(name, pf, qf, n=n, sampling=sampling) - float(expected)) < 1e-12
    assert solve_bound(p, q, n=n, sampling=sampling, method="enumerate").exact_value == expected


@pytest.mark.parametrize(
    ("row", "rho", "beta", "alpha"),
    [(ROW1, 1.342444, 0.657556, 0.882732), (ROW2, 1.736455, 0.506795, 0.880028)],
)
def test_certified_rows_kseq(row, rho, beta, alpha):
    p, q, n = row
    pf, qf = p.astype(float), q.astype(float)
    r = kseq_rho(pf, qf, n)
    assert abs(r - rho) < 1e-6
    assert abs(np.minimum(pf / r, qf).sum() - beta) < 1e-6
    assert abs(acceptance("kseq", pf, qf, n=n) - alpha) < 1e-6
    # The rational rho used on exact input is at most 1e-12 above the float root.
    assert 0 <= kseq_rho(p, q, n) - F(r) < 1e-12


@pytest.mark.parametrize("row", [ROW1, ROW2])
def test_certified_rows_greedy_reaches_one(row):
    p, q, n = row
    assert acceptance("greedy", p, q, n=n, sampling="greedy") == 1


# --- types and batches ------------------------------------------------------------------------


def test_float_in_float_out_fraction_in_fraction_out():
    law = output_distribution("rrs", P_A, Q_A, n=2)
    assert law.dtype == np.float64 and law.shape == (3,)
    assert isinstance(acceptance("rrs", P_A, Q_A, n=2), float)
    assert isinstance(acceptance("rrs", P_AF, Q_AF, n=2), F)
    mixed = acceptance("rrs", P_AF, Q_A, n=2)  # one exact input makes both exact
    assert isinstance(mixed, F) and abs(float(mixed) - 0.82) < 1e-12


def test_batched_rows_are_solved_row_by_row():
    p = np.stack([P_A, [0.5, 0.5, 0.0]])
    q = np.stack([Q_A, [0.2, 0.3, 0.5]])
    law = output_distribution("rrs", p, q, n=2)
    assert law.shape == (2, 3)
    assert np.abs(law - p).max() < 1e-15
    acc = acceptance("rrs", p, q, n=2)
    assert acc.shape == (2,)
    assert abs(acc[0] - 0.82) < 1e-12
    assert abs(acc[1] - acceptance("rrs", p[1], q[1], n=2)) < 1e-15
    assert np.all(acc <= bound(p, q, n=2) + 1e-12)


def test_a_float_acceptance_is_a_probability_even_where_rounding_passes_one():
    """Audit: the sum of float products came out 1.0000000000000002 here (and a standard
    error sqrt(a (1 - a)) built from it was NaN); the exact value is 1."""
    from fractions import Fraction

    import spectheory as stt

    p, q = [0.58, 0.42], [0.45, 0.55]
    assert stt.bound(p, q, 2) == 1.0
    acc = stt.acceptance("optimal", p, q, n=2)
    assert acc == 1.0 and isinstance(acc, float)
    exact = stt.acceptance(
        "optimal",
        np.array([Fraction(58, 100), Fraction(42, 100)], dtype=object),
        np.array([Fraction(45, 100), Fraction(55, 100)], dtype=object),
        n=2,
    )
    assert exact == 1
    # larger excesses are not rounding and are not hidden
    from spectheory.exact._law import _probability

    assert _probability(1 + 1e-9) == 1 + 1e-9
    assert _probability(0.75) == 0.75


@pytest.mark.parametrize("law", [output_distribution, acceptance])
def test_a_coin_refusing_a_verifiers_probability_names_the_verifier_and_drafts(law):
    """Audit: sampling names a verifier whose coin refused its probability (VerifierError,
    with the drafts); the exact paths raised the coin's bare InvalidParameterError, naming
    neither, as if the caller's input were wrong."""
    from spectheory import VerifierError

    def no_min(p, q, drafts, coins, *, sampling):
        x = drafts[0]
        if coins.bernoulli(p[x] / q[x]):  # forgot min(1, .): 4/3 for token 1
            return x
        return coins.categorical(p)

    match = r"verifier 'no_min' raised .*bernoulli prob.*\(drafts \(1,\)\)"
    with pytest.raises(VerifierError, match=match):
        law(no_min, P_AF, Q_AF, n=1, sampling="iid")
