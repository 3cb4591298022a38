"""Front door for running one verifier: input checks shared with :mod:`spectheory.exact`."""

from __future__ import annotations

import numpy as np

from .._errors import InvalidParameterError, ShapeMismatchError
from .._validate import as_distribution_pair, check_choice, check_positive_int
from ..coins import RandomCoins
from ..drafting import SAMPLINGS, check_draft_support, greedy_split
from ._registry import Verifier, get_verifier

__all__ = ["check_instance", "check_verifier_law", "verify"]


def check_verifier_law(verifier, n, sampling):
    """Resolve ``verifier`` and check it supports ``n`` drafts under ``sampling``.

    ``sampling=None`` picks the verifier's first law.  Returns ``(Verifier, sampling)``.
    """
    v: Verifier = get_verifier(verifier)
    if sampling is None:
        sampling = v.samplings[0]
    check_choice(sampling, "sampling", SAMPLINGS)
    if sampling not in v.samplings:
        raise InvalidParameterError(
            f"verifier {v.name!r} is not valid for sampling={sampling!r}; it supports "
            f"{', '.join(map(repr, v.samplings))}"
        )
    if v.n_values is not None and n not in v.n_values:
        raise InvalidParameterError(f"verifier {v.name!r} needs n in {v.n_values}; got n={n}")
    return v, sampling


def check_instance(verifier, target, draft, n, sampling):
    """Validate a verifier call; return ``(Verifier, p, q, batched, n, sampling)``.

    ``p`` and ``q`` have shape (B, V) (float64, or Fraction object arrays when
    either input is exact).  ``sampling=None`` picks the verifier's first law.
    """
    n = check_positive_int(n, "n")
    v, sampling = check_verifier_law(verifier, n, sampling)
    p, q, batched = as_distribution_pair(target, draft, allow_exact=True)
    check_draft_support(q, n, sampling, batched)
    return v, p, q, batched, n, sampling


def _check_drafts(v, q, drafts, sampling, row):
    V = q.shape[0]
    where = f" (row {row})" if row is not None else ""
    for x in drafts:
        if not 0 <= x < V:
            raise InvalidParameterError(f"drafts{where} holds token {x}, outside [0, {V})")
    if not v.needs_draft_law:
        return
    if sampling == "greedy":
        T, qt = greedy_split(q, len(drafts))
        ok = tuple(drafts[:-1]) == tuple(int(t) for t in T) and qt[drafts[-1]] > 0
    else:
        ok = all(q[x] > 0 for x in drafts)
        if sampling == "without_replacement":
            ok = ok and len(set(drafts)) == len(drafts)
    if not ok:
        raise InvalidParameterError(
            f"drafts{where}={drafts!r} has probability 0 under sampling={sampling!r} "
            f"with this draft distribution; verifier {v.name!r} needs drafts drawn from it"
        )


def verify(verifier, target, draft, drafts, rng=None, *, sampling=None):
    """Run a verifier once on sampled drafts and return the output token.

    Parameters
    ----------
    verifier : str or Verifier
        A registry name (:data:`~spectheory.verifiers.REGISTRY`) or a record.
    target, draft : array_like, shape (V,) or (B, V)
        Target ``p`` and draft ``q`` (float, or Fraction object arrays).
    drafts : array_like of int, shape (n,) or (B, n)
        Draft tokens in draw order, e.g. from :func:`spectheory.sample_drafts`.
    rng : numpy.random.Generator, int or None
        Randomness, used through :class:`~spectheory.coins.RandomCoins`.
    sampling : {"iid", "without_replacement", "greedy"}, optional
        The law the drafts were drawn from; default the verifier's first law.

    Returns
    -------
    int, or ndarray of int64 of shape (B,) for batched input.

    Examples
    --------
    >>> verify("rrs", [0.3, 0.4, 0.3], [0.6, 0.3, 0.1], [2, 2], rng=0)
    2
    """
    arr = np.asarray(drafts)
    if arr.ndim not in (1, 2) or arr.shape[-1] == 0 or arr.dtype.kind not in "iu":
        raise InvalidParameterError(
            f"drafts must be a non-empty integer array of shape (n,) or (B, n); "
            f"got dtype {arr.dtype} and shape {arr.shape}"
        )
    v, p, q, batched, _, sampling = check_instance(verifier, target, draft, arr.shape[-1], sampling)
    rows = arr if arr.ndim == 2 else arr[None]
    if rows.shape[0] != p.shape[0] or batched != (arr.ndim == 2):
        raise ShapeMismatchError(
            f"drafts of shape {arr.shape} do not match target rows of shape {p.shape}"
        )
    coins = RandomCoins(rng)
    out = np.empty(p.shape[0], dtype=np.int64)
    for b in range(p.shape[0]):
        d = tuple(int(x) for x in rows[b])
        _check_drafts(v, q[b], d, sampling, b if batched else None)
        out[b] = v.function(p[b], q[b], d, coins, sampling=sampling)
    return out if batched else int(out[0])
