"""Tests of the statistical losslessness checker (spectheory.check_lossless).

Every verdict uses the checker's stated false-alarm rate alpha = 1e-6; the
seeds are fixed, so each test is deterministic, and a correct verifier would
fail one of these tests with probability at most 1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest

import spectheory as stt
from spectheory.sim.check import _pearson, detectable_tv

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

    bad = stt.check_lossless(hot_target, p, q, trials=40, seed=6)
    assert bad.lossy and bad.tests["pit"] < 1e-6
    good = stt.check_lossless(sampler_match, p, q, trials=40, seed=6)
    assert not good.lossy


def test_stated_power_is_reached():
    """Pearson's test detects a bias of TV = detectable_tv with probability >= 0.99.

    300 repetitions at true power 0.99 fall below 285 detections with probability
    below 1e-8, so this assertion does not fail by chance.
    """
    trials, alpha = 20_000, 1e-6
    tv = detectable_tv(trials, 3, alpha)
    p = np.array([0.3, 0.4, 0.3])
    biased = p + np.array([tv, -tv, 0.0])  # total variation exactly tv
    rng = np.random.default_rng(7)
    hits = sum(
        _pearson(rng.multinomial(trials, biased).astype(float), p)[0] <= alpha for _ in range(300)
    )
    assert hits >= 285
    assert detectable_tv(trials, 10, alpha) == pytest.approx(0.0300, abs=5e-4)


def test_bad_arguments():
    with pytest.raises(stt.InvalidParameterError, match=r"not valid for sampling='iid'"):
        stt.check_lossless("rrs_wor", P, Q, n=2, sampling="iid")
    with pytest.raises(stt.InvalidParameterError, match=r"alpha must be a float in \(0, 1\)"):
        stt.check_lossless("rrs", P, Q, alpha=2.0)
    with pytest.raises(stt.InvalidParameterError, match=r"trials must be >= 1"):
        stt.check_lossless("rrs", P, Q, trials=0)
    with pytest.raises(stt.InvalidParameterError, match=r"verifier must be a Verifier, a function or one of"):
        stt.check_lossless("magic", P, Q)
