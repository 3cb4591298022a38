"""Choosing between the plain torch path and the fused Triton kernels (private).

Triton kernels run on CUDA tensors, or on CPU tensors when Triton's
interpreter is on (``TRITON_INTERPRET=1`` in the environment *before* triton
is first imported: triton decorates its own library functions at import).
The interpreter is a correctness tool (numpy underneath), never a speed
measurement.
"""

from __future__ import annotations

import functools
import os

from .._errors import InvalidParameterError, MissingDependencyError
from .._validate import check_choice

__all__ = ["BACKENDS", "jit", "resolve_backend", "triton_available"]

#: Values of every ``backend=`` argument.
BACKENDS = ("auto", "torch", "triton")


def triton_available() -> bool:
    """Whether triton can be imported."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def resolve_backend(backend, device):
    """``"torch"`` or ``"triton"`` for tensors on ``device``.

    ``"auto"`` is the plain torch path for now: the Triton kernels are verified
    token for token under Triton's interpreter only, not yet compiled on a GPU
    (``tests/torch/test_triton.py``, marked ``gpu``, is that check), so they
    are opt-in with ``backend="triton"`` until a GPU run has passed.
    ``"triton"`` on CPU tensors needs the interpreter.
    """
    check_choice(backend, "backend", BACKENDS)
    if backend == "auto":
        return "torch"
    if backend == "triton":
        if not triton_available():
            raise MissingDependencyError(
                "backend='triton' needs triton: pip install 'spectheory[torch]' "
                "(or pip install triton)"
            )
        if device.type != "cuda" and not _interpreting():
            raise InvalidParameterError(
                f"backend='triton' needs CUDA tensors (got device {device}), or Triton's "
                "interpreter on the CPU: set TRITON_INTERPRET=1 before triton is imported"
            )
    return backend


@functools.cache
def _jit_cached(fn, interpret):
    import triton

    return triton.jit(fn)


def jit(fn):
    """``triton.jit(fn)``, decorated at first use (and again if the interpreter flag changes).

    Decorating lazily lets a process that set ``TRITON_INTERPRET=1`` after
    importing this package still get interpreted kernels for its own code.
    """
    return _jit_cached(fn, _interpreting())
