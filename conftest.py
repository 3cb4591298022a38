"""Markers ``torch`` and ``model``, applied from the source (tests/_markers.py).

This file sits at the repository root so that it covers the doctests of ``spectheory/`` as well
as ``tests/``.  ``pytest -m "not model and not torch"`` then neither collects nor imports any
module that needs torch or transformers, and refuses such an import from any selected test.
"""

from pathlib import Path

import pytest

from tests import _markers

_GUARD = None


def _deselected(config):
    return _markers.deselected(config.getoption("markexpr", "") or "")


def pytest_configure(config):
    global _GUARD
    off = _deselected(config)
    if off:
        _GUARD = _markers.ImportGuard(off)
        loaded = _GUARD.install()
        if loaded:  # imported before the guard (by a plugin): the guard cannot vouch for them
            config.issue_config_time_warning(
                pytest.PytestConfigWarning(f"already imported before collection: {loaded}"), 2
            )


def pytest_unconfigure(config):
    if _GUARD is not None:
        _GUARD.remove()


def pytest_ignore_collect(collection_path: Path, config):
    # Never import a module whose import alone needs a deselected library.
    if collection_path.suffix != ".py":
        return None
    markers = _markers.module_markers(collection_path)
    if markers and not _markers.selectable(config.getoption("markexpr", "") or "")(markers):
        return True
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # tryfirst: the markers must be on the items before -m deselects.
    for item in items:
        for name in sorted(_markers.item_markers(item)):
            item.add_marker(name)
