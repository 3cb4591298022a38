"""The fields every solver result shares: method, status, message and the inputs.

Each solver returns its own frozen dataclass (:class:`~spectheory.solvers.BoundResult`,
:class:`~spectheory.solvers.SequoiaResult`, ...), and each one derives from
:class:`SolverResult`, so that every result answers the same four questions:
which algorithm ran (``method``), how it ended (``status``, from the small
vocabulary :data:`STATUSES`), what it says about it (``message``) and what it
was asked (``inputs``: the call's scalar arguments, resolved; array arguments
such as distributions and data are left out).  Calling the solver again with
its arrays and ``**result.inputs`` (and ``method=result.method`` where it takes
one) repeats the computation.

The shared fields are keyword-only (``kw_only=True``), so each subclass keeps
its own positional fields in their order.

A solver that cannot produce an answer raises (``SolverError``,
``InvalidParameterError``, ``InstanceTooLargeError``); a status describes an
answer that exists.  Two statuses say that the answer is not the optimum:
``"max_iter"`` (an iterative method stopped before meeting its tolerance)
and ``"capped"`` (the optimum lies beyond the search range, which returns its
end).  :attr:`SolverResult.success` is False for them.

This follows the idea of SciPy's ``OptimizeResult`` (``success``, ``status``,
``message``) and CVXPY's ``Problem.status`` (a few named outcomes), with named
statuses instead of integer codes, and typed fields instead of a dict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import numpy as np

from .._errors import InvalidParameterError

__all__ = ["STATUSES", "SUCCESS_STATUSES", "SolverResult"]

#: Every status a solver result may carry, with its meaning.
STATUSES = {
    "optimal": "the optimum of an optimisation problem, certified by the method "
    "(a dual certificate, HiGHS's optimality status, a complete search or dynamic program)",
    "exact": "an exact evaluation with nothing to optimise (expectations of a given policy)",
    "sampled": "a Monte Carlo estimate: exact up to the stated sampling error",
    "capped": "the objective still improves at the end of the search range: the answer "
    "is that end, not the optimum",
    "max_iter": "an iterative method reached its iteration limit before its tolerance",
}

#: Statuses whose answer is what the method promises.
SUCCESS_STATUSES = frozenset({"optimal", "exact", "sampled"})


@dataclass(frozen=True, kw_only=True)
class SolverResult:
    """Base of every solver result: ``method``, ``status``, ``message``, ``inputs``.

    Attributes
    ----------
    method : str
        The algorithm that ran (a value of the solver's ``method=`` where it
        has one).
    status : str
        How it ended, one of :data:`STATUSES`.
    message : str
        What the method guarantees, or why it stopped.
    inputs : dict
        The call's scalar arguments after resolution of defaults (``n``,
        ``sampling``, ``k_max``, ...); arrays are left out.

    Examples
    --------
    >>> from spectheory.solvers import sequoia_tree
    >>> r = sequoia_tree([0.8, 0.1], 3)
    >>> r.method, r.status, r.success, r.inputs
    ('sequoia_dp', 'optimal', True, {'budget': 3, 'max_levels': 3})
    """

    method: str
    status: str
    message: str = ""
    inputs: Mapping = field(default_factory=dict, repr=False, hash=False)

    def __post_init__(self):
        if not isinstance(self.method, str) or not self.method:
            raise InvalidParameterError(f"method must be a non-empty str; got {self.method!r}")
        if self.status not in STATUSES:
            raise InvalidParameterError(
                f"status must be one of {sorted(STATUSES)}; got {self.status!r}"
            )
        if not isinstance(self.message, str):
            raise InvalidParameterError(f"message must be a str; got {self.message!r}")
        if not isinstance(self.inputs, Mapping):
            raise InvalidParameterError(f"inputs must be a mapping; got {self.inputs!r}")
        # A copy: the caller's dict may change later; the result must not.
        object.__setattr__(self, "inputs", dict(self.inputs))

    @property
    def success(self) -> bool:
        """True when the status is one of :data:`SUCCESS_STATUSES`."""
        return self.status in SUCCESS_STATUSES

    def summary(self) -> str:
        """A few lines: status, method, message, inputs, then the result's own fields.

        Arrays are shown by shape and dtype, long sequences by length.

        Examples
        --------
        >>> from spectheory.solvers import sequoia_tree
        >>> print(sequoia_tree([0.8, 0.1], 3).summary())
        SequoiaResult: optimal (method 'sequoia_dp')
          dynamic program over (nodes, levels, root children); tree read back
          inputs: budget=3, max_levels=3
          parents: (-1, 0, 1)
          value: 2.44
          budget: 3
          max_levels: 3
        """
        head = f"{type(self).__name__}: {self.status} (method {self.method!r})"
        lines = [head]
        if self.message:
            lines.append(f"  {self.message}")
        if self.inputs:
            pairs = (f"{k}={_brief(v)}" for k, v in self.inputs.items())
            lines.append("  inputs: " + ", ".join(pairs))
        shared = {f.name for f in fields(SolverResult)}
        for f in fields(self):
            if f.name not in shared:
                lines.append(f"  {f.name}: {_brief(getattr(self, f.name))}")
        return "\n".join(lines)


def _brief(value) -> str:
    """A short text for one field: arrays by shape, floats to 12 significant digits."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return _brief(value.item())
        return f"array{value.shape} {value.dtype}"
    if isinstance(value, (float, np.floating)):
        x = float(value)
        return repr(x) if not math.isfinite(x) else f"{x:.12g}"
    if isinstance(value, (tuple, list)) and len(value) > 12:
        return f"{type(value).__name__} of {len(value)}"
    if isinstance(value, dict) and len(value) > 6:
        return f"dict of {len(value)}"
    return repr(value)
