"""Coins refuse a categorical vector off 1 by 5e-9, between 1e-9 and 1e-8.

Documented: a floating-point categorical vector whose sum is off 1 by more
than ``SUM_TOLERANCE`` = 1e-9 is a caller bug and raises (probabilities are
never clipped).  A tolerance loosened tenfold still refuses the far cases
(1e-7) but silently accepts a verifier that loses 5e-9 of mass per draw.

Oracle: the documented limit, 1e-9, written as a literal.
"""

from __future__ import annotations

import pytest

from spectheory import InvalidParameterError
from spectheory.coins import RandomCoins, ReplayCoins, enumerate_outcomes


@pytest.mark.parametrize("make", [lambda: ReplayCoins([0.3]), lambda: RandomCoins(0)])
def test_a_lost_5e_9_of_mass_is_refused(make):
    with pytest.raises(InvalidParameterError, match="sums to"):
        make().categorical([0.5, 0.5 - 5e-9])
    with pytest.raises(InvalidParameterError, match="sums to"):
        make().categorical([0.5, 0.5 + 5e-9])
    assert make().categorical([0.5, 0.5 - 5e-10]) in (0, 1)


def test_enumeration_refuses_it_too():
    with pytest.raises(InvalidParameterError, match="sums to"):
        enumerate_outcomes(lambda c: c.categorical([0.25, 0.75 - 5e-9]))
