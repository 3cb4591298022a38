"""The report's section on drafts without replacement: ``optimal``, ``embedded_iid``, RRS.

``optimal`` runs the ramp score rule for two drafts (docs/theory.md §3.15) and the
priority-coin rule for more (§3.17); the rows give its acceptance and at how many
positions its plan reaches :math:`\\alpha^*_{\\rm wor}`.  For two drafts they also
give ``pair_tiers`` and ``pair_scores`` (§3.14-3.15).  The section also
measures how much of the gap between RRS without replacement
(``rrs_wor``, the published verifier) and the bound the package's
``embedded_iid`` closes on the trace (docs/theory.md §3.13).  The verifiers
see the same drafts: each trial's drafts come from the same uniforms
(``simulate``'s ``draft_uniforms``).  So the difference of their acceptances
is a paired difference, whose Monte Carlo error is smaller than that of
either mean.

Per draft, temperature and n, the table gives, over the same positions (those
where the draft has at least as many tokens as the largest n, for every n):

* ``alpha*_iid`` and ``alpha*_wor``, exact (:func:`spectheory.bound`);
* the Monte Carlo acceptances of both verifiers;
* their difference with a 95% interval (normal, over the trials, positions
  fixed);

and per draft, pooled over temperatures and n, the share of the gap
``alpha*_wor - rrs_wor`` that ``embedded_iid`` closes (:func:`pooled`).
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = [
    "WOR_POSITIONS",
    "WOR_TRIALS",
    "pooled",
    "section_without_replacement",
    "wor_comparison",
]

#: Positions compared per draft and temperature (full, quick), spread evenly over the trace.
WOR_POSITIONS = (24, 8)
#: Trials per position and verifier (full, quick).
WOR_TRIALS = (200, 100)
WOR = "without_replacement"
#: The two-draft rules shown at n = 2 (docs/theory.md §3.14-3.15).
PAIR_RULES = ("pair_tiers", "pair_scores")


def wor_comparison(trace, draft, temperature, n, positions, trials, seed=0, min_support=None):
    """``embedded_iid`` and ``rrs_wor`` on the same drafts at the given trace positions.

    Parameters
    ----------
    trace : Trace
    draft : str
    temperature : float
        Applied to both models' logits (:func:`spectheory.process_logits`).
    n : int >= 2
    positions : array_like of int
        Trace positions; those whose draft has fewer than ``min_support``
        tokens of positive probability are left out (drafting without
        replacement needs ``n``).
    trials : int
    seed : int
    min_support : int, optional
        At least ``n`` (the default).  The section passes its largest ``n`` for
        every ``n``, so that the rows of one draft and temperature compare
        the same positions (with ``n`` alone, a larger ``n`` left out more
        positions and alpha* seemed to fall as ``n`` grew).

    Returns
    -------
    dict or None
        The table row (keys in :func:`section_without_replacement`), or None
        when no position has ``n`` tokens of support.
    """
    from .._validate import as_distribution_pair
    from ..distributions import process_logits
    from ..sim.simulate import simulate
    from ..solvers.ot_dual import bound
    from ..verifiers.priority_coins import coin_plan

    positions = np.asarray(positions, dtype=np.int64)
    p = process_logits(trace.target_logits[positions].astype(np.float64), temperature)
    q = process_logits(trace.draft_logits(draft, positions), temperature)
    # Checked once here, so that the plans counted below are those of the rows simulated.
    p, q, _ = as_distribution_pair(p, q)
    ok = np.count_nonzero(q, axis=1) >= max(n, min_support or n)
    if not ok.any():
        return None
    p, q = p[ok], q[ok]
    rng = np.random.default_rng([seed, zlib.crc32(draft.encode()), n, round(temperature * 1000)])
    du = rng.random((p.shape[0], trials, n))
    # pair_tiers and pair_scores (docs/theory.md §3.14-3.15) are for two drafts only.
    names = ("rrs_wor", "embedded_iid", "optimal") + (PAIR_RULES if n == 2 else ())
    accepted = {
        v: simulate(v, p, q, n, WOR, trials=trials, draft_uniforms=du, rng=rng).accepted
        for v in names
    }
    pairs = {}
    for name in PAIR_RULES:
        if n == 2:
            plan = _pair_plans()[name]
            reached = sum(plan(p[b], q[b]).reached for b in range(p.shape[0]))
            pairs[name] = float(accepted[name].mean())
            pairs[f"{name} reached"] = f"{reached}/{p.shape[0]}"
        else:
            pairs[name], pairs[f"{name} reached"] = float("nan"), ""
    plan = _pair_plans()["pair_scores"] if n == 2 else (lambda a, b: coin_plan(a, b, n))
    reached = sum(plan(p[b], q[b]).reached for b in range(p.shape[0]))
    pairs["optimal"] = float(accepted["optimal"].mean())
    pairs["optimal reached"] = f"{reached}/{p.shape[0]}"
    diff = accepted["embedded_iid"].astype(float) - accepted["rrs_wor"]
    wor, rrs = float(bound(p, q, n, WOR).mean()), float(accepted["rrs_wor"].mean())
    emb = float(accepted["embedded_iid"].mean())
    return {
        "draft": draft, "T": temperature, "n": n, "positions": int(p.shape[0]),
        "alpha*_iid": float(bound(p, q, n, "iid").mean()), "rrs_wor": rrs,
        "embedded_iid": emb, **pairs, "alpha*_wor": wor, "difference": emb - rrs,
        "difference 95%": _interval(diff.mean(), diff.var(ddof=1) / diff.size),
        "_diff_var": float(diff.var(ddof=1) / diff.size),
    }  # fmt: skip


def _pair_plans():
    """The cached per-row plans of the two-draft rules, by verifier name."""
    from ..verifiers.pair_scores import score_plan
    from ..verifiers.pair_tiers import pair_plan

    return {"pair_tiers": pair_plan, "pair_scores": score_plan}


def _interval(mean, var):
    half = 1.96 * np.sqrt(var)
    return f"[{mean - half:+.4f}, {mean + half:+.4f}]"


def pooled(rows):
    """Per draft, the configurations pooled with equal weights: difference, its 95% interval,
    and the share of the summed gap alpha*_wor - rrs_wor that embedded_iid closes."""
    out = []
    for d in dict.fromkeys(r["draft"] for r in rows):
        rs = [r for r in rows if r["draft"] == d]
        diff = float(np.mean([r["difference"] for r in rs]))
        var = float(np.sum([r["_diff_var"] for r in rs])) / len(rs) ** 2
        gap = float(np.mean([r["alpha*_wor"] - r["rrs_wor"] for r in rs]))
        # A share is shown only where the gap is at least twice the difference's 95%
        # half-width: below that the ratio is noise (a 3-gram draft's gap of 0.001 gave 2.4).
        resolved = gap > max(1e-3, 2 * 1.96 * np.sqrt(var))
        out.append({
            "draft": d, "configurations": len(rs), "difference": diff,
            "difference 95%": _interval(diff, var),
            "gap alpha*_wor - rrs_wor": gap,
            "gap closed": diff / gap if resolved else float("nan"),
            "gap left": float(np.mean([r["alpha*_wor"] - r["embedded_iid"] for r in rs])),
        })  # fmt: skip
    return out


def section_without_replacement(ctx, page) -> None:
    """``embedded_iid`` against ``rrs_wor`` and the bounds on the trace (module docstring)."""
    tr = ctx.trace
    k = WOR_POSITIONS[1] if ctx.quick else WOR_POSITIONS[0]
    trials = WOR_TRIALS[1] if ctx.quick else WOR_TRIALS[0]
    positions = np.unique(np.linspace(0, tr.num_positions - 1, k).astype(np.int64))
    ctx.say(f"embedded_iid against rrs_wor on {positions.size} positions")
    ns = (2, 4)
    rows = [r for d in tr.drafts for t in (0.7, 1.0) for n in ns
            if (r := wor_comparison(tr, d, t, n, positions, trials,
                                    min_support=max(ns))) is not None]  # fmt: skip
    # the bound and optimal first: the table is wider than a page, and they are its point
    cols = ["draft", "T", "n", "positions", "alpha*_wor", "optimal", "optimal reached",
            "alpha*_iid", "rrs_wor", "embedded_iid", "difference", "difference 95%",
            "pair_tiers", "pair_tiers reached", "pair_scores",
            "pair_scores reached"]  # fmt: skip
    ctx.csv("without_replacement.csv", [{c: r[c] for c in cols} for r in rows], cols)
    pool = pooled(rows)
    pool_cols = ["draft", "configurations", "difference", "difference 95%",
                 "gap alpha*_wor - rrs_wor", "gap closed", "gap left"]  # fmt: skip
    page.section("Without replacement: the gap to the bound", "without-replacement")
    page.paragraph(
        "`optimal` runs, for two drafts without replacement, the ramp score rule "
        "(docs/theory.md §3.15) and, for more, the priority-coin rule (§3.17, notebook 07), "
        "both computed at full vocabulary; `optimal reached` counts the positions where its "
        "plan certifies that the rule reaches alpha*_wor (selection acceptance equal to the "
        "bound to 1e-12), and `optimal` is its simulated acceptance on the same drafts. "
        "`embedded_iid` "
        "(docs/theory.md §3.13) is exactly lossless: it redraws the i.i.d. stream behind the "
        "drafts and runs the optimal i.i.d. verifier on it, then itself on the residual. Its "
        "acceptance lies "
        "between alpha*_iid and alpha*_wor. Here it is beside RRS without replacement "
        f"(`rrs_wor`) on the same drafts: {positions.size} positions spread over the trace, "
        "of which those where the draft has at least 4 tokens of positive probability (the "
        "same positions for n = 2 and 4, so that the rows compare; `positions` counts them), "
        f"{trials} trials each. `difference` is embedded_iid - rrs_wor, with a 95% interval "
        "(normal, over the trials, positions fixed). One configuration's difference is "
        "within its Monte Carlo error more often than not, so the second table pools each "
        "draft's configurations (T and n, equal weights): `gap closed` is the pooled "
        "difference as a share of the pooled gap alpha*_wor - rrs_wor (empty where the gap is "
        "below twice the difference's 95% half-width, or 0.001: there the share is noise), "
        "`gap left` is alpha*_wor - embedded_iid. For n = 2 the table also gives "
        "`pair_tiers` (docs/theory.md §3.14) and `pair_scores` (§3.15, a rule that reaches "
        "alpha*_wor on every row exists and its plan computes it) on the same drafts, and at "
        "how many positions each plan reaches alpha*_wor (`... reached`, certified per "
        "position: the plan's selection acceptance equals the bound to 1e-12). Table in "
        "`without_replacement.csv`."
    )
    page.table(rows, cols)
    page.table(pool, pool_cols)
    ctx.summary["without_replacement"] = {
        "positions": int(positions.size),
        "trials": trials,
        "rows": [{c: r[c] for c in cols} for r in rows],
        "pooled": pool,
    }
