r"""Statistical test of losslessness: run a verifier many times, compare its outputs with p.

A verifier is lossless when its output ``y`` has law exactly ``p`` (the
processed target) for every target, draft and draft law it supports.  Exact
laws (:mod:`spectheory.exact`) prove it on small vocabularies; this module
tests it by sampling at any vocabulary size, for registered verifiers and for
user callables ``fn(target, draft, drafts, rng) -> int``.

Tests (statistics from :mod:`spectheory.sim._stats`); the verdict is "lossy"
when an impossible token was output or when the Bonferroni-combined p-value of
all the other tests, :math:`\min(1, m \min_i p_i)`, is at most the stated
false-alarm rate ``alpha``:

* **impossible outputs**: a token with ``p(y) = 0`` is proof of bias;
* **per row**, the likelihood-ratio statistic :math:`G = 2N\,\mathrm{KL}(\hat p\|p)`
  of the output counts against ``p``, bins with expected count below 5 pooled,
  with a p-value from Agrawal's finite-sample bound
  (:func:`spectheory.sim._stats.multinomial_gof`; docs/theory.md §7.2), valid
  at the tiny levels ``alpha / m`` where the verdict is taken (Pearson's
  chi-square tail is not: docs/checker.md, "Validity far in the tail");
* **pooled over rows** (each row its own target): the randomised probability
  integral transform :math:`u = F(y^-) + U p(y)`, with tokens ordered by
  decreasing ``p`` and :math:`U \sim U(0, 1)`, is exactly uniform under the
  null whatever ``p`` is, so the ``u`` of all rows and trials are pooled and
  tested for uniformity (the same test on at most 50 equiprobable bins, at
  least 5 expected per bin);
* **acceptance above the bound** (docs/theory.md §7.3): a lossless verifier's
  membership acceptance is at most :math:`\alpha^*` (:func:`spectheory.bound`);
  the count of accepted trials is tested against it with Hoeffding's
  Chernoff bound, :math:`P(K \ge k) \le \exp(-N\,\mathrm{kl}(k/N \,\|\, \bar\alpha^*))`,
  valid for rows with different bounds.  An excess is proof of bias.

Power: :math:`G` under a bias is approximately noncentral chi-square with
noncentrality :math:`N \chi^2(\hat p \| p) \ge 4 N\, \mathrm{TV}^2`, so the
test of a row detects with 99% probability every bias of total variation at
least :math:`\sqrt{\lambda_{99}/(4N)}`, with :math:`\lambda_{99}` the
noncentrality at which :math:`G` exceeds the bound's threshold with
probability 0.99 (reported as ``detectable_tv``).  At the default 20,000
trials and a row level of ``1e-6`` this is 0.037 for 10 bins, 0.063 for 100
and 0.14 for 1,000; a one-row check of one draft law at ``alpha = 1e-6``
gives its row test ``alpha / 3`` (three tests) and reports 0.038, 0.064 and
0.14 (each further law checked splits ``alpha`` again; biases on the likely
tokens are caught sooner, by the test's coarser partitions).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace

import numpy as np

from .._errors import InvalidParameterError
from .._validate import as_distribution_pair, check_positive_int, integer_vector
from ..drafting import check_draft_support
from ..solvers.ot_dual import solve_bound
from ..verifiers._api import laws_to_check
from . import _stats
from ._stats import detectable_tv
from .simulate import _rng, simulate

__all__ = ["DEFAULT_TRIALS", "LOSSLESS_COLUMNS", "SOURCES", "LosslessReport", "check_lossless",
           "detectable_tv"]  # fmt: skip

#: Default number of trials per row.
DEFAULT_TRIALS = 20_000
#: Equiprobable bins of the pooled PIT test.
PIT_BINS = 50
#: Where the samples of a :class:`LosslessReport` come from.
SOURCES = ("simulated", "logged", "live")
#: Columns of :meth:`LosslessReport.table_row`, in the order of the report's tables.
LOSSLESS_COLUMNS = ("source", "verdict", "p-value", "acceptance", "bound", "above bound",
                    "detectable TV", "samples")  # fmt: skip


@dataclass(frozen=True)
class LosslessReport:
    """Result of every losslessness check: simulated, logged or live samples.

    One type for :func:`check_lossless` (``source="simulated"``),
    :func:`spectheory.sim.audit.check_lossless_from_samples` (``"logged"``)
    and :func:`spectheory.live.check_live_lossless` (``"live"``).  Fields a
    source cannot measure are NaN (a live run without single-draft nodes has
    no acceptance; a log without a bound has none either).

    Attributes
    ----------
    verifier : str
    lossy : bool
        True when some test rejects losslessness at false-alarm rate ``alpha``.
    verdict : str
        ``"lossy"`` or ``"consistent with lossless"``, with the reason.
    p_value : float
        Bonferroni-combined p-value of every test in ``tests`` (0 when an
        impossible token was output); ``lossy`` is ``p_value <= alpha``.
    alpha : float
        The false-alarm rate of the verdict.
    impossible_outputs : int
        Outputs with target probability 0.
    acceptance : float
        Empirical membership acceptance ``P(y in drafts)`` (live: at the
        single-draft nodes).
    acceptance_interval : tuple of float
        Wilson interval at confidence ``1 - alpha``.
    bound : float
        Mean optimal acceptance over rows (:func:`spectheory.bound`; live: the
        mean :math:`\\sum_x \\min(p, q)` of the single-draft nodes).
    exceeds_bound : bool
        Acceptance significantly above the bound: proof of bias.
    excess_p_value : float
        The bound test's p-value (Hoeffding's Chernoff bound for simulated
        samples, Azuma-Hoeffding for logged and live ones; NaN without a test).
    detectable_tv : float
        Simulated samples: the smallest total-variation bias on one row detected
        with probability 0.99 (the pooled cells' mass included).  Logged and live
        samples: the smallest total variation between the pooled PIT's law and
        U(0, 1), on the PIT test's bins, detected with probability 0.99; a bias
        that only moves mass among tokens within one bin, or that cancels across
        positions in the pooled PIT, is not covered by it.
    rows, trials : int
        Rows tested and trials per row.
    tests : dict
        p-value of each test (``"pit"``, ``"row i"``, ``"bound"``; for logs
        also ``"pit_ks"`` and ``"position i"``; live: ``"pit"``,
        ``"pit_ks"``, ``"acceptance"``).
    source : str
        One of :data:`SOURCES`: ``"simulated"`` (:func:`check_lossless`),
        ``"logged"`` (:func:`spectheory.sim.audit.check_lossless_from_samples`)
        or ``"live"`` (:func:`spectheory.live.check_live_lossless`).
    samples : int
        Outputs tested in all (``rows * trials`` for simulated samples; live:
        the emitted tokens).
    suspicious : tuple of dict
        For logs: the positions with the smallest Holm-adjusted p-values, most
        suspicious first.
    bound_samples : int
        Outputs in the acceptance-above-the-bound test: ``samples`` for
        simulated samples, the rows with a bound for logs, the single-draft
        nodes for live runs.
    sampling : str or None
        The draft law the samples were drawn under (None where the source does
        not say).  When :func:`check_lossless` checked several laws, the law
        whose test is the most significant: ``acceptance``, its interval,
        ``bound`` and ``bound_samples`` are that law's; ``exceeds_bound`` is
        true when any law's is, and ``samples`` counts every law's.
    by_law : dict
        When :func:`check_lossless` checked several draft laws: the report of
        each, keyed by law (empty otherwise).
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
    source: str = "simulated"
    samples: int = 0
    suspicious: tuple = field(repr=False, default=())
    bound_samples: int = 0
    sampling: str | None = None
    by_law: dict = field(repr=False, default_factory=dict)

    def __post_init__(self):
        if self.source not in SOURCES:
            raise InvalidParameterError(f"source must be one of {SOURCES}; got {self.source!r}")

    def table_row(self) -> dict:
        """The report's columns (:data:`LOSSLESS_COLUMNS`) for this check, one row.

        ``verdict`` is the short form (``"lossy"`` or ``"consistent with
        lossless"``); the full reason is the attribute ``verdict``.

        Examples
        --------
        >>> r = check_lossless("sd", [0.5, 0.5], [0.9, 0.1], sampling="iid", trials=2000)
        >>> row = r.table_row()
        >>> row["source"], row["verdict"], row["samples"]
        ('simulated', 'consistent with lossless', 2000)
        """
        return {
            "source": self.source,
            "verdict": "lossy" if self.lossy else "consistent with lossless",
            "p-value": self.p_value,
            "acceptance": self.acceptance,
            "bound": self.bound,
            "above bound": self.exceeds_bound,
            "detectable TV": self.detectable_tv,
            "samples": self.samples,
        }

    def summary(self) -> str:
        """A few lines: the verdict, the p-value, the acceptance against the bound, the power.

        Examples
        --------
        >>> r = check_lossless("sd", [0.5, 0.5], [0.9, 0.1], sampling="iid", trials=2000)
        >>> print(r.summary().splitlines()[0])
        sd (simulated, sampling=iid, 2000 samples): consistent with lossless
        """
        lo, hi = self.acceptance_interval
        law = f", sampling={self.sampling}" if self.sampling else ""
        lines = [
            f"{self.verifier} ({self.source}{law}, {self.samples} samples): {self.verdict}",
            f"  p-value {self.p_value:.3g} (false-alarm rate {self.alpha:g}, {len(self.tests)} "
            "tests)",
        ]
        if self.bound_samples:
            lines.append(
                f"  acceptance {self.acceptance:.4f} in [{lo:.4f}, {hi:.4f}] over "
                f"{self.bound_samples} samples, bound {self.bound:.4f}"
            )
        if math.isfinite(self.detectable_tv):
            if self.source == "simulated":
                lines.append(
                    f"  detects a TV bias >= {self.detectable_tv:.3f} on one row with "
                    "probability 0.99")
            else:  # the PIT pools positions: its power is stated for the PIT's binned law
                lines.append(
                    f"  detects a PIT law at TV >= {self.detectable_tv:.3f} from uniform (on its "
                    "bins, pooled over positions) with probability 0.99; a bias within one bin "
                    "is not covered")
        return "\n".join(lines)


def _row_test(counts, p, test=_stats.multinomial_gof):
    """One row's counts against ``p``: (p-value, cells) of ``test``.

    Cells of probability 0 cannot enter the statistic; an output there
    refutes the target outright, so any such output gives p-value 0 (the
    statistic of the other cells alone would look ordinary).  The verdicts
    use :func:`~spectheory.sim._stats.multinomial_gof`; replay's ``chi2_p``
    column passes :func:`~spectheory.sim._stats.chisquare_gof`.
    """
    keep = p > 0
    r = test(counts[keep], p[keep])
    if counts[~keep].any():
        return 0.0, r.cells
    return r.pvalue, r.cells


def check_lossless(
    verifier,
    target,
    draft=None,
    n: int = 1,
    sampling: str | None = None,
    *,
    trials: int = DEFAULT_TRIALS,
    rng=None,
    alpha: float = 1e-6,
    temperature: float = 1.0,
    rows=None,
    seed=None,
) -> LosslessReport:
    """Test whether a verifier is lossless by sampling.

    Parameters
    ----------
    verifier : str, Verifier or function
        A registry name (:data:`spectheory.verifiers.REGISTRY`), a record, or a
        function: coins protocol ``fn(p, q, drafts, coins, *, sampling)`` or
        black box ``fn(target, draft, drafts, rng) -> int`` taking 1-D float64
        rows, the int64 drafts in draw order and a :class:`numpy.random.Generator`
        (:func:`spectheory.verifiers.as_verifier`).  Simulated as by
        :func:`spectheory.simulate`: a kernel only for the very function it implements.
    target : array_like (V,) or (B, V), or spectheory.lm.Trace
        Target distribution(s); or a trace, whose logits are processed at
        ``temperature`` (same processing for both models).
    draft : array_like, or str for a trace
        Draft distribution(s), or the trace's draft name (``"exit:25"``).
    n : int
        Number of drafts.
    sampling : {"iid", "without_replacement", "greedy"}, optional
        Law the drafts are drawn from.  Default: every law the verifier
        claims for ``n`` drafts, at ``n = 1`` too (every law then draws one
        token from ``q``, but a verifier receives ``sampling`` and may branch
        on it), each at false-alarm rate ``alpha / laws`` (Bonferroni); the
        report is the most significant law's, with every law's report in
        ``by_law``.
    trials : int
        Trials per row.
    rng : int, numpy.random.Generator, SeedSequence or None
        Source of every random number (drafts, verifier, PIT); None means seed 0.
    alpha : float in (0, 1)
        False-alarm rate of the verdict (split over the tests by Bonferroni).
    temperature : float
        For traces only (with probability rows anything but 1 is refused).
    rows : array_like of int, optional
        For traces: the positions to test (default all; refused with arrays).
    seed : optional
        Alias of ``rng`` (kept for old calls); pass one of the two.

    Returns
    -------
    LosslessReport

    Examples
    --------
    >>> r = check_lossless("rrs", [0.3, 0.4, 0.3], [0.6, 0.3, 0.1], n=2, trials=4000)
    >>> r.lossy, round(r.bound, 2)
    (False, 0.89)

    ``naive`` claims two draft laws; both are checked:

    >>> r = check_lossless("naive", [0.3, 0.4, 0.3], [0.6, 0.3, 0.1], n=2, trials=4000)
    >>> r.lossy, sorted(r.by_law)
    (False, ['iid', 'without_replacement'])
    """
    n = check_positive_int(n, "n")
    trials = check_positive_int(trials, "trials")
    # Every claimed law, at n = 1 too: all draw the one draft from q, but the verifier
    # receives ``sampling`` and may branch on it (docs: a check must not pass one law alone).
    v, laws = laws_to_check(verifier, n, sampling)
    first = laws[0]
    gen = _rng(rng, seed)
    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise InvalidParameterError(f"alpha must be a float in (0, 1); got {alpha!r}")
    if hasattr(target, "target_logits"):  # a spectheory.lm.Trace
        from ..distributions import process_logits

        idx = np.arange(target.num_positions) if rows is None else integer_vector(rows, "rows")
        if not isinstance(draft, str):
            raise InvalidParameterError(f"with a trace, draft must be a draft name; got {draft!r}")
        p = process_logits(target.target_logits[idx].astype(np.float64), temperature)
        q = process_logits(target.draft_logits(draft, idx), temperature)
        p, q, _ = as_distribution_pair(p, q)
    else:
        # both would be ignored for arrays: refuse them rather than test other rows
        if rows is not None:
            raise InvalidParameterError(
                f"rows selects positions of a trace; got rows={rows!r} with array rows "
                "(index the arrays instead)"
            )
        if not (isinstance(temperature, numbers.Real) and temperature == 1.0):
            raise InvalidParameterError(
                f"temperature processes a trace's logits; got temperature={temperature!r} with "
                "probability rows (process logits first: spectheory.process_logits)"
            )
        if draft is None:  # read as a 0-d array it was refused as a draft "of shape ()"
            raise InvalidParameterError(
                "draft is required with probability rows: the draft distribution(s) q, of the "
                "target's shape; got None"
            )
        p, q, _ = as_distribution_pair(target, draft)
    for law in laws:
        try:
            check_draft_support(q, n, law, True)
        except InvalidParameterError as exc:
            if sampling is None:  # say why a law the caller did not name is needed
                raise InvalidParameterError(
                    f"{exc}; with sampling=None every law verifier {v.name!r} claims is checked "
                    f"({', '.join(laws)}): pass sampling= to check one"
                ) from None
            raise
    reports = {law: _check_law(v, p, q, n, law, trials, gen, alpha / len(laws)) for law in laws}
    return reports[first] if len(laws) == 1 else _combine(reports, alpha)


def _combine(reports, alpha):
    """One report for several draft laws: the most significant law's, Bonferroni over laws."""
    law = min(reports, key=lambda k: (not reports[k].lossy, reports[k].p_value))
    worst = reports[law]
    p_value = min(1.0, len(reports) * min(r.p_value for r in reports.values()))
    lossy = any(r.lossy for r in reports.values())
    verdict = f"{worst.verdict} (sampling={law!r})" if lossy else worst.verdict
    return replace(
        worst,
        lossy=lossy,
        verdict=verdict,
        p_value=p_value,
        alpha=alpha,
        exceeds_bound=any(r.exceeds_bound for r in reports.values()),
        detectable_tv=max(r.detectable_tv for r in reports.values()),
        tests={f"{k}: {t}": pv for k, r in reports.items() for t, pv in r.tests.items()},
        samples=sum(r.samples for r in reports.values()),
        by_law=dict(reports),
    )


def _with_pooled_mass(tv: float, mass: float) -> float:
    """The pooled partition's detectable TV plus the mass a bias can hide in (inf above 1)."""
    out = tv + mass
    return out if out <= 1.0 else math.inf


def _check_law(v, p, q, n, sampling, trials, gen, alpha):
    """The report of one draft law: simulate, then test (the module docstring's tests)."""
    # Drafts and outputs from the numba kernels (registered verifiers) or the
    # Python loop (user callables, khisti, optimal_lp); see spectheory.sim.simulate.
    sim = simulate(v, p, q, n, sampling, trials=trials, rng=gen)
    name = v.name
    rng = gen  # the PIT's uniforms continue the same stream
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
        pv, bins = _row_test(counts, p[b])
        row_p.append(pv)
        row_bins.append(bins)
        pit.append(_stats.randomised_pit(p[b], ys, rng))  # decreasing-p order
    accepted = int(sim.accepted.sum())

    u = np.concatenate(pit)
    pit_p = _stats.uniformity_gof(u[~np.isnan(u)], PIT_BINS).pvalue
    N = B * trials
    acc = accepted / N
    bound_rows = solve_bound(p, q, n, sampling).value
    bound = float(np.mean(bound_rows))
    excess_p = _stats.chernoff_upper_tail(accepted, N, bound)
    tests = {"pit": pit_p} | {f"row {b}": row_p[b] for b in range(B)} | {"bound": excess_p}
    m = len(tests)
    p_value = 0.0 if impossible else _stats.bonferroni(tests)
    exceeds = excess_p * m <= alpha  # the bound test alone rejects
    lossy = bool(impossible or p_value <= alpha)
    if impossible:
        verdict = f"lossy: {impossible} outputs had target probability 0"
    elif exceeds:
        verdict = f"lossy: acceptance {acc:.4f} exceeds the optimal bound {bound:.4f}"
    elif lossy:
        verdict = f"lossy: output law differs from the target (p = {p_value:.2e})"
    else:
        verdict = "consistent with lossless"
    lo, hi = _stats.wilson_interval(accepted, N, 1.0 - alpha)
    return LosslessReport(
        verifier=name,
        lossy=lossy,
        verdict=verdict,
        p_value=p_value,
        alpha=alpha,
        impossible_outputs=impossible,
        acceptance=acc,
        acceptance_interval=(lo, hi),
        bound=bound,
        exceeds_bound=exceeds,
        excess_p_value=excess_p,
        # The power bound sees the pooled cells only: a bias that moves mass among the tokens
        # pooled into one cell changes no pooled count.  Its TV is at most the pooled TV plus
        # the pooled mass (TV <= TV_pooled + p(R)), so the guarantee holds from there on.
        detectable_tv=_with_pooled_mass(detectable_tv(trials, max(row_bins), alpha / m),
                                        max(_stats.pooled_mass(p[b], trials) for b in range(B))),
        rows=B,
        trials=trials,
        tests=tests,
        source="simulated",
        samples=N,
        bound_samples=N,
        sampling=sampling,
    )
