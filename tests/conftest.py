"""Shared pytest configuration: hypothesis profiles.

Select a profile with the environment variable ``SPECTHEORY_HYPOTHESIS_PROFILE``:

``ci`` (default)
    Deterministic (derandomised), 60 examples per property, no deadline:
    every CI run tests the same instances.
``dev``
    Random, 200 examples.
``thorough``
    Random, 2,000 examples, for a long local run.

Example counts come from the profile only: no property test pins ``max_examples``
(the one fixed count measures what a strategy reaches, in tests/test_testing.py).  A
property that is slow per example runs a fixed share of the profile's budget
with ``@scaled(fraction)`` (tests/budget.py), so every profile scales it too.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=200, deadline=None, print_blob=True)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("SPECTHEORY_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def smol():
    """The real SmolLM2-135M-Instruct, loaded once per test session (~25 s)."""
    from spectheory.lm import load_model

    return load_model()
