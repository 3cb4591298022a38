"""Fuzzing the public API (issue 22): a checked value or a SpecTheoryError, never anything else.

Every case of :mod:`tests.fuzz_catalogue` draws arguments from valid pools
(edge values included) and bad pools (NaN, inf, negative, wrong types, bool,
str, complex, 0-d and 3-D arrays, huge integers, bad seeds).  The property:
a call returns a value that passes the case's check (probabilities in
[0, 1], laws summing to 1, ``bound`` equal to the exact max-flow value within
1e-9 on the small instances), or raises a ``SpecTheoryError``; a bad argument
is never accepted silently, nothing else is raised, and no call runs past
``HANG_S`` seconds (the documented size limits refuse before).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .fuzz_catalogue import CASES, HANG_S, Draw, run_case


def _draw(data):
    return Draw(
        integer=lambda lo, hi: data.draw(st.integers(lo, hi)),
        choice=lambda seq: data.draw(st.sampled_from(seq)),
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@given(data=st.data())
def test_public_api_returns_checked_values_or_raises_spectheory_errors(case, data):
    args, kwargs, bad = case.args(_draw(data))
    outcome, detail = run_case(case, args, kwargs, bad)
    assert outcome in ("valid", "clear error"), (
        f"{case.name}{args!r:.300} {kwargs!r:.200}: {outcome} ({detail}); hang limit {HANG_S} s"
    )
