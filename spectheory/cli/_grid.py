"""The grid options (``--n``, ``--temperatures``, ...) of ``replay`` and ``sweep``.

Generated from :class:`spectheory.sim.sweeps.SweepGrid`, so each default is
written once, in the dataclass.
"""

from __future__ import annotations

import argparse

from .._errors import InvalidParameterError
from ._common import dataclass_options, nonnegative_float, positive_int, settings_from_args

FIELDS = ("drafts", "temperatures", "ns", "samplings", "verifiers", "trials")


def add_grid_options(parser, drafts_flag: str = "--drafts") -> None:
    """Add the :class:`~spectheory.sim.sweeps.SweepGrid` options to ``parser``."""
    group = parser.add_argument_group("grid (spectheory.sim.SweepGrid)")
    dataclass_options(
        group, "spectheory.sim.sweeps:SweepGrid", FIELDS,
        types={"drafts": str, "temperatures": nonnegative_float, "ns": positive_int,
               "samplings": str, "verifiers": str, "trials": positive_int},
        flags={"drafts": drafts_flag, "ns": "--n"},
    )  # fmt: skip
    # nargs: every field but trials is a sequence
    for action in group._group_actions:
        if action.dest != "trials":
            action.nargs = "+"
        if action.dest == "drafts" and drafts_flag != "--drafts":
            # its own slot: sharing the recording's --drafts, one value was dropped and
            # --replay-drafts with --trace read as the (refused) recording option
            action.dest = "replay_drafts"


def grid_from_args(args):
    """The :class:`~spectheory.sim.sweeps.SweepGrid` of the parsed options.

    ``--samplings all`` (kept from earlier versions) means every draft law,
    the dataclass default.
    """
    from ..sim.sweeps import SweepGrid

    given = dict(vars(args))
    if given.get("samplings") == ["all"]:
        del given["samplings"]
    if "replay_drafts" in given:  # else the recorded drafts are the ones replayed
        given["drafts"] = given.pop("replay_drafts")
    grid = settings_from_args(SweepGrid, argparse.Namespace(**given))
    if not given.get("bounds_only"):  # the bounds run no verifier: --verifiers is refused there
        _check_values_used(grid, given)
    return grid


def _check_values_used(grid, given) -> None:
    """Refuse a value of ``--verifiers``, ``--n`` or ``--samplings`` that no configuration uses.

    A configuration (n, draft law) runs with the verifiers that support it;
    a verifier that supports none of the grid's, or an n or law that none of
    its verifiers supports, had no row in the table, without a word.
    """
    from ..sim.replay import _applicable

    runs = [(v, n, s) for v in grid.verifiers for n in grid.ns for s in grid.samplings
             if _applicable(v, n, s)]  # fmt: skip
    if not runs:
        return  # the library's "nothing to replay" names the whole grid
    for field, flag, index in (("verifiers", "--verifiers", 0), ("ns", "--n", 1),
                               ("samplings", "--samplings", 2)):  # fmt: skip
        if field not in given:
            continue
        unused = [x for x in getattr(grid, field) if all(r[index] != x for r in runs)]
        if unused:
            raise InvalidParameterError(
                f"{flag} {' '.join(map(str, unused))}: no configuration of the grid uses it "
                f"(verifiers {' '.join(grid.verifiers)}; n {' '.join(map(str, grid.ns))}; draft "
                f"laws {' '.join(grid.samplings)}: each verifier runs only on the n and laws it "
                "supports)"
            )
