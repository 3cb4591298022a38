"""The exact re-solve of the pair scores with a score gap just inside the ramp's window
.

``_exact_scores`` fixes the pattern of the float scores (which pairs lie in the window
|mu_a - mu_b| < 1) and solves the tight tokens' linear equations y_a(mu) = p_a in
Fractions; a gap within 1e-9 of the window's edge is taken as inside.  Construction: exact
scores with a gap of 1 - 1e-10 (inside), p := the exact marginal there
(``pair_score_marginal`` on Fractions, the O(V^2) pair sum: the oracle), then the re-solve
from the rounded float scores must give scores whose exact marginal is p again.  Treating
the near-edge pair as outside the window solves another system, whose scores miss p.
"""

from fractions import Fraction as F

import numpy as np

from spectheory.solvers.pair_scores import _exact_scores, pair_score_marginal


def test_exact_resolve_keeps_a_pair_just_inside_the_window():
    q = np.array([F(1, 2), F(1, 4), F(1, 4)], dtype=object)
    preferred = np.zeros(3, dtype=bool)
    for gap in (1 - F(1, 10**10), 1 - F(1, 10**12), F(1)):
        mu = np.array([F(0), gap, F(1, 2)], dtype=object)
        p = pair_score_marginal(q, preferred, mu)
        assert sum(p) == 1
        mu_float = np.array([float(x) for x in mu])
        exact = _exact_scores(p, q, preferred, mu_float)
        assert exact is not None
        y = pair_score_marginal(q, preferred, exact)
        assert list(y) == list(p), (gap, [str(x) for x in exact])
