"""Tests of the statistical losslessness checker (spectheory.check_lossless).

Every verdict uses the checker's stated false-alarm rate alpha = 1e-6; the
seeds are fixed, so each test is deterministic, and a correct verifier would
fail one of these tests with probability at most 1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import spectheory as stt
from spectheory.sim.check import _row_test, detectable_tv
from tests.planted_verifiers import first_draft_sd

P = np.array([0.3, 0.4, 0.3])
Q = np.array([0.6, 0.3, 0.1])


@pytest.mark.parametrize(
    ("verifier", "n", "sampling"),
    [("sd", 1, "iid"), ("rrs", 2, "iid"), ("rrs_wor", 2, "without_replacement"),
     ("nss", 3, "iid"), ("greedy", 2, "greedy"), ("kseq", 3, "iid")],
)  # fmt: skip
def test_lossless_verifiers_pass(verifier, n, sampling):
    r = stt.check_lossless(verifier, P, Q, n=n, sampling=sampling, trials=10_000, seed=1)
    assert not r.lossy, r.verdict
    assert r.impossible_outputs == 0 and not r.exceeds_bound
    exact = stt.acceptance(verifier, P, Q, n=n, sampling=sampling)
    lo, hi = r.acceptance_interval
    assert lo <= exact <= hi  # a (1 - 1e-6) Wilson interval


def test_typical_acceptance_is_flagged():
    r = stt.check_lossless("typical", P, Q, n=2, trials=2_000, seed=2)
    assert r.lossy and r.exceeds_bound
    assert r.acceptance > r.bound


def sampler_match(p, q, drafts, rng):
    """Ignore the drafts, sample the target: lossless by construction."""
    return rng.choice(p.size, p=p)


def rrs_dedup(p, q, drafts, rng):
    """RRS that skips repeated i.i.d. drafts without updating the residual (pitfall P1)."""
    r = p.copy()
    for x in dict.fromkeys(int(d) for d in drafts):
        if rng.random() < min(1.0, r[x] / q[x]):
            return x
        r = np.maximum(r - q, 0)
        r /= r.sum()
    return rng.choice(p.size, p=r)


def test_user_callables():
    assert not stt.check_lossless(sampler_match, P, Q, n=2, trials=10_000, seed=3).lossy
    r = stt.check_lossless(rrs_dedup, P, Q, n=3, trials=20_000, seed=3)
    assert r.lossy and r.verifier == "rrs_dedup"


def test_impossible_output_is_proof():
    def leak(p, q, drafts, rng):
        return int(drafts[0])  # always accept: outputs q, including p = 0 tokens

    r = stt.check_lossless(leak, [0.5, 0.5, 0.0], [0.2, 0.2, 0.6], trials=500, seed=4)
    assert r.lossy and r.impossible_outputs > 0 and r.p_value == 0.0


def test_pooled_pit_catches_one_sided_temperature_with_few_trials_per_row():
    rng = np.random.default_rng(5)
    p = stt.softmax(rng.standard_normal((300, 20)) * 2)
    q = stt.softmax(rng.standard_normal((300, 20)) * 2)

    def hot_target(p, q, drafts, rng):
        """Samples the target at temperature 1.3 instead of 1 (one side only)."""
        t = p ** (1 / 1.3)
        return rng.choice(p.size, p=t / t.sum())

    bad = stt.check_lossless(hot_target, p, q, sampling="iid", trials=40, seed=6)
    assert bad.lossy and bad.tests["pit"] < 1e-6
    good = stt.check_lossless(sampler_match, p, q, sampling="iid", trials=40, seed=6)
    assert not good.lossy


def test_stated_power_is_reached():
    """The row test detects a bias of TV = detectable_tv with probability >= 0.99.

    300 repetitions at true power 0.99 fall below 285 detections with probability
    below 1e-8, so this assertion does not fail by chance.
    """
    trials, alpha = 20_000, 1e-6
    tv = detectable_tv(trials, 3, alpha)
    p = np.array([0.3, 0.4, 0.3])
    biased = p + np.array([tv, -tv, 0.0])  # total variation exactly tv
    rng = np.random.default_rng(7)
    hits = sum(
        _row_test(rng.multinomial(trials, biased).astype(float), p)[0] <= alpha for _ in range(300)
    )
    assert hits >= 285
    assert detectable_tv(trials, 10, alpha) == pytest.approx(0.0371, abs=5e-4)


def test_bad_arguments():
    with pytest.raises(stt.InvalidParameterError, match=r"not valid for sampling='iid'"):
        stt.check_lossless("rrs_wor", P, Q, n=2, sampling="iid")
    with pytest.raises(stt.InvalidParameterError, match=r"alpha must be a float in \(0, 1\)"):
        stt.check_lossless("rrs", P, Q, alpha=2.0)
    with pytest.raises(stt.InvalidParameterError, match=r"trials must be >= 1"):
        stt.check_lossless("rrs", P, Q, trials=0)
    with pytest.raises(
        stt.InvalidParameterError,
        match=r"verifier must be a Verifier, a function, 'package.module:function' or one of",
    ):
        stt.check_lossless("magic", P, Q)



def test_missing_draft_is_named():
    """Audit: without ``draft`` the rows were refused as a draft "of shape ()", as if the
    caller had passed a scalar; the default ``None`` is not a draft (the command line's
    ``--draft`` defaults to p, the function does not)."""
    with pytest.raises(stt.InvalidParameterError, match="draft is required with probability"):
        stt.check_lossless("rrs", P, n=2, trials=100)
    with pytest.raises(stt.InvalidParameterError, match="draft is required with probability"):
        stt.check_lossless("rrs", P, None, n=2, trials=100)

# --- calibration of the checker's statistics (issue 18 item 1) ---------------------------------

CAL_P = stt.softmax(np.random.default_rng(11).standard_normal((8, 3)))
CAL_Q = stt.softmax(np.random.default_rng(12).standard_normal((8, 3)))


@pytest.fixture(scope="module")
def calibration_runs():
    """200 checks of a lossless verifier at alpha = 0.05, shared by the calibration tests.

    One draft law (``sampling="iid"``): the calibration of one law's tests.
    """
    return [
        stt.check_lossless("sd", CAL_P, CAL_Q, sampling="iid", trials=300, rng=s, alpha=0.05)
        for s in range(200)
    ]


def test_false_alarm_rate_is_calibrated(calibration_runs):
    """A lossless verifier over 200 seeds at alpha = 0.05 (8 rows of V = 3, 300 trials each).

    * Verdicts: the false-alarm rate is at most 0.05 (Bonferroni over the 10
      tests), so the alarms are stochastically below Binomial(200, 0.05):
      at most its 1 - 1e-6 quantile (this assertion's own false-alarm rate
      is below 1e-6).  The p-values are conservative bounds, so this count
      stays near 0 even without the multiple-testing correction (3 alarms of
      200 measured, not the 74 of uniform p-values): the correction is pinned
      by the wiring assertion below (every verdict is the Bonferroni
      combination of its tests at alpha), not by the count.
    * Each row's p-value is valid (a finite-sample bound, so stochastically
      at least uniform under the null): of the 1,600, the share at most 0.5
      and at most 0.05 stay below the 1 - 1e-6 quantiles of Binomial(1600,
      0.5) and Binomial(1600, 0.05).  The exact validity at every level is
      tested in tests/sim/test_stats.py; here it is the checker's wiring.
    * The pooled PIT p-values (200) likewise at 0.5.
    """
    runs = calibration_runs
    alarms = sum(r.lossy for r in runs)
    assert alarms <= stats.binom.isf(1e-6, 200, 0.05)
    for r in runs:  # the count cannot see a missing correction (see above); the wiring can
        combined = min(1.0, len(r.tests) * min(r.tests.values()))
        assert r.p_value == pytest.approx(combined, rel=1e-12)
        assert r.lossy == (r.p_value <= 0.05)
    rows = np.array([v for r in runs for k, v in r.tests.items() if k.startswith("row")])
    assert rows.size == 1600
    for level in (0.5, 0.05):
        k = int((rows <= level).sum())
        assert k <= stats.binom.isf(1e-6, 1600, level), k
    pit = sum(r.tests["pit"] <= 0.5 for r in runs)
    assert pit <= stats.binom.isf(1e-6, 200, 0.5)


def test_verdict_is_bonferroni_at_exactly_alpha():
    """p_value = min(1, m min_i p_i) over all m tests, and lossy exactly when p_value <= alpha.

    The threshold is probed on both sides of the reported p-value (same seed,
    same samples: alpha does not enter the random stream).
    """
    for s in range(5):
        r = stt.check_lossless("sd", CAL_P, CAL_Q, sampling="iid", trials=300, rng=s, alpha=0.05)
        m = len(r.tests)
        assert m == 8 + 2 and {"pit", "bound"} <= r.tests.keys()
        assert r.p_value == pytest.approx(min(1.0, m * min(r.tests.values())), rel=1e-12)
        if r.p_value < 1.0:
            above = stt.check_lossless("sd", CAL_P, CAL_Q, sampling="iid", trials=300, rng=s,
                                       alpha=min(0.999, r.p_value * 1.001))  # fmt: skip
            below = stt.check_lossless("sd", CAL_P, CAL_Q, sampling="iid", trials=300, rng=s,
                                       alpha=r.p_value * 0.999)  # fmt: skip
            assert above.lossy and not below.lossy
            assert above.p_value == below.p_value == r.p_value


@pytest.mark.parametrize("alpha", [0.05, 1e-6])
def test_acceptance_interval_is_wilson_at_one_minus_alpha(alpha):
    """The interval is scipy's Wilson interval at confidence 1 - alpha, z = Phi^-1(1 - alpha/2)."""
    r = stt.check_lossless("rrs", P, Q, n=2, trials=3000, rng=8, alpha=alpha)
    N = r.rows * r.trials
    k = round(r.acceptance * N)
    ci = stats.binomtest(k, N).proportion_ci(1 - alpha, method="wilson")
    np.testing.assert_allclose(r.acceptance_interval, (ci.low, ci.high), rtol=1e-12)


def test_acceptance_interval_coverage(calibration_runs):
    """The 95% intervals of the 200 calibration runs miss the exact acceptance rarely.

    Each run's accepted count is a Poisson binomial over its 8 rows (mean
    ``a``), less variable than Binomial(2400, a), so a run misses with
    probability at most the Wilson miss probability of that binomial
    (summed exactly over its pmf); the miss count is bounded by the
    1 - 1e-6 quantile of Binomial(200, that probability).
    """
    from spectheory.sim._stats import wilson_interval

    exact = float(np.mean([stt.acceptance("sd", CAL_P[b], CAL_Q[b]) for b in range(8)]))
    runs = calibration_runs
    misses = sum(not (r.acceptance_interval[0] <= exact <= r.acceptance_interval[1]) for r in runs)
    k = np.arange(2401)
    lo, hi = wilson_interval(k, 2400, 0.95)
    miss = stats.binom.pmf(k, 2400, exact)[(exact < lo) | (exact > hi)].sum()
    assert misses <= stats.binom.isf(1e-6, 200, miss)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"rows": [0]}, "rows selects positions of a trace"),
     ({"temperature": -1.0}, "temperature processes a trace's logits"),
     ({"temperature": 0.7}, "temperature processes a trace's logits")],
)  # fmt: skip
def test_trace_only_options_are_refused_with_arrays(kwargs, match):
    """Audit: with probability rows, rows= and temperature= (even -1) were silently ignored."""
    with pytest.raises(stt.InvalidParameterError, match=match):
        stt.check_lossless("rrs", [0.3, 0.4, 0.3], [0.6, 0.3, 0.1], n=2, trials=100, **kwargs)


def test_default_checks_every_claimed_law():
    """With no ``sampling``, every law the verifier claims is checked (it was the first only).

    ``first_draft_sd`` claims all three laws and is lossy under greedy drafts only; the
    default check said "consistent with lossless" after testing i.i.d. drafts alone.
    """
    p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    r = stt.check_lossless(first_draft_sd, p, q, n=2, trials=3000, alpha=1e-3)
    assert r.lossy and r.sampling == "greedy" and "(sampling='greedy')" in r.verdict
    assert list(r.by_law) == ["iid", "without_replacement", "greedy"]
    assert not r.by_law["iid"].lossy and r.by_law["greedy"].lossy
    # each law at alpha / 3; the combined p-value is Bonferroni over the laws
    assert all(x.alpha == pytest.approx(1e-3 / 3) for x in r.by_law.values())
    assert r.p_value == pytest.approx(min(1.0, 3 * min(x.p_value for x in r.by_law.values())))
    assert set(r.tests) == {f"{law}: {t}" for law, x in r.by_law.items() for t in x.tests}
    assert r.acceptance == r.by_law["greedy"].acceptance
    one = stt.check_lossless(first_draft_sd, p, q, n=2, sampling="iid", trials=3000, alpha=1e-3)
    assert not one.lossy and one.sampling == "iid" and one.by_law == {}


def greedy_aware_sd(p, q, drafts, coins, *, sampling="iid"):
    """SD that takes its one greedy draft for q's argmax and accepts it outright: lossy there."""
    x = drafts[0]
    if sampling == "greedy":
        return x
    if coins.bernoulli(min(1, p[x] / q[x])):
        return x
    rest = np.maximum(p - q, 0 * p[0])
    return coins.categorical(rest / rest.sum())


def test_default_checks_every_claimed_law_at_one_draft():
    """At n = 1 too, every law is checked: a verifier receives ``sampling`` and may branch on it.

    Every law draws one draft from q at n = 1, so the check tested the first law only, and
    passed ``greedy_aware_sd`` (exact law [0.6, 0.3, 0.1] under greedy, target [0.3, 0.4, 0.3]).
    """
    r = stt.check_lossless(greedy_aware_sd, P, Q, n=1, trials=3000, rng=0)
    assert r.lossy and r.sampling == "greedy" and "(sampling='greedy')" in r.verdict
    assert list(r.by_law) == ["iid", "without_replacement", "greedy"]
    assert not r.by_law["iid"].lossy and not r.by_law["without_replacement"].lossy
    # the Bonferroni split over laws is the same as for n > 1: alpha / 3 each
    assert all(x.alpha == pytest.approx(1e-6 / 3) for x in r.by_law.values())
    assert r.p_value == pytest.approx(min(1.0, 3 * min(x.p_value for x in r.by_law.values())))
    ok = stt.check_lossless("sd", [0.5, 0.5], [0.9, 0.1], trials=500)
    assert not ok.lossy and list(ok.by_law) == ["iid", "without_replacement", "greedy"]
    assert ok.samples == 3 * 500
    one = stt.check_lossless("sd", [0.5, 0.5], [0.9, 0.1], sampling="iid", trials=500)
    assert one.sampling == "iid" and one.by_law == {} and one.samples == 500


def test_cli_checks_every_claimed_law_at_one_draft(tmp_path, monkeypatch, capsys):
    """``spectheory check module:function --n 1`` flags the law-dependent verifier (exit 3)."""
    import inspect
    import sys

    from spectheory.cli import ExitCode, main

    (tmp_path / "lawdep_check_test.py").write_text(
        "import numpy as np\n\n\n" + inspect.getsource(greedy_aware_sd)
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "lawdep_check_test", raising=False)
    argv = ["check", "lawdep_check_test:greedy_aware_sd", "--n", "1", "--target", "0.3,0.4,0.3",
            "--draft", "0.6,0.3,0.1", "--trials", "2000"]  # fmt: skip
    assert main(argv) == ExitCode.CHECK_FAILED
    out = capsys.readouterr().out
    assert "(sampling='greedy')" in out and "iid and without_replacement and greedy" in out
    assert main([*argv, "--sampling", "iid"]) == ExitCode.OK


def test_default_laws_need_distinct_draft_support():
    """A law the caller did not name, impossible on these rows, is refused with the way out."""
    p, q = np.array([0.5, 0.5, 0.0]), np.array([1.0, 0.0, 0.0])
    with pytest.raises(stt.InvalidParameterError, match=r"sampling=None.*pass sampling="):
        stt.check_lossless("naive", p, q, n=2, trials=100)
    assert not stt.check_lossless("naive", p, q, n=2, sampling="iid", trials=2000).lossy


@pytest.mark.parametrize("rows", [[True, False, True], [0.0, 2.0], [[0, 1]]])
def test_trace_rows_must_be_integer_positions(rows):
    """``rows`` of a trace went through ``np.asarray``: a bool list acted as a mask, floats and
    nested lists failed inside numpy's indexing."""
    from spectheory.lm import Trace

    rng = np.random.default_rng(0)
    tr = Trace.from_arrays(rng.standard_normal((3, 5)), {"d": rng.standard_normal((3, 5))})
    with pytest.raises(stt.InvalidParameterError, match="rows must"):
        stt.check_lossless("sd", tr, "logits:d", rows=rows, trials=10)
