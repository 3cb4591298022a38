"""Logs of speculative samplers, correct and buggy, for the audit tests and benchmark.

Every row gets its own random target and draft (peaked, LM-like: softmax of
normals times ``scale``, the draft a noisy copy of the target), so rows
differ as positions of a real run do.  Vectorised over rows.

With ``positions=M`` the rows cycle through ``M`` distinct (p, q) pairs, as
when an engine is run many times on the same positions (per-position tests).

* ``chain_log(rng, N, bug=None)``: a correct chain sampler (Leviathan et
  al., arXiv:2211.17192): draft x ~ q, accept with probability
  min(1, p(x)/q(x)), else emit from norm((p - q)+); a round of ``gamma``
  drafts ends at the first rejection, or with a bonus token from p (a row
  without drafts) when all are accepted.
* ``bug="recorded_q"`` (b): a greedy drafter (x = argmax q) whose log and
  acceptance test use the softmax q: the recorded q is not the law the
  draft was sampled from (docs/theory.md §7.5, "draft law used ≠ law sampled").
* ``bug="mismatched_q"`` (c): the draft is sampled at temperature 1/2,
  q' = norm(q^2), and the log records q', but the acceptance test and the
  residual use q.
* ``multidraft_log(rng, N, dedup=True)`` (d): recursive rejection sampling
  with ``n`` i.i.d. drafts (SpecInfer, arXiv:2305.09781) that skips a
  repeated draft without updating the residual (docs/theory.md §7.5, P1).
"""

from __future__ import annotations

import numpy as np

from spectheory.sim.samplelog import as_sample_log

BUGS = (None, "recorded_q", "mismatched_q")


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _pairs(rng, N, V, scale, noise, positions=None):
    """N rows of (p, q); with ``positions``, that many distinct pairs in cyclic order."""
    M = N if positions is None else positions
    p = _softmax(rng.standard_normal((M, V)) * scale)
    q = _softmax(np.log(p) + rng.standard_normal((M, V)) * noise)
    idx = np.arange(N) % M
    return p[idx], q[idx]


def _categorical(rng, probs):
    c = np.cumsum(probs, axis=1)
    u = rng.random(probs.shape[0]) * c[:, -1]
    return np.minimum((c <= u[:, None]).sum(axis=1), probs.shape[1] - 1)


def _residual(p, q):
    r = np.maximum(p - q, 0.0)
    s = r.sum(axis=1, keepdims=True)
    return np.where(s > 0, r / np.where(s > 0, s, 1.0), p)


def chain_log(rng, N, V=8, gamma=3, scale=1.5, bug=None, positions=None):
    """A chain sampler's log of ``N`` rows (rounds of up to ``gamma`` drafts, bonus rows)."""
    if bug not in BUGS:
        raise ValueError(f"bug must be one of {BUGS}; got {bug!r}")
    p, q = _pairs(rng, N, V, scale, 0.7 * scale, positions)
    rows = np.arange(N)
    if bug == "recorded_q":
        x = q.argmax(axis=1)
    elif bug == "mismatched_q":
        x = _categorical(rng, q * q)
    else:
        x = _categorical(rng, q)
    accept = rng.random(N) < np.minimum(1.0, p[rows, x] / q[rows, x])
    y = np.where(accept, x, _categorical(rng, _residual(p, q)))
    bonus_y = _categorical(rng, p)
    logged_q = q * q / (q * q).sum(axis=1, keepdims=True) if bug == "mismatched_q" else q
    drafts = x.copy()
    rnd = np.empty(N, dtype=np.int64)
    k, depth = 0, 0
    for i in range(N):  # rounds: end at a rejection or after the bonus row
        rnd[i] = k
        if depth == gamma:
            drafts[i], y[i] = -1, bonus_y[i]
            k, depth = k + 1, 0
        elif accept[i]:
            depth += 1
        else:
            k, depth = k + 1, 0
    return as_sample_log(p, logged_q, drafts[:, None], y, rnd)


def multidraft_log(rng, N, V=5, n=3, scale=1.0, noise=2.0, dedup=False, positions=None):
    """Recursive rejection sampling with ``n`` i.i.d. drafts per row (one row per node).

    The draft is sharper than the target (``noise`` > ``scale``), so drafts repeat often.
    """
    p, q = _pairs(rng, N, V, scale, noise, positions)
    rows = np.arange(N)
    drafts = np.stack([_categorical(rng, q) for _ in range(n)], axis=1)
    r = p.copy()
    y = np.full(N, -1)
    for j in range(n):
        x = drafts[:, j]
        active = y < 0
        if dedup:  # the bug: a repeated draft is skipped, the residual not updated
            active &= ~(drafts[:, :j] == x[:, None]).any(axis=1)
        acc = active & (rng.random(N) < np.minimum(1.0, r[rows, x] / q[rows, x]))
        y[acc] = x[acc]
        upd = active & ~acc
        r[upd] = _residual(r[upd], q[upd])
    rest = y < 0
    y[rest] = _categorical(rng, r[rest])
    return as_sample_log(p, q, drafts, y)
