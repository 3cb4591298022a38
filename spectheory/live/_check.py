r"""Statistical test of losslessness on live generations, from the recorded target laws.

A live run records, at every emitted position :math:`t`, the processed target
distribution :math:`p_t` the token :math:`y_t` should follow given the tokens
before it, and at every verified node the draft distribution :math:`q_t`.
Under losslessness the randomised probability integral transform

.. math::

    u_t = F_t(y_t^-) + U_t\, p_t(y_t),\qquad
    F_t(y^-) = \sum_{x \prec_t y} p_t(x),\quad U_t \sim U(0, 1)\ \text{independent},

is exactly :math:`U(0, 1)` given the past for *any* order :math:`\prec_t` of the
tokens that is a function of the past (randomised quantile residuals [1]_).
So :math:`u_1, u_2, \dots` are i.i.d. uniform and can be pooled over
positions, prompts and runs.  The order is chosen for power against the
typical bias of speculative decoding, output drawn too often from
:math:`q`: at a node, decreasing :math:`p_t / q_t` (:math:`q_t` is a function
of the prefix), so that tokens favoured by the draft come last and an excess
of them pushes :math:`u` towards 1; elsewhere (bonus and target-only
tokens), decreasing :math:`p_t`.  Ties go by decreasing :math:`p_t`, then by
id.  Tests, Bonferroni-split at the false-alarm rate ``alpha``:

* an emitted token with :math:`p_t(y_t) = 0` is proof of bias;
* the likelihood-ratio (G) test of the :math:`u_t` on equiprobable bins (at
  least 5 expected per bin) with Agrawal's finite-sample p-value
  (:func:`spectheory.sim._stats.uniformity_gof`);
* Kolmogorov-Smirnov of the :math:`u_t` against :math:`U(0, 1)` (exact);
* acceptance above the bound (docs/theory.md §7.3): at a node with one draft,
  a lossless verifier outputs the draft with probability at most
  :math:`\beta_t = \sum_x \min(p_t(x), q_t(x))` given the past, so
  :math:`D = \sum_t (h_t - \beta_t)` (:math:`h_t` the hit indicator) is a
  supermartingale with increments in a range of length 1, and
  Azuma-Hoeffding gives :math:`P(D \ge s) \le \exp(-2 s^2 / K)` over
  :math:`K` nodes.

The number of positions must not depend on the tokens for the pooled sample
to be exactly i.i.d. uniform: test runs made with ``stop_at_eos=False``
(they stop at ``max_new_tokens``).  A run stopped at an end-of-turn token
has a data-dependent length (optional stopping).

References
----------
.. [1] Dunn, Smyth. "Randomized quantile residuals". Journal of
   Computational and Graphical Statistics 5(3), 1996 (randomised PIT).
.. [2] Leviathan, Kalman, Matias. arXiv:2211.17192 (acceptance bound).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from .._errors import InvalidParameterError
from ..sim._stats import detectable_tv, uniformity_gof, wilson_interval
from ..sim.check import LosslessReport

__all__ = ["check_live_lossless", "pit_values"]

#: Largest number of equiprobable bins of the PIT's G test.
MAX_BINS = 50


def pit_values(probs, tokens, rng, draft_probs=None, node_token=None) -> np.ndarray:
    r"""Randomised PIT :math:`u_t = F_t(y_t^-) + U_t\,p_t(y_t)`, tokens ordered as above.

    Parameters
    ----------
    probs : ndarray (N, V)
        Target distributions (any float dtype; each row renormalised in float64).
    tokens : ndarray of int (N,)
    rng : numpy.random.Generator
    draft_probs : ndarray (K, V), optional
        Draft distributions at the nodes; positions ``node_token`` are then
        ordered by decreasing :math:`p/q`.
    node_token : ndarray of int (K,), optional
        The position of each node.

    Returns
    -------
    ndarray, float64 (N,)
        In [0, 1); NaN where :math:`p_t(y_t) = 0`.

    Examples
    --------
    Decreasing ``p``: token 2 comes after tokens 0 and 1, so ``u`` is in [0.75, 1).

    >>> rng = np.random.default_rng(0)
    >>> u = pit_values(np.array([[0.5, 0.25, 0.25]]), np.array([2]), rng)
    >>> bool(0.75 <= u[0] < 1.0)
    True

    With ``q = [0.1, 0.1, 0.8]`` at that position, ``p/q = [5, 2.5, 0.3125]``: same order.
    Token 0 comes first: ``u`` is in [0, 0.5).

    >>> u = pit_values([[0.5, 0.25, 0.25]], [0], rng, [[0.1, 0.1, 0.8]], [0])
    >>> bool(0.0 <= u[0] < 0.5)
    True
    """
    probs = np.asarray(probs)
    tokens = np.asarray(tokens, dtype=np.int64)
    qrow = {}
    if draft_probs is not None:
        qrow = {int(t): k for k, t in enumerate(np.asarray(node_token))}
    out = np.empty(tokens.size)
    ids = np.arange(probs.shape[1])
    for t in range(tokens.size):
        p = probs[t].astype(np.float64)
        p = p / p.sum()
        y = int(tokens[t])
        py = p[y]
        if py <= 0:
            out[t] = math.nan
            continue
        ahead = (p > py) | ((p == py) & (ids < y))  # decreasing p, then id
        if t in qrow:
            q = np.asarray(draft_probs[qrow[t]], dtype=np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(q > 0, p / q, np.inf)
            ry = r[y]
            ahead = (r > ry) | ((r == ry) & ahead)
        out[t] = min(p[ahead].sum() + rng.random() * py, np.nextafter(1.0, 0.0))
    return out


def _verifier_names(runs) -> str:
    """The verifiers of the runs, as recorded in their settings (``"target only"`` for none)."""
    names = []
    for r in runs:
        settings = getattr(r, "settings", None)
        if not isinstance(settings, dict):
            settings = {}
        name = settings.get("verifier", "unrecorded")
        name = "target only" if name is None else str(name)
        if name not in names:
            names.append(name)
    return ", ".join(names)


def check_live_lossless(results, *, alpha: float = 1e-6, seed=0) -> LosslessReport:
    """Test whether live generations follow the recorded target laws (pooled randomised PIT).

    Parameters
    ----------
    results : LiveResult or sequence of LiveResult
        Runs made with ``record=True`` and, for an exact test,
        ``stop_at_eos=False`` (:func:`spectheory.live.speculative_generate`).
    alpha : float in (0, 1)
        False-alarm rate of the verdict.
    seed : int
        Seed of the PIT's own uniforms.

    Returns
    -------
    LosslessReport
        With ``source="live"``: ``samples`` and ``rows`` count the emitted
        tokens tested, ``trials`` is 1; ``acceptance``, ``bound`` and
        ``acceptance_interval`` describe the single-draft nodes
        (``bound_samples`` of them; NaN without any); ``tests`` holds
        ``"pit"`` (:func:`~spectheory.sim._stats.uniformity_gof`), ``"pit_ks"`` and
        ``"acceptance"``.
    """
    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise InvalidParameterError(f"alpha must be a float in (0, 1); got {alpha!r}")
    runs = [results] if hasattr(results, "target_probs") else list(results)
    if not runs:
        raise InvalidParameterError("results must hold at least one LiveResult")
    for i, r in enumerate(runs):
        if getattr(r, "target_probs", None) is None:
            raise InvalidParameterError(
                f"results[{i}] was generated with record=False; the test needs the recorded "
                f"target distributions"
            )
    rng = np.random.default_rng(seed)
    u = np.concatenate(
        [
            pit_values(
                r.target_probs,
                r.tokens,
                rng,
                getattr(r, "draft_probs", None),
                getattr(r, "node_token", None),
            )
            for r in runs
        ]
    )
    impossible = int(np.isnan(u).sum())
    u = u[~np.isnan(u)]
    N = int(u.size)
    tests = {}
    bins = 0
    if N >= 10:
        pit = uniformity_gof(u, MAX_BINS)
        bins = pit.cells
        tests["pit"] = pit.pvalue
        tests["pit_ks"] = float(stats.kstest(u, "uniform").pvalue)
    bound = np.concatenate([r.node_bound for r in runs])
    hit = np.concatenate([r.node_hit for r in runs])
    ok = np.isfinite(bound)
    K = int(ok.sum())
    acc = float(hit[ok].mean()) if K else math.nan
    mean_bound = float(bound[ok].mean()) if K else math.nan
    if K:
        excess = float((hit[ok] - bound[ok]).sum())
        tests["acceptance"] = math.exp(-2 * excess * excess / K) if excess > 0 else 1.0
    m = max(len(tests), 1)
    p_value = 0.0 if impossible else min(1.0, m * min(tests.values(), default=1.0))
    lossy = bool(impossible or p_value <= alpha)
    if impossible:
        verdict = f"lossy: {impossible} emitted tokens had target probability 0"
    elif lossy:
        worst = min(tests, key=tests.get)
        verdict = f"lossy: the {worst} test rejects (combined p = {p_value:.2e})"
    elif N < 10:
        verdict = f"too few positions ({N}) for the PIT tests; none rejects"
    else:
        verdict = "consistent with lossless"
    hits = int(hit[ok].sum())
    interval = wilson_interval(hits, K, 1.0 - alpha) if K else (math.nan, math.nan)
    excess_p = tests.get("acceptance", math.nan)
    return LosslessReport(
        verifier=_verifier_names(runs),
        lossy=lossy,
        verdict=verdict,
        p_value=p_value,
        alpha=alpha,
        impossible_outputs=impossible,
        acceptance=acc,
        acceptance_interval=(float(interval[0]), float(interval[1])),
        bound=mean_bound,
        exceeds_bound=bool(K and excess_p * m <= alpha),
        excess_p_value=excess_p,
        # the G test of the PIT on its bins, at its share of alpha
        detectable_tv=detectable_tv(N, bins, alpha / m) if bins >= 2 else math.nan,
        rows=N + impossible,
        trials=1,
        tests=tests,
        source="live",
        samples=N + impossible,
        bound_samples=K,
    )
