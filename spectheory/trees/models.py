r"""Autoregressive models as functions ``model(prefix_tokens) -> distribution over V``.

Drafters and tree verifiers call the draft and the target only through such
functions, with ``prefix_tokens`` the tuple of tokens drafted after the
context (``()`` at the root).  A small Markov model with exact rational rows
(:func:`random_markov_model`) and the real language model
(:mod:`spectheory.trees.lm`) plug in alike.  :class:`CachedModel` checks every
row once (finite, non-negative, summing to 1, right vocabulary) and caches it
by prefix.
"""

from __future__ import annotations

import numbers
from fractions import Fraction

import numpy as np

from .._errors import InvalidDistributionError, InvalidParameterError
from .._validate import as_distribution, check_positive_int
from ..coins import SUM_TOLERANCE
from ._tree import _int_tuple

__all__ = ["CachedModel", "MarkovModel", "as_model", "random_markov_model"]


class CachedModel:
    """A model function with checked rows, cached by prefix.

    Parameters
    ----------
    fn : callable
        ``fn(prefix: tuple[int, ...]) -> array_like of shape (V,)``.
    name : str
        Used in error messages (``"target"``, ``"draft"``).

    Examples
    --------
    >>> m = CachedModel(lambda prefix: [0.5, 0.5], "draft")
    >>> m((1, 0)).tolist(), m.vocab_size
    ([0.5, 0.5], 2)
    """

    def __init__(self, fn, name: str):
        if not callable(fn):
            raise InvalidParameterError(f"{name} must be callable prefix -> distribution")
        self.fn = fn
        self.name = name
        self.cache: dict = {}
        self.vocab_size = None

    def __call__(self, prefix) -> np.ndarray:
        if type(prefix) is not tuple or not all(type(t) is int for t in prefix):
            prefix = _int_tuple(prefix, "prefix")  # int(1.7) would look up token 1
        row = self.cache.get(prefix)
        if row is None:
            row = self._check(self.fn(prefix), prefix)
            if self.vocab_size is None:
                self.vocab_size = row.shape[0]
            elif row.shape[0] != self.vocab_size:
                raise InvalidDistributionError(
                    f"{self.name} returned {row.shape[0]} tokens for prefix {list(prefix)}, "
                    f"{self.vocab_size} before"
                )
            self.cache[prefix] = row
        return row

    def _check(self, raw, prefix):
        where = f"{self.name}{list(prefix)}"
        arr = np.asarray(raw)
        if arr.ndim != 1:
            raise InvalidDistributionError(
                f"{where} has shape {arr.shape}; expected one distribution of shape (V,)"
            )
        if arr.dtype == object:
            return as_distribution(arr, where, allow_exact=True)[0][0]
        if arr.dtype.kind != "f" or arr.itemsize != 8 or arr.size > 4096:
            return as_distribution(arr, where)[0][0]
        # Small float64 rows (exact-model and test sizes): numpy checks, no kernel dispatch.
        bad = ~np.isfinite(arr) | (arr < 0)
        if bad.any():
            t = int(np.argmax(bad))
            raise InvalidDistributionError(f"{where} has an invalid entry {arr[t]!r} at token {t}")
        total = float(arr.sum())
        if abs(total - 1.0) > SUM_TOLERANCE:
            raise InvalidDistributionError(f"{where} sums to {total!r}, not 1")
        return arr / total if total != 1.0 else arr.copy()


def _check_order(order) -> int:
    if isinstance(order, bool | np.bool_) or not isinstance(order, int | np.integer) or order < 0:
        raise InvalidParameterError(f"order must be an integer >= 0; got {order!r}")
    return int(order)


def as_model(model, name: str) -> CachedModel:
    """Wrap a model function in a :class:`CachedModel` (returned as is if it already is one)."""
    return model if isinstance(model, CachedModel) else CachedModel(model, name)


class MarkovModel:
    """An order-``k`` Markov model: the next-token law depends on the last ``k`` tokens.

    Parameters
    ----------
    table : dict
        ``tuple of k tokens -> distribution (V,)`` for every state reached.
    order : int
    context : tuple of int
        The ``k`` tokens before the drafted prefix.

    Examples
    --------
    >>> m = MarkovModel({(0,): [0.25, 0.75], (1,): [1.0, 0.0]}, 1, (0,))
    >>> m(()), m((1,))
    ([0.25, 0.75], [1.0, 0.0])
    """

    def __init__(self, table: dict, order: int, context: tuple):
        self.order = _check_order(order)
        self.table = table
        self.context = _int_tuple(context, "context")
        if len(self.context) < self.order:
            raise InvalidParameterError(
                f"context must hold at least order = {self.order} tokens; got {self.context}"
            )

    def __call__(self, prefix):
        state = (self.context + tuple(prefix))[-self.order :] if self.order else ()
        try:
            return self.table[state]
        except KeyError:
            raise InvalidParameterError(
                f"the Markov table has no row for state {state} (reached after prefix "
                f"{list(prefix)} with context {list(self.context)})"
            ) from None


def _random_row(rng, vocab_size, denominator, zero_prob):
    while True:
        w = rng.integers(1, denominator + 1, size=vocab_size)
        w[rng.random(vocab_size) < zero_prob] = 0
        if w.sum() > 0:
            break
    total = int(w.sum())
    return np.array([Fraction(int(x), total) for x in w], dtype=object)


def random_markov_model(
    vocab_size: int, order: int = 1, *, seed=0, denominator: int = 7, zero_prob: float = 0.0
):
    """A random order-``k`` Markov model with exact rational rows.

    Each row is ``w / sum(w)`` with integer weights ``w`` uniform on
    ``1..denominator`` (set to 0 with probability ``zero_prob``).

    Parameters
    ----------
    vocab_size : int
    order : int >= 0
        0 gives a context-independent model.
    seed : int or numpy.random.Generator
    denominator : int >= 1
    zero_prob : float in [0, 1)

    Returns
    -------
    MarkovModel
        With context ``(0,) * order``.

    Examples
    --------
    >>> m = random_markov_model(3, 1, seed=1)
    >>> sum(m(())) == 1 and sum(m((2,))) == 1
    True
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    order = _check_order(order)
    denominator = check_positive_int(denominator, "denominator")
    if (
        isinstance(zero_prob, bool | np.bool_)
        or not isinstance(zero_prob, numbers.Real)
        or not 0 <= zero_prob < 1
    ):
        raise InvalidParameterError(f"zero_prob must lie in [0, 1); got {zero_prob!r}")
    rng = np.random.default_rng(seed)
    states = [()]
    for _ in range(order):
        states = [(*s, t) for s in states for t in range(vocab_size)]
    table = {s: _random_row(rng, vocab_size, denominator, zero_prob) for s in states}
    return MarkovModel(table, order, (0,) * order)
