r"""Scaling laws (Scylla arXiv 2505.07858; Leviathan et al. Table 3; Spec-Bench): capacity.

Scylla reports that acceptance grows log-linearly in draft capacity
(docs/theory.md §6.1, statements unconfirmed).  Regenerates, side by side,

1. the published log-linear capacity fits
   :math:`\alpha = a + b \log_{10} N_{\mathrm{draft}}` of Leviathan et al.
   Table 3 (docs/theory.md §6.2, to 3 decimals) and the fixed-draft, growing-target
   data of Spec-Bench (SpS, vicuna-68m draft; docs/theory.md §6.2/6.3), fitted in
   :math:`\log_{10}` of the target size;
2. the capacity law measured on the real model: the mean acceptance
   :math:`\bar\beta(L, T)` of the early exits after :math:`L` of 30 layers of
   SmolLM2-135M-Instruct along the trace's continuations, at T = 0.7 and 1.0,
   fitted against :math:`\log_{10}` of the draft's parameter count with
   bootstrap intervals (:func:`spectheory.lm.capacity_law`).

3. the batch law (Scylla Thm 1.3's form): the optimal number of i.i.d. drafts
   :math:`n^*(B)` against the decoding batch size :math:`B = 1..4096`, from the
   trace's optimal acceptance :math:`\alpha^*(n)` of each early exit and the
   roofline cost of a batched round (H100 defaults; a model, not a measured
   engine), fitted as :math:`n^* = a + b \log_{10} B`.

Scylla's first law (pretraining tokens of the draft) needs trained drafts:
``spectheory experiment draft-scaling`` measures it on adapters.

Files: ``fits.csv`` (every fit, published and ours), ``capacity.csv`` (our
data per exit layer), ``spec_bench.csv``, ``capacity.png``, ``batch_law.csv``,
``batch_law.png``.

References
----------
.. [1] Yan et al. "Scaling Laws for Speculative Decoding" (Scylla).
   arXiv:2505.07858.
.. [2] Leviathan, Kalman, Matias. arXiv:2211.17192, Table 3.
.. [3] Xia et al. Spec-Bench, arXiv:2401.07851; hemingkx/Spec-Bench Leaderboard.md.
"""

from __future__ import annotations

import numpy as np

from ..solvers.scaling import fit_log_linear, leviathan_capacity_data, spec_bench_tau
from . import leviathan
from ._common import Run, get_model, get_trace

__all__ = ["PUBLISHED_SLOPE_RANGE", "SPEC_BENCH_TARGETS", "reproduce"]

#: docs/theory.md §6.2 [derived]: about +0.07..0.09 acceptance per decade of draft parameters.
PUBLISHED_SLOPE_RANGE = (0.07, 0.09)

#: Spec-Bench A100 settings and their Vicuna-v1.3 target sizes (parameters).
SPEC_BENCH_TARGETS = {"A100 V-7B": 7e9, "A100 V-13B": 13e9, "A100 V-33B": 33e9}


def spec_bench_rows(run: Run) -> list:
    """Fixed draft (SpS: vicuna-68m), growing target: tau against target size."""
    rows = []
    for setting, size in SPEC_BENCH_TARGETS.items():
        for method, (tau, spd) in spec_bench_tau(setting).items():
            rows.append(
                {"setting": setting, "target_params": size, "method": method, "tau": tau,
                 "speedup": spd}
            )  # fmt: skip
    run.table("spec_bench", rows)
    sps = [r["tau"] for r in rows if r["method"] == "SpS"]
    # Published numbers only, nothing of ours: a note, not a check (it could not fail).
    run.note(
        "Spec-Bench leaderboard (docs/theory.md §6.3): with a fixed draft (vicuna-68m), SpS's "
        "tau falls as the target grows from 7B to 13B to 33B ("
        + " > ".join(f"{t:.2f}" for t in sps)
        + "); tabulated in spec_bench.csv, not measured here."
    )
    return rows


def capacity(run: Run, trace, loaded, layers, temperatures) -> tuple:
    """Our capacity law on the early exits."""
    from ..lm import capacity_law

    law = capacity_law(loaded, trace, temperatures, layers, n_boot=2000, seed=0)
    prof = law.profile
    rows = []
    for m, T in enumerate(prof.temperatures.tolist()):
        for k, L in enumerate(prof.layers.tolist()):
            rows.append(
                {
                    "temperature": T,
                    "exit_layer": int(L),
                    "draft_params": int(prof.parameters[k]),
                    "mean_acceptance": float(prof.acceptance[m, k]),
                    "positions": int(prof.positions.sum()),
                }
            )
    run.table("capacity", rows)
    return law, rows


#: Decoding batch sizes of the batch law (Scylla Thm 1.3): 1, 2, 4, ..., 4096.
BATCHES = tuple(2**k for k in range(13))
#: Numbers of i.i.d. drafts per sequence searched for n*(B).
WIDTHS = tuple(range(1, 9))


def parameter_counts(loaded, trace) -> tuple:
    """``({exit draft: parameters}, target parameters)`` of the trace's early exits."""
    from ..lm.cost import draft_parameter_count

    exits = [d for d in trace.drafts if d.startswith("exit:")]
    counts = {d: draft_parameter_count(loaded, int(d.split(":")[1])) for d in exits}
    return counts, draft_parameter_count(loaded, loaded.num_layers)


def batch_law(run: Run, trace, draft_params: dict, target_params: int, positions: int,
              temperature: float = 1.0) -> list:  # fmt: skip
    r"""Optimal number of drafts :math:`n^*(B)` against the decoding batch size.

    For each draft of ``draft_params`` (parameter counts, :func:`parameter_counts`): the
    mean optimal i.i.d. acceptance
    :math:`\alpha^*(n)`, :math:`n = 1..8` (:func:`spectheory.bound`) over
    evenly spaced trace positions at ``temperature``, then the roofline
    throughput :math:`S(n, B)` of one multi-draft round
    (:func:`spectheory.solvers.roofline.optimal_width`, H100 defaults; the
    draft's and target's parameter counts of SmolLM2) and its maximiser
    :math:`n^*(B)` for :data:`BATCHES`, fitted as :math:`n^* = a + b
    \log_{10} B` (Scylla Thm 1.3's form, docs/theory.md §6.1, unconfirmed).
    """
    from .. import bound
    from ..distributions import process_logits
    from ..solvers import roofline

    rows_idx = np.unique(np.linspace(0, trace.num_positions - 1, positions).astype(int))
    p = process_logits(trace.target_logits[rows_idx].astype(np.float64), temperature)
    roof = roofline.Roofline()
    out = []
    for d, params in draft_params.items():
        q = process_logits(trace.draft_logits(d, rows_idx), temperature)
        alpha = np.array([float(np.mean(bound(p, q, n, "iid"))) for n in WIDTHS])
        n_star, s_star = roofline.optimal_width(alpha, BATCHES, target_params, params, roof)
        fit = fit_log_linear(np.array(BATCHES, float), n_star.astype(float))
        for B, n, s in zip(BATCHES, n_star.tolist(), s_star.tolist(), strict=True):
            out.append({"draft": d, "temperature": temperature, "batch": B, "n_star": n,
                        "speedup_at_n_star": s, "alpha_1": alpha[0], "alpha_8": alpha[-1],
                        "positions": rows_idx.size, "draft_params": params,
                        "target_params": target_params, "fit_intercept": fit.intercept,
                        "fit_slope_per_decade": fit.slope,
                        "fit_r_squared": fit.r_squared})  # fmt: skip
        mono = bool(np.all(np.diff(n_star) <= 0))
        run.check(
            f"{d}: speculation beats plain decoding at some batch size",
            "roofline (spectheory/solvers/roofline.py): n* is chosen among n >= 1 drafts; "
            "plain decoding has S = 1",
            "max_B S(n*(B), B) > 1",
            f"max S(n*) = {float(np.max(s_star)):.3f}",
            "> 1 (reported only: where it fails, n*(B) is the least bad width, not a reason "
            "to speculate)",
            bool(np.max(s_star) > 1),
            required=False,
            kind="derived",
        )
        run.check(
            f"{d}: the optimal number of drafts falls with the batch size",
            "Scylla Thm 1.3 [unconfirmed form, docs/theory.md §6.1]; derived from the roofline "
            "(spectheory/solvers/roofline.py: memory-bound verification is free, compute-bound "
            "is not)",
            "n*(B) non-increasing, n*(1) > 1 and n*(4096) = 1",
            f"n* = {n_star.tolist()} for B = 1..4096",
            "non-increasing in B, several drafts at B = 1, one at B = 4096",
            mono and n_star[0] > 1 and n_star[-1] == 1,
            kind="derived",
        )
        run.check(
            f"{d}: log-linear batch law n*(B) = a + b log10 B",
            "Scylla Thm 1.3 [unconfirmed: R^2 about 0.99]",
            "b < 0, R^2 about 0.99",
            f"b = {fit.slope:+.2f} per decade, R^2 = {fit.r_squared:.3f}",
            "b < 0 and R^2 >= 0.9 (reported only: a roofline model, not a measured engine)",
            fit.slope < 0 and fit.r_squared >= 0.9,
            required=False,
            kind="published",
        )
    run.table("batch_law", out)
    return out


def reproduce(out_dir, *, quick=False, trace=None, loaded=None, progress=True):
    """Reproduce the capacity laws: published fits beside the early-exit law of SmolLM2.

    Parameters
    ----------
    out_dir : path-like
    quick : bool
        Exit layers (2, 6, 10, 15, 20, 25, 29) on the small trace; full: every
        layer 1..29 on the default trace.
    trace : spectheory.lm.Trace or path, optional
    loaded : spectheory.lm.LoadedModel, optional
        The model, for the teacher-forced passes (loaded if not given).
    progress : bool

    Returns
    -------
    PaperResult
    """
    run = Run("scaling", out_dir, quick, progress)
    run.log("published fits (Leviathan Table 3, Spec-Bench)")
    fits = leviathan.table3_fit_rows(run)
    spec = spec_bench_rows(run)
    sps = [r for r in spec if r["method"] == "SpS"]
    fit_sb = fit_log_linear([r["target_params"] for r in sps], [r["tau"] for r in sps],
                            n_boot=200, seed=0)  # fmt: skip
    fit_rows = [
        {
            "source": r["source"],
            "what": f"alpha vs log10 draft params, {r['target']}, T = {r['temperature']}",
            "intercept": r["intercept"],
            "slope_per_decade": r["slope_per_decade"],
            "slope_ci_low": float("nan"),
            "slope_ci_high": float("nan"),
            "r_squared": r["r_squared"],
        }
        for r in fits
    ]
    fit_rows.append(
        {
            "source": "Spec-Bench leaderboard (A100)",
            "what": "tau vs log10 target params, SpS (vicuna-68m draft), Vicuna 7B/13B/33B",
            "intercept": fit_sb.intercept,
            "slope_per_decade": fit_sb.slope,
            "slope_ci_low": float("nan"),
            "slope_ci_high": float("nan"),
            "r_squared": fit_sb.r_squared,
        }
    )
    run.log("capacity law of the early exits (teacher-forced passes)")
    loaded = get_model(loaded)
    tr = get_trace(trace, quick, loaded, progress, paper="scaling")
    layers = (2, 6, 10, 15, 20, 25, 29) if quick else tuple(range(1, 30))
    law, cap = capacity(run, tr, loaded, layers, (0.7, 1.0))
    for T, fit in law.fits_parameters.items():
        fit_rows.append(
            {
                "source": "this package: SmolLM2-135M-Instruct early exits",
                "what": f"acceptance vs log10 draft params, T = {T:g}, "
                f"exits {layers[0]}..{layers[-1]}",
                "intercept": fit.intercept,
                "slope_per_decade": fit.slope,
                "slope_ci_low": float(fit.slope_ci[0]),
                "slope_ci_high": float(fit.slope_ci[1]),
                "r_squared": fit.r_squared,
            }
        )
        run.check(
            f"measured capacity slope (T = {T:g}) vs the published range",
            "Leviathan Table 3 fits [derived, docs/theory.md §6.2]; Scylla [unconfirmed]",
            f"+{PUBLISHED_SLOPE_RANGE[0]}..{PUBLISHED_SLOPE_RANGE[1]} per decade",
            f"{fit.slope:+.3f} [{fit.slope_ci[0]:+.3f}, {fit.slope_ci[1]:+.3f}] per decade",
            "bootstrap CI overlaps the range (reported only: early exits are not trained drafts)",
            fit.slope_ci[1] >= PUBLISHED_SLOPE_RANGE[0]
            and fit.slope_ci[0] <= PUBLISHED_SLOPE_RANGE[1],
            required=False,
            kind="published",
        )
        run.check(
            f"log-linear form of the capacity law (T = {T:g})",
            "Scylla Thm 1.2 [unconfirmed: R^2 about 0.99]",
            "R^2 about 0.99",
            f"R^2 = {fit.r_squared:.3f}",
            "R^2 >= 0.9 (reported only)",
            fit.r_squared >= 0.9,
            required=False,
            kind="published",
        )
    mono = all(
        np.all(np.diff(law.profile.acceptance[m]) > -0.02)
        for m in range(law.profile.acceptance.shape[0])
    )
    run.check(
        "acceptance grows with draft capacity",
        "Leviathan Table 3, Scylla [paper: qualitative]",
        "non-decreasing in draft size",
        "non-decreasing within 0.02" if mono else "drops by more than 0.02 somewhere",
        "no drop larger than 0.02 between consecutive exits (reported only)",
        mono,
        required=False,
        kind="published",
    )
    run.table("fits", fit_rows)
    run.log("batch law: optimal number of drafts against the batch size (roofline)")
    batch = batch_law(run, tr, *parameter_counts(loaded, tr), 24 if quick else 96)
    with run.figure("batch_law") as (_fig, ax):
        for d in dict.fromkeys(r["draft"] for r in batch):
            sel = [r for r in batch if r["draft"] == d]
            xs = np.array([r["batch"] for r in sel], dtype=float)
            ax.plot(xs, [r["n_star"] for r in sel], "o", label=f"{d}: n*(B)")
            ax.plot(xs, sel[0]["fit_intercept"] + sel[0]["fit_slope_per_decade"] * np.log10(xs),
                    "-", color=ax.lines[-1].get_color(),
                    label=f"fit b = {sel[0]['fit_slope_per_decade']:.2f}/decade")  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set(xlabel="decoding batch size B", ylabel="optimal number of i.i.d. drafts n*")
        ax.set_title("Scylla Thm 1.3 form: n*(B), roofline (H100), alpha*(n) of the trace")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    with run.figure("capacity", ncols=2) as (_fig, axes):
        ax = axes[0]
        for T, fit in law.fits_parameters.items():
            sel = [r for r in cap if r["temperature"] == T]
            x = np.array([r["draft_params"] for r in sel], dtype=float)
            ax.plot(x, [r["mean_acceptance"] for r in sel], "o", label=f"exits, T = {T:g}")
            ax.plot(x, fit.predict(x), "-", color=ax.lines[-1].get_color(),
                    label=f"fit b = {fit.slope:.3f}/decade")  # fmt: skip
        ax.set_xscale("log")
        ax.set(xlabel="draft parameters", ylabel="mean acceptance sum min(p, q)")
        ax.set_title("SmolLM2-135M early exits (this package)")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        ax = axes[1]
        for r in fits:
            x, y = leviathan_capacity_data(r["target"], r["temperature"])
            ax.plot(x, y, "o", label=f"{r['target']} T={r['temperature']}")
            xs = np.geomspace(x.min(), x.max(), 20)
            ax.plot(xs, r["intercept"] + r["slope_per_decade"] * np.log10(xs), "-",
                    color=ax.lines[-1].get_color())  # fmt: skip
        ax.set_xscale("log")
        ax.set(xlabel="draft parameters", ylabel="alpha")
        ax.set_title("Leviathan et al. Table 3 with log-linear fits")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    run.note(
        "Setting: drafts are early exits of one 135M model (shared embedding, norm and head, "
        "untrained exits), so 'capacity' is depth at a fixed width and the tied 28M embedding is "
        "shared by every draft; published laws vary separately trained drafts (T5, LaMDA; "
        "Scylla: pretraining tokens, layers, batch size). Scylla's coefficients are unconfirmed "
        "(docs/theory.md §6.1), so only the qualitative log-linear form is compared. Trained "
        "adapters (spectheory.experiments.draft_scaling) are not used yet."
    )
    return run.result()
