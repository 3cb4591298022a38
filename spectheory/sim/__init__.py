"""Simulation: numba kernels of every verifier, and statistical losslessness tests.

- :func:`simulate`: sampling form of a verifier, batched over rows and trials
  (numba kernels replay-tested against the reference verifiers).
- :func:`check_lossless`: statistical test of losslessness at any vocabulary size.
- :func:`check_lossless_from_samples`: the same question for an engine's logged
  samples (:mod:`.audit`, log format :mod:`.samplelog`); :func:`acceptance_table`.
- :mod:`.bugzoo`: biased verifiers reproducing real bug classes.
- :func:`sweep`: grids over sharded traces on Dask, cached and restartable.
- :mod:`.draft_length`: draft-length policies (fixed, heuristic, oracle threshold,
  acceptance head) on per-position acceptances of real traces, exact expectations.
"""

from .audit import check_lossless_from_samples
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
from .log_metrics import acceptance_table
from .samplelog import SampleLog, load_log, save_log
from .simulate import SimulationResult, simulate
from .sweeps import SweepGrid, sweep, sweep_bounds
from .tree_replay import TreeBatch, pack_trees, reference_blocks, replay_blocks, replay_uniforms

__all__ = [
    "DEFAULT_TRIALS",
    "Fixed",
    "Heuristic",
    "LosslessReport",
    "PolicyResult",
    "SampleLog",
    "SimulationResult",
    "SweepGrid",
    "Threshold",
    "TreeBatch",
    "acceptance_table",
    "check_lossless",
    "check_lossless_from_samples",
    "compare_policies",
    "detectable_tv",
    "load_log",
    "oracle_threshold",
    "pack_trees",
    "reference_blocks",
    "replay_blocks",
    "replay_uniforms",
    "save_log",
    "simulate",
    "simulate_policy",
    "sweep",
    "sweep_bounds",
]
