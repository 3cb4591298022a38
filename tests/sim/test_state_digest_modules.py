"""The sweep cache's key follows what a verifier reads through a module of the user's.

A verifier written as ``mylab.settings.THRESHOLD`` (or calling ``mylab.helpers.f``)
loads the module as a global, and a module was digested by its name only: after
``THRESHOLD`` changed, a sweep served the rows computed with the old value from
its cache, silently.  Each test builds the modules in ``tmp_path``.
"""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

from spectheory.lm import Trace
from spectheory.sim._state_digest import StateDigest
from spectheory.sim.replay import replay
from spectheory.sim.sweeps import SweepGrid, sweep


def _digest(obj):
    return StateDigest().digest(obj)  # a fresh instance: it memoises by id


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A package ``digest_lab`` with a settings module and a helper module, and a verifier
    module reading both through the package (modules removed again afterwards)."""
    pkg = tmp_path / "digest_lab"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import helpers, settings\n")
    (pkg / "settings.py").write_text("THRESHOLD = 0.0\nUNUSED = 1\n")
    (pkg / "helpers.py").write_text(textwrap.dedent('''
        def accept_probability(p, q, x):
            return min(1, p[x] / q[x])
    '''))
    (tmp_path / "digest_lab_verifier.py").write_text(textwrap.dedent('''
        import numpy as np

        import digest_lab


        def mine(p, q, drafts, coins, *, sampling="iid"):
            x = drafts[0]
            if p[x] > digest_lab.settings.THRESHOLD and coins.bernoulli(
                    digest_lab.helpers.accept_probability(p, q, x)):
                return x
            rest = np.maximum(p - q, 0 * p[0])
            return coins.categorical(rest / rest.sum())
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    import digest_lab
    import digest_lab_verifier

    yield digest_lab, digest_lab_verifier
    for name in ("digest_lab", "digest_lab.settings", "digest_lab.helpers",
                 "digest_lab_verifier"):
        sys.modules.pop(name, None)


def test_digest_follows_a_module_attribute_and_a_module_function(lab, monkeypatch):
    pkg, mod = lab
    before = _digest(mod.mine)
    assert _digest(mod.mine) == before
    monkeypatch.setattr(pkg.settings, "UNUSED", 2)  # never read by the verifier
    assert _digest(mod.mine) == before
    monkeypatch.setattr(pkg.settings, "THRESHOLD", 0.5)
    changed = _digest(mod.mine)
    assert changed != before
    monkeypatch.setattr(pkg.helpers, "accept_probability", lambda p, q, x: 1.0)
    assert _digest(mod.mine) not in (before, changed)


def test_a_library_module_is_still_taken_by_name():
    """numpy read as ``np.maximum`` is not walked (its file and version stand for it):
    walking it would meet values with no digest and make every key unique."""

    def uses_numpy(p):
        return np.maximum(p, 0)

    state = StateDigest()
    assert state.digest(uses_numpy) == _digest(uses_numpy)
    assert state.opaque == []


def test_sweep_recomputes_after_a_module_attribute_changed(lab, tmp_path, monkeypatch):
    """End to end: with ``THRESHOLD = 1`` the verifier never accepts its draft by its coin
    (only through the residual); the second sweep must give a fresh replay's rows, not the
    first sweep's cached ones."""
    from spectheory.lm.shards import shard_trace

    pkg, _ = lab
    rng = np.random.default_rng(0)
    P, Q = rng.dirichlet(np.ones(6), size=4), rng.dirichlet(np.ones(6), size=4)
    shard_trace(Trace.from_arrays(P, {"d": Q}, kind="probs"), tmp_path / "s", 10**6)
    grid = SweepGrid(ns=(1,), samplings=("iid",), verifiers=("digest_lab_verifier:mine",),
                     trials=200)
    first = sweep(tmp_path / "s", grid, cache_dir=tmp_path / "c")
    monkeypatch.setattr(pkg.settings, "THRESHOLD", 1.0)
    second = sweep(tmp_path / "s", grid, cache_dir=tmp_path / "c")
    assert np.mean([r["mc"] for r in second]) < np.mean([r["mc"] for r in first]) - 0.2
    trace = Trace.from_arrays(P, {"d": Q}, kind="probs")
    fresh = replay(trace, ns=(1,), samplings=("iid",), verifiers=("digest_lab_verifier:mine",),
                   trials=200)
    assert [r["mc"] for r in fresh] == [r["mc"] for r in second]
