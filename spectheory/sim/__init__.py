"""Simulation: numba kernels of every verifier, and statistical losslessness tests.

- :func:`simulate`: sampling form of a verifier, batched over rows and trials
  (numba kernels replay-tested against the reference verifiers).
- :func:`check_lossless`: statistical test of losslessness at any vocabulary size.
- :mod:`.bugzoo`: biased verifiers reproducing real bug classes.
"""

from .check import DEFAULT_TRIALS, LosslessReport, check_lossless, detectable_tv
from .simulate import SimulationResult, simulate

__all__ = [
    "DEFAULT_TRIALS",
    "LosslessReport",
    "SimulationResult",
    "check_lossless",
    "detectable_tv",
    "simulate",
]
