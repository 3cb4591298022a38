"""Arithmetic shared by the verifiers, identical on float64 and on Fraction object arrays.

Only ``+ - * /``, ``min``, ``max`` and comparisons are used, so rational
input stays rational (docs/theory.md §7.1).
"""

from __future__ import annotations

import numpy as np

__all__ = ["accept_prob", "normalise_or", "positive_part", "residual", "zero"]


def zero(v):
    """The zero of ``v``'s arithmetic (``0.0`` or ``Fraction(0)``)."""
    return 0 * v[0]


def positive_part(v):
    """:math:`(v)_+ = \\max(v, 0)` elementwise."""
    return np.maximum(v, zero(v))


def normalise_or(v, fallback):
    """``v / sum(v)``, or ``fallback`` when ``v`` has no mass.

    The fallback is reached only on a branch of probability zero whose
    probability rounding made a few ulps positive (float input); exact input
    never reaches it.
    """
    total = v.sum()
    if total > 0:
        return v / total
    return fallback


def residual(r, q):
    """:math:`\\mathrm{norm}((r - q)_+)`, the law sampled after a rejection (docs/theory.md §1.1).

    When ``r == q`` up to rounding the rejection has probability zero and
    ``r`` itself is returned.
    """
    return normalise_or(positive_part(r - q), r)


def accept_prob(num, den):
    """:math:`\\min(1, \\text{num}/\\text{den})`; 0 when ``den`` is 0.

    ``den`` is the draft's probability of the drafted token (times a constant):
    a token the draft gives probability 0 cannot have been drafted, so it is
    rejected, whatever the target says (as vLLM and FlashInfer do; accepting
    it would emit a token of target probability 0 when ``num`` is 0 too).
    """
    if den > 0:
        if num >= den:  # compare first: num / den overflows for den ~ 1e-310
            return 1 + 0 * num
        return num / den
    return 0 * num
