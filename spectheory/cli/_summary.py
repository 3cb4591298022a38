"""The means that ``spectheory replay`` and ``spectheory sweep`` print, on common positions."""

from __future__ import annotations

__all__ = ["print_means"]


def print_means(table, grid=None, drafts=None) -> None:
    """Print the mean bound (and exact and Monte Carlo acceptance) per configuration.

    Means are over the positions replayed under every draft law and every n of
    a draft and temperature (:func:`spectheory.sim.replay.common_positions`):
    without replacement and greedy need n tokens of support, and averages over
    different positions can show orders the theory forbids (without
    replacement below i.i.d., alpha* falling with n).  The count is printed
    beside each mean, and a footer names the drafts that lost positions.  With the
    ``grid`` asked for (a :class:`spectheory.sim.SweepGrid`; ``drafts`` for its default
    of every draft), a second footer names the configurations that have no row at all:
    no position has the ``n`` tokens of draft support their law needs (a one-hot draft
    at T = 0 has one), so the table has nothing for them.
    """
    import numpy as np

    from ..sim.replay import common_positions

    if not table:
        return
    common = common_positions(table)
    groups: dict = {}
    for r in table:
        if int(r["position"]) not in common[(r["draft"], r["temperature"], r["n"])]:
            continue
        key = (r["draft"], r["temperature"], r["n"], r["sampling"], r.get("verifier", "-"))
        groups.setdefault(key, []).append(r)
    has_exact, has_mc = "exact" in table[0], "mc" in table[0]
    print(f"{'draft':<9}{'T':>5}{'n':>3} {'law':<20}{'verifier':<9}{'bound':>7}"
          + (f"{'exact':>7}" if has_exact else "") + f"{'mc':>7}{'positions':>10}")  # fmt: skip
    for (d, t, n, law, v), rows in groups.items():
        cells = f"{np.mean([r['bound'] for r in rows]):7.3f}"
        if has_exact:
            exact = [r["exact"] for r in rows if r["exact"] == r["exact"]]
            cells += f"{np.mean(exact):7.3f}" if exact else f"{'-':>7}"
        cells += f"{np.mean([r['mc'] for r in rows]):7.3f}" if has_mc else f"{'-':>7}"
        print(f"{d:<9}{t:>5}{n:>3} {law:<20}{v:<9}{cells}{len(rows):>10}")
    replayed = len({int(r["position"]) for r in table})
    per_draft = {(d, t): len(v) for (d, t, _), v in common.items()}  # the same set for every n
    fewer = [f"{d}, T = {t:g}: {c} of {replayed}" for (d, t), c in sorted(per_draft.items())
             if c < replayed]  # fmt: skip
    if fewer:
        print("means over the positions replayed under every law and n of that draft and T "
              "(the table keeps every row): " + "; ".join(fewer))  # fmt: skip
    if grid is not None:
        _print_missing(table, grid, drafts)


def _print_missing(table, grid, drafts) -> None:
    """Name the configurations of ``grid`` with a verifier to run but no row in ``table``."""
    from ..sim.replay import _applicable

    present = {(r["draft"], r["temperature"], r["n"], r["sampling"]) for r in table}
    with_verifiers = "verifier" in table[0]
    missing: dict = {}
    for d in grid.drafts or drafts or dict.fromkeys(r["draft"] for r in table):
        for t in grid.temperatures:
            for n in grid.ns:
                for law in grid.samplings:
                    if with_verifiers and not any(_applicable(v, n, law) for v in grid.verifiers):
                        continue  # no verifier takes it: not asked for
                    if (d, t, n, law) not in present:
                        missing.setdefault((d, t), []).append(f"n = {n} {law}")
    if missing:
        print("no rows (no position has the n tokens of draft support the law needs): "
              + "; ".join(f"{d}, T = {t:g}: {', '.join(c)}" for (d, t), c in missing.items()))
