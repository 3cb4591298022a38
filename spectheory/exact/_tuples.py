r"""The ordered law of the draft tuple :math:`(x_1..x_n)` under each draft law (docs/theory.md §2.1).

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
    count = len(support) ** n
    if count > MAX_TUPLES:
        raise InstanceTooLargeError(
            f"enumerating draft tuples refuses {len(support)}^{n} = {count} tuples "
            f"(limit {MAX_TUPLES})"
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
    out = []
    for t in itertools.permutations(support, n):
        w, used = one, 0 * q[0]
        for x in t:
            w = w * q[x] / (1 - used)
            used = used + q[x]
        out.append((t, w))
    return out
