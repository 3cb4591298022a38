r"""The randomness protocol: every verifier is written once against a ``coins`` object.

A verifier asks for randomness only through two calls:

``coins.bernoulli(prob) -> bool``
    True with probability ``prob``.
``coins.categorical(probs) -> int``
    An index ``i`` with probability ``probs[i]``.

Three implementations run the same verifier code three ways (docs/design.md,
"The randomness protocol"):

:class:`RandomCoins`
    Sampling from a seeded :class:`numpy.random.Generator`, as a real system does.
:class:`ReplayCoins`
    Consumes pre-drawn uniforms :math:`u \in [0, 1)` in order: ``bernoulli``
    returns :math:`u < \text{prob}` and ``categorical`` the inverse CDF, the
    smallest ``i`` with :math:`u < \sum_{j \le i} \text{probs}_j` among tokens of
    positive probability.  A numba or torch kernel fed the same uniforms must
    return the identical token: an exact differential test.
    :class:`RandomCoins` applies the same rules to ``rng.random()``, so
    ``RandomCoins(seed)`` and ``ReplayCoins(default_rng(seed).random(k))`` agree.
:func:`enumerate_outcomes`
    Runs a procedure under every branch of every coin, by re-execution along a
    recorded branch path (depth-first), and returns the exact law of its
    result.  With :class:`fractions.Fraction` probabilities the law is exact.

Probabilities are never clipped: a ``bernoulli`` probability outside
:math:`[0, 1]` (by more than :data:`PROB_TOLERANCE` in floating point, at all
for exact input), a negative categorical
entry, or a categorical vector whose sum is off 1 (by more than
:data:`SUM_TOLERANCE` in floating point, at all for exact input) is a bug in
the caller and raises :class:`~spectheory.InvalidParameterError`.

Examples
--------
>>> from fractions import Fraction as F
>>> def two_flips(coins):
...     return int(coins.bernoulli(F(1, 3))) + int(coins.bernoulli(F(1, 2)))
>>> sorted(enumerate_outcomes(two_flips).items())
[(0, Fraction(1, 3)), (1, Fraction(1, 2)), (2, Fraction(1, 6))]
>>> ReplayCoins([0.2, 0.7]).categorical([0.5, 0.0, 0.5])
0
"""

from __future__ import annotations

from fractions import Fraction
from typing import Protocol, runtime_checkable

import numpy as np

from ._errors import InstanceTooLargeError, InvalidParameterError, VerifierError

__all__ = [
    "PROB_TOLERANCE",
    "SUM_TOLERANCE",
    "Coins",
    "EnumerationCoins",
    "NotDeterministicError",
    "RandomCoins",
    "ReplayCoins",
    "enumerate_outcomes",
]

#: Largest excursion of a float Bernoulli probability outside [0, 1] accepted as rounding
#: (an exact one, Fraction or int, must lie in [0, 1]: it has no rounding).
PROB_TOLERANCE = 1e-12
#: Largest ``|sum(probs) - 1|`` accepted for a floating-point categorical vector.
SUM_TOLERANCE = 1e-9


@runtime_checkable
class Coins(Protocol):
    """The two calls a verifier may make for randomness."""

    def bernoulli(self, prob) -> bool:
        """True with probability ``prob``."""

    def categorical(self, probs) -> int:
        """An index drawn with the probabilities ``probs``."""


def _check_prob(prob):
    """Return ``prob`` if it lies in [0, 1] (a float up to :data:`PROB_TOLERANCE`), else raise.

    An exact probability (Fraction or int) has no rounding to forgive: one outside
    [0, 1] by 1e-13 is the verifier's bug, and enumerated it gave its branch a weight
    above 1 (an exact "law" of total mass 1 + 1e-13), while sampling treated it as 1.
    """
    if isinstance(prob, Fraction | int) and not isinstance(prob, bool):
        ok = 0 <= prob <= 1
    else:
        value = float(prob)
        ok = np.isfinite(value) and -PROB_TOLERANCE <= value <= 1 + PROB_TOLERANCE
    if not ok:
        raise InvalidParameterError(
            f"bernoulli prob must lie in [0, 1]; got {prob!r} (a verifier bug, never clipped)"
        )
    return prob


def _check_probs(probs):
    """Validate a categorical vector; return it as a 1-D array (object arrays stay exact)."""
    arr = np.asarray(probs)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidParameterError(
            f"categorical probs must be a non-empty 1-D vector; got shape {arr.shape}"
        )
    if arr.dtype == object:
        if any(not v >= 0 for v in arr):  # NaN >= 0 is False: NaN is refused too
            raise InvalidParameterError(
                f"categorical probs has a negative or NaN entry: {arr!r}"
            )
        total = sum(arr, 0 * arr[0])
        exact = all(isinstance(v, Fraction | int) for v in arr)
        if exact and total != 1:
            raise InvalidParameterError(f"categorical probs sums to {total}, not exactly 1")
        if not exact and abs(float(total) - 1.0) > SUM_TOLERANCE:
            raise InvalidParameterError(f"categorical probs sums to {float(total)!r}, not 1")
        return arr
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InvalidParameterError(f"categorical probs has a negative or non-finite entry: {arr}")
    total = float(arr.sum())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise InvalidParameterError(f"categorical probs sums to {total!r}, not 1")
    return arr


#: Length from which a float64 vector takes the vectorised inverse CDF.
_VECTORISE_FROM = 64


def _inverse_cdf(u: float, probs) -> int:
    """Smallest ``i`` with ``probs[i] > 0`` and ``u < cumsum(probs)[i]``.

    If rounding leaves ``u`` beyond the last partial sum, the last token of
    positive probability is returned: a zero-probability index never is.

    A float64 vector of :data:`_VECTORISE_FROM` entries or more is searched in
    numpy (a Python loop over a 150k-token row costs milliseconds, and a
    coins-protocol verifier draws a residual per rejection) with the same
    result: ``np.cumsum`` adds in sequence, as the loop does (adding a zero
    entry leaves the sum unchanged), so the partial sums are the same floats;
    the first partial sum above ``u`` belongs to an entry of positive
    probability, since a zero entry repeats the sum before it.  The tests
    compare the two on rows with zeros, subnormals and ``u`` on every
    partial sum.
    """
    if isinstance(probs, np.ndarray) and probs.dtype == np.float64 and (
        probs.size >= _VECTORISE_FROM
    ):
        i = int(np.searchsorted(np.cumsum(probs), u, side="right"))
        if i < probs.size:
            return i
        positive = np.flatnonzero(probs > 0)
        return int(positive[-1]) if positive.size else -1
    acc = 0
    last = -1
    for i, v in enumerate(probs):
        if v > 0:
            # Exact entries keep an exact partial sum: float(u) < Fraction compares exactly,
            # as bernoulli does; float(v) would round 1/3 onto u = float(1/3).
            acc += v if isinstance(v, Fraction | int) else float(v)
            last = i
            if u < acc:
                return i
    return last


class RandomCoins:
    """Coins drawn from a :class:`numpy.random.Generator`.

    Each call consumes one ``rng.random()`` and applies the rules of
    :class:`ReplayCoins`, so the two agree on the same uniforms.

    Parameters
    ----------
    rng : numpy.random.Generator, int or None
        Passed to :func:`numpy.random.default_rng`.

    Examples
    --------
    >>> coins = RandomCoins(0)
    >>> coins.bernoulli(1.0), coins.bernoulli(0.0)
    (True, False)
    """

    def __init__(self, rng=None):
        self.rng = np.random.default_rng(rng)

    def bernoulli(self, prob) -> bool:
        prob = _check_prob(prob)
        return bool(self.rng.random() < prob)

    def categorical(self, probs) -> int:
        return _inverse_cdf(self.rng.random(), _check_probs(probs))


class ReplayCoins:
    """Coins read from a 1-D array of pre-drawn uniforms, in order.

    Parameters
    ----------
    uniforms : array_like of float, shape (k,)
        Values in [0, 1); one is consumed by every call.

    Attributes
    ----------
    position : int
        Number of uniforms consumed so far.

    Examples
    --------
    >>> coins = ReplayCoins([0.25, 0.9])
    >>> coins.bernoulli(0.5), coins.categorical([0.3, 0.3, 0.4]), coins.position
    (True, 2, 2)
    """

    def __init__(self, uniforms):
        arr = np.asarray(uniforms, dtype=np.float64)
        if arr.ndim != 1:
            raise InvalidParameterError(
                f"uniforms must be a 1-D array; got an array of shape {arr.shape}"
            )
        bad = ~((arr >= 0) & (arr < 1))
        if bad.any():
            i = int(np.argmax(bad))
            raise InvalidParameterError(f"uniforms[{i}] = {arr[i]!r} is not in [0, 1)")
        self.uniforms = arr
        self.position = 0

    def _next(self) -> float:
        if self.position >= self.uniforms.size:
            raise InvalidParameterError(
                f"uniforms ran out: all {self.uniforms.size} pre-drawn uniforms are used "
                "and the verifier asked for another coin"
            )
        u = float(self.uniforms[self.position])
        self.position += 1
        return u

    def bernoulli(self, prob) -> bool:
        prob = _check_prob(prob)
        return bool(self._next() < prob)

    def categorical(self, probs) -> int:
        probs = _check_probs(probs)
        return _inverse_cdf(self._next(), probs)


class EnumerationCoins:
    """Coins that follow a prescribed branch path and record every choice point.

    Used by :func:`enumerate_outcomes`.  At the ``d``-th call the branch
    ``path[d]`` is taken if given, else the first branch of positive
    probability.  ``choices`` records, per call, the list of
    ``(branch value, probability)`` of positive probability and the index
    taken; ``weight`` is the product of the probabilities taken.

    Bernoulli branches are ``True`` (probability ``prob``) then ``False``
    (``1 - prob``); a branch whose probability is not positive is pruned.
    """

    def __init__(self, path=(), expected=()):
        self.path = list(path)
        # the options each coin of the path offered on the run that recorded it
        self.expected = list(expected)
        self.choices: list[tuple[list, int]] = []
        self.weight = 1
        # set when its run has returned: a coin flipped later belongs to no branch path
        self.closed = False

    def _take(self, options):
        if self.closed:
            # A function that keeps its coins object and flips it on a later run draws from
            # a finished path: always its first branch, so the law was silently the one of
            # that branch alone (while sampling draws it), e.g. a lossy verifier enumerated
            # as exactly lossless.
            raise NotDeterministicError(
                "the function is not deterministic given its coins: it flipped the coins "
                "object of an earlier run after that run had returned (a coins object kept "
                "between calls); it must draw all its randomness from the coins it is given"
            )
        d = len(self.choices)
        if d < len(self.expected) and options != self.expected[d]:
            raise NotDeterministicError(
                f"the function is not deterministic given its coins: its coin {d} offered "
                f"{_describe(self.expected[d])} on one run and {_describe(options)} on the "
                "next along the same branches; it must draw all its randomness from coins"
            )
        k = self.path[d] if d < len(self.path) else 0
        self.choices.append((options, k))
        value, prob = options[k]
        self.weight = self.weight * prob
        return value

    def bernoulli(self, prob) -> bool:
        prob = _check_prob(prob)
        options = [(b, w) for b, w in ((True, prob), (False, 1 - prob)) if w > 0]
        return self._take(options)

    def categorical(self, probs) -> int:
        probs = _check_probs(probs)
        return self._take([(i, v) for i, v in enumerate(probs) if v > 0])


class NotDeterministicError(VerifierError):
    """A function enumerated by :func:`enumerate_outcomes` is not deterministic given its coins."""


def _describe(options):
    shown = ", ".join(f"{v!r}: {p}" for v, p in options[:4])
    return "{" + shown + (", ..." if len(options) > 4 else "") + "}"


def enumerate_outcomes(fn, *, max_leaves: int = 1_000_000) -> dict:
    """The exact law of ``fn(coins)`` over every branch of every coin it flips.

    Depth-first search by re-execution: ``fn`` is run once per leaf of its
    coin tree, each time along a recorded branch path (and the first leaf
    twice).  ``fn`` must be deterministic given its coins; one that is not
    (it draws from another source of randomness, such as ``np.random``) is
    refused with :class:`~spectheory.VerifierError` where a run shows it: a
    coin offering other branches or probabilities than on an earlier run along
    the same path, a run stopping before the path's end, the first leaf's
    two runs differing, or a coins object of an earlier run flipped after that
    run returned (one kept between calls).  (A function random elsewhere can still escape every
    run; :func:`spectheory.check_lossless` tests its samples statistically.)

    Parameters
    ----------
    fn : callable
        ``fn(coins) -> outcome`` with a hashable outcome.
    max_leaves : int
        Refuse (:class:`~spectheory.InstanceTooLargeError`) coin trees with
        more leaves.

    Returns
    -------
    dict
        ``outcome -> probability``; the probabilities are products of the
        coins' probabilities (exact for Fraction input) and sum to 1.

    Examples
    --------
    >>> law = enumerate_outcomes(lambda c: c.categorical([0.5, 0.0, 0.5]))
    >>> sorted((k, float(v)) for k, v in law.items())
    [(0, 0.5), (2, 0.5)]
    """
    law: dict = {}
    path: list[int] = []
    expected: list = []
    leaves = 0
    while True:
        coins = EnumerationCoins(path, expected)
        outcome = fn(coins)
        coins.closed = True
        if len(coins.choices) < len(path):
            raise NotDeterministicError(
                f"the function is not deterministic given its coins: a run along branches "
                f"{path} stopped after {len(coins.choices)} coins, where an earlier run flipped "
                "more; it must draw all its randomness from coins"
            )
        if leaves == 0:  # one repeat of the first leaf: same coins, same outcome
            again = EnumerationCoins(path, [o for o, _ in coins.choices])
            repeat = fn(again)
            again.closed = True
            if repeat != outcome or len(again.choices) != len(coins.choices):
                what = (
                    f"returned {outcome!r} and {repeat!r}"
                    if repeat != outcome
                    else f"flipped {len(coins.choices)} and {len(again.choices)} coins"
                )
                raise NotDeterministicError(
                    f"the function is not deterministic given its coins: two runs with the same "
                    f"coins {what}; it must draw all its randomness from coins"
                )
        law[outcome] = law.get(outcome, 0) + coins.weight
        leaves += 1
        if leaves > max_leaves:
            raise InstanceTooLargeError(
                f"enumerate_outcomes refuses coin trees with more than max_leaves={max_leaves}"
            )
        # Advance to the next unexplored sibling, deepest first.
        d = len(coins.choices) - 1
        while d >= 0 and coins.choices[d][1] + 1 >= len(coins.choices[d][0]):
            d -= 1
        if d < 0:
            return law
        path = [k for _, k in coins.choices[:d]] + [coins.choices[d][1] + 1]
        expected = [o for o, _ in coins.choices[: d + 1]]
