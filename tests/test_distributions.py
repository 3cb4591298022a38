"""Tests of logits processing: temperature, top-k, top-p."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import spectheory as stt

logit_rows = arrays(
    np.float64,
    st.tuples(st.integers(1, 4), st.integers(2, 12)),
    elements=st.floats(-30, 30, allow_nan=False),
)


def test_temperature_zero_is_argmax_with_lowest_id_on_ties():
    z = np.array([[1.0, 3.0, 3.0, -1.0], [0.0, 0.0, 0.0, 0.0]])
    out = stt.process_logits(z, temperature=0)
    assert out.tolist() == [[0, 1, 0, 0], [1, 0, 0, 0]]


@given(logit_rows, st.floats(0.05, 5.0))
def test_temperature_matches_softmax(z, temp):
    out = stt.process_logits(z, temperature=temp)
    ref = np.exp(z / temp - (z / temp).max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@given(logit_rows, st.integers(1, 12))
def test_top_k_keeps_exactly_k_largest(z, k):
    out = stt.process_logits(z, top_k=k)
    kept = out > 0
    assert (kept.sum(axis=1) == min(k, z.shape[1])).all()
    for b in range(z.shape[0]):
        order = np.argsort(-z[b], kind="stable")  # ties to the lowest id
        assert set(np.flatnonzero(kept[b])) == set(order[: min(k, z.shape[1])])


@given(logit_rows, st.floats(0.01, 1.0))
# top_p = 1 keeps every token, although the float prefix mass rounds to 1.0 one token
# early (1 + e^-40): "without the last token it falls short" holds only for top_p < 1.
@example(np.array([[-20.0, 20.0]]), 1.0)
# The 0.5 threshold is met exactly by the first token (mass 1/2): keep it alone.
@example(np.array([[0.0, 0.0]]), 0.5)
def test_top_p_keeps_the_smallest_sufficient_prefix(z, top_p):
    full = stt.process_logits(z)
    out = stt.process_logits(z, top_p=top_p)
    if top_p == 1:
        np.testing.assert_array_equal(out, full)
        return
    for b in range(z.shape[0]):
        order = np.argsort(-z[b], kind="stable")
        kept = np.flatnonzero(out[b][order] > 0)
        m = kept.size
        assert (kept == np.arange(m)).all()  # a prefix of the descending order
        mass = np.cumsum(full[b][order])
        assert m == 1 or mass[m - 2] < top_p  # without the last token it falls short
        # ...and with it the prefix suffices (or it is the whole row); 1e-12: rounding
        # of the cumulative sum, which the implementation forms differently.
        assert m == z.shape[1] or mass[m - 1] >= top_p * (1 - 1e-12)
        np.testing.assert_allclose(out[b][order][:m], full[b][order][:m] / mass[m - 1], rtol=1e-12)


def test_large_logits_are_stable_and_minus_inf_masks():
    z = np.array([1e4, 1e4 - 1, -np.inf, -1e4])
    out = stt.process_logits(z)
    assert np.isfinite(out).all() and out[2] == 0.0
    assert out[0] / out[1] == pytest.approx(np.e)


def test_pair_is_processed_identically():
    rng = np.random.default_rng(0)
    t, d = rng.standard_normal((2, 3, 50))
    p, q = stt.process_pair(t, d, temperature=0.7, top_k=10, top_p=0.9)
    np.testing.assert_array_equal(p, stt.process_logits(t, 0.7, 10, 0.9))
    np.testing.assert_array_equal(q, stt.process_logits(d, 0.7, 10, 0.9))
    with pytest.raises(stt.ShapeMismatchError, match=r"same shape; got \(3, 50\) and \(3, 49\)"):
        stt.process_pair(t, d[:, :49])


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"temperature": -1.0}, r"temperature must be finite and >= 0; got -1\.0"),
        ({"temperature": float("nan")}, r"temperature must be finite"),
        ({"temperature": "hot"}, r"temperature must be a real number"),
        ({"top_k": 0}, r"top_k must be None or an integer >= 1; got 0"),
        ({"top_k": 2.5}, r"top_k must be None or an integer"),
        ({"top_p": 0.0}, r"top_p must be in \(0, 1\]; got 0\.0"),
        ({"top_p": 1.5}, r"top_p must be in \(0, 1\]; got 1\.5"),
    ],
)
def test_bad_settings(kwargs, pattern):
    with pytest.raises(stt.InvalidParameterError, match=pattern):
        stt.process_logits([0.0, 1.0], **kwargs)


@pytest.mark.parametrize(
    ("logits", "pattern"),
    [
        ([0.0, np.nan], r"logits has logit nan at token 1"),
        ([[0.0, 1.0], [np.inf, 0.0]], r"logits row 1 has logit inf at token 0"),
        ([-np.inf, -np.inf], r"every logit equal to -inf"),
        (np.array(["a"]), r"logits has dtype <U1"),
    ],
)
def test_bad_logits(logits, pattern):
    with pytest.raises(stt.InvalidDistributionError, match=pattern):
        stt.process_logits(logits)


# --- issue 22, item 6 ---


@pytest.mark.parametrize("temperature", [1e-310, 5e-324, 1e-300])
def test_issue22_process_logits_tiny_temperature_is_not_nan(temperature):
    # z / T overflowed to inf and inf - inf gave NaN rows.
    out = stt.process_logits(np.array([[1.0, 2.0, 2.0, -np.inf], [3.0, 0.0, 1.0, 2.0]]),
                             temperature=temperature)
    # The limit T -> 0 is the uniform law over the maxima; z differences of 1
    # divided by T <= 1e-300 give exp(-1e300) = 0 exactly.
    assert out.tolist() == [[0.0, 0.5, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0]]


def test_issue22_process_logits_near_the_largest_float():
    z = np.array([1e308, 1.7e308, -1.7e308, 1.7e308])
    out = stt.process_logits(z, temperature=0.5)
    assert out.tolist() == [0.0, 0.5, 0.0, 0.5]
    # Two logits 1e306 apart at T = 2: exp(-5e305) is 0; no overflow in z / T.
    assert stt.process_logits([1e308, 0.99e308], temperature=2.0).tolist() == [1.0, 0.0]
    # Huge logits with O(1) differences (exact in float64 near 1e15) match the shifted ones.
    z = 1e15 + np.array([0.0, -1.0, -2.0])
    ref = stt.softmax(np.array([0.0, -1.0, -2.0]) / 0.7)
    np.testing.assert_allclose(stt.process_logits(z, temperature=0.7), ref, rtol=1e-15)


@pytest.mark.parametrize(
    "logits, error, pattern",
    [
        ([np.nan, 1.0], stt.InvalidDistributionError, "nan"),
        ([np.inf, 1.0], stt.InvalidDistributionError, "inf"),
        ([True, False], stt.InvalidDistributionError, "dtype bool"),
        (["a", "b"], stt.InvalidDistributionError, "dtype"),
        ([1j, 2.0], stt.InvalidDistributionError, "dtype complex"),
        (3.0, stt.ShapeMismatchError, r"shape \(V,\) or \(B, V\)"),
        (np.zeros((2, 2, 2)), stt.ShapeMismatchError, r"\(2, 2, 2\)"),
        ([[1.0, 2.0], [3.0]], stt.InvalidDistributionError, "cannot be read"),
        ([-np.inf, -np.inf], stt.InvalidDistributionError, "every logit"),
    ],
)
def test_issue22_softmax_validates_its_input(logits, error, pattern):
    with pytest.raises(error, match=pattern):
        stt.softmax(logits)


def test_issue22_softmax_axis():
    z = np.array([[0.0, np.log(3.0)], [np.log(3.0), 0.0]])
    np.testing.assert_allclose(stt.softmax(z, axis=0), stt.softmax(z.T).T, rtol=1e-15)
    for axis in (2, -3, True, "0", 0.5):
        with pytest.raises(stt.InvalidParameterError, match="axis"):
            stt.softmax(z, axis=axis)


def test_issue22_temperature_as_a_huge_python_int():
    # 10**30 (a Python int) made np.isfinite raise TypeError; it is a valid temperature.
    out = stt.process_logits([0.0, 1.0], temperature=10**30)
    np.testing.assert_allclose(out, [0.5, 0.5], rtol=1e-15)
    with pytest.raises(stt.InvalidParameterError, match="temperature must be finite"):
        stt.process_logits([0.0, 1.0], temperature=10**400)
