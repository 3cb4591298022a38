"""``optimal`` with three or more drafts without replacement (the priority-coin rule).

Oracles: the coins reference run with ``ReplayCoins``; the numba kernel and the torch form
must return its token for the same uniforms (exactly: they share the plan's tables and
compute the selection weights with the same float operations in the same order); the
checker (false-alarm rate 1e-6 per test) at V = 49,152; exact enumeration of the coins.
"""

from __future__ import annotations

import numpy as np
import pytest

from spectheory.coins import ReplayCoins
from spectheory.sim._kernels import run_verifier
from spectheory.solvers.ot_dual import bound
from spectheory.verifiers.optimal import optimal
from spectheory.verifiers.priority_coins import coin_plan, priority_coins, select_by_priority

from ._rows import peaked_pair

WOR = "without_replacement"


def _rows(seed, B, V):
    rng = np.random.default_rng(seed)
    lp = 2.0 * rng.standard_normal((B, V))
    lq = lp + rng.standard_normal((B, V))
    p = np.exp(lp)
    q = np.exp(lq)
    return rng, p / p.sum(1, keepdims=True), q / q.sum(1, keepdims=True)


def _drafts(rng, q, T, n):
    B, V = q.shape
    out = np.empty((B, T, n), dtype=np.int64)
    for b in range(B):
        for t in range(T):
            out[b, t] = rng.choice(V, n, replace=False, p=q[b])
    return out


@pytest.mark.parametrize("n", [3, 4, 6])
def test_kernel_and_reference_give_the_same_token(n):
    rng, p, q = _rows(n, 3, 200)
    T = 300
    drafts = _drafts(rng, q, T, n)
    u = rng.random((3, T, 3))
    u[:, : T // 4] = rng.choice([0.0, 0.5, 1.0 - 2.0**-40], size=(3, T // 4, 3))
    out = run_verifier("optimal", p, q, drafts, u, sampling=WOR)
    for b in range(3):
        for t in range(T):
            ref = optimal(p[b], q[b], tuple(drafts[b, t]), ReplayCoins(u[b, t]), sampling=WOR)
            assert ref == out[b, t], (b, t)


def test_torch_form_gives_the_reference_token():
    torch = pytest.importorskip("torch")
    from spectheory.torch import verify

    for n in (3, 5):
        rng, p, q = _rows(10 + n, 1, 150)
        T = 400
        drafts = _drafts(rng, q, T, n)[0]
        u = rng.random((T, 3))
        u[: T // 4] = rng.choice([0.0, 0.5, 1.0 - 2.0**-40], size=(T // 4, 3))
        tokens = verify("optimal", torch.from_numpy(np.repeat(p, T, 0)),
                        torch.from_numpy(np.repeat(q, T, 0)), torch.from_numpy(drafts),
                        uniforms=torch.from_numpy(u), sampling=WOR).tokens.numpy()
        ref = [optimal(p[0], q[0], tuple(drafts[t]), ReplayCoins(u[t]), sampling=WOR)
               for t in range(T)]
        assert tokens.tolist() == ref
    # drafts of q = 0 (unvalidated input): never selected, as by the reference
    from spectheory.torch.verifiers import optimal_torch

    p = np.array([0.1, 0.2, 0.3, 0.15, 0.15, 0.1])
    q = np.array([0.0, 0.0, 0.0, 0.4, 0.3, 0.3])
    d = np.array([[0, 1, 2], [0, 4, 1], [3, 0, 5]])
    u = np.array([[0.3, 0.0, 0.5], [0.99, 0.0, 0.5], [0.2, 0.7, 0.9]])
    ref = [optimal(p, q, tuple(d[i]), ReplayCoins(u[i]), sampling=WOR) for i in range(3)]
    got = optimal_torch(torch.from_numpy(np.tile(p, (3, 1))), torch.from_numpy(np.tile(q, (3, 1))),
                        torch.from_numpy(d), torch.from_numpy(u), sampling=WOR)
    assert got.tolist() == ref


def test_selection_follows_the_part_order_and_coins():
    """Hand-checked selection: the drafts in T first; by rank, the first coin that succeeds,
    else the last; one categorical draw whatever the case."""
    p, q = np.array([0.4, 0.3, 0.2, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
    plan = coin_plan(p, q, 3)
    part_of = {a: bool(plan.preferred[a]) for a in range(4)}
    drafts = (0, 1, 2)
    inside = [a for a in drafts if part_of[a]] or list(drafts)
    assert plan.weights.tolist() == [1.0]  # one rule, no mixture
    ordered = sorted(inside, key=lambda a: plan.rank[0, a])
    first = ordered[0]
    k = float(plan.kappa[0, first])
    assert 0.0 < k < 1.0  # a coin that can fail: both branches below are real
    coins = ReplayCoins([k / 2])
    assert select_by_priority(plan, drafts, coins) == first and coins.position == 1
    coins = ReplayCoins([1.0 - 2.0**-40])
    assert select_by_priority(plan, drafts, coins) == ordered[-1] and coins.position == 1


def test_q_zero_drafts_are_never_selected_by_any_form():
    """Without validation a draft with q = 0 has no rank: never selected; with every draft so,
    the selection coin still turns and the residual is read from the third uniform."""
    p = np.array([0.1, 0.2, 0.3, 0.15, 0.15, 0.1])
    q = np.array([0.0, 0.0, 0.0, 0.4, 0.3, 0.3])
    plan = coin_plan(p, q, 3)
    assert plan.rank[0, :3].tolist() == [-1, -1, -1]
    u = np.array([0.3, 0.0, 0.5])
    want = int(np.searchsorted(np.cumsum(plan.residual), 0.5, side="right"))
    ref = priority_coins(p, q, (0, 1, 2), ReplayCoins(u))
    assert ref == want
    # one ranked draft among them: it is the only one selectable
    assert select_by_priority(plan, (0, 4, 1), ReplayCoins([0.99])) == 4
    out = run_verifier("optimal", p[None], q[None], np.array([[[0, 1, 2]]]), u[None, None],
                       sampling=WOR)
    assert out[0, 0] == want


def test_lossless_and_at_the_bound_at_full_vocabulary():
    """V = 49,152 peaked rows, four drafts without replacement: the checker (law test and
    bound test, false-alarm rate 1e-6 each) finds the verifier lossless and its acceptance
    at the bound; the plan certifies the rows reach it."""
    from spectheory.sim.check import check_lossless

    p, q = peaked_pair(49_152, seed=23)
    report = check_lossless(optimal, p, q, n=4, sampling=WOR, trials=3000, rng=2)
    assert not report.lossy and not report.exceeds_bound
    np.testing.assert_allclose(report.bound, bound(p, q, 4, WOR).mean(), rtol=0, atol=1e-12)
    assert coin_plan(p[0], q[0], 4).reached


def _deficit_coins():
    """Coins (k0, k1, 1, k3) whose selection weights, in float64, sum to at most the largest
    uniform 1 - 2**-53, the fourth weight being 0 (found by a seeded search)."""
    from spectheory.solvers.priority_coins import selection_weights

    rng = np.random.default_rng(0)
    for _ in range(100_000):
        k = [float(rng.random()), float(rng.random()), 1.0, 0.5]
        total = 0.0
        for w in selection_weights(k):
            if w > 0:
                total += w
        if total < 1.0:  # so at most 1 - 2**-53: u = 1 - 2**-53 is not below it
            return k
    raise AssertionError("no rounding deficit found")


def test_every_form_selects_alike_on_edge_coins_and_uniforms():
    """A hand-made plan, the same for the three forms: coins 1/2 with a uniform on a partial
    sum (u = 1/2 lies on the first one: the second draft, as u < acc is strict); coins whose
    weights sum below the uniform by rounding, with a zero weight last (the last draft of
    positive weight, never the zero one); and a coin 1 early (later drafts have weight 0)."""
    from types import SimpleNamespace

    from spectheory.sim._priority_coins_kernel import _select as select_numba

    torch = pytest.importorskip("torch")
    from spectheory.torch._priority_coins import _select as select_torch

    V = 4
    one = np.arange(V)
    cases = [([0.5, 0.5, 0.5, 0.5], 0.5, 1), (_deficit_coins(), 1.0 - 2.0**-53, 2),
             ([0.0, 1.0, 0.3, 0.3], 0.999, 1), ([0.2, 0.0, 0.0, 0.0], 0.1, 0)]
    plans = [SimpleNamespace(weights=np.ones(1), rank=one[None], preferred=np.ones(V, dtype=bool),
                             kappa=np.array([kappa])) for kappa, _, _ in cases]
    # mixtures: the pairs (rule, draft) rule by rule, weight times selection weight.  Rule 0
    # (weight 1/4, order 0 1 2 3, every coin 1) selects 0; rule 1 (weight 3/4, reversed, coins
    # 1/2) selects 3, 2, 1, 0 with 3/8, 3/16, 3/32, 3/32.  u = 1/4 lies on the first partial
    # sum: rule 1's first draft; u in the last pair's interval: rule 1's last draft;
    # a rule of weight 0 (a batch's padding) adds nothing.
    rev = one[::-1].copy()
    mix = dict(rank=np.array([one, rev]), preferred=np.ones(V, dtype=bool),
               kappa=np.array([[1.0] * 4, [0.5] * 4]))
    for u, want in ((0.1, 0), (0.25, 3), (0.25 + 3 / 8, 2), (1.0 - 2.0**-53, 0)):
        plans.append(SimpleNamespace(weights=np.array([0.25, 0.75]), **mix))
        cases.append((None, u, want))
    plans.append(SimpleNamespace(weights=np.array([0.0, 1.0]), **mix))
    cases.append((None, 0.1, 3))
    for plan, (_, u, want) in zip(plans, cases):
        ref = select_by_priority(plan, (3, 1, 0, 2), ReplayCoins([u]))
        nb = select_numba(plan.preferred, plan.weights, plan.rank, plan.kappa,
                          np.array([3, 1, 0, 2]), u)
        tt = select_torch(torch.from_numpy(plan.preferred)[None],
                          torch.from_numpy(plan.weights)[None], torch.from_numpy(plan.rank)[None],
                          torch.from_numpy(plan.kappa)[None], torch.tensor([[3, 1, 0, 2]]),
                          torch.tensor([u], dtype=torch.float64))
        assert ref == nb == int(tt[0]) == want, (plan.kappa, u, ref, nb, int(tt[0]))


def test_a_draft_of_target_probability_zero_is_never_accepted():
    """Drafts of p = 0 (all in H*, selected with y > 0): the accept coin at u = 0 must reject
    (0 < 0 is false), in the reference and the kernel alike, and the token comes from the
    residual."""
    p = np.array([0.5, 0.3, 0.2, 0.0, 0.0, 0.0])
    q = np.array([0.1, 0.1, 0.1, 0.3, 0.2, 0.2])
    plan = coin_plan(p, q, 3)
    assert plan.y[3:].sum() > 0
    for u0 in (0.1, 0.5, 0.9):
        u = np.array([u0, 0.0, 0.5])
        ref = priority_coins(p, q, (3, 4, 5), ReplayCoins(u))
        out = run_verifier("optimal", p[None], q[None], np.array([[[3, 4, 5]]]), u[None, None],
                           sampling=WOR)
        assert ref == out[0, 0] and p[ref] > 0


def test_a_mixed_plan_runs_alike_in_every_form_and_is_exactly_lossless():
    """The row no single priority order reaches (tests/solvers/test_priority_coins.py): its plan
    mixes several rules.  The verifier's exact law (every ordered draft tuple and coin branch
    enumerated) is p and its acceptance the bound 1, both to 1e-12; the numba kernel and the
    torch form return the reference's token for the same uniforms, edge uniforms included, in
    a batch beside a row of one rule (padded with a rule of weight 0)."""
    from spectheory.exact._law import exact_row

    torch = pytest.importorskip("torch")
    from spectheory.torch.verifiers import optimal_torch

    from ..solvers.test_priority_coins import NO_ORDER_P, NO_ORDER_Q

    p, q = np.array(NO_ORDER_P), np.array(NO_ORDER_Q)
    assert coin_plan(p, q, 4).weights.size > 1
    law, acc = exact_row(optimal, p, q, 4, WOR)
    np.testing.assert_allclose(law, p, rtol=0, atol=1e-12)
    assert acc == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(5)
    # a batch of the mixed row and a row of one rule: the tables pad the second with a
    # rule of weight 0
    p2, q2 = np.full(6, 1 / 6), np.array([0.3, 0.25, 0.2, 0.1, 0.1, 0.05])
    assert coin_plan(p2, q2, 4).weights.size == 1
    P, Q = np.stack([p, p2]), np.stack([q, q2])
    T = 600
    drafts = _drafts(rng, Q, T, 4)
    u = rng.random((2, T, 3))
    u[:, : T // 4] = rng.choice([0.0, 0.5, 1.0 - 2.0**-40], size=(2, T // 4, 3))
    out = run_verifier("optimal", P, Q, drafts, u, sampling=WOR)
    tt = optimal_torch(torch.from_numpy(np.repeat(P, T, 0)), torch.from_numpy(np.repeat(Q, T, 0)),
                       torch.from_numpy(drafts.reshape(2 * T, 4)),
                       torch.from_numpy(u.reshape(2 * T, 3)), sampling=WOR).reshape(2, T)
    for b in range(2):
        ref = [optimal(P[b], Q[b], tuple(drafts[b, t]), ReplayCoins(u[b, t]), sampling=WOR)
               for t in range(T)]
        assert out[b].tolist() == ref == tt[b].tolist(), b
