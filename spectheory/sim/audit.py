r"""Audit of an engine's logged samples: do the emitted tokens follow the target?

An engine that logs, at every emitted token :math:`y_t`, the target
distribution :math:`p_t` it should follow given the past, the draft
distribution :math:`q_t` and the drafts it verified
(:mod:`spectheory.sim.samplelog`) can be tested without re-running it.
Under losslessness (H0) each :math:`y_t` is a draw from :math:`p_t` given the
past.  Tests (statistics from :mod:`spectheory.sim._stats`):

* **impossible outputs**: :math:`p_t(y_t) = 0` is proof of bias;
  **impossible drafts**: a drafted token with :math:`q_t(x) = 0` proves that
  the logged ``q`` is not the law the drafts were sampled from;
* **pooled**: the conditional randomised PIT
  :math:`u_t = F_t(y_t^-) + U_t\,p_t(y_t)` with tokens ordered by decreasing
  :math:`p_t/q_t` (ties by decreasing :math:`p_t`, then id) is i.i.d.
  :math:`U(0, 1)` under H0 whatever the laws, because the order is a
  function of the past (docs/theory.md §7.2).  A verifier that outputs the
  draft's favourite tokens too often pushes :math:`u` towards 1.  Tested by
  the likelihood-ratio test of :func:`~spectheory.sim._stats.uniformity_gof`
  on at most 50 equiprobable bins (a finite-sample p-value) and by
  Kolmogorov-Smirnov;
* **per position**: rows whose ``(target, draft)`` pair repeats (the same
  position logged over many runs) are grouped, and each group with at least
  ``min_repeats`` rows gets the G test of its output counts against its
  target (:func:`~spectheory.sim._stats.multinomial_gof`, valid at every
  level);
* **acceptance above the bound** (docs/theory.md §7.3): a lossless verifier
  outputs one of its drafts with probability at most :math:`\beta_t`, the
  optimal acceptance of the row's draft law (``sampling``), so
  :math:`D = \sum_t (h_t - \beta_t)` over the rows with drafts is a
  supermartingale and Azuma-Hoeffding bounds :math:`P(D \ge s)`.  Greedy
  drafts fix the top ``n - 1`` of :math:`q_t`, and where :math:`q_t` ties at
  that cut the engine may break the tie its own way, with another bound:
  :math:`\beta_t` is the bound of the fixed set the drafts show, or where
  they fit several, the largest of those bounds (never below the engine's
  own, so a lossless engine is not called lossy; spectheory's lowest-id
  order could be).

The verdict is "lossy" on an impossible output or draft, or when the
Bonferroni-combined p-value of the other tests is at most ``alpha``: a
correct engine is flagged with probability at most ``alpha`` (measured in
``tests/sim/test_audit.py``).  Positions are ranked by Holm-adjusted p-values:
the per-position tests where rows repeat, otherwise each row's
"probability of an output at most as likely",
:math:`\pi_t = P_{Y \sim p_t}(p_t(Y) \le p_t(y_t))`, a valid p-value of one
row.

What the test can see: only the law of the outputs.  A bug that leaves it
equal to the target (a wasted draft, a wrong acceptance *count* with the
right tokens) is invisible here; the acceptance metrics
(:mod:`spectheory.sim.log_metrics`) show those.
"""

from __future__ import annotations

import math
import os
from itertools import combinations

import numpy as np
from scipy import stats

from .._errors import InvalidParameterError
from .._validate import check_choice, check_positive_int, check_rng
from ..drafting import SAMPLINGS
from ..solvers.ot_dual import greedy_value, solve_bound
from . import _stats
from .check import LosslessReport
from .samplelog import SampleLog, as_sample_log, load_log

__all__ = ["MIN_REPEATS", "check_lossless_from_samples"]

#: Fewest rows of a repeated (target, draft) pair that get their own G test.
MIN_REPEATS = 20


def _as_log(target, draft, drafts, outputs, round):
    whole = isinstance(target, SampleLog | str | os.PathLike)
    if whole:
        given = [k for k, v in (("draft", draft), ("drafts", drafts), ("outputs", outputs),
                                ("round", round)) if v is not None]  # fmt: skip
        if given:  # the log's own arrays would be audited and these ignored
            what = "a SampleLog" if isinstance(target, SampleLog) else "a log file"
            raise InvalidParameterError(
                f"with {what}, pass no draft, drafts, outputs or round (the log holds them); "
                f"got {', '.join(given)}"
            )
    if isinstance(target, SampleLog):
        return target, "logged samples"
    if whole:
        return load_log(target), os.fspath(target)
    if draft is None or drafts is None or outputs is None:
        raise InvalidParameterError(
            "check_lossless_from_samples needs target, draft, drafts and outputs "
            "(or a SampleLog, or a log file path)"
        )
    return as_sample_log(target, draft, drafts, outputs, round), "logged samples"


def _groups(p, q):
    """Indices of identical (target, draft) rows, by row bytes."""
    keys = {}
    for i in range(p.shape[0]):
        keys.setdefault(p[i].tobytes() + q[i].tobytes(), []).append(i)
    return list(keys.values())


def _row_pvalues(p, y):
    """pi_t = P(p(Y) <= p(y)) under Y ~ p_t: a valid one-row p-value."""
    py = p[np.arange(y.size), y]
    return np.minimum(1.0, (p * (p <= py[:, None])).sum(axis=1))


def _bound(p, q, d, sampling, first):
    r"""beta_t for the rows with at least one draft (NaN elsewhere).

    One draft: :math:`\sum_x \min(p, q)`; more: :func:`spectheory.bound`,
    solved once per distinct (target, draft) pair (``first[t]`` is the
    first row of row ``t``'s pair).  Greedy rows whose ``q`` ties at the
    top-``(n - 1)`` cut take the bound of the fixed set the engine used
    (:func:`_greedy_tied_bounds`), not of spectheory's tie order.
    """
    n_t = (d >= 0).sum(axis=1)
    beta = np.full(p.shape[0], np.nan)
    one = n_t == 1
    beta[one] = np.minimum(p[one], q[one]).sum(axis=1)
    for n in np.unique(n_t[n_t > 1]):
        rows = np.flatnonzero(n_t == n)
        if sampling != "iid":  # too few tokens for the law: not tested, stated by NaN
            rows = rows[np.count_nonzero(q[rows], axis=1) >= n]
        if rows.size:
            uniq, inv = np.unique(first[rows], return_inverse=True)
            val = np.atleast_1d(solve_bound(p[uniq], q[uniq], int(n), sampling).value)
            beta[rows] = val[inv]
            if sampling == "greedy":
                _greedy_tied_bounds(p, q, d, rows, uniq, inv, int(n), first, beta)
    return beta


def _greedy_tied_bounds(p, q, d, rows, uniq, inv, n, first, beta):
    r"""Overwrite ``beta`` on the greedy ``rows`` (``n`` drafts) whose ``q`` ties at the cut.

    A tie in ``q`` at the ``(n - 1)``-th largest value leaves the engine free to
    fix any of the tied tokens (:func:`_check_draft_law` accepts every tie
    order), and the bound depends on which: spectheory's order (lowest id)
    can be below a lossless engine's acceptance.  The fixed set ``T`` is read
    from the drafts: every drafted token above the cut, and the drafted tied
    ones when exactly ``n - 1`` are drafted in all; when the sampled draft is
    tied too, the drafts fit several fixed sets and the row takes the largest
    of their bounds.  Either way ``beta_t`` is at least the bound
    :math:`\beta(T_t)` of the fixed set the engine used, chosen before its
    sampled draft and its output, so :math:`D` is at most
    :math:`\sum_t (h_t - \beta(T_t))`, a supermartingale with the same
    Azuma-Hoeffding tail: the test stays valid and the lossless engine whose
    tie order differs from spectheory's is not flagged by it.
    """
    k = n - 1
    qu = q[uniq]
    thr_u = np.partition(qu, qu.shape[1] - k, axis=1)[:, qu.shape[1] - k]  # k-th largest
    tied_u = np.count_nonzero(qu >= thr_u[:, None], axis=1) > k
    sel = tied_u[inv]
    if not sel.any():
        return
    cands = {}  # row -> its possible fixed sets
    for r, thr in zip(rows[sel], thr_u[inv][sel]):
        drafted = [int(x) for x in d[r] if x >= 0]
        above = [x for x in drafted if q[r, x] > thr]
        at = sorted(x for x in drafted if q[r, x] == thr)
        cands[r] = [tuple(sorted(above + list(c))) for c in combinations(at, k - len(above))]
    keys = sorted({(int(first[r]), T) for r, Ts in cands.items() for T in Ts})
    value = {}
    chunk = max(1, (1 << 22) // p.shape[1])  # bounded memory at large V
    for i in range(0, len(keys), chunk):
        part = keys[i : i + chunk]
        src = np.array([f for f, _ in part])
        inT = np.zeros((len(part), p.shape[1]), dtype=bool)
        for j, (_, T) in enumerate(part):
            inT[j, list(T)] = True
        value.update(zip(part, greedy_value(p[src], q[src], n, fixed=inT)[0]))
    for r, Ts in cands.items():
        beta[r] = max(value[int(first[r]), T] for T in Ts)


def _check_draft_law(q, d, sampling, alpha):
    r"""Refuse drafts the declared law cannot produce (the bound would be the wrong one).

    Without replacement and greedy drafts are distinct; greedy drafts of a row
    with ``n >= 2`` include ``n - 1`` most likely draft tokens (any tie order).
    i.i.d. drafts repeat: two of them coincide with probability
    :math:`\sum_x q(x)^2`, so a log in which no row of several drafts repeats
    one has probability at most :math:`\prod_r (1 - \sum_x q_r(x)^2)` under
    i.i.d. drafting; at most ``alpha``, the declaration is refused (the
    i.i.d. bound is below the without-replacement one, and a correct engine
    would be called lossy against it).
    """
    if sampling == "iid":
        several = np.count_nonzero(d >= 0, axis=1) >= 2
        if not several.any():
            return
        # padding (-1) becomes distinct negatives, so only real drafts can repeat
        padded = np.where(d >= 0, d, -1 - np.arange(d.shape[1]))
        if (np.diff(np.sort(padded, axis=1), axis=1) == 0).any():
            return  # a repeat: i.i.d. drafting is possible
        collide = np.einsum("rv,rv->r", q[several], q[several])
        log_p = float(np.sum(np.log1p(-np.minimum(collide, 1.0))))
        if log_p <= math.log(alpha):
            raise InvalidParameterError(
                f"the drafts contradict sampling='iid': none of the {int(several.sum())} rows "
                f"with several drafts repeats a draft, which i.i.d. drafts from the logged "
                f"draft distributions do with probability at most {math.exp(log_p):.2e}; pass "
                "sampling='without_replacement' (or 'greedy'; on the command line "
                "--sampling without_replacement) for an engine that drafts distinct tokens"
            )
        return
    for r in range(d.shape[0]):
        row = d[r][d[r] >= 0]
        if np.unique(row).size != row.size:
            x = int(next(t for t in row if np.count_nonzero(row == t) > 1))
            raise InvalidParameterError(
                f"drafts row {r} repeats token {x}: impossible under sampling={sampling!r} "
                f"(distinct drafts); was the log drawn i.i.d.?"
            )
        k = row.size - 1
        if sampling == "greedy" and k >= 1:
            thr = np.partition(q[r], -k)[-k]  # the k-th largest draft probability
            must = np.flatnonzero(q[r] > thr)
            tied = np.count_nonzero(q[r][row] == thr)
            if not np.isin(must, row).all() or tied < k - must.size:
                raise InvalidParameterError(
                    f"drafts row {r} ({row.tolist()}) lacks the {k} most likely draft tokens "
                    f"that sampling='greedy' always drafts"
                )


def check_lossless_from_samples(
    target,
    draft=None,
    drafts=None,
    outputs=None,
    *,
    round=None,
    sampling: str = "iid",
    alpha: float = _stats.DEFAULT_ALPHA,
    rng=None,
    min_repeats: int = MIN_REPEATS,
    top: int = 10,
) -> LosslessReport:
    """Test whether an engine's logged outputs follow the logged targets.

    Parameters
    ----------
    target : array_like (N, V), SampleLog, or path
        Target distribution of every logged row; or a whole log
        (:class:`~spectheory.sim.samplelog.SampleLog`, or a ``.npz``,
        ``.safetensors`` or ``.jsonl`` file, :func:`~spectheory.sim.samplelog.load_log`).
    draft : array_like (N, V)
        Draft distribution the row's drafts were sampled from.
    drafts : array_like of int (N, n)
        The verified drafts, ``-1`` for empty slots.
    outputs : array_like of int (N,)
        The emitted tokens.
    round : array_like of int (N,), optional
        Verification round of each row, with arrays only: checked (one block of
        rows per round), not used by the audit; the per-depth acceptance is
        :func:`~spectheory.sim.log_metrics.acceptance_table`'s.  With a
        ``SampleLog`` or a file, ``draft``, ``drafts``, ``outputs`` and ``round``
        must not be given (the log's own are audited): they raise
        :class:`~spectheory.InvalidParameterError`.
    sampling : {"iid", "without_replacement", "greedy"}
        Law of the drafts, for the acceptance bound (greedy with a tie in
        ``q`` at the top-``(n - 1)`` cut: the bound of the fixed set the
        row's drafts show, or the largest over the sets they fit); drafts
        it cannot produce (a repeat without replacement, greedy drafts that
        miss the top ``n - 1`` of ``q``) raise :class:`~spectheory.InvalidParameterError`,
        and so does a log without any repeated draft under ``"iid"`` when
        i.i.d. drafts would have repeated one with probability at least
        ``1 - alpha`` (an engine that drafts without replacement, audited
        with the default).
    alpha : float in (0, 1)
        False-alarm rate of the verdict.
    rng : int, Generator or None
        Source of the PIT's uniforms (None means seed 0, for reproducible verdicts).
    min_repeats : int
        Fewest repeats of a (target, draft) pair tested on their own.
    top : int
        Suspicious positions listed.

    Returns
    -------
    LosslessReport
        With ``source="logged"``; ``tests`` holds ``"pit"`` and ``"pit_ks"`` (the
        pooled PIT in the order of decreasing p/q), ``"pit_p"`` (the same in the order
        of decreasing p), ``"bound"`` and ``"position i"`` (first row of each tested
        group);
        ``suspicious`` lists up to ``top`` dicts with keys ``row`` (the
        first row of the position), ``repeats`` (its rows), ``test``,
        ``p_value``, ``adjusted_p_value``, most suspicious first;
        ``detectable_tv`` is the total variation between the PIT's law and
        U(0, 1) on the pooled test's bins detected with probability 0.99.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(5), size=400)
    >>> y = np.array([rng.choice(5, p=row) for row in p])
    >>> r = check_lossless_from_samples(p, p, y[:, None], y)  # draft = target: all accepted
    >>> r.lossy, r.samples
    (False, 400)
    """
    log, name = _as_log(target, draft, drafts, outputs, round)
    alpha = _stats.check_alpha(alpha)
    check_choice(sampling, "sampling", SAMPLINGS)
    min_repeats = check_positive_int(min_repeats, "min_repeats")
    top = check_positive_int(top, "top")
    gen = check_rng(0 if rng is None else rng)
    p, q, d, y = log.target, log.draft, log.drafts, log.outputs
    _check_draft_law(q, d, sampling, alpha)
    N = y.size
    rows = np.arange(N)

    py = p[rows, y]
    impossible_rows = np.flatnonzero(py == 0)
    qd = np.where(d >= 0, q[rows[:, None], np.maximum(d, 0)], 1.0)
    bad_draft_rows = np.flatnonzero((qd == 0).any(axis=1))

    # pooled conditional PIT, decreasing p/q
    with np.errstate(divide="ignore", invalid="ignore"):
        key = np.where(q > 0, p / q, np.inf)
    u = _stats.randomised_pit(p, y, gen, key=key)
    u = u[~np.isnan(u)]
    pit = _stats.uniformity_gof(u)
    tests = {"pit": pit.pvalue}
    if u.size >= 10:
        tests["pit_ks"] = float(stats.kstest(u, "uniform").pvalue)
    # The same PIT in the order of decreasing p: a target processed otherwise than
    # logged (temperature, top-k, top-p on one side) moves mass between likely and
    # unlikely tokens, a shift the p/q order spreads evenly over [0, 1).
    u_p = _stats.randomised_pit(p, y, gen)
    tests["pit_p"] = _stats.uniformity_gof(u_p[~np.isnan(u_p)]).pvalue

    # per position: repeated (target, draft) pairs
    group_tests = []
    groups = _groups(p, q)
    first = np.empty(N, dtype=np.int64)
    for g in groups:
        first[g] = g[0]
    for g in groups:
        if len(g) < min_repeats:
            continue
        g = np.asarray(g)
        ok = py[g] > 0
        counts = np.bincount(y[g][ok], minlength=p.shape[1]).astype(np.float64)
        keep = p[g[0]] > 0
        r = _stats.multinomial_gof(counts[keep], p[g[0]][keep])
        if r.cells >= 2:
            tests[f"position {int(g[0])}"] = r.pvalue
            group_tests.append((g, r.pvalue))

    # acceptance above the bound
    beta = _bound(p, q, d, sampling, first)
    has = np.isfinite(beta)
    hits = (d[has] == y[has, None]).any(axis=1)
    K = int(has.sum())
    accepted = int(hits.sum())
    bound = float(beta[has].mean()) if K else math.nan
    excess = float(hits.sum() - beta[has].sum()) if K else 0.0
    tests["bound"] = _stats.azuma_upper_tail(excess, K)

    m = len(tests)
    impossible = int(impossible_rows.size)
    proof = impossible or bad_draft_rows.size
    p_value = 0.0 if proof else _stats.bonferroni(tests)
    lossy = bool(proof or p_value <= alpha)
    exceeds = tests["bound"] * m <= alpha
    if impossible:
        verdict = (
            f"lossy: {impossible} outputs had target probability 0 "
            f"(first at row {int(impossible_rows[0])})"
        )
    elif bad_draft_rows.size:
        verdict = (
            f"lossy: {bad_draft_rows.size} rows drafted a token of draft probability 0 "
            f"(first at row {int(bad_draft_rows[0])}): the logged q is not the drafts' law"
        )
    elif exceeds:
        verdict = f"lossy: acceptance {accepted / K:.4f} exceeds the optimal bound {bound:.4f}"
    elif lossy:
        worst = min(tests, key=tests.get)
        verdict = f"lossy: the {worst} test rejects (combined p = {p_value:.2e})"
    else:
        verdict = "consistent with lossless"

    suspicious = _suspicious(p, y, impossible_rows, bad_draft_rows, group_tests, top)
    lo, hi = _stats.wilson_interval(accepted, K, 1.0 - alpha) if K else (math.nan, math.nan)
    return LosslessReport(
        verifier=name,
        lossy=lossy,
        verdict=verdict,
        p_value=p_value,
        alpha=alpha,
        impossible_outputs=impossible,
        acceptance=accepted / K if K else math.nan,
        acceptance_interval=(lo, hi),
        bound=bound,
        exceeds_bound=exceeds,
        excess_p_value=tests["bound"],
        detectable_tv=_stats.detectable_tv(max(u.size, 1), max(pit.cells, 2), alpha / m)
        if pit.cells >= 2
        else math.nan,
        rows=N,
        trials=1,
        tests=tests,
        source="logged",
        samples=N,
        bound_samples=K,
        suspicious=tuple(suspicious),
        sampling=sampling,
    )


def _suspicious(p, y, impossible_rows, bad_draft_rows, group_tests, top):
    out = [
        {"row": int(r), "repeats": 1, "test": "impossible output", "p_value": 0.0,
         "adjusted_p_value": 0.0}
        for r in impossible_rows[:top]
    ]
    out += [
        {"row": int(r), "repeats": 1, "test": "impossible draft", "p_value": 0.0,
         "adjusted_p_value": 0.0}
        for r in bad_draft_rows[: max(0, top - len(out))]
    ]
    if group_tests:
        pv = np.array([pv for _, pv in group_tests])
        adj = _stats.holm(pv)
        entries = [
            {"row": int(g[0]), "repeats": len(g), "test": "G test", "p_value": float(v),
             "adjusted_p_value": float(a)}
            for (g, v), a in zip(group_tests, adj)
        ]  # fmt: skip
    else:
        pv = _row_pvalues(p, y)
        adj = _stats.holm(pv)
        entries = [
            {"row": int(i), "repeats": 1, "test": "output probability", "p_value": float(pv[i]),
             "adjusted_p_value": float(adj[i])}
            for i in range(y.size)
        ]  # fmt: skip
    keep = top - len(out)
    order = np.lexsort(([e["p_value"] for e in entries], [e["adjusted_p_value"] for e in entries]))
    return out + [entries[i] for i in order[: max(0, keep)]]
