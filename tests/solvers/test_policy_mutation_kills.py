"""Mutation kills for the policy solvers: SpecDec++, the roofline, the scaling fits and the
pair-tier rule.

Each test is deterministic and cheap, and names in its docstring the bug it
catches; the expected values come from hand computation, exact (Fraction)
enumeration, brute force over policies or trees, numpy least squares or the
published numbers quoted in docs/theory.md, never from the code under test.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

from spectheory import InstanceTooLargeError
from spectheory.solvers import specdecpp as sdp
from spectheory.solvers.specdecpp import evaluate_threshold_policy, solve_specdecpp

# --------------------------------------------------------------------------- solvers/specdecpp.py


def _markov_prefix_means(v, p0, T, k):
    """E[P_j] = E[a_1 ... a_j], j = 1..k, of a Markov chain of acceptances, by summing over
    every path of values (Fractions of the floats)."""
    v = [F(x) for x in v]
    p0 = [F(x) for x in p0]
    T = [[F(x) for x in row] for row in T]
    out = []
    for j in range(1, k + 1):
        total = F(0)
        for path in itertools.product(range(len(v)), repeat=j):
            prob = p0[path[0]]
            for a, b in itertools.pairwise(path):
                prob *= T[a][b]
            P = F(1)
            for i in path:
                P *= v[i]
            total += prob * P
        out.append(total)
    return out


def test_fixed_baseline_of_a_markov_chain_follows_the_rows_not_the_columns():
    """Bug: the fixed-length baseline propagated the chain with the transposed matrix
    (``T @ w`` for ``w @ T``), so E[P_j] of a non-symmetric chain was wrong.

    E[P_j] is enumerated over all value paths; the best fixed length maximises
    :math:`(1 + \\sum_{j \\le \\gamma} E[P_j]) / (1 + c \\gamma)`, ties to the shorter.
    """
    v, p0, T, c, K = [0.9, 0.3], [0.7, 0.3], [[0.6, 0.4], [0.1, 0.9]], F(1, 5), 6
    EP = _markov_prefix_means(v, p0, T, K)
    speed = [(1 + sum(EP[:g])) / (1 + c * g) for g in range(K + 1)]
    best = max(range(K + 1), key=lambda g: (speed[g], -g))
    r = solve_specdecpp((v, p0), 0.2, transition=T, k_max=K)
    assert r.fixed_gamma == best == 2
    assert r.fixed_speedup == pytest.approx(float(speed[best]), rel=1e-13)


def test_a_tie_at_the_optimum_stops_drafting():
    """Bug: the backward induction continued on a tie (``G >= 0`` for ``G > 0``).

    One value 1/2, a draft costing 1 and a target call 5 (c = 0.2): gamma = 1 and
    gamma = 2 both cost 6/1.5 = 7/1.75 = 4 per token, and at lambda = 4 (exact in
    binary) the second draft gains 4 * 1/4 = 1 token-cost, exactly its price.  The
    module's rule is "continue iff the gain is > 0", so the reported policy
    drafts one token: 1 draft and 1.5 tokens per round, and the thresholds that
    reproduce it are (1 - 1, 1 - 1/2] = (0, 1/2].
    """
    r = solve_specdecpp({0.5: 1.0}, 1.0, t_target=5.0)
    assert r.average_cost == 4.0
    assert r.drafts_per_round == 1.0 and r.tokens_per_round == 1.5
    assert r.threshold_interval.tolist() == [0.0, 0.5]


def test_a_markov_policy_that_never_drafts_has_threshold_zero_for_every_chain_state():
    """Bug: the root (no value revealed yet) was left out of every chain state's group, so a
    policy that stops at once reported ``threshold = inf`` ("never stops") per chain state.

    With acceptances 0.2 and 0.1 and a draft that costs 0.9 of a target call no
    draft pays (a token gains at most 0.2 < 0.9 of a call): the policy stops at
    the root, where :math:`1 - P = 0`; "stop iff :math:`1 - P \\ge h`" reproduces
    that only for ``h <= 0``, so each chain state's interval is ``(-inf, 0]``.
    """
    T = [[0.6, 0.4], [0.1, 0.9]]
    r = solve_specdecpp(([0.2, 0.1], [0.5, 0.5]), 0.9, transition=T, k_max=4)
    assert r.speedup == 1.0 and r.drafts_per_round == 0.0
    assert r.threshold_interval.tolist() == [[-np.inf, 0.0], [-np.inf, 0.0]]
    assert np.all(r.threshold <= 0.0)


def test_state_limit_counts_one_state_per_chain_value(monkeypatch):
    """Bug: the state count of a Markov model left out the chain state (``n`` for ``n * m``),
    so instances up to m times too large were accepted.

    Two values and ``k_max = 12``: the Markov process has 1 + 12 * 13 = 157
    states (at depth k >= 1, k + 1 exponent pairs, the two pure ones with one
    possible last value and the k - 1 mixed ones with two), the i.i.d. one 91;
    with a limit of 100 the Markov instance is refused and the i.i.d. one is not.
    """
    monkeypatch.setattr(sdp, "MAX_STATES", 100)
    law = ([0.9, 0.3], [0.5, 0.5])
    T = [[0.6, 0.4], [0.1, 0.9]]
    assert solve_specdecpp(law, 0.2, k_max=12).status == "optimal"
    with pytest.raises(InstanceTooLargeError):
        solve_specdecpp(law, 0.2, transition=T, k_max=12)
    with pytest.raises(InstanceTooLargeError):
        evaluate_threshold_policy(law, 0.2, 0.5, transition=T, k_max=12)


def test_threshold_interval_ignores_states_reached_only_with_probability_zero():
    """Bug: the states the policy visits were taken along every transition, those of
    probability 0 included, so a value of probability 0 widened the threshold interval.

    Law {1/2: 1, 0.9: 0}, c = 0.1, K = 3: the reachable products are 1/2 and 1/4;
    drafting two tokens is optimal (S = 1.75/1.2 against 1.5/1.1 and 1.875/1.3),
    so the policy continues at 1 - P = 1/2 and stops at 3/4: interval (1/2, 3/4].
    The unreachable product 0.45 (1 - P = 0.55, where the policy would go on) must
    not count.
    """
    r = solve_specdecpp({0.5: 1.0, 0.9: 0.0}, 0.1, k_max=3)
    assert r.speedup == pytest.approx(1.75 / 1.2, rel=1e-13)
    assert r.threshold_interval.tolist() == [0.5, 0.75]
    assert r.threshold == 0.625


# ---------------------------------------------------------------------------- solvers/roofline.py


def test_roofline_memory_time_counts_the_bytes_of_every_parameter():
    """Bug: the memory-bound time dropped the bytes per parameter (``P / W`` for ``P s / W``).

    bf16 weights (2 bytes), 10 parameters, bandwidth 1 byte/s: reading them
    takes 20 s; the compute time 2 * 10 * 1 / 1e9 s is negligible.
    """
    from spectheory.solvers.roofline import Roofline

    assert Roofline(bandwidth=1.0, flops=1e9, bytes_per_param=2.0).time(10, 1) == 20.0


def test_batch_speedup_by_hand_in_the_compute_bound_regime():
    """Bugs: the draft forward was costed over ``B n`` tokens instead of ``B`` (one draft
    forward per round), or the verification over ``B n`` tokens instead of ``B (n + 1)``.

    Roofline with W = 1, F = 4, s = 1: :math:`t(P, x) = \\max(P, P x / 2)`.
    Target 100, draft 10, batch 4: :math:`t_t(4) = 200`, :math:`t_d(4) = 20`, and
    the verification of :math:`4 (n + 1)` tokens takes 400 (n = 1) or 600 (n = 2);
    with alpha = (1/2, 3/4): S = 1.5 * 200 / 420 and 1.75 * 200 / 620.
    """
    from spectheory.solvers.roofline import Roofline, batch_speedup, optimal_width

    r = Roofline(bandwidth=1.0, flops=4.0, bytes_per_param=1.0)
    s = batch_speedup([0.5, 0.75], 4, 100, 10, r)
    assert s.tolist() == pytest.approx([300 / 420, 350 / 620], rel=1e-14)
    n_star, s_star = optimal_width([0.5, 0.75], [4], 100, 10, r)
    assert n_star.tolist() == [1] and s_star.tolist() == pytest.approx([300 / 420], rel=1e-14)


# ----------------------------------------------------------------------------- solvers/scaling.py


def test_bootstrap_intervals_do_not_depend_on_the_order_of_pairs_with_equal_x():
    """Bug: the pairs were put in canonical order by ``x`` alone, so pairs sharing an ``x``
    kept the order they were listed in and the same data and seed gave other intervals.

    The same six pairs (each ``x`` twice, with different ``y``) listed in two
    orders must give identical bootstrap intervals for one seed.
    """
    from spectheory.solvers.scaling import fit_log_linear

    x = [1.0, 1.0, 10.0, 10.0, 100.0, 100.0]
    y = [0.0, 1.0, 2.5, 2.0, 4.0, 6.0]
    perm = [1, 0, 3, 2, 5, 4]
    f1 = fit_log_linear(x, y, n_boot=400, seed=3)
    f2 = fit_log_linear([x[i] for i in perm], [y[i] for i in perm], n_boot=400, seed=3)
    assert f1.slope == pytest.approx(f2.slope, rel=1e-14)
    np.testing.assert_array_equal(f1.slope_ci, f2.slope_ci)
    np.testing.assert_array_equal(f1.intercept_ci, f2.intercept_ci)


def test_bootstrap_slope_interval_sits_at_the_exact_bootstrap_quantiles():
    """Bug: the percentile interval took the levels ``(1 - c, c)`` instead of
    ``((1 - c)/2, (1 + c)/2)`` (a 90% interval reported as 95%).

    Six points: the bootstrap law of the slope is enumerated exactly over all
    6^6 equally likely resamples (those with one distinct ``x`` dropped), each
    fitted by least squares in closed form.  With about 10^5 kept resamples the DKW
    inequality puts the empirical CDF within eps = 0.0086 of the exact one
    with probability at least 1 - 2 exp(-2 * 99,000 * eps^2) > 1 - 1e-6, so each
    reported end lies between the exact quantiles at its level -/+ (eps + 1e-4).
    The 5% and 95% quantiles lie outside those brackets.
    """
    from spectheory.solvers.scaling import fit_log_linear

    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    y = np.array([0.0, 1.0, 1.5, 3.5, 3.0, 5.5])
    u = np.log2(x)
    idx = np.array(list(itertools.product(range(6), repeat=6)))
    keep = np.ptp(idx, axis=1) > 0
    U, Y = u[idx[keep]], y[idx[keep]]
    Uc, Yc = U - U.mean(axis=1, keepdims=True), Y - Y.mean(axis=1, keepdims=True)
    slopes = np.sort((Uc * Yc).sum(axis=1) / (Uc * Uc).sum(axis=1))  # least squares per row

    def quantile(t):  # the exact bootstrap law's quantile function
        return slopes[int(np.ceil(t * slopes.size)) - 1]

    eps = 0.0086 + 1e-4
    fit = fit_log_linear(x, y, base=2.0, n_boot=100_000, confidence=0.95, seed=11)
    lo, hi = fit.slope_ci
    assert quantile(0.025 - eps) <= lo <= quantile(0.025 + eps)
    assert quantile(0.975 - eps) <= hi <= quantile(0.975 + eps)
    # the check can tell the two level conventions apart
    assert quantile(0.05 - eps) > quantile(0.025 + eps)
    assert quantile(0.95 + eps) < quantile(0.975 - eps)


# -------------------------------------------------------------------------- solvers/pair_tiers.py


def _wor_pair_bound(p, q):
    """The bound without replacement for two drafts, exactly: the largest P(X in S) over
    couplings of X ~ p with the draft set S, by Strassen's min-cut,
    :math:`\\min_A [p(A^c) + P(S \\cap A \\ne \\emptyset)]`, with the unordered pair law
    :math:`P(\\{a, b\\}) = q_a q_b / (1 - q_a) + q_b q_a / (1 - q_b)` (Fractions)."""
    p = [F(x) for x in p]
    q = [F(x) for x in q]
    V = len(q)
    pairs = {(a, b): q[a] * q[b] / (1 - q[a]) + q[b] * q[a] / (1 - q[b])
             for a, b in itertools.combinations(range(V), 2)}
    best = None
    for mask in range(1 << V):
        A = {a for a in range(V) if mask >> a & 1}
        value = sum((p[a] for a in range(V) if a not in A), F(0)) + sum(
            (w for (a, b), w in pairs.items() if a in A or b in A), F(0))
        best = value if best is None else min(best, value)
    return best


def _frac(w):
    return np.array([F(int(x), sum(int(y) for y in w)) for x in w], dtype=object)


@pytest.mark.parametrize(("p", "q", "value"), [
    ([5, 1, 5, 4, 0], [1, 2, 3, 1, 1], F(193, 210)),
    ([2, 0, 3, 1], [5, 6, 2, 4], F(5594, 7293)),
])
def test_exact_tier_coins_clip_caps_on_the_preferred_part_and_needs_on_the_rest(p, q, value):
    """Bug: the exact coins of a tier treated a tier of the preferred part T as one with
    lower bounds (and a tier of H* as one with caps), so rational rows the float
    search reaches lost exactness and fell short of the bound.

    The bound is Strassen's min-cut over the exact pair law, in Fractions; the
    plan's exact selection acceptance must equal it.
    """
    from spectheory.solvers.pair_tiers import pair_tier_plan

    P, Q = _frac(p), _frac(q)
    assert _wor_pair_bound(P, Q) == value
    plan = pair_tier_plan(P, Q)
    assert plan.reached and plan.alpha_value == value
