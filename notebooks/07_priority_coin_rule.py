# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Three or more drafts without replacement: the priority-coin rule at full vocabulary
#
# Derivation of docs/theory.md §3.17 (Khisti et al., arXiv 2410.18234, for the decomposition
# into a selection and single-draft SD; Hu et al., arXiv 2502.18779, for the bound).
# Notation: $p$ target, $q$ draft, $n$ drafts drawn without replacement, $S$ the set of
# drafts, $H^*$ the bound's optimal dual set and $T = V \setminus H^*$.
#
# **The rule.** Select from $S' = S \cap T$ if $S$ meets $T$, else from $S' = S$. Each part
# has an order and each token a coin $\kappa_a$; list $S'$ in order $x_1, \dots, x_m$ and
# select $x_j$ with probability $\kappa_{x_j}\prod_{i<j}(1-\kappa_{x_i})$ ($j<m$), $x_m$ with
# the rest. Then single-draft SD of $p$ against the selection marginal $y$: lossless for any
# order and coins. It reaches $\alpha^*_{\rm wor} = p(H^*) + f(T)$ exactly when $y \le p$ on
# $T$ and $y \ge p$ on $H^*$ (§3.15).
#
# **Why it matters.** The rules that provably reach the bound for every row (§3.16) have a
# marginal that is a double integral at full vocabulary. This one's weights are products over
# the set's members, so its marginal is one integral over the clock time (section 2), and its
# coins can be set one token at a time (section 1). Its reach is measured, not proven; section
# 4 shows a row out of its reach.

# %%
import itertools
from fractions import Fraction as F

import numpy as np
import sympy as sp

from spectheory.drafting import set_law_row
from spectheory.exact import exact_row
from spectheory.solvers import priority_coins as pc
from spectheory.solvers.ot_dual import solve_bound
from spectheory.solvers.priority_coins import (
    priority_coin_marginal,
    priority_coin_plan,
    selection_weights,
)
from spectheory.solvers.random_utility import random_utility_plan
from spectheory.verifiers.optimal import optimal

WOR = "without_replacement"

# %% [markdown]
# ## 1. Product weights: $y_a = \kappa_a M_a + (1-\kappa_a) N_a$
#
# The weights of one set sum to 1 (a telescoping product), and a token's weight is a product
# of its earlier members' failed coins and its own coin (or 1 if it is last). Summed over the
# sets, $y_a$ is affine in $\kappa_a$, with $M_a$ (sets where $a$ is a member: earlier coins
# failed) and $N_a$ (those with no later member) free of $\kappa_a$ and of every later coin.

# %%
k = sp.symbols("k0:4")
w = selection_weights(list(k))
assert sp.simplify(sum(w) - 1) == 0
assert w[2] == (1 - k[0]) * (1 - k[1]) * k[2]
assert w[3] == (1 - k[0]) * (1 - k[1]) * (1 - k[2])  # the last: every earlier coin failed

# symbolic coins on an enumerated law: V = 5, n = 3, one part (every token in T)
q5 = np.array([F(1, 10), F(2, 10), F(3, 10), F(1, 10), F(3, 10)], dtype=object)
law5 = set_law_row(q5, 3, WOR)
kap = sp.symbols("c0:5")
order = [0, 1, 2, 3, 4]
y_sym = [0] * 5
for S, prob in law5.items():
    part = sorted(S, key=order.index)
    for a, wt in zip(part, selection_weights([kap[a] for a in part])):
        y_sym[a] += sp.Rational(prob.numerator, prob.denominator) * wt
for a in range(5):
    expr = sp.expand(y_sym[a])
    assert sp.degree(expr, kap[a]) <= 1  # affine in its own coin
    later = set(kap[order.index(a) + 1:])
    assert not (expr.free_symbols & later)  # no later coin
    M = expr.subs(kap[a], 1)
    N = expr.subs(kap[a], 0)
    assert sp.simplify(M - N) == sp.simplify(sp.diff(expr, kap[a]))
print("y_2 =", sp.factor(sp.expand(y_sym[2]).subs(kap[2], 1)), "(its M_2)")

# %% [markdown]
# ## 2. One integral over the clock time
#
# Give token $b$ an exponential clock of rate $q_b$; the drafts are the first $n$ clocks to
# ring. Given the time $t$ of the $n$-th ring, token $b$ is not drawn ($a_b = e^{-q_b t}$),
# drawn before $t$ ($r_b = 1 - a_b$) or the one drawn at $t$ (density $d_b = q_b a_b$). With a
# weight $c_b$ on $b$ being drawn and $F_b(z) = a_b + c_b(r_b z + d_b z\varepsilon)$,
# $\varepsilon^2 = 0$,
#
# $$\sum_A P(S = A) \prod_{b \in A} c_b = \int_0^\infty [z^n \varepsilon] \prod_b F_b(z)\,dt.$$
#
# Checked exactly below (sympy integrates the exponentials; the enumerated law is in
# Fractions): first every set's probability, then $M_a$ and $N_a$ at rational coins.

# %%
t, z, eps = sp.symbols("t z epsilon", positive=True)
qs = [sp.Rational(x.numerator, x.denominator) for x in q5]


def integral(c):
    """int_0^oo [z^3 eps] prod_b F_b dt, with weights c_b (sympy, exact)."""
    prod = 1
    for b in range(5):
        a_b = sp.exp(-qs[b] * t)
        prod = sp.expand(prod * (a_b + c[b] * ((1 - a_b) * z + qs[b] * a_b * z * eps)))
    coef = sp.expand(prod).coeff(eps, 1).coeff(z, 3)
    return sp.nsimplify(sp.integrate(sp.expand(coef), (t, 0, sp.oo)))


for S, prob in law5.items():
    c = [1 if b in S else 0 for b in range(5)]
    assert integral(c) == sp.Rational(prob.numerator, prob.denominator), S

# M_a and N_a at rational coins (order 0..4, one part): weights 1 - kappa before a, a drawn
coins = [sp.Rational(1, 3), sp.Rational(1, 2), sp.Rational(1, 5), sp.Rational(2, 7), 1]
for a in range(5):
    before = [1 - coins[b] if b < a else 1 for b in range(5)]
    # M_a: a drawn (c_a = 1, minus the sets without a); N_a: no later member either
    with_a = integral([1 if b == a else before[b] for b in range(5)])
    without_a = integral([0 if b == a else before[b] for b in range(5)])
    M_int = with_a - without_a
    N_int = (integral([1 if b == a else (before[b] if b < a else 0) for b in range(5)])
             - integral([0 if b == a else (before[b] if b < a else 0) for b in range(5)]))
    M_enum = sum(sp.Rational(pr.numerator, pr.denominator)
                 * sp.prod([1 - coins[b] for b in S if b < a]) for S, pr in law5.items()
                 if a in S)
    N_enum = sum(sp.Rational(pr.numerator, pr.denominator)
                 * sp.prod([1 - coins[b] for b in S if b < a]) for S, pr in law5.items()
                 if a in S and max(S) == a)
    assert M_int == M_enum and N_int == N_enum, a
print("set law, M_a and N_a: the integral equals the enumeration exactly")

# %% [markdown]
# At full vocabulary the product is kept per node of a log-time grid as a polynomial of degree
# $< n$ in $z$ with an $\varepsilon$ part, updated token by token (prefix products for the
# earlier tokens with their coins, suffix products for the later ones), so every $M_a$ and
# $N_a$ costs $O(n)$ a node. The kernel's marginal against the enumerated law:

# %%
rng = np.random.default_rng(0)
worst = 0.0
for _ in range(20):
    V = int(rng.integers(4, 8))
    n = int(rng.integers(3, V))
    p = rng.dirichlet(np.full(V, 0.4))
    q = rng.dirichlet(np.full(V, 0.4)) + 1e-6
    q /= q.sum()
    plan = priority_coin_plan(p, q, n)
    law = {s: float(v) for s, v in set_law_row(q, n, WOR).items()}
    y = priority_coin_marginal(law, plan.preferred, plan.rank, plan.kappa, V,
                                   plan.weights)
    worst = max(worst, float(np.abs(y - plan.y).max()))
assert worst < 1e-13
print(f"largest difference from the enumerated marginal: {worst:.1e}")

# %% [markdown]
# ## 3. Greedy coins, exactly
#
# In the part's order, $\kappa_a$ makes $y_a = p_a$ where $N_a \le p_a \le M_a$ and is clipped
# otherwise; the order is repaired where a token misses. In Fractions the same pass runs on
# the enumerated law, so the plan's acceptance is exact; the verifier's output law, with every
# draw and coin enumerated, is exactly $p$, and its acceptance is the bound.

# %%
p = np.array([F(5, 10), F(3, 10), F(1, 10), F(1, 10), F(0)], dtype=object)
q = np.array([F(1, 10), F(2, 10), F(3, 10), F(3, 10), F(1, 10)], dtype=object)
plan = priority_coin_plan(p, q, 3)
exact = solve_bound(p, q, 3, WOR, method="enumerate").exact_value
out, acc = exact_row(optimal, p, q, 3, WOR)
assert plan.reached and plan.alpha_value == exact == acc and list(out) == list(p)
print("alpha*_wor =", exact, " coins:", [str(x) for x in plan.kappa[0]])

# %% [markdown]
# ## 4. The limit of one rule, and mixtures
#
# With bound 1, $T$ is every token and $y$ must equal $p$: every coin is forced, and only the
# order is free. On this row ($V = 6$, $n = 4$) no order of the 720 reaches the bound.
#
# A *mixture* of rules does. The marginals of all selection rules preferring a part form the
# base polytope of the part's coverage function $g(A) = P(S' \cap A \neq \emptyset)$; its
# vertices are the priority orders (every coin 1; Edmonds' greedy), and a mixture of rules
# has the mixed marginal. The bound says some point of the polytope meets the targets, so
# some mixture of at most $|T|$ orders does (Carathéodory: the polytope has dimension
# $|T| - 1$). Column generation finds it: an LP over the columns found so far (minimise the
# mass $y$ leaves above $p$), priced by its duals $w$; the best new column over the whole
# polytope is the order by ascending $w$, one greedy pass. The plan runs this on parts of at
# most 64 tokens when one rule misses. Below: the mixture's marginal, enumerated, is $p$.

# %%
p6 = np.array([0.3591840758117434, 0.001361368592851779, 0.6354523131933472,
               7.223122266412505e-10, 0.003206088787953182, 0.0007961528917923398])
q6 = np.array([0.007393207964735896, 0.8747583795491694, 0.012711095596483913,
               0.017568150429409315, 0.0001496606414291932, 0.08741950581877242])
law6 = {s: float(v) for s, v in set_law_row(q6, 4, WOR).items()}
best = np.inf
for order6 in itertools.permutations(range(6)):
    kappa6, y6 = np.zeros(6), np.zeros(6)
    pc._greedy_enumerated(law6, np.array(order6), p6, np.ones(6, dtype=bool), kappa6, y6)
    best = min(best, float(np.maximum(y6 - p6, 0).sum()))
plan6 = priority_coin_plan(p6, q6, 4)
mixed6 = priority_coin_marginal(law6, plan6.preferred, plan6.rank, plan6.kappa, 6, plan6.weights)
assert best > 1.9e-3 and plan6.reached and plan6.weights.size > 1
assert np.abs(mixed6 - p6).max() < 1e-12
assert random_utility_plan(p6, q6, 4, WOR).reached  # the random-utility rule (§3.16) too
print(f"best single order leaves {best:.2e} below the bound; the plan says: {plan6.message}")
print("mixture weights:", np.round(plan6.weights, 6))

# %% [markdown]
# ## 5. Full vocabulary
#
# A 20,000-token row (softmax of $3\,\mathcal N(0,1)$ logits, the draft's perturbed by
# $\mathcal N(0,1)$), four drafts: the plan reaches the bound, and the marginal sums to 1
# (every draft set selects one token) to rounding, which certifies the quadrature.

# %%
rng = np.random.default_rng(1)
logits = 3.0 * rng.standard_normal(20_000)
pv = np.exp(logits - logits.max())
pv /= pv.sum()
ql = logits + rng.standard_normal(20_000)
qv = np.exp(ql - ql.max())
qv /= qv.sum()
big = priority_coin_plan(pv, qv, 4)
assert big.reached and abs(big.total - 1.0) < 1e-13
print(f"bound {big.bound:.6f}, acceptance {big.alpha_value:.6f}, "
      f"|sum y - 1| = {abs(big.total - 1):.1e}, passes {big.passes}")
