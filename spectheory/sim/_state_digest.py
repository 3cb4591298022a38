"""Digests of everything a Python callable's behaviour depends on (the sweep cache's key).

A function's compiled code is not enough: a verifier built by a factory keeps its
parameters in closure cells, others read default arguments, module globals,
helper functions, the attributes of a callable object or a partial's arguments.
:class:`StateDigest` walks all of these, recursively, and returns a hex digest
that changes whenever one of them does:

* a function of the user's (not importable by name from spectheory, the
  standard library or an installed package): its code (bytecode, constants and names, nested
  code included), ``__defaults__``, ``__kwdefaults__``, closure cell contents,
  the values of the module globals its code loads, its ``__dict__`` and its
  source file, each value digested in turn (so the functions and classes it
  reaches are walked too, with a guard against cycles);
* a library function or class: its importable name (spectheory's code is in
  the package digest of :func:`spectheory.sim.sweeps.code_fingerprint`;
  another package's, its source file);
* a class of the user's: its name, bases, methods (walked as functions),
  class attributes and source file;
* a module: its name only (its code is covered as above); but where a function of the
  user's loads a module of the user's as a global, the attributes of that module named by
  the function's attribute loads (``mymodule.THRESHOLD``, ``pkg.sub.helper(x)``: every
  ``.name`` its code reads, nested code included, followed through modules of the user's)
  are digested with the function;
* a numpy array: dtype, shape and bytes; a set: its elements' digests, sorted;
* any other value (a callable object with its ``__dict__``, a
  :func:`functools.partial` with its arguments, containers, numbers, strings):
  its pickle, with the values above digested where pickle meets them.

A value that cannot be digested deterministically (pickle refuses it: a lock, a
generator, an open file, a compiled extension object without pickle support)
gets a random token instead, so the digest never equals an earlier one: the
sweep cache then misses (recomputes) rather than serve rows another state
computed.  Such values are listed in :attr:`StateDigest.opaque`.  Not seen: the
globals of spectheory's and other installed packages' own functions (changed at
runtime by monkeypatching), the attributes of a library module (``np.pi``), taken
by name, and modules imported inside the function's body (``import mymodule`` in it).
"""

from __future__ import annotations

import dis
import hashlib
import io
import pickle
import secrets
import sys
import sysconfig
import types
from pathlib import Path

import numpy as np

__all__ = ["StateDigest"]

_PACKAGE = Path(__file__).resolve().parents[1]
#: Where the standard library and installed packages live (their code is taken by name).
_LIBRARY_DIRS = tuple(
    {Path(p).resolve() for k, p in sysconfig.get_paths().items()
     if k in ("stdlib", "platstdlib", "purelib", "platlib")}
)  # fmt: skip
_ATOMS = (type(None), bool, int, float, complex, str, bytes)
_LOADS = {"LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"}
_ATTRIBUTE_LOADS = {"LOAD_ATTR", "LOAD_METHOD"}


def _loaded_names(code, opnames, out=None) -> set[str]:
    """Names the instructions ``opnames`` of ``code`` (and of the code nested in it: inner
    functions, lambdas, comprehensions, which share its globals) take."""
    out = set() if out is None else out
    for ins in dis.get_instructions(code):
        if ins.opname in opnames:
            out.add(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _loaded_names(const, opnames, out)
    return out


def _global_names(code) -> set[str]:
    """Names ``code`` (nested code included) loads as globals."""
    return _loaded_names(code, _LOADS)


def _attribute_names(code) -> set[str]:
    """Names ``code`` (nested code included) reads as attributes: ``x.name``."""
    return _loaded_names(code, _ATTRIBUTE_LOADS)


def _is_user_module(module) -> bool:
    """A module of the user's: ``__main__`` or one whose file lies outside spectheory, the
    standard library and the installed packages."""
    script = module.__name__ == "__main__"
    file = getattr(module, "__file__", None)
    if script or not file:
        return script  # a script is the user's; a module without a file is built in
    path = Path(file).resolve()
    return not _in(path, _PACKAGE) and not any(_in(path, d) for d in _LIBRARY_DIRS)


def _module_attributes(module, names, seen) -> dict:
    """``{name: value}`` of the attributes in ``names`` that a module of the user's has,
    a module of the user's among them replaced by its own such attributes (cycles cut)."""
    seen = seen | {id(module)}
    out = {}
    for name in sorted(names):
        if name not in vars(module):
            continue
        value = vars(module)[name]
        if isinstance(value, types.ModuleType) and _is_user_module(value):
            value = ("module", value.__name__,
                     {} if id(value) in seen else _module_attributes(value, names, seen))
        out[name] = value
    return out


def _code_fields(code) -> tuple:
    """What a code object computes: bytecode, constants (nested code too), names, signature.

    Not ``marshal.dumps(code)``: it marks objects referenced more than once (a reference
    count at the moment of the call), so the same code can give other bytes.
    """
    return (code.co_code, code.co_consts, code.co_names, code.co_varnames, code.co_freevars,
            code.co_cellvars, code.co_argcount, code.co_posonlyargcount,
            code.co_kwonlyargcount, code.co_flags, code.co_name)  # fmt: skip


def _in(path, folder) -> bool:
    return folder == path or folder in path.parents


def _location(obj) -> str:
    """``"spectheory"``, ``"library"`` (importable by name from the standard library or an
    installed package) or ``"user"`` (anything else: ``__main__``, a notebook, a
    ``<locals>`` function, a module of one's own)."""
    name = getattr(obj, "__module__", None)
    module = sys.modules.get(name) if isinstance(name, str) else None
    run_as_script = name == "__main__"  # a script's functions are the user's
    if module is None or run_as_script:
        return "user"
    target = module
    for part in getattr(obj, "__qualname__", "<locals>").split("."):
        target = getattr(target, part, None)
    if target is not obj:  # a <locals> function, or one rebound since: not known by name
        return "user"
    file = getattr(module, "__file__", None)
    if not file:
        return "library" if name in sys.builtin_module_names else "user"
    path = Path(file).resolve()
    if _in(path, _PACKAGE):
        return "spectheory"
    return "library" if any(_in(path, d) for d in _LIBRARY_DIRS) else "user"


class _Pickler(pickle.Pickler):
    """Pickle with functions, classes, modules, arrays and sets replaced by their digests."""

    def __init__(self, file, owner: StateDigest):
        super().__init__(file, protocol=4)
        self._owner = owner

    def persistent_id(self, obj):
        return self._owner._special(obj)


class StateDigest:
    """Digests of values and callables; one instance per fingerprint (it memoises by id).

    Attributes
    ----------
    opaque : list of str
        Where the values that could not be digested were met, and why (each one made
        the digest unique).
    """

    def __init__(self):
        self._done: dict[int, tuple[object, str]] = {}  # id -> (object kept alive, token)
        self._busy: set[int] = set()
        self._files: dict[Path, str] = {}
        self.opaque: list[str] = []

    def digest(self, obj, where: str = "") -> str:
        """Hex digest of ``obj`` and everything it reaches (module docstring); ``where``
        names it in :attr:`opaque`."""
        special = self._special(obj)
        if special is not None:
            return special
        buf = io.BytesIO()
        try:
            _Pickler(buf, self).dump(obj)
        except Exception as exc:  # any refusal: the value is opaque
            return self._opaque(obj, exc, where)
        return hashlib.sha256(buf.getvalue()).hexdigest()

    def _opaque(self, obj, exc, where) -> str:
        # No deterministic digest: a random token, so that no earlier digest is matched.
        self.opaque.append(f"{where or type(obj).__qualname__}: {exc}")
        return f"opaque:{id(obj)}:{secrets.token_hex(16)}"

    def _special(self, obj) -> str | None:
        """A digest for what pickle would take by name or could not take; else None."""
        if isinstance(obj, _ATOMS):
            return None
        if isinstance(obj, types.CodeType):
            return f"code:{self.digest(_code_fields(obj))}"
        if isinstance(obj, types.ModuleType):
            return f"module:{obj.__name__}"
        if isinstance(obj, types.FunctionType):
            return self._memo(obj, self._function)
        if isinstance(obj, type):
            return self._memo(obj, self._class)
        if isinstance(obj, np.ndarray) and not obj.dtype.hasobject:
            data = hashlib.sha256(np.ascontiguousarray(obj).tobytes()).hexdigest()
            return f"ndarray:{type(obj).__qualname__}:{obj.dtype!r}:{obj.shape}:{data}"
        if isinstance(obj, set | frozenset):  # iteration order varies with str hashing
            return f"{type(obj).__name__}:{sorted(self.digest(x) for x in obj)}"
        py_func = getattr(obj, "py_func", None)  # a numba dispatcher: its Python function
        if isinstance(py_func, types.FunctionType) and callable(obj):
            return f"{type(obj).__qualname__}:{self._memo(py_func, self._function)}"
        return None

    def _memo(self, obj, walk) -> str:
        key = id(obj)
        if key in self._done:
            return self._done[key][1]
        if key in self._busy:  # a cycle (recursion, a method naming its class)
            return f"cycle:{obj.__module__}.{obj.__qualname__}"
        self._busy.add(key)
        try:
            token = walk(obj)
        finally:
            self._busy.discard(key)
        self._done[key] = (obj, token)
        return token

    def _file(self, obj) -> str:
        """SHA-256 of the source file ``obj`` is defined in ("" when there is none)."""
        code = getattr(obj, "__code__", None)
        name = code.co_filename if code is not None else None
        if name is None:
            module = sys.modules.get(getattr(obj, "__module__", None) or "")
            name = getattr(module, "__file__", None)
        if not name or not Path(name).is_file():
            return ""
        path = Path(name).resolve()
        if path not in self._files:
            self._files[path] = hashlib.sha256(path.read_bytes()).hexdigest()
        return self._files[path]

    def _function(self, fn) -> str:
        where = _location(fn)
        name = f"{fn.__module__}.{fn.__qualname__}"
        if where == "spectheory":
            return f"fn:{name}"  # its code is in the package digest
        if where == "library":
            return f"fn:{name}:{self._file(fn)}"
        h = hashlib.sha256(name.encode())
        cells = []
        for cell in fn.__closure__ or ():
            try:
                cells.append(cell.cell_contents)
            except ValueError:  # a cell not filled yet
                cells.append("<empty cell>")
        glob = fn.__globals__
        parts = {
            "code": fn.__code__,
            "defaults": fn.__defaults__,
            "kwdefaults": fn.__kwdefaults__,
            "closure": tuple(cells),
            "attributes": fn.__dict__,
            **{f"global {k}": glob[k] for k in sorted(_global_names(fn.__code__)) if k in glob},
        }
        # A module of the user's is taken by name; what the code reads from it is state too.
        attributes = None
        for key in [k for k in parts if k.startswith("global ")]:
            module = parts[key]
            if isinstance(module, types.ModuleType) and _is_user_module(module):
                if attributes is None:
                    attributes = _attribute_names(fn.__code__)
                parts[f"{key} attributes"] = _module_attributes(module, attributes, set())
        for label, part in parts.items():
            h.update(label.encode())
            h.update(self.digest(part, f"{name} ({label})").encode())
        h.update(self._file(fn).encode())
        return f"fn:{name}:{h.hexdigest()}"

    def _class(self, cls) -> str:
        where = _location(cls)
        name = f"{cls.__module__}.{cls.__qualname__}"
        if where == "spectheory":
            return f"class:{name}"
        if where == "library":
            return f"class:{name}:{self._file(cls)}"
        h = hashlib.sha256(name.encode())
        for base in cls.__bases__:
            h.update(self.digest(base).encode())
        for key, attr in sorted(vars(cls).items()):
            if isinstance(attr, staticmethod | classmethod):
                attr = attr.__func__
            elif isinstance(attr, property):
                attr = (attr.fget, attr.fset, attr.fdel)
            elif key.startswith("__") and key.endswith("__") and not callable(attr):
                continue  # __dict__, __weakref__, __doc__, __slots__ ...: not behaviour
            elif isinstance(attr, types.GetSetDescriptorType | types.MemberDescriptorType):
                continue  # slots: the instance's state, digested with the instance
            h.update(key.encode())
            h.update(self.digest(attr, f"{name}.{key}").encode())
        h.update(self._file(cls).encode())
        return f"class:{name}:{h.hexdigest()}"
