"""Exact solvers: the optimal-transport dual (:func:`bound`) and its independent oracles."""

from .ot_dual import METHODS, BoundResult, bound, greedy_value, ratio_order, solve_bound

__all__ = ["METHODS", "BoundResult", "bound", "greedy_value", "ratio_order", "solve_bound"]
