r"""Log-linear scaling laws for acceptance: :math:`y = a + b \log_B x`.

Scylla [1]_ reports that acceptance rate and acceptance length grow
log-linearly in draft pretraining tokens and draft capacity (docs/theory.md §6.1);
docs/theory.md §6.2 fits :math:`\alpha = a + b \log_{10} N_{\text{draft}}` to
Leviathan et al. Table 3 [2]_.  :func:`fit_log_linear` fits the law by
ordinary least squares in :math:`u = \log_B x`:

.. math::

    \hat b = \frac{\sum (u_i - \bar u)(y_i - \bar y)}{\sum (u_i - \bar u)^2},
    \qquad \hat a = \bar y - \hat b \bar u, \qquad
    R^2 = 1 - \frac{\sum (y_i - \hat y_i)^2}{\sum (y_i - \bar y)^2},

with percentile bootstrap intervals for :math:`a` and :math:`b` (pairs
resampled with replacement; resamples with a single distinct ``x`` are
dropped) and the classical prediction interval for a new observation

.. math::

    \hat y_0 \pm t_{n-2,\,(1+\ell)/2}\; s \sqrt{1 + \frac1n + \frac{(u_0 - \bar u)^2}{S_{uu}}},
    \qquad s^2 = \frac{\sum (y_i - \hat y_i)^2}{n - 2} .

With three points (the published tables) the intervals are wide and the
bootstrap is crude (27 distinct resamples); they are reported, not hidden.

References
----------
.. [1] Yan et al. "Scaling Laws for Speculative Decoding". arXiv:2505.07858.
.. [2] Leviathan, Kalman, Matias. "Fast Inference from Transformers via
   Speculative Decoding". ICML 2023, arXiv:2211.17192.
.. [3] Efron, Tibshirani. "An Introduction to the Bootstrap". Chapman &
   Hall 1993, chapter 13 (percentile intervals).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from .._errors import InvalidParameterError
from .._validate import check_choice, check_limit, check_positive_int, check_rng, real_array
from . import _published
from ._result import SolverResult

__all__ = [
    "LogLinearFit",
    "fit_log_linear",
    "leviathan_capacity_data",
    "leviathan_capacity_slopes",
    "spec_bench_tau",
]


@dataclass(frozen=True)
class LogLinearFit(SolverResult):
    r"""Result of :func:`fit_log_linear`: :math:`y = a + b \log_B x`.

    The shared fields (``method``, ``status``, ``message``, ``inputs``) come
    from :class:`.SolverResult`.

    Attributes
    ----------
    intercept, slope : float
        :math:`\hat a` and :math:`\hat b` (``slope`` is per factor ``base``
        of ``x``: per decade for base 10).
    r_squared : float
    residual_std : float
        :math:`s`, with ``n - 2`` degrees of freedom.
    intercept_ci, slope_ci : ndarray (2,)
        Percentile bootstrap intervals at level ``confidence``.
    base : float
    confidence : float
    n : int
    n_boot : int
        Bootstrap resamples used (degenerate ones dropped).
    x, y : ndarray (n,)
        The data.
    method, status, message, inputs
        ``"ols"`` (least squares in closed form, percentile bootstrap);
        ``"optimal"`` (the least-squares minimiser); the message counts the
        bootstrap resamples kept; ``inputs`` holds ``base``, ``n_boot`` (as
        requested), ``confidence`` and ``seed`` (when it is an int or None).
    """

    intercept: float
    slope: float
    r_squared: float
    residual_std: float
    intercept_ci: np.ndarray
    slope_ci: np.ndarray
    base: float
    confidence: float
    n: int
    n_boot: int
    x: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)

    def _u(self, x_new):
        x_new = real_array(x_new, "x_new")
        if not np.all(np.isfinite(x_new) & (x_new > 0)):
            raise InvalidParameterError(f"x_new must be finite and > 0; got {x_new!r}")
        return np.log(x_new) / math.log(self.base)

    def predict(self, x_new):
        r"""Fitted :math:`\hat a + \hat b \log_B x` at ``x_new`` (float or ndarray).

        Raises
        ------
        InvalidParameterError
            ``x_new`` holds a bool, a string or a complex number (entry by
            entry), or a value that is not finite and > 0.
        """
        out = self.intercept + self.slope * self._u(x_new)
        return out.item() if out.ndim == 0 else out

    def prediction_interval(self, x_new, level=None):
        r"""Classical t-based prediction interval for a new observation at ``x_new``.

        Parameters
        ----------
        x_new : float or array_like > 0
        level : float in (0, 1), optional
            Default ``confidence``.

        Returns
        -------
        lo, hi : float or ndarray
        """
        level = self.confidence if level is None else _check_level(level, "level")
        u0 = self._u(x_new)
        u = np.log(self.x) / math.log(self.base)
        Suu = float(np.sum((u - u.mean()) ** 2))
        half = (
            stats.t.ppf(0.5 + level / 2, self.n - 2)
            * self.residual_std
            * np.sqrt(1.0 + 1.0 / self.n + (u0 - u.mean()) ** 2 / Suu)
        )
        mid = self.intercept + self.slope * u0
        lo, hi = mid - half, mid + half
        return (lo.item(), hi.item()) if np.ndim(lo) == 0 else (lo, hi)


def _check_level(level, name):
    if isinstance(level, bool | np.bool_) or not isinstance(level, numbers.Real) or not (
        0 < level < 1
    ):
        raise InvalidParameterError(f"{name} must be a number in (0, 1); got {level!r}")
    return float(level)


def _ols(u, y):
    ub, yb = u.mean(axis=-1, keepdims=True), y.mean(axis=-1, keepdims=True)
    Suu = np.sum((u - ub) ** 2, axis=-1)
    b = np.sum((u - ub) * (y - yb), axis=-1) / Suu
    a = yb[..., 0] - b * ub[..., 0]
    return a, b


#: Largest bootstrap table ``n_boot * len(x)`` of :func:`fit_log_linear` (8 bytes each).
MAX_BOOT_DRAWS = 50_000_000


def fit_log_linear(x, y, *, base=10.0, n_boot=2000, confidence=0.95, seed=0):
    r"""Least-squares fit of :math:`y = a + b \log_B x` with bootstrap and prediction intervals.

    Parameters
    ----------
    x : array_like (n,), > 0
        The scale variable (draft parameters, pretraining tokens, ...).
    y : array_like (n,)
        The response (acceptance rate, acceptance length ...).  ``x`` and
        ``y`` hold real numbers: a bool, string or complex entry is refused,
        even among numbers.
    base : float > 0, != 1, or "e"
        Base of the logarithm; 10 gives the slope per decade (docs/theory.md §6.2).
    n_boot : int >= 1
        Bootstrap resamples.
    confidence : float in (0, 1)
        Level of the bootstrap and prediction intervals.
    seed : int >= 0, SeedSequence, numpy.random.Generator or None
        Checked by :func:`spectheory._validate.check_rng`: the same seed gives
        the same intervals.  ``n_boot * len(x)`` is at most :data:`MAX_BOOT_DRAWS`.

    Returns
    -------
    LogLinearFit

    Raises
    ------
    InvalidParameterError
        A bool, string or complex entry in ``x`` or ``y``, ``x`` not finite and
        > 0, ``y`` not finite, fewer than 3 distinct ``x``, or a bad ``base``,
        ``n_boot``, ``confidence`` or ``seed``.

    Examples
    --------
    Points exactly on :math:`y = 1 + 2 \log_{10} x`:

    >>> fit = fit_log_linear([1, 10, 100], [1, 3, 5], n_boot=10)
    >>> round(fit.intercept, 12), round(fit.slope, 12), round(fit.r_squared, 12)
    (1.0, 2.0, 1.0)
    >>> round(fit.predict(1000), 12)
    7.0
    """
    if isinstance(base, str):
        check_choice(base, "base", ("e",))
        base = math.e
    if isinstance(base, bool | np.bool_) or not isinstance(base, numbers.Real):
        raise InvalidParameterError(f"base must be a number > 0 other than 1, or 'e'; got {base!r}")
    if not (math.isfinite(base) and base > 0 and base != 1):
        raise InvalidParameterError(f"base must be > 0 and != 1; got {base!r}")
    n_boot = check_positive_int(n_boot, "n_boot")
    confidence = _check_level(confidence, "confidence")
    rng = check_rng(seed, "seed")
    xs, ys = real_array(x, "x"), real_array(y, "y")
    if xs.ndim != 1 or xs.shape != ys.shape:
        raise InvalidParameterError(
            f"x and y must be 1-D of the same length; got shapes {xs.shape} and {ys.shape}"
        )
    bad = ~np.isfinite(xs) | (xs <= 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise InvalidParameterError(f"x must be finite and > 0; got {float(xs[i])!r} at index {i}")
    bad = ~np.isfinite(ys)
    if bad.any():
        i = int(np.argmax(bad))
        raise InvalidParameterError(f"y must be finite; got {float(ys[i])!r} at index {i}")
    if np.unique(xs).size < 3:
        raise InvalidParameterError(
            f"a fit with intervals needs at least 3 distinct x values; got {np.unique(xs).size}"
        )
    n = xs.size
    # Resampling draws an (n_boot, n) index table.
    check_limit(n_boot * n, "n_boot * len(x)", MAX_BOOT_DRAWS)
    u = np.log(xs) / math.log(base)
    if np.unique(u).size < 3 or not np.ptp(u) > 1e-12 * max(1.0, float(np.abs(u).max())):
        # Distinct x whose logarithms coincide (x = 1, 1 + 1e-16, ...): the fit is NaN.
        raise InvalidParameterError(
            f"the logarithms of x collapse ({np.unique(u).size} distinct values, spread "
            f"{float(np.ptp(u))!r}): a fit needs x spread over a measurable range"
        )
    a, b = _ols(u, ys)
    a, b = float(a), float(b)
    resid = ys - (a + b * u)
    sst = float(np.sum((ys - ys.mean()) ** 2))
    sse = float(np.sum(resid**2))
    r2 = 1.0 - sse / sst if sst > 0 else 1.0
    s = math.sqrt(sse / (n - 2))

    # Resample the pairs in a canonical order (by x, then y): the same data set and seed
    # give the same intervals whatever order the pairs were listed in.
    order = np.lexsort((ys, xs))
    idx = rng.integers(0, n, size=(n_boot, n))
    ub, yb = u[order][idx], ys[order][idx]
    ok = np.ptp(ub, axis=1) > 0
    ab, bb = _ols(ub[ok], yb[ok])
    q = [50 * (1 - confidence), 50 * (1 + confidence)]
    a_ci = np.percentile(ab, q) if ab.size else np.array([np.nan, np.nan])
    b_ci = np.percentile(bb, q) if bb.size else np.array([np.nan, np.nan])
    return LogLinearFit(
        intercept=a,
        slope=b,
        r_squared=r2,
        residual_std=s,
        intercept_ci=a_ci,
        slope_ci=b_ci,
        base=float(base),
        confidence=confidence,
        n=n,
        n_boot=int(ok.sum()),
        x=xs,
        y=ys,
        method="ols",
        status="optimal",
        message=f"least squares in closed form; {int(ok.sum())} of {n_boot} bootstrap "
        "resamples kept (those with a single distinct x dropped)",
        inputs={"base": float(base), "n_boot": n_boot, "confidence": confidence}
        | ({"seed": seed} if seed is None or isinstance(seed, int) else {}),
    )


def leviathan_capacity_data(target, temperature):
    r"""Draft sizes and :math:`\alpha` of Leviathan et al. Table 3 for one target.

    Parameters
    ----------
    target : {"T5-XXL EnDe", "T5-XXL CNNDM", "LaMDA 137B"}
    temperature : {0, 1}

    Returns
    -------
    params : ndarray (3,)
        Draft parameter counts (docs/theory.md §6.2).
    alpha : ndarray (3,)

    Examples
    --------
    >>> x, y = leviathan_capacity_data("LaMDA 137B", 0)
    >>> x.tolist(), y.tolist()
    ([100000000.0, 2000000000.0, 8000000000.0], [0.61, 0.71, 0.75])
    """
    check_choice(target, "target", ("T5-XXL EnDe", "T5-XXL CNNDM", "LaMDA 137B"))
    if temperature not in (0, 1) or isinstance(temperature, bool):
        raise InvalidParameterError(f"temperature must be 0 or 1; got {temperature!r}")
    temperature = int(temperature)  # 0.0 and 1.0 index the table too
    rows = [
        (_published.LEVIATHAN_DRAFT_PARAMS[d], al[temperature])
        for d, al in _published.LEVIATHAN_TABLE3[target].items()
        if d in _published.LEVIATHAN_DRAFT_PARAMS
    ]
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def spec_bench_tau(setting):
    """Spec-Bench leaderboard mean acceptance length (tau) and speedup for one setting.

    Parameters
    ----------
    setting : {"3090 V-7B", "A100 V-7B", "A100 V-13B", "A100 V-33B"}

    Returns
    -------
    dict {method: (tau, speedup)}
        Methods without a published entry for the setting are left out.

    Examples
    --------
    >>> spec_bench_tau("A100 V-13B")["EAGLE3"]
    (5.71, 3.02)
    """
    check_choice(setting, "setting", ("3090 V-7B", "A100 V-7B", "A100 V-13B", "A100 V-33B"))
    return {m: row[setting] for m, row in _published.SPEC_BENCH.items() if setting in row}


def leviathan_capacity_slopes() -> dict:
    r"""Capacity slopes of Leviathan et al. Table 3: :math:`\hat b` per decade of draft parameters.

    The least-squares slope of :math:`\alpha` against :math:`\log_{10}` of the
    draft's parameter count (:func:`fit_log_linear` on
    :func:`leviathan_capacity_data`), for every target and temperature of the
    table (docs/theory.md §6.2).  Computed from the published table each time:
    no number is copied by hand.

    Returns
    -------
    dict {"TARGET, T=t": float}

    Examples
    --------
    >>> {k: round(v, 3) for k, v in leviathan_capacity_slopes().items()}["LaMDA 137B, T=0"]
    0.074
    """
    slopes = {}
    for target in ("T5-XXL EnDe", "T5-XXL CNNDM", "LaMDA 137B"):
        for temperature in (0, 1):
            x, y = leviathan_capacity_data(target, temperature)
            fit = fit_log_linear(x, y, n_boot=1)  # the point estimate; no interval needed
            slopes[f"{target}, T={temperature}"] = fit.slope
    return slopes
