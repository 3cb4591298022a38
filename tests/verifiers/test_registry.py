"""The verifier registry (spectheory.verifiers._registry): one record per verifier, dispatch by
identity, user protocols, and the regressions of issue 16 (a user verifier named like a
registered one, batched closed forms, exponential enumeration without a warning).
"""

from __future__ import annotations

import dataclasses
import time
from fractions import Fraction as F

import numpy as np
import pytest

import spectheory as stt
from spectheory._errors import InstanceTooLargeError, InvalidParameterError
from spectheory.exact import CLOSED_FORMS, MAX_CALLS, acceptance, output_distribution
from spectheory.exact._tuples import ordered_draft_law
from spectheory.sim import _kernels
from spectheory.sim.replay import REPLAY_VERIFIERS
from spectheory.verifiers import (
    REGISTRY,
    Verifier,
    as_verifier,
    register_verifier,
    rrs,
    unregister_verifier,
    verifier,
    verify,
)

P = [0.3, 0.4, 0.3]
Q = [0.6, 0.3, 0.1]


def accept_first(p, q, drafts, coins, *, sampling="iid"):
    """Biased: always outputs the first draft (its law is q, not p)."""
    return drafts[0]


def blackbox_first(target, draft, drafts, rng):
    return int(drafts[0])


# ---------------------------------------------------------------- 1. dispatch by identity


def test_a_biased_user_verifier_named_rrs_is_found_lossy():
    # Regression: the record used to be simulated with the registered numba kernel chosen
    # by name, and judged "consistent with lossless".
    mine = Verifier("rrs", accept_first, samplings=("iid",))
    assert mine.kernel is None and mine.torch_form is None
    sim = stt.simulate(mine, P, Q, n=2, trials=50, rng=0)
    assert sim.engine == "reference" and sim.verifier == "rrs"
    assert np.array_equal(sim.tokens, sim.drafts[:, :, 0])  # its own code ran
    report = stt.check_lossless(mine, P, Q, n=2, trials=4000, rng=1)
    assert report.lossy and report.verifier == "rrs"
    assert not stt.check_lossless("rrs", P, Q, n=2, trials=4000, rng=1).lossy


def test_a_record_whose_protocol_contradicts_its_signature_is_refused():
    # Regression: a black box stored with the default protocol "coins" failed at its first
    # call with a foreign TypeError (unexpected keyword 'sampling').
    with pytest.raises(InvalidParameterError, match="pass protocol='blackbox'"):
        Verifier("rrs", blackbox_first, samplings=("iid",))
    with pytest.raises(InvalidParameterError, match="pass protocol='coins'"):
        Verifier("mine", accept_first, samplings=("iid",), protocol="blackbox")
    stated = Verifier("rrs", blackbox_first, samplings=("iid",), protocol="blackbox")
    assert stt.check_lossless(stated, P, Q, n=2, trials=4000, rng=1).lossy


def test_uniform_budgets_of_an_unknown_verifier_are_refused_by_name():
    # Regression (issue 22 item 10): verifier_uniforms("bogus", 2) returned 3.
    from spectheory.torch.verifiers import verifier_uniforms as torch_uniforms

    for uniforms in (_kernels.verifier_uniforms, torch_uniforms):
        with pytest.raises(InvalidParameterError, match="bogus"):
            uniforms("bogus", 2)
    with pytest.raises(InvalidParameterError, match="n must be >= 1"):
        _kernels.verifier_uniforms("rrs", 0)
    assert _kernels.verifier_uniforms("rrs", 3) == 4


def test_a_kernel_belongs_to_the_function_it_implements():
    with pytest.raises(InvalidParameterError, match="kernel='rrs' implements rrs, not accept"):
        dataclasses.replace(REGISTRY["rrs"], function=accept_first)
    with pytest.raises(InvalidParameterError, match="torch_form='sd' implements sd"):
        Verifier("x", accept_first, torch_form="sd", uniforms=lambda n: 2)
    with pytest.raises(InvalidParameterError, match=r"closed_form .* is the acceptance of rrs"):
        Verifier("x", accept_first, closed_form=CLOSED_FORMS["rrs"],
                 closed_form_samplings=("iid",))  # fmt: skip
    # The registered function under another name keeps its kernel: same function, same code.
    renamed = dataclasses.replace(REGISTRY["rrs"], name="my_rrs")
    a = stt.simulate(renamed, P, Q, n=2, trials=200, rng=3)
    b = stt.simulate("rrs", P, Q, n=2, trials=200, rng=3)
    assert a.engine == "numba" and np.array_equal(a.tokens, b.tokens)


def test_the_torch_backend_dispatches_by_identity_too():
    torch = pytest.importorskip("torch")
    from spectheory.torch import verify as tverify

    p = torch.tensor([P], dtype=torch.float64)
    q = torch.tensor([Q], dtype=torch.float64)
    with pytest.raises(InvalidParameterError, match="batched torch form"):
        tverify(Verifier("rrs", accept_first), p, q, torch.tensor([[0, 1]]))
    out = tverify(REGISTRY["rrs"], p, q, torch.tensor([[0, 1]]), uniforms=torch.zeros(1, 3))
    assert out.tokens.tolist() == [0]


def test_name_lists_are_computed_from_the_registry():
    with_kernel = tuple(v.name for v in REGISTRY.values() if v.kernel is not None)
    assert set(_kernels.KERNEL_VERIFIERS) == set(with_kernel) == set(REPLAY_VERIFIERS)
    assert set(CLOSED_FORMS) == {v.name for v in REGISTRY.values() if v.closed_form is not None}
    assert all(CLOSED_FORMS[k] is REGISTRY[k].closed_form for k in CLOSED_FORMS)
    for name in with_kernel:
        for n in (1, 2, 5):
            assert _kernels.verifier_uniforms(name, n) == REGISTRY[name].uniforms(n)
    assert {"khisti", "optimal_lp"} <= set(REGISTRY) - set(with_kernel)


# ---------------------------------------------------------------- 2. batched closed forms


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
def test_closed_forms_on_a_batch_are_the_rows_values(name):
    # Regression: rrs_acceptance on a (B, V) batch returned one wrong number (1.37).
    v = REGISTRY[name]
    sampling = v.closed_form_samplings[0]
    n = (v.n_values or (3,))[0]
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.full(7, 0.5), size=5)
    q = rng.dirichlet(np.full(7, 0.5), size=5)
    p[1, :3] = 0
    p[1] /= p[1].sum()  # zeros in the target
    q[2] = p[2]  # an identical row
    batch = CLOSED_FORMS[name](p, q, n, sampling)
    assert batch.shape == (5,) and batch.dtype == np.float64
    rows = [CLOSED_FORMS[name](p[b], q[b], n, sampling) for b in range(5)]
    np.testing.assert_array_equal(batch, rows)  # the same computation, row by row
    assert np.all((batch >= 0) & (batch <= 1 + 1e-12))
    pe = np.array([[F(3, 10), F(4, 10), F(3, 10)], [F(1, 2), F(1, 2), F(0)]], dtype=object)
    qe = np.array([[F(6, 10), F(3, 10), F(1, 10)], [F(1, 4), F(1, 4), F(1, 2)]], dtype=object)
    n_small = (v.n_values or (2,))[0]
    exact = CLOSED_FORMS[name](pe, qe, n_small, sampling)
    assert list(exact) == [CLOSED_FORMS[name](pe[b], qe[b], n_small, sampling) for b in range(2)]


def test_closed_form_input_is_checked():
    with pytest.raises(stt.ShapeMismatchError):
        CLOSED_FORMS["rrs"](np.full((2, 3), 1 / 3), np.full((3, 3), 1 / 3), 2)
    with pytest.raises(stt.InvalidDistributionError):
        CLOSED_FORMS["sd"]([0.5, 0.6], [0.5, 0.5])
    with pytest.raises(InvalidParameterError, match="rrs_acceptance needs n"):
        CLOSED_FORMS["rrs"](P, Q)
    assert CLOSED_FORMS["rrs"](P, Q, 2) == pytest.approx(0.82, abs=1e-15)


# ---------------------------------------------------------------- 3. enumeration size


def test_acceptance_at_a_real_vocabulary_uses_the_closed_form_or_refuses_quickly():
    # Regression: acceptance(name, p, q, n=2) at V = 32,000 ran for more than 5 minutes.
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(32_000)), rng.dirichlet(np.ones(32_000))
    t0 = time.perf_counter()
    # Both paths renormalise the float64 rows (once more here): equal to ~V ulps.
    np.testing.assert_allclose(acceptance("rrs", p, q, n=2), CLOSED_FORMS["rrs"](p, q, 2),
                               rtol=1e-12)  # fmt: skip
    np.testing.assert_allclose(acceptance("sd", p, q), CLOSED_FORMS["sd"](p, q), rtol=1e-12)
    for call in (
        lambda: acceptance("rrs_wor", p, q, n=2),
        lambda: acceptance("khisti", p, q, n=2),
        lambda: output_distribution("rrs", p, q, n=2),
    ):
        with pytest.raises(InstanceTooLargeError, match=r"MAX_CALLS.*spectheory\.simulate"):
            call()
    assert time.perf_counter() - t0 < 30  # seconds, not hours (measured about 1 s)


def test_huge_n_is_refused_or_answered_without_enumerating():
    t0 = time.perf_counter()
    with pytest.raises(InstanceTooLargeError, match="loops over the n = 1000000000000 drafts"):
        acceptance("rrs", P, Q, n=10**12)
    assert acceptance("nss", P, Q, n=10**12) == CLOSED_FORMS["nss"](P, Q, 10**12) == 1.0
    with pytest.raises(InstanceTooLargeError, match="refuses 3\\^1000000000000 tuples"):
        ordered_draft_law(np.array(Q), 10**12, "iid")
    with pytest.raises(InstanceTooLargeError, match="MAX_CALLS"):
        output_distribution("rrs", P, Q, n=10**12)
    assert time.perf_counter() - t0 < 5


def test_small_instances_are_still_enumerated_exactly():
    # Within the limit the verifier's own code is enumerated (not its closed form): a
    # biased variant with a registered-looking closed form-free record shows its own law.
    pe = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    qe = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    assert acceptance("rrs", pe, qe, n=2) == F(41, 50)
    assert list(output_distribution(accept_first, pe, qe, n=2)) == list(qe)
    assert MAX_CALLS >= 3**2 * (2 + 3)


# ---------------------------------------------------------------- protocols and registration


def test_protocols_are_read_from_signatures_or_stated():
    assert as_verifier(accept_first).protocol == "coins"
    assert as_verifier(blackbox_first).protocol == "blackbox"
    assert as_verifier(rrs).kernel is None  # a bare function never borrows a kernel
    with pytest.raises(InvalidParameterError, match="cannot tell the protocol"):
        as_verifier(lambda p, q: 0)
    stated = verifier(blackbox_first, name="bb", protocol="blackbox", samplings=("iid",))
    assert stated.protocol == "blackbox" and stated(None, None, [2], None) == 2
    with pytest.raises(InvalidParameterError, match="protocol of verifier 'x' must be one of"):
        Verifier("x", accept_first, protocol="magic")


def test_black_boxes_work_where_statistics_suffice_and_exact_paths_refuse_them():
    assert verify(blackbox_first, P, Q, [2, 1], rng=0) == 2
    assert verify(accept_first, P, Q, [2, 1], rng=0) == 2
    sim = stt.simulate(blackbox_first, P, Q, n=2, trials=30, rng=0)
    assert np.array_equal(sim.tokens, sim.drafts[:, :, 0])
    assert stt.check_lossless(blackbox_first, P, Q, n=2, trials=4000, rng=2).lossy
    for exact in (acceptance, output_distribution):
        with pytest.raises(InvalidParameterError, match=r"black box .* cannot be enumerated"):
            exact(blackbox_first, P, Q, n=2)


def test_a_verifier_returning_a_non_token_is_named():
    def bad(p, q, drafts, coins, *, sampling):
        return 1.5

    with pytest.raises(InvalidParameterError, match=r"verifier 'bad' returned 1\.5"):
        verify(bad, P, Q, [0], rng=0)
    with pytest.raises(InvalidParameterError, match=r"verifier 'bad' returned 1\.5"):
        stt.simulate(bad, P, Q, trials=3)
    with pytest.raises(InvalidParameterError, match=r"verifier 'bad' returned 1\.5"):
        acceptance(bad, P, Q)


def test_register_and_unregister():
    mine = Verifier("mine_first", accept_first, samplings=("iid",), lossless=False)
    assert register_verifier(mine) is REGISTRY["mine_first"]
    try:
        assert stt.get_verifier("mine_first") is mine
        assert verify("mine_first", P, Q, [1, 0], rng=0) == 1
        with pytest.raises(InvalidParameterError, match="already registered"):
            register_verifier(dataclasses.replace(mine, paper="other"))
        register_verifier(dataclasses.replace(mine, paper="other"), replace=True)
    finally:
        unregister_verifier("mine_first")
    assert "mine_first" not in REGISTRY
    with pytest.raises(InvalidParameterError, match="built-in verifier"):
        register_verifier(Verifier("rrs", accept_first))
    with pytest.raises(InvalidParameterError, match="built-in verifier"):
        unregister_verifier("sd")
    with pytest.raises(InvalidParameterError, match="record must be a Verifier"):
        register_verifier(accept_first)


# ---------------------------------------------------------------- one rng keyword, one default


def test_one_randomness_keyword_and_one_sampling_default():
    a = stt.simulate("rrs", P, Q, n=2, trials=100, rng=7)
    b = stt.simulate("rrs", P, Q, n=2, trials=100, seed=7)  # the alias
    assert np.array_equal(a.tokens, b.tokens) and a.sampling == "iid"
    assert stt.simulate("spechub", P, Q, n=2, trials=5).sampling == "greedy"  # its first law
    assert stt.check_lossless("spechub", P, Q, n=2, trials=500).verdict
    with pytest.raises(InvalidParameterError, match="rng or seed"):
        stt.simulate("rrs", P, Q, trials=3, rng=1, seed=1)
    with pytest.raises(InvalidParameterError, match="rng must be None, a non-negative"):
        stt.simulate("rrs", P, Q, trials=3, rng=-1)
    with pytest.raises(InvalidParameterError, match="rng must be None, a non-negative"):
        stt.check_lossless("rrs", P, Q, trials=3, rng="x")
    with pytest.raises(InvalidParameterError, match="rng must be None, a non-negative"):
        verify("rrs", P, Q, [0], rng=1.5)


def test_verify_takes_the_seed_alias_too():
    """README: ``rng`` is the one randomness keyword of verify, simulate and check_lossless,
    ``seed=`` its alias; ``verify(..., seed=7)`` raised a TypeError."""
    rows = np.tile(np.array(P), (200, 1))
    drafts = np.tile([0, 0], (200, 1))  # token 0 is accepted with probability 1/2
    by_rng = verify("rrs", rows, np.tile(Q, (200, 1)), drafts, rng=7)
    by_seed = verify("rrs", rows, np.tile(Q, (200, 1)), drafts, seed=7)
    assert np.array_equal(by_rng, by_seed)
    other = verify("rrs", rows, np.tile(Q, (200, 1)), drafts, seed=8)
    assert not np.array_equal(by_seed, other)  # the seed is used, not ignored
    with pytest.raises(InvalidParameterError, match="rng or seed"):
        verify("rrs", P, Q, [0, 0], rng=1, seed=1)
    with pytest.raises(InvalidParameterError, match="seed must be None, a non-negative"):
        verify("rrs", P, Q, [0, 0], seed=-1)


def test_live_generation_resolves_either_protocol():
    pytest.importorskip("torch")
    from spectheory.coins import RandomCoins
    from spectheory.live.generate import _resolve_verifier

    name, fn, _, sampling = _resolve_verifier(accept_first, "chain", 1, None)
    assert (name, fn, sampling) == ("accept_first", accept_first, "iid")  # called on the coins
    name, fn, _, _ = _resolve_verifier(blackbox_first, "chain", 1, None)
    assert name == "blackbox_first"
    assert fn(np.array(P), np.array(Q), (2,), RandomCoins(0), sampling="iid") == 2
    assert _resolve_verifier(None, "multi", 2, None)[1] is rrs


def test_a_verifier_that_raises_is_reported_by_name_with_its_cause():
    # Issue 16, bad input: a user verifier that raises gets a clear error naming it and the
    # row, the original exception chained, on every path that runs it.
    def boom_blackbox(target, draft, drafts, rng):
        raise ZeroDivisionError("my bug")

    def boom_coins(p, q, drafts, coins, *, sampling):
        raise KeyError("my bug")

    calls = [
        lambda: verify(boom_blackbox, P, Q, [0, 1], rng=0),
        lambda: stt.simulate(boom_blackbox, P, Q, n=2, trials=5, rng=0),
        lambda: stt.check_lossless(boom_blackbox, P, Q, n=2, trials=50, rng=0),
        lambda: verify(boom_coins, [P, P], [Q, Q], [[0, 1], [2, 2]], rng=0),
        lambda: acceptance(boom_coins, P, Q, n=2),
    ]
    for call in calls:
        with pytest.raises(stt.VerifierError, match=r"verifier 'boom_\w+' raised") as info:
            call()
        assert isinstance(info.value.__cause__, ZeroDivisionError | KeyError)


def _first(p, q, drafts, coins, *, sampling):
    return drafts[0]


_NV = r"n_values of verifier 'f' must be None or a tuple of integers >= 1"


@pytest.mark.parametrize(
    ("facts", "match"),
    [
        # A string is truthy: lossless="no" was stored and read as lossless.
        ({"lossless": "no"}, r"lossless of verifier 'f' must be a bool; got 'no'"),
        ({"lossless": 0}, r"lossless of verifier 'f' must be a bool; got 0"),
        ({"needs_draft_law": "False"}, r"needs_draft_law of verifier 'f' must be a bool"),
        # n_values=2 or "2" failed at the first call with a foreign TypeError
        # ("argument of type 'int' is not iterable"); (0,) made the record unusable.
        ({"n_values": 2}, _NV),
        ({"n_values": "2"}, _NV),
        ({"n_values": (0,)}, _NV),
        ({"n_values": (2.0,)}, _NV),
        ({"n_values": (True,)}, _NV),
        ({"n_values": ()}, _NV),
        # samplings="iid" was read letter by letter: "unknown draft laws ['i', 'i', 'd']".
        ({"samplings": "iid"},
         r"samplings of verifier 'f' must be a tuple of draft laws.*\('iid',\)"),
        ({"closed_form_samplings": "iid", "closed_form": lambda p, q, n, s: 0.5},
         r"closed_form_samplings of verifier 'f' must be a tuple of draft laws"),
        # A non-callable closed form was stored and failed only inside acceptance().
        ({"closed_form": 0.5, "closed_form_samplings": ("iid",)},
         r"closed_form of verifier 'f' must be callable or None; got 0.5"),
        ({"uniforms": 3}, r"uniforms of verifier 'f' must be callable or None; got 3"),
        # n per draft law: only the record's own laws, each with integers >= 1
        ({"samplings": ("iid",), "n_values_by_law": {"greedy": (2,)}},
         r"n_values_by_law of verifier 'f' must map"),
        ({"n_values_by_law": {"iid": ()}}, r"n_values_by_law of verifier 'f' must map"),
        ({"n_values_by_law": {"iid": (0,)}}, r"n_values_by_law of verifier 'f' must map"),
        ({"n_values_by_law": {"iid": 2}}, r"n_values_by_law of verifier 'f' must map"),
        ({"n_values_by_law": "iid"}, r"n_values_by_law of verifier 'f' must map"),
    ],
)
def test_a_record_with_a_bad_fact_is_refused_naming_it(facts, match):
    with pytest.raises(InvalidParameterError, match=match):
        Verifier("f", _first, **facts)


def test_a_record_keeps_good_facts_normalised():
    v = Verifier(
        "f", _first, samplings=["iid"], n_values=[1, np.int64(2)], lossless=np.bool_(False)
    )
    assert v.samplings == ("iid",) and v.n_values == (1, 2) and v.lossless is False
    assert v.supports(2, "iid") and not v.supports(3, "iid")
    assert verifier(samplings=("iid",), n_values=(1,))(_first).n_values == (1,)
    w = Verifier("f", _first, samplings=("iid", "without_replacement"), n_values=(1, 2, 3),
                 n_values_by_law={"without_replacement": [np.int64(2), 4]})
    assert w.n_values_by_law == (("without_replacement", (2, 4)),)
    assert w.n_values_for("iid") == (1, 2, 3) and w.n_values_for("without_replacement") == (2,)
    assert w.supports(3, "iid") and not w.supports(3, "without_replacement")
    assert hash(w) == hash(w)  # a frozen record stays hashable


def _overlap(p, q, n, sampling):
    return float(np.minimum(p, q).sum())


def _first(p, q, drafts, coins, *, sampling):
    return drafts[0]


def test_a_closed_form_without_its_laws_is_refused_not_ignored():
    """closed_form_samplings defaulted to (): the closed form was stored and never used."""
    with pytest.raises(stt.InvalidParameterError, match="closed_form_samplings"):
        stt.verifier(_first, samplings=("iid",), closed_form=_overlap)
    v = stt.verifier(_first, samplings=("iid",), closed_form=_overlap,
                    closed_form_samplings=("iid",))  # fmt: skip
    assert v.closed_form_for("iid") is _overlap
    assert stt.verifier(_first).closed_form_for("iid") is None  # no closed form: fine


def test_a_coins_verifier_without_the_sampling_keyword_is_told_why_it_got_a_generator():
    """Audit: fn(p, q, drafts, coins) (the coins protocol minus `sampling`) reads as a black
    box and is handed a numpy Generator; the error said only that a Generator has no
    attribute 'bernoulli', not why it got one."""
    from spectheory import VerifierError

    def my_sd(p, q, drafts, coins):
        x = drafts[0]
        if coins.bernoulli(min(1, p[x] / q[x])):
            return x
        return coins.categorical(np.maximum(p - q, 0) / np.maximum(p - q, 0).sum())

    for call in (lambda: stt.verify(my_sd, [0.3, 0.4, 0.3], [0.6, 0.3, 0.1], [0], rng=0),
                 lambda: stt.check_lossless(my_sd, [0.3, 0.4, 0.3], [0.6, 0.3, 0.1],
                                            sampling="iid", trials=10)):  # fmt: skip
        with pytest.raises(VerifierError, match=r"no `sampling` keyword: a coins-protocol "
                                                r"verifier is fn\(p, q, drafts, coins, \*, "
                                                r"sampling\)"):
            call()
