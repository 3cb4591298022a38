"""Verifiers planted by the tests: lossy under some draft laws only (no tests here)."""

from __future__ import annotations

import numpy as np


def first_draft_sd(p, q, drafts, coins, *, sampling="iid"):
    """Single-draft sampling on ``drafts[0]``, whatever the law.

    Lossless for i.i.d. drafts and without replacement (the first draft is a
    draw from q), lossy for greedy drafts with n >= 2 (the argmax of q comes
    first).  An undecorated function claims every draft law, so a check of the
    first law alone passes it.
    """
    x = drafts[0]
    if coins.bernoulli(min(1, p[x] / q[x])):
        return x
    rest = np.maximum(p - q, 0 * p[0])
    return coins.categorical(rest / rest.sum())
