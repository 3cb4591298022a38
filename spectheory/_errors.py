"""The one error hierarchy of spectheory.

Every error raised on bad input derives from :class:`SpecTheoryError` and
from the matching built-in class (``ValueError`` for bad values and shapes,
``RuntimeError`` for failures of a solver), so that ``except ValueError``
in user code keeps working.  Messages name the argument, the row and the
offending value.
"""

from __future__ import annotations

__all__ = [
    "InstanceTooLargeError",
    "InvalidDistributionError",
    "InvalidParameterError",
    "ShapeMismatchError",
    "SolverError",
    "SpecTheoryError",
    "VerifierError",
]


class SpecTheoryError(Exception):
    """Base class of every error raised by spectheory."""


class InvalidDistributionError(SpecTheoryError, ValueError):
    """A probability vector is not a distribution (NaN, inf, negative, bad sum, dtype)."""


class ShapeMismatchError(SpecTheoryError, ValueError):
    """Arrays that must agree in shape (vocabulary or batch) do not."""


class InvalidParameterError(SpecTheoryError, ValueError):
    """A scalar parameter (``n``, ``sampling``, ``method``, ``temperature``...) is invalid."""


class InstanceTooLargeError(SpecTheoryError, ValueError):
    """An exact oracle (LP, max-flow, enumeration) refuses an instance beyond its limit."""


class SolverError(SpecTheoryError, RuntimeError):
    """An external solver failed or returned an inconsistent answer."""


class VerifierError(SpecTheoryError, RuntimeError):
    """A verifier under test raised an exception of its own (chained as ``__cause__``), or
    is not deterministic given its coins (:func:`spectheory.coins.enumerate_outcomes`)."""


class TraceError(SpecTheoryError, ValueError):
    """A trace file is missing, truncated, corrupted (checksum mismatch) or of another format."""


class MissingDependencyError(SpecTheoryError, ImportError):
    """An optional dependency (extra) is not installed; the message gives the install command."""
