"""Per-test hypothesis budgets as fractions of the active profile (tests/conftest.py).

Example counts come from the profiles only: a test never pins
``max_examples``.  A property that is slow per example declares the share of
the profile's budget it runs instead::

    @scaled(1 / 5)  # 12 examples under ci (60), 40 under dev, 400 under thorough
    @given(...)
    def test_slow_property(...): ...

so ``SPECTHEORY_HYPOTHESIS_PROFILE=thorough`` scales every test up together.
Every other setting (derandomisation, deadline, health checks) is the
profile's; extra keyword arguments override it for that test.
"""

from __future__ import annotations

from hypothesis import settings

__all__ = ["scaled"]


def scaled(fraction, **overrides):
    """``settings`` with ``max(1, round(fraction * profile's max_examples))`` examples.

    Parameters
    ----------
    fraction : float
        Share of the active profile's ``max_examples``, in (0, 1].
    **overrides
        Other hypothesis settings for this test (e.g. ``suppress_health_check``).

    Examples
    --------
    >>> from hypothesis import settings as s
    >>> scaled(0.5).max_examples == max(1, round(0.5 * s.default.max_examples))
    True
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1]; got {fraction!r}")
    return settings(
        max_examples=max(1, round(fraction * settings.default.max_examples)), **overrides
    )
