"""Exact solvers.

- :mod:`.ot_dual`: the optimal multi-draft acceptance (:func:`bound`) and its
  independent oracles (:mod:`.lp`, :mod:`.maxflow`, :mod:`.enumeration`).
- :mod:`.speedup`: tokens per round, walltime speedup, the optimal draft length.
- :mod:`.specdecpp`: the SpecDec++ decision process, solved exactly.
- :mod:`.scaling`: log-linear scaling-law fits and published data.
- :mod:`.sequoia`: Sequoia's optimal-tree dynamic program.
- :mod:`.roofline`: the roofline cost of a batched forward; the optimal number of
  i.i.d. drafts per batch size.

Every result derives from :class:`SolverResult`: ``method``, ``status`` (one
of :data:`STATUSES`), ``message`` and the call's scalar ``inputs``.
"""

from . import scaling, specdecpp, speedup
from ._result import STATUSES, SolverResult
from .ot_dual import METHODS, BoundResult, bound, greedy_value, ratio_order, solve_bound
from .scaling import LogLinearFit, fit_log_linear, leviathan_capacity_data, spec_bench_tau
from .sequoia import SequoiaResult, sequoia_tree, sequoia_values, tree_value
from .specdecpp import (
    SPECDECPP_METHODS,
    SpecDecPPResult,
    evaluate_threshold_policy,
    solve_specdecpp,
)
from .speedup import (
    GAMMA_METHODS,
    OptimalGammaResult,
    continuous_optimal_gamma,
    optimal_gamma,
    optimal_gamma_positional,
    oracle_speedup,
    speedup_positional,
    tokens_per_round,
    tokens_per_round_positional,
)

__all__ = [
    "GAMMA_METHODS",
    "METHODS",
    "SPECDECPP_METHODS",
    "STATUSES",
    "BoundResult",
    "LogLinearFit",
    "OptimalGammaResult",
    "SequoiaResult",
    "SolverResult",
    "SpecDecPPResult",
    "bound",
    "continuous_optimal_gamma",
    "evaluate_threshold_policy",
    "fit_log_linear",
    "greedy_value",
    "leviathan_capacity_data",
    "optimal_gamma",
    "optimal_gamma_positional",
    "oracle_speedup",
    "ratio_order",
    "scaling",
    "sequoia_tree",
    "sequoia_values",
    "solve_bound",
    "solve_specdecpp",
    "spec_bench_tau",
    "specdecpp",
    "speedup",
    "speedup_positional",
    "tokens_per_round",
    "tokens_per_round_positional",
    "tree_value",
]
