"""hypothesis strategies that build valid instances directly."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from spectheory import SAMPLINGS


@st.composite
def weights(draw, V, min_support=1, zero_prob=0.25):
    """Non-negative integer weights of length V with at least ``min_support`` positive.

    ``zero_prob`` only switches zeros on or off (falsy: every weight in 1..40); it is
    not a probability: zeros make about 40% of the entries whatever its value.
    """
    w = draw(
        st.lists(
            st.one_of(st.just(0), st.integers(1, 40)) if zero_prob else st.integers(1, 40),
            min_size=V,
            max_size=V,
        )
    )
    while sum(1 for x in w if x > 0) < min_support:
        i = draw(st.integers(0, V - 1))
        w[i] = w[i] + draw(st.integers(1, 40))
    return w


def as_float(w):
    w = np.asarray(w, dtype=np.float64)
    return w / w.sum()


def as_exact(w):
    total = sum(w)
    return np.array([Fraction(x, total) for x in w], dtype=object)


@st.composite
def instances(draw, max_V=5, max_n=3, samplings=SAMPLINGS, exact=False):
    """(target, draft, n, sampling) with a draft support large enough for the law."""
    V = draw(st.integers(2, max_V))
    sampling = draw(st.sampled_from(samplings))
    n = draw(st.integers(1, max_n))
    need = n if sampling != "iid" else 1
    if need > V:
        n = V
        need = V
    tw = draw(weights(V))
    dw = draw(weights(V, min_support=need))
    conv = as_exact if exact else as_float
    return conv(tw), conv(dw), n, sampling
