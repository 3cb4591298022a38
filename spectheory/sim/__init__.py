"""Simulation: statistical losslessness tests (and, later, numba replay kernels)."""

from .check import DEFAULT_TRIALS, LosslessReport, check_lossless, detectable_tv

__all__ = ["DEFAULT_TRIALS", "LosslessReport", "check_lossless", "detectable_tv"]
