"""Front door for running one verifier: input checks shared with :mod:`spectheory.exact`."""

from __future__ import annotations

import numpy as np

from .._errors import InvalidParameterError, ShapeMismatchError, SpecTheoryError, VerifierError
from .._validate import as_distribution_pair, check_choice, check_positive_int, check_rng
from ..coins import RandomCoins
from ..drafting import SAMPLINGS, check_draft_support, greedy_split
from ._registry import REGISTRY, Verifier, as_verifier

__all__ = ["check_instance", "check_token", "check_verifier_law", "laws_to_check", "verify"]


def check_verifier_law(verifier, n, sampling):
    """Resolve ``verifier`` and check it supports ``n`` drafts under ``sampling``.

    ``verifier`` is a registry name, a :class:`Verifier` or a function (its
    protocol read from its signature, :func:`~._registry.as_verifier`).
    ``sampling=None`` picks the verifier's first law (``"iid"`` for a plain
    function).  Returns ``(Verifier, sampling)``.
    """
    v: Verifier = as_verifier(verifier)
    if sampling is None:
        sampling = v.samplings[0]
    check_choice(sampling, "sampling", SAMPLINGS)
    if sampling not in v.samplings:
        raise InvalidParameterError(
            f"verifier {v.name!r} is not valid for sampling={sampling!r}; it supports "
            f"{', '.join(map(repr, v.samplings))}"
        )
    allowed = v.n_values_for(sampling)
    if allowed is not None and n not in allowed:
        # Name the registered verifiers that do take this n, so a refusal leads somewhere.
        others = [name for name, rec in REGISTRY.items()
                  if rec.lossless and rec.supports(n, sampling)]
        raise InvalidParameterError(
            f"verifier {v.name!r} needs n in {allowed} with sampling={sampling!r}; got n={n}"
            + (f" (registered lossless verifiers that take it: {', '.join(others)})"
               if others else "")
        )
    return v, sampling


def laws_to_check(verifier, n, sampling):
    """``(Verifier, laws)``: ``[sampling]``, or with ``sampling=None`` each law claimed for ``n``.

    A losslessness check must not pass a verifier on one of its laws alone;
    :func:`spectheory.check_lossless`, the ``spectheory check`` command and the
    assertions of :mod:`spectheory.testing` take their laws from here.
    """
    if sampling is not None:
        v, first = check_verifier_law(verifier, n, sampling)
        return v, [first]
    # every claimed law that takes n: the first law need not be one of them
    v = as_verifier(verifier)
    laws = [law for law in v.samplings if v.supports(n, law)]
    if not laws:
        check_verifier_law(v, n, None)  # raises, naming the n the first law takes
    return v, laws


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


def verify(verifier, target, draft, drafts, rng=None, *, sampling=None, seed=None):
    """Run a verifier once on sampled drafts and return the output token.

    Parameters
    ----------
    verifier : str, Verifier or function
        A registry name (:data:`~spectheory.verifiers.REGISTRY`), a record, or
        a function on the coins protocol ``fn(p, q, drafts, coins, *,
        sampling)`` or the black-box one ``fn(target, draft, drafts, rng)``.
    target, draft : array_like, shape (V,) or (B, V)
        Target ``p`` and draft ``q`` (float, or Fraction object arrays).
    drafts : array_like of int, shape (n,) or (B, n)
        Draft tokens in draw order, e.g. from :func:`spectheory.sample_drafts`.
    rng : numpy.random.Generator, int or None
        Randomness (:func:`spectheory._validate.check_rng`), used through
        :class:`~spectheory.coins.RandomCoins` (or passed to a black box).
    sampling : {"iid", "without_replacement", "greedy"}, optional
        The law the drafts were drawn from; default the verifier's first law.
    seed : optional
        Alias of ``rng``, as in :func:`spectheory.simulate` and
        :func:`spectheory.check_lossless`; pass one of the two.

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
    if seed is not None:
        if rng is not None:
            raise InvalidParameterError("pass rng or seed (an alias of rng), not both")
        gen = check_rng(seed, "seed")
    else:
        gen = check_rng(rng)
    coins = RandomCoins(gen)
    out = np.empty(p.shape[0], dtype=np.int64)
    for b in range(p.shape[0]):
        d = tuple(int(x) for x in rows[b])
        row = b if batched else None
        _check_drafts(v, q[b], d, sampling, row)
        out[b] = call_verifier(v, p[b], q[b], d, coins if v.protocol == "coins" else gen,
                               sampling, row)  # fmt: skip
    return out if batched else int(out[0])


def read_only(a):
    """A read-only view of the array ``a`` (anything else as is).

    The rows passed to a verifier are shared by every trial (and every enumerated coin
    path): one that modified them in place (``q[x] = 0; q /= q.sum()``) corrupted the
    later trials, which failed far away or, worse, returned plausible numbers.  A view
    costs no copy, and numpy refuses the write at the verifier's own line.
    """
    if not isinstance(a, np.ndarray):
        return a
    view = a.view()
    view.flags.writeable = False
    return view


def verifier_raised(name, exc, where="") -> VerifierError:
    """The :class:`VerifierError` for a verifier ``name`` that raised ``exc`` (not chained).

    A write to its read-only inputs (:func:`read_only`) is named as such: the verifier
    must copy ``p`` and ``q`` before modifying them.
    """
    hint = ""
    if isinstance(exc, ValueError) and "read-only" in str(exc):
        hint = (
            "; a verifier must not modify its inputs p and q in place (they are shared "
            "by every trial): work on a copy, e.g. q = q.copy()"
        )
    return VerifierError(f"verifier {name!r} raised {type(exc).__name__}: {exc}{where}{hint}")


def raised_by_coins(exc) -> bool:
    """Whether ``exc`` was raised inside :mod:`spectheory.coins` (a coin given bad arguments)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_globals.get("__name__") == "spectheory.coins"


def call_verifier(v, p, q, drafts, randomness, sampling, row=None):
    """One run of a verifier record by its protocol; the output checked to be a token of the row.

    Parameters
    ----------
    v : Verifier
    p, q : ndarray (V,)
    drafts : sequence of int
    randomness : Coins (coins protocol) or numpy.random.Generator (black box)
    sampling : str
    row : int, optional
        Named in error messages.

    Returns
    -------
    int

    Raises
    ------
    VerifierError
        The verifier raised an exception that is not a spectheory error: the
        message names the verifier, the row and the drafts, and the original
        exception is chained (a user's bug is reported, not mistaken for ours).
    InvalidParameterError
        It returned something other than a token id in ``[0, V)``.
    """
    try:
        if v.protocol == "coins":
            y = v.function(read_only(p), read_only(q), tuple(int(x) for x in drafts),
                           randomness, sampling=sampling)  # fmt: skip
        else:
            y = v.function(read_only(np.asarray(p, dtype=np.float64)),
                           read_only(np.asarray(q, dtype=np.float64)),
                           np.array(drafts, dtype=np.int64), randomness)  # fmt: skip
    except Exception as exc:
        if isinstance(exc, SpecTheoryError) and not raised_by_coins(exc):
            raise
        # a coin refusing the verifier's arguments (NaN or negative probabilities) is the
        # verifier's bug too: name it, the row and the drafts
        where = f" on row {row}" if row is not None else ""
        where += f" (drafts {tuple(int(x) for x in drafts)})"
        if v.protocol == "blackbox" and isinstance(exc, AttributeError) and any(
            f"'{call}'" in str(exc) for call in ("bernoulli", "categorical")
        ):
            # a coins verifier written without the `sampling` keyword reads as a black box
            # and is handed a numpy Generator: say why, not only that a Generator has no coin
            where += (
                "; it was called as a black box fn(target, draft, drafts, rng) with a numpy "
                "Generator because its signature has no `sampling` keyword: a coins-protocol "
                "verifier is fn(p, q, drafts, coins, *, sampling)"
            )
        raise verifier_raised(v.name, exc, where) from exc
    return check_token(y, p.shape[0], v.name, row)


def check_token(y, V, name, row=None):
    """``y`` as an int token in [0, V), or raise naming the verifier and the row."""
    where = f" on row {row}" if row is not None else ""
    if isinstance(y, bool | np.bool_) or not isinstance(y, int | np.integer) or not 0 <= y < V:
        raise InvalidParameterError(
            f"verifier {name!r} returned {y!r}{where}; a verifier must return a token id "
            f"(an integer) in [0, {V})"
        )
    return int(y)
