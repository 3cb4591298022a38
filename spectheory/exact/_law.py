r"""Exact output law and membership acceptance of a verifier, by enumeration (docs/theory.md §7.1).

For every draft tuple :math:`\bar x` of positive probability under the draft
law (:func:`._tuples.ordered_draft_law`) and every branch of every coin the
verifier flips (:func:`spectheory.coins.enumerate_outcomes`),

.. math::

    P(y) = \sum_{\bar x} P_{\text{draft}}(\bar x)\, P(y \mid \bar x), \qquad
    \alpha = \sum_{\bar x} P_{\text{draft}}(\bar x)\, P(y \in \bar x \mid \bar x).

The code enumerated is the code that samples.  Fraction inputs give exact
rational laws: a lossless verifier's law then equals the target exactly.
"""

from __future__ import annotations

import numpy as np

from ..coins import enumerate_outcomes
from ..verifiers._api import check_instance
from ._tuples import ordered_draft_law

__all__ = ["acceptance", "exact_row", "output_distribution"]


def exact_row(function, p, q, n, sampling):
    """Law of ``y`` (ndarray (V,)) and membership acceptance for one checked row.

    ``function`` is a verifier function ``fn(p, q, drafts, coins, *, sampling)``
    (registered or not, e.g. a deliberately biased variant in a test).
    """
    zero = 0 * p[0]
    law = np.full(p.shape[0], zero, dtype=p.dtype)
    acc = zero
    for drafts, weight in ordered_draft_law(q, n, sampling):
        cond = enumerate_outcomes(lambda c, d=drafts: function(p, q, d, c, sampling=sampling))
        members = set(drafts)
        for y, w in cond.items():
            law[y] = law[y] + weight * w
            if y in members:
                acc = acc + weight * w
    return law, acc


def _run(verifier, target, draft, n, sampling):
    v, p, q, batched, n, sampling = check_instance(verifier, target, draft, n, sampling)
    rows = [exact_row(v.function, p[b], q[b], n, sampling) for b in range(p.shape[0])]
    return rows, batched


def output_distribution(verifier, target, draft, n=1, sampling=None):
    """The exact law of a verifier's output token.

    Parameters
    ----------
    verifier : str or Verifier
        A registry name or record (:mod:`spectheory.verifiers`).
    target, draft : array_like, shape (V,) or (B, V)
        Target ``p`` and draft ``q``; float64, or Fraction object arrays for
        exact rational results.
    n : int
        Number of drafts.
    sampling : {"iid", "without_replacement", "greedy"}, optional
        Draft law; default the verifier's first valid law.

    Returns
    -------
    ndarray, shape (V,) or (B, V)
        float64, or Fraction objects for exact input.  Equal to ``target`` iff
        the verifier is lossless on this instance.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> import numpy as np
    >>> p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    >>> q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> [str(v) for v in output_distribution("rrs", p, q, n=2)]
    ['3/10', '2/5', '3/10']
    """
    rows, batched = _run(verifier, target, draft, n, sampling)
    out = np.array([law for law, _ in rows], dtype=rows[0][0].dtype)
    return out if batched else out[0]


def acceptance(verifier, target, draft, n=1, sampling=None):
    r"""The exact membership acceptance :math:`P(y \in \{x_1..x_n\})` of a verifier.

    Parameters are those of :func:`output_distribution`.

    Returns
    -------
    float or Fraction, or ndarray of shape (B,) for batched input.

    Examples
    --------
    docs/theory.md §8.1 (RRS with two i.i.d. drafts: 41/50; RRS without replacement: 7/8):

    >>> from fractions import Fraction as F
    >>> import numpy as np
    >>> p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    >>> q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> acceptance("rrs", p, q, n=2), acceptance("rrs_wor", p, q, n=2)
    (Fraction(41, 50), Fraction(7, 8))
    >>> round(acceptance("sd", [0.3, 0.4, 0.3], [0.6, 0.3, 0.1]), 12)
    0.7
    """
    rows, batched = _run(verifier, target, draft, n, sampling)
    if batched:
        return np.array([a for _, a in rows], dtype=rows[0][0].dtype)
    acc = rows[0][1]
    return acc if rows[0][0].dtype == object else float(acc)
