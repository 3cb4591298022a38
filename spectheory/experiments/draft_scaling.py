r"""The three scaling dimensions of speculative drafts, measured on our models.

``spectheory experiment draft-scaling [--out DIR] [--quick]`` (:func:`run_scaling`)
writes CSV tables, PNG figures (matplotlib, Agg) and ``comparison.txt``:

1. **Capacity** (``capacity.csv``, ``capacity.png``): held-out acceptance
   :math:`\bar\beta = \frac1N\sum_t\sum_x\min(p_t, q_t)` of adapters trained
   with the same settings at several exit layers :math:`L`, against the
   draft's parameter count :math:`N` (:func:`spectheory.lm.draft_parameter_count`),
   fitted as :math:`\bar\beta = a + b\log_{10} N` (Scylla Thm 1.2 [1]_;
   docs/theory.md §6.1, 6.2).
2. **Training tokens** (``tokens.csv``, ``tokens.png``): one exit layer,
   adapters trained on nested prefixes of the corpus of :math:`D` positions
   (same number of optimiser steps), fitted as
   :math:`\bar\beta = a + b\log_{10} D` (Scylla Thm 1.1).
3. **Batch size** (``width.csv``, ``width.png``): the optimal number of
   i.i.d. drafts :math:`n^*` (verify width :math:`w = n + 1` tokens per
   sequence) against the decoding batch size :math:`B` under the roofline
   cost model

   .. math::

       t(x) = \max\Big(\frac{P\,s}{W},\; \frac{2 P x}{F}\Big),\qquad
       S(n, B) = \frac{(1 + \alpha(n))\, t_t(B)}{t_d(B) + t_t\big(B (n + 1)\big)},

   where :math:`x` is the number of tokens in the forward pass, :math:`P` the
   parameters (target :math:`P_t`, draft :math:`P_d`), :math:`s` bytes per
   parameter, :math:`W` the memory bandwidth and :math:`F` the compute rate
   (defaults: bf16 on an H100 SXM, :math:`W = 3.35` TB/s, :math:`F = 0.5
   \times 989` TFLOP/s); one round drafts :math:`n` i.i.d. tokens from one
   draft forward and verifies them in one target forward, yielding
   :math:`1 + \alpha(n)` tokens, with :math:`\alpha(n)` the optimal
   multi-draft acceptance :func:`spectheory.bound` (i.i.d. drafts) averaged
   over held-out positions of the adapter draft (the cost model is
   :mod:`spectheory.solvers.roofline`).  :math:`n^*(B) =
   \arg\max_n S(n, B)` is fitted as :math:`a_3 + b_3\log_{10}B` (Scylla
   Thm 1.3: :math:`b_3 < 0`).

The training corpus is :mod:`spectheory.lm.corpus`; adapters are trained with
:func:`spectheory.lm.adapters.train_adapter` from one teacher pass over all
layers and evaluated on the 38 held-out prompts.  The full run (:data:`FULL`)
uses the corpus with two sampled continuations per training prompt (about
48,500 training positions), one-layer adapters at exit layers 2, 5, 8, 11
and 14 for the capacity law, the layer-11 adapter on nested prefixes of
3,000 to 48,000 positions for the token law, 300 AdamW steps of 8 sequences
each (the other :class:`~spectheory.lm.adapters.TrainSettings` at their
defaults) and temperatures 0.7 and 1.0; the batch law uses the layer-14
adapter's :math:`\alpha(n)`, :math:`n \le 32`, on the first 8 positions of
every held-out prompt at :math:`T = 1`.  Every law reports two 95%
intervals of its slope (:func:`run_scaling`).

References
----------
.. [1] Yan et al. "Scaling Laws for Speculative Decoding". arXiv:2505.07858.
.. [2] Leviathan, Kalman, Matias. arXiv:2211.17192 (Table 3; docs/theory.md §6.2).
.. [3] Williams, Waterman, Patterson. "Roofline: an insightful visual
   performance model". CACM 2009.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

__all__ = ["FULL", "QUICK", "run_scaling"]

_log = logging.getLogger(__name__)


def _held_out_pq(loaded, adapter, temperature, prompts, max_new_tokens, per_prompt):
    """Target and adapter distributions on held-out positions, and each position's prompt.

    Returns ``p``, ``q`` (float64, (N, V)) and ``prompt`` (int, (N,)): the
    first ``per_prompt`` positions of every held-out prompt, so that the
    sample spans all prompts (the unit of the bootstrap).
    """
    import torch

    from ..lm.draft_eval import _softmax_t, held_out_sequences

    ps, qs, ids_of = [], [], []
    with torch.no_grad():
        for j, (ids, b) in enumerate(
            held_out_sequences(loaded, temperature, max_new_tokens, prompts)
        ):
            out = loaded.model(
                input_ids=torch.as_tensor(ids[None]), output_hidden_states=True, use_cache=False
            )
            pos = torch.arange(ids.size)[None]
            z = adapter.full_logits(adapter.subset_logits(out.hidden_states[adapter.layer], pos))
            e = min(ids.size, b + per_prompt)
            ps.append(_softmax_t(out.logits[0, b:e].double(), temperature).numpy())
            qs.append(_softmax_t(z[0, b:e].double(), temperature).numpy())
            ids_of.append(np.full(e - b, j))
    return np.concatenate(ps), np.concatenate(qs), np.concatenate(ids_of)


def _slope(x, y):
    """OLS slope of ``y`` on ``log10 x`` (y may be (..., n)): the fit of :func:`fit_log_linear`."""
    from ..solvers.scaling import _ols

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if y.shape[-1:] != x.shape:
        raise ValueError(f"y must have x's length {x.shape} on its last axis; got shape {y.shape}")
    return _ols(np.log10(x), y)[1]


def _t_interval(fit, level=0.95):
    """Classical OLS t-interval of the slope of a :class:`LogLinearFit`."""
    from scipy import stats

    u = np.log(fit.x) / np.log(fit.base)
    se = fit.residual_std / np.sqrt(np.sum((u - u.mean()) ** 2))
    half = stats.t.ppf(0.5 + level / 2, fit.n - 2) * se
    return fit.slope - half, fit.slope + half


def _prompt_slope_interval(x, tables, *, level=0.95, n_boot=2000, seed=0):
    """Interval of the slope from resampling held-out prompts (paired across the points)."""
    from ..lm.draft_eval import prompt_bootstrap

    (lo, hi), _ = prompt_bootstrap(
        tables, lambda r: float(_slope(x, r)), level=level, n_boot=n_boot, seed=seed
    )
    return lo, hi


def _plot(path, x, y, fit, xlabel, ylabel, title, logx=True, yerr=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    if yerr is None:
        ax.plot(x, y, "o", label="measured")
    else:
        lo, hi = (np.asarray(v, dtype=np.float64) for v in yerr)
        err = [np.asarray(y) - lo, hi - np.asarray(y)]
        ax.errorbar(x, y, yerr=err, fmt="o", capsize=3, label="measured (95% prompt bootstrap)")
    if fit is not None:
        xs = np.geomspace(min(x), max(x), 50)
        ax.plot(
            xs,
            fit.predict(xs),
            "-",
            label=f"{fit.intercept:.3f} + {fit.slope:.3f} log10 x (R^2 {fit.r_squared:.2f})",
        )
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _fit_row(name, fit, prompt_ci):
    t_lo, t_hi = _t_interval(fit)
    return {
        "law": name,
        "intercept": round(fit.intercept, 5),
        "slope_per_decade": round(fit.slope, 5),
        "slope_ci_low": round(float(t_lo), 5),
        "slope_ci_high": round(float(t_hi), 5),
        "slope_ci_prompts_low": round(float(prompt_ci[0]), 5),
        "slope_ci_prompts_high": round(float(prompt_ci[1]), 5),
        "r_squared": round(fit.r_squared, 4),
        "n_points": fit.n,
    }


#: Smoke settings (``--quick``): three layers, three corpus sizes, a few steps; not a measurement.
QUICK = {
    "corpus": {"doc_sequences": 10, "samples_per_prompt": 0, "max_len": 64},
    "layers": (2, 4, 6),
    "token_layer": 4,
    "tokens": (60, 120, 200),
    "train": {"steps": 3, "batch_size": 2, "vocab": 1024},
    "prompts": (3, 12, 20),
    "max_new_tokens": 4,
    "temperatures": (1.0,),
    "per_prompt": 3,
    "ns": 8,
    "n_boot": 200,
}
#: The published run (31 min on 2 cores; ``docs/draft_scaling/``).
FULL = {
    "corpus": {"samples_per_prompt": 2},
    "layers": (2, 5, 8, 11, 14),
    "token_layer": 11,
    "tokens": (3000, 6000, 12000, 24000, 48000),
    "train": {"steps": 300},
    "prompts": None,
    "max_new_tokens": 24,
    "temperatures": (0.7, 1.0),
    "per_prompt": 8,
    "ns": 32,
    "n_boot": 2000,
}


def _law(out, fits, name, x, evals, temps, xlabel, title, n_boot):
    """Fit one acceptance law per temperature, with its intervals and a figure."""
    from ..solvers.scaling import fit_log_linear

    for k, T in enumerate(temps):
        y = [ev.acceptance[k] for ev in evals]
        tables = [ev.per_prompt[k] for ev in evals]
        f = fit_log_linear(x, y)
        fits.append(
            _fit_row(f"{name} T={T:g}", f, _prompt_slope_interval(x, tables, n_boot=n_boot))
        )
        cis = [ev.acceptance_ci(n_boot=n_boot)[k] for ev in evals]
        _plot(
            out / f"{name}_T{T:g}.png",
            x,
            y,
            f,
            xlabel,
            "held-out acceptance",
            f"{title}, T={T:g}",
            yerr=([c[0] for c in cis], [c[1] for c in cis]),
        )


def _width_law(alpha_pos, prompt_ids, batches, Pt, Pd, n_boot, seed=0):
    """n*(B) from the mean of per-position alpha(n), and a prompt-bootstrap slope interval."""
    from ..solvers.roofline import optimal_width
    from ..solvers.scaling import fit_log_linear

    alpha = alpha_pos.mean(0)
    n_star, s_star = optimal_width(alpha, batches, Pt, Pd)
    fit = fit_log_linear(batches, n_star)
    groups = [np.flatnonzero(prompt_ids == j) for j in np.unique(prompt_ids)]
    rng = np.random.default_rng(seed)
    slopes = []
    for _ in range(n_boot):
        pick = np.concatenate([groups[i] for i in rng.integers(0, len(groups), len(groups))])
        ns_b, _ = optimal_width(alpha_pos[pick].mean(0), batches, Pt, Pd)
        slopes.append(_slope(batches, ns_b))
    ci = tuple(np.percentile(slopes, [2.5, 97.5]))
    return alpha, n_star, s_star, fit, ci


def run_scaling(loaded, out, *, quick=False, seed=0, progress=True):
    r"""Measure the three laws, write ``out/*.csv``, ``*.png`` and ``comparison.txt``.

    Every law is a least-squares fit of :math:`y = a + b \log_{10} x`
    (:func:`spectheory.solvers.fit_log_linear`) with two 95% intervals for the
    slope :math:`b`: the classical OLS t-interval (scatter about the line,
    ``slope_ci_low/high``) and a cluster bootstrap over the held-out prompts,
    applied to all points of a law at once (evaluation noise,
    ``slope_ci_prompts_low/high``).  Figures show each point's
    prompt-bootstrap interval.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
        The target (SmolLM2-135M-Instruct in the published run).
    out : str or path-like
        Output folder (created).
    quick : bool
        :data:`QUICK` settings (a smoke run of a minute, not a measurement)
        instead of :data:`FULL`.
    seed : int
        Seed of the corpus, the training and the bootstrap.
    progress : bool
        Progress messages (logger ``spectheory.experiments.draft_scaling``)
        and bars.

    Returns
    -------
    dict
        ``{"capacity": rows, "tokens": rows, "width": rows, "fits": rows}``;
        ``out/comparison.txt`` holds the fitted laws beside the published ones.
    """
    from .. import _files
    from ..lm import adapters as A
    from ..lm import draft_eval as E
    from ..lm import draft_parameter_count
    from ..lm.corpus import CorpusSettings, build_corpus
    from ..solvers.scaling import leviathan_capacity_slopes

    cfg = QUICK if quick else FULL
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def say(msg):
        if progress:
            _log.info(msg)

    corpus = build_corpus(loaded, CorpusSettings(seed=seed, **cfg["corpus"]), progress=progress)
    layers = sorted(set(cfg["layers"]) | {cfg["token_layer"]})
    say(f"teacher pass over {len(corpus.sequences)} sequences for layers {layers} ...")
    states = A.teacher_states(loaded, corpus, layers, progress=progress)
    base = A.TrainSettings(seed=seed, **cfg["train"])
    temps = cfg["temperatures"]
    evals = {"temperatures": temps, "max_new_tokens": cfg["max_new_tokens"]}
    evals["prompts"] = cfg["prompts"]

    cap_rows, adapters, cap_evals = [], {}, []
    for L in cfg["layers"]:
        say(f"capacity: training the adapter at layer {L} ...")
        ad = A.train_adapter(loaded, states, L, base, progress=progress)
        adapters[L] = ad
        ev = E.evaluate_adapter(loaded, ad, **evals)
        cap_evals.append(ev)
        for k, T in enumerate(temps):
            lo, hi = ev.acceptance_ci(n_boot=cfg["n_boot"])[k]
            cap_rows.append(
                {
                    "layer": L,
                    "parameters": draft_parameter_count(loaded, ad),
                    "temperature": T,
                    "acceptance": round(ev.acceptance[k], 5),
                    "ci_low": round(lo, 5),
                    "ci_high": round(hi, 5),
                    "raw_exit": round(ev.raw_exit[k], 5),
                    "coverage": round(ev.coverage[k], 5),
                    "validation_kl": round(ad.metadata["validation_kl"], 5),
                }
            )
    tok_rows, tok_evals, tok_x = [], [], []
    for D in cfg["tokens"]:
        say(f"tokens: training the layer-{cfg['token_layer']} adapter on {D} positions ...")
        s = A.TrainSettings(**{**base.__dict__, "tokens": D})
        ad = A.train_adapter(loaded, states, cfg["token_layer"], s, progress=progress)
        ev = E.evaluate_adapter(loaded, ad, **evals)
        tok_evals.append(ev)
        tok_x.append(ad.metadata["train_tokens"])
        for k, T in enumerate(temps):
            lo, hi = ev.acceptance_ci(n_boot=cfg["n_boot"])[k]
            tok_rows.append(
                {
                    "layer": cfg["token_layer"],
                    "tokens": ad.metadata["train_tokens"],
                    "requested": D,
                    "temperature": T,
                    "acceptance": round(ev.acceptance[k], 5),
                    "ci_low": round(lo, 5),
                    "ci_high": round(hi, 5),
                    "validation_kl": round(ad.metadata["validation_kl"], 5),
                }
            )
    fits = []
    params = [draft_parameter_count(loaded, adapters[L]) for L in cfg["layers"]]
    _law(
        out,
        fits,
        "capacity",
        params,
        cap_evals,
        temps,
        "draft parameters (shared trunk + adapter + head rows)",
        "adapter drafts, SmolLM2-135M",
        cfg["n_boot"],
    )
    _law(
        out,
        fits,
        "tokens",
        tok_x,
        tok_evals,
        temps,
        "training positions",
        f"adapter at layer {cfg['token_layer']}",
        cfg["n_boot"],
    )

    # batch size: alpha(n) of the largest-capacity adapter, at the last temperature
    import spectheory

    L_best = max(adapters)
    T = temps[-1]
    say(f"batch size: alpha(n) of adapter:{L_best} at T={T:g} ...")
    p, q, prompt_ids = _held_out_pq(
        loaded, adapters[L_best], T, cfg["prompts"], cfg["max_new_tokens"], cfg["per_prompt"]
    )
    ns = range(1, cfg["ns"] + 1)
    alpha_pos = np.stack([spectheory.bound(p, q, n=n, sampling="iid") for n in ns], axis=1)
    batches = 2 ** np.arange(0, 11)
    Pt = draft_parameter_count(loaded, loaded.num_layers)
    Pd = draft_parameter_count(loaded, adapters[L_best])
    alpha, n_star, s_star, f, ci = _width_law(
        alpha_pos, prompt_ids, batches, Pt, Pd, cfg["n_boot"], seed
    )
    width_rows = [
        {
            "batch": int(B),
            "n_star": int(n),
            "verify_width": int(n) + 1,
            "speedup": round(float(s), 5),
            "alpha_n_star": round(float(alpha[n - 1]), 5),
        }
        for B, n, s in zip(batches, n_star, s_star)
    ]
    fits.append(_fit_row("n* vs batch", f, ci))
    _plot(
        out / "width.png",
        batches,
        n_star,
        f,
        "decoding batch size B",
        "optimal number of drafts n*",
        f"roofline model, adapter:{L_best}, T={T:g}",
    )
    alpha_rows = [{"n": n + 1, "alpha": round(float(a), 6)} for n, a in enumerate(alpha)]

    _files.write_csv(cap_rows, out / "capacity.csv", list(cap_rows[0]))
    _files.write_csv(tok_rows, out / "tokens.csv", list(tok_rows[0]))
    _files.write_csv(width_rows, out / "width.csv", list(width_rows[0]))
    _files.write_csv(alpha_rows, out / "alpha_n.csv", ["n", "alpha"])
    _files.write_csv(fits, out / "fits.csv", list(fits[0]))
    pub = ", ".join(f"{k}: {v:.3f}" for k, v in leviathan_capacity_slopes().items())
    title = "Scaling laws of adapter drafts on SmolLM2-135M-Instruct"
    lines = [title + (" (QUICK: smoke settings, not a measurement)" if quick else "")]
    for r in fits:
        lines.append(
            f"  {r['law']}: y = {r['intercept']:+.4f} + {r['slope_per_decade']:+.4f} log10 x "
            f"[95% t-interval {r['slope_ci_low']:+.4f}, {r['slope_ci_high']:+.4f}; "
            f"prompt bootstrap {r['slope_ci_prompts_low']:+.4f}, "
            f"{r['slope_ci_prompts_high']:+.4f}], R^2 {r['r_squared']}, {r['n_points']} points"
        )
    lines += [
        f"  Published capacity slopes per decade (docs/theory.md §6.2, Leviathan Table 3): {pub}.",
        "  Scylla (arXiv 2505.07858, docs/theory.md §6.1, forms unconfirmed): acceptance "
        "log-linear in pretraining tokens and capacity; optimal verify width decreasing "
        "log-linearly in B.",
        "  Caveats: adapters share the target's first L layers, embedding and head, so capacity "
        "here is depth of a shared trunk, not a separately trained draft; tokens are "
        "distillation positions of a small offline corpus, not pretraining tokens; the batch law "
        "is a cost-model consequence of the measured alpha(n), not a wall-clock measurement.",
    ]
    (out / "comparison.txt").write_text("\n".join(lines) + "\n")
    return {"capacity": cap_rows, "tokens": tok_rows, "width": width_rows, "fits": fits}
