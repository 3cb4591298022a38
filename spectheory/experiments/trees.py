"""Block efficiency of chain and tree methods on SmolLM2: ``spectheory experiment trees``.

For each prompt position (SmolLM2-135M-Instruct, a chat prompt plus a few
target-sampled tokens) and node budget (drafted tokens, root excluded), every
drafting scheme draws ``trees`` trees from the early-exit draft
(:class:`~spectheory.trees.lm.LMTreeModels`, one forward per new path, cached):

=========  ==========================================================  ===================
drafter    tree                                                        verifiers
=========  ==========================================================  ===================
chain      ``gamma = budget``                                          token, block, traversal
spectr     2 i.i.d. sequences of ``budget/2`` tokens, merged           rrs, kseq, nss
rsd_c      constant branching (2,1,1,1) / (2,2,1,1), w/o replacement   rrs_wor, traversal, nss
rsd_s      stochastic beam search, width budget/4, depth 4             rrs_wor, traversal
sequoia    Sequoia's DP tree for the measured rank acceptances         rrs_wor, traversal
eagle      a fixed EAGLE-style sparse shape, w/o replacement           rrs_wor, traversal
eagle_top  the same shape filled with the draft's top tokens           nss
=========  ==========================================================  ===================

Every tree is verified ``trials`` times with fresh coins (numba replay for
token, block, rrs and rrs_wor; the reference verifiers for the others,
``ref_trials`` times); the settings are :class:`TreesSettings`.  The block
efficiency :math:`\\tau` (bonus token included) is the mean over trees of each
tree's mean block length, with a 95% Student-t interval over trees cut to
:math:`\\tau`'s range :math:`[1, D + 1]`: every block holds the correction or
bonus token and at most ``D`` accepted drafts, ``D`` the deepest tree the drafter
can draw (column ``tau_max = D + 1``; with few trees the t-interval alone can
reach below 1); orderings
claimed by the papers (docs/theory.md §9) are tested by paired differences on
the same trees (or unpaired for different drafters).  Sequoia's
rank-acceptance vector is measured on the evaluation
positions' roots (RRS without replacement, 8 ranks, Monte Carlo).

:func:`run_trees` writes ``tau.csv``, ``orderings.csv`` and ``tau.png`` to
its output folder; :func:`summary_lines` formats both tables.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._errors import InvalidParameterError

__all__ = ["EAGLE_SHAPES", "TreesSettings", "run_trees", "summary_lines"]

_log = logging.getLogger(__name__)

#: EAGLE-style sparse shapes (parent arrays) with 8 and 16 drafted tokens.
EAGLE_SHAPES = {
    8: (-1, 0, 0, 0, 1, 1, 2, 4, 7),
    16: (-1, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 5, 5, 6, 8, 11, 15),
}
_RSD_C = {8: (2, 1, 1, 1), 16: (2, 2, 1, 1)}
_KERNEL = ("token", "block", "rrs", "rrs_wor")


def _shape_depth(parents):
    """Depth of the deepest node of a parent array (the root has depth 0)."""
    depth = [0] * len(parents)
    for i in range(1, len(parents)):
        depth[i] = depth[parents[i]] + 1
    return max(depth)


def _drafters(budget, sequoia_shape):
    """``{name: (drafter, verifiers, D)}``, ``D`` the deepest tree the drafter can draw."""
    from functools import partial

    from ..trees import draft_chain, draft_fixed, draft_rsd_c, draft_rsd_s, draft_spectr

    eagle = EAGLE_SHAPES[budget]
    methods = {
        "chain": (partial(draft_chain, gamma=budget), ("token", "block", "traversal")),
        "spectr": (
            partial(draft_spectr, num_sequences=2, length=budget // 2),
            ("rrs", "kseq", "nss"),
        ),
        "rsd_c": (partial(draft_rsd_c, branching=_RSD_C[budget]), ("rrs_wor", "traversal", "nss")),
        "rsd_s": (partial(draft_rsd_s, width=budget // 4, depth=4), ("rrs_wor", "traversal")),
        "sequoia": (partial(draft_fixed, shape=sequoia_shape), ("rrs_wor", "traversal")),
        "eagle": (partial(draft_fixed, shape=eagle), ("rrs_wor", "traversal")),
        "eagle_top": (partial(draft_fixed, shape=eagle, fill="top"), ("nss",)),
    }
    depth = {
        "chain": budget,
        "spectr": budget // 2,
        "rsd_c": len(_RSD_C[budget]),
        "rsd_s": 4,
        "sequoia": _shape_depth(sequoia_shape),
        "eagle": _shape_depth(eagle),
        "eagle_top": _shape_depth(eagle),
    }
    return {name: (*m, depth[name]) for name, m in methods.items()}


def _rank_acceptance(roots, ranks, trials, rng):
    """P(the b-th draft drawn without replacement is accepted by RRSw), b = 1..ranks."""
    from ..coins import RandomCoins
    from ..drafting import sample_drafts
    from ..verifiers import rrs_wor

    coins = RandomCoins(rng)
    hits = np.zeros(ranks)
    total = 0
    for p, q in roots:
        drafts = sample_drafts(np.tile(q, (trials, 1)), ranks, "without_replacement", rng)
        for d in drafts:
            y = rrs_wor(p, q, tuple(int(x) for x in d), coins)
            where = np.flatnonzero(d == y)
            if where.size:
                hits[where[0]] += 1
        total += trials
    return hits / total


def _tree_means(verifier, trees, target, draft, trials, ref_trials, rng):
    """Mean block length of each tree over fresh coin draws."""
    from ..coins import RandomCoins
    from ..sim.tree_replay import pack_trees, replay_blocks, replay_uniforms
    from ..trees._registry import get_tree_verifier

    if verifier in _KERNEL:
        rows_p = [np.array([target(t.path(j)) for j in range(t.size)]) for t in trees]
        rows_q = [np.array([draft(t.path(j)) for j in range(t.size)]) for t in trees]
        batch = pack_trees(trees, rows_p, rows_q)
        u = rng.random((len(trees), trials, replay_uniforms(verifier, batch)))
        return replay_blocks(verifier, batch, u)[1].mean(axis=1)
    fn = get_tree_verifier(verifier).function
    coins = RandomCoins(rng)
    return np.array([np.mean([len(fn(target, draft, t, coins)) for _ in range(ref_trials)])
                     for t in trees])  # fmt: skip


def _ci(x, low=-np.inf, high=np.inf):
    """Mean and 95% Student-t interval over independent per-tree means, cut to [low, high].

    ``[low, high]`` is the known range of the mean (for tau: ``[1, D + 1]``); the
    cut interval covers the mean whenever the t-interval does, and holds no
    impossible value, as the t-interval of a few widely spread values can.  NaN
    ends (one value: no variance estimate) stay NaN.
    """
    from ..sim._stats import mean_interval

    m, lo, hi = mean_interval(x, 0.95)
    return m, float(np.clip(lo, low, high)), float(np.clip(hi, low, high))


def _tau_rows(means, tau_max):
    """Rows of ``tau.csv``: per (budget, drafter, verifier), tau in [1, tau_max] with its interval.

    ``means`` maps each key to its per-tree mean block lengths, ``tau_max`` to
    ``D + 1`` (:func:`_drafters`).
    """
    rows = []
    for (budget, name, v), m in means.items():
        top = tau_max[budget, name, v]
        tau, lo, hi = _ci(m, 1.0, top)
        rows.append({"budget": budget, "drafter": name, "verifier": v, "trees": len(m),
                     "tau": tau, "ci_low": lo, "ci_high": hi, "tau_max": top})  # fmt: skip
    return rows


def _diff_ci(a, b, paired):
    """Difference of means, 95% interval: paired t, or Welch's t for different trees."""
    from scipy import stats

    a, b = np.asarray(a, float), np.asarray(b, float)
    if paired:
        if a.shape != b.shape:
            raise ValueError(f"paired samples must have equal shapes; got {a.shape} and {b.shape}")
        return _ci(a - b)
    d = float(a.mean() - b.mean())
    if a.size < 2 or b.size < 2:
        return d, float("nan"), float("nan")
    if a.var() + b.var() == 0:  # no spread: the difference is exact (scipy's t would be nan)
        return d, d, d
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    return d, float(ci.low), float(ci.high)


# (claim, budget-independent pair A, pair B, paired, source)
_CLAIMS = [
    ("block > token-level (chains)", ("chain", "block"), ("chain", "token"), True,
     "Sun et al. 2403.10444"),
    ("traversal = block on chains", ("chain", "traversal"), ("chain", "block"), True,
     "Weng et al. 2505.12398 (equal law)"),
    ("traversal > token-level per node (RSD-C)", ("rsd_c", "traversal"), ("rsd_c", "rrs_wor"),
     True, "Weng et al. 2505.12398"),
    ("traversal > token-level per node (EAGLE tree)", ("eagle", "traversal"),
     ("eagle", "rrs_wor"), True, "Weng et al. 2505.12398"),
    ("traversal > token-level per node (Sequoia tree)", ("sequoia", "traversal"),
     ("sequoia", "rrs_wor"), True, "Weng et al. 2505.12398"),
    ("SpecTr K-SEQ > SpecInfer RRS (same i.i.d. trees)", ("spectr", "kseq"), ("spectr", "rrs"),
     True, "Sun et al. 2310.15141; Thomas et al."),
    ("RRS > NSS (same i.i.d. trees)", ("spectr", "rrs"), ("spectr", "nss"), True,
     "Miao et al. 2305.09781; Thomas et al."),
    ("trees > chains: RSD-C RRSw > chain token-level", ("rsd_c", "rrs_wor"), ("chain", "token"),
     False, "Jeon et al. 2402.14160"),
    ("trees > chains: Sequoia > chain token-level", ("sequoia", "rrs_wor"), ("chain", "token"),
     False, "Chen et al. 2402.12374"),
    ("w/o replacement > i.i.d.: RSD-C RRSw > SpecTr RRS", ("rsd_c", "rrs_wor"),
     ("spectr", "rrs"), False, "Jeon et al. 2402.14160"),
    ("Sequoia tree > RSD-S (RRSw)", ("sequoia", "rrs_wor"), ("rsd_s", "rrs_wor"), False,
     "Chen et al. 2402.12374"),
]  # fmt: skip


def _verdict(claim, lo, hi):
    """The verdict on ``claim`` (A above B, or A = B for "traversal = block") from the 95%
    interval ``[lo, hi]`` of the difference A - B."""
    if claim.startswith("traversal = block"):
        return "consistent" if lo <= 0 <= hi else "differs"
    return "holds" if lo > 0 else ("reversed" if hi < 0 else "not resolved")


def _plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = sorted({r["budget"] for r in rows})
    fig, axes = plt.subplots(1, len(budgets), figsize=(7 * len(budgets), 4.5), squeeze=False)
    for ax, b in zip(axes[0], budgets, strict=True):
        sub = [r for r in rows if r["budget"] == b]
        labels = [f"{r['drafter']}\n{r['verifier']}" for r in sub]
        tau = np.array([r["tau"] for r in sub])
        err = np.array([[r["tau"] - r["ci_low"], r["ci_high"] - r["tau"]] for r in sub]).T
        ax.bar(range(len(sub)), tau, yerr=err, capsize=3, color="tab:blue")
        ax.set_xticks(range(len(sub)), labels, rotation=70, fontsize=7)
        ax.set_ylabel("block efficiency τ (tokens per target call)")
        ax.set_title(f"{b} drafted tokens")
        ax.axhline(1.0, color="k", lw=0.5)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)


@dataclass(frozen=True)
class TreesSettings:
    """What :func:`run_trees` measures.

    Attributes
    ----------
    draft : str
        The draft specification ('exit:L' or 'adapter:L').
    temperature : float
        Temperature of the target and the draft, >= 0.
    prompts : int
        Number of prompt positions (the first prompts of the built-in set).
    offset : int
        Target-sampled tokens before the root of each position.
    budgets : tuple of int
        Node budgets (drafted tokens, root excluded), among 8 and 16.
    trees : int
        Trees per drafter and position.
    trials : int
        Coin draws per tree for the numba kernels.
    ref_trials : int
        Coin draws per tree for the reference verifiers.
    seed : int
        Seed of the positions, the trees and the coins.
    """

    draft: str = "exit:25"
    temperature: float = 1.0
    prompts: int = 6
    offset: int = 4
    budgets: tuple[int, ...] = (8, 16)
    trees: int = 6
    trials: int = 2000
    ref_trials: int = 100
    seed: int = 0

    def __post_init__(self):
        from .._validate import check_positive_int

        for name in ("prompts", "trees", "trials", "ref_trials"):
            check_positive_int(getattr(self, name), name)
        for name in ("offset", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidParameterError(f"{name} must be an integer >= 0; got {value!r}")
        if (
            isinstance(self.temperature, bool)
            or not isinstance(self.temperature, int | float)
            or not 0 <= self.temperature < np.inf
        ):
            raise InvalidParameterError(
                f"temperature must be a finite number >= 0; got {self.temperature!r}"
            )
        budgets = tuple(self.budgets)
        if not budgets or any(b not in EAGLE_SHAPES for b in budgets):
            raise InvalidParameterError(
                f"budgets must be among {tuple(EAGLE_SHAPES)} (the EAGLE and RSD-C shapes); "
                f"got {self.budgets!r}"
            )
        object.__setattr__(self, "budgets", budgets)

    @classmethod
    def quick(cls, **changes) -> TreesSettings:
        """Smoke settings: 2 positions, budget 8, 2 trees each, 40 reference draws.

        >>> TreesSettings.quick(seed=3).prompts, TreesSettings.quick(seed=3).seed
        (2, 3)
        """
        return cls(**{"prompts": 2, "budgets": (8,), "trees": 2, "ref_trials": 40, **changes})


def run_trees(loaded, settings=None, out="trees_report"):
    """Measure every drafter and verifier, test the papers' orderings, write tables and a figure.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
        The target and its early-exit drafts (SmolLM2-135M-Instruct).
    settings : TreesSettings, optional
        Default ``TreesSettings()`` (about 20 minutes on 2 cores).
    out : str or path-like
        Output folder (created): ``tau.csv``, ``orderings.csv``, ``tau.png``.

    Returns
    -------
    rows : list of dict
        Per budget, drafter and verifier: trees, tau with its 95% interval cut
        to tau's range ``[1, tau_max]``, and ``tau_max`` (the deepest tree the
        drafter can draw, plus 1).
    order : list of dict
        Per budget and claim: the difference A - B, its 95% interval and the verdict.
    """
    import torch

    from .._files import atomic_path, write_csv
    from ..coins import RandomCoins
    from ..lm import PROMPTS
    from ..solvers.sequoia import sequoia_tree
    from ..trees.lm import LMTreeModels, chat_context

    s = settings or TreesSettings()
    if s.prompts > len(PROMPTS):
        raise InvalidParameterError(
            f"prompts must be at most {len(PROMPTS)} (the built-in prompt set); got {s.prompts}"
        )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(s.seed)
    rng = np.random.default_rng(s.seed)
    t0 = time.perf_counter()
    positions = []
    for pid in range(s.prompts):
        lm = LMTreeModels(loaded, chat_context(loaded, PROMPTS[pid][1]), s.draft,
                          temperature=s.temperature)  # fmt: skip
        path = ()
        coins = RandomCoins(rng)
        for _ in range(s.offset):
            path = (*path, coins.categorical(lm.target(path)))
        positions.append((lm, path))
    _log.info(f"{len(positions)} positions ready in {time.perf_counter() - t0:.0f} s")
    roots = [(lm.target(path), lm.draft(path)) for lm, path in positions]
    acc = _rank_acceptance(roots, 8, 300, rng)
    _log.info(f"rank acceptance (RRSw, ranks 1..8): {np.round(acc, 4).tolist()}")
    means: dict = {}
    tau_max: dict = {}
    for budget in s.budgets:
        shape = sequoia_tree(acc, budget + 1).parents
        _log.info(f"budget {budget}: Sequoia tree {shape}")
        for name, (drafter, verifiers, depth) in _drafters(budget, shape).items():
            for lm, prefix in positions:

                def target(x, lm=lm, prefix=prefix):
                    return lm.target(prefix + tuple(x))

                def draft(x, lm=lm, prefix=prefix):
                    return lm.draft(prefix + tuple(x))

                coins = RandomCoins(rng)
                trees = [drafter(draft, coins=coins) for _ in range(s.trees)]
                for v in verifiers:
                    m = _tree_means(v, trees, target, draft, s.trials, s.ref_trials, rng)
                    means.setdefault((budget, name, v), []).extend(m.tolist())
                    tau_max[budget, name, v] = depth + 1
            _log.info(f"  {name:9s} done ({time.perf_counter() - t0:.0f} s, "
                      f"{sum(lm.forwards for lm, _ in positions)} forwards)")  # fmt: skip
    rows = _tau_rows(means, tau_max)
    order = []
    for budget in s.budgets:
        for claim, a, b, paired, source in _CLAIMS:
            ma, mb = means.get((budget, *a)), means.get((budget, *b))
            if ma is None or mb is None:
                continue
            d, lo, hi = _diff_ci(ma, mb, paired)
            verdict = _verdict(claim, lo, hi)
            order.append({"budget": budget, "claim": claim, "a": "/".join(a), "b": "/".join(b),
                          "paired": paired, "diff": d, "ci_low": lo, "ci_high": hi,
                          "verdict": verdict, "source": source})  # fmt: skip
    write_csv(rows, out / "tau.csv", list(rows[0]))
    if order:
        write_csv(order, out / "orderings.csv", list(order[0]))
    with atomic_path(out / "tau.png") as tmp:
        _plot(rows, tmp)
    return rows, order


def summary_lines(rows, order) -> list[str]:
    """The tables of :func:`run_trees` as text: tau per method, then the orderings."""
    lines = [f"{'budget':>6} {'drafter':>9} {'verifier':>9} {'trees':>5} {'tau_max':>7}  "
             "tau [95% CI within 1..tau_max]"]  # fmt: skip
    for r in rows:
        lines.append(f"{r['budget']:6d} {r['drafter']:>9} {r['verifier']:>9} {r['trees']:5d} "
                     f"{r['tau_max']:7d}  {r['tau']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
                     )  # fmt: skip
    lines += [
        "(t-intervals over trees, cut to tau's range [1, tau_max]: every block holds the",
        " bonus or correction token and at most D drafts, D the drafter's deepest tree)",
    ]
    lines += ["", "Orderings claimed by the papers (difference A - B, 95% CI):"]
    for r in order:
        lines.append(f"  {r['budget']:2d}  {r['claim']:52s} {r['diff']:+.3f} "
                     f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]  {r['verdict']}")  # fmt: skip
    return lines
