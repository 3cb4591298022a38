"""Hand-fed uniforms: known-answer verifier runs, computed by hand (no tests here).

Each case fixes ``p``, ``q``, the drafts and the uniforms, and states the token
every backend must return (tests/test_handfed.py: the coins reference, the numba
kernels, the torch verifiers; tests/triton_handfed.py: the Triton kernels under
the interpreter).  The uniforms are chosen to walk one named path of the
verifier: accept at once, reject then accept a later draft, repeated drafts
(each must read its own coin), two rejections then the residual, and drafted
tokens of draft probability 0 (rejected whatever the coin).  Every uniform is
at least 0.005 away from the decision boundary it tests, so the answers do not
depend on rounding.

Worked numbers: docs/theory.md §8.1 (``p = [.3, .4, .3]``, ``q = [.6, .3, .1]``):

* ``sd`` at token 0 accepts with probability 1/2; its residual is ``[0, 1/3, 2/3]``.
* ``rrs``: ``r_2 = [0, 1/3, 2/3]``, ``r_3 = norm((r_2 - q)_+) = [0, 1/18, 17/18]``;
  a repeated draft 0 has ``r_2(0) = 0``: rejected even at ``u = 0``.
* ``rrs_wor``: ``q_2 = [0, 3/4, 1/4]``, token 1 accepted with probability 4/9.
* ``kseq`` (``n = 2``): :math:`\\rho^* = 7/5`, each copy of token 0 accepted with
  probability ``0.3 / (1.4 * 0.6) = 5/14``; residual
  ``norm(p - 1.4 min(q, p/1.4)) = [0, 0, 1]``.
* ``greedy`` (``n = 2``): ``T = {0}``, :math:`\\tilde q = [0, 3/4, 1/4]`, token 1 accepted
  with probability 8/15, residual ``[6/7, 0, 1/7]``.
* ``spechub`` (hub ``a = 0``): pair ``(i, a)`` if ``u_0 < 1 - q(a) = 0.4``; there ``i``
  is accepted with ``min(1, p(i)/q(i))``.  Pair ``(a, i)``: ``p_1 = [0, .1, .2]``,
  ``Q_ai = [0, .45, .15]``, token 1 accepted with 2/9, then the hub with
  ``p(a) / sum e_ai = .3 / .35 = 6/7``; the final law is ``[0, 0, 1]``.
* ``nss`` (point mass): token 0 with 0.3; then ``[0, 4/7, 3/7]``, a repeated 0
  reads no coin, token 1 with 4/7; then ``[0, 0, 1]``.
* ``optimal`` (``n = 2``, i.i.d.): :math:`H^* = \\{0, 1\\}` (:math:`\\alpha^* = 0.7 + 1 - 0.81
  = 0.89`), ``T = {2}``.  On ``T``: ``y_2 = f(T) = 1 - 0.9^2 = 0.19 < p_2``, accepted
  always.  On :math:`H^*` (order 1 then 0): ``y = max(p, c' q)`` with ``y(H) = 0.81``,
  so ``y_1 = 0.4``, ``y_0 = 0.41``; the mixture is tiers ``{1} | {0}`` with weight
  13/18 (``u_0 < 0.722``: token 1 whenever drafted) and one tier ``{1, 0}`` with
  5/18 (the first draft); token 0 accepted with ``0.3/0.41 = 30/41 = 0.732``; the
  residual ``norm((p - y)_+) = [0, 0, 1]``.  With ``P_Y``, ``Q_Y``: ``y = [0, 0.81,
  0.19]``, residual ``[20/51, 0, 31/51]``; a ``q = 0`` draft is never selected.
* ``pair_scores``, and ``optimal`` with two drafts without replacement (docs/theory.md
  §3.15): :math:`H^* = \\{0, 1\\}`, ``T = {2}``; the pairs have probability
  ``M_01 = 0.18 (1/0.4 + 1/0.7) = 99/140``, ``M_02 = 13/60``, ``M_12 = 8/105``.  A pair
  meeting ``T`` selects 2: ``y_2 = M_02 + M_12 = 41/140 < p_2``, accepted always.  The pair
  ``{0, 1}`` selects 0 with ``w(mu_0 - mu_1) = 43/99`` (scores ``mu = (0, 13/99, 0)``), so
  ``y_0 = 43/140``, ``y_1 = 56/140 = p_1``: token 0 accepted with ``42/43 = 0.977``, token
  1 always; residual ``[0, 0, 1]``.  The first coin ``u_0`` selects the first draft below
  its weight (1 or 0 when one draft is in ``T``).  With ``P_Y``, ``Q_Y``: the only pair is
  ``{1, 2}``, a fair coin, ``y = [0, 1/2, 1/2]``, residual ``[1, 0, 0]``; a ``q = 0`` draft
  selected is rejected (``y = 0``).  With ``P_Z``, ``Q_Z``: ``T = {0, 1}``, so the ``q = 0``
  draft 2 is never selected against a token of ``T``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

P = np.array([0.3, 0.4, 0.3])
Q = np.array([0.6, 0.3, 0.1])
#: ``x = 2`` has q = 0 and p = 0: accepting it would emit a token the target never emits.
P_Z = np.array([0.5, 0.5, 0.0])
Q_Z = np.array([0.5, 0.5, 0.0])
#: ``x = 0`` has q = 0 < p: rejected, the residual [1/3, 0, 2/3] is drawn.
P_Y = np.array([0.2, 0.3, 0.5])
Q_Y = np.array([0.0, 0.9, 0.1])


class Case(NamedTuple):
    """One hand-computed run: ``name(p, q, drafts, u) == token``."""

    label: str
    name: str
    sampling: str
    p: np.ndarray
    q: np.ndarray
    drafts: tuple
    u: tuple
    token: int
    #: The drafts have probability 0 under ``sampling`` (validation refuses them).
    invalid: bool = False


CASES = [
    # sd / naive: accept, reject then residual.
    Case("sd accept", "sd", "iid", P, Q, (0,), (0.4, 0.9), 0),
    Case("sd residual low", "sd", "iid", P, Q, (0,), (0.6, 0.1), 1),
    Case("sd residual high", "sd", "iid", P, Q, (0,), (0.6, 0.5), 2),
    Case("sd p > q accepts at the top coin", "sd", "iid", P, Q, (2,), (0.999, 0.0), 2),
    # u = 0 on the residual [0, 1/3, 2/3]: u < cumsum is strict, so token 0 (mass 0) is skipped.
    Case("sd residual at u = 0", "sd", "iid", P, Q, (0,), (0.6, 0.0), 1),
    Case("naive residual lands on draft 2", "naive", "iid", P, Q, (0, 2), (0.6, 0.5), 2),
    # rrs: past a first rejection; repeated drafts.
    Case("rrs reject, accept 2nd", "rrs", "iid", P, Q, (0, 2), (0.7, 0.3, 0.0), 2),
    Case("rrs reject, accept 2nd (p>q)", "rrs", "iid", P, Q, (0, 1), (0.7, 0.95, 0.0), 1),
    Case("rrs repeated, r3 low", "rrs", "iid", P, Q, (0, 0), (0.7, 0.0, 0.05), 1),
    Case("rrs repeated, r3 high", "rrs", "iid", P, Q, (0, 0), (0.7, 0.0, 0.06), 2),
    Case("rrs repeated accepted", "rrs", "iid", P, Q, (0, 0), (0.2, 0.0, 0.99), 0),
    # rrs_wor: q_2 moves.
    Case("rrs_wor accept 2nd", "rrs_wor", "without_replacement", P, Q, (0, 1), (0.9, 0.44, 0.0), 1),
    Case("rrs_wor residual", "rrs_wor", "without_replacement", P, Q, (0, 1), (0.9, 0.45, 0.0), 2),
    Case(
        "rrs_wor 3 drafts",
        "rrs_wor",
        "without_replacement",
        P,
        Q,
        (0, 1, 2),
        (0.9, 0.5, 0.1, 0.9),
        2,
    ),
    # kseq: repeated drafts read one coin each.
    Case("kseq repeated, 2nd copy", "kseq", "iid", P, Q, (0, 0), (0.5, 0.3, 0.9), 0),
    Case("kseq repeated, residual", "kseq", "iid", P, Q, (0, 0), (0.5, 0.5, 0.3), 2),
    Case("kseq first", "kseq", "iid", P, Q, (0, 1), (0.2, 0.99, 0.5), 0),
    Case("kseq reject, accept 2nd", "kseq", "iid", P, Q, (0, 1), (0.9, 0.5, 0.5), 1),
    # greedy (Hu et al.).
    Case("greedy accept", "greedy", "greedy", P, Q, (0, 1), (0.5, 0.0), 1),
    Case("greedy residual high", "greedy", "greedy", P, Q, (0, 1), (0.9, 0.95), 2),
    Case("greedy residual on T", "greedy", "greedy", P, Q, (0, 1), (0.9, 0.5), 0),
    # spechub: both pair types, two rejections.
    Case("spechub (i, a) accept i", "spechub", "greedy", P, Q, (0, 1), (0.2, 0.99, 0.0, 0.0), 1),
    Case("spechub (a, i) accept i", "spechub", "greedy", P, Q, (0, 1), (0.5, 0.2, 0.99, 0.0), 1),
    Case("spechub (a, i) hub", "spechub", "greedy", P, Q, (0, 1), (0.5, 0.5, 0.5, 0.0), 0),
    Case("spechub (a, i) residual", "spechub", "greedy", P, Q, (0, 1), (0.5, 0.5, 0.9, 0.3), 2),
    # nss: duplicates read no coin.
    Case("nss dup, accept 1", "nss", "iid", P, Q, (0, 0, 1), (0.5, 0.5, 0.0, 0.0), 1),
    Case("nss dup, residual", "nss", "iid", P, Q, (0, 0, 1), (0.5, 0.6, 0.3, 0.99), 2),
    # optimal (n = 2): component u0, accept coin u1, residual u2; one draft is sd.
    Case("optimal T met, accepted", "optimal", "iid", P, Q, (0, 2), (0.5, 0.99, 0.0), 2),
    Case("optimal tiers {1}|{0}", "optimal", "iid", P, Q, (0, 1), (0.5, 0.99, 0.0), 1),
    Case("optimal one tier, accept 0", "optimal", "iid", P, Q, (0, 1), (0.9, 0.7, 0.0), 0),
    Case("optimal one tier, residual", "optimal", "iid", P, Q, (0, 1), (0.9, 0.75, 0.0), 2),
    Case("optimal repeated 0, residual", "optimal", "iid", P, Q, (0, 0), (0.1, 0.8, 0.0), 2),
    Case("optimal one draft is sd", "optimal", "iid", P, Q, (0,), (0.6, 0.1), 1),
    # pair_scores and optimal, two drafts without replacement: selection u0, accept u1,
    # residual u2.
    *(case
      for name in ("pair_scores", "optimal")
      for case in (
          Case(f"{name} only b in T", name, "without_replacement", P, Q, (0, 2),
               (0.0, 0.99, 0.0), 2),
          Case(f"{name} only a in T", name, "without_replacement", P, Q, (2, 0),
               (0.99, 0.99, 0.0), 2),
          Case(f"{name} ramp selects a, accepted", name, "without_replacement", P, Q, (0, 1),
               (0.43, 0.97, 0.0), 0),
          Case(f"{name} ramp selects a, residual", name, "without_replacement", P, Q, (0, 1),
               (0.43, 0.98, 0.5), 2),
          Case(f"{name} ramp selects b", name, "without_replacement", P, Q, (0, 1),
               (0.44, 0.99, 0.0), 1),
          Case(f"{name} ramp reversed order", name, "without_replacement", P, Q, (1, 0),
               (0.56, 0.99, 0.0), 1),
          Case(f"{name} q=0 selected, rejected", name, "without_replacement", P_Y, Q_Y,
               (0, 1), (0.0, 0.0, 0.5), 0, True),
          Case(f"{name} q=0 not selected", name, "without_replacement", P_Z, Q_Z, (2, 1),
               (0.0, 0.0, 0.0), 1, True),
      )),
    # A drafted token of draft probability 0 is rejected even at u = 0.
    Case("optimal q=0 skipped", "optimal", "iid", P_Y, Q_Y, (0, 1), (0.0, 0.0, 0.5), 1, True),
    Case("optimal q=0 only", "optimal", "iid", P_Y, Q_Y, (0, 0), (0.0, 0.0, 0.5), 2, True),
    Case("sd q=0 p=0", "sd", "iid", P_Z, Q_Z, (2,), (0.0, 0.7), 1, True),
    Case("sd q=0 p>0", "sd", "iid", P_Y, Q_Y, (0,), (0.0, 0.5), 2, True),
    Case("naive q=0", "naive", "iid", P_Y, Q_Y, (0, 1), (0.0, 0.5), 2, True),
    Case("rrs q=0 then accept", "rrs", "iid", P_Z, Q_Z, (2, 1), (0.0, 0.0, 0.0), 1, True),
    Case("rrs q=0 p>0", "rrs", "iid", P_Y, Q_Y, (0, 1), (0.0, 0.0, 0.9), 2, True),
    Case(
        "rrs_wor q=0",
        "rrs_wor",
        "without_replacement",
        P_Y,
        Q_Y,
        (0, 2),
        (0.0, 0.999, 0.1),
        2,
        True,
    ),
    Case("kseq q=0", "kseq", "iid", P_Z, Q_Z, (2, 2), (0.0, 0.0, 0.7), 1, True),
    # greedy / spechub with the hub a = 0 and i = 2 (q = 0, p = 0); q_tilde = [0, 1, 0].
    Case("greedy q=0", "greedy", "greedy", P_Z, Q_Z, (0, 2), (0.0, 0.5), 0, True),
    # (i, a): i rejected; p_2(a) = 0 and sum e_ia = 0: the hub too; final law empty -> p_Z.
    Case(
        "spechub q=0 (i, a)", "spechub", "greedy", P_Z, Q_Z, (0, 2), (0.0, 0.0, 0.999, 0.7), 1, True
    ),
    # (a, i): i rejected (Q_ai(i) = 0); the hub accepted, p(a) / sum e_ai = 1.
    Case(
        "spechub q=0 (a, i)",
        "spechub",
        "greedy",
        P_Z,
        Q_Z,
        (0, 2),
        (0.95, 0.0, 0.999, 0.1),
        0,
        True,
    ),
]


#: Chain rounds (``sd`` at every position; tests/torch_oracles.py): p (gamma+1, V), q (gamma, V).
class ChainCase(NamedTuple):
    label: str
    p: np.ndarray
    q: np.ndarray
    x: tuple
    u: tuple
    tokens: tuple
    passed: int
    emitted: int


CHAIN_CASES = [
    # Accept 0 (u = .25 < .5), reject 0 (.75), residual [0, .5, .5] at .5 -> 2 (§8.1).
    ChainCase(
        "reject at 2",
        np.array([P] * 3),
        np.array([Q] * 2),
        (0, 0),
        (0.25, 0.75, 0.5),
        (0, 2, -1),
        1,
        1,
    ),
    # Accept both (p > q at token 2), bonus from p at .5 -> 1.
    ChainCase(
        "bonus", np.array([P] * 3), np.array([Q] * 2), (0, 2), (0.4, 0.999, 0.5), (0, 2, 1), 2, 2
    ),
    # Reject at 1; position 2 would pass on its own (counted, not emitted).
    ChainCase(
        "count past rejection",
        np.array([P] * 3),
        np.array([Q] * 2),
        (0, 2),
        (0.6, 0.3, 0.1),
        (1, -1, -1),
        1,
        0,
    ),
    # q = 0 at both drafts: rejected at u = 0; residual of p_Z - q_Z is empty: p_Z at .7 -> 1.
    ChainCase(
        "q=0 p=0",
        np.array([P_Z] * 3),
        np.array([Q_Z] * 2),
        (2, 2),
        (0.0, 0.7, 0.0),
        (1, -1, -1),
        0,
        0,
    ),
    # Accept 1 (p/q = 1/3 > u = .1), then q = 0 < p at token 0: residual [1/3, 0, 2/3] at .5 -> 2.
    ChainCase(
        "q=0 p>0 at 2",
        np.array([P_Y] * 3),
        np.array([Q_Y] * 2),
        (1, 0),
        (0.1, 0.0, 0.5),
        (1, 2, -1),
        1,
        1,
    ),
]
