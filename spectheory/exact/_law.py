r"""Exact output law and membership acceptance of a verifier, by enumeration (docs/theory.md §7.1).

For every draft tuple :math:`\bar x` of positive probability under the draft
law (:func:`._tuples.ordered_draft_law`) and every branch of every coin the
verifier flips (:func:`spectheory.coins.enumerate_outcomes`),

.. math::

    P(y) = \sum_{\bar x} P_{\text{draft}}(\bar x)\, P(y \mid \bar x), \qquad
    \alpha = \sum_{\bar x} P_{\text{draft}}(\bar x)\, P(y \in \bar x \mid \bar x).

The code enumerated is the code that samples.  Fraction inputs give exact
rational laws: a lossless verifier's law then equals the target exactly.

Size
----
Enumeration runs the verifier once per leaf of its coin tree per draft
tuple: about :math:`s^n (n + V)` runs for i.i.d. drafts over a support of
``s`` tokens, exponential in ``n``.  Above :data:`MAX_CALLS` estimated runs it
is refused up front (and a coin tree that turns out bigger is stopped there):
:func:`acceptance` then uses the verifier's closed form where it has one
(docs/theory.md §3.0), and otherwise both functions raise
:class:`~spectheory.InstanceTooLargeError` naming the Monte Carlo tools to use
instead (:func:`spectheory.simulate`, :func:`spectheory.check_lossless`,
:func:`spectheory.sim.replay.replay`).  Only coins-protocol verifiers can be
enumerated: a black-box ``fn(target, draft, drafts, rng)`` draws from a numpy
Generator whose branches cannot be followed, and is refused with a clear error.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._errors import InstanceTooLargeError, InvalidParameterError, SpecTheoryError, VerifierError
from ..coins import NotDeterministicError, enumerate_outcomes
from ..drafting import greedy_split
from ..verifiers._api import check_instance, raised_by_coins, read_only, verifier_raised
from ._tuples import ordered_draft_law

__all__ = ["MAX_CALLS", "acceptance", "exact_row", "output_distribution"]

#: Most verifier runs (draft tuples x coin-tree leaves) one exact row may take:
#: a few seconds of float64 work at small V.
MAX_CALLS = 200_000


def _log_tuples(q, n, sampling) -> float:
    """log of the number of draft tuples of positive probability (no big integers)."""
    s = int(np.count_nonzero(q != 0))
    if sampling == "greedy":
        return math.log(max(1, int(np.count_nonzero(greedy_split(q, n)[1] != 0))))
    if sampling == "iid":
        return n * math.log(max(s, 1))
    if n > s:
        return -math.inf
    return math.lgamma(s + 1) - math.lgamma(s - n + 1)  # s! / (s - n)!


def estimated_calls(q, n, sampling) -> float:
    """Estimated verifier runs to enumerate one row: tuples x (n + V) coin-tree leaves."""
    log = _log_tuples(q, n, sampling) + math.log(n + q.shape[0])
    return math.exp(min(log, 700.0))


def _too_large(v, V, n, sampling, calls, closed):
    tail = (
        f"its closed form spectheory.exact.CLOSED_FORMS[{v.name!r}] gives the acceptance; "
        if closed
        else ""
    )
    return InstanceTooLargeError(
        f"exact enumeration of verifier {v.name!r} at V = {V}, n = {n}, sampling={sampling!r} "
        f"would take about {calls:.3g} verifier runs (limit spectheory.exact.MAX_CALLS = "
        f"{MAX_CALLS}); {tail}use the Monte Carlo tools instead: spectheory.simulate, "
        "spectheory.check_lossless, or spectheory.sim.replay.replay for a trace"
    )


def _require_coins(v):
    if v.protocol != "coins":
        raise InvalidParameterError(
            f"verifier {v.name!r} is a black box fn(target, draft, drafts, rng): it draws from a "
            "numpy Generator whose branches cannot be enumerated, so it has no exact law; write "
            "it on the coins protocol fn(p, q, drafts, coins, *, sampling) (spectheory.coins), or "
            "test it statistically with spectheory.check_lossless"
        )


def _require_exact(function, drafts, cond):
    """Refuse a law that left rational arithmetic on Fraction input.

    A verifier that mixes a float into its coins' probabilities (a constant
    ``0.0``, ``np.maximum(p - q, 0.0)``, ``math.sqrt``) turns the Fractions it
    touches into floats: its law then misses ``p`` by rounding, and an exact
    comparison would call a lossless verifier lossy.  That is the verifier's
    arithmetic, not its law, so it is an error naming the first such outcome.
    """
    for y, w in cond.items():
        if not isinstance(w, Fraction | int):
            raise VerifierError(
                f"verifier {getattr(function, '__name__', function)!r} left exact arithmetic "
                f"on Fraction input: given drafts {drafts} it outputs {y} with the "
                f"{type(w).__name__} probability {w!r}.  An exact law needs Fractions "
                "throughout; a float constant such as 0.0 (np.maximum(p - q, 0.0)) or a "
                "float function turns them into floats.  Write 0 * p[0] or Fraction(0), or "
                "test a float verifier with spectheory.check_lossless."
            )


def exact_row(function, p, q, n, sampling, *, max_calls=MAX_CALLS):
    """Law of ``y`` (ndarray (V,)) and membership acceptance for one checked row.

    ``function`` is a verifier function ``fn(p, q, drafts, coins, *, sampling)``
    (registered or not, e.g. a deliberately biased variant in a test).  At most
    ``max_calls`` runs of it (:class:`~spectheory.InstanceTooLargeError` beyond).
    """
    zero = 0 * p[0]
    law = np.full(p.shape[0], zero, dtype=p.dtype)
    acc = zero
    used = 0
    exact = p.dtype == object
    for drafts, weight in ordered_draft_law(q, n, sampling):
        cond, runs = _enumerate(function, p, q, drafts, sampling, max_calls - used)
        used += runs
        if exact:
            _require_exact(function, drafts, cond)
        members = set(drafts)
        for y, w in cond.items():
            law[y] = law[y] + weight * w
            if y in members:
                acc = acc + weight * w
    return law, _probability(acc)


#: Largest excess over 1 of a float acceptance taken as rounding (then 1).
_ROUNDING = 1e-12


def _probability(acc):
    """A float acceptance that rounding carried above 1 by at most :data:`_ROUNDING`, as 1.

    Sums of float products can exceed 1 by a few ulp (1.0000000000000002 for
    ``optimal`` at p = (0.58, 0.42), q = (0.45, 0.55), n = 2); Fractions are exact.
    """
    if not isinstance(acc, Fraction) and 1 < acc <= 1 + _ROUNDING:
        return 1.0
    return acc


def _closed_value(v, acc):
    """A closed form's acceptance, refused unless it is a probability (a user's may not be).

    A closed form is a claim about the verifier, so a value outside [0, 1]
    (beyond rounding) or not a real number is a bug in it, named as such,
    never passed on as an acceptance.
    """
    ok = isinstance(acc, Fraction | float | int | np.floating | np.integer) and not isinstance(
        acc, bool | np.bool_)  # fmt: skip
    if not ok or not (0 <= acc <= 1 + (0 if isinstance(acc, Fraction) else _ROUNDING)):
        raise VerifierError(
            f"the closed form of verifier {v.name!r} returned {acc!r}, not an acceptance "
            "probability in [0, 1]"
        )
    return _probability(acc)


def _enumerate(function, p, q, drafts, sampling, budget):
    """Conditional law of ``y`` given ``drafts``, and the runs it took (at most ``budget``)."""
    runs = 0
    rp, rq = read_only(p), read_only(q)  # every run (coin path) sees the same rows

    def run(coins):
        nonlocal runs
        runs += 1
        try:
            y = function(rp, rq, drafts, coins, sampling=sampling)
        except Exception as exc:  # the user's bug, reported as such (chained)
            # ours pass through, but a coin refusing the verifier's arguments (a probability
            # outside [0, 1], a vector not summing to 1) is the verifier's bug: name it and
            # the drafts, as sampling does (the bare coin error named neither)
            if isinstance(exc, SpecTheoryError) and (
                isinstance(exc, NotDeterministicError) or not raised_by_coins(exc)
            ):
                raise
            name = getattr(function, "__name__", function)
            raise verifier_raised(name, exc, f" (drafts {drafts})") from exc
        if isinstance(y, bool) or not isinstance(y, int | np.integer) or not 0 <= y < p.shape[0]:
            raise InvalidParameterError(
                f"verifier {getattr(function, '__name__', function)!r} returned {y!r} for drafts "
                f"{drafts}; a verifier must return a token id in [0, {p.shape[0]})"
            )
        return int(y)

    if budget < 1:
        raise InstanceTooLargeError(f"exact enumeration exceeded MAX_CALLS = {MAX_CALLS} runs")
    try:
        cond = enumerate_outcomes(run, max_leaves=budget)
    except NotDeterministicError as exc:
        raise NotDeterministicError(
            f"verifier {getattr(function, '__name__', function)!r}, drafts {drafts}: {exc}"
        ) from None
    except InstanceTooLargeError:
        raise InstanceTooLargeError(
            f"exact enumeration exceeded MAX_CALLS = {MAX_CALLS} verifier runs (the coin tree "
            "is bigger than estimated); use spectheory.simulate or spectheory.check_lossless"
        ) from None
    return cond, runs


def _run(verifier, target, draft, n, sampling, *, closed_ok):
    """Per-row ``(law, acceptance)`` (law None when the closed form was used), and ``batched``."""
    v, p, q, batched, n, sampling = check_instance(verifier, target, draft, n, sampling)
    _require_coins(v)
    closed = v.closed_form_for(sampling)
    rows = []
    for b in range(p.shape[0]):
        calls = estimated_calls(q[b], n, sampling)
        if calls <= MAX_CALLS:
            try:
                rows.append(exact_row(v.function, p[b], q[b], n, sampling))
                continue
            except InstanceTooLargeError:
                # The coin tree outgrew the estimate (``optimal``: up to V mixture components
                # a tuple): the closed form answers, as for a row refused up front.
                if closed is None or not closed_ok:
                    raise
        if closed is not None and closed_ok:
            rows.append((None, _closed_value(v, closed(p[b], q[b], n, sampling))))
        else:
            raise _too_large(v, p.shape[1], n, sampling, calls, closed is not None)
    return rows, batched


def output_distribution(verifier, target, draft, n=1, sampling=None):
    """The exact law of a verifier's output token.

    Parameters
    ----------
    verifier : str, Verifier or function
        A registry name, a record (:mod:`spectheory.verifiers`), or a
        coins-protocol function ``fn(p, q, drafts, coins, *, sampling)``.
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

    Raises
    ------
    InstanceTooLargeError
        More than :data:`MAX_CALLS` verifier runs would be needed (module
        docstring); the message names the Monte Carlo tools to use instead.
    InvalidParameterError
        A black-box verifier (no exact law), or a bad ``n`` or ``sampling``.
    VerifierError
        The verifier raised (a coin refusing its probabilities included,
        named with the drafts), is not deterministic given its coins, or, on
        Fraction input, gave a coin a float probability (its law would miss
        ``p`` by rounding alone).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> import numpy as np
    >>> p = np.array([F(3, 10), F(4, 10), F(3, 10)], dtype=object)
    >>> q = np.array([F(6, 10), F(3, 10), F(1, 10)], dtype=object)
    >>> [str(v) for v in output_distribution("rrs", p, q, n=2)]
    ['3/10', '2/5', '3/10']
    """
    rows, batched = _run(verifier, target, draft, n, sampling, closed_ok=False)
    out = np.array([law for law, _ in rows], dtype=rows[0][0].dtype)
    return out if batched else out[0]


def acceptance(verifier, target, draft, n=1, sampling=None):
    r"""The exact membership acceptance :math:`P(y \in \{x_1..x_n\})` of a verifier.

    Parameters are those of :func:`output_distribution`.  Rows too large to
    enumerate (:data:`MAX_CALLS`) use the verifier's closed form
    (docs/theory.md §3.0) when it has one for ``sampling``.

    Returns
    -------
    float or Fraction, or ndarray of shape (B,) for batched input.
        A float that rounding carried above 1 by at most 1e-12 is returned
        as 1 (a probability; the law from :func:`output_distribution` is
        left as summed).

    Raises
    ------
    InstanceTooLargeError
        Too large to enumerate and no closed form (or ``n x V`` too large for
        the closed form's loop): the message names what to use instead.
    InvalidParameterError
        A black-box verifier, or a bad ``n`` or ``sampling``.

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
    rows, batched = _run(verifier, target, draft, n, sampling, closed_ok=True)
    exact = any(isinstance(a, Fraction) for _, a in rows)
    if batched:
        return np.array([a for _, a in rows], dtype=object if exact else np.float64)
    acc = rows[0][1]
    return acc if exact else float(acc)
