r"""Every interval and test of spectheory's statistical checkers, in one place.

The losslessness checkers (:func:`spectheory.check_lossless`, the audit of
logged samples :func:`spectheory.sim.audit.check_lossless_from_samples`), the
replay and sweep tables and the papers' reproductions all take their
statistics from here.  Where scipy has the statistic it is used or matched
exactly (``tests/sim/test_stats.py`` compares each function with scipy or with
the closed formula):

* :func:`wilson_interval`: Wilson's score interval (scipy's
  ``binomtest(k, n).proportion_ci(method="wilson")``, vectorised);
* :func:`clopper_pearson_interval`: the exact interval (scipy's
  ``method="exact"``), through beta quantiles;
* :func:`multinomial_gof`: the goodness-of-fit test behind every verdict:
  the likelihood-ratio statistic :math:`G = 2 N\,\mathrm{KL}(\hat p \| p)`
  after the pooling rule of :func:`pool_cells`, with a p-value from Agrawal's
  finite-sample bound [7]_ (:func:`kl_tail_bound`), valid at every level and
  every cell size;
* :func:`chisquare_gof`: Pearson's goodness of fit (``scipy.stats.chisquare``)
  after the same pooling, ``df = cells - 1``: the asymptotic p-value that
  replay's ``chi2_p`` column reports (not used for verdicts: far in the tail,
  where verdicts at ``alpha / m`` live, it overstates significance when a
  cell's expected count is small);
* :func:`uniformity_gof`, :func:`randomised_pit`: the pooled test of the
  randomised probability integral transform;
* :func:`bonferroni`, :func:`holm`: the multiple-testing corrections;
* :func:`chernoff_upper_tail`, :func:`azuma_upper_tail`: one-sided tail
  bounds of the acceptance-above-the-bound test (docs/theory.md §7.3);
* :func:`detectable_tv`: the power statement of :func:`multinomial_gof`
  (docs/theory.md §7.2).

Conventions: ``alpha`` is always a false-alarm rate (the probability that a
test rejects a true null), ``confidence = 1 - alpha`` for intervals, and a
verdict is "lossy" exactly when the Bonferroni-combined p-value of all its
tests is at most ``alpha`` (:func:`check_alpha`, :data:`DEFAULT_ALPHA`).

References
----------
.. [1] Wilson. "Probable inference, the law of succession, and statistical
   inference". JASA 22(158), 1927.
.. [2] Clopper, Pearson. "The use of confidence or fiducial limits
   illustrated in the case of the binomial". Biometrika 26(4), 1934.
.. [3] Cochran. "Some methods for strengthening the common chi-square
   tests". Biometrics 10(4), 1954 (expected counts of at least 5).
.. [4] Holm. "A simple sequentially rejective multiple test procedure".
   Scandinavian Journal of Statistics 6(2), 1979.
.. [5] Dunn, Smyth. "Randomized quantile residuals". Journal of
   Computational and Graphical Statistics 5(3), 1996 (randomised PIT).
.. [6] Hoeffding. "Probability inequalities for sums of bounded random
   variables". JASA 58(301), 1963.
.. [7] Agrawal. "Finite-sample concentration of the multinomial in relative
   entropy". IEEE Transactions on Information Theory 66(10), 2020,
   arXiv:1904.02291.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

from .._errors import InvalidParameterError, ShapeMismatchError

__all__ = [
    "DEFAULT_ALPHA",
    "MAX_PIT_BINS",
    "MIN_EXPECTED",
    "GofResult",
    "azuma_upper_tail",
    "bonferroni",
    "check_alpha",
    "chernoff_upper_tail",
    "chisquare_gof",
    "clopper_pearson_interval",
    "detectable_tv",
    "holm",
    "kl_critical",
    "kl_tail_bound",
    "mean_interval",
    "multinomial_gof",
    "nested_partition_sizes",
    "pool_cells",
    "randomised_pit",
    "uniformity_gof",
    "wilson_interval",
    "z_two_sided",
]

#: Default false-alarm rate of every losslessness verdict.
DEFAULT_ALPHA = 1e-6
#: Smallest expected count of a chi-square cell (Cochran's rule [3]_).
MIN_EXPECTED = 5.0
#: Largest number of equiprobable bins of the PIT's uniformity test.
MAX_PIT_BINS = 50


def check_alpha(alpha, name: str = "alpha") -> float:
    """Return ``alpha`` if it is a float in (0, 1), else raise naming ``name``.

    >>> check_alpha(0.05)
    0.05
    """
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, (float, np.floating)):
        raise InvalidParameterError(f"{name} must be a float in (0, 1); got {alpha!r}")
    if not 0 < alpha < 1:
        raise InvalidParameterError(f"{name} must be a float in (0, 1); got {alpha!r}")
    return float(alpha)


def z_two_sided(confidence: float) -> float:
    r"""The normal quantile :math:`z = \Phi^{-1}(1/2 + c/2)` of a two-sided interval.

    >>> round(z_two_sided(0.95), 6)
    1.959964
    """
    return float(special.ndtri(0.5 + 0.5 * check_alpha(confidence, "confidence")))


def _counts(k, n):
    k = np.asarray(k)
    n = np.asarray(n)
    if k.dtype.kind not in "iu" and not np.all(k == np.floor(k)):
        raise InvalidParameterError(f"k must hold integer counts; got {k!r}")
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise InvalidParameterError(f"counts must satisfy 0 <= k <= n, n >= 1; got k={k}, n={n}")
    return np.broadcast_arrays(k.astype(np.float64), n.astype(np.float64))


def wilson_interval(k, n, confidence: float = 0.95):
    r"""Wilson's score interval of a binomial proportion, vectorised.

    .. math::

        \frac{2k + z^2 \pm z\sqrt{4k(n-k)/n + z^2}}{2(n + z^2)},
        \qquad z = \Phi^{-1}\!\left(\tfrac{1 + c}{2}\right),

    with the lower end 0 at :math:`k = 0` and the upper end 1 at
    :math:`k = n`; equal to scipy's
    ``binomtest(k, n).proportion_ci(c, method="wilson")`` (Newcombe's form [1]_),
    which takes one count at a time.

    Parameters
    ----------
    k, n : int or array_like of int
        Successes and trials (broadcast together).
    confidence : float in (0, 1)

    Returns
    -------
    (low, high) : floats, or arrays of the broadcast shape

    Examples
    --------
    >>> lo, hi = wilson_interval(30, 100)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.2189, 0.3958)
    """
    k, n = _counts(k, n)
    z = z_two_sided(confidence)
    denom = 2 * (n + z * z)
    centre = (2 * k + z * z) / denom
    delta = z / denom * np.sqrt(4 * k * (n - k) / n + z * z)
    lo = np.where(k == 0, 0.0, centre - delta)
    hi = np.where(k == n, 1.0, centre + delta)
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


def clopper_pearson_interval(k, n, confidence: float = 0.95):
    r"""The exact (Clopper-Pearson [2]_) interval of a binomial proportion, vectorised.

    Its ends are beta quantiles,
    :math:`B^{-1}(a/2;\,k,\,n-k+1)` and :math:`B^{-1}(1-a/2;\,k+1,\,n-k)` with
    :math:`a = 1 - c`, 0 at :math:`k = 0` and 1 at :math:`k = n`: the
    interval that scipy's ``binomtest(k, n).proportion_ci(c, method="exact")``
    finds by root search.  Its coverage is at least ``c`` for every true
    proportion.

    >>> lo, hi = clopper_pearson_interval(0, 10)
    >>> float(lo), round(float(hi), 4)
    (0.0, 0.3085)
    """
    k, n = _counts(k, n)
    a = 1.0 - check_alpha(confidence, "confidence")
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k == 0, 0.0, stats.beta.ppf(a / 2, np.maximum(k, 1), n - k + 1))
        hi = np.where(k == n, 1.0, stats.beta.isf(a / 2, k + 1, np.maximum(n - k, 1)))
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


def mean_interval(x, confidence: float = 0.95):
    r"""Student-t interval of a mean, :math:`\bar x \pm t_{m-1}\, s/\sqrt m`.

    Returns ``(mean, low, high)``; with one value the interval is
    ``(nan, nan)`` (no variance estimate).

    >>> m, lo, hi = mean_interval([1.0, 2.0, 3.0])
    >>> m, round(lo, 4), round(hi, 4)
    (2.0, -0.4841, 4.4841)
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size == 0:
        raise InvalidParameterError("mean_interval needs at least one value")
    m = float(x.mean())
    if x.size == 1:
        return m, math.nan, math.nan
    t = float(stats.t.isf(0.5 - 0.5 * check_alpha(confidence, "confidence"), x.size - 1))
    half = t * float(x.std(ddof=1)) / math.sqrt(x.size)
    return m, m - half, m + half


@dataclass(frozen=True)
class GofResult:
    """Result of :func:`multinomial_gof`, :func:`chisquare_gof` and :func:`uniformity_gof`.

    Attributes
    ----------
    statistic : float
        The test's statistic on the pooled cells (``G`` or Pearson's).
    pvalue : float
        Its p-value; 1.0 when fewer than two cells remain.
    df : int
        ``cells - 1`` (no parameter is estimated: the null law is given).
    cells : int
        Cells after pooling.
    """

    statistic: float
    pvalue: float
    df: int
    cells: int


def _pool_plan(expected, min_expected):
    """The pooling rule on expected counts: ``(kept, join)``.

    ``kept`` marks the cells kept apart (expected count at least ``min_expected``); the
    others form one pooled cell, which joins the kept cell ``join`` (an index among the
    kept ones) when its own expected count is still below the rule, else ``join`` is None.
    A pooled cell still below the rule would dominate the statistic (one count in a cell
    of expectation e adds about 1/e): hence the merge into the smallest remaining cell.
    """
    kept = expected >= min_expected
    rest = float(expected[~kept].sum())
    join = None
    if 0 < rest < min_expected and kept.any():
        join = int(np.argmin(expected[kept]))
    return kept, join


def pooled_mass(probs, trials, min_expected: float = MIN_EXPECTED) -> float:
    """Mass of ``probs`` in the cells :func:`pool_cells` merges at ``trials`` outputs.

    A bias that moves mass only among those cells changes no pooled count, so it is
    invisible to the pooled partitions: a detectable total variation stated from them
    holds for biases beyond this mass (:func:`spectheory.sim.check.check_lossless`).
    """
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs[probs > 0]
    kept, join = _pool_plan(trials * probs, min_expected)
    mass = float(probs[~kept].sum())
    return mass + (float(probs[kept][join]) if join is not None else 0.0)


def pool_cells(counts, probs, min_expected: float = MIN_EXPECTED):
    """Observed and expected counts after the pooling rule of :func:`chisquare_gof`.

    >>> obs, exp = pool_cells([50, 45, 3, 2], [0.5, 0.44, 0.03, 0.03])
    >>> obs.tolist(), [round(e, 6) for e in exp.tolist()]
    ([50.0, 45.0, 5.0], [50.0, 44.0, 6.0])
    """
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    if counts.shape != probs.shape or counts.ndim != 1:
        raise ShapeMismatchError(
            f"counts and probs must be 1-D of the same shape; got {counts.shape} and {probs.shape}"
        )
    expected = counts.sum() * probs
    big, join = _pool_plan(expected, min_expected)
    obs = list(counts[big])
    exp = list(expected[big])
    rest_e = float(expected[~big].sum())
    if rest_e > 0:
        rest_o = float(counts[~big].sum())
        if join is not None:
            obs[join] += rest_o
            exp[join] += rest_e
        else:
            obs.append(rest_o)
            exp.append(rest_e)
    return np.array(obs, dtype=np.float64), np.array(exp, dtype=np.float64)


def chisquare_gof(counts, probs, min_expected: float = MIN_EXPECTED) -> GofResult:
    r"""Pearson's chi-square test of counts against a given law, small cells pooled.

    Pooling rule (Cochran [3]_): cells with expected count below
    ``min_expected`` are pooled into one cell; if that cell's expected count
    is still below ``min_expected`` it is merged into the remaining cell of
    smallest expected count.  The statistic
    :math:`\sum (O - E)^2 / E` is referred to :math:`\chi^2_{k-1}` with
    :math:`k` the number of cells after pooling (the law is given, no
    parameter is estimated): the value of ``scipy.stats.chisquare(obs, exp)``,
    computed by its formula with ``scipy.special.chdtrc`` because the scipy
    function costs about 1.6 ms a call (replay tests every row).
    With fewer than two cells left there is nothing to test: p-value 1.

    Outputs on cells of probability 0 must be excluded by the caller (they
    are proof of bias on their own); ``counts`` must be zero there.

    Parameters
    ----------
    counts : array_like (V,)
    probs : array_like (V,)
        The null law (sums to 1).
    min_expected : float

    Returns
    -------
    GofResult

    Examples
    --------
    >>> r = chisquare_gof([30, 40, 30], [0.3, 0.4, 0.3])
    >>> r.statistic, r.pvalue, r.df
    (0.0, 1.0, 2)
    """
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    _refuse_impossible(counts, probs)
    obs, exp = pool_cells(counts, probs, min_expected)
    if obs.size < 2:
        return GofResult(0.0, 1.0, 0, int(obs.size))
    return _pearson(obs, exp)


def _refuse_impossible(counts, probs):
    if counts.shape == probs.shape and np.any(counts[probs <= 0] > 0):
        t = int(np.flatnonzero((probs <= 0) & (counts > 0))[0])
        raise InvalidParameterError(
            f"counts has {counts[t]:g} outputs at token {t}, whose probability is 0"
        )


def _pearson(obs, exp) -> GofResult:
    stat = float(((obs - exp) ** 2 / exp).sum())
    df = int(obs.size - 1)
    return GofResult(stat, float(special.chdtrc(df, stat)), df, int(obs.size))


def kl_tail_bound(t: float, cells: int) -> float:
    r"""Agrawal's bound on :math:`P(N\,\mathrm{KL}(\hat p \| p) \ge t)` for a multinomial.

    For ``N`` draws from any law on ``cells = k`` cells, the moment generating
    function of :math:`N\,\mathrm{KL}(\hat p \| p)` is at most that of a
    Gamma(:math:`k - 1`, 1) variable (Agrawal [7]_, Theorem 1.2), so the
    Chernoff bound gives, for :math:`t > k - 1`,

    .. math::

        P(N\,\mathrm{KL} \ge t) \le e^{-t} \Big(\frac{e\,t}{k - 1}\Big)^{k - 1},

    and 1 for :math:`t \le k - 1`.  Finite-sample and exact in the sense of a
    bound: no approximation, whatever the cells' probabilities.

    >>> kl_tail_bound(1.0, 2), round(kl_tail_bound(20.0, 2), 10)
    (1.0, 1.121e-07)
    """
    d = int(cells) - 1
    if d < 1 or t <= d:
        return 1.0
    return min(1.0, math.exp(-t + d * (1.0 + math.log(t / d))))


def kl_critical(cells: int, alpha: float) -> float:
    """The ``t`` at which :func:`kl_tail_bound` equals ``alpha``: the rejection threshold.

    >>> round(kl_critical(2, kl_tail_bound(20.0, 2)), 9)
    20.0
    """
    d = int(cells) - 1
    if d < 1:
        return math.inf
    # -t + d (1 + ln(t/d)) = ln(alpha) has one root above d (the left side falls from 0 there).
    f = lambda t: -t + d * (1.0 + math.log(t / d)) - math.log(alpha)  # noqa: E731
    hi = 2.0 * d + 2.0 * -math.log(alpha)
    while f(hi) > 0:
        hi *= 2.0
    return optimize.brentq(f, float(d), hi, xtol=1e-12, rtol=1e-14)


def multinomial_gof(counts, probs, min_expected: float = MIN_EXPECTED) -> GofResult:
    r"""Goodness of fit with a p-value valid at every level: :math:`G` and Agrawal's bound.

    The cells are pooled as in :func:`chisquare_gof` (the rule depends on the
    null law only, so the pooled counts are again multinomial under it).  The
    statistic is the likelihood ratio :math:`G = 2 \sum O \ln(O/E) =
    2 N\,\mathrm{KL}(\hat p \| p)`, with the p-value :func:`kl_tail_bound` at
    :math:`G/2`.  That bound grows with the number of cells ``k``, so a bias on
    the likely tokens would drown among hundreds of tail cells; the test is
    therefore run on ``J`` nested partitions, fixed by ``p`` alone: the
    ``m = 1, 3, 7, 15, ...`` cells of largest expected count kept apart and the
    rest merged into one cell, and all ``k`` cells.  The p-value is the
    Bonferroni combination :math:`\min(1, J \min_j b_j)` of their bounds
    :math:`b_j`: valid at every level, since each :math:`b_j` is.  When the pooling merged
    cells, the unpooled cells are one more partition (the bound needs no minimum count), so
    a bias among the rare tokens of the pooled cell is not invisible.

    Pearson's chi-square tail is only an approximation: a check rejects at
    ``alpha / m``, often below 1e-8, where with 5 expected outputs in a cell it
    overstates significance about 60-fold (docs/checker.md, "Validity far in
    the tail").  This test never does, at the price of needing a larger
    statistic (:func:`detectable_tv`).

    Outputs on cells of probability 0 must be excluded by the caller, as for
    :func:`chisquare_gof`.

    Parameters
    ----------
    counts : array_like (V,)
    probs : array_like (V,)
        The null law (sums to 1).
    min_expected : float

    Returns
    -------
    GofResult
        ``statistic`` is :math:`G` on all ``cells``, ``df = cells - 1``.

    Examples
    --------
    >>> multinomial_gof([30, 40, 30], [0.3, 0.4, 0.3]).pvalue
    1.0
    >>> multinomial_gof([900, 100], [0.5, 0.5]).pvalue < 1e-100
    True
    """
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    _refuse_impossible(counts, probs)
    obs, exp = pool_cells(counts, probs, min_expected)
    k = obs.size
    bounds = []
    g = 0.0
    if k >= 2:
        order = np.argsort(-exp, kind="stable")
        obs, exp = obs[order], exp[order]
        for m in nested_partition_sizes(k)[:-1]:
            o = np.append(obs[:m], obs[m:].sum())
            e = np.append(exp[:m], exp[m:].sum())
            bounds.append(kl_tail_bound(_g_statistic(o, e) / 2.0, m + 1))
        g = _g_statistic(obs, exp)
        bounds.append(kl_tail_bound(g / 2.0, k))
    # The bound is valid at every cell size, so the unpooled cells are one more partition:
    # without it a bias inside the pooled cell (rare tokens) is invisible at any size.
    pos = probs > 0
    if np.count_nonzero(pos) > max(k, 1):
        raw = _g_statistic(counts[pos], counts.sum() * probs[pos])
        bounds.append(kl_tail_bound(raw / 2.0, int(np.count_nonzero(pos))))
    if not bounds:
        return GofResult(0.0, 1.0, 0, int(k))
    return GofResult(g, min(1.0, len(bounds) * min(bounds)), int(max(k - 1, 0)), int(k))


def nested_partition_sizes(cells: int) -> list:
    """Leading cells kept apart in each partition of :func:`multinomial_gof`; ``cells`` last.

    >>> nested_partition_sizes(2), nested_partition_sizes(20)
    ([2], [1, 3, 7, 15, 20])
    """
    sizes, m = [], 1
    while m + 1 < cells:
        sizes.append(m)
        m = 2 * m + 1
    return [*sizes, int(cells)]


def _g_statistic(obs, exp) -> float:
    nz = obs > 0
    g = 2.0 * float((obs[nz] * np.log(obs[nz] / exp[nz])).sum())
    return max(g, 0.0)  # rounding can make a perfect fit a hair negative


def uniformity_gof(u, max_bins: int = MAX_PIT_BINS) -> GofResult:
    """:math:`G` of ``u`` in [0, 1) against U(0, 1) on equiprobable bins, Agrawal's bound.

    ``min(max_bins, len(u) // 5)`` bins (at least 5 expected per bin); below
    10 values there is nothing to test (p-value 1).

    >>> uniformity_gof(np.arange(100) / 100).pvalue
    1.0
    """
    u = np.asarray(u, dtype=np.float64).ravel()
    if np.any(~(u >= 0) | (u >= 1)):
        raise InvalidParameterError("u must lie in [0, 1) (PIT values)")
    bins = min(max_bins, u.size // 5)
    if bins < 2:
        return GofResult(0.0, 1.0, 0, max(bins, 0))
    counts = np.bincount(np.minimum((u * bins).astype(np.int64), bins - 1), minlength=bins)
    # Equiprobable bins have no leading cells to single out: one partition.
    g = _g_statistic(counts.astype(np.float64), np.full(bins, u.size / bins))
    return GofResult(g, kl_tail_bound(g / 2.0, bins), bins - 1, bins)


def randomised_pit(probs, tokens, rng, key=None) -> np.ndarray:
    r"""Randomised probability integral transform of one token per row.

    .. math::

        u_t = F_t(y_t^-) + U_t\, p_t(y_t), \qquad
        F_t(y^-) = \sum_{x \prec_t y} p_t(x), \quad U_t \sim U(0, 1),

    with tokens ordered by decreasing ``key`` (default ``p``), ties by
    decreasing ``p`` then by id.  If :math:`y_t \sim p_t` given the past and
    the order is a function of the past, :math:`u_t` is exactly
    :math:`U(0, 1)` given the past [5]_, so the values of all rows are
    i.i.d. uniform and can be pooled (:func:`uniformity_gof`).

    Parameters
    ----------
    probs : ndarray (N, V), or (V,)
        Null laws, one row per token; or one law for every token.
    tokens : ndarray of int (N,)
    rng : numpy.random.Generator
        Supplies the ``N`` uniforms :math:`U_t` (one per row, in row order).
    key : ndarray (N, V), optional
        Sort key of each row (larger first); e.g. :math:`p/q` puts the tokens
        a draft favours last, so an excess of them pushes ``u`` towards 1.

    Returns
    -------
    ndarray (N,)
        In [0, 1); NaN where :math:`p_t(y_t) = 0`.

    Examples
    --------
    >>> u = randomised_pit([[0.5, 0.25, 0.25]], [2], np.random.default_rng(0))
    >>> bool(0.75 <= u[0] < 1.0)
    True
    """
    probs = np.asarray(probs, dtype=np.float64)
    tokens = np.asarray(tokens, dtype=np.int64)
    if probs.ndim == 1 and key is None and tokens.ndim == 1:
        # one law for every token: sort once (O(V log V) instead of O(N V))
        order = np.argsort(-probs, kind="stable")
        rank = np.empty(probs.size, dtype=np.int64)
        rank[order] = np.arange(probs.size)
        before = (np.cumsum(probs[order]) - probs[order])[rank]
        py = probs[tokens]
        u = before[tokens] + rng.random(tokens.size) * py
        return np.where(py > 0, np.minimum(u, np.nextafter(1.0, 0.0)), np.nan)
    if probs.ndim != 2 or tokens.shape != probs.shape[:1]:
        raise ShapeMismatchError(
            f"probs must be (N, V) or (V,) and tokens (N,); got {probs.shape} and {tokens.shape}"
        )
    N, V = probs.shape
    uni = rng.random(N)
    out = np.empty(N)
    ids = np.arange(V)
    step = max(1, (1 << 22) // max(V, 1))  # rows per block: bounded (block, V) temporaries
    for s in range(0, N, step):
        P = probs[s : s + step]
        y = tokens[s : s + step]
        r = np.arange(P.shape[0])
        py = P[r, y]
        ahead = (P > py[:, None]) | ((P == py[:, None]) & (ids[None] < y[:, None]))
        if key is not None:
            K = np.asarray(key[s : s + step], dtype=np.float64)
            ky = K[r, y]
            ahead = (K > ky[:, None]) | ((K == ky[:, None]) & ahead)
        u = (P * ahead).sum(axis=1) + uni[s : s + step] * py
        out[s : s + step] = np.where(py > 0, np.minimum(u, np.nextafter(1.0, 0.0)), np.nan)
    return out


def bonferroni(pvalues) -> float:
    r"""Bonferroni-combined p-value of :math:`m` tests, :math:`\min(1, m \min_i p_i)`.

    Rejecting when it is at most ``alpha`` has false-alarm rate at most
    ``alpha`` whatever the dependence between the tests.

    >>> bonferroni([0.01, 0.5, 0.2])
    0.03
    """
    p = np.asarray(list(pvalues.values()) if isinstance(pvalues, dict) else pvalues, float)
    if p.size == 0:
        return 1.0
    return float(min(1.0, p.size * p.min()))


def holm(pvalues) -> np.ndarray:
    r"""Holm's step-down adjusted p-values [4]_.

    With :math:`p_{(1)} \le \dots \le p_{(m)}`,
    :math:`\tilde p_{(i)} = \max_{j \le i} \min(1, (m - j + 1)\, p_{(j)})`;
    rejecting every test with :math:`\tilde p \le \alpha` controls the
    family-wise error rate at ``alpha``.  The smallest adjusted value is the
    Bonferroni one, so Holm and Bonferroni give the same global verdict;
    Holm rejects more individual tests (used to list suspicious positions).

    >>> holm([0.01, 0.04, 0.03]).round(6).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def _kl(a: float, b: float) -> float:
    def term(x, y):
        return 0.0 if x == 0 else x * math.log(x / y)

    return term(a, b) + term(1 - a, 1 - b)


def chernoff_upper_tail(k: int, N: int, mean: float) -> float:
    r"""Hoeffding's bound [6]_ on :math:`P(K \ge k)` for a sum of ``N`` independent Bernoullis.

    :math:`\exp(-N\,\mathrm{kl}(k/N \,\|\, \bar\mu))` when :math:`k/N > \bar\mu`
    (the mean of the success probabilities), else 1: valid when the trials
    have different probabilities (Poisson binomial).

    >>> round(chernoff_upper_tail(70, 100, 0.5), 6)
    0.000267
    """
    if N <= 0:
        return 1.0
    a = k / N
    if a <= mean:
        return 1.0
    if mean <= 0:
        return 0.0
    return math.exp(-N * _kl(a, mean))


def azuma_upper_tail(excess: float, K: int) -> float:
    r"""Azuma-Hoeffding bound :math:`\exp(-2 s^2 / K)` on :math:`P(D_K \ge s)`.

    For a supermartingale with increments in ranges of length 1 (hit
    indicators minus their conditional bounds along a sequential log); 1 when
    :math:`s \le 0`.

    >>> round(azuma_upper_tail(10.0, 100), 6)
    0.135335
    """
    if K <= 0 or excess <= 0:
        return 1.0
    return math.exp(-2.0 * excess * excess / K)


def detectable_tv(trials: int, bins: int, alpha: float, power: float = 0.99) -> float:
    r"""Smallest total-variation bias :func:`multinomial_gof` detects with probability ``power``.

    A bias :math:`\hat p` of the law ``p`` makes :math:`G` on ``bins`` cells
    approximately noncentral :math:`\chi^2_{\mathrm{bins}-1}(\lambda)` with
    :math:`\lambda = N\chi^2(\hat p\|p) \ge 4N\,\mathrm{TV}^2`
    (docs/theory.md §7.2); the returned TV is :math:`\sqrt{\lambda^*/(4N)}` with
    :math:`\lambda^*` the noncentrality at which :math:`G` on all ``bins`` cells
    exceeds its threshold :math:`2\,`:func:`kl_critical` at level ``alpha / J``
    (its share of the combined test) with probability ``power``.  Biases on the
    likely tokens are caught sooner, by the coarser partitions.

    >>> round(detectable_tv(20_000, 10, 1e-6), 3)
    0.037
    """
    if int(bins) < 2:
        return math.inf  # everything pooled into one cell: no power on the pooled cells
    df = int(bins) - 1
    # The full partition alone, at its Bonferroni share of alpha (a lower bound on the power;
    # + 1 for the unpooled partition that multinomial_gof adds when it pooled).
    crit = 2.0 * kl_critical(df + 1, alpha / (len(nested_partition_sizes(df + 1)) + 1))
    lo, hi = 0.0, 1.0
    while stats.ncx2.sf(crit, df, hi) < power:
        lo, hi = hi, 2 * hi
    lam = optimize.brentq(lambda x: stats.ncx2.sf(crit, df, x) - power, lo, hi, rtol=1e-12)
    tv = math.sqrt(lam / (4 * trials))
    return tv if tv <= 1.0 else math.inf  # a TV is at most 1: no bias is detected reliably
