"""spectheory.cli._static: the defaults read from the source equal the imported objects'.

Every ``"package.module:Name"`` the command modules hand to ``dataclass_options`` or
``signature_options`` is found in their source, read statically, and compared with the object
itself (imported here, with numba and all).  A default the source cannot give must be listed in
``UNRESOLVED_OK``: a new one fails until someone decides how its help should read.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest

from spectheory.cli import _static
from spectheory.cli._static import UNRESOLVED, static_dataclass, static_defaults

CLI = Path(_static.__file__).resolve().parent
SPEC = re.compile(r"^spectheory(?:\.\w+)+:\w+$")
#: (spec, name) whose default is computed at import time (described by its documentation).
UNRESOLVED_OK = {("spectheory.sim.sweeps:SweepGrid", "verifiers")}


def _specs():
    out = set()
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if SPEC.match(node.value):
                    out.add(node.value)
    return sorted(out)


def _imported(spec):
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def test_the_command_modules_name_the_objects_they_read():
    specs = _specs()
    for expected in (
        "spectheory.lm.trace:TraceSettings",
        "spectheory.sim.sweeps:SweepGrid",
        "spectheory.sim.sweeps:sweep",
        "spectheory.sim.check:check_lossless",
        "spectheory.sim.audit:check_lossless_from_samples",
        "spectheory.lm.adapters:TrainSettings",
        "spectheory.lm.corpus:CorpusSettings",
        "spectheory.experiments.trees:TreesSettings",
        "spectheory.experiments.draft_length:DraftLengthSettings",
    ):
        assert expected in specs


def _runtime_default(f):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


@pytest.mark.parametrize("spec", _specs())
def test_static_defaults_equal_the_imported_objects(spec):
    obj = _imported(spec)
    if dataclasses.is_dataclass(obj):
        static = static_dataclass(spec)
        runtime = {f.name: _runtime_default(f) for f in dataclasses.fields(obj)}
        assert [name for name, _ in static.fields] == list(runtime)  # same fields, same order
        assert inspect.cleandoc(static.doc) == inspect.cleandoc(obj.__doc__)
        pairs = dict(static.fields).items()
    else:
        params = inspect.signature(obj).parameters
        runtime = {k: p.default for k, p in params.items() if p.default is not p.empty}
        static = static_defaults(spec)
        assert set(static) == set(runtime)
        pairs = static.items()
    for name, value in pairs:
        if value is UNRESOLVED:
            assert (spec, name) in UNRESOLVED_OK, f"{spec}.{name}: default not read from source"
        else:
            assert (spec, name) not in UNRESOLVED_OK
            assert value == runtime[name] and type(value) is type(runtime[name]), (spec, name)


def _value(expr, module="spectheory.sim.check"):
    return _static._value(ast.parse(expr, mode="eval").body, module)


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("20_000", 20000),
        ("0.5 * 989e12", 0.5 * 989e12),
        ("-3", -3),
        ("(1, 2, 4)", (1, 2, 4)),
        ("None", None),
        ("DEFAULT_TRIALS", 20000),  # a module-level constant
        ("(DEFAULT_TRIALS, 2)", (20000, 2)),
        ("tuple(range(1, 4))", (1, 2, 3)),
    ],
)
def test_values_the_source_gives(expr, expected):
    assert _value(expr) == expected


@pytest.mark.parametrize(
    "expr", ["f(1)", "x.y.z", "np.inf", "[i for i in range(3)]", "NO_SUCH", "tuple(range(x))"]
)
def test_values_the_source_does_not_give_are_unresolved(expr):
    assert _value(expr) is UNRESOLVED


def test_constants_are_followed_through_imports():
    # SweepGrid.samplings = SAMPLINGS, imported from spectheory.drafting
    from spectheory.drafting import SAMPLINGS

    assert _value("SAMPLINGS", "spectheory.sim.sweeps") == SAMPLINGS
    # check_lossless_from_samples(alpha=_stats.DEFAULT_ALPHA): a module attribute
    from spectheory.sim import _stats as S

    assert _value("_stats.DEFAULT_ALPHA", "spectheory.sim.audit") == S.DEFAULT_ALPHA


def test_without_source_the_object_is_imported(monkeypatch):
    monkeypatch.setattr(_static, "_tree", lambda module: None)
    static_dataclass.cache_clear()
    static_defaults.cache_clear()
    try:
        s = static_dataclass("spectheory.sim.sweeps:SweepGrid")
        from spectheory.sim.replay import REPLAY_VERIFIERS

        assert dict(s.fields)["verifiers"] == REPLAY_VERIFIERS  # imported: even this one
        assert static_defaults("spectheory.sim.check:check_lossless")["trials"] == 20000
    finally:
        static_dataclass.cache_clear()
        static_defaults.cache_clear()


def test_help_of_an_unresolved_default_is_its_documentation(capsys):
    from spectheory.cli import main

    assert main(["replay", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "default every built-in verifier with a numba kernel" in text
    assert "--n NS [NS ...] Numbers of drafts, each >= 1 (default: 1 2 4)" in text
