r"""Per-position acceptance along real continuations (and, re-exported, capacity and cost).

For a target :math:`p_t` and a draft :math:`q_t` at position :math:`t` of a
recorded continuation, both processed with the same temperature (docs/theory.md
section 0, processing rule), the single-draft acceptance probability is

.. math::

    \beta_t = \sum_x \min\big(p_t(x), q_t(x)\big) = 1 - \mathrm{TV}(p_t, q_t)

(Leviathan et al. [1]_, Theorem 3.5).  Along a continuation, :math:`\beta_t`
is the conditional acceptance of the token drafted at position :math:`t`
given that the ones before it were accepted, when the drafted context is the
recorded one; it drives the renewal simulations of
:mod:`spectheory.sim.draft_length`.

This module holds :func:`acceptance_profile` (:math:`\beta_t` from a trace's
stored logits).  The other jobs live in their own modules and are re-exported
here under their old names: draft capacity and its law in
:mod:`spectheory.lm.capacity` (:func:`capacity_profile`, :func:`capacity_law`,
:func:`teacher_forced_hidden`), draft cost in :mod:`spectheory.lm.cost`
(:func:`measure_cost_ratio`, :func:`draft_parameter_count`).

References
----------
.. [1] Leviathan, Kalman, Matias. "Fast Inference from Transformers via
   Speculative Decoding". ICML 2023, arXiv:2211.17192.
.. [2] Huang, Guo, Wang. "SpecDec++: Boosting Speculative Decoding via
   Adaptive Candidate Lengths". COLM 2025, arXiv:2405.19715.
.. [3] Elhoushi et al. "LayerSkip: Enabling Early Exit Inference and
   Self-Speculative Decoding". ACL 2024, arXiv:2404.16710.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._positions import check_temperature as _check_temperature
from ._positions import prompt_slices as _prompt_slices
from .capacity import (
    CapacityLaw,
    CapacityProfile,
    _torch_probs,
    capacity_law,
    capacity_profile,
    teacher_forced_hidden,
)
from .cost import CostRatio, draft_parameter_count, measure_cost_ratio
from .drafts import parse_draft
from .layout import shallow_model as _shallow_draft

__all__ = [
    "AcceptanceProfile",
    "CapacityLaw",
    "CapacityProfile",
    "CostRatio",
    "acceptance_profile",
    "capacity_law",
    "capacity_profile",
    "draft_parameter_count",
    "measure_cost_ratio",
    "teacher_forced_hidden",
]
# Private names kept for callers that imported them from here.
_REEXPORTED_PRIVATE = (_check_temperature, _prompt_slices, _shallow_draft, _torch_probs)


@dataclass(frozen=True)
class AcceptanceProfile:
    r"""Per-position acceptance :math:`\beta_t` of one draft along a trace.

    Attributes
    ----------
    beta : tuple of ndarray, float64
        One array per prompt, in the trace's order; ``beta[j][t]`` is
        :math:`\sum_x \min(p_t(x), q_t(x))` at step ``t`` of prompt ``j``'s
        continuation.
    prompt_ids : tuple of int
        The prompt id of each array.
    draft : str
    temperature : float
    """

    beta: tuple
    prompt_ids: tuple
    draft: str
    temperature: float

    @property
    def values(self) -> np.ndarray:
        """All :math:`\\beta_t` concatenated in trace order, float64 (N,)."""
        return np.concatenate(self.beta) if self.beta else np.zeros(0)

    @property
    def mean(self) -> float:
        """Mean acceptance over positions, :math:`\\alpha = E[\\beta]` (Leviathan Cor. 3.6)."""
        return float(self.values.mean())


def _beta_rows(p, q):
    return np.minimum(p, q).sum(axis=-1)


def acceptance_profile(trace, draft: str, temperature: float = 1.0) -> AcceptanceProfile:
    r"""Per-position acceptance of ``draft`` along the trace's continuations.

    .. math::

        \beta_t = \sum_x \min\big(p_t(x), q_t(x)\big),\qquad
        p_t = \mathrm{proc}_T(z^{\mathrm{target}}_t),\;
        q_t = \mathrm{proc}_T(z^{\mathrm{draft}}_t)

    with :math:`\mathrm{proc}_T` = :func:`spectheory.process_logits` at
    ``temperature`` (the same for both models).  The stored logits are
    half precision; they are processed in float64.

    Parameters
    ----------
    trace : spectheory.lm.Trace
    draft : str
        A draft of the trace: ``"exit:L"`` (stored) or ``"ngram:K"`` (rebuilt).
    temperature : float >= 0
        0 gives greedy (one-hot) distributions: :math:`\beta_t \in \{0, 1\}`.

    Returns
    -------
    AcceptanceProfile
    """
    from ..distributions import process_logits

    temperature = _check_temperature(temperature)
    parse_draft(draft)
    betas, pids = [], []
    for pid, sl in _prompt_slices(trace):
        rows = np.arange(sl.start, sl.stop)
        p = process_logits(trace.target_logits[rows].astype(np.float64), temperature)
        q = process_logits(trace.draft_logits(draft, rows), temperature)
        betas.append(_beta_rows(p, q))
        pids.append(pid)
    return AcceptanceProfile(
        beta=tuple(betas), prompt_ids=tuple(pids), draft=draft, temperature=temperature
    )
