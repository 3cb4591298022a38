"""Bad input: every case gets a spectheory error naming the argument, the row and the value."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import spectheory as stt

P = np.array([0.2, 0.3, 0.5])
Q = np.array([0.5, 0.25, 0.25])


@pytest.mark.parametrize(
    ("target", "draft", "pattern"),
    [
        ([0.2, np.nan, 0.8], Q, r"target has a non-finite entry nan at token 1"),
        (P, [0.5, np.inf, 0.5], r"draft has a non-finite entry inf at token 1"),
        ([0.5, -0.1, 0.6], Q, r"target has a negative entry -0\.1 at token 1"),
        (P, [0.5, 0.25, 0.2], r"draft sums to 0\.95, not 1 \(tolerance 1e-09 for float64\)"),
        (P, [0.5, 0.5], r"different vocabularies: 3 and 2 tokens"),
        # a draft cut short is a shape mismatch, not "draft sums to 0.9"
        (P, [0.6, 0.3], r"different vocabularies: 3 and 2 tokens"),
        ([P, P], [[0.6, 0.3]] * 2, r"different vocabularies: 3 and 2 tokens"),
        ([P, P], [Q, Q, Q], r"same shape; got target \(2, 3\) and draft \(3, 3\)"),
        ([P, P], Q, r"same shape; got target \(2, 3\) and draft \(3,\)"),
        (
            np.ones((2, 2, 3)) / 3,
            np.ones((2, 2, 3)) / 3,
            r"target must have shape \(V,\) or \(B, V\)",
        ),
        ([], [], r"target is empty"),
        (np.array([0.5, 0.5], dtype=complex), [0.5, 0.5], r"target has dtype complex128"),
        (np.array([True, False]), [0.5, 0.5], r"target has dtype bool"),
        (np.array(["a", "b"]), [0.5, 0.5], r"target has dtype str32"),
        (np.array([0.5, "x"], dtype=object), [0.5, 0.5], r"target has dtype object"),
    ],
)
def test_bad_distributions(target, draft, pattern):
    with pytest.raises(stt.SpecTheoryError, match=pattern) as err:
        stt.bound(target, draft, 2)
    assert isinstance(err.value, ValueError)


def test_bad_row_is_named_in_batches():
    p = np.tile(P, (4, 1))
    q = np.tile(Q, (4, 1))
    q[2, 1] = -1e-3
    with pytest.raises(stt.InvalidDistributionError, match=r"draft row 2 has a negative entry"):
        stt.bound(p, q, 2)
    q = np.tile(Q, (4, 1))
    p[3] *= 1.01
    with pytest.raises(stt.InvalidDistributionError, match=r"target row 3 sums to 1\.01"):
        stt.bound(p, q, 2)


@pytest.mark.parametrize(
    ("n", "pattern"),
    [
        (0, r"n must be >= 1; got 0"),
        (-2, r"n must be >= 1; got -2"),
        (1.5, r"n must be a positive integer; got 1\.5 of type float"),
        (True, r"n must be a positive integer; got True"),
        ("2", r"n must be a positive integer; got '2'"),
    ],
)
def test_bad_n(n, pattern):
    with pytest.raises(stt.InvalidParameterError, match=pattern):
        stt.bound(P, Q, n)


def test_numpy_integer_n_is_accepted():
    assert stt.bound(P, Q, np.int64(2)) == stt.bound(P, Q, 2)


@pytest.mark.parametrize("sampling", ["without_replacement", "greedy"])
def test_n_larger_than_support(sampling):
    q = np.array([[0.5, 0.25, 0.25, 0.0], [0.5, 0.5, 0.0, 0.0]])
    p = np.full((2, 4), 0.25)
    with pytest.raises(
        stt.InvalidParameterError,
        match=rf"n=3 is larger than the support of draft row 1 \(2 tokens .*sampling='{sampling}'",
    ):
        stt.bound(p, q, 3, sampling)
    stt.bound(p, q, 3, "iid")  # with replacement any support works


def test_bad_sampling_name():
    with pytest.raises(
        stt.InvalidParameterError, match=r"sampling must be one of 'iid'.*got 'wor'"
    ):
        stt.bound(P, Q, 2, "wor")


def test_tolerance_by_dtype_and_renormalisation():
    q32 = np.array([0.5, 0.25, 0.25 + 5e-5], dtype=np.float32)  # within float32 tolerance 1e-4
    assert stt.bound(P, q32, 1) == pytest.approx(np.minimum(P, q32 / q32.sum()).sum(), abs=1e-7)
    with pytest.raises(stt.InvalidDistributionError, match=r"tolerance 0\.0001 for float32"):
        stt.bound(P, np.array([0.5, 0.25, 0.26], dtype=np.float32), 1)
    q16 = np.array([0.5, 0.25, 0.25], dtype=np.float16)
    assert stt.bound(P, q16, 1) == pytest.approx(0.7)
    with pytest.raises(stt.InvalidDistributionError, match=r"sums to 1\.01"):
        stt.bound(P, [0.5, 0.25, 0.26], 1, atol=1e-3)
    assert stt.bound(P, [0.5, 0.25, 0.26], 1, atol=0.02) == pytest.approx(
        np.minimum(P, np.array([0.5, 0.25, 0.26]) / 1.01).sum()
    )


@pytest.mark.parametrize("atol", [-1e-3, 1.5, "big", float("nan")])
def test_bad_atol(atol):
    with pytest.raises(stt.InvalidParameterError, match="atol must be a number in"):
        stt.bound(P, Q, 1, atol=atol)


def test_inputs_are_not_modified():
    p = np.array([0.2, 0.3, 0.5 + 1e-12])
    before = p.copy()
    stt.bound(p, Q, 2, "greedy")
    assert (p == before).all()


def test_exact_input_errors():
    bad = np.array([Fraction(1, 2), Fraction(1, 3), Fraction(1, 7)], dtype=object)
    with pytest.raises(stt.InvalidDistributionError, match=r"target sums to 41/42, not exactly 1"):
        stt.solve_bound(bad, bad, 1, method="enumerate")
    neg = np.array([Fraction(3, 2), Fraction(-1, 2)], dtype=object)
    with pytest.raises(stt.InvalidDistributionError, match=r"draft has a negative entry -1/2"):
        stt.solve_bound([Fraction(1, 2), Fraction(1, 2)], neg, 1, method="maxflow")


def test_error_hierarchy():
    assert issubclass(stt.InvalidDistributionError, stt.SpecTheoryError)
    assert issubclass(stt.InstanceTooLargeError, ValueError)
    assert issubclass(stt.SolverError, RuntimeError)


# --- issue 22, items 7, 8, 10: documented limits and argument checks ---

from spectheory.drafting import draft_set_probability, sample_drafts  # noqa: E402
from spectheory.solvers.specdecpp import solve_specdecpp  # noqa: E402
from spectheory.solvers.speedup import optimal_gamma  # noqa: E402


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: stt.draft_set_law([0.5, 0.5], n=10**6), "n=1000000"),
        (lambda: stt.draft_set_law([1.0, 0.0], n=10**6), "limit n <= 64"),
        (lambda: stt.draft_set_law(np.ones(40) / 40, 6, "without_replacement"), "ordered draws"),
        (lambda: draft_set_probability(np.ones(30) / 30, range(30), 8, "without_replacement"),
         "ordered draws"),
        (lambda: optimal_gamma(0.9, 0.1, gamma_max=10**12), "gamma_max=1000000000000"),
        (lambda: optimal_gamma([0.5] * 100, 0.1, gamma_max=10**6, method="enumerate"),
         "gamma_max"),
        (lambda: solve_specdecpp({0.5: 1.0}, 0.1, k_max=10**6), "k_max=1000000"),
    ],
)
def test_issue22_huge_parameters_are_refused_not_hung(call, pattern):
    with pytest.raises(stt.InstanceTooLargeError, match=pattern):
        call()


def test_issue22_optimal_gamma_lambertw_takes_huge_gamma_max():
    # O(1) method: the documented limit is 2**53; the answer is the uncapped optimum.
    r = optimal_gamma(0.8, 0.05, gamma_max=10**12, method="lambertw")
    assert r.gamma == optimal_gamma(0.8, 0.05).gamma == 8


@pytest.mark.parametrize("tol", [float("inf"), True, float("nan"), 0.0, -1.0, "1e-9", 1j])
def test_issue22_specdecpp_tol(tol):
    with pytest.raises(stt.InvalidParameterError, match="tol"):
        solve_specdecpp({0.5: 1.0}, 0.1, tol=tol)


@pytest.mark.parametrize("H", [[-1], [1.7], [[0], [1]], [2], [True], ["0"]])
def test_issue22_draft_set_probability_token_ids(H):
    # [-1] wrapped to the last token, 1.7 was truncated to 1, nested lists flattened.
    with pytest.raises(stt.InvalidParameterError, match="H"):
        draft_set_probability([0.5, 0.5], H)


def test_issue22_draft_set_probability_accepts_ids_and_masks():
    q = np.array([0.5, 0.25, 0.25])
    assert draft_set_probability(q, [0, 2], 2) == 0.75**2
    assert draft_set_probability(q, np.array([True, False, True]), 2) == 0.75**2
    assert draft_set_probability(q, np.array([0, 2, 2], dtype=np.int64), 2) == 0.75**2


@pytest.mark.parametrize("rng", ["abc", 1.5, -1, [1, 2], True, np.random.RandomState(0)])
def test_issue22_sample_drafts_seed(rng):
    with pytest.raises(stt.InvalidParameterError, match="rng must be"):
        sample_drafts([0.5, 0.5], 2, rng=rng)


def test_issue22_sample_drafts_seed_reproducible():
    a = sample_drafts([0.2, 0.3, 0.5], 3, rng=np.uint8(7))
    assert a.tolist() == sample_drafts([0.2, 0.3, 0.5], 3, rng=7).tolist()


def _rows_near_one(V, seed):
    """Rows normalised in float64 (sums 1 up to rounding), from flat to very peaked."""
    rng = np.random.default_rng(seed)
    rows = []
    for scale in (0.1, 1.0, 5.0, 30.0):
        z = rng.normal(size=V) * scale
        r = np.exp(z - z.max())
        rows.append(r / r.sum())
    return np.array(rows)


@pytest.mark.parametrize("V", [3, 1000, 49_152, 151_936])
def test_sum_rounding_bound_holds(V):
    # The computed row sum errs from the exact sum (math.fsum) by at most the bound
    # times the sum: so an exactly normalised row always passes as normalised.
    from spectheory._validate import sum_rounding_bound
    from spectheory._validate_kernels import row_stats

    rows = _rows_near_one(V, V)
    _, sums = row_stats(rows)
    for r, s in zip(rows, sums):
        exact = math.fsum(r)
        assert abs(s - exact) <= sum_rounding_bound(V) * exact


def test_rows_summing_to_one_within_rounding_are_kept_as_given():
    from spectheory._validate import as_distribution, sum_rounding_bound
    from spectheory._validate_kernels import row_stats

    rows = _rows_near_one(49_152, 0)
    kept, _ = as_distribution(rows, "target")
    assert np.array_equal(kept, rows) and not np.shares_memory(kept, rows)
    view, _ = as_distribution(rows, "target", copy=False)
    assert np.shares_memory(view, rows)
    # Off 1 by more than the rounding bound (but within the tolerance): renormalised.
    off = rows * (1 + 50 * sum_rounding_bound(49_152))
    fixed, _ = as_distribution(off, "target", copy=False)
    _, sums = row_stats(off)
    assert not np.shares_memory(fixed, off)
    assert np.array_equal(fixed, off / sums[:, None])


@pytest.mark.parametrize("sampling", ["iid", "without_replacement", "greedy"])
def test_bound_reads_read_only_rows_in_place(sampling):
    # ``bound`` takes the caller's rows without a copy: it must never write to them
    # (numba refuses to compile a write into a read-only array).
    rows = _rows_near_one(2_000, 1)
    p, q = rows[:2].copy(), rows[2:].copy()
    expected = stt.bound(p, q, 3, sampling)
    p.setflags(write=False)
    q.setflags(write=False)
    assert np.array_equal(stt.bound(p, q, 3, sampling), expected)
