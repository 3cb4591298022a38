"""Round-4 mutation kills: logits processing, draft laws, coins, input checks, the live check.

Each test is deterministic and cheap, and names in its docstring the seeded bug
(mutant) it catches; the expected values come from hand computation or exact
(Fraction) enumeration, never from the code under test.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest

from spectheory.distributions import process_logits
from spectheory.drafting import draft_set_probability

# --------------------------------------------------------------------------- distributions.py


def test_top_p_keeps_the_token_that_reaches_the_threshold_exactly():
    """Bugs: top-p dropped a token once the mass *before* it exceeded ``top_p`` (``>`` for
    ``>=``), or once the mass *including* it reached ``top_p`` (cumsum without ``- p``).

    Four equal logits give probabilities 1/4 each (exact in binary).  The
    smallest prefix whose mass reaches ``top_p = 1/2`` is the first two tokens
    (ties to the lowest id), renormalised to (1/2, 1/2, 0, 0); the first bug
    keeps three tokens, the second one.
    """
    assert process_logits([0.0, 0.0, 0.0, 0.0], top_p=0.5).tolist() == [0.5, 0.5, 0.0, 0.0]


def test_top_p_orders_by_the_raw_logits_when_temperature_rounds_them_together():
    """Bug: top-p ranked tokens by the shifted, temperature-divided logits instead of the raw ones.

    At ``T = 1e300`` the logits 0 and 1e-30 become -1e-330 and 0: both round
    to 0, so the two tokens get probability 1/2 each.  Token 1 has the larger
    logit and so is the most likely token; the smallest set reaching
    ``top_p = 1/2`` is {1}, giving (0, 1).  Ranking the rounded logits ties the
    two and keeps token 0 instead.
    """
    assert process_logits([0.0, 1e-30], temperature=1e300, top_p=0.5).tolist() == [0.0, 1.0]


def test_top_p_one_is_no_truncation_even_where_the_cumsum_rounds_to_one():
    """Bug: top-p was applied at ``top_p = 1`` (``<=`` for ``<``).

    With logits (0, -40) the second token has probability
    :math:`e^{-40}/(1 + e^{-40}) \\approx 4.2\\cdot 10^{-18}`, below half an ulp of
    1, so the running mass before it is already 1.0 in floating point and a
    ``mass >= 1`` cut drops it.  ``top_p = 1`` keeps every token: the output is
    the plain softmax.
    """
    out = process_logits([0.0, -40.0], top_p=1.0)
    assert out[1] == pytest.approx(math.exp(-40) / (1 + math.exp(-40)), rel=1e-12, abs=0)
    assert out[0] == 1.0


# ------------------------------------------------------------------- drafting.py, exact/_tuples.py

#: A peaked float draft: one token of mass 1 - 1e-12, three sharing the rest.
PEAKED = np.array([1 - 1e-12, 1e-12 / 3, 1e-12 / 3, 1e-12 / 3])


def _wor_pair_weights(q):
    """Exact law of the ordered pair drawn without replacement from ``q`` (Fractions of the floats).

    ``P(i, j) = q_i / s * q_j / (s - q_i)`` with ``s = sum(q)``, by hand.
    """
    qf = [F(float(v)) for v in q]
    s = sum(qf)
    return {
        (i, j): qf[i] / s * qf[j] / (s - qf[i])
        for i, j in itertools.permutations(range(len(qf)), 2)
    }


def test_wor_set_probability_sums_the_mass_left_for_a_peaked_draft():
    """Bug: ``_wor_prob_in`` renormalised by ``1 - q(used)`` instead of summing the tokens left.

    After the heavy token (mass 1 - 1e-12) is drawn, ``1 - q_0`` cancels to a
    few digits in floating point (relative error ~1e-4), whereas the sum of the
    three light tokens is accurate to ~1e-16.  The oracle enumerates the
    ordered pairs inside ``H = {0, 1}`` exactly in Fractions: about 1/3 (the pair (0, 1)).
    """
    w = _wor_pair_weights(PEAKED)
    want = w[0, 1] + w[1, 0]
    got = draft_set_probability(PEAKED, [0, 1], n=2, sampling="without_replacement")
    assert float(want) == pytest.approx(1 / 3, rel=1e-6)
    assert got == pytest.approx(float(want), rel=1e-9)


def test_ordered_wor_law_sums_the_mass_left_for_a_peaked_draft():
    """Bug: ``ordered_draft_law`` always divided by ``total - used``, never by the summed rest.

    Same peaked draft: the weight of (0, j) is about 1/3 for each light ``j``,
    and ``total - q_0`` loses ~4 digits; the summed rest does not.  Oracle: the
    exact Fraction law of the ordered pairs.
    """
    from spectheory.exact._tuples import ordered_draft_law

    want = _wor_pair_weights(PEAKED)
    got = dict(ordered_draft_law(PEAKED, 2, "without_replacement"))
    assert set(got) == set(want)
    for t, w in want.items():
        assert got[t] == pytest.approx(float(w), rel=1e-9), t


def test_ordered_wor_law_rest_excludes_only_earlier_draws():
    """Bug: ``_rest`` counted the current draw ``x`` as drawn (``t[: t.index(x) + 1]``).

    ``q = (3/5, 1/5, 1/5)``, ``n = 2``: after token 0 (more than half the
    mass, so the summed rest is used) the mass left is 2/5, so
    ``P(0, 1) = 3/5 * (1/5) / (2/5) = 3/10`` and likewise ``P(0, 2)``; by hand
    ``P(1, 0) = 1/5 * (3/5) / (4/5) = 3/20``.  Excluding ``x`` too gives 3/5.
    """
    from spectheory.exact._tuples import ordered_draft_law

    q = np.array([F(3, 5), F(1, 5), F(1, 5)], dtype=object)
    got = dict(ordered_draft_law(q, 2, "without_replacement"))
    assert got[0, 1] == got[0, 2] == F(3, 10)
    assert got[1, 0] == got[2, 0] == F(3, 20)
    assert got[1, 2] == got[2, 1] == F(1, 20)


@pytest.mark.parametrize("sampling", ["without_replacement", "greedy"])
def test_draft_support_of_n_minus_one_tokens_is_refused(sampling):
    """Bug: ``check_draft_support`` refused only supports below ``n - 1`` (``< n - 1`` for ``< n``).

    ``q = (1/2, 1/2, 0)`` has two tokens of positive mass: three drafts
    without replacement cannot be distinct, and greedy's two fixed tokens leave
    no mass for the third (0/0).  Both must raise, not sample token 2.
    """
    from spectheory._errors import InvalidParameterError
    from spectheory.drafting import sample_drafts

    with pytest.raises(InvalidParameterError, match="larger than the support"):
        sample_drafts([0.5, 0.5, 0.0], n=3, sampling=sampling, rng=0)


# --------------------------------------------------------------------------- coins.py


def test_exact_categorical_vector_must_sum_to_exactly_one():
    """Bug: exact (Fraction) categorical vectors were accepted within the float tolerance.

    ``(1/2, 1/2 + 10**-12)`` sums to ``1 + 10**-12``: within ``SUM_TOLERANCE``
    (1e-9) but not exactly 1, and exact input gets no tolerance (the coins
    module's rule: "at all for exact input").  Every coin refuses it.
    """
    from spectheory._errors import InvalidParameterError
    from spectheory.coins import RandomCoins, ReplayCoins, enumerate_outcomes

    probs = [F(1, 2), F(1, 2) + F(1, 10**12)]
    with pytest.raises(InvalidParameterError, match="not exactly 1"):
        ReplayCoins([0.5]).categorical(probs)
    with pytest.raises(InvalidParameterError, match="not exactly 1"):
        RandomCoins(0).categorical(probs)
    with pytest.raises(InvalidParameterError, match="not exactly 1"):
        enumerate_outcomes(lambda c: c.categorical(probs))


def test_enumeration_accepts_exactly_max_leaves_leaves():
    """Bug: ``enumerate_outcomes`` refused a coin tree with exactly ``max_leaves`` leaves
    (``>=`` for ``>``).

    Three fair coins have 2**3 = 8 leaves: ``max_leaves=8`` is allowed and
    gives the uniform law on the eight outcomes (1/8 each); ``max_leaves=7``
    refuses.
    """
    from spectheory._errors import InstanceTooLargeError
    from spectheory.coins import enumerate_outcomes

    def three(c):
        return tuple(c.bernoulli(F(1, 2)) for _ in range(3))

    law = enumerate_outcomes(three, max_leaves=8)
    assert law == {t: F(1, 8) for t in itertools.product([True, False], repeat=3)}
    with pytest.raises(InstanceTooLargeError, match="max_leaves"):
        enumerate_outcomes(three, max_leaves=7)


# --------------------------------------------------------------------------- _validate.py


def test_atol_zero_accepts_a_row_summing_to_exactly_one():
    """Bug: rows were refused when ``|sum - 1| >= atol`` instead of ``> atol``.

    ``(1/2, 1/4, 1/4)`` sums to exactly 1.0 in binary, so ``|sum - 1| = 0``:
    within ``atol = 0``.  Only a row off 1 may be refused.
    """
    from spectheory._errors import InvalidDistributionError
    from spectheory._validate import as_distribution

    rows, batched = as_distribution([0.5, 0.25, 0.25], "draft", atol=0.0)
    assert rows.tolist() == [[0.5, 0.25, 0.25]] and not batched
    with pytest.raises(InvalidDistributionError, match="sums to"):
        as_distribution([0.5, 0.25, 0.25 + 2**-20], "draft", atol=0.0)


def test_pair_of_one_row_and_a_batch_of_one_is_refused():
    """Bug: ``as_distribution_pair`` compared only the batch sizes, not whether both are batched.

    A target of shape (3,) and a draft of shape (1, 3) both become one row,
    but the shapes differ: the documented rule is the same shape for both.
    """
    from spectheory._errors import ShapeMismatchError
    from spectheory._validate import as_distribution_pair

    with pytest.raises(ShapeMismatchError, match="same shape"):
        as_distribution_pair([0.5, 0.25, 0.25], [[0.5, 0.25, 0.25]])


def test_checked_rows_do_not_alias_the_callers_array():
    """Bug: a float64 row summing to exactly 1 was returned as a view of the caller's array.

    Writing into the checked rows must leave the input alone (the
    ``np.shares_memory`` copy); a view would let a verifier's in-place update
    corrupt the caller's distribution.
    """
    from spectheory._validate import as_distribution

    arr = np.array([0.5, 0.25, 0.25])
    rows, _ = as_distribution(arr, "target")
    rows[0, 0] = 9.0
    assert arr.tolist() == [0.5, 0.25, 0.25]


def test_mixed_exact_pair_renormalises_the_float_row_exactly():
    """Bug: ``_as_exact`` converted a float row to Fractions without renormalising it.

    The binary values of 0.1, 0.2 and 0.7 sum to ``1 - 2**-55`` exactly (by
    hand: ``Fraction(0.1) + Fraction(0.2) + Fraction(0.7)``), so the exact draft
    must be each of them divided by that sum, summing to exactly 1.
    """
    from spectheory._validate import as_distribution_pair

    target = np.array([F(1, 2), F(1, 4), F(1, 4)], dtype=object)
    p, q, _ = as_distribution_pair(target, [0.1, 0.2, 0.7], allow_exact=True)
    raw = [F(0.1), F(0.2), F(0.7)]
    assert sum(raw) == 1 - F(1, 2**55)
    assert list(q[0]) == [v / sum(raw) for v in raw]
    assert sum(q[0]) == 1 and list(p[0]) == list(target)


# --------------------------------------------------------------------------- live/_check.py


def test_pit_orders_node_tokens_by_decreasing_p_over_q():
    """Bug: ``pit_values`` ordered node tokens by ``q / p`` instead of ``p / q``.

    ``p = (1/2, 1/4, 1/4)``, ``q = (1/10, 1/10, 8/10)``: by hand
    ``p / q = (5, 2.5, 0.3125)``, so the draft's favourite, token 2, comes last
    and its ``u`` lies in [3/4, 1), token 1 in [1/2, 3/4) and token 0 in
    [0, 1/2).  Ordered by ``q / p`` token 2 would come first ([0, 1/4)).
    """
    from spectheory.live._check import pit_values

    p = np.array([[0.5, 0.25, 0.25]] * 3)
    q = np.array([[0.1, 0.1, 0.8]] * 3)
    u = pit_values(p, [2, 1, 0], np.random.default_rng(0), q, [0, 1, 2])
    assert 0.75 <= u[0] < 1.0
    assert 0.5 <= u[1] < 0.75
    assert 0.0 <= u[2] < 0.5


def test_pit_is_randomised_within_the_token_interval():
    """Bug: the PIT used a fixed offset (``F(y-) + p(y) / 2``) instead of ``F(y-) + U p(y)``.

    With ``p = (1/2, 1/2)`` and token 0 at 200 positions, the randomised PIT
    is uniform on [0, 1/2): by hand, 200 uniforms spread over nearly all of
    it (the chance that all of them miss a tenth of it is below 2 * 0.8**200),
    where a fixed offset gives 1/4 every time.
    """
    from spectheory.live._check import pit_values

    u = pit_values(np.full((200, 2), 0.5), np.zeros(200, dtype=int), np.random.default_rng(3))
    assert ((0 <= u) & (u < 0.5)).all()
    assert u.min() < 0.05 and u.max() > 0.45


def _run_with_excess_hits():
    """100 positions of ``p = (1/2, 1/2)`` (tokens alternating) and 100 nodes of bound 1/2 with
    66 hits: excess ``s = 66 - 50 = 16`` over ``K = 100`` nodes."""
    from types import SimpleNamespace

    hit = np.zeros(100, dtype=bool)
    hit[:66] = True
    return SimpleNamespace(
        target_probs=np.full((100, 2), 0.5),
        tokens=np.arange(100) % 2,
        node_bound=np.full(100, 0.5),
        node_hit=hit,
        draft_probs=None,
        node_token=None,
    )


def test_live_check_acceptance_bound_and_bonferroni():
    """Bugs in ``check_live_lossless``: the Azuma-Hoeffding p-value without its factor 2
    (``exp(-s^2/K)``), no Bonferroni factor on the combined p-value (``m = 1``), or
    ``exceeds_bound`` judged on the acceptance p-value alone (without ``* m``).

    By hand: ``P(D >= 16) <= exp(-2 * 16**2 / 100) = exp(-5.12) ~ 0.00598``;
    the PIT tests of the alternating tokens do not reject, so with three tests
    the combined p-value is ``3 * exp(-5.12) ~ 0.0179``: above ``alpha = 0.01``,
    neither lossy nor above the bound (at its Bonferroni share), although the
    acceptance p-value alone is below ``alpha``.
    """
    from spectheory.live._check import check_live_lossless

    rep = check_live_lossless(_run_with_excess_hits(), alpha=0.01, seed=0)
    bound_p = math.exp(-2 * 16**2 / 100)
    assert set(rep.tests) == {"pit", "pit_ks", "acceptance"}
    assert rep.tests["acceptance"] == pytest.approx(bound_p, rel=1e-12)
    assert min(rep.tests["pit"], rep.tests["pit_ks"]) > bound_p
    assert rep.p_value == pytest.approx(3 * bound_p, rel=1e-12)
    assert not rep.lossy and not rep.exceeds_bound
