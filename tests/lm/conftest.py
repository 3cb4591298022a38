"""Fixtures shared by the tests of :mod:`spectheory.lm`."""

import pytest


@pytest.fixture()
def tmp_cache(tmp_path, monkeypatch):
    """An empty cache folder for one test.

    ``$SPECTHEORY_CACHE`` is the variable the cache reads first, so setting it
    isolates the test even where a developer has either variable set.
    """
    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path))
    return tmp_path
