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
Verifier, verifier, register_verifier, as_verifier
    A user's own verifier, written once (coins protocol, or a black box for
    the statistical paths), usable wherever the built-in ones are;
    :mod:`spectheory.testing` checks it.
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
    VerifierError,
)
from ._version import __version__

# The public names below are imported on first use (PEP 562), so that
# ``import spectheory`` (and ``spectheory --help``) does not load numba, scipy
# and every kernel.  To export a name, add it here and to __all__.
_LAZY = {
    ".coins": ("RandomCoins", "ReplayCoins", "enumerate_outcomes"),
    ".distributions": ("process_logits", "process_pair", "softmax"),
    ".drafting": ("SAMPLINGS", "draft_set_law", "draft_set_probability", "sample_drafts"),
    ".exact": ("acceptance", "output_distribution"),
    ".sim": (
        "LosslessReport", "SimulationResult", "check_lossless", "check_lossless_from_samples",
        "simulate",
    ),
    ".solvers.ot_dual": ("METHODS", "BoundResult", "bound", "solve_bound"),
    ".solvers.scaling": ("fit_log_linear",),
    ".solvers.specdecpp": ("SpecDecPPResult", "solve_specdecpp"),
    ".solvers.speedup": ("OptimalGammaResult", "optimal_gamma"),
    ".verifiers": (
        "REGISTRY", "Verifier", "as_verifier", "get_verifier", "register_verifier",
        "unregister_verifier", "verifier", "verify",
    ),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name):
    import importlib
    import importlib.util

    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}"):
        value = importlib.import_module(f"{__name__}.{name}")  # a subpackage: spectheory.sim
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__all__})

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
    "VerifierError",
    "__version__",
    "acceptance",
    "as_verifier",
    "bound",
    "check_lossless",
    "check_lossless_from_samples",
    "draft_set_law",
    "draft_set_probability",
    "enumerate_outcomes",
    "fit_log_linear",
    "get_verifier",
    "optimal_gamma",
    "output_distribution",
    "process_logits",
    "process_pair",
    "register_verifier",
    "sample_drafts",
    "simulate",
    "softmax",
    "solve_bound",
    "solve_specdecpp",
    "unregister_verifier",
    "verifier",
    "verify",
]
