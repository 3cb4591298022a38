"""The trees study's verdict on each published ordering, from the difference's interval.

``run_trees`` needs the real model; the verdict is read from the 95% interval
of the difference A - B alone, and is tested here on intervals chosen by hand.
"""

from __future__ import annotations

import pytest

from spectheory.experiments.trees import _CLAIMS, _verdict

ORDER = "block > token-level (chains)"  # a claim that A is above B
EQUAL = "traversal = block on chains"  # a claim that A and B have one law


@pytest.mark.parametrize(("lo", "hi", "verdict"), [
    (0.01, 0.05, "holds"),
    (0.0, 0.05, "not resolved"),  # an interval touching 0 does not resolve the order
    (-0.02, 0.03, "not resolved"),
    (-0.05, 0.0, "not resolved"),
    (-0.05, -0.01, "reversed"),
])
def test_an_ordering_holds_only_when_its_interval_is_above_zero(lo, hi, verdict):
    """Bugs: ``lo >= 0`` for ``lo > 0`` (an interval from 0 called "holds"), or the two ends
    swapped, so that a difference below 0 read as "holds"."""
    assert _verdict(ORDER, lo, hi) == verdict


@pytest.mark.parametrize(("lo", "hi", "verdict"), [
    (-0.02, 0.03, "consistent"),
    (0.0, 0.03, "consistent"),  # 0 inside the closed interval
    (-0.03, 0.0, "consistent"),
    (0.01, 0.03, "differs"),
    (-0.03, -0.01, "differs"),
])
def test_an_equality_is_consistent_when_its_interval_holds_zero(lo, hi, verdict):
    """Bug: the equality claim (traversal and block verification have one law on chains) was
    judged as an ordering, so an interval around 0 read "not resolved" instead of
    "consistent", and one off 0 "holds" or "reversed" instead of "differs"."""
    assert _verdict(EQUAL, lo, hi) == verdict


def test_the_claims_named_here_are_the_study_s():
    claims = [c[0] for c in _CLAIMS]
    assert ORDER in claims and EQUAL in claims
    assert [c for c in claims if c.startswith("traversal = block")] == [EQUAL]
