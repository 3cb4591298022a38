"""The checked row, bound and dual set shared by the two-draft plans without replacement, and
the second draft's normaliser."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError


def inverse_rest(q):
    r"""\ :math:`e_a = 1 / \sum_{b \ne a} q_b`, the second draft's normaliser after ``a``.

    Summed from the rest, as the draft sampler does: for a draft with
    :math:`q_a = 1 - 10^{-5}`, ``1 - q_a`` would keep only 11 digits of it.
    """
    rest = q.sum() - q
    if q.size and q.max() > 0.5:  # at most one token; its rest is summed directly
        big = int(np.argmax(q))
        rest[big] = np.delete(q, big).sum()
    # 1 / rest overflows when the mass outside the top token is below ~5.6e-309
    # (subnormal draft masses): every pair mass q_a q_b e_a would then be inf or nan,
    # and the plan's marginal and acceptance nan.  Refuse by name instead.
    if np.any((rest > 0) & (rest < 1.0 / np.finfo(np.float64).max)):
        raise InvalidParameterError(
            "two drafts without replacement: the draft mass outside its largest token is "
            f"{float(rest[(rest > 0)].min())!r}, too small for 1 / rest in float64; the pair "
            "plans cannot represent this row (khisti or optimal_lp solve it exactly)"
        )
    return 1.0 / rest


@dataclass(frozen=True)
class PairRow:
    """One checked row and its bound for two drafts without replacement.

    Attributes
    ----------
    p, q : ndarray
        The rows as every entry point sees them (float64 or Fraction objects).
    pf, qf : ndarray
        The same in float64.
    exact : bool
        Whether ``p`` and ``q`` hold Fractions.
    support : ndarray of bool
        ``q > 0``.
    in_h : ndarray of bool
        The bound's optimal dual set :math:`H^*`.
    bound : float or Fraction
        :math:`\\alpha^*_{\\rm wor}(p, q, 2)` (exact for Fractions).
    """

    p: np.ndarray
    q: np.ndarray
    pf: np.ndarray
    qf: np.ndarray
    exact: bool
    support: np.ndarray
    in_h: np.ndarray
    bound: object


def pair_row(p, q, caller):
    """Check ``(p, q)`` as every entry point does, then solve the bound without replacement.

    The same check as :func:`spectheory.simulate`, so that the bound, a plan and a
    verifier called through ``simulate`` all see the same rows (a row renormalised
    there is used here).  ``caller`` names the function in the errors.
    """
    from .._validate import as_distribution_pair
    from .ot_dual import solve_bound

    P, Q, batched = as_distribution_pair(p, q, allow_exact=True)
    if batched:
        raise InvalidParameterError(f"{caller} takes one row; got target of shape {np.shape(p)}")
    p, q = P[0], Q[0]
    exact = p.dtype == object
    support = (np.asarray([x != 0 for x in q], dtype=bool) if exact else q != 0)
    if support.sum() < 2:
        raise InvalidParameterError(
            f"two drafts without replacement need a draft with at least two tokens; q has "
            f"{int(support.sum())}"
        )
    sol = solve_bound(p, q, 2, "without_replacement", method="enumerate" if exact else "dual")
    return PairRow(
        p=p, q=q,
        pf=np.asarray([float(x) for x in p]) if exact else p,
        qf=np.asarray([float(x) for x in q]) if exact else q,
        exact=exact, support=support,
        in_h=np.asarray(sol.certificate, dtype=bool).reshape(-1),
        bound=sol.exact_value if exact else float(np.asarray(sol.value).reshape(-1)[0]),
    )
