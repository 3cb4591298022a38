"""Mutation kills for replay, sweeps, sample logs and their tables, and the report's numbers.

Each test is deterministic and cheap, and names in its docstring the bug it
catches.  Expected values come from hand computation on arrays built here
(softmax by hand, counts of hits by hand, Wilson and Student-t intervals from
scipy.stats), from a fresh :func:`spectheory.sim.replay.replay` call for a
sweep, never from the code under test.  The Monte Carlo checks state their
false-alarm rate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spectheory.lm import Trace
from spectheory.sim.log_metrics import acceptance_table
from spectheory.sim.replay import replay
from spectheory.sim.samplelog import as_sample_log

# ------------------------------------------------------------------------------- helpers


def _softmax(z, temperature):
    """Plain float64 softmax of one row of logits at a temperature > 0 (the oracle)."""
    z = np.asarray(z, dtype=np.float64) / temperature
    e = np.exp(z - z.max())
    return e / e.sum()


def _first_token(target, draft, drafts, rng):
    """A black-box verifier that always outputs token 0 (lossy on purpose)."""
    return 0


def _second_token(target, draft, drafts, rng):
    """A black-box verifier that always outputs token 1 (lossy on purpose)."""
    return 1


# --------------------------------------------------------------------------- replay: PIT


@pytest.mark.parametrize(("verifier", "expected"), [(_first_token, 0.375), (_second_token, 0.875)])
def test_pit_mean_ranks_tokens_by_decreasing_target_probability(verifier, expected):
    """Bugs: the PIT offset of a token included its own mass (cumsum without ``- p``), ranked
    tokens by increasing probability, or scaled the uniform by the largest probability
    instead of the output's.

    Target (3/4, 1/4).  Ranked by decreasing probability, token 0 has mass 0
    before it and token 1 has 3/4.  A verifier that always outputs token 0
    has PIT ``0 + U * 3/4``, mean 3/8; always token 1 gives ``3/4 + U/4``,
    mean 7/8.  The three bugs give 9/8, 5/8 and 9/8 for token 0 or token 1.
    With 20,000 uniforms the mean's standard error is at most
    ``0.75 / sqrt(12 * 20000) = 0.0016``; the tolerance 0.01 is over 6 standard
    errors (false alarm below 1e-9).
    """
    P = np.array([[0.75, 0.25]])
    tr = Trace.from_arrays(P, {"d": np.array([[0.5, 0.5]])}, kind="probs")
    (row,) = replay(tr, verifiers=(verifier,), ns=(1,), samplings=("iid",), trials=20_000)
    assert row["pit_mean"] == pytest.approx(expected, abs=0.01)


# ------------------------------------------------------------------- replay: temperatures


def test_replay_processes_the_target_at_every_temperature():
    """Bug: the target rows shared across configurations were cached by positions only,
    so a second temperature reused the first temperature's target law.

    With integer logits (exact in storage) the bound and sd's closed form at
    ``n = 1`` are both ``sum_x min(p_T(x), q_T(x))``, computed here with a plain
    softmax of the logits divided by ``T``.
    """
    zt = np.array([[0.0, 1.0, 2.0, -1.0], [3.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 2.0]])
    zd = np.array([[2.0, 0.0, 1.0, 0.0], [0.0, 1.0, 3.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    tr = Trace.from_arrays(zt, {"d": zd}, kind="logits")
    temps = (0.5, 1.0, 2.0)
    table = replay(tr, verifiers=("sd",), temperatures=temps, ns=(1,), samplings=("iid",),
                   trials=5)  # fmt: skip
    assert len(table) == 3 * len(temps)
    for r in table:
        i, t = r["position"], r["temperature"]
        want = np.minimum(_softmax(zt[i], t), _softmax(zd[i], t)).sum()
        assert r["bound"] == pytest.approx(want, abs=1e-6), (i, t)
        assert r["exact"] == pytest.approx(want, abs=1e-6), (i, t)


# ----------------------------------------------------------------------- log_metrics


def _hand_log():
    """Three rounds of a two-slot engine, with rows that verify no draft (``-1 -1``).

    ====  =====  ========  ======  =====================
    row   round  drafts    output  hit (first slot)
    ====  =====  ========  ======  =====================
    0     0      1, 2      2       yes (slot 1), depth 0
    1     0      3, -1     3       yes (slot 0), depth 1
    2     0      0, 1      3       no, depth 2
    3     1      -1, -1    0       no draft
    4     1      2, -1     2       yes (slot 0), depth 0
    5     1      1, 1      1       yes (slot 0), depth 1
    6     2      0, 2      1       no, depth 0
    7     2      -1, -1    2       no draft
    ====  =====  ========  ======  =====================
    """
    u = np.full((8, 4), 0.25)
    drafts = [[1, 2], [3, -1], [0, 1], [-1, -1], [2, -1], [1, 1], [0, 2], [-1, -1]]
    outputs = [2, 3, 3, 0, 2, 1, 1, 2]
    return as_sample_log(u, u, drafts, outputs, round=[0, 0, 0, 1, 1, 1, 2, 2])


def _wilson(k, n, confidence):
    ci = stats.binomtest(k, n).proportion_ci(confidence, method="wilson")
    return ci.low, ci.high


def test_acceptance_table_counts_and_intervals_by_hand():
    """Bugs: membership counted rows that verify no draft in its total; a slot's total was
    every row with a draft instead of the rows that reached that slot; rows without a
    draft were given a depth; the proportions' Wilson intervals or the accepted length's
    Student-t interval ignored ``confidence``.

    Counts by hand from :func:`_hand_log`'s table; intervals at confidence 0.9
    from ``scipy.stats.binomtest(...).proportion_ci(method="wilson")`` and the
    Student-t quantile of ``scipy.stats.t`` over the per-round accepted
    lengths (2, 2, 0).
    """
    c = 0.9
    table = acceptance_table(_hand_log(), confidence=c)
    got = {(r["quantity"], r["index"]): r for r in table}
    want = {
        ("membership", -1): (4, 6),
        ("slot", 0): (3, 6),
        ("slot", 1): (1, 4),
        ("depth", 0): (2, 3),
        ("depth", 1): (2, 2),
        ("depth", 2): (0, 1),
    }
    assert set(got) == set(want) | {("accepted_length", -1)}
    for key, (k, n) in want.items():
        r = got[key]
        assert (r["count"], r["total"]) == (k, n), key
        assert r["value"] == pytest.approx(k / n, abs=1e-15)
        lo, hi = _wilson(k, n, c)
        assert (r["low"], r["high"]) == pytest.approx((lo, hi), abs=1e-12), key
    length = got[("accepted_length", -1)]
    x = np.array([2.0, 2.0, 0.0])
    half = stats.t.ppf(0.5 + c / 2, df=2) * x.std(ddof=1) / math.sqrt(3)
    assert (length["count"], length["total"]) == (4, 3)
    assert length["value"] == pytest.approx(4 / 3, abs=1e-15)
    assert (length["low"], length["high"]) == pytest.approx((4 / 3 - half, 4 / 3 + half),
                                                            abs=1e-12)  # fmt: skip


def test_mc_interval_is_the_wilson_interval_of_the_accepted_count():
    """Bug: ``mc_low`` and ``mc_high`` were the Wilson interval of the rejected count
    ``trials - k`` instead of the accepted count ``k``.

    Each row's interval must be scipy's 95% Wilson interval of ``k = mc * trials``
    successes in ``trials``, and contain ``mc``.
    """
    zt = np.array([[0.0, 1.0, 2.0, -1.0], [3.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 2.0]])
    zd = np.array([[2.0, 0.0, 1.0, 0.0], [0.0, 1.0, 3.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    tr = Trace.from_arrays(zt, {"d": zd}, kind="logits")
    table = replay(tr, verifiers=("sd",), ns=(1,), samplings=("iid",), trials=50)
    assert len(table) == 3
    for r in table:
        k = round(r["mc"] * r["trials"])
        assert 0 < k < r["trials"]  # away from the ends, where a swap would show less
        lo, hi = _wilson(k, r["trials"], 0.95)
        assert (r["mc_low"], r["mc_high"]) == pytest.approx((lo, hi), abs=1e-12)
        assert r["mc_low"] <= r["mc"] <= r["mc_high"]


# -------------------------------------------------------------------------- samplelog


def test_a_draft_token_equal_to_the_vocabulary_size_is_refused():
    """Bug: a draft token ``V`` (one past the last id) passed the range check (``> V`` for
    ``>= V``), so a log with out-of-vocabulary drafts was accepted and its acceptance
    counted against tokens that do not exist.
    """
    from spectheory import InvalidParameterError

    u = [[0.5, 0.5]] * 2
    with pytest.raises(InvalidParameterError, match=r"drafts row 1 slot 0 holds token 2"):
        as_sample_log(u, u, [[0], [2]], [0, 1])
    # the largest valid id, V - 1, passes
    assert as_sample_log(u, u, [[0], [1]], [0, 1]).drafts.tolist() == [[0], [1]]


def test_stream_words_identify_every_field_of_a_configuration():
    """Bug: the seed words of a configuration left out one of its fields (the draft law),
    so two configurations shared their random streams.

    ``stream_words`` must name a configuration and verifier by value: changing
    any one of draft, temperature, n, draft law or verifier changes the words,
    and equal values (1 and 1.0 for the temperature) give equal words.
    """
    from spectheory.sim.replay import stream_words

    base = ("exit:1", 1.0, 1, "iid", "sd")
    words = stream_words(*base)
    assert len(words) == 4 and all(0 <= w < 2**32 for w in words)
    assert stream_words("exit:1", 1, 1, "iid", "sd") == words
    others = [("exit:2", 1.0, 1, "iid", "sd"), ("exit:1", 0.7, 1, "iid", "sd"),
              ("exit:1", 1.0, 2, "iid", "sd"), ("exit:1", 1.0, 1, "without_replacement", "sd"),
              ("exit:1", 1.0, 1, "greedy", "sd"), ("exit:1", 1.0, 1, "iid", "rrs")]  # fmt: skip
    seen = {words} | {stream_words(*c) for c in others}
    assert len(seen) == 1 + len(others)


# --------------------------------------------------------------------------- simulate


def test_simulate_counts_an_output_equal_to_any_draft_as_accepted():
    """Bug: membership compared the output with the first draft only, so an output equal to
    a later draft counted as a rejection and multi-draft acceptance was underestimated.

    ``accepted[b, t]`` must be ``tokens[b, t] in drafts[b, t]``, checked here
    trial by trial in Python.  Without replacement from a uniform draft over
    three tokens with the target on one token, RRS outputs that token
    whenever either draft is it: 2/3 of trials, half of them through the
    second draft.
    """
    from spectheory import simulate

    p, q = [0.0, 0.0, 1.0], [1 / 3, 1 / 3, 1 / 3]
    sim = simulate("rrs_wor", p, q, n=2, sampling="without_replacement", trials=600, rng=3)
    want = [[int(t) in d.tolist() for t, d in zip(sim.tokens[0], sim.drafts[0])]]
    assert sim.accepted.tolist() == want
    second = sum(int(d[1]) == int(t) != int(d[0]) for t, d in zip(sim.tokens[0], sim.drafts[0]))
    assert second > 100  # the case the bug miscounts does occur (expected 200)
    assert sim.acceptance[0] == pytest.approx(np.mean(want[0]), abs=0)


# ------------------------------------------------------------------------------ check


def _first_draft_blackbox(target, draft, drafts, rng):
    """Always outputs the first draft: membership acceptance 1 (lossy on purpose)."""
    return int(drafts[0])


def test_bound_flag_is_bonferroni_corrected_over_the_tests():
    """Bug: ``exceeds_bound`` compared the bound test's p-value with ``alpha`` itself
    instead of ``alpha`` divided among the ``m`` tests (``excess_p * m <= alpha``).

    One row, target (0.9, 0.1), draft (1, 0): the bound is 0.9 and a verifier
    that outputs its draft is accepted in all ``N = 22`` trials.  Hoeffding's
    Chernoff bound at ``k = N`` is ``exp(-N kl(1 || 0.9)) = 0.9**22 = 0.0985``:
    below ``alpha = 0.1`` but above ``alpha / 3`` (three tests: PIT, the row,
    the bound), so the bound test alone does not reject.
    """
    from spectheory import check_lossless

    r = check_lossless(_first_draft_blackbox, [0.9, 0.1], [1.0, 0.0], sampling="iid",
                       trials=22, alpha=0.1)  # fmt: skip
    assert r.bound == pytest.approx(0.9, abs=1e-12)
    assert r.acceptance == 1.0 and len(r.tests) == 3
    assert r.excess_p_value == pytest.approx(0.9**22, rel=1e-9)
    assert r.exceeds_bound is False


def _first_draft_coins(p, q, drafts, coins, *, sampling):
    return int(drafts[0])


def test_several_draft_laws_combine_their_p_values_by_bonferroni():
    """Bug: the report over several draft laws took the smallest law's p-value as is,
    without multiplying by the number of laws (each law is checked at ``alpha / laws``).

    A lossy verifier claiming two laws at 100 trials gives per-law p-values
    near 8e-5; the combined p-value must be twice the smaller one.
    """
    from spectheory import check_lossless
    from spectheory.verifiers import Verifier

    v = Verifier("first_draft_two_laws", _first_draft_coins,
                 samplings=("iid", "without_replacement"), lossless=False)  # fmt: skip
    r = check_lossless(v, [0.5, 0.5], [0.6, 0.4], n=1, trials=100)
    laws = [x.p_value for x in r.by_law.values()]
    assert sorted(r.by_law) == ["iid", "without_replacement"]
    assert 0 < min(laws) < 0.5
    assert r.p_value == pytest.approx(min(1.0, 2 * min(laws)), rel=1e-12)


def test_replay_refuses_a_row_one_past_the_last_position():
    """Bug: the rows check let ``rows = [N]`` through (``>`` for ``>=``), so replay failed
    later with a bare IndexError instead of the error that names the valid range.
    """
    from spectheory import InvalidParameterError

    P = np.array([[0.75, 0.25], [0.5, 0.5], [0.25, 0.75]])
    tr = Trace.from_arrays(P, {"d": P[::-1].copy()}, kind="probs")
    kw = dict(verifiers=("sd",), ns=(1,), samplings=("iid",), trials=5)
    with pytest.raises(InvalidParameterError, match=r"rows must be positions in \[0, 3\)"):
        replay(tr, rows=[0, 3], **kw)
    assert [r["position"] for r in replay(tr, rows=[2], **kw)] == [2]


# -------------------------------------------------------------------- report: _wor.pooled


def test_pooled_gap_share_needs_twice_the_half_width():
    """Bug: the share of the gap closed was shown once the gap exceeded one 95% half-width
    of the pooled difference instead of two.

    Two configurations with ``_diff_var = 1e-4`` each: the pooled variance is
    ``2e-4 / 4``, the half-width ``1.96 * sqrt(5e-5) = 0.01386``.  A pooled gap
    of 0.02 lies between one and two half-widths: no share (NaN); a gap of
    0.04 (above two) gets ``difference / gap = 0.01 / 0.04``.
    """
    from spectheory.report._wor import pooled

    def rows(wor):
        return [{"draft": "d", "difference": 0.01, "_diff_var": 1e-4, "alpha*_wor": wor,
                 "rrs_wor": 0.5, "embedded_iid": 0.51} for _ in range(2)]  # fmt: skip

    (p,) = pooled(rows(0.52))
    assert p["gap alpha*_wor - rrs_wor"] == pytest.approx(0.02, abs=1e-15)
    assert math.isnan(p["gap closed"])
    (p,) = pooled(rows(0.54))
    assert p["gap closed"] == pytest.approx(0.25, abs=1e-12)


def _mostly_first(target, draft, drafts, rng):
    """Outputs token 0 with probability 0.9, else token 1 (lossy on purpose)."""
    return 0 if rng.random() < 0.9 else 1


def test_pit_mean_is_a_mean_not_a_median():
    """Bug: ``pit_mean`` was the median of the per-trial PIT values.

    Target (1/2, 1/2), outputs token 0 w.p. 0.9 and token 1 w.p. 0.1: the PIT
    is ``U/2`` or ``1/2 + U/2``, mean ``0.9/4 + 0.1 * 3/4 = 0.3`` but median
    ``0.25 / 0.9 = 0.278``.  The per-trial standard deviation is 0.208, so
    over 20,000 trials the mean's standard error is 0.0015 and the tolerance
    0.01 is over 6 of them (false alarm below 1e-9).
    """
    P = np.array([[0.5, 0.5]])
    tr = Trace.from_arrays(P, {"d": P.copy()}, kind="probs")
    (row,) = replay(tr, verifiers=(_mostly_first,), ns=(1,), samplings=("iid",), trials=20_000)
    assert row["pit_mean"] == pytest.approx(0.3, abs=0.01)


# ---------------------------------------------------------- report: informative_rows


def test_informative_rows_keep_a_draft_with_exactly_min_support_tokens():
    """Bug: rows were kept only where the draft had *more* than ``min_support`` tokens of
    positive probability (``>`` for ``>=``), dropping the rows where drafting ``n`` distinct
    tokens is just possible.

    Row 0's draft has two tokens of support, row 1's three; both overlaps are
    in (0.1, 0.9).  With ``min_support = 2`` both rows qualify (the
    higher-entropy target, row 1, first); with 3 only row 1.
    """
    from spectheory.report._core import informative_rows

    p = np.array([[0.5, 0.5, 0.0], [0.4, 0.3, 0.3]])
    q = np.array([[0.9, 0.1, 0.0], [0.1, 0.1, 0.8]])
    assert informative_rows(p, q, 5, min_support=2).tolist() == [1, 0]
    assert informative_rows(p, q, 5, min_support=3).tolist() == [1]


# ----------------------------------------------------------------------- sweeps: cache


def test_sweep_cache_does_not_serve_rows_of_another_seed_or_trial_count(tmp_path):
    """Bugs: a sweep's cached piece was keyed without its seed, or without its trial count,
    so a sweep with the same cache folder and another seed (or more trials) got the old
    rows back.

    The oracle of each sweep is a fresh :func:`replay` of the same trace in
    memory with that seed and trial count (a sweep equals it without its
    ``shard`` column).
    """
    from spectheory.lm.shards import shard_trace
    from spectheory.sim.sweeps import SweepGrid, sweep

    zt = np.array([[0.0, 1.0, 2.0, -1.0], [3.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 2.0]])
    zd = np.array([[2.0, 0.0, 1.0, 0.0], [0.0, 1.0, 3.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    tr = Trace.from_arrays(zt, {"d": zd}, kind="logits")
    sharded = shard_trace(tr, tmp_path / "shards", 10**7)
    cache = tmp_path / "cache"

    def mc(table):
        return [(r["position"], r["trials"], r["mc"], r["pit_mean"]) for r in table]

    for seed, trials in ((1, 40), (2, 40), (2, 70)):
        grid = SweepGrid(ns=(1,), samplings=("iid",), verifiers=("sd",), trials=trials)
        swept = sweep(sharded, grid, seed=seed, cache_dir=cache)
        fresh = replay(tr, verifiers=("sd",), ns=(1,), samplings=("iid",), trials=trials,
                       seed=seed)  # fmt: skip
        assert mc(swept) == mc(fresh), (seed, trials)


# ----------------------------------------------------------------- lm: acceptance_profile


def test_acceptance_profile_processes_both_models_at_the_temperature():
    """Bug: the draft's logits were processed at temperature 1 whatever the temperature
    asked (the target's at the right one), so beta_t mixed two temperatures.

    With integer logits over two prompts, ``beta_t = sum_x min(p_T, q_T)`` by a
    plain softmax of the logits divided by ``T``, grouped by prompt.
    """
    from spectheory.lm.acceptance import acceptance_profile

    zt = np.array([[0.0, 1.0, 2.0, -1.0], [3.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 2.0]])
    zd = np.array([[2.0, 0.0, 1.0, 0.0], [0.0, 1.0, 3.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    tr = Trace.from_arrays(zt, {"d": zd}, kind="logits", prompt_ids=[0, 0, 1])
    for t in (0.5, 2.0):
        prof = acceptance_profile(tr, tr.drafts[0], t)
        want = [np.minimum(_softmax(zt[i], t), _softmax(zd[i], t)).sum() for i in range(3)]
        assert prof.prompt_ids == (0, 1)
        np.testing.assert_allclose(prof.values, want, rtol=0, atol=1e-6)
        assert prof.mean == pytest.approx(np.mean(want), abs=1e-6)
