r"""The ordered law of the draft tuple :math:`(x_1..x_n)` under each draft law
(docs/theory.md §2.1).

``iid``
    :math:`\prod_j q(x_j)` over :math:`\mathrm{supp}(q)^n`.
``without_replacement``
    :math:`\prod_j q(x_j)/(1 - \sum_{l<j} q(x_l))` over ordered distinct tuples.
``greedy``
    The ``n - 1`` top tokens of ``q`` in descending ``q`` (ties to the lowest
    id), then :math:`x \sim \tilde q`: probability :math:`\tilde q(x)`.

The order is the draw order of :func:`spectheory.drafting.sample_drafts`.
Exact (Fraction in, Fraction out).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .._errors import InstanceTooLargeError
from ..drafting import greedy_split

__all__ = ["MAX_TUPLES", "ordered_draft_law"]

#: Largest number of draft tuples enumerated.
MAX_TUPLES = 200_000


def ordered_draft_law(q, n: int, sampling: str) -> list:
    """Every draft tuple of positive probability, with its probability.

    Parameters
    ----------
    q : ndarray, shape (V,)
        Checked draft row (float64 or Fraction object array).
    n : int
    sampling : {"iid", "without_replacement", "greedy"}

    Returns
    -------
    list of (tuple of int, probability)

    Examples
    --------
    >>> import numpy as np
    >>> from fractions import Fraction as F
    >>> q = np.array([F(1, 2), F(1, 4), F(1, 4)], dtype=object)
    >>> [(t, str(w)) for t, w in ordered_draft_law(q, 2, "without_replacement")][:2]
    [((0, 1), '1/4'), ((0, 2), '1/4')]
    >>> [(t, str(w)) for t, w in ordered_draft_law(q, 2, "greedy")]
    [((0, 1), '1/2'), ((0, 2), '1/2')]
    """
    support = [int(i) for i in np.flatnonzero(q != 0)]
    if sampling == "greedy":
        T, qt = greedy_split(q, n)
        head = tuple(int(t) for t in T)
        return [((*head, int(x)), qt[x]) for x in np.flatnonzero(qt != 0)]
    # Compare logarithms first: len(support) ** n is a huge integer for huge n.
    if n * math.log(max(len(support), 1)) > math.log(MAX_TUPLES) + 1e-9:
        raise InstanceTooLargeError(
            f"enumerating draft tuples refuses {len(support)}^{n} tuples (limit {MAX_TUPLES})"
        )
    one = 1 + 0 * q[0]
    if sampling == "iid":
        out = []
        for t in itertools.product(support, repeat=n):
            w = one
            for x in t:
                w = w * q[x]
            out.append((t, w))
        return out
    # Each draw is renormalised by the mass left, summed over the tokens left:
    # 1 - q(used) cancels for peaked drafts (q_max = 1 - 1e-12 lost 5 digits).
    total = sum((q[i] for i in support), 0 * q[0])
    out = []
    for t in itertools.permutations(support, n):
        w, used = one, 0 * q[0]
        for x in t:
            w = w * q[x] / (total - used if used * 2 <= total else _rest(q, support, t, x))
            used = used + q[x]
        out.append((t, w))
    return out


def _rest(q, support, t, x):
    """Mass of the support outside the draws of ``t`` before ``x``, summed term by term."""
    drawn = set(t[: t.index(x)])
    return sum((q[i] for i in support if i not in drawn), 0 * q[0])
