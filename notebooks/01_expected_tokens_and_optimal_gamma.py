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
# # Expected tokens per round and the optimal draft length
#
# A derivation of docs/theory.md §1.3-1.5 for chain speculative decoding with i.i.d. acceptance
# probability $\alpha$ per draft token (Leviathan, Kalman, Matias, arXiv 2211.17192: Eq. 1,
# Theorem 3.8, Corollary 3.9):
#
# 1. $E[\text{tokens per round}] = (1 - \alpha^{\gamma+1})/(1 - \alpha)$ from the acceptance
#    events, and the law of the number of accepted tokens;
# 2. the walltime speedup $S(\gamma) = E/(\gamma c + 1)$ and the marginal rule for the integer
#    optimum;
# 3. the first-order condition of the continuous optimum and its solution through the
#    lower branch of the Lambert W function;
# 4. numerical checks against `spectheory.solvers.speedup` and the table of docs/theory.md §1.5(c).
#
# Every key result is asserted: a wrong derivation fails `tests/test_notebooks.py`.
# Notation: $p$ target, $q$ draft, $c$ = time of one draft forward / time of one target
# forward, $\gamma$ the draft length.

# %%
import itertools
from fractions import Fraction

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp
from IPython.display import display

from spectheory.solvers import speedup as sd

# %% [markdown]
# ## 1. Tokens per round: a geometric series of acceptance events
#
# A round drafts $\gamma$ tokens; token $j$ is emitted iff tokens $1..j$ are all accepted, and
# the target always adds one token (the correction after a rejection, or the bonus token).
# With $A$ the number of accepted drafts,
#
# $$\text{tokens} = 1 + A = 1 + \sum_{j=1}^{\gamma} \mathbb 1[A \ge j], \qquad
#   P(A \ge j) = P_j = \alpha^j ,$$
#
# so $E[\text{tokens}] = \sum_{j=0}^{\gamma} \alpha^j$: a finite geometric series.

# %%
alpha, c = sp.symbols("alpha c", positive=True)
j, ell = sp.symbols("j ell", integer=True, nonnegative=True)
gamma = sp.symbols("gamma", integer=True, positive=True)

tau_closed = (1 - alpha ** (gamma + 1)) / (1 - alpha)


def general_branch(piecewise):
    """The branch of a sympy Piecewise whose condition is True (alpha != 1)."""
    if not isinstance(piecewise, sp.Piecewise):
        return piecewise
    return next(expr for expr, cond in piecewise.args if cond == sp.true)


def branch_at_one(piecewise):
    """The branch of a sympy Piecewise for alpha = 1."""
    return next(expr for expr, cond in piecewise.args if cond == sp.Eq(alpha, 1))


tau_series = sp.summation(alpha**j, (j, 0, gamma))
assert sp.simplify(general_branch(tau_series) - tau_closed) == 0
assert sp.simplify(branch_at_one(tau_series) - (gamma + 1)) == 0
display(tau_series)

# %% [markdown]
# The same value from the law of $A$: $P(A = \ell) = \alpha^\ell(1 - \alpha)$ for
# $\ell < \gamma$ (first rejection at draft $\ell + 1$) and $P(A = \gamma) = \alpha^\gamma$.

# %%
pmf_mean = sp.piecewise_fold(
    sp.summation((ell + 1) * alpha**ell * (1 - alpha), (ell, 0, gamma - 1))
    + (gamma + 1) * alpha**gamma
)
assert sp.simplify(general_branch(pmf_mean) - tau_closed) == 0
pmf_total = sp.piecewise_fold(
    sp.summation(alpha**ell * (1 - alpha), (ell, 0, gamma - 1)) + alpha**gamma
)
assert sp.simplify(general_branch(pmf_total)) == 1  # the law sums to one
sp.simplify(general_branch(pmf_mean))

# %% [markdown]
# Brute force, independent of the argument above: enumerate every accept/reject pattern of the
# $\gamma$ drafts (probability $\alpha^{\#\text{accept}}(1-\alpha)^{\#\text{reject}}$), count the
# emitted tokens (the accepted prefix plus one) and compare polynomials in $\alpha$ exactly.

# %%
for g in range(8):
    expected = 0
    for pattern in itertools.product((True, False), repeat=g):
        prob = sp.Mul(*[alpha if ok else 1 - alpha for ok in pattern])
        prefix = next((i for i, ok in enumerate(pattern) if not ok), g)
        expected += prob * (prefix + 1)
    assert sp.expand(expected - sum(alpha**i for i in range(g + 1))) == 0
print("tokens per round = sum_{j<=gamma} alpha^j for every accept/reject pattern, gamma <= 7")

# %% [markdown]
# The library's `tokens_per_round` and `acceptance_count_pmf` agree with the closed forms.

# %%
tau_num = sp.lambdify((alpha, gamma), tau_closed, "numpy")
grid_alpha = np.linspace(0.05, 0.95, 19)
for g in range(0, 12):
    assert np.allclose(sd.tokens_per_round(grid_alpha, g), tau_num(grid_alpha, g), rtol=1e-13)
    pmf = sd.acceptance_count_pmf(grid_alpha, g)
    ref = np.array([[a**k * (1 - a) for k in range(g)] + [a**g] for a in grid_alpha])
    assert np.allclose(pmf, ref, rtol=1e-13, atol=1e-16)
    assert np.allclose((pmf * np.arange(1, g + 2)).sum(axis=1), tau_num(grid_alpha, g))
assert sd.tokens_per_round(1.0, 5) == 6.0 and sd.tokens_per_round(0.0, 5) == 1.0

# %% [markdown]
# ## 2. Walltime speedup and the marginal rule
#
# A round costs $\gamma$ draft forwards and one target forward (verifying $\gamma + 1$ positions
# in parallel costs one forward, Leviathan's assumption), i.e. $\gamma c + 1$ target-forward
# units, and emits $\tau(\gamma)$ tokens where plain decoding emits one per unit:
#
# $$S(\gamma) = \frac{1 - \alpha^{\gamma+1}}{(1-\alpha)(\gamma c + 1)} \quad
#   \text{(Theorem 3.8)}, \qquad S(1) = \frac{1 + \alpha}{1 + c} \quad \text{(Corollary 3.9)}.$$

# %%
S = tau_closed / (gamma * c + 1)
S1 = sp.simplify(S.subs(gamma, 1))
assert sp.simplify(S1 - (1 + alpha) / (1 + c)) == 0
# gamma = 1 helps (S(1) > 1) exactly when alpha > c:
assert sp.simplify(S1 - 1 - (alpha - c) / (1 + c)) == 0
display(S1)

# %% [markdown]
# **Marginal rule** (docs/theory.md §1.5(a)). For *any* prefix probabilities $P_j$ (not only
# $\alpha^j$), write $T = \tau(\gamma)$ and $P = P_{\gamma+1}$. Then
# $S(\gamma+1) = (T + P)/((\gamma c + 1) + c)$ is the mediant of $S(\gamma) = T/(\gamma c + 1)$
# and $P/c$, and the identity below shows
# $S(\gamma+1) > S(\gamma) \iff P_{\gamma+1} > c\,S(\gamma)$.

# %%
T, P = sp.symbols("T P", positive=True)
g_ = sp.symbols("g", nonnegative=True)
S_g = T / (g_ * c + 1)
S_next = (T + P) / ((g_ + 1) * c + 1)
identity = S_next - S_g - (P - c * S_g) / ((g_ + 1) * c + 1)
assert sp.simplify(identity) == 0
print("S(g+1) - S(g) = (P_{g+1} - c S(g)) / ((g+1) c + 1)")

# %% [markdown]
# Because $P_j$ is non-increasing and $S(\gamma+1)$ lies between $S(\gamma)$ and
# $P_{\gamma+1}/c$, once $P_{\gamma+1} \le c\,S(\gamma)$ holds it holds at every later
# $\gamma$: $S$ is unimodal and
# $\gamma^* = \min\{\gamma \ge 0 : P_{\gamma+1} \le c\,S(\gamma)\}$.
#
# ## 3. The continuous optimum through Lambert W
#
# Put $x = \gamma + 1$ and $L = -\ln\alpha > 0$, so $\alpha^{\gamma+1} = e^{-Lx}$ and
# $S \propto (1 - e^{-Lx})/(cx + 1 - c)$.

# %%
L, x = sp.symbols("L x", positive=True)
S_x = (1 - sp.exp(-L * x)) / (c * x + 1 - c)  # times the constant 1/(1 - alpha)
num, den = sp.fraction(sp.together(sp.diff(S_x, x)))
foc = sp.exp(-L * x) * (L * (c * x + 1 - c) + c) - c
# dS/dx = [e^{-Lx}(L(cx + 1 - c) + c) - c] / (cx + 1 - c)^2
assert sp.simplify(num / den - foc / (c * x + 1 - c) ** 2) == 0
sp.Eq(foc, 0)

# %% [markdown]
# With $u = L(cx + 1 - c) + c$ the condition $e^{-Lx}u = c$ becomes
# $(-u/c)\,e^{-u/c} = -e^{-1-t}$ with $t = L(1-c)/c$, so $-u/c = W_k(-e^{-1-t})$. The argument lies
# in $(-1/e, 0)$, where $W$ has two real branches. sympy's `solve` returns the principal one:

# %%
roots = sp.solve(foc, x)
assert len(roots) == 1 and roots[0].has(sp.LambertW)
t = L * (1 - c) / c
z = -sp.exp(-1 - t)
w = sp.symbols("w")


def root_on_branch(w_value):
    """x* = (u - L(1 - c) - c) / (L c) with u = -c W."""
    return (-c * w_value - L * (1 - c) - c) / (L * c)


# sympy's root is this expression with W = W_0:
assert sp.simplify(roots[0] - root_on_branch(sp.LambertW(z))) == 0
# Both branches solve the condition: use only W e^W = z (so exp(W) = z / W).
on_w = sp.expand(foc.subs(x, root_on_branch(w)), power_exp=True).subs(sp.exp(w), z / w)
assert sp.simplify(on_w) == 0
roots[0]

# %% [markdown]
# Which branch? On $W_0$, $W \in (-1, 0)$ so $u = -cW < c$ and
# $x = (u - L(1-c) - c)/(Lc) < -(1-c)/c < 0$: not a draft length. The maximiser is on the lower
# branch $W_{-1} \le -1$. Written with $s = -W_{-1}(-e^{-1-t})$ this is the form used by
# `spectheory.solvers.speedup` (docs/theory.md §1.5(b)):
#
# $$\gamma^*_{\text{cont}} = \frac{s - 1 - t}{L} - 1 = \frac{\ln s}{L} - 1,
#   \qquad s - 1 - \ln s = t .$$

# %%
s_sym = sp.symbols("s", positive=True)
gamma_cont_theory = (s_sym - 1 - t) / L - 1
assert sp.simplify(root_on_branch(-s_sym) - 1 - gamma_cont_theory) == 0


def gamma_cont_lambertw(a, cost, branch=-1):
    """gamma*_cont from the Lambert W root at 40 significant digits."""
    values = {L: -sp.log(sp.Rational(a)), c: sp.Rational(cost)}
    w_val = sp.LambertW(z.subs(values), branch)
    return float(sp.N(root_on_branch(w_val).subs(values) - 1, 40))


# %% [markdown]
# Numerical check on a grid of $(\alpha, c)$: the lower-branch root agrees with
# `continuous_optimal_gamma` (which polishes `scipy.special.lambertw` by Newton steps), with an
# independent root of the first-order condition by `sympy.nsolve`, and it is a maximum; the
# principal branch gives $x < 0$.

# %%
cells = [
    (a, cost) for a in ("0.5", "0.7", "0.8", "0.9", "0.95") for cost in ("0.01", "0.05", "0.2")
]
for a, cost in cells:
    g_w = gamma_cont_lambertw(a, cost)
    g_lib = sd.continuous_optimal_gamma(float(a), float(cost))
    assert abs(g_w - g_lib) <= 1e-9 * max(1.0, g_w), (a, cost, g_w, g_lib)
    foc_num = foc.subs({L: -sp.log(sp.Rational(a)), c: sp.Rational(cost)})
    x_root = sp.nsolve(foc_num, x, g_w + 1.5, prec=30)
    assert abs(float(x_root) - 1 - g_w) <= 1e-9 * max(1.0, g_w)
    # s = -W_{-1}(z) satisfies s - 1 - ln s = t (take logs of s e^{-s} = e^{-1-t}):
    vals = {L: -sp.log(sp.Rational(a)), c: sp.Rational(cost)}
    s_val = -sp.LambertW(z.subs(vals), -1)
    assert abs(sp.N(s_val - 1 - sp.log(s_val) - t.subs(vals), 40)) < 1e-30
    S_real = sp.lambdify(x, S_x.subs({L: -sp.log(sp.Rational(a)), c: sp.Rational(cost)}))
    assert S_real(g_w + 1) > max(S_real(g_w + 1 - 1e-3), S_real(g_w + 1 + 1e-3))
    assert gamma_cont_lambertw(a, cost, branch=0) + 1 < 0
print(f"Lambert W root = library = nsolve on {len(cells)} cells")

# %% [markdown]
# docs/theory.md §8.5: $(\alpha, c) = (0.8, 0.05) \to 7.857$, $(0.6, 0.1) \to 2.978$,
# $(0.9, 0.01) \to 24.099$.

# %%
for a, cost, published in (("0.8", "0.05", 7.857), ("0.6", "0.1", 2.978), ("0.9", "0.01", 24.099)):
    assert round(gamma_cont_lambertw(a, cost), 3) == published, (a, cost)

# %% [markdown]
# ## 4. The integer optimum, exactly
#
# Brute force in exact rationals: $S(\gamma)$ for $\gamma = 0..200$ as fractions, the smallest
# argmax (the shorter draft wins exact ties, e.g. $\alpha = 1/2$, $c = 1/5$ where
# $S(1) = S(2) = 5/4$). It must agree with all three methods of `optimal_gamma`, and lie at the
# floor or the ceiling of the continuous optimum.


# %%
def exact_speedups(a, cost, gamma_max=200):
    out, tau_g, power = [], Fraction(0), Fraction(1)
    for g in range(gamma_max + 1):
        tau_g += power
        power *= a
        out.append(tau_g / (g * cost + 1))
    return out


def exact_optimum(a, cost):
    values = exact_speedups(a, cost)
    best = max(values)
    g = values.index(best)
    assert g < len(values) - 1, "increase gamma_max"
    return g, best


alphas_table = ["0.50", "0.60", "0.70", "0.75", "0.80", "0.85", "0.90", "0.95"]
costs_table = ["0.01", "0.05", "0.10", "0.20"]
rng = np.random.default_rng(0)
random_cells = [
    (str(Fraction(int(k), 1000)), str(Fraction(int(m), 1000)))
    for k, m in zip(rng.integers(100, 990, 40), rng.integers(1, 400, 40), strict=True)
]
exact = {}
for a, cost in [*itertools.product(alphas_table, costs_table), *random_cells]:
    fa, fc = Fraction(a), Fraction(cost)
    g_star, s_star = exact_optimum(fa, fc)
    exact[(a, cost)] = (g_star, s_star)
    for method in sd.GAMMA_METHODS:
        r = sd.optimal_gamma(float(fa), float(fc), method=method)
        assert r.gamma == g_star, (a, cost, method, r.gamma, g_star)
        assert abs(r.speedup - float(s_star)) <= 1e-12 * float(s_star)
    cont = sd.continuous_optimal_gamma(float(fa), float(fc))
    assert g_star in (int(np.floor(cont)), int(np.ceil(cont))), (a, cost, cont, g_star)
    # the marginal-rule bracket P_{g*+1} <= c S(g*) <= P_{g*}
    assert fa ** (g_star + 1) <= fc * s_star <= fa**g_star
print(f"{len(exact)} cells: exact argmax = marginal = lambertw = enumerate; floor/ceil of W root")

# %% [markdown]
# ### docs/theory.md §1.5(c), reproduced from the exact values
#
# The published table (integer $\gamma^*$ and $S(\gamma^*)$), transcribed, against the exact
# optimum computed above:

# %%
published_table = {
    "0.50": [(5, 1.875), (3, 1.630), (2, 1.458), (1, 1.250)],
    "0.60": [(7, 2.297), (4, 1.921), (3, 1.674), (2, 1.400)],
    "0.70": [(9, 2.972), (6, 2.353), (4, 1.981), (3, 1.583)],
    "0.75": [(11, 3.489), (7, 2.666), (5, 2.192), (3, 1.709)],
    "0.80": [(14, 4.232), (8, 3.092), (6, 2.470), (4, 1.868)],
    "0.85": [(17, 5.392), (10, 3.701), (7, 2.853), (5, 2.076)],
    "0.90": [(24, 7.486), (13, 4.674), (10, 3.431), (7, 2.373)],
    "0.95": [(40, 12.54), (21, 6.600), (15, 4.479), (10, 2.875)],
}
lines = ["alpha \\ c | " + " | ".join(costs_table)]
for a in alphas_table:
    row = []
    for cost, (g_pub, s_pub) in zip(costs_table, published_table[a], strict=True):
        g_star, s_star = exact[(a, cost)]
        digits = 2 if s_pub >= 10 else 3
        assert g_star == g_pub and round(float(s_star), digits) == s_pub, (a, cost)
        row.append(f"{g_star:2d} ({float(s_star):.4f})")
    lines.append(f"{a}      | " + " | ".join(row))
print("\n".join(lines))

# %% [markdown]
# The speedup curves for $c = 0.05$, with the Lambert-W optimum (dashed) and the integer
# optimum (dot):

# %%
fig, ax = plt.subplots(figsize=(6, 3.5))
grid_gamma = np.arange(0, 31)
for a in (0.6, 0.8, 0.9):
    ax.plot(grid_gamma, sd.speedup(a, grid_gamma, 0.05), label=f"alpha = {a}")
    r = sd.optimal_gamma(a, 0.05)
    ax.axvline(r.gamma_continuous, ls="--", lw=0.8, color="grey")
    ax.plot([r.gamma], [r.speedup], "ko", ms=4)
ax.set_xlabel("draft length gamma")
ax.set_ylabel("speedup S(gamma), c = 0.05")
ax.legend()
fig.tight_layout()
