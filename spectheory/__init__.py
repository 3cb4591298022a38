"""spectheory: the theory of speculative decoding, exact and certified.

Public API
----------
bound, solve_bound, BoundResult
    Optimal multi-draft acceptance through the dual of optimal transport.
process_logits, process_pair, softmax
    Logits to processed distributions (temperature, top-k, top-p).
sample_drafts, draft_set_law, draft_set_probability, SAMPLINGS
    Draft laws.
acceptance, output_distribution, verify, REGISTRY, get_verifier
    Every published verifier, written once on the coins protocol
    (RandomCoins, ReplayCoins, enumerate_outcomes): exact laws and sampling.
check_lossless, LosslessReport
    Statistical losslessness test at any vocabulary size.
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
from .coins import RandomCoins, ReplayCoins, enumerate_outcomes
from .distributions import process_logits, process_pair, softmax
from .drafting import SAMPLINGS, draft_set_law, draft_set_probability, sample_drafts
from .exact import acceptance, output_distribution
from .sim import LosslessReport, SimulationResult, check_lossless, simulate
from .solvers.ot_dual import METHODS, BoundResult, bound, solve_bound
from .solvers.scaling import fit_log_linear
from .solvers.specdecpp import SpecDecPPResult, solve_specdecpp
from .solvers.speedup import OptimalGammaResult, optimal_gamma
from .verifiers import REGISTRY, Verifier, get_verifier, verify

from ._version import __version__

__all__ = [
    "METHODS",
    "REGISTRY",
    "SAMPLINGS",
    "BoundResult",
    "InstanceTooLargeError",
    "InvalidDistributionError",
    "InvalidParameterError",
    "LosslessReport",
    "MissingDependencyError",
    "OptimalGammaResult",
    "RandomCoins",
    "ReplayCoins",
    "ShapeMismatchError",
    "SimulationResult",
    "SolverError",
    "SpecDecPPResult",
    "SpecTheoryError",
    "TraceError",
    "Verifier",
    "__version__",
    "acceptance",
    "bound",
    "check_lossless",
    "draft_set_law",
    "draft_set_probability",
    "enumerate_outcomes",
    "fit_log_linear",
    "get_verifier",
    "optimal_gamma",
    "output_distribution",
    "process_logits",
    "process_pair",
    "sample_drafts",
    "simulate",
    "softmax",
    "solve_bound",
    "solve_specdecpp",
    "verify",
]
