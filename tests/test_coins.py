"""The coins protocol: random, replay and enumeration agree, and bad probabilities raise."""

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spectheory import InstanceTooLargeError, InvalidParameterError, VerifierError
from spectheory.coins import (
    Coins,
    EnumerationCoins,
    NotDeterministicError,
    RandomCoins,
    ReplayCoins,
    enumerate_outcomes,
)


def test_every_implementation_satisfies_the_protocol():
    for coins in (RandomCoins(0), ReplayCoins([0.5]), EnumerationCoins()):
        assert isinstance(coins, Coins)


def test_replay_bernoulli_is_strict_u_below_prob():
    assert ReplayCoins([0.5]).bernoulli(0.5) is False
    assert ReplayCoins([np.nextafter(0.5, 0)]).bernoulli(0.5) is True
    # the zero-coin boundary (docs/theory.md §7.5)
    assert ReplayCoins([0.0]).bernoulli(0.0) is False
    assert ReplayCoins([np.nextafter(1.0, 0)]).bernoulli(1.0) is True
    assert ReplayCoins([0.3]).bernoulli(F(1, 3)) is True


def test_replay_categorical_is_the_inverse_cdf_over_positive_entries():
    probs = [0.0, 0.25, 0.0, 0.5, 0.25]
    expected = {0.0: 1, 0.2499: 1, 0.25: 3, 0.7499: 3, 0.75: 4, 0.9999: 4}
    for u, token in expected.items():
        assert ReplayCoins([u]).categorical(probs) == token


def test_replay_categorical_never_returns_a_zero_probability_token_at_the_boundary():
    # The partial sums stop at 1 - 1e-12, below u: the last positive token is returned.
    probs = [0.5, 0.5 - 1e-12, 0.0]
    assert ReplayCoins([1 - 1e-13]).categorical(probs) == 1
    assert ReplayCoins([np.nextafter(1.0, 0)]).categorical([1 / 3, 1 / 3, 1 / 3, 0.0]) == 2


def test_replay_counts_consumed_uniforms_and_raises_when_they_run_out():
    coins = ReplayCoins([0.1, 0.2])
    coins.bernoulli(0.5)
    coins.categorical([0.5, 0.5])
    assert coins.position == 2
    with pytest.raises(InvalidParameterError, match="ran out"):
        coins.bernoulli(0.5)


@pytest.mark.parametrize("bad", [[1.0], [-0.1], [np.nan], [[0.1]]])
def test_replay_rejects_uniforms_outside_the_unit_interval(bad):
    with pytest.raises(InvalidParameterError, match="uniforms"):
        ReplayCoins(bad)


@pytest.mark.parametrize("make", [lambda: RandomCoins(0), lambda: ReplayCoins([0.5] * 4)])
def test_probabilities_outside_the_unit_interval_raise(make):
    for prob in (1.5, -0.01, F(3, 2), float("nan")):
        with pytest.raises(InvalidParameterError, match="bernoulli prob"):
            make().bernoulli(prob)
    assert make().bernoulli(1 + 1e-13) is True  # rounding within 1e-12 is accepted
    assert make().bernoulli(-1e-13) is False
    with pytest.raises(InvalidParameterError, match="negative"):
        make().categorical([0.5, -0.1, 0.6])
    with pytest.raises(InvalidParameterError, match="sums to"):
        make().categorical([0.5, 0.4])
    with pytest.raises(InvalidParameterError, match="not exactly 1"):
        make().categorical(np.array([F(1, 2), F(1, 3)], dtype=object))


@pytest.mark.parametrize("prob", [1 + F(1, 10**13), -F(1, 10**13)])
def test_an_exact_probability_just_outside_the_unit_interval_is_refused(prob):
    """Fractions have no rounding to forgive: the 1e-12 float tolerance let 1 + 1e-13 through,
    and the enumeration weighted its branch 1 + 1e-13, an exact "law" of total mass above 1
    (while sampling treated it as 1)."""
    with pytest.raises(InvalidParameterError, match="bernoulli prob"):
        enumerate_outcomes(lambda c: c.bernoulli(prob))
    with pytest.raises(InvalidParameterError, match="bernoulli prob"):
        RandomCoins(0).bernoulli(prob)


def test_the_exact_law_of_a_verifier_missing_min_at_a_near_tie_is_refused():
    """Audit: SD without min(1, p/q), at a near-tie of exact rows (ratio 1 + 2e-13): the exact
    law had total mass 1 + 1e-13 and was returned as the output law."""
    import spectheory as stt

    def no_min(p, q, drafts, coins, *, sampling):
        x = drafts[0]
        if coins.bernoulli(p[x] / q[x]):  # forgot min(1, .)
            return x
        rest = np.array([max(a - b, 0 * a) for a, b in zip(p, q, strict=True)], dtype=object)
        return coins.categorical(rest / sum(rest, 0 * p[0]))

    tiny = F(1, 10**13)
    p = np.array([F(1, 2) + tiny, F(1, 2) - tiny], dtype=object)
    q = np.array([F(1, 2), F(1, 2)], dtype=object)
    with pytest.raises(VerifierError, match="bernoulli prob must lie in"):
        stt.output_distribution(no_min, p, q, n=1, sampling="iid")


def test_enumeration_rejects_bad_probabilities_too():
    with pytest.raises(InvalidParameterError):
        enumerate_outcomes(lambda c: c.bernoulli(1.1))
    with pytest.raises(InvalidParameterError):
        enumerate_outcomes(lambda c: c.categorical([0.7, 0.7]))


@given(seed=st.integers(0, 2**32 - 1), probs=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6))
def test_random_coins_are_replay_coins_on_the_generator_stream(seed, probs):
    weights = np.array(probs) + 1e-3
    cat = weights / weights.sum()

    def procedure(coins):
        return tuple([coins.bernoulli(p) for p in probs] + [coins.categorical(cat)])

    stream = np.random.default_rng(seed).random(len(probs) + 1)
    assert procedure(RandomCoins(seed)) == procedure(ReplayCoins(stream))


def test_enumeration_of_a_geometric_procedure_is_exact():
    def first_success(coins):
        for k in range(4):
            if coins.bernoulli(F(1, 3)):
                return k
        return coins.categorical(np.array([F(1, 2), F(0), F(1, 2)], dtype=object)) + 10

    law = enumerate_outcomes(first_success)
    miss = F(2, 3) ** 4
    expected = {k: F(1, 3) * F(2, 3) ** k for k in range(4)} | {10: miss / 2, 12: miss / 2}
    assert law == expected
    assert sum(law.values()) == 1


def test_enumeration_prunes_zero_probability_branches():
    def procedure(coins):
        if coins.bernoulli(0.0):
            raise AssertionError("a zero-probability branch was executed")
        if not coins.bernoulli(1.0):
            raise AssertionError("a zero-probability branch was executed")
        return coins.categorical([0.0, 1.0, 0.0])

    assert enumerate_outcomes(procedure) == {1: 1.0}


@given(
    rows=st.lists(
        # An all-zero row gets a last weight of 1 (filter(any) rejected 25% of the draws).
        st.lists(st.integers(0, 5), min_size=1, max_size=4).map(
            lambda r: r if any(r) else [*r[:-1], 1]
        ),
        min_size=1,
        max_size=3,
    )
)
def test_enumeration_of_independent_draws_is_the_product_law(rows):
    laws = [np.array([F(w, sum(r)) for w in r], dtype=object) for r in rows]
    law = enumerate_outcomes(lambda c: tuple(c.categorical(p) for p in laws))
    assert sum(law.values()) == 1
    for outcome, prob in law.items():
        expected = F(1)
        for p, i in zip(laws, outcome):
            expected *= p[i]
        assert prob == expected > 0
    assert len(law) == np.prod([np.count_nonzero(r) for r in rows])


def test_enumeration_refuses_too_many_leaves():
    with pytest.raises(InstanceTooLargeError, match="max_leaves"):
        enumerate_outcomes(lambda c: tuple(c.bernoulli(0.5) for _ in range(8)), max_leaves=100)


def _flaky(script):
    """fn(coins) whose coin requests or outcome follow ``script`` (one entry per run):
    randomness from outside the coins, as a verifier that also calls np.random has."""
    runs = iter(script)

    def fn(coins):
        kind = next(runs)
        if kind == "none":
            return 7
        if kind == "other-probs":
            return coins.categorical([0.25, 0.75])
        if kind == "plus-one":
            return coins.categorical([0.5, 0.5]) + 1
        return coins.categorical([0.5, 0.5])

    return fn


@pytest.mark.parametrize(
    ("script", "match"),
    [
        # the first leaf run twice: same coins, another outcome
        (["coin", "plus-one"], "two runs with the same coins returned 0 and 1"),
        # the second leaf's run stops before the path's coin
        (["coin", "coin", "none"], r"a run along branches \[1\] stopped after 0 coins"),
        # the path's coin offers other probabilities than when it was recorded
        (["coin", "coin", "other-probs"], "its coin 0 offered"),
    ],
)
def test_enumeration_refuses_a_function_random_outside_its_coins(script, match):
    with pytest.raises(NotDeterministicError, match=match) as info:
        enumerate_outcomes(_flaky(script))
    assert isinstance(info.value, VerifierError)


def test_the_exact_law_names_a_verifier_random_outside_its_coins():
    """Audit: a coins-protocol verifier that also drew from np.random got an exact law that
    changed with np.random's seed; now the enumeration refuses it and names it."""
    import spectheory as stt

    calls = iter([True, False] * 10)

    def leaky(p, q, drafts, coins, *, sampling):
        x = drafts[0]
        if next(calls):  # accept on one run, resample on the next: not a function of coins
            return x
        return coins.categorical([0.5, 0.5, 0.0])

    with pytest.raises(NotDeterministicError, match="verifier 'leaky', drafts"):
        stt.output_distribution(leaky, [0.3, 0.4, 0.3], [0.6, 0.3, 0.1])


def test_a_coin_kept_from_an_earlier_run_is_refused():
    """A coins object flipped after its run returned draws from a finished path: always its
    first branch, never enumerated.  The law was that branch's alone, silently ({True: 1}
    here, where sampling gives True with probability 1/2)."""
    kept = []
    enumerate_outcomes(lambda coins: kept.append(coins) or coins.categorical([F(1, 2)] * 2))
    with pytest.raises(NotDeterministicError, match="coins object of an earlier run"):
        enumerate_outcomes(lambda coins: kept[0].bernoulli(F(1, 2)))


def test_the_exact_law_refuses_a_verifier_that_keeps_its_coins():
    """Audit: a verifier keeping the coins of its first call, for drafts other than token 0
    outputting the draft unchecked when that coin says so: the exact law equalled the target
    (the kept coin always took its first branch), so it passed as exactly lossless, while
    sampled its acceptance is 0.85 > alpha* = 0.7 (by hand: 0.1 + 0.3 + 0.6 (1/2 + 1/2 1/2))."""
    import spectheory as stt

    kept = []

    def kept_coins(p, q, drafts, coins, *, sampling):
        if not kept:
            kept.append(coins)
        x = drafts[0]
        if x != 0 and not kept[0].bernoulli(F(1, 2)):
            return x  # unchecked: a bias
        if coins.bernoulli(min(1, p[x] / q[x])):
            return x
        rest = np.array([max(a - b, 0 * a) for a, b in zip(p, q, strict=True)], dtype=object)
        return coins.categorical(rest / sum(rest, 0 * p[0]))

    p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    q = np.array([F(1, 10), F(3, 10), F(6, 10)], dtype=object)
    with pytest.raises(NotDeterministicError, match="verifier 'kept_coins', drafts"):
        stt.output_distribution(kept_coins, p, q, n=1, sampling="iid")


def test_a_deterministic_function_runs_its_first_leaf_twice_and_no_other():
    runs = []

    def fn(coins):
        runs.append(1)
        return coins.categorical([0.2, 0.3, 0.5]) + 2 * coins.bernoulli(0.5)

    law = enumerate_outcomes(fn)
    assert len(runs) == 6 + 1  # 3 x 2 leaves, the first one twice
    assert abs(sum(law.values()) - 1) < 1e-15


def _loop_inverse_cdf(u, probs):
    """The scalar loop (what a list takes): the oracle of the vectorised search."""
    from spectheory.coins import _inverse_cdf

    return _inverse_cdf(u, probs.tolist())


def _rows_for_inverse_cdf(seed):
    rng = np.random.default_rng(seed)
    rows = []
    for V in (64, 65, 1000, 49_152):
        r = rng.random(V) ** 8  # spread over many octaves
        r[rng.random(V) < 0.3] = 0.0  # zero entries between positive ones
        r[:3] = 0.0  # leading zeros
        r[rng.integers(0, V, 5)] = 5e-324  # subnormals
        rows.append(r / r.sum())
    head = np.zeros(100)
    head[0] = 1.0  # all mass first, zeros after
    tail = np.zeros(100)
    tail[-1] = 1.0
    return [*rows, head, tail]


@pytest.mark.parametrize("seed", [0, 1])
def test_vectorised_inverse_cdf_equals_the_loop(seed):
    from spectheory.coins import _VECTORISE_FROM, _inverse_cdf

    rng = np.random.default_rng(seed)
    for probs in _rows_for_inverse_cdf(seed):
        assert probs.size >= _VECTORISE_FROM
        cum = np.cumsum(probs)
        # u on every kind of boundary: each partial sum, just below it, random, beyond the total
        us = [0.0, *rng.random(200), *rng.choice(cum, 200), 1 - 2**-53]
        us += [float(np.nextafter(c, 0.0)) for c in rng.choice(cum, 200)]
        us = [u for u in us if 0.0 <= u < 1.0]
        for u in us:
            assert _inverse_cdf(u, probs) == _loop_inverse_cdf(u, probs), (u, probs.size)


def test_vectorised_inverse_cdf_never_returns_a_zero_entry_and_handles_overshoot():
    from spectheory.coins import _inverse_cdf

    probs = np.zeros(200)
    probs[[10, 50, 120]] = [0.25, 0.5, 0.25 - 1e-12]  # sums to 1 - 1e-12: u can overshoot
    assert _inverse_cdf(0.0, probs) == 10
    assert _inverse_cdf(0.25, probs) == 50
    assert _inverse_cdf(1 - 1e-13, probs) == 120  # beyond the total: the last positive entry
    assert ReplayCoins([1 - 1e-13]).categorical(probs) == 120
