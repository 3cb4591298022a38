"""``ratio_order`` puts tokens with p = q = 0 first and tokens with q = 0 < p last.

Documented order (spectheory.solvers.ratio_order): tokens sorted by p/q
ascending, ``q = 0`` last, ``p = q = 0`` first.  A p = q = 0 token has no
ratio; treating 0/0 as +inf moves it behind every finite ratio, which leaves
the bound's value unchanged (the token adds nothing to p(H) or q(H)) but
breaks the documented order that the reference scans and their certificates
follow.

Oracle: the order written out by hand from the rule.
Row: p = (0.4, 0, 0.3, 0.2, 0.1), q = (0.25, 0, 0.25, 0.5, 0): ratios 1.6,
0/0, 1.2, 0.4, 0.1/0, so the order is (1, 3, 2, 0, 4).
"""

from __future__ import annotations

import numpy as np

from spectheory.solvers import ratio_order


def test_zero_zero_tokens_come_first_and_q_zero_tokens_last():
    p = np.array([[0.4, 0.0, 0.3, 0.2, 0.1], [0.25, 0.0, 0.5, 0.25, 0.0]])
    q = np.array([[0.25, 0.0, 0.25, 0.5, 0.0], [0.5, 0.0, 0.25, 0.25, 0.0]])
    # row 2: ratios 0.5, 0/0, 2, 1, 0/0 -> p = q = 0 tokens (1, 4) first, in id order
    order = ratio_order(p, q)
    assert order[0].tolist() == [1, 3, 2, 0, 4]
    assert order[1].tolist() == [1, 4, 0, 3, 2]
