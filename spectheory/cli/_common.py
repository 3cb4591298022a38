"""What every ``spectheory`` command shares: exit codes, checked option types, logging, progress.

Nothing here imports numpy, numba, scipy or torch: ``spectheory --help`` and
``spectheory COMMAND --help`` stay fast (each command imports the library
inside its ``run``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import enum
import logging
import math
import re
import sys
from pathlib import Path

from .._errors import InvalidParameterError
from .._files import json_safe

__all__ = [
    "ExitCode",
    "Parser",
    "add_verbosity_options",
    "comma_numbers",
    "dataclass_options",
    "existing_path",
    "id_list",
    "json_safe",
    "log",
    "nonnegative_int",
    "positive_float",
    "positive_int",
    "probability",
    "progress",
    "settings_from_args",
]

log = logging.getLogger("spectheory.cli")


class ExitCode(enum.IntEnum):
    """The exit status of every ``spectheory`` command (one table for all of them)."""

    #: Success; for ``check``: consistent with lossless.
    OK = 0
    #: An unexpected failure (a bug: the traceback is printed).
    FAILURE = 1
    #: Bad input or usage: a one-line message naming the option, no traceback.
    USAGE = 2
    #: A check failed: ``check`` found the verifier lossy, a ``reproduce`` or
    #: ``report`` check did not come out as expected.
    CHECK_FAILED = 3
    #: The reader of the results closed them early (``spectheory bound --json | head``): the
    #: command stops without a message, as a tool killed by SIGPIPE (128 + 13).
    BROKEN_PIPE = 141


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line (``prog: error: ...``), exit 2."""

    def error(self, message):
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


# --------------------------------------------------------------------------- option types
# argparse calls these on the option's text; an ArgumentTypeError becomes the
# one-line usage error "argument --x: <message>" with exit code 2.


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer; got {text!r}") from None


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number; got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number; got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1.

    >>> positive_int("3")
    3
    >>> positive_int("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be an integer >= 1; got 0
    """
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1; got {value}")
    return value


def nonnegative_int(text: str) -> int:
    """An integer >= 0 (seeds; sizes where 0 means "skip")."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0; got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0; got {text}")
    return value


def nonnegative_float(text: str) -> float:
    """A finite number >= 0 (temperatures)."""
    value = _float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0; got {text}")
    return value


def probability(text: str) -> float:
    """A number in the open interval (0, 1) (false-alarm rates)."""
    value = _float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1); got {text}")
    return value


def existing_path(text: str) -> str:
    """A path that exists (file or folder); not empty text.

    ``Path("")`` is the current folder, which exists: ``--trace ''`` passed, then
    read as no trace at all (the commands record or reuse one instead).  An
    optional path option's default is therefore None, not ``""`` (argparse
    passes a text default through the type).

    >>> existing_path("")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: no such file or folder: ''
    """
    if not text or not Path(text).exists():
        raise argparse.ArgumentTypeError(f"no such file or folder: {text!r}")
    return text


def comma_numbers(text: str) -> tuple[str, ...]:
    """``"0.3,0.4,0.3"`` -> the items as text (parsed as floats or Fractions by the command)."""
    items = tuple(x.strip() for x in text.split(","))
    from fractions import Fraction

    for x in items:
        try:
            Fraction(x)
        except (ValueError, ZeroDivisionError):
            raise argparse.ArgumentTypeError(
                f"must be comma-separated numbers; got {text!r}"
            ) from None
    return items


_ID_PART = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def id_list(text: str) -> tuple[int, ...]:
    """``"0-5,9"`` -> ``(0, 1, 2, 3, 4, 5, 9)``; ranges are inclusive and must not be reversed.

    >>> id_list("0-2,9")
    (0, 1, 2, 9)
    >>> id_list("5-2")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must look like '0-5,9' (ids >= 0, ranges low-high); got '5-2'
    """
    ids: list[int] = []
    for part in text.split(","):
        m = _ID_PART.match(part)
        if m is None or (m[2] is not None and int(m[2]) < int(m[1])):
            raise argparse.ArgumentTypeError(
                f"must look like '0-5,9' (ids >= 0, ranges low-high); got {text!r}"
            )
        ids.extend(range(int(m[1]), int(m[2] or m[1]) + 1))
    return tuple(ids)


# --------------------------------------------------------------------------- settings dataclasses


def _attribute_docs(doc, names) -> dict[str, str]:
    """The first sentence of each field's entry in the numpydoc ``Attributes`` section."""
    import inspect

    parts = inspect.cleandoc(doc or "").split("\nAttributes\n----------\n", 1)
    out: dict[str, str] = {}
    name = None
    for line in parts[-1].splitlines() if len(parts) == 2 else ():
        if not line.strip():
            continue
        if not line.startswith(" "):
            name = line.split(" : ")[0].strip()
            if name not in names:
                name = None
            else:
                out[name] = ""
        elif name is not None:
            out[name] = f"{out[name]} {line.strip()}".strip()
    return {k: _plain(v.split(". ")[0].rstrip(".")) for k, v in out.items()}


def _plain(text: str) -> str:
    """reST markup as plain help text: roles dropped (``~`` keeps the last name), quotes once."""
    import re

    text = re.sub(  # maths as its source, less the TeX commands: L + \text{depth} -> L + depth
        r":math:`([^`]*)`",
        lambda m: re.sub(r"\\[a-z]+\{([^}]*)\}", r"\1", m.group(1)).replace("\\", ""),
        text,
    )
    text = re.sub(r":[a-z]+:`~(?:[\w.]+\.)?(\w+)`", r"\1", text)  # ~: the last name only
    text = re.sub(r":[a-z]+:`([\w.]+)`", r"\1", text)
    text = re.sub(r"``'?(.*?)'?``", lambda m: m.group(1) if m.group(1).startswith('"')
                  else f"'{m.group(1)}'", text)  # fmt: skip
    return text.replace("%", "%%")


def _show(value) -> str:
    """An option's default as it is typed: a run of consecutive integers as ``1 2 ... 29``
    (the list options take integers one by one; ``1-29`` read as a form they refused)."""
    if isinstance(value, tuple) and value and all(isinstance(v, int) for v in value):
        if list(value) == list(range(value[0], value[-1] + 1)) and len(value) > 3:
            return f"{value[0]} {value[1]} ... {value[-1]}"
    if isinstance(value, tuple):
        return " ".join(map(str, value)) if value else "none"
    return str(value)


def dataclass_options(parser, cls, fields=None, types=None, flags=None):
    """Add one option per field of the settings dataclass ``cls``.

    Each option's default is the field's default (written once, in the
    dataclass): the option is left out of the namespace unless given, and
    :func:`settings_from_args` builds ``cls`` from the given ones only.  The
    help text is the first sentence of the field's entry in the numpydoc
    ``Attributes`` section.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    cls : dataclass type or str
        The dataclass, or ``"package.module:Class"``: read from the source
        without importing its module (:mod:`spectheory.cli._static`), so that
        ``--help`` does not load numba, scipy or torch.
    fields : sequence of str, optional
        The fields to expose (default all), in this order.
    types : dict, optional
        ``field -> argparse type function``; default from the field's default:
        ``int`` -> :func:`nonnegative_int`, ``float`` -> :func:`nonnegative_float`,
        a tuple -> ``nargs="+"`` of its items' type.  Required for a field
        whose default the source does not give.
    flags : dict, optional
        ``field -> option string`` where it differs from ``--field-name``.
    """
    from ._static import UNRESOLVED, static_dataclass

    types, flags = types or {}, flags or {}
    if isinstance(cls, str):
        info = static_dataclass(cls)
        by_name, doc = dict(info.fields), info.doc
    else:
        by_name = {
            f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
            for f in dataclasses.fields(cls)
        }
        doc = cls.__doc__
    docs = _attribute_docs(doc, set(by_name))
    for name in fields or by_name:
        default = by_name[name]
        kwargs = {"dest": name, "default": argparse.SUPPRESS}
        if name in types:
            kwargs["type"] = types[name]
        elif isinstance(default, bool):
            kwargs["action"] = "store_true"
        elif isinstance(default, tuple):
            item = default[0] if default else ""
            kwargs["nargs"] = "+"
            kwargs["type"] = {int: positive_int, float: nonnegative_float}.get(type(item), str)
        elif isinstance(default, int):
            kwargs["type"] = nonnegative_int
        elif isinstance(default, float):
            kwargs["type"] = nonnegative_float
        help_text = docs.get(name) or name.replace("_", " ")
        # a default computed at import time is described by the field's documentation
        shown = "" if default is UNRESOLVED else f" (default: {_show(default)})"
        kwargs["help"] = help_text + shown
        parser.add_argument(flags.get(name, "--" + name.replace("_", "-")), **kwargs)


def signature_options(parser, func, options):
    """Add options for keyword parameters of ``func`` whose defaults stay in its signature.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    func : callable or str
        The function, or ``"package.module:function"``: its defaults read from
        the source without importing its module (:mod:`spectheory.cli._static`).
    options : dict
        ``parameter -> (flag, type function, help[, dest])``; the option is left
        out of the namespace unless given (:func:`given_kwargs` collects the
        given ones); ``dest`` defaults to the parameter's name.
    """
    from ._static import UNRESOLVED, static_defaults

    if isinstance(func, str):
        defaults = static_defaults(func)
    else:
        import inspect

        defaults = {k: p.default for k, p in inspect.signature(func).parameters.items()}
    for name, (flag, kind, text, *dest) in options.items():
        default = defaults[name]
        shown = "" if default is UNRESOLVED else f" (default: {_show(default)})"
        parser.add_argument(flag, dest=dest[0] if dest else name, type=kind,
                            default=argparse.SUPPRESS, help=text + shown)  # fmt: skip


def given_kwargs(args, names) -> dict:
    """The options among ``names`` that the user gave (others keep the library's default)."""
    return {k: v for k, v in vars(args).items() if k in names}


def settings_from_args(cls, args, **fixed):
    """``cls(**given options, **fixed)``: the fields the user did not give keep their default."""
    names = {f.name for f in dataclasses.fields(cls)}
    given = {k: tuple(v) if isinstance(v, list) else v for k, v in vars(args).items() if k in names}
    return cls(**{**given, **fixed})


# --------------------------------------------------------------------------- messages


def add_verbosity_options(parser, top: bool = False) -> None:
    """``-q/--quiet`` and ``-v/--verbose``, on the main parser and on every command.

    Messages go through :mod:`logging` (logger ``spectheory``) to stderr:
    warnings only with ``--quiet``, progress with the default, debug details
    with ``--verbose``.  Results go to stdout.
    """
    default = 0 if top else argparse.SUPPRESS
    parser.add_argument("-q", "--quiet", action="count", default=default,
                        help="warnings and errors only (no progress)")  # fmt: skip
    parser.add_argument("-v", "--verbose", action="count", default=default,
                        help="debug messages too")  # fmt: skip


class _StderrHandler(logging.StreamHandler):
    """A handler that writes to the current ``sys.stderr`` (looked up at each message).

    Holding on to the stream of the first call would write to a closed file once
    ``sys.stderr`` is replaced (pytest's capture, notebooks).
    """

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # StreamHandler.__init__ sets it; the property wins
        pass


@contextlib.contextmanager
def logging_to_stderr(args):
    """Route the ``spectheory`` loggers to stderr at the level of ``--quiet``/``--verbose``.

    The handler and level are the command's only: both are restored on exit,
    so that ``main`` called in-process (tests, notebooks) leaves logging as it was.
    """
    level = logging.INFO - 10 * (args.verbose - args.quiet)
    logger = logging.getLogger("spectheory")
    old_level = logger.level
    handler = _StderrHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.setLevel(max(logging.DEBUG, min(level, logging.WARNING)))
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def progress(iterable, args, desc: str, total=None):
    """``iterable`` wrapped in a tqdm bar on stderr, unless ``--quiet`` or tqdm is absent."""
    if args.quiet:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm comes with the models extra; without it, no bar
        return iterable
    return tqdm(iterable, desc=desc, total=total, file=sys.stderr, leave=False)


def usage_error(message: str) -> InvalidParameterError:
    """A bad-input error found by a command (exit code 2, one line)."""
    return InvalidParameterError(message)
