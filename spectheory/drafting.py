r"""Draft laws: how ``n`` draft tokens are drawn from the draft distribution ``q``.

Three laws (docs/theory.md §2.1), named by ``sampling=``:

``"iid"``
    ``n`` independent draws from ``q`` (with replacement).
    :math:`Q(H) = q(H)^n`.
``"without_replacement"``
    Sequential draws, each from ``q`` renormalised over the tokens not drawn
    yet (equivalently Gumbel-top-``n``).  Needs at least ``n`` tokens with
    ``q > 0``.  :math:`Q(H)` has no product form (section 2.5).
``"greedy"``
    Hu et al. (arXiv 2502.18779): the ``n - 1`` most likely draft tokens
    ``T`` (ties to the lowest id) plus one token from
    :math:`\tilde q = q\,\mathbb 1[\cdot\notin T] / (1 - q(T))`.
    :math:`Q(H) = \tilde q(H \setminus T)` if :math:`T \subseteq H`, else 0.

Here :math:`Q(H) = P(\text{all } n \text{ drafts lie in } H)`, the quantity the
dual of the optimal-transport problem needs (:mod:`spectheory.solvers.ot_dual`).

The functions in this module are reference implementations: exact on
:class:`fractions.Fraction` inputs and exponential in ``n`` where they
enumerate.  The fast all-prefix computations live in the solvers.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ._errors import InstanceTooLargeError, InvalidParameterError
from ._validate import as_distribution, check_choice, check_positive_int, check_rng

__all__ = [
    "SAMPLINGS",
    "check_draft_support",
    "draft_set_law",
    "draft_set_probability",
    "greedy_split",
    "sample_drafts",
    "set_law_row",
    "set_probability_row",
    "top_tokens",
]

#: The draft laws understood by every ``sampling=`` argument.
SAMPLINGS = ("iid", "without_replacement", "greedy")

#: Largest enumeration (draft sets for :func:`draft_set_law`, ordered draws for
#: :func:`draft_set_probability` without replacement) the reference functions accept.
MAX_ENUMERATION = 1_000_000
#: Largest i.i.d. ``n`` the reference enumerations accept.
MAX_IID_ENUMERATION_N = 64


def _check_enumeration(support: int, n: int, sampling: str, what: str) -> None:
    """Refuse reference enumerations that would hang or exhaust memory."""
    if sampling == "greedy":
        return
    # i.i.d. multisets C(s + n - 1, n), each weighted with n! / prod(m_i!);
    # ordered draws without replacement s! / (s - n)!.  n itself is bounded
    # first so that math.comb and the factorials stay cheap.
    if sampling == "iid" and n > MAX_IID_ENUMERATION_N:
        raise InstanceTooLargeError(
            f"{what} refuses n={n} with sampling='iid' (limit n <= {MAX_IID_ENUMERATION_N})"
        )
    count = math.comb(support + n - 1, n) if sampling == "iid" else math.perm(support, n)
    if count > MAX_ENUMERATION:
        raise InstanceTooLargeError(
            f"{what} refuses n={n}, sampling={sampling!r} on {support} tokens: {count} "
            f"{'draft sets' if sampling == 'iid' else 'ordered draws'} (limit {MAX_ENUMERATION})"
        )


def top_tokens(q, m: int) -> np.ndarray:
    """The ``m`` most likely tokens of the 1-D distribution ``q``, ties to the lowest id."""
    q = np.asarray(q)
    if q.dtype == object:
        # Exact values, not float(v): Fractions closer than float resolution (or below
        # its range, where float(v) == 0.0 ties with a true zero) must keep their order.
        order = sorted(range(q.size), key=lambda i: -q[i])  # stable: ties to the lowest id
        return np.array(order[: max(m, 0)], dtype=np.int64)
    if m >= q.size:
        return np.argsort(-q, kind="stable")[:m]
    if m <= 0:
        return np.zeros(0, dtype=np.int64)
    # O(V): the m-th largest value, every token above it, then the lowest ids equal to it.
    thr = np.partition(q, q.size - m)[q.size - m]
    above = np.flatnonzero(q > thr)
    sel = np.concatenate([above, np.flatnonzero(q == thr)[: m - above.size]])
    return sel[np.argsort(-q[sel], kind="stable")]


def check_draft_support(q_rows, n: int, sampling: str, batched: bool) -> None:
    """Raise if a row has fewer than ``n`` tokens with ``q > 0`` under a law that needs them.

    Without replacement draws ``n`` distinct tokens; greedy needs mass outside
    its ``n - 1`` fixed tokens.  i.i.d. drafting has no such requirement.
    """
    if sampling == "iid":
        return
    support = np.count_nonzero(q_rows != 0, axis=1)
    short = support < n
    if short.any():
        r = int(np.argmax(short))
        where = f" row {r}" if batched else ""
        raise InvalidParameterError(
            f"n={n} is larger than the support of draft{where} ({support[r]} tokens with "
            f"probability > 0); sampling={sampling!r} needs at least n such tokens"
        )


def greedy_split(q, n: int):
    """The greedy law's fixed set ``T`` (top ``n - 1``) and the law ``q_tilde`` of the last draft.

    Returns ``(T, q_tilde)`` with ``T`` an int array of length ``n - 1`` and
    ``q_tilde`` of the same dtype as ``q`` (exact for Fraction input).
    """
    q = np.asarray(q)
    T = top_tokens(q, n - 1)
    rest = q.copy()
    rest[T] = 0
    total = rest.sum()
    return T, rest / total


def set_law_row(q, n, sampling):
    """Membership classes of one row: dict frozenset -> probability (exact for Fractions).

    Refuses (:class:`~spectheory.InstanceTooLargeError`) enumerations beyond
    :data:`MAX_ENUMERATION`, whoever the caller: the transport-LP verifiers at a
    real vocabulary would otherwise build billions of draft sets in memory.
    """
    support = [int(i) for i in np.flatnonzero(q != 0)]
    _check_enumeration(len(support), n, sampling, "the draft-set law")
    law: dict[frozenset, object] = {}
    if sampling == "iid":
        for combo in itertools.combinations_with_replacement(support, n):
            counts: dict[int, int] = {}
            for i in combo:
                counts[i] = counts.get(i, 0) + 1
            coef = math.factorial(n)
            prob = 1
            for i, m in counts.items():
                coef //= math.factorial(m)
                prob = prob * q[i] ** m
            key = frozenset(counts)
            law[key] = law.get(key, 0) + coef * prob
    elif sampling == "without_replacement":

        def rec(prefix, prob):
            if len(prefix) == n:
                key = frozenset(prefix)
                law[key] = law.get(key, 0) + prob
                return
            rest = _rest_mass(q, support, prefix)
            for i in support:
                if i not in prefix:
                    rec((*prefix, i), prob * q[i] / rest)

        rec((), 1)
    else:
        T, qt = greedy_split(q, n)
        base = frozenset(int(t) for t in T)
        for i in np.flatnonzero(qt != 0):
            law[base | {int(i)}] = qt[i]
    return law


def draft_set_law(draft, n: int = 1, sampling: str = "iid") -> dict:
    r"""The law of the *set* of draft tokens, which is all that membership acceptance sees.

    Parameters
    ----------
    draft : array_like, shape (V,)
        Draft distribution ``q``; a Fraction object array gives exact probabilities.
    n : int
        Number of drafts.
    sampling : {"iid", "without_replacement", "greedy"}

    Returns
    -------
    dict
        ``frozenset of token ids -> probability``.

    Raises
    ------
    InstanceTooLargeError
        Beyond :data:`MAX_ENUMERATION` draft sets (i.i.d.) or ordered draws
        (without replacement).  i.i.d. classes merge the
        multisets with the same support: :math:`C(V+n-1, n)` multisets.

    Examples
    --------
    >>> law = draft_set_law([0.5, 0.5], n=2, sampling="iid")
    >>> {tuple(sorted(k)): float(v) for k, v in law.items()}
    {(0,): 0.25, (0, 1): 0.5, (1,): 0.25}
    """
    q, _ = as_distribution(draft, "draft", allow_exact=True)
    if q.shape[0] != 1:
        raise InvalidParameterError("draft_set_law takes one distribution of shape (V,)")
    n = check_positive_int(n, "n")
    check_choice(sampling, "sampling", SAMPLINGS)
    check_draft_support(q, n, sampling, batched=False)
    _check_enumeration(int(np.count_nonzero(q[0] != 0)), n, sampling, "draft_set_law")
    return set_law_row(q[0], n, sampling)


def _rest_mass(q, support, used):
    """Draft mass of the tokens not drawn yet, summed over them.

    Not ``1 - q(used)``: for a peaked draft (``q_max = 1 - 1e-12``) that
    difference cancels to a few digits and the law no longer sums to 1
    (exact either way on Fraction input).
    """
    total = 0 * q[support[0]]
    for i in support:
        if i not in used:
            total += q[i]
    return total


def _wor_prob_in(qH, q_all_used, n, q):
    """Q(H) without replacement by recursion (reference, O(|H|^n))."""

    support = [int(i) for i in np.flatnonzero(q != 0)]

    def rec(depth, used):
        if depth == n:
            return 1
        total = 0
        rest = _rest_mass(q, support, used)
        for i in qH:
            if i not in used:
                total += q[i] / rest * rec(depth + 1, used | {i})
        return total

    return rec(0, frozenset())


def draft_set_probability(draft, H, n: int = 1, sampling: str = "iid"):
    r""":math:`Q(H) = P(\text{all } n \text{ drafts lie in } H)` for one draft distribution.

    Reference implementation; exact for Fraction input.  Without replacement
    it enumerates ordered draws, :math:`O(|H|^n)` (docs/theory.md §2.5(a)).

    Parameters
    ----------
    draft : array_like, shape (V,)
    H : array_like of bool, shape (V,), or a flat sequence of token ids in [0, V)
    n : int
    sampling : {"iid", "without_replacement", "greedy"}

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> draft_set_probability(q, [0, 1], n=2, sampling="without_replacement")
    Fraction(99, 140)
    """
    q, _ = as_distribution(draft, "draft", allow_exact=True)
    if q.shape[0] != 1:
        raise InvalidParameterError("draft_set_probability takes one distribution of shape (V,)")
    q = q[0]
    n = check_positive_int(n, "n")
    check_choice(sampling, "sampling", SAMPLINGS)
    check_draft_support(q[None], n, sampling, batched=False)
    members = _check_token_set(H, q.shape[0])
    if sampling == "without_replacement":
        inside = sum(1 for i in members if q[i] != 0)
        _check_enumeration(inside, n, sampling, "draft_set_probability")
    return set_probability_row(q, members, n, sampling)


def _check_token_set(H, V):
    """Token ids of ``H``: a bool mask of shape (V,) or a flat sequence of ids in [0, V)."""
    try:
        arr = np.asarray(H)
    except (TypeError, ValueError) as exc:  # ragged nested lists
        raise InvalidParameterError(f"H cannot be read as token ids: {exc}") from None
    if arr.dtype == bool:
        if arr.shape != (V,):
            raise InvalidParameterError(f"H as a mask must have shape ({V},); got {arr.shape}")
        return [int(i) for i in np.flatnonzero(arr)]
    if arr.ndim != 1:
        raise InvalidParameterError(
            f"H must be a mask of shape ({V},) or a flat sequence of token ids; got shape "
            f"{arr.shape}"
        )
    members = set()
    for v in arr.tolist():
        # Only true integers: 1.7 was truncated to 1, -1 wrapped to the last token.
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < V:
            raise InvalidParameterError(f"H holds {v!r}; token ids must be integers in [0, {V})")
        members.add(v)
    return sorted(members)


def set_probability_row(q, members, n, sampling, greedy_T=None):
    """Q(H) for one checked row ``q`` and a list of token ids ``members`` (no validation).

    ``greedy_T`` may pass a precomputed :func:`greedy_split` to save work in loops.
    """
    inside = [i for i in members if q[i] != 0]
    zero = 0 * q[0]
    if sampling == "iid":
        return sum((q[i] for i in inside), zero) ** n
    if sampling == "greedy":
        T, qt = greedy_T if greedy_T is not None else greedy_split(q, n)
        fixed = set(int(t) for t in T)
        if not fixed <= set(members):
            return zero
        return sum((qt[i] for i in inside if i not in fixed), zero)
    if len(inside) < n:
        return zero
    return _wor_prob_in(inside, q[0], n, q)


def sample_drafts(draft, n: int = 1, sampling: str = "iid", rng=None) -> np.ndarray:
    """Draw ``n`` draft tokens from ``draft`` under a draft law.

    Parameters
    ----------
    draft : array_like, shape (V,) or (B, V)
    n : int
    sampling : {"iid", "without_replacement", "greedy"}
    rng : numpy.random.Generator, SeedSequence, int >= 0 or None
        Source of randomness (checked by :func:`spectheory._validate.check_rng`).

    Returns
    -------
    ndarray of int64, shape (n,) or (B, n)
        Draft tokens in draw order.  Without replacement they are distinct;
        greedy puts the ``n - 1`` fixed tokens first (descending ``q``) and the
        random one last.

    Examples
    --------
    >>> sample_drafts([0.0, 1.0], n=3, rng=0).tolist()
    [1, 1, 1]
    """
    q, batched = as_distribution(draft, "draft")
    n = check_positive_int(n, "n")
    check_choice(sampling, "sampling", SAMPLINGS)
    check_draft_support(q, n, sampling, batched)
    rng = check_rng(rng, "rng")
    B, V = q.shape
    out = np.empty((B, n), dtype=np.int64)
    for b in range(B):
        if sampling == "iid":
            out[b] = rng.choice(V, size=n, replace=True, p=q[b])
        elif sampling == "without_replacement":
            # Gumbel-top-n: descending perturbed log-probabilities are the
            # order of sequential draws without replacement.
            with np.errstate(divide="ignore"):
                keys = np.log(q[b]) + rng.gumbel(size=V)
            out[b] = np.argsort(-keys, kind="stable")[:n]
        else:
            T, qt = greedy_split(q[b], n)
            out[b, : n - 1] = T
            out[b, n - 1] = rng.choice(V, p=qt)
    return out if batched else out[0]
