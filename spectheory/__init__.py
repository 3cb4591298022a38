"""spectheory: the theory of speculative decoding, exact and certified.

Public API
----------
bound, solve_bound, BoundResult
    Optimal multi-draft acceptance through the dual of optimal transport.
process_logits, process_pair, softmax
    Logits to processed distributions (temperature, top-k, top-p).
sample_drafts, draft_set_law, draft_set_probability, SAMPLINGS
    Draft laws.
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

__version__ = "0.1.0"

__all__ = [
    "METHODS",
    "SAMPLINGS",
    "BoundResult",
    "InstanceTooLargeError",
    "InvalidDistributionError",
    "InvalidParameterError",
    "MissingDependencyError",
    "ShapeMismatchError",
    "SolverError",
    "SpecTheoryError",
    "TraceError",
    "__version__",
    "bound",
    "draft_set_law",
    "draft_set_probability",
    "process_logits",
    "process_pair",
    "sample_drafts",
    "softmax",
    "solve_bound",
]
