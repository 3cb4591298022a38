"""Planted replay tables: a draft whose support has 2 tokens on the first half of the positions."""

from __future__ import annotations


def planted_replay(positions, draft, acceptance_offset=0.0):
    """Replay rows (``spectheory.sim.replay.COLUMNS``) for n = 1, 2, i.i.d. and without replacement.

    i.i.d. is replayed everywhere: alpha* = 0.2 on the first half of the positions and 0.9 on
    the rest; without replacement at n = 2 only on the first half (the draft's support has 2
    tokens there), where it beats i.i.d. by 0.01 position by position.  Averaged over their own
    positions the two would read 0.21 against 0.55: the order the theory forbids.  The exact
    and Monte Carlo acceptances are the bound plus ``acceptance_offset``.
    """
    half = positions // 2
    rows = []
    for n in (1, 2):
        for law in ("iid", "without_replacement"):
            for i in range(positions):
                if law != "iid" and n == 2 and i >= half:
                    continue
                b = (0.2 if i < half else 0.9) + (0.01 if law != "iid" and n == 2 else 0.0)
                a = b + acceptance_offset
                rows.append({
                    "position": i, "prompt_id": 0, "step": i, "draft": draft,
                    "temperature": 1.0, "n": n, "sampling": law, "verifier": "rrs",
                    "lossless": True, "bound": b, "exact": a, "mc": a,
                    "mc_low": 0.0, "mc_high": 1.0, "trials": 10, "chi2_p": 0.5, "impossible": 0,
                    "pit_mean": 0.5,
                })  # fmt: skip
    return rows
