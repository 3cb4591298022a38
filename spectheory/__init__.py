"""spectheory: the theory of speculative decoding, exact and certified.

Public API
----------
bound, solve_bound, BoundResult
    Optimal multi-draft acceptance through the dual of optimal transport.
process_logits, process_pair, softmax
    Logits to processed distributions (temperature, top-k, top-p).
sample_drafts, draft_set_law, draft_set_probability, SAMPLINGS
    Draft laws.
optimal_gamma, solve_specdecpp, fit_log_linear
    Draft length: Thm 3.8 and the marginal rule / Lambert W, the SpecDec++
    decision process, log-linear scaling fits (:mod:`spectheory.solvers`).
SpecTheoryError and subclasses
    The error hierarchy.
"""

from ._errors import (
    InstanceTooLargeError,
    InvalidDistributionError,
    InvalidParameterError,
    MissingDependencyError,
    ShapeMismatchError,
    SolverError,
    SpecTheoryError,
    TraceError,
)
from .distributions import process_logits, process_pair, softmax
from .drafting import SAMPLINGS, draft_set_law, draft_set_probability, sample_drafts
from .solvers.ot_dual import METHODS, BoundResult, bound, solve_bound
from .solvers.scaling import fit_log_linear
from .solvers.specdecpp import SpecDecPPResult, solve_specdecpp
from .solvers.speedup import OptimalGammaResult, optimal_gamma

__version__ = "0.1.0"

__all__ = [
    "METHODS",
    "SAMPLINGS",
    "BoundResult",
    "InstanceTooLargeError",
    "InvalidDistributionError",
    "InvalidParameterError",
    "MissingDependencyError",
    "OptimalGammaResult",
    "ShapeMismatchError",
    "SolverError",
    "SpecDecPPResult",
    "SpecTheoryError",
    "TraceError",
    "__version__",
    "bound",
    "draft_set_law",
    "draft_set_probability",
    "fit_log_linear",
    "optimal_gamma",
    "process_logits",
    "process_pair",
    "sample_drafts",
    "softmax",
    "solve_bound",
    "solve_specdecpp",
]
