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
# # Any n, any draft law: the uniform random-utility rule reaches the bound
#
# Derivation of docs/theory.md §3.16 (Khisti et al., arXiv 2410.18234, for the decomposition;
# Hu et al., arXiv 2502.18779, for the bound). Notation: $p$ target, $q$ draft, $n$ drafts of
# some law, $S$ the set of distinct drafts, $H^*$ the bound's optimal dual set and
# $T = V \setminus H^*$.
#
# **The rule.** From $S$ let $S' = S \cap T$ if $S$ meets $T$, else $S' = S$. Each token has a
# score $\mu_a$ ($\le 0$ on $T$, $\ge 0$ on $H^*$); draw $U_a \sim U[0,1]$ for the drafts in $S'$
# and select the draft of largest $\mu_a + U_a$. Then single-draft SD of $p$ against the
# selection marginal $y$: the output law is $\min(p, y) + (p - y)_+ = p$ for any scores.
#
# **Claim.** Some scores make $\sum_a \min(p_a, y_a) = \alpha^*$, for every row, every $n$ and
# every draft law. The proof: the choice probabilities are the gradient of the expected
# maximum $\Phi_{S'}$ (section 1), so $y - p$ is the gradient of the convex
# $\Psi(\mu) = \sum_S P(S)\Phi_{S'}(\mu_{S'}) - \langle\mu, p\rangle$. $\Psi$ is bounded below
# on the sign-constrained scores, and closing score gaps wider than 1 never raises it
# (section 2), so its minimum is attained on a box. There the optimality conditions are
# $y \le p$ on $T$ and $y \ge p$ on $H^*$, which is the bound (section 3). Section 4 shows why
# the noise must be bounded.

# %%
from fractions import Fraction as F
from itertools import combinations

import numpy as np
import sympy as sp

from spectheory.solvers.ot_dual import solve_bound
from spectheory.solvers.random_utility import (
    _selection_sets,
    random_utility_marginal,
    random_utility_plan,
    uniform_choice,
    uniform_expected_max,
)

# %% [markdown]
# ## 1. Choice probabilities and the expected maximum
#
# With $F$ the $U[0,1]$ distribution function,
# $w_a = \int_{\mu_a}^{\mu_a+1} \prod_{b \ne a} F(u - \mu_b)\,du$. For two scores at distance
# $d \in [0, 1]$ this is $1 - (1-d)^2/2$: the law of $U_b - U_a$, triangular (not §3.15's ramp).

# %%
d, g = sp.symbols("d g", nonnegative=True)
# u = mu_a + g, F(u - mu_b) = F(g + d): g + d below 1 for g < 1 - d, then 1
w_two = sp.integrate(g + d, (g, 0, 1 - d)) + sp.integrate(1, (g, 1 - d, 1))
assert sp.simplify(w_two - (1 - (1 - d) ** 2 / 2)) == 0
for dv in (F(0), F(1, 3), F(3, 4), F(1)):
    assert uniform_choice([dv, F(0)])[0] == w_two.subs(d, sp.Rational(dv.numerator, dv.denominator))
print("two scores:", sp.factor(w_two))

# %% [markdown]
# The expected maximum is $\Phi(\mu) = L + 1 - \int_L^{L+1} \prod_a F(u - \mu_a)\,du$ with
# $L = \max_a \mu_a$. On the region $0 = \mu_1 < \mu_2 < \mu_3 < 1$ its integrand is
# $(u - \mu_2)(u - \mu_3)\,u$ on $[\mu_3, 1]$ and $(u - \mu_2)(u - \mu_3)$ on $[1, 1 + \mu_2]$,
# then $(u - \mu_3)$, then 1: sympy differentiates it, and the gradient equals the
# choice probabilities (the Williams–Daly–Zachary identity), exactly at rational points.

# %%
m2, m3, u = sp.symbols("m2 m3 u", real=True)
integral = (sp.integrate((u - m2) * (u - m3) * u, (u, m3, 1))
            + sp.integrate((u - m2) * (u - m3), (u, 1, 1 + m2))
            + sp.integrate(u - m3, (u, 1 + m2, 1 + m3)))
phi = m3 + 1 - integral
for a, b in [(F(1, 5), F(1, 2)), (F(1, 3), F(2, 3)), (F(1, 10), F(9, 10))]:
    at = {m2: sp.Rational(a.numerator, a.denominator), m3: sp.Rational(b.numerator, b.denominator)}
    assert uniform_expected_max([F(0), a, b]) == phi.subs(at)
    w = uniform_choice([F(0), a, b])
    assert w[1] == sp.diff(phi, m2).subs(at) and w[2] == sp.diff(phi, m3).subs(at)
    assert sum(w) == 1
print("grad Phi = choice probabilities on three scores: checked exactly")

# %% [markdown]
# ## 2. Closing a gap wider than 1 leaves every choice probability unchanged
#
# Sort one part's scores. Where two consecutive scores (or, on $H^*$, 0 and the smallest) are at
# least 1 apart, every token above the gap beats every token below it, so moving one side while
# the gap stays $\ge 1$ changes no choice probability, in any set. $\Psi$ then moves linearly;
# on $H^*$ ($\mu \ge 0$) move the tokens above the gap, by $s$: $\Psi$ changes by
# $s \sum_{\text{above}} (y_a - p_a)$. As $\Psi$ is bounded below (any rule reaching the bound
# gives $\Psi(\mu) \ge \langle \mu, y_\beta - p \rangle \ge 0$), that sum is $\ge 0$ (let
# $s \to \infty$) and closing the gap to 1 does not raise $\Psi$. On $T$ ($\mu \le 0$) the same
# argument moves the tokens *below* the gap (downwards is the unbounded direction), with 0 and
# the largest score as the outermost gap. So the minimum over the sign-constrained scores is
# the minimum over a box, where the continuous $\Psi$ attains it. Checked here in Fractions
# over every subset.

# %%
wide = [F(0), F(1, 3), F(7, 2), F(19, 5), F(9, 2)]  # a gap of 19/6 after 1/3
closed = [x if x < 1 else x - F(13, 6) for x in wide]  # the gap closed to exactly 1
assert closed[2] - closed[1] == 1
for k in range(2, 6):
    for members in combinations(range(5), k):
        assert (uniform_choice([wide[i] for i in members])
                == uniform_choice([closed[i] for i in members]))
print("closing the gap changed no choice probability in any of the 26 sets")

# %% [markdown]
# ## 3. The rule reaches the bound
#
# Random rows, $V \le 6$, $n = 3$ and $4$, every draft law: the plan's selection acceptance
# equals $\alpha^*$ to $10^{-12}$, while the fair rule (every score 0, the preference for $T$
# kept) falls short on most rows, so the scores matter.

# %%
rng = np.random.default_rng(6)
reached = fair_short = rows = 0
for sampling in ("without_replacement", "iid", "greedy"):
    for n in (3, 4):
        for _ in range(12):
            V = int(rng.integers(n, 7))
            p, q = rng.dirichlet(np.full(V, 0.4)), rng.dirichlet(np.full(V, 0.4))
            plan = random_utility_plan(p, q, n, sampling)
            sets = _selection_sets(q, n, sampling, plan.preferred)
            fair = np.minimum(p, random_utility_marginal(sets, [0.0] * V, V)).sum()
            rows += 1
            reached += plan.reached
            fair_short += plan.bound - fair > 1e-6
assert reached == rows and fair_short > rows // 2
print(f"reached on {reached} of {rows} rows; the fair rule falls short on {fair_short}")

# %% [markdown]
# In exact arithmetic: the scores are solved in floats, then the marginal, the residual and
# the acceptance are computed in Fractions at those scores. The output law
# $\min(p, y) + (1 - \alpha)\,\mathrm{residual}$ is $p$ exactly, and the acceptance lies within
# $10^{-12}$ below the bound computed by enumeration over draft sets.

# %%
p = np.array([F(7, 16), F(8, 16), F(1, 16)], dtype=object)
q = np.array([F(8, 18), F(5, 18), F(5, 18)], dtype=object)
plan = random_utility_plan(p, q, 2)
out = np.array([min(a, b) for a, b in zip(p, plan.y)]) + (1 - plan.alpha_value) * plan.residual
assert list(out) == list(p)
assert 0 <= plan.bound - plan.alpha_value < F(1, 10**12)
assert plan.bound == solve_bound(p, q, 2, "without_replacement", method="enumerate").exact_value
print("exact: output law = p; bound - acceptance =", float(plan.bound - plan.alpha_value))

# %% [markdown]
# ## 4. Why the noise must be bounded
#
# Three tokens, three drafts without replacement: every draft set is $\{0, 1, 2\}$, so
# $\alpha^* = 1$ and a rule reaching it must select token 2 (of $p_2 = 0$) with probability 0.
# Scores $(0, 0, -1)$ do it with uniform noise, exactly. With Gumbel noise (a softmax over the
# drafts) the best scores in $[-L, L]$ are $(L, L, -L)$, which select token 2 with probability
# $1/(2e^{2L} + 1) > 0$: the bound is reached only as the scores diverge, and the dual's
# infimum is not attained.

# %%
assert uniform_choice([F(0), F(0), F(-1)]) == [F(1, 2), F(1, 2), F(0)]
p3 = np.array([0.5, 0.5, 0.0])
q3 = np.array([0.2, 0.3, 0.5])
assert random_utility_plan(p3, q3, 3).reached  # to 1e-12 in floats; exactly at (0, 0, -1)
L = sp.symbols("L", positive=True)
softmax_gap = sp.exp(-L) / (2 * sp.exp(L) + sp.exp(-L))
assert sp.simplify(softmax_gap - 1 / (2 * sp.exp(2 * L) + 1)) == 0
rng_box = np.random.default_rng(0)
for Lv in (2, 4, 8, 16):
    gap = float(softmax_gap.subs(L, Lv))
    # (L, L, -L) is the best box point: no random score vector in [-L, L]^3 accepts more
    scores = np.vstack([rng_box.uniform(-Lv, Lv, (4000, 3)), [[Lv, Lv, -Lv]]])
    soft = np.exp(scores - scores.max(axis=1, keepdims=True))
    soft /= soft.sum(axis=1, keepdims=True)
    acc = np.minimum(p3, soft).sum(axis=1)
    assert abs(acc[-1] - (1 - gap)) < 1e-15 and acc.max() <= acc[-1] + 1e-15 and acc[-1] < 1
    print(f"softmax with scores in [-{Lv}, {Lv}]: acceptance 1 - {gap:.2e}")
