"""A categorical vector whose float sum is off 1 by more than SUM_TOLERANCE (1e-9) is a
caller bug and is refused, by every coins implementation (docs: probabilities are never
clipped).  The existing tests probe the limit only far from it."""

from __future__ import annotations

import pytest

from spectheory import InvalidParameterError
from spectheory.coins import RandomCoins, ReplayCoins


@pytest.mark.parametrize("make", [lambda: ReplayCoins([0.3]), lambda: RandomCoins(0)])
def test_categorical_sum_tolerance_is_1e_9(make):
    assert make().categorical([0.5, 0.5 - 5e-10]) in (0, 1)  # within rounding: accepted
    with pytest.raises(InvalidParameterError, match="sums to"):
        make().categorical([0.5, 0.5 - 1e-7])  # a lost 1e-7 of mass: refused
