r"""Speedup of chain speculative decoding and the optimal draft length.

One round drafts :math:`\gamma` tokens, then one target call verifies them
and emits the accepted prefix plus one target token.  With
:math:`\alpha_k` the probability that draft token ``k`` is accepted given
that tokens ``1..k-1`` were, and :math:`P_j = \prod_{i \le j} \alpha_i`
(:math:`P_0 = 1`), docs/theory.md §1.3-1.5 gives

.. math::

    \tau(\gamma) = \sum_{j=0}^{\gamma} P_j, \qquad
    P(A = \ell) = P_\ell - P_{\ell+1}\ (\ell < \gamma), \quad P(A = \gamma) = P_\gamma,

    S(\gamma) = \frac{\tau(\gamma)}{\gamma c + 1},

with :math:`A` the number of accepted draft tokens, :math:`\tau = E[A] + 1`
the tokens per target call, :math:`c` the cost of one draft forward
relative to one target forward and :math:`S` the expected walltime
improvement (Leviathan et al. [1]_, Theorem 3.8, there for i.i.d.
:math:`\alpha_k = \alpha`, where :math:`\tau = (1 - \alpha^{\gamma+1})/(1 - \alpha)`,
their Eq. 1).

The best integer draft length follows from the *marginal rule*: :math:`S(\gamma+1)`
is the mediant of :math:`S(\gamma)` and :math:`P_{\gamma+1}/c`, so

.. math::

    S(\gamma+1) > S(\gamma) \iff P_{\gamma+1} > c\,S(\gamma), \qquad
    \gamma^* = \min\{\gamma \ge 0 : P_{\gamma+1} \le c\,S(\gamma)\},

exact whenever :math:`P_j` is non-increasing (then :math:`S` is unimodal).
For i.i.d. :math:`\alpha` the continuous optimum has a closed form through the
lower branch of the Lambert W function (docs/theory.md §1.5(b)): with
:math:`L = -\ln\alpha` and :math:`t = L(1-c)/c`,

.. math::

    s = -W_{-1}\!\big(-e^{-1-t}\big), \qquad \gamma^*_{\mathrm{cont}} = \frac{s - 1 - t}{L} - 1 .

Conventions: ``alpha`` is a probability in [0, 1], ``c >= 0``, ``gamma`` an
integer >= 0; arrays broadcast (numpy rules).  ``alpha = 1`` gives
:math:`\tau = \gamma + 1`, ``alpha = 0`` gives :math:`\tau = 1`, ``c = 0``
gives :math:`S = \tau`, all without division by zero.

References
----------
.. [1] Leviathan, Kalman, Matias. "Fast Inference from Transformers via
   Speculative Decoding". ICML 2023, arXiv:2211.17192.
.. [2] Chen, Borgeaud, Irving, Lespiau, Sifre, Jumper. "Accelerating Large
   Language Model Decoding with Speculative Sampling". arXiv:2302.01318.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import lambertw

from .._errors import InvalidParameterError
from .._validate import check_choice, check_limit, check_positive_int, real_array
from ._result import SolverResult

__all__ = [
    "GAMMA_METHODS",
    "OptimalGammaResult",
    "acceptance_count_pmf",
    "acceptance_count_pmf_positional",
    "alpha_from_tokens_per_round",
    "arithmetic_increase",
    "conditional_from_tokens_per_round",
    "continuous_optimal_gamma",
    "implied_cost_ratio",
    "optimal_gamma",
    "optimal_gamma_positional",
    "oracle_speedup",
    "prefix_probs",
    "speedup",
    "speedup_positional",
    "tokens_per_round",
    "tokens_per_round_positional",
]

#: Methods of :func:`optimal_gamma`.
GAMMA_METHODS = ("marginal", "lambertw", "enumerate")
#: Largest ``gamma_max`` per method of :func:`optimal_gamma`: the marginal scan
#: may loop ``gamma_max`` times (alpha near 1), enumeration builds a table of
#: ``gamma_max + 1`` columns; the Lambert-W rounding is O(1) up to int64 floats.
MAX_GAMMA = {"marginal": 10**5, "lambertw": 2**53, "enumerate": 10**7}

#: Most entries :func:`acceptance_count_pmf` returns (80 MB of float64).
MAX_PMF_ENTRIES = 10**7

#: Kinds of per-position acceptance accepted by the ``*_positional`` functions.
POSITIONAL_KINDS = ("conditional", "prefix")

#: Relative tolerance under which :math:`S(\gamma+1)` and :math:`S(\gamma)` count
#: as equal, so that the shorter draft wins ties (e.g. alpha = 0.5, c = 0.2,
#: where S(1) = S(2) = 1.25 exactly but not in floating point).
TIE_RTOL = 1e-12


# --------------------------------------------------------------------------- validation


def _as_real(x, name):
    if isinstance(x, list | tuple):
        # np.asarray([True, 0.5]) is float64: the bool would pass unseen.
        for e in np.asarray(x, dtype=object).ravel():
            if isinstance(e, bool | np.bool_ | str | complex):
                raise InvalidParameterError(
                    f"{name} must be a real number or an array of real numbers; got {e!r} "
                    f"in {x!r}"
                )
    try:
        raw = np.asarray(x) if not isinstance(x, np.ndarray) else x
    except ValueError as exc:  # a ragged list: numpy's message names no argument
        raise InvalidParameterError(f"{name} cannot be read as an array: {exc}") from None
    if raw.dtype == object:
        # Fraction and other numbers.Real entries are real numbers: read them as float64
        # (bool, str and complex entries are refused by real_array, naming the entry).
        raw = real_array(x, name)
    if raw.dtype.kind == "b" or raw.dtype.kind not in "fiu":
        raise InvalidParameterError(
            f"{name} must be a real number or an array of real numbers; got {x!r}"
        )
    arr = raw.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        _raise_at(name, arr, bad, "must be finite")
    return arr


def _raise_at(name, arr, bad, what):
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    value = float(arr[idx])
    where = f" at index {idx if len(idx) > 1 else idx[0]}" if arr.ndim else ""
    raise InvalidParameterError(f"{name} {what}; got {value!r}{where}")


def _check_prob(x, name):
    arr = _as_real(x, name)
    bad = (arr < 0) | (arr > 1)
    if bad.any():
        _raise_at(name, arr, bad, "must lie in [0, 1]")
    return arr


def _check_cost(x, name):
    arr = _as_real(x, name)
    bad = arr < 0
    if bad.any():
        _raise_at(name, arr, bad, "must be >= 0")
    return arr


def _check_gamma(x, name="gamma"):
    if isinstance(x, list | tuple):
        # np.asarray([True, 2]) is int64: the bool would pass unseen as 1.
        for e in np.asarray(x, dtype=object).ravel():
            if isinstance(e, bool | np.bool_):
                raise InvalidParameterError(
                    f"{name} must be an integer >= 0 (or an integer array); got {e!r} in {x!r}"
                )
    raw = np.asarray(x)
    if raw.dtype.kind == "b" or raw.dtype.kind not in "iu":
        raise InvalidParameterError(
            f"{name} must be an integer >= 0 (or an integer array); got {x!r}"
        )
    if raw.dtype.kind == "u" and raw.size and raw.max() > np.iinfo(np.int64).max:
        # astype(int64) would wrap these to negative values.
        bad = raw > np.iinfo(np.int64).max
        _raise_at(name, raw, bad, f"must be at most {np.iinfo(np.int64).max}")
    arr = raw.astype(np.int64)
    bad = arr < 0
    if bad.any():
        _raise_at(name, arr, bad, "must be >= 0")
    return arr


def _check_scalar_gamma(x, name="gamma"):
    arr = _check_gamma(x, name)
    if arr.ndim:
        raise InvalidParameterError(f"{name} must be a single integer here; got shape {arr.shape}")
    return int(arr)


def _check_broadcast(**arrays):
    """Raise, naming the arguments and their shapes, when they do not broadcast.

    numpy's own error ("operands could not be broadcast together with shapes
    (3,) (2,)") names neither the function's arguments nor which is which.

    Parameters
    ----------
    **arrays : ndarray
        The checked arguments by name, in the order of the signature.
    """
    try:
        np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {a.shape}" for k, a in arrays.items())
        raise InvalidParameterError(
            f"{' and '.join(arrays)} must broadcast against each other (numpy rules); "
            f"got shapes {shapes}"
        ) from None


def _scalar_out(x, scalar):
    if scalar:
        return x.item() if isinstance(x, (np.ndarray, np.generic)) else x
    return x


def _positional_prefix(acceptance, kind):
    """Return :math:`P_1..P_K` (shape (..., K)) from conditional or prefix input."""
    check_choice(kind, "kind", POSITIONAL_KINDS)
    name = "alphas" if kind == "conditional" else "prefix"
    arr = _check_prob(acceptance, name)
    if arr.ndim == 0:
        raise InvalidParameterError(
            f"{name} must have a last axis over draft positions (shape (..., K)); got a scalar"
        )
    return np.cumprod(arr, axis=-1) if kind == "conditional" else arr


def _check_monotone(prefix):
    rise = np.diff(prefix, axis=-1, prepend=1.0) > 0
    if rise.any():
        idx = tuple(int(i) for i in np.argwhere(rise)[0])
        raise InvalidParameterError(
            "the marginal rule needs non-increasing prefix probabilities P_j; "
            f"P_{idx[-1] + 1} = {float(prefix[idx])!r} exceeds P_{idx[-1]} "
            f"(index {idx}); use method='enumerate'"
        )


# --------------------------------------------------------------------------- i.i.d. formulas


def tokens_per_round(alpha, gamma):
    r"""Expected tokens per target call for i.i.d. acceptance (Leviathan Eq. 1).

    .. math::

        \tau(\gamma) = \sum_{j=0}^{\gamma} \alpha^j = \frac{1 - \alpha^{\gamma+1}}{1 - \alpha},
        \qquad \tau = \gamma + 1 \text{ at } \alpha = 1 .

    Parameters
    ----------
    alpha : float or array_like in [0, 1]
        Per-token acceptance probability.
    gamma : int or int array_like >= 0
        Draft length; broadcasts against ``alpha``.

    Returns
    -------
    float or ndarray
        :math:`\tau`, the broadcast shape of the inputs.

    Examples
    --------
    >>> tokens_per_round(0.5, 2)  # 1 + 1/2 + 1/4
    1.75
    >>> tokens_per_round([0.0, 1.0], 3).tolist()
    [1.0, 4.0]
    """
    a = _check_prob(alpha, "alpha")
    g = _check_gamma(gamma)
    _check_broadcast(alpha=a, gamma=g)
    scalar = a.ndim == 0 and g.ndim == 0
    return _scalar_out(_tau(a, g), scalar)


def _tau(a, g):
    # -expm1((g+1) log a) / (1 - a): no cancellation for alpha near 1.
    with np.errstate(divide="ignore", invalid="ignore"):
        geo = -np.expm1((g + 1.0) * np.log(a)) / (1.0 - a)
    return np.where((a == 1.0) | (g == 0), g + 1.0, geo)


def acceptance_count_pmf(alpha, gamma):
    r"""Law of the number :math:`A` of accepted draft tokens, i.i.d. acceptance.

    .. math::

        P(A = \ell) = \alpha^\ell (1 - \alpha)\ (\ell < \gamma), \qquad
        P(A = \gamma) = \alpha^\gamma .

    Parameters
    ----------
    alpha : float or array_like in [0, 1], shape (...)
    gamma : int >= 0

    Returns
    -------
    ndarray, shape (..., gamma + 1)
        Entry ``l`` is :math:`P(A = \ell)`; at most :data:`MAX_PMF_ENTRIES`
        entries (larger requests raise ``InstanceTooLargeError``).

    Examples
    --------
    >>> acceptance_count_pmf(0.5, 2).tolist()
    [0.5, 0.25, 0.25]
    """
    a = _check_prob(alpha, "alpha")
    g = _check_scalar_gamma(gamma)
    check_limit(a.size * (g + 1), "alpha.size * (gamma + 1)", MAX_PMF_ENTRIES,
                "entries of the returned law")
    powers = a[..., None] ** np.arange(g + 1)
    return _pmf_from_prefix(powers[..., 1:])


def _pmf_from_prefix(prefix):
    full = np.concatenate([np.ones((*prefix.shape[:-1], 1)), prefix], axis=-1)
    out = full.copy()
    out[..., :-1] = full[..., :-1] - full[..., 1:]
    return out


def speedup(alpha, gamma, c):
    r"""Expected walltime improvement, Leviathan et al. Theorem 3.8.

    .. math::

        S(\gamma) = \frac{1 - \alpha^{\gamma+1}}{(1 - \alpha)(\gamma c + 1)}
                  = \frac{\tau(\gamma)}{\gamma c + 1} .

    It assumes that verifying :math:`\gamma + 1` positions costs one target
    forward.

    Parameters
    ----------
    alpha : float or array_like in [0, 1]
    gamma : int or int array_like >= 0
    c : float or array_like >= 0
        Draft forward time over target forward time.

    Returns
    -------
    float or ndarray (broadcast shape)

    Examples
    --------
    Corollary 3.9, :math:`S(1) = (1 + \alpha)/(1 + c)`:

    >>> speedup(0.5, 1, 0.2)
    1.25
    """
    a = _check_prob(alpha, "alpha")
    g = _check_gamma(gamma)
    cc = _check_cost(c, "c")
    _check_broadcast(alpha=a, gamma=g, c=cc)
    scalar = a.ndim == 0 and g.ndim == 0 and cc.ndim == 0
    return _scalar_out(_tau(a, g) / (g * cc + 1.0), scalar)


def oracle_speedup(alpha, c):
    r"""Speedup of an oracle that drafts exactly the tokens that will be accepted.

    Per round it drafts a geometric number of tokens, all accepted, then one
    target call: :math:`E[\text{tokens}] = 1/(1-\alpha)` at cost
    :math:`c\alpha/(1-\alpha) + 1` (docs/theory.md §1.5(d)), so

    .. math:: S_{\mathrm{oracle}} = \frac{1}{1 - \alpha + c\alpha} .

    Parameters
    ----------
    alpha : float or array_like in [0, 1]
    c : float or array_like >= 0

    Returns
    -------
    float or ndarray; ``inf`` at ``alpha = 1, c = 0``.

    Examples
    --------
    >>> oracle_speedup(0.5, 0.0)
    2.0
    """
    a = _check_prob(alpha, "alpha")
    cc = _check_cost(c, "c")
    _check_broadcast(alpha=a, c=cc)
    with np.errstate(divide="ignore"):
        out = 1.0 / (1.0 - a + cc * a)
    return _scalar_out(out, a.ndim == 0 and cc.ndim == 0)


def arithmetic_increase(alpha, gamma, c_hat):
    r"""Factor by which speculative decoding increases total arithmetic (Thm 3.11).

    .. math::

        \frac{(1 - \alpha)(\gamma \hat c + \gamma + 1)}{1 - \alpha^{\gamma+1}}
        = \frac{\gamma \hat c + \gamma + 1}{\tau(\gamma)},

    with :math:`\hat c` the draft/target ratio of arithmetic operations per
    token: each round runs the target on :math:`\gamma + 1` positions and the
    draft on :math:`\gamma`, and emits :math:`\tau` tokens.

    Parameters
    ----------
    alpha : float or array_like in [0, 1]
    gamma : int or int array_like >= 0
    c_hat : float or array_like >= 0

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> arithmetic_increase(1.0, 3, 0.0)  # every token accepted: no waste
    1.0
    >>> arithmetic_increase(0.5, 1, 0.5)  # 2.5 units of work for 1.5 tokens
    1.6666666666666667
    """
    a = _check_prob(alpha, "alpha")
    g = _check_gamma(gamma)
    ch = _check_cost(c_hat, "c_hat")
    _check_broadcast(alpha=a, gamma=g, c_hat=ch)
    out = (g * ch + g + 1.0) / _tau(a, g)
    return _scalar_out(out, a.ndim == 0 and g.ndim == 0 and ch.ndim == 0)


# --------------------------------------------------------------------------- positional


def prefix_probs(alphas):
    r"""Prefix acceptance probabilities :math:`P_j = \prod_{i \le j} \alpha_i`.

    Parameters
    ----------
    alphas : array_like in [0, 1], shape (..., K)
        Conditional acceptance of draft position ``k`` given that positions
        ``1..k-1`` were accepted.

    Returns
    -------
    ndarray, shape (..., K)
        :math:`P_1, \dots, P_K` (:math:`P_0 = 1` is implicit).

    Examples
    --------
    >>> prefix_probs([0.8, 0.5, 0.5]).tolist()
    [0.8, 0.4, 0.2]
    """
    return _positional_prefix(alphas, "conditional")


def tokens_per_round_positional(acceptance, *, kind="conditional"):
    r"""Expected tokens per round for position-dependent acceptance, every :math:`\gamma \le K`.

    .. math:: \tau(\gamma) = \sum_{j=0}^{\gamma} P_j, \qquad \gamma = 0, \dots, K .

    Parameters
    ----------
    acceptance : array_like in [0, 1], shape (..., K)
        Per-position acceptance: conditional :math:`\alpha_1..\alpha_K`
        (``kind="conditional"``) or prefix :math:`P_1..P_K` (``kind="prefix"``).
    kind : {"conditional", "prefix"}

    Returns
    -------
    ndarray, shape (..., K + 1)
        Entry ``gamma`` is :math:`\tau(\gamma)`.

    Examples
    --------
    >>> tokens_per_round_positional([0.8, 0.5]).tolist()
    [1.0, 1.8, 2.2]
    """
    P = _positional_prefix(acceptance, kind)
    return _tau_curve(P)


def _tau_curve(P):
    return np.concatenate([np.ones((*P.shape[:-1], 1)), 1.0 + np.cumsum(P, axis=-1)], axis=-1)


def acceptance_count_pmf_positional(acceptance, gamma=None, *, kind="conditional"):
    r"""Law of the accepted count :math:`A` for position-dependent acceptance.

    .. math::

        P(A = \ell) = P_\ell (1 - \alpha_{\ell+1}) = P_\ell - P_{\ell+1}\ (\ell < \gamma),
        \qquad P(A = \gamma) = P_\gamma .

    Parameters
    ----------
    acceptance : array_like in [0, 1], shape (..., K)
        See :func:`tokens_per_round_positional`; prefix input must not
        increase (up to ``gamma``), or the law would have negative entries.
    gamma : int in [0, K], optional
        Draft length (default ``K``).
    kind : {"conditional", "prefix"}

    Returns
    -------
    ndarray, shape (..., gamma + 1)

    Examples
    --------
    >>> acceptance_count_pmf_positional([0.5, 0.5]).tolist()
    [0.5, 0.25, 0.25]
    """
    P = _positional_prefix(acceptance, kind)
    K = P.shape[-1]
    g = K if gamma is None else _check_scalar_gamma(gamma)
    if g > K:
        raise InvalidParameterError(f"gamma must be <= K = {K} (positions given); got {g}")
    rise = np.diff(P[..., :g], axis=-1) > 0  # P_l - P_{l+1} < 0: a negative probability
    if rise.any():
        idx = tuple(int(i) for i in np.argwhere(rise)[0])
        raise InvalidParameterError(
            f"prefix probabilities must not increase (P(A = l) = P_l - P_(l+1) would be "
            f"negative); got P_{idx[-1] + 2} = {float(P[(*idx[:-1], idx[-1] + 1)])!r} > "
            f"P_{idx[-1] + 1} = {float(P[idx])!r} (index {idx})"
        )
    return _pmf_from_prefix(P[..., :g])


def speedup_positional(acceptance, c, *, kind="conditional"):
    r"""Walltime improvement :math:`S(\gamma) = \tau(\gamma)/(\gamma c + 1)` for gamma = 0..K.

    Parameters
    ----------
    acceptance : array_like in [0, 1], shape (..., K)
        See :func:`tokens_per_round_positional`.
    c : float or array_like >= 0, shape broadcastable to (...)
    kind : {"conditional", "prefix"}

    Returns
    -------
    ndarray, shape (..., K + 1)

    Examples
    --------
    >>> speedup_positional([0.5, 0.5], 0.2).tolist()
    [1.0, 1.25, 1.25]
    """
    P = _positional_prefix(acceptance, kind)
    cc = _check_cost(c, "c")
    # numpy's own error ("operands could not be broadcast together with shapes (2,3) (3,3)")
    # names neither argument and shows the shapes after the gamma axis was added.
    _check_broadcast(**{"acceptance.shape[:-1]": P[..., 0], "c": cc})
    g = np.arange(P.shape[-1] + 1)
    return _tau_curve(P) / (g * cc[..., None] + 1.0)


# --------------------------------------------------------------------------- optimal gamma


@dataclass(frozen=True)
class OptimalGammaResult(SolverResult):
    """Result of :func:`optimal_gamma` and :func:`optimal_gamma_positional`.

    The shared fields (``method``, ``status``, ``message``, ``inputs``) come
    from :class:`.SolverResult`.

    Attributes
    ----------
    gamma : int or int ndarray
        Optimal integer draft length :math:`\\gamma^*` (the shortest on ties).
    speedup : float or ndarray
        :math:`S(\\gamma^*)`.
    tokens_per_round : float or ndarray
        :math:`\\tau(\\gamma^*)`.
    gamma_continuous : float or ndarray or None
        Maximiser over real :math:`\\gamma \\ge 0` of the i.i.d. speedup
        (``inf`` where :math:`S` increases without bound: ``c = 0`` or
        ``alpha = 1`` with ``c < 1``); ``None`` for position-dependent input.
    capped : bool or bool ndarray
        True where the optimum lies beyond the cap: for :func:`optimal_gamma`, where
        :math:`S(\\gamma_{\\max} + 1) > S(\\gamma_{\\max})` (the marginal test at the
        cap, the same for every method); for :func:`optimal_gamma_positional`, where
        :math:`S` still rises into ``K`` (nothing is known beyond it).  ``gamma`` is
        then the cap, not the optimum.
    method : str
        The ``method=`` argument.
    status : str
        ``"optimal"``, or ``"capped"`` if any entry is capped.
    message : str
    inputs : dict
        ``gamma_max`` (:func:`optimal_gamma`) or ``kind``
        (:func:`optimal_gamma_positional`); ``alpha``, ``c`` and
        ``acceptance`` are array_like and left out.
    """

    gamma: int | np.ndarray
    speedup: float | np.ndarray
    tokens_per_round: float | np.ndarray
    gamma_continuous: float | np.ndarray | None
    capped: bool | np.ndarray


def continuous_optimal_gamma(alpha, c):
    r"""Real maximiser of the i.i.d. speedup, through the Lambert W function.

    With :math:`x = \gamma + 1` and :math:`L = -\ln\alpha`,
    :math:`dS/dx = 0 \iff \alpha^x [L(cx + 1 - c) + c] = c`, solved by

    .. math::

        t = \frac{L(1-c)}{c}, \quad s = -W_{-1}\!\big(-e^{-1-t}\big), \quad
        \gamma^*_{\mathrm{cont}} = \max\!\Big(\frac{s - 1 - t}{L} - 1,\ 0\Big)
        = \max\!\Big(\frac{\ln s}{L} - 1,\ 0\Big)

    (docs/theory.md §1.5(b)).  :math:`S` is quasi-concave in real :math:`\gamma`
    (a concave over an affine function), so the clipped stationary point is
    the maximiser over :math:`\gamma \ge 0`.  ``s`` comes from
    ``scipy.special.lambertw(..., k=-1)`` and is polished by Newton steps on
    :math:`s - 1 - \ln s = t`, which also covers large ``t`` where
    :math:`e^{-1-t}` underflows.

    Parameters
    ----------
    alpha : float or array_like in [0, 1]
    c : float or array_like >= 0

    Returns
    -------
    float or ndarray
        ``inf`` where the speedup increases in :math:`\gamma` for ever, so that
        no finite draft length maximises it (``c = 0 < alpha``, or ``alpha = 1``
        with ``c < 1``; the speedup stays bounded unless also ``alpha = 1`` and
        ``c = 0``); ``0`` where drafting never helps
        (``alpha = 0`` or ``c >= 1``).

    Examples
    --------
    docs/theory.md §8.5:

    >>> round(continuous_optimal_gamma(0.8, 0.05), 3)
    7.857
    """
    a = _check_prob(alpha, "alpha")
    cc = _check_cost(c, "c")
    _check_broadcast(alpha=a, c=cc)
    out = _gamma_cont(*np.broadcast_arrays(a, cc))
    return _scalar_out(out, a.ndim == 0 and cc.ndim == 0)


def _gamma_cont(a, cc):
    a = np.asarray(a, dtype=np.float64)
    cc = np.asarray(cc, dtype=np.float64)
    out = np.zeros(a.shape)
    unbounded = ((cc == 0) & (a > 0)) | ((a == 1) & (cc < 1))
    out[unbounded] = np.inf
    reg = (a > 0) & (a < 1) & (cc > 0) & (cc < 1)
    if reg.any():
        L = -np.log(a[reg])
        cr = cc[reg]
        with np.errstate(over="ignore"):
            t = L * (1.0 - cr) / cr
        # For t > 1e200, s = 1 + t + ln s gives ln s = ln t to double precision
        # (t itself may overflow when c is subnormal).
        huge = t > 1e200
        t = np.where(huge, 1.0, t)
        # d = s - 1 > 0 solves g(d) = d - log1p(d) - t = 0 (from s - 1 - ln s = t).
        d = np.full(t.shape, np.nan)
        mid = t < 700.0  # below, exp(-1 - t) is a normal float
        with np.errstate(invalid="ignore"):
            d[mid] = -lambertw(-np.exp(-1.0 - t[mid]), k=-1).real - 1.0
        # Near the branch point (small t) lambertw loses accuracy; the series
        # d = sqrt(2t) + 2t/3 + O(t^1.5) is then the better start.
        guess = np.where(t < 1.0, np.sqrt(2.0 * t) + 2.0 * t / 3.0, t + np.log1p(t))
        d = np.where(np.isfinite(d) & (d > 0) & (t >= 1e-4), d, guess)
        for _ in range(50):  # Newton polish, g' = d / (1 + d): quadratic from these starts
            step = (d - np.log1p(d) - t) * (1.0 + d) / d
            d = d - step
            if np.all(np.abs(step) <= 4e-16 * d):
                break
        # s - 1 - t = ln s, so x* = ln(s) / L without cancellation.
        ln_s = np.where(huge, np.log(L) + np.log1p(-cr) - np.log(cr), np.log1p(d))
        out[reg] = np.maximum(ln_s / L - 1.0, 0.0)
    return out


def _marginal_iid(a, cc, gamma_max):
    shape = a.shape
    a, cc = a.ravel(), cc.ravel()
    gamma = np.full(a.shape, gamma_max, dtype=np.int64)
    done = np.zeros(a.shape, dtype=bool)
    tau = np.ones(a.shape)
    P = np.ones(a.shape)
    for g in range(gamma_max):
        Pn = P * a
        stop = ~done & ~(Pn * (g * cc + 1.0) > cc * tau * (1.0 + TIE_RTOL))
        gamma[stop] = g
        done |= stop
        if done.all():
            break
        tau = tau + Pn
        P = Pn
    return gamma.reshape(shape), (~done).reshape(shape)


def _lambertw_integer(a, cc, gamma_max):
    cont = _gamma_cont(a, cc)
    capped = cont >= gamma_max
    fl = np.where(capped, gamma_max, np.floor(np.minimum(cont, gamma_max))).astype(np.int64)
    ce = np.minimum(fl + 1, gamma_max)
    # Ceil beats floor iff P_{fl+1} (fl c + 1) > c tau(fl), the marginal test.
    up = a ** (fl + 1.0) * (fl * cc + 1.0) > cc * _tau(a, fl) * (1.0 + TIE_RTOL)
    return np.where(up & ~capped, ce, fl), capped


def _enumerate_iid(a, cc, gamma_max):
    g = np.arange(gamma_max + 1)
    S = _tau(a[..., None], g) / (g * cc[..., None] + 1.0)
    best = S.max(axis=-1, keepdims=True)
    gamma = np.argmax(S >= best * (1.0 - TIE_RTOL), axis=-1)
    capped = S[..., -1] > S[..., -2]  # still rising at the cap: no maximum in range
    return np.where(capped, gamma_max, gamma).astype(np.int64), capped


def optimal_gamma(alpha, c, *, method="marginal", gamma_max=1000):
    r"""Optimal integer draft length for i.i.d. acceptance.

    Maximises :math:`S(\gamma) = (1 - \alpha^{\gamma+1}) / ((1 - \alpha)(\gamma c + 1))`
    over integers :math:`0 \le \gamma \le \gamma_{\max}`.

    Methods:

    ``"marginal"`` (default)
        :math:`\gamma^* = \min\{\gamma : \alpha^{\gamma+1} \le c\,S(\gamma)\}`
        (docs/theory.md §1.5(a)), exact on integers.
    ``"lambertw"``
        The continuous optimum (:func:`continuous_optimal_gamma`), then the
        better of its floor and ceiling by the same marginal test.
    ``"enumerate"``
        Brute-force argmax of :math:`S` over ``0..gamma_max`` (slow oracle).

    Ties go to the shorter draft.  ``marginal`` and ``lambertw`` call
    :math:`\gamma \to \gamma + 1` no gain when
    :math:`\alpha^{\gamma+1}(\gamma c + 1) \le c\,\tau(\gamma)(1 + \epsilon)`,
    ``enumerate`` takes the shortest :math:`\gamma` whose :math:`S` is within
    relative :math:`\epsilon` of the maximum (:math:`\epsilon` =
    :data:`TIE_RTOL`).  Where :math:`S` is that flat (``c`` below about
    ``1e-12``) they may return different ``gamma`` whose speed-ups agree to
    :math:`\epsilon`.  At ``c = 0`` every method returns ``gamma_max``, capped
    (``0`` for ``alpha = 0``, where :math:`S \equiv 1`).

    Parameters
    ----------
    alpha : float or array_like in [0, 1]
    c : float or array_like >= 0
        Broadcast against ``alpha``.
    method : {"marginal", "lambertw", "enumerate"}
    gamma_max : int >= 1
        Largest draft length considered; at most :data:`MAX_GAMMA` of the method
        (``InstanceTooLargeError`` beyond).  Where :math:`S` still increases
        there (``c = 0``, or ``alpha`` near 1 with tiny ``c``), ``gamma`` is
        ``gamma_max`` and ``capped`` is True.

    Returns
    -------
    OptimalGammaResult
        Scalars for scalar inputs, arrays of the broadcast shape otherwise.
        ``gamma_continuous`` is filled for every method.

    Examples
    --------
    docs/theory.md §1.5(c), :math:`(\alpha, c) = (0.8, 0.05)`:

    >>> r = optimal_gamma(0.8, 0.05)
    >>> r.gamma, round(r.speedup, 3), round(r.gamma_continuous, 3)
    (8, 3.092, 7.857)
    """
    check_choice(method, "method", GAMMA_METHODS)
    gamma_max = check_positive_int(gamma_max, "gamma_max")
    check_limit(gamma_max, "gamma_max", MAX_GAMMA[method], f"method={method!r}")
    a0 = _check_prob(alpha, "alpha")
    c0 = _check_cost(c, "c")
    _check_broadcast(alpha=a0, c=c0)
    scalar = a0.ndim == 0 and c0.ndim == 0
    a, cc = (np.array(x, dtype=np.float64) for x in np.broadcast_arrays(a0, c0))
    if method == "enumerate":  # a (size, gamma_max + 1) table
        size = a.size * (gamma_max + 1)
        check_limit(size, "alpha.size * (gamma_max + 1)", MAX_GAMMA["enumerate"])
    solver = {"marginal": _marginal_iid, "lambertw": _lambertw_integer, "enumerate": _enumerate_iid}
    gamma, capped = solver[method](a, cc, gamma_max)
    # c = 0: S = tau rises for every alpha > 0 (no maximum in range), and is
    # flat at 1 for alpha = 0 (shortest draft).  In floats tau stops rising
    # once alpha^gamma is below an ulp (or underflows), which the methods would
    # each take for a maximum at a different gamma.
    free = cc == 0
    gamma = np.where(free, np.where(a > 0, gamma_max, 0), gamma).astype(np.int64)
    # Capped means the optimum lies beyond gamma_max: one more draft would still gain, by
    # the marginal test at gamma_max itself.  Each method's own flag looked at other
    # things (never reaching the test, S rising into the cap, the continuous optimum past
    # it) and called a maximum exactly at gamma_max capped for two methods of three.
    rising = a ** (gamma_max + 1.0) * (gamma_max * cc + 1.0) > cc * _tau(a, gamma_max) * (
        1.0 + TIE_RTOL
    )
    capped = np.where(free, a > 0, (gamma == gamma_max) & rising)
    tau = _tau(a, gamma)
    S = tau / (gamma * cc + 1.0)
    cont = _gamma_cont(a, cc)
    n_capped = int(np.count_nonzero(capped))
    status = "capped" if n_capped else "optimal"
    message = (
        f"{n_capped} entr{'y' if n_capped == 1 else 'ies'} still improving at gamma_max = "
        f"{gamma_max}"
        if n_capped
        else f"exact integer optimum by the {method} method"
    )
    return OptimalGammaResult(
        gamma=_scalar_out(gamma, scalar),
        speedup=_scalar_out(S, scalar),
        tokens_per_round=_scalar_out(tau, scalar),
        gamma_continuous=_scalar_out(cont, scalar),
        capped=_scalar_out(capped, scalar),
        method=method,
        status=status,
        message=message,
        inputs={"gamma_max": gamma_max},
    )


def optimal_gamma_positional(acceptance, c, *, kind="conditional", method="marginal"):
    r"""Optimal draft length for position-dependent acceptance, :math:`0 \le \gamma \le K`.

    ``"marginal"``: :math:`\gamma^* = \min\{\gamma : P_{\gamma+1} \le c\,S(\gamma)\}`,
    exact when :math:`P_j` is non-increasing (always true for conditional
    input; prefix input that rises raises an error).  ``"enumerate"``: argmax
    of :math:`S(\gamma) = \tau(\gamma)/(\gamma c + 1)` over ``0..K``, valid for
    any input, including noisy measured prefixes.

    Parameters
    ----------
    acceptance : array_like in [0, 1], shape (..., K)
        Conditional :math:`\alpha_1..\alpha_K` or prefix :math:`P_1..P_K`.
    c : float or array_like >= 0, broadcastable to (...)
    kind : {"conditional", "prefix"}
    method : {"marginal", "enumerate"}

    Returns
    -------
    OptimalGammaResult
        Arrays of shape (...) (scalars for 1-D ``acceptance`` and scalar
        ``c``); ``capped`` where :math:`S` still increases at ``K``;
        ``gamma_continuous`` is None.

    Examples
    --------
    >>> r = optimal_gamma_positional([0.9, 0.8, 0.3], 0.1)
    >>> r.gamma, round(r.speedup, 4)  # (1 + 0.9 + 0.72) / 1.2
    (2, 2.1833)
    """
    check_choice(method, "method", ("marginal", "enumerate"))
    P = _positional_prefix(acceptance, kind)
    if P.shape[-1] == 0:
        raise InvalidParameterError(
            "acceptance must give at least one draft position to choose among "
            f"(shape (..., K) with K >= 1); got shape {P.shape}"
        )
    cc = _check_cost(c, "c")
    _check_broadcast(**{"acceptance.shape[:-1]": P[..., 0], "c": cc})
    scalar = P.ndim == 1 and cc.ndim == 0
    shape = np.broadcast_shapes(P.shape[:-1], cc.shape)
    K = P.shape[-1]
    P = np.broadcast_to(P, (*shape, K))
    cc = np.broadcast_to(cc, shape)
    tau = _tau_curve(P)
    g = np.arange(K + 1)
    S = tau / (g * cc[..., None] + 1.0)
    if method == "marginal":
        _check_monotone(P)
        cont = P * (g[:-1] * cc[..., None] + 1.0) > cc[..., None] * tau[..., :-1] * (1 + TIE_RTOL)
        stops = ~cont
        capped = ~stops.any(axis=-1)
        gamma = np.where(capped, K, np.argmax(stops, axis=-1))
    else:
        best = S.max(axis=-1, keepdims=True)
        capped = S[..., -1] > S[..., -2] if K else np.zeros(shape, dtype=bool)
        gamma = np.where(capped, K, np.argmax(S >= best * (1.0 - TIE_RTOL), axis=-1))
    gamma = gamma.astype(np.int64)
    Sg = np.take_along_axis(S, gamma[..., None], axis=-1)[..., 0]
    tg = np.take_along_axis(tau, gamma[..., None], axis=-1)[..., 0]
    n_capped = int(np.count_nonzero(capped))
    return OptimalGammaResult(
        gamma=_scalar_out(gamma, scalar),
        speedup=_scalar_out(Sg, scalar),
        tokens_per_round=_scalar_out(tg, scalar),
        gamma_continuous=None,
        capped=_scalar_out(capped, scalar),
        method=method,
        status="capped" if n_capped else "optimal",
        message=(
            f"{n_capped} entries still improving at K = {K}"
            if n_capped
            else f"exact integer optimum by the {method} method"
        ),
        inputs={"kind": kind},
    )


# --------------------------------------------------------------------------- inversions


def alpha_from_tokens_per_round(tau, gamma):
    r"""Invert Leviathan Eq. 1: the i.i.d. :math:`\alpha` with :math:`\tau(\gamma) = \tau`.

    :math:`\tau(\gamma) = \sum_{j \le \gamma} \alpha^j` increases strictly in
    :math:`\alpha` for :math:`\gamma \ge 1`, so the root in [0, 1] is unique;
    it is found by bisection to the last bit (vectorised).

    Parameters
    ----------
    tau : float or array_like in [1, gamma + 1]
        Measured tokens per target call (bonus token included).
    gamma : int or int array_like >= 1

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> alpha_from_tokens_per_round(1.75, 2)
    0.5
    """
    t = _as_real(tau, "tau")
    g = _check_gamma(gamma)
    if (g < 1).any():
        _raise_at("gamma", g, g < 1, "must be >= 1 to invert tau")
    _check_broadcast(tau=t, gamma=g)
    t, g = np.broadcast_arrays(t, g)
    bad = (t < 1.0) | (t > g + 1.0)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidParameterError(
            f"tau must lie in [1, gamma + 1] = [1, {int(g[idx])}]; got {float(t[idx])!r}"
            + (f" at index {idx}" if t.ndim else "")
        )
    lo, hi = np.zeros(t.shape), np.ones(t.shape)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        above = _tau(mid, g) > t
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    out = np.where(t == g + 1.0, 1.0, np.where(t == 1.0, 0.0, 0.5 * (lo + hi)))
    return _scalar_out(out, out.ndim == 0)


def conditional_from_tokens_per_round(tau):
    r"""Per-position acceptance from :math:`\tau` measured at :math:`\gamma = 1..G`.

    With :math:`\tau_0 = 1` and :math:`\tau_{-1} = 0` (docs/theory.md §1.3, 4.4):

    .. math::

        P_\gamma = \tau_\gamma - \tau_{\gamma-1}, \qquad
        \alpha_\gamma = \frac{P_\gamma}{P_{\gamma-1}}
                      = \frac{\tau_\gamma - \tau_{\gamma-1}}{\tau_{\gamma-1} - \tau_{\gamma-2}} .

    Measured values carry noise, so the output is not clipped to [0, 1]
    (a value above 1 flags noise); it is ``nan`` after a zero :math:`P_{\gamma-1}`.

    Parameters
    ----------
    tau : array_like, shape (..., G)
        :math:`\tau(1), \dots, \tau(G)` on the same data.

    Returns
    -------
    ndarray, shape (..., G)
        :math:`\alpha_1, \dots, \alpha_G`; ``prefix_probs`` of it gives
        :math:`P_1..P_G`.

    Examples
    --------
    >>> conditional_from_tokens_per_round([1.5, 1.75]).tolist()
    [0.5, 0.5]
    """
    t = _as_real(tau, "tau")
    if t.ndim == 0:
        raise InvalidParameterError("tau must have a last axis over gamma = 1..G; got a scalar")
    full = np.concatenate([np.ones((*t.shape[:-1], 1)), t], axis=-1)
    P = np.diff(full, axis=-1, prepend=0.0)  # P_0 = 1, P_1, ..., P_G
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(P[..., :-1] != 0, P[..., 1:] / P[..., :-1], np.nan)
    return out


def implied_cost_ratio(alpha, gamma, measured_speedup):
    r"""The cost ratio :math:`c` under which Theorem 3.8 predicts a measured speedup.

    .. math:: c = \frac{\tau(\gamma)/S - 1}{\gamma}

    A negative value means the measurement exceeds the :math:`c = 0` ceiling
    :math:`\tau(\gamma)` (docs/theory.md §1.6 caveat).

    Parameters
    ----------
    alpha : float or array_like in [0, 1]
    gamma : int or int array_like >= 1
    measured_speedup : float or array_like > 0

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> round(implied_cost_ratio(0.5, 1, 1.25), 12)  # Cor 3.9 backwards: 1.5/1.25 - 1
    0.2
    """
    a = _check_prob(alpha, "alpha")
    g = _check_gamma(gamma)
    if (g < 1).any():
        _raise_at("gamma", g, g < 1, "must be >= 1")
    s = _as_real(measured_speedup, "measured_speedup")
    if (s <= 0).any():
        _raise_at("measured_speedup", s, s <= 0, "must be > 0")
    _check_broadcast(alpha=a, gamma=g, measured_speedup=s)
    out = (_tau(a, g) / s - 1.0) / g
    return _scalar_out(out, a.ndim == 0 and g.ndim == 0 and s.ndim == 0)
