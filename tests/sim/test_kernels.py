"""numba simulation kernels against the reference verifiers (spectheory.sim._kernels, simulate).

* Replay: identical uniforms give identical drafts (kernel vs a coins-based
  draft sampler written here) and identical tokens (kernel vs the registry
  verifier run with ReplayCoins), on every trial, on hypothesis instances
  (V = 2..8, zeros allowed, n = 1..4, every supported draft law) and on
  full-vocabulary rows (V = 49,152).
* Law: the kernel's output frequencies against the exact law
  (spectheory.output_distribution), Pearson chi-square at false-alarm rate
  1e-6 per test, and the acceptance against spectheory.acceptance (z-test, 1e-6).
* Reproducibility, thread independence, validation and the Python fallback of simulate.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from scipy import stats

from spectheory import InvalidParameterError, acceptance, output_distribution, softmax
from spectheory.coins import ReplayCoins
from spectheory.drafting import greedy_split
from spectheory.sim import _kernels as K
from spectheory.sim.simulate import SimulationResult, simulate
from spectheory.verifiers import REGISTRY
from tests.budget import scaled
from tests.strategies import as_float, weights

#: Every (verifier, draft law) pair with a kernel.
PAIRS = [(name, s) for name in K.KERNEL_VERIFIERS for s in REGISTRY[name].samplings]


def allowed_n(name, max_n, sampling):
    allowed = REGISTRY[name].n_values_for(sampling)
    return list(allowed) if allowed is not None else list(range(1, max_n + 1))


def reference_drafts(q, n, sampling, u):
    """Drafts from ``coins.categorical``: the laws of spectheory.drafting, one uniform a draw."""
    coins = ReplayCoins(u)
    if sampling == "iid":
        return [coins.categorical(q) for _ in range(n)]
    if sampling == "greedy":
        T, qt = greedy_split(q, n)
        return [*(int(t) for t in T), coins.categorical(qt)]
    out = []
    rest = q.copy()
    for j in range(n):  # q renormalised over the tokens not drawn yet
        x = coins.categorical(q if j == 0 else rest / rest.sum())
        out.append(x)
        rest[x] = 0.0
    return out


def assert_replay(name, sampling, p, q, n, trials, seed):
    """Kernel drafts and tokens equal the references' on every trial."""
    p = np.ascontiguousarray(p)
    q = np.ascontiguousarray(q)
    B = p.shape[0]
    rng = np.random.default_rng(seed)
    du = rng.random((B, trials, K.draft_uniforms(n, sampling)))
    u = rng.random((B, trials, K.verifier_uniforms(name, n)))
    drafts = K.draw_drafts(q, n, sampling, du)
    tokens = K.run_verifier(name, p, q, drafts, u, sampling)
    fn = REGISTRY[name].function
    for b in range(B):
        for t in range(trials):
            d = [int(x) for x in drafts[b, t]]
            assert d == reference_drafts(q[b], n, sampling, du[b, t]), (b, t)
            if sampling == "without_replacement":
                assert len(set(d)) == n
            ref = fn(p[b], q[b], tuple(d), ReplayCoins(u[b, t]), sampling=sampling)
            assert tokens[b, t] == ref, (name, sampling, n, b, t, d)
            assert p[b, tokens[b, t]] > 0 or name == "typical"


@st.composite
def small_case(draw, name, sampling):
    V = draw(st.integers(2, 8))
    n = draw(st.sampled_from(allowed_n(name, 4, sampling)))
    need = 1 if sampling == "iid" else n
    if need > V:
        V = need
    p = as_float(draw(weights(V)))
    q = as_float(draw(weights(V, min_support=need)))
    rows = draw(st.integers(1, 2))
    if rows == 2:  # a second, unrelated row
        p = np.stack([p, as_float(draw(weights(V)))])
        q = np.stack([q, as_float(draw(weights(V, min_support=need)))])
    else:
        p, q = p[None], q[None]
    return p, q, n, draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize(("name", "sampling"), PAIRS)
def test_replay_small(name, sampling):
    # Half the profile per (verifier, law): 30 x 16 pairs = 480 under ci, within 60 s.
    @scaled(
        1 / 2,
        suppress_health_check=[HealthCheck.large_base_example, HealthCheck.too_slow],
    )
    @given(small_case(name, sampling))
    def check(case):
        p, q, n, seed = case
        assert_replay(name, sampling, p, q, n, trials=16, seed=seed)

    check()


@pytest.fixture(scope="module")
def full_rows():
    """Two softmax(N(0, 9)) rows with perturbed drafts, and one near one-hot row."""
    rng = np.random.default_rng(2024)
    V = 49_152
    z = 3.0 * rng.standard_normal((3, V))
    z[2, 17] = 40.0  # drafting without replacement then takes its exact path after token 17
    p = softmax(z)
    q = softmax(z + rng.standard_normal((3, V)))
    return p, q


@pytest.mark.parametrize(("name", "sampling"), PAIRS)
def test_replay_full_vocabulary(full_rows, name, sampling):
    p, q = full_rows
    n = max(allowed_n(name, 3, sampling))  # 3, or the most the verifier takes under the law
    assert_replay(name, sampling, p, q, n, trials=25, seed=7)


def test_exact_paths_are_exercised(full_rows):
    """Row 2 sends drafting w/o replacement to its exact path; rows 0 and 1 to the fast one."""
    _, q = full_rows
    assert 1 - q[2].max() < K.EXACT_MASS
    assert 1 - q[0].max() > 0.5 and 1 - q[1].max() > 0.5


def test_nss_exact_path_replays_reference(full_rows):
    """Rejecting a token of mass 1 - 4e-4 leaves Z < EXACT_MASS: nss's exact replica runs."""
    p, q = full_rows
    p = p[:1].copy()
    top = int(np.argmax(p[0]))
    p[0] *= 4e-4 / (1 - p[0, top])
    p[0, top] = 1 - 4e-4
    assert 1 - p[0, top] < K.EXACT_MASS
    rng = np.random.default_rng(8)
    others = rng.choice(np.flatnonzero(np.arange(p.shape[1]) != top), size=(40, 2))
    drafts = np.concatenate([np.full((40, 1), top), others], axis=1)[None]
    u = rng.random((1, 40, 4))
    u[0, :, 0] = 0.99999  # reject the top token in every trial
    tokens = K.run_verifier("nss", p, q[:1], drafts, u)
    for t in range(40):
        d = tuple(int(x) for x in drafts[0, t])
        assert tokens[0, t] == REGISTRY["nss"].function(p[0], q[0], d, ReplayCoins(u[0, t]))
    assert (tokens != top).all()


def test_pairwise_sum_is_numpy_sum():
    rng = np.random.default_rng(5)
    for V in [*range(1, 140), 1000, 4097, 49_152, 151_936]:
        a = rng.random(V) ** 4
        a[rng.random(V) < 0.3] = 0.0
        assert K.pairwise_sum(a, 0, V) == a.sum(), V


# --------------------------------------------------------------------------- output law

#: Small instances with zeros in target and draft (V = 5).
LAW_P = np.array([0.30, 0.0, 0.25, 0.35, 0.10])
LAW_Q = np.array([0.15, 0.20, 0.45, 0.0, 0.20])
ALPHA = 1e-6


def chi2_pvalue(counts, law):
    """Pearson chi-square, bins with expected count < 5 merged (docs/theory.md §7.2)."""
    N = counts.sum()
    exp = N * law
    big = exp >= 5
    obs = list(counts[big])
    e = list(exp[big])
    if exp[~big].sum() > 0:
        obs.append(counts[~big].sum())
        e.append(exp[~big].sum())
    if len(obs) == 1:  # a one-point law: all counts in that bin is the whole test
        return 1.0 if obs[0] == N else 0.0
    stat = float(((np.array(obs) - np.array(e)) ** 2 / np.array(e)).sum())
    return stats.chi2.sf(stat, len(obs) - 1)


@pytest.mark.parametrize(("name", "sampling"), PAIRS)
def test_output_law_matches_exact_law(name, sampling):
    n = max(allowed_n(name, 3, sampling))
    N = 30_000
    law = output_distribution(name, LAW_P, LAW_Q, n=n, sampling=sampling)
    res = simulate(name, LAW_P, LAW_Q, n=n, sampling=sampling, trials=N, seed=11)
    assert res.engine == "numba"
    counts = np.bincount(res.tokens[0], minlength=LAW_P.size)
    assert counts[law == 0].sum() == 0  # never a token of exact probability 0
    assert chi2_pvalue(counts, law) > ALPHA
    alpha = float(acceptance(name, LAW_P, LAW_Q, n=n, sampling=sampling))
    z = stats.norm.isf(ALPHA / 2)
    assert abs(res.acceptance[0] - alpha) <= z * np.sqrt(alpha * (1 - alpha) / N) + 1e-12


def test_chi2_detects_a_wrong_law():
    """The law test has power: typical acceptance is lossy on this instance."""
    res = simulate("typical", LAW_P, LAW_Q, n=3, trials=30_000, seed=11)
    counts = np.bincount(res.tokens[0], minlength=LAW_P.size)
    assert chi2_pvalue(counts, LAW_P) < ALPHA


# --------------------------------------------------------------------------- simulate


def test_simulate_reproducible_and_thread_independent(full_rows):
    p, q = full_rows
    args = ("rrs_wor", p[:2], q[:2], 4, "without_replacement")
    a = simulate(*args, trials=300, seed=3)
    b = simulate(*args, trials=300, seed=3)
    assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.drafts, b.drafts)
    threads = numba.get_num_threads()
    try:
        for name, sampling, n in [("rrs_wor", "without_replacement", 4), ("nss", "iid", 3)]:
            numba.set_num_threads(1)
            one = simulate(name, p, q, n, sampling, trials=300, seed=4)
            numba.set_num_threads(max(2, threads) if numba.config.NUMBA_NUM_THREADS > 1 else 1)
            two = simulate(name, p, q, n, sampling, trials=300, seed=4)
            assert np.array_equal(one.tokens, two.tokens)
            assert np.array_equal(one.drafts, two.drafts)
    finally:
        numba.set_num_threads(threads)
    c = simulate(*args, trials=300, seed=5)
    assert not np.array_equal(a.tokens, c.tokens)


def test_simulate_result_fields():
    p = [[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]
    res = simulate("nss", p, [[0.4, 0.3, 0.3]] * 2, n=2, trials=500)
    assert isinstance(res, SimulationResult)
    assert res.tokens.shape == (2, 500) and res.tokens.dtype == np.int64
    assert res.drafts.shape == (2, 500, 2) and res.drafts.dtype == np.int64
    member = (res.drafts == res.tokens[:, :, None]).any(axis=2)
    assert np.array_equal(res.accepted, member)
    assert np.allclose(res.acceptance, member.mean(axis=1))
    assert res.mean_acceptance == pytest.approx(member.mean())
    assert not (res.tokens[0] == 2).any()  # p[0][2] = 0


def test_simulate_with_given_uniforms_replays_reference():
    p, q = np.array([0.1, 0.6, 0.3]), np.array([0.5, 0.25, 0.25])
    rng = np.random.default_rng(9)
    du, u = rng.random((1, 100, 2)), rng.random((1, 100, 3))
    res = simulate("kseq", p, q, n=2, trials=100, uniforms=u, draft_uniforms=du)
    for t in range(100):
        d = reference_drafts(q, 2, "iid", du[0, t])
        assert res.drafts[0, t].tolist() == d
        assert res.tokens[0, t] == REGISTRY["kseq"].function(p, q, tuple(d), ReplayCoins(u[0, t]))


def test_simulate_falls_back_to_the_reference():
    p, q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])
    res = simulate("khisti", p, q, n=2, trials=300, seed=1)
    assert res.engine == "reference" and res.tokens.shape == (1, 300)
    u = np.random.default_rng(2).random((1, 50, 4))
    rep = simulate("optimal_lp", p, q, n=2, trials=50, uniforms=u)
    for t in range(50):
        d = tuple(int(x) for x in rep.drafts[0, t])
        ref = REGISTRY["optimal_lp"].function(p, q, d, ReplayCoins(u[0, t]), sampling="iid")
        assert rep.tokens[0, t] == ref

    def always_first(target, draft, drafts, rng):
        assert isinstance(rng, np.random.Generator)
        return int(drafts[0])

    own = simulate(always_first, p, q, n=2, trials=200, seed=0)
    assert own.verifier == "always_first" and own.engine == "reference"
    assert np.array_equal(own.tokens, own.drafts[:, :, 0]) and own.mean_acceptance == 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"verifier": "nope"}, "verifier must be"),
        ({"verifier": "rrs", "sampling": "greedy"}, "not valid for sampling='greedy'"),
        ({"verifier": "spechub", "sampling": "greedy", "n": 3}, "needs n in"),
        ({"verifier": "rrs", "n": 0}, "n must be >= 1"),
        ({"verifier": "rrs", "trials": 1.5}, "trials must be a positive integer"),
        ({"verifier": "rrs", "sampling": "beam"}, "sampling must be one of"),
        ({"verifier": "rrs_wor", "sampling": "without_replacement", "n": 4}, "larger than"),
        ({"verifier": "rrs", "uniforms": np.full((1, 10, 3), 1.0)}, r"is not in \[0, 1\)"),
        ({"verifier": "rrs", "draft_uniforms": np.zeros((1, 10, 3))}, "must have shape"),
        ({"verifier": lambda p, q, d, rng: 0, "uniforms": np.zeros((1, 10, 3))},
         "cannot drive the black-box verifier"),
        ({"verifier": len}, "cannot tell the protocol"),
    ],
)
def test_simulate_rejects_bad_input(kwargs, match):
    args = {"target": [0.3, 0.4, 0.3], "draft": [0.6, 0.4, 0.0], "n": 2, "trials": 10} | kwargs
    with pytest.raises(ValueError, match=match) as info:
        simulate(**args)
    assert isinstance(info.value, InvalidParameterError) or "shape" in match


@pytest.mark.parametrize("parallel", [False, True])
def test_rrs_wor_shared_prefixes_replay_reference(monkeypatch, parallel):
    """RRS w/o replacement reuses the states of common draft prefixes: many trials on few
    tokens repeat every prefix depth (and whole draft tuples), in both the serial and the
    row-parallel path; every token must still equal the reference verifier's."""
    if parallel:
        monkeypatch.setattr(K, "run_parallel", lambda entries, rows: rows > 1)
    rng = np.random.default_rng(31)
    p = rng.dirichlet(np.ones(6), size=3)
    q = rng.dirichlet(np.full(6, 0.5), size=3)
    q[2] = [0.55, 0.3, 0.1, 0.04, 0.01, 0.0]  # a peaked row: long shared prefixes
    for n in (1, 2, 3, 5):
        assert_replay("rrs_wor", "without_replacement", p, q, n, trials=300, seed=n)
