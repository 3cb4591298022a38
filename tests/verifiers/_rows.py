"""Peaked random rows for the full-vocabulary checks (no recorded trace needed)."""

from __future__ import annotations

import numpy as np


def peaked_pair(V, seed):
    """Target logits ~ 3 N(0, 1) (a few tokens carry most mass, as real next-token
    rows) and the draft's logits perturbed by N(0, 1); each of shape (1, V)."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((1, V)) * 3.0
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    ql = logits + rng.standard_normal((1, V))
    q = np.exp(ql - ql.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    return p, q
