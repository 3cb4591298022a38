"""The pooling rule keeps a cell whose expected count equals ``min_expected`` exactly.

Cochran's rule as documented by :func:`spectheory.sim._stats.chisquare_gof`:
cells with expected count *below* ``min_expected`` (5) are pooled.  With 20
outputs and null law (1/2, 1/4, 1/4) the expected counts are exactly 10, 5, 5
(all exact in binary floating point), so no cell is pooled and the test has
two degrees of freedom.  A ``>`` for ``>=`` in the rule pools the two cells of
expectation 5 into one, changing the statistic, the degrees of freedom and the
p-value.

Oracle: the documented rule applied by hand, and Pearson's statistic and
chi-square tail on the three unpooled cells from scipy.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from spectheory.sim._stats import chisquare_gof, pool_cells


def test_cells_at_exactly_min_expected_are_not_pooled():
    counts = [10, 8, 2]
    probs = [0.5, 0.25, 0.25]
    obs, exp = pool_cells(counts, probs, min_expected=5.0)
    assert obs.tolist() == [10.0, 8.0, 2.0]
    assert exp.tolist() == [10.0, 5.0, 5.0]


def test_chisquare_uses_the_unpooled_cells_at_the_boundary():
    counts = [10, 8, 2]
    probs = [0.5, 0.25, 0.25]
    ref = stats.chisquare(counts, [10.0, 5.0, 5.0])  # 0 + 9/5 + 9/5 = 3.6 on 2 df
    r = chisquare_gof(counts, probs, min_expected=5.0)
    assert r.df == 2 and r.cells == 3
    assert r.statistic == pytest.approx(3.6, rel=1e-12)
    assert r.pvalue == pytest.approx(float(ref.pvalue), rel=1e-9)
    assert np.isclose(float(ref.statistic), 3.6)
