"""The ``spectheory`` command line: one module per command.

Run it as ``spectheory COMMAND ...`` or ``python -m spectheory COMMAND ...``;
:func:`main` is the entry point of both.

Adding a command
----------------
A command is a module ``spectheory/cli/NAME.py`` listed in :data:`COMMANDS`.
It defines

``HELP``
    A one-line summary, shown by ``spectheory --help``.
``add_parser(subparsers) -> argparse.ArgumentParser``
    Adds the command's parser with ``subparsers.add_parser(NAME, help=HELP, ...)``
    and sets ``parser.set_defaults(run=...)``.  Options use the checked types
    of :mod:`spectheory.cli._common` (``positive_int``, ``existing_path``, ...);
    where a settings dataclass exists, its options are generated from it
    (:func:`~spectheory.cli._common.dataclass_options`), so each default is
    written once.  ``-q/--quiet`` and ``-v/--verbose`` are added for you.
``run(args) -> int``
    (one ``run_SUB`` per subcommand for nested commands such as ``trace``,
    whose subcommand is stored as ``args.<command>_command``)
    Does the work and returns an :class:`ExitCode`.  It raises
    :class:`spectheory.SpecTheoryError` (or ``OSError``) for bad input: the
    user sees one line and exit code 2; anything else is a bug (exit code 1,
    with the traceback).  Messages go through :mod:`logging` (logger
    ``spectheory.cli`` or the library's own), results to stdout; loops show
    progress with :func:`~spectheory.cli._common.progress` (tqdm when installed).

The module must not import numpy, numba, scipy, torch or transformers at its
top: ``spectheory --help`` imports every command module (for ``HELP``), and
only the chosen command's ``add_parser`` runs.

Exit codes (:class:`ExitCode`, the same for every command)
-----------------------------------------------------------
====  ==========================================================================
0     success (``check``: consistent with lossless)
1     unexpected failure (a bug; the traceback is printed)
2     bad input or usage: a one-line message naming the option, no traceback
3     a check failed: ``check`` found the verifier lossy, a ``reproduce`` or
      ``report`` check did not come out as expected
====  ==========================================================================
"""

from __future__ import annotations

import importlib
import logging
import sys

from .._errors import SpecTheoryError
from ._common import ExitCode, Parser, add_verbosity_options, logging_to_stderr

__all__ = ["COMMANDS", "ExitCode", "build_parser", "main"]

#: The commands, in the order of ``spectheory --help``: each is the module ``spectheory.cli.NAME``.
COMMANDS = ("bound", "check", "audit", "replay", "sweep", "trace", "report", "reproduce", "draft",
            "experiment", "cache")

_log = logging.getLogger("spectheory.cli")


def _version() -> str:
    from .._version import __version__

    return __version__


def _chosen(argv) -> str | None:
    """The command named in ``argv``: its first word that is not an option."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(argv=()) -> Parser:
    """The argument parser; only the command named in ``argv`` gets its full parser.

    The other commands are listed with their one-line ``HELP`` only, so that
    ``spectheory --help`` and ``spectheory COMMAND ...`` import nothing they
    do not need.
    """
    ap = Parser(
        prog="spectheory",
        description="The theory of speculative decoding: exact optimal acceptance and more.",
        epilog="Exit codes: 0 success; 1 unexpected failure; 2 bad input or usage; "
        "3 a check failed (verifier lossy, a reproduction or report check failed).",
    )
    ap.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    add_verbosity_options(ap, top=True)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND",
                            parser_class=Parser)  # fmt: skip
    chosen = _chosen(argv)
    for name in COMMANDS:
        module = importlib.import_module(f"{__name__}.{name}")
        if name == chosen:
            parser = module.add_parser(sub)
            _add_verbosity_everywhere(parser)
        else:
            sub.add_parser(name, help=module.HELP, add_help=False)
    return ap


def _add_verbosity_everywhere(parser) -> None:
    """``-q``/``-v`` on a command's parser and on its subcommands' parsers."""
    import argparse

    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        add_verbosity_options(parser)
    for action in subs:
        for child in dict.fromkeys(action.choices.values()):
            _add_verbosity_everywhere(child)


def main(argv=None) -> int:
    """Entry point of ``spectheory`` and ``python -m spectheory``; returns the exit code.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        An :class:`ExitCode`: 0 success, 1 unexpected failure, 2 bad input or
        usage, 3 a check failed, 141 the reader of stdout closed it early.
    """
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    try:
        args = build_parser(argv).parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return int(exc.code or 0)
    name = " ".join(
        [args.command, *(getattr(args, k) for k in ("trace_command", "draft_command",
                                                     "experiment_command")
                         if getattr(args, k, None))]
    )  # fmt: skip
    try:
        with logging_to_stderr(args):
            return _run(args, name)
    except KeyboardInterrupt:
        print(f"spectheory {name}: interrupted", file=sys.stderr)
        return 130


def _run(args, name) -> int:
    try:
        return int(args.run(args))
    except BrokenPipeError:  # not bad input: the reader of stdout has gone (`| head`)
        _silence_stdout()
        return ExitCode.BROKEN_PIPE
    except (SpecTheoryError, OSError) as exc:
        print(f"spectheory {name}: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except Exception:
        _log.exception(f"spectheory {name}: unexpected failure (please report it with this "
                       "traceback)")  # fmt: skip
        return ExitCode.FAILURE


def _silence_stdout() -> None:
    """Point stdout at the null device, so that the flush at exit does not fail again."""
    import os

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (captured, replaced)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)
