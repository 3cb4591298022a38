"""The transport-plan verifiers (``khisti``, ``optimal_lp``) at a full vocabulary, and their cache.

Oracles: the dual bound (:func:`spectheory.bound`, itself checked against the
LP and enumeration elsewhere), exact enumeration of the draft-set law
(:func:`spectheory.drafting.set_law_row`), and :func:`spectheory.check_lossless`
at V = 49,152 with its stated false-alarm rate.
"""

from __future__ import annotations

import threading
import tracemalloc
from fractions import Fraction as F

import numpy as np
import pytest

from spectheory import InstanceTooLargeError, bound
from spectheory.drafting import set_law_row
from spectheory.verifiers import _plan_cache, coupling
from spectheory.verifiers.coupling import MAX_PAIRS, khisti, optimal_lp, pair_count, transport_plan


def _small_support_row(V, support, seed):
    """Target of full support, peaked; draft on ``support`` tokens (an n-gram or top-k draft)."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal(V) * 3.0
    p = np.exp(logits - logits.max())
    p /= p.sum()
    q = np.zeros(V)
    tokens = rng.choice(np.argsort(-p)[:200], size=support, replace=False)
    q[tokens] = rng.dirichlet(np.full(support, 0.5))
    return p, q


@pytest.mark.parametrize("support, n", [(1, 1), (5, 2), (9, 3), (6, 4), (8, 8)])
@pytest.mark.parametrize("sampling", ["iid", "without_replacement"])
def test_pair_count_is_the_enumerated_count(support, n, sampling):
    q = np.zeros(support + 3)
    q[:support] = 1 / support
    law = set_law_row(q, n, sampling)
    assert pair_count(support, n, sampling) == sum(len(c) for c in law)


@pytest.mark.parametrize("sampling, n", [("without_replacement", 2), ("without_replacement", 3),
                                         ("iid", 2)])
def test_full_vocabulary_small_support_reaches_the_bound(sampling, n):
    """At V = 49,152 both verifiers' plans give acceptance alpha* to 1e-12, in little memory.

    The dense (draft sets x V) form held 0.6 GB a plan for 780 draft sets; the
    plan now holds the matched mass per (set, member) pair and a few V-vectors.
    """
    p, q = _small_support_row(49_152, 40 if n == 2 else 14, seed=n)
    coupling._PLANS.clear()
    tracemalloc.start()
    _, selection, r_beta = transport_plan(p, q, n, sampling)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64e6, peak
    alpha = np.minimum(p, r_beta).sum()
    assert alpha == pytest.approx(float(bound(p, q, n, sampling)), abs=1e-12)
    # Each selection row is a law on its own draft set.
    some = next(iter(selection))
    row = selection[some]
    assert row.shape == (49_152,) and row.sum() == pytest.approx(1, abs=1e-15)
    assert set(np.flatnonzero(row)) <= set(some)


@pytest.mark.parametrize("verifier", [khisti, optimal_lp])
def test_check_lossless_at_full_vocabulary_small_support(verifier):
    """spectheory.check_lossless at V = 49,152, n = 2 without replacement, false alarm 1e-6.

    The Monte Carlo acceptance must also lie within 5 standard errors of
    alpha*_wor, which both verifiers reach (a two-sided false alarm below 1e-6).
    """
    from spectheory.sim.check import check_lossless

    p, q = _small_support_row(49_152, 30, seed=4)
    trials = 3000
    report = check_lossless(
        verifier, p, q, n=2, sampling="without_replacement", trials=trials, rng=2
    )
    assert not report.lossy and not report.exceeds_bound
    alpha = float(bound(p, q, 2, "without_replacement"))
    assert abs(report.acceptance - alpha) <= 5 * 0.5 / np.sqrt(trials)


def test_too_many_pairs_is_refused_before_enumerating(monkeypatch):
    """n = 4 without replacement on 31 tokens: 125,860 pairs; refused, naming them, before
    the 755,160 ordered draws are enumerated (which had taken 9 s)."""
    def no_enumeration(*args):
        raise AssertionError("the draft-set law was enumerated before the size check")

    monkeypatch.setattr(coupling, "set_law_row", no_enumeration)
    p, q = _small_support_row(49_152, 31, seed=5)
    with pytest.raises(InstanceTooLargeError, match=r"125860 .* support of 31 tokens.*"
                       + str(MAX_PAIRS)):
        transport_plan(p, q, 4, "without_replacement")


def test_exact_plan_rows_are_laws_on_their_sets():
    """Fraction input: every selection and conditional row sums to 1 exactly."""
    p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    conditional, selection, r_beta = transport_plan(p, q, 2, "without_replacement")
    assert len(selection) == 3 and set(selection) == set(conditional)
    for c in selection:
        assert sum(selection[c]) == 1 and sum(conditional[c]) == 1
        assert all(selection[c][y] == 0 for y in range(3) if y not in c)
    assert sum(min(a, b) for a, b in zip(p, r_beta)) == F(139, 140)


# -- the row cache -----------------------------------------------------------------------


def test_row_cache_confirms_a_digest_hit_and_copies_the_rows(monkeypatch):
    monkeypatch.setattr(_plan_cache, "fingerprint", lambda x: (0, 0))  # every digest collides
    calls = []
    cache = _plan_cache.RowCache(lambda p, q, n: calls.append((p, q, n)) or object(), maxsize=8)
    p1, q1 = np.array([0.3, 0.7]), np.array([0.5, 0.5])
    p2, q2 = np.array([0.6, 0.4]), np.array([0.5, 0.5])
    a, b = cache(p1, q1, 2), cache(p2, q2, 2)
    assert a is not b and len(calls) == 2
    assert cache(p1.copy(), q1.copy(), 2) is a and len(calls) == 2
    assert cache(p1, q1, 3) is not a  # the extra arguments are part of the key
    # the cached copy, not the caller's row, and read-only (a plan may hand it out)
    assert not np.shares_memory(calls[0][0], p1) and not calls[0][0].flags.writeable
    p1[0], p1[1] = 0.4, 0.6  # the caller writes to its row: a new plan
    assert cache(p1, q1, 2) is not a


def test_row_cache_keeps_fractions_and_floats_apart():
    cache = _plan_cache.RowCache(lambda p, q, n: p.dtype, maxsize=8)
    half = np.array([F(1, 2), F(1, 2)], dtype=object)
    assert cache(half, half, 2) is np.dtype(object)
    assert cache(np.array([0.5, 0.5]), np.array([0.5, 0.5]), 2) is np.dtype(np.float64)


def test_row_cache_evicts_the_least_recently_used():
    cache = _plan_cache.RowCache(lambda p, q: object(), maxsize=2)
    rows = [np.array([x, 1 - x]) for x in (0.1, 0.2, 0.3)]
    first = cache(rows[0], rows[0])
    cache(rows[1], rows[1])
    assert cache(rows[0], rows[0]) is first  # now the most recent
    cache(rows[2], rows[2])  # evicts rows[1]
    assert len(cache) == 2 and cache(rows[0], rows[0]) is first


def test_row_cache_under_threads():
    """Four threads through an 8-entry cache with evictions: each gets its own row's plan."""
    cache = _plan_cache.RowCache(lambda p, q: (p.copy(), q.copy()), maxsize=8)
    rng = np.random.default_rng(0)
    rows = [(rng.dirichlet(np.ones(20)), rng.dirichlet(np.ones(20))) for _ in range(30)]
    errors = []

    def work(k):
        for p, q in rows[k::2] * 4:
            gp, gq = cache(p, q)
            if not (np.array_equal(gp, p) and np.array_equal(gq, q)):
                errors.append((k, p))

    threads = [threading.Thread(target=work, args=(k % 2,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_row_cache_plans_are_read_only_for_their_callers():
    """A caller writing to a served plan's array changed every later caller's plan."""
    from spectheory.verifiers.coupling import clear_transport_cache
    from spectheory.verifiers.optimal import clear_plan_cache, optimal_plan

    p, q = np.array([0.5, 0.25, 0.125, 0.125]), np.full(4, 0.25)
    clear_transport_cache()
    _, _, r = transport_plan(p, q, 2, "iid")
    want = r.copy()
    with pytest.raises(ValueError, match="read-only"):
        r *= 2.0
    assert np.array_equal(transport_plan(p, q, 2, "iid")[2], want)
    clear_plan_cache()
    pl = optimal_plan(p, q, 2)
    want = pl.residual.copy()
    with pytest.raises(ValueError, match="read-only"):
        pl.residual[:] = 0.0
    assert np.array_equal(optimal_plan(p, q, 2).residual, want)
