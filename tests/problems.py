"""Known-answer problems for the optimal acceptance, each with the source of its answer.

Every problem is run through every method of ``solve_bound`` in
``tests/solvers/test_ot_dual.py``.  Values are exact rationals.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction as F

import numpy as np


def exact(*xs):
    return np.array([F(x) for x in xs], dtype=object)


@dataclass(frozen=True)
class Problem:
    name: str
    target: np.ndarray  # Fraction object array
    draft: np.ndarray
    n: int
    sampling: str
    value: F
    certificate: tuple | None  # token ids of an optimal H, where the source names it
    source: str


A_P = exact(F(3, 10), F(4, 10), F(3, 10))
A_Q = exact(F(6, 10), F(3, 10), F(1, 10))
ROW1 = (exact(F(309, 500), F(177, 500), F(7, 250)), exact(F(373, 1000), F(29, 50), F(47, 1000)))
ROW2 = (exact(F(469, 1000), F(31, 250), F(407, 1000)), exact(F(201, 1000), F(11, 40), F(131, 250)))
ROW3 = (
    exact(F(37, 250), F(21, 500), F(149, 200), F(1, 20), F(3, 200)),
    exact(F(62, 125), F(17, 125), F(151, 1000), F(1, 125), F(209, 1000)),
)
UNIFORM4 = exact(*([F(1, 4)] * 4))
POINT2 = exact(0, 0, 1, 0)  # all target mass on token 2

PROBLEMS = [
    Problem("A n=1", A_P, A_Q, 1, "iid", F(7, 10), (0,), "docs/theory.md §8.1: sum min(p, q)"),
    Problem("A iid n=2", A_P, A_Q, 2, "iid", F(89, 100), (0, 1), "docs/theory.md §8.1"),
    Problem("A iid n=3", A_P, A_Q, 3, "iid", F(971, 1000), (0, 1), "docs/theory.md §8.1"),
    Problem(
        "A wor n=2", A_P, A_Q, 2, "without_replacement", F(139, 140), (0, 1), "docs/theory.md §8.1"
    ),
    Problem("A wor n=3", A_P, A_Q, 3, "without_replacement", F(1), None, "docs/theory.md §8.1"),
    Problem("A greedy n=2", A_P, A_Q, 2, "greedy", F(19, 20), None, "docs/theory.md §8.1"),
    Problem("A greedy n=3", A_P, A_Q, 3, "greedy", F(1), None, "docs/theory.md §8.1"),
    Problem("8.2 row 1", *ROW1, 2, "iid", F(988871, 1000000), (1, 2), "docs/theory.md §8.2"),
    Problem("8.2 row 1 greedy", *ROW1, 2, "greedy", F(1), None, "docs/theory.md §8.2"),
    Problem("8.2 row 2", *ROW2, 3, "iid", F(1), None, "docs/theory.md §8.2"),
    Problem("8.2 row 2 greedy", *ROW2, 3, "greedy", F(1), None, "docs/theory.md §8.2"),
    Problem(
        "8.2 row 3",
        *ROW3,
        3,
        "without_replacement",
        F(4440878158613, 5062093092000),
        (0, 1, 4),
        "docs/theory.md §8.2",
    ),
    # Elementary instances, answers derived by hand.
    Problem("identical", A_Q, A_Q, 2, "iid", F(1), None, "p = q: every draft can be kept"),
    Problem(
        "disjoint",
        exact(F(1, 2), F(1, 2), 0, 0),
        exact(0, 0, F(1, 3), F(2, 3)),
        3,
        "iid",
        F(0),
        None,
        "disjoint supports: no draft can be the output",
    ),
    Problem(
        "point target, iid",
        POINT2,
        UNIFORM4,
        3,
        "iid",
        1 - F(3, 4) ** 3,
        None,
        "alpha* = P(token 2 is drafted) = 1 - (3/4)^3",
    ),
    Problem(
        "point target, wor",
        POINT2,
        UNIFORM4,
        3,
        "without_replacement",
        F(3, 4),
        None,
        "alpha* = P(token 2 is drafted) = n/V",
    ),
    Problem(
        "point target, greedy",
        POINT2,
        UNIFORM4,
        2,
        "greedy",
        F(1, 3),
        None,
        "T = {0} (ties to the lowest id); the last draft is token 2 w.p. 1/3",
    ),
    Problem(
        "one-hot draft",
        exact(F(1, 5), F(3, 5), F(1, 5)),
        exact(0, 1, 0),
        4,
        "iid",
        F(3, 5),
        None,
        "temperature-0 draft: every draft is token 1, so alpha* = p(1)",
    ),
]
