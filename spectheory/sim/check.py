r"""Statistical test of losslessness: run a verifier many times, compare its outputs with p.

A verifier is lossless when its output ``y`` has law exactly ``p`` (the
processed target) for every target, draft and draft law it supports.  Exact
laws (:mod:`spectheory.exact`) prove it on small vocabularies; this module
tests it by sampling at any vocabulary size, for registered verifiers and for
user callables ``fn(target, draft, drafts, rng) -> int``.

Tests (all at a stated false-alarm rate ``alpha``, Bonferroni-split):

* **impossible outputs**: a token with ``p(y) = 0`` is proof of bias;
* **per row**, Pearson's chi-square of the output counts against ``p``, bins
  with expected count below 5 merged into one (docs/theory.md §7.2);
* **pooled over rows** (each row its own target): the randomised probability
  integral transform :math:`u = F(y^-) + U p(y)`, with tokens ordered by
  decreasing ``p`` and :math:`U \sim U(0, 1)`, is exactly uniform under the
  null whatever ``p`` is, so the ``u`` of all rows and trials are pooled and
  tested for uniformity (chi-square on 50 equiprobable bins);
* **acceptance above the bound** (docs/theory.md §7.3): a lossless verifier's
  membership acceptance is at most :math:`\alpha^*` (:func:`spectheory.bound`);
  the count of accepted trials is tested against it with Hoeffding's
  Chernoff bound, :math:`P(K \ge k) \le \exp(-N\,\mathrm{kl}(k/N \,\|\, \bar\alpha^*))`,
  valid for rows with different bounds.  An excess is proof of bias.

Power: Pearson's statistic under a bias has noncentrality
:math:`N \chi^2(\hat p \| p) \ge 4 N\, \mathrm{TV}^2`, so the test of a row
detects with 99% probability every bias of total variation at least
:math:`\sqrt{\lambda_{99}/(4N)}`, with :math:`\lambda_{99}` the noncentrality at
which the noncentral chi-square exceeds the critical value with probability
0.99 (reported as ``detectable_tv``).  At the default 20,000 trials and
``alpha = 1e-6`` this is 0.030 for 10 bins, 0.042 for 100 and 0.067 for 1,000.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from .._errors import InvalidParameterError
from .._validate import as_distribution_pair, check_choice, check_positive_int
from ..drafting import SAMPLINGS, check_draft_support
from ..solvers.ot_dual import solve_bound
from .simulate import simulate

__all__ = ["DEFAULT_TRIALS", "LosslessReport", "check_lossless", "detectable_tv"]

#: Default number of trials per row.
DEFAULT_TRIALS = 20_000
#: Equiprobable bins of the pooled PIT test.
PIT_BINS = 50


@dataclass(frozen=True)
class LosslessReport:
    """Result of :func:`check_lossless`.

    Attributes
    ----------
    verifier : str
    lossy : bool
        True when some test rejects losslessness at false-alarm rate ``alpha``.
    verdict : str
        ``"lossy"`` or ``"consistent with lossless"``, with the reason.
    p_value : float
        Bonferroni-combined p-value of the chi-square and PIT tests (0 when an
        impossible token was output).
    alpha : float
        The false-alarm rate of the verdict.
    impossible_outputs : int
        Outputs with target probability 0.
    acceptance : float
        Empirical membership acceptance ``P(y in drafts)``.
    acceptance_interval : tuple of float
        Wilson interval at confidence ``1 - alpha``.
    bound : float
        Mean optimal acceptance over rows (:func:`spectheory.bound`).
    exceeds_bound : bool
        Acceptance significantly above the bound: proof of bias.
    excess_p_value : float
    detectable_tv : float
        Smallest total-variation bias on one row detected with probability 0.99.
    rows, trials : int
        Rows tested and trials per row.
    tests : dict
        p-value of each test (``"pit"``, ``"row i"``).
    """

    verifier: str
    lossy: bool
    verdict: str
    p_value: float
    alpha: float
    impossible_outputs: int
    acceptance: float
    acceptance_interval: tuple
    bound: float
    exceeds_bound: bool
    excess_p_value: float
    detectable_tv: float
    rows: int
    trials: int
    tests: dict = field(repr=False, default_factory=dict)


def detectable_tv(trials: int, bins: int, alpha: float, power: float = 0.99) -> float:
    """Smallest TV bias that Pearson's test on ``bins`` cells detects with probability ``power``.

    Uses :math:`\\lambda \\ge 4 N\\,\\mathrm{TV}^2` (docs/theory.md §7.2).

    >>> round(detectable_tv(20_000, 10, 1e-6), 3)
    0.03
    """
    df = max(bins - 1, 1)
    crit = stats.chi2.isf(alpha, df)
    lo, hi = 0.0, 1.0
    while stats.ncx2.sf(crit, df, hi) < power:
        hi *= 2
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if stats.ncx2.sf(crit, df, mid) < power else (lo, mid)
    return math.sqrt(hi / (4 * trials))


def _name(verifier):
    if isinstance(verifier, str):
        return verifier
    if hasattr(verifier, "function"):
        return verifier.name
    return getattr(verifier, "__name__", repr(verifier))


def _seed_int(seed):
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63))
    return 0 if seed is None else int(seed)


def _pearson(counts, p):
    """Pearson's chi-square with bins of expected count < 5 merged; (p-value, bins)."""
    N = counts.sum()
    expected = N * p
    big = expected >= 5
    obs = list(counts[big])
    exp = list(expected[big])
    rest_e = expected[~big].sum()
    if rest_e > 0:
        obs.append(counts[~big].sum())
        exp.append(rest_e)
    if len(obs) < 2:
        return 1.0, len(obs)
    obs, exp = np.array(obs, dtype=float), np.array(exp)
    stat = ((obs - exp) ** 2 / exp).sum()
    return float(stats.chi2.sf(stat, len(obs) - 1)), len(obs)


def _kl(a, b):
    def term(x, y):
        return 0.0 if x == 0 else x * math.log(x / y)

    return term(a, b) + term(1 - a, 1 - b)


def check_lossless(
    verifier,
    target,
    draft=None,
    n: int = 1,
    sampling: str = "iid",
    *,
    trials: int = DEFAULT_TRIALS,
    seed=0,
    alpha: float = 1e-6,
    temperature: float = 1.0,
    rows=None,
) -> LosslessReport:
    """Test whether a verifier is lossless by sampling.

    Parameters
    ----------
    verifier : str, Verifier or callable
        A registry name (:data:`spectheory.verifiers.REGISTRY`), or a callable
        ``fn(target, draft, drafts, rng) -> int`` taking 1-D float64 rows, the
        int64 drafts in draw order and a :class:`numpy.random.Generator`.
    target : array_like (V,) or (B, V), or spectheory.lm.Trace
        Target distribution(s); or a trace, whose logits are processed at
        ``temperature`` (same processing for both models).
    draft : array_like, or str for a trace
        Draft distribution(s), or the trace's draft name (``"exit:25"``).
    n : int
        Number of drafts.
    sampling : {"iid", "without_replacement", "greedy"}
        Law the drafts are drawn from.
    trials : int
        Trials per row.
    seed : int or numpy.random.Generator
    alpha : float in (0, 1)
        False-alarm rate of the verdict (split over the tests by Bonferroni).
    temperature : float
        For traces only.
    rows : array_like of int, optional
        For traces: the positions to test (default all).

    Returns
    -------
    LosslessReport

    Examples
    --------
    >>> r = check_lossless("rrs", [0.3, 0.4, 0.3], [0.6, 0.3, 0.1], n=2, trials=4000)
    >>> r.lossy, round(r.bound, 2)
    (False, 0.89)
    """
    n = check_positive_int(n, "n")
    trials = check_positive_int(trials, "trials")
    check_choice(sampling, "sampling", SAMPLINGS)
    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise InvalidParameterError(f"alpha must be a float in (0, 1); got {alpha!r}")
    if hasattr(target, "target_logits"):  # a spectheory.lm.Trace
        from ..distributions import process_logits

        idx = np.arange(target.num_positions) if rows is None else np.asarray(rows)
        if not isinstance(draft, str):
            raise InvalidParameterError(f"with a trace, draft must be a draft name; got {draft!r}")
        p = process_logits(target.target_logits[idx].astype(np.float64), temperature)
        q = process_logits(target.draft_logits(draft, idx), temperature)
        p, q, _ = as_distribution_pair(p, q)
    else:
        p, q, _ = as_distribution_pair(target, draft)
    check_draft_support(q, n, sampling, True)
    # Drafts and outputs from the numba kernels (registered verifiers) or the
    # Python loop (user callables, khisti, optimal_lp); see spectheory.sim.simulate.
    sim = simulate(verifier, p, q, n, sampling, trials=trials, seed=seed)
    name = _name(verifier)
    rng = np.random.default_rng([_seed_int(seed), 1])  # the PIT's own stream
    B, V = p.shape

    impossible = 0
    row_p = []
    row_bins = []
    pit = []
    for b in range(B):
        ys = sim.tokens[b]
        if ys.min() < 0 or ys.max() >= V:
            raise InvalidParameterError(f"verifier {name!r} returned a token outside [0, {V})")
        counts = np.bincount(ys, minlength=V).astype(float)
        impossible += int(counts[p[b] == 0].sum())
        pv, bins = _pearson(counts, p[b])
        row_p.append(pv)
        row_bins.append(bins)
        # randomised PIT in decreasing-p order
        order = np.argsort(-p[b], kind="stable")
        rank = np.empty(V, dtype=np.int64)
        rank[order] = np.arange(V)
        cdf_before = np.concatenate([[0.0], np.cumsum(p[b][order])])[:-1]
        ok = p[b][ys] > 0
        pit.append(cdf_before[rank[ys[ok]]] + rng.random(ok.sum()) * p[b][ys[ok]])
    accepted = int(sim.accepted.sum())

    u = np.clip(np.concatenate(pit), 0.0, np.nextafter(1.0, 0.0))
    pit_counts = np.bincount((u * PIT_BINS).astype(np.int64), minlength=PIT_BINS)
    pit_p = float(stats.chisquare(pit_counts).pvalue) if u.size >= 5 * PIT_BINS else 1.0
    tests = {"pit": pit_p} | {f"row {b}": row_p[b] for b in range(B)}
    m = len(tests)
    p_value = 0.0 if impossible else min(1.0, m * min(tests.values()))

    N = B * trials
    acc = accepted / N
    bound_rows = solve_bound(p, q, n, sampling).value
    bound = float(np.mean(bound_rows))
    excess_p = math.exp(-N * _kl(acc, bound)) if acc > bound else 1.0
    exceeds = excess_p <= alpha / 2
    z = stats.norm.isf(alpha / 2)
    centre = (acc + z * z / (2 * N)) / (1 + z * z / N)
    half = z * math.sqrt(acc * (1 - acc) / N + z * z / (4 * N * N)) / (1 + z * z / N)
    lossy = bool(impossible or p_value <= alpha / 2 or exceeds)
    if impossible:
        verdict = f"lossy: {impossible} outputs had target probability 0"
    elif exceeds:
        verdict = f"lossy: acceptance {acc:.4f} exceeds the optimal bound {bound:.4f}"
    elif p_value <= alpha / 2:
        verdict = f"lossy: output law differs from the target (p = {p_value:.2e})"
    else:
        verdict = "consistent with lossless"
    return LosslessReport(
        verifier=name,
        lossy=lossy,
        verdict=verdict,
        p_value=p_value,
        alpha=alpha,
        impossible_outputs=impossible,
        acceptance=acc,
        acceptance_interval=(float(max(0.0, centre - half)), float(min(1.0, centre + half))),
        bound=bound,
        exceeds_bound=exceeds,
        excess_p_value=excess_p,
        detectable_tv=detectable_tv(trials, max(row_bins), alpha / (2 * m)),
        rows=B,
        trials=trials,
        tests=tests,
    )
