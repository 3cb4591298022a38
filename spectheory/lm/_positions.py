"""Helpers shared by the per-position analyses of a trace: temperatures and prompt slices."""

from __future__ import annotations

import numbers

import numpy as np

from .._errors import InvalidParameterError

__all__ = ["check_temperature", "prompt_slices"]


def check_temperature(temperature, name="temperature"):
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise InvalidParameterError(f"{name} must be a real number >= 0; got {temperature!r}")
    if not np.isfinite(temperature) or temperature < 0:
        raise InvalidParameterError(f"{name} must be finite and >= 0; got {temperature!r}")
    return float(temperature)


def prompt_slices(trace):
    """(prompt id, slice of positions) for each prompt of the trace, in trace order."""
    out = []
    pids = trace.prompt_ids
    start = 0
    n = trace.num_positions
    while start < n:
        stop = start
        while stop < n and pids[stop] == pids[start]:
            stop += 1
        out.append((int(pids[start]), slice(start, stop)))
        start = stop
    return out
