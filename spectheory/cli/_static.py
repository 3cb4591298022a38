"""Defaults and docstrings of library objects, read from their source without importing them.

The options of a command are generated from a settings dataclass or a
function's signature (one place for each default), but the modules holding
them import numba and scipy (seconds).  ``spectheory COMMAND --help`` only
needs each field's name, default and documentation, so this module reads them
from the source with :mod:`ast`:

- :func:`static_dataclass` gives the fields of a dataclass, with their
  defaults, and its docstring;
- :func:`static_defaults` gives the keyword defaults of a function.

A default is a literal, a module-level constant (followed through ``from X
import NAME`` and ``module.NAME``), arithmetic, tuples and lists of those, or
``tuple(range(...))`` of them;
anything else (a call, a ``default_factory``) is :data:`UNRESOLVED` and
shown as "see above" (the field's documentation says what it is).
``tests/cli/test_static.py`` compares every value read here with the imported
object's, so the two cannot drift apart.  Without the source (a stripped
install) the object is imported instead: slower, never wrong.
"""

from __future__ import annotations

import ast
import dataclasses
import operator
from functools import cache
from pathlib import Path

__all__ = ["UNRESOLVED", "StaticDataclass", "static_dataclass", "static_defaults"]

_PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # .../spectheory


class _Unresolved:
    """A default computed at import time, which the source alone cannot give."""

    def __repr__(self):
        return "UNRESOLVED"


#: The value of a default that is not a (derived) literal.
UNRESOLVED = _Unresolved()

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}


@dataclasses.dataclass(frozen=True)
class StaticDataclass:
    """What :func:`~spectheory.cli._common.dataclass_options` needs of a settings dataclass.

    Attributes
    ----------
    name : str
        ``module:Class``.
    doc : str
        The class docstring (its ``Attributes`` section documents the fields).
    fields : tuple of (str, object)
        ``(name, default)`` in order; :data:`UNRESOLVED` where not static,
        ``dataclasses.MISSING`` where there is no default.
    """

    name: str
    doc: str
    fields: tuple


def _source_file(module: str) -> Path | None:
    parts = module.split(".")
    if parts[0] != "spectheory":
        return None
    base = _PACKAGE_ROOT.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@cache
def _tree(module: str) -> ast.Module | None:
    path = _source_file(module)
    if path is None:
        return None
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _absolute(node: ast.ImportFrom, module: str) -> str:
    if not node.level:
        return node.module or ""
    is_package = _source_file(module) is not None and _source_file(module).name == "__init__.py"
    package = module.split(".") if is_package else module.split(".")[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, node.module] if node.module else package)


def _binding(module: str, name: str, depth: int):
    """The value bound to ``name`` at the top of ``module``, or a module object's name."""
    tree = _tree(module)
    if tree is None or depth > 8:
        return UNRESOLVED
    for node in reversed(tree.body):  # the last binding wins
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return _value(node.value, module, depth + 1)
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return UNRESOLVED if node.value is None else _value(node.value, module, depth + 1)
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    base = _absolute(node, module)
                    if _source_file(f"{base}.{alias.name}") is not None:
                        return _ModuleRef(f"{base}.{alias.name}")
                    return _binding(base, alias.name, depth + 1)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname == name:
                    return _ModuleRef(alias.name)
    return UNRESOLVED


@dataclasses.dataclass(frozen=True)
class _ModuleRef:
    module: str


def _value(node, module: str, depth: int = 0):
    """The value of the expression ``node`` in ``module``, or :data:`UNRESOLVED`."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Name):
        value = _binding(module, node.id, depth)
        return UNRESOLVED if isinstance(value, _ModuleRef) else value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        ref = _binding(module, node.value.id, depth)
        if isinstance(ref, _ModuleRef):
            return _binding(ref.module, node.attr, depth + 1)
        return UNRESOLVED
    if isinstance(node, ast.Tuple | ast.List):
        items = [_value(e, module, depth) for e in node.elts]
        if any(i is UNRESOLVED for i in items):
            return UNRESOLVED
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left, module, depth), _value(node.right, module, depth)
        if UNRESOLVED in (left, right) or not all(
            isinstance(v, int | float) for v in (left, right)
        ):
            return UNRESOLVED
        return _BINARY[type(node.op)](left, right)
    if (  # tuple(range(a, b)), the one call allowed: pure builtins of literal integers
        isinstance(node, ast.Call) and getattr(node.func, "id", "") == "tuple"
        and len(node.args) == 1 and not node.keywords
        and isinstance(node.args[0], ast.Call) and getattr(node.args[0].func, "id", "") == "range"
        and not node.args[0].keywords
    ):  # fmt: skip
        bounds = [_value(x, module, depth) for x in node.args[0].args]
        if 1 <= len(bounds) <= 3 and all(type(x) is int for x in bounds):
            return tuple(range(*bounds))
        return UNRESOLVED
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _value(node.operand, module, depth)
        return -v if isinstance(v, int | float) else UNRESOLVED
    return UNRESOLVED


def _find(tree, kind, name):
    for node in tree.body:
        if isinstance(node, kind) and node.name == name:
            return node
    return None


def _split(spec: str) -> tuple[str, str]:
    module, _, name = spec.partition(":")
    return module, name


def _imported(spec: str):
    import importlib

    module, name = _split(spec)
    return getattr(importlib.import_module(module), name)


@cache
def static_dataclass(spec: str) -> StaticDataclass:
    """The fields, defaults and docstring of the dataclass ``"package.module:Class"``.

    >>> s = static_dataclass("spectheory.lm.trace:TraceSettings")
    >>> dict(s.fields)["max_new_tokens"], "Attributes" in s.doc
    (24, True)
    """
    module, name = _split(spec)
    tree = _tree(module)
    node = None if tree is None else _find(tree, ast.ClassDef, name)
    if node is None:  # no source: import it (slow, still right)
        cls = _imported(spec)
        fields = tuple(
            (f.name, f.default if f.default is not dataclasses.MISSING
             else (f.default_factory() if f.default_factory is not dataclasses.MISSING
                   else dataclasses.MISSING))
            for f in dataclasses.fields(cls)
        )  # fmt: skip
        return StaticDataclass(spec, cls.__doc__ or "", fields)
    fields = []
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if "ClassVar" in ast.unparse(stmt.annotation):
            continue
        value = stmt.value
        if value is None:
            default = dataclasses.MISSING
        elif isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
            kw = {k.arg: k.value for k in value.keywords}
            default = _value(kw["default"], module) if "default" in kw else UNRESOLVED
        else:
            default = _value(value, module)
        fields.append((stmt.target.id, default))
    return StaticDataclass(spec, ast.get_docstring(node, clean=False) or "", tuple(fields))


@cache
def static_defaults(spec: str) -> dict:
    """The parameters with defaults of the function ``"package.module:function"``.

    >>> static_defaults("spectheory.sim.check:check_lossless")["trials"]
    20000
    """
    module, name = _split(spec)
    tree = _tree(module)
    node = None if tree is None else _find(tree, ast.FunctionDef, name)
    if node is None:
        import inspect

        params = inspect.signature(_imported(spec)).parameters.values()
        return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    a = node.args
    positional = a.posonlyargs + a.args
    out = {
        p.arg: _value(d, module)
        for p, d in zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True)
    }
    keyword = zip(a.kwonlyargs, a.kw_defaults, strict=True)
    out.update({p.arg: _value(d, module) for p, d in keyword if d is not None})
    return out
