"""Simulation: numba kernels of every verifier, and statistical losslessness tests.

- :func:`simulate`: sampling form of a verifier, batched over rows and trials
  (numba kernels replay-tested against the reference verifiers).
- :func:`check_lossless`: statistical test of losslessness at any vocabulary size.
- :mod:`.bugzoo`: biased verifiers reproducing real bug classes.
- :func:`sweep`: grids over sharded traces on Dask, cached and restartable.
- :mod:`.draft_length`: draft-length policies (fixed, heuristic, oracle threshold,
  acceptance head) on per-position acceptances of real traces, exact expectations.
"""

from .check import DEFAULT_TRIALS, LosslessReport, check_lossless, detectable_tv
from .draft_length import (
    Fixed,
    Heuristic,
    PolicyResult,
    Threshold,
    compare_policies,
    oracle_threshold,
    simulate_policy,
)
from .simulate import SimulationResult, simulate
from .sweeps import SweepGrid, sweep, sweep_bounds
from .tree_replay import TreeBatch, pack_trees, reference_blocks, replay_blocks, replay_uniforms

__all__ = [
    "DEFAULT_TRIALS",
    "Fixed",
    "Heuristic",
    "LosslessReport",
    "PolicyResult",
    "SimulationResult",
    "SweepGrid",
    "Threshold",
    "TreeBatch",
    "check_lossless",
    "compare_policies",
    "detectable_tv",
    "oracle_threshold",
    "pack_trees",
    "reference_blocks",
    "replay_blocks",
    "replay_uniforms",
    "simulate",
    "simulate_policy",
    "sweep",
    "sweep_bounds",
]
