"""Input checks of K-SEQ (spectheory.verifiers.kseq); its law is tested in test_registered.py."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from spectheory import InvalidParameterError
from spectheory.coins import ReplayCoins
from spectheory.verifiers.kseq import kseq

P, Q = np.array([0.3, 0.4, 0.3]), np.array([0.6, 0.3, 0.1])


@pytest.mark.parametrize(
    "drafts",
    [(-1,), (3,), (0, -3), (True,), (1.0,), (np.int64(-1),)],
)
def test_draft_ids_outside_the_vocabulary_are_refused(drafts):
    # (-1,) used to return token -1: numpy's negative index wrapped to the last token.
    match = r"drafts must hold token ids, integers in \[0, 3\)"
    with pytest.raises(InvalidParameterError, match=match):
        kseq(P, Q, drafts, ReplayCoins([0.2, 0.2, 0.5]))


@pytest.mark.parametrize(
    ("rho", "match"),
    [
        (-1.0, "rho must be a finite number > 0; got -1.0"),
        (0, "rho must be a finite number > 0; got 0"),
        (float("nan"), "rho must be a finite number > 0; got nan"),
        (float("inf"), "rho must be a finite number > 0; got inf"),
        (True, "rho must be a positive real number; got True"),
        ("1.4", "rho must be a positive real number; got '1.4'"),
    ],
)
def test_invalid_rho_is_refused(rho, match):
    with pytest.raises(InvalidParameterError, match=match):
        kseq(P, Q, (0, 1), ReplayCoins([0.2, 0.99, 0.5]), rho=rho)


def test_valid_overrides_still_run():
    # rho* = 7/5 on this instance (docs/theory.md §8.1): p/(1.4 q) = 5/14 at token 0.
    assert kseq(P, Q, (np.int64(0), 1), ReplayCoins([0.2, 0.99, 0.5]), rho=1.4) == 0
    # 0.4 > 5/14 rejects token 0, 0.5 < 0.4 / (1.4 * 0.3) accepts token 1.
    assert kseq(P, Q, (0, 1), ReplayCoins([0.4, 0.5, 0.5]), rho=F(7, 5)) == 1
