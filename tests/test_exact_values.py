"""Exact values, not structure: SpecDec++ ties and Markov thresholds, and the bug zoo on small rows.

* SpecDec++ (docs/theory.md §5.4) where the optimal action ties: free drafts
  (``t_draft = 0``) and an acceptance value of 0 (``P = 0`` states gain nothing):
  the policy stops exactly where continuing gains nothing, and speedup, tokens,
  drafts and the threshold interval have closed forms checked to the last few
  ulps (``P`` is computed as ``exp(sum n_i log v_i)``: 1e-15 absolute).
* Markov acceptance: the threshold interval of every chain state, the root
  included (it belongs to every state's group), against a brute force over
  every deterministic policy on histories, in exact rationals.
* Every bug-zoo entry (spectheory.sim.bugzoo) on a small hand instance, without
  the model: its exact biased law (written here on the coins protocol from the
  reference verifiers, in Fractions where the bug is rational) differs from the
  target, its samples fit that law, and the checker flags it.  An entry made
  correct by accident fails the fit (its law is the target's).
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from scipy import stats

import spectheory as stt
from spectheory.sim.bugzoo import BUGS
from spectheory.solvers.specdecpp import solve_specdecpp
from spectheory.verifiers import rrs, sd

ULP_TOL = 1e-15  # P = exp(sum n_i log v_i) against v**k: a few ulps at most

# --------------------------------------------------------------------------- SpecDec++ ties


@pytest.mark.parametrize("k_max", [1, 3, 12])
def test_free_drafts_draft_to_k_max(k_max):
    """t_draft = 0: drafting never costs, so every state with P > 0 continues to k_max."""
    D = {0.9: 0.7, 0.4: 0.3}  # E[a] = 0.75
    r = solve_specdecpp(D, 0.0, k_max=k_max)
    tokens = 1 + sum(0.75**j for j in range(1, k_max + 1))
    # D = 1 + sum prob * D(child) rounds once per level: k_max ulps.
    np.testing.assert_allclose(r.drafts_per_round, k_max, rtol=k_max * 2.3e-16, atol=0)
    np.testing.assert_allclose(r.tokens_per_round, tokens, rtol=1e-15, atol=0)
    np.testing.assert_allclose(r.speedup, tokens, rtol=1e-15, atol=0)  # cost/round = t_target
    assert r.cost_per_round == 1.0
    # Continue on every reachable state below k_max: lo = 1 - min P = 1 - 0.4^(k_max - 1),
    # and no stopping state below k_max: hi = +inf.
    lo, hi = r.threshold_interval
    np.testing.assert_allclose(lo, 1 - 0.4 ** (k_max - 1), rtol=0, atol=ULP_TOL)
    assert hi == np.inf
    assert r.myopic_threshold == 1.0  # 1 - 0 / (lambda E[a])


@pytest.mark.parametrize("t_draft", [0.0, 0.05])
def test_acceptance_value_zero_stops_at_p_zero(t_draft):
    """A drawn a = 0 makes P = 0: continuing gains nothing; the tie at t_draft = 0 stops."""
    D = {0.0: 0.5, 0.8: 0.5}
    k_max = 6
    r = solve_specdecpp(D, t_draft, k_max=k_max)
    # Exactly the states with P = 0 stop (1 - P = 1), at t_draft = 0.05 too: every state
    # with P = 0.8^k gains lambda 0.4 P >= 0.4 * 0.8^5 / lambda... checked by the closed form.
    drafts = sum(0.5**j for j in range(k_max))  # continue while no zero was drawn
    tokens = 1 + sum(0.4**j for j in range(1, k_max + 1))
    np.testing.assert_allclose(r.drafts_per_round, drafts, rtol=1e-15, atol=0)
    np.testing.assert_allclose(r.tokens_per_round, tokens, rtol=1e-15, atol=0)
    np.testing.assert_allclose(r.speedup, tokens / (1 + t_draft * drafts), rtol=1e-15, atol=0)
    lo, hi = r.threshold_interval
    assert hi == 1.0  # the P = 0 states stop
    np.testing.assert_allclose(lo, 1 - 0.8 ** (k_max - 1), rtol=0, atol=ULP_TOL)
    assert r.is_threshold


# --------------------------------------------------------------------------- Markov thresholds


def brute_force_markov(values, init, T, t_draft, k_max):
    """Optimal lambda and policy (history -> continue) over all deterministic policies.

    Histories are tuples of value indices; the next value is ``init`` at the root and
    ``T[last]`` after it.  Exact rationals.  Ties between policies are broken by the
    fewest continues (the solver's rule: continue iff strictly better).
    """
    m = len(values)
    hist = [()]
    for k in range(1, k_max):
        hist += [(*h, i) for h in hist if len(h) == k - 1 for i in range(m)]
    best = None
    for bits in itertools.product([False, True], repeat=len(hist)):
        cont = dict(zip(hist, bits))
        tokens, cost = F(1), F(1)
        stack = [((), F(1), F(1))]  # history, probability, P
        while stack:
            h, prob, P = stack.pop()
            if len(h) < k_max and cont[h]:
                cost += prob * t_draft
                law = init if not h else T[h[-1]]
                for i in range(m):
                    if law[i] > 0:
                        tokens += prob * law[i] * P * values[i]
                        stack.append(((*h, i), prob * law[i], P * values[i]))
        key = (cost / tokens, sum(bits))
        if best is None or key < best[0]:
            best = (key, cont)
    return best[0][0], best[1]


def interval_from_policy(values, init, T, cont, k_max):
    """(lo, hi) per chain state: max 1 - P over continuing, min over stopping reachable states."""
    m = len(values)
    lo, hi = [-np.inf] * m, [np.inf] * m

    def visit(h, P):
        groups = range(m) if not h else [h[-1]]  # the root belongs to every group
        for g in groups:
            if cont[h]:
                lo[g] = max(lo[g], 1 - P)
            else:
                hi[g] = min(hi[g], 1 - P)
        if cont[h] and len(h) + 1 < k_max:
            law = init if not h else T[h[-1]]
            for i in range(m):
                if law[i] > 0:
                    visit((*h, i), P * values[i])

    visit((), F(1))
    return np.array([[float(a), float(b)] for a, b in zip(lo, hi)])


@pytest.mark.parametrize(
    ("t_draft", "root_continues"),
    [(F(1, 5), True), (F(3, 4), False)],
)
def test_markov_threshold_interval_values(t_draft, root_continues):
    values = [F(19, 20), F(3, 10)]
    init = [F(1, 2), F(1, 2)]
    T = [[F(9, 10), F(1, 10)], [F(1, 2), F(1, 2)]]
    k_max = 3
    lam, cont = brute_force_markov(values, init, T, t_draft, k_max)
    assert cont[()] is root_continues
    want = interval_from_policy(values, init, T, cont, k_max)
    r = solve_specdecpp(
        {0.95: 0.5, 0.3: 0.5},
        float(t_draft),
        transition=[[0.9, 0.1], [0.5, 0.5]],
        k_max=k_max,
    )
    np.testing.assert_allclose(r.average_cost, float(lam), rtol=1e-14, atol=0)
    np.testing.assert_allclose(r.threshold_interval, want, rtol=0, atol=ULP_TOL)
    lo, hi = want[:, 0].astype(float), want[:, 1].astype(float)
    h = np.where(np.isinf(lo), hi / 2, (lo + hi) / 2)  # the midpoint (lo = -inf: hi / 2)
    np.testing.assert_allclose(r.threshold, h, rtol=0, atol=ULP_TOL)
    if not root_continues:  # stop at once: target-only decoding, h = 0 for every state
        assert r.speedup == 1.0 and r.threshold.tolist() == [0.0, 0.0]


# --------------------------------------------------------------------------- bug zoo

P3 = [F(3, 10), F(2, 5), F(3, 10)]
Q3 = [F(3, 5), F(3, 10), F(1, 10)]
P5 = [F(1, 10), F(1, 10), F(1, 5), F(3, 10), F(3, 10)]
Q5 = [F(3, 10), F(1, 4), F(1, 5), F(3, 20), F(1, 10)]


def exact(v):
    return np.array(v, dtype=object)


def argmax_sd(p, q, drafts, coins, *, sampling="iid"):
    """The drafter proposes argmax q; SD treats it as sampled (transformers #32867)."""
    return sd(p, q, (max(range(len(q)), key=lambda i: (q[i], -i)),), coins)


def dedup_rrs(p, q, drafts, coins, *, sampling="iid"):
    """RRS on the distinct drafts only (pitfall P1)."""
    return rrs(p, q, tuple(dict.fromkeys(int(x) for x in drafts)), coins)


def top_k_rrs(p, q, drafts, coins, *, sampling="iid"):
    """RRS ratios on the top-n tokens of q (pitfall P2)."""
    top = sorted(range(len(q)), key=lambda i: (-q[i], i))[: len(drafts)]
    return rrs(p, q, tuple(top), coins)


def softmax_law(p, q):
    """Law of SD with residual softmax((p - q)_+): min(p, q) + (1 - beta) softmax(z)."""
    p, q = np.array(p, dtype=float), np.array(q, dtype=float)
    z = np.maximum(p - q, 0.0)
    e = np.exp(z - z.max())
    return np.minimum(p, q) + (1 - np.minimum(p, q).sum()) * e / e.sum()


def tempered(p, power):
    t = np.array(p, dtype=float) ** power
    return t / t.sum()


def fp16_instance():
    """Head tokens {0, 1}; 2,000 tail tokens of p = 5e-5 < 2^-14, which float16 flushes."""
    p = np.concatenate([[0.45, 0.45], np.full(2000, 5e-5)])
    q = np.concatenate([[0.5, 0.5], np.zeros(2000)])
    return p, q


def bug_case(name):
    """(p, q, n, exact law of the bug) for each zoo entry."""
    if name == "softmax_residual":
        return P3, Q3, 1, softmax_law(P3, Q3)
    if name == "argmax_draft_sampled_ratio":
        return P3, Q3, 1, stt.output_distribution(argmax_sd, exact(P3), exact(Q3), 1, "iid")
    if name == "rrs_dedup":
        return P3, Q3, 4, stt.output_distribution(dedup_rrs, exact(P3), exact(Q3), 4, "iid")
    if name == "rrs_top_k":
        return P5, Q5, 4, stt.output_distribution(top_k_rrs, exact(P5), exact(Q5), 4, "iid")
    if name == "target_at_temperature(0.7)":
        pt = [F(7, 10), F(1, 5), F(1, 10)]  # a peaked target: tempering moves ~0.1 of mass
        return pt, Q3, 1, tempered(pt, 0.7)  # SD against t is lossless for t: its law is t
    if name == "fp16_flush_to_zero":
        p, q = fp16_instance()
        # Tail lost; on the head p/q = 0.9 (float16 0.45 is 0.449951...) and the empty
        # residual falls back to the head renormalised: [1/2, 1/2] by symmetry.
        return p, q, 1, np.concatenate([[0.5, 0.5], np.zeros(2000)])
    raise KeyError(name)


ALPHA = 1e-6  # false-alarm rate of each statistical assertion below
TRIALS = 20_000


def sample_bug(fn, p, q, n, rng):
    drafts = rng.choice(p.size, size=(TRIALS, n), p=q)
    return np.array([fn(p, q, d, rng) for d in drafts])


def test_every_bug_has_a_case():
    for name in BUGS:
        bug_case(name)


@pytest.mark.parametrize("name", list(BUGS))
def test_bug_has_its_exact_biased_law(name):
    fn, n_zoo, sampling = BUGS[name]
    p, q, n, law = bug_case(name)
    assert n == n_zoo and sampling == "iid"
    p, q = np.array(p, dtype=float), np.array(q, dtype=float)
    law = np.array([float(x) for x in law])
    # The instance shows the bug: the law is far from the target.
    assert np.abs(law - p).sum() / 2 > 0.05
    out = sample_bug(fn, p, q, n, np.random.default_rng(0))
    counts = np.bincount(out, minlength=p.size)
    # Where the bug's law is 0, never a sample; elsewhere Pearson's chi-square fits the law
    # (false alarm ALPHA).  A correct entry (law = p) fails: its noncentrality here is
    # TRIALS * sum (p - law)^2 / law > 400 (chi-square power ~ 1 at 1e-6).
    zero = law == 0
    assert counts[zero].sum() == 0
    expected = TRIALS * law[~zero]
    assert TRIALS * (((p - law)[~zero] ** 2) / law[~zero]).sum() + TRIALS * p[zero].sum() > 400
    pval = stats.chisquare(counts[~zero], expected).pvalue
    assert pval > ALPHA, (name, counts, expected)


@pytest.mark.parametrize("name", list(BUGS))
def test_checker_flags_every_bug_on_small_rows(name):
    fn, n, sampling = BUGS[name]
    p, q, _, _ = bug_case(name)
    p, q = np.array(p, dtype=float), np.array(q, dtype=float)
    report = stt.check_lossless(fn, p, q, n=n, sampling=sampling, rng=1)
    assert report.lossy, report.verdict
