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
# # The optimal-transport dual as subset selection, and the prefix lemma
#
# A derivation of docs/theory.md §2.2-2.5. With $n$ drafts $\bar x = (x_1..x_n)$ from a draft law
# $P_{\text{draft}}$ built on the draft $q$, and the target $p$, the best membership acceptance
# of a lossless verifier is the optimal-transport value (SpecTr, arXiv 2310.15141; Hu et al.,
# arXiv 2502.18779)
#
# $$\alpha^* = \max_{\pi \ge 0} \sum_{\bar x, y} \pi(\bar x, y)\,\mathbb 1[y \in \bar x]
#   \quad\text{s.t.}\quad \sum_y \pi(\bar x, y) = P_{\text{draft}}(\bar x),\;
#   \sum_{\bar x} \pi(\bar x, y) = p(y).$$
#
# We write this LP out for a tiny instance, derive its dual, reduce the dual to the choice of one
# token set (docs/theory.md §2.3)
#
# $$\alpha^* = \min_{H \subseteq \Sigma} \big[p(H) + P(\text{some draft lies outside } H)\big]
#   = 1 + \min_{H} \big[p(H) - Q(H)\big], \qquad Q(H) = P(\text{all drafts lie in } H),$$
#
# verify it in exact rationals over all subsets, prove the prefix lemma (2.4) for i.i.d. drafts
# and check it by exhaustive enumeration and numerically beyond, and derive $Q(H)$ for drafts
# without replacement (2.5). Every key result is asserted.

# %%
import itertools
import math
from fractions import Fraction

import numpy as np
import sympy as sp
from IPython.display import display
from scipy.integrate import quad
from scipy.optimize import linprog
from sympy.solvers.simplex import lpmax, lpmin

import spectheory as st

R = sp.Rational

# %% [markdown]
# ## Exact tools written for this notebook
#
# Independent of the library: the law of the ordered draft tuple (i.i.d.: product of $q$;
# without replacement: each draw from $q$ renormalised over the tokens not drawn yet), $Q(H)$ by
# summing that law, and the subset objective $p(H) + 1 - Q(H)$. They work on `Fraction` or
# sympy rationals alike.


# %%
def ordered_law(q, n, law):
    """{ordered tuple: probability} for 'iid' or 'wor' (without replacement)."""
    V = len(q)
    out = {}
    if law == "iid":
        for t in itertools.product(range(V), repeat=n):
            out[t] = math.prod((q[i] for i in t), start=q[0] * 0 + 1)
        return out
    for t in itertools.permutations(range(V), n):
        prob, used = q[0] * 0 + 1, q[0] * 0
        for i in t:
            prob = prob * q[i] / (1 - used)
            used = used + q[i]
        out[t] = prob
    return out


def set_law(q, n, law):
    """{frozenset of drafted tokens: probability}: all that membership acceptance sees."""
    out = {}
    for t, prob in ordered_law(q, n, law).items():
        if prob != 0:
            key = frozenset(t)
            out[key] = out.get(key, 0) + prob
    return out


def Q_of(q, H, n, law):
    """P(all n drafts lie in H), by summing the ordered law."""
    H = frozenset(H)
    return sum((w for t, w in ordered_law(q, n, law).items() if set(t) <= H), q[0] * 0)


def objective(p, q, H, n, law):
    """p(H) + P(some draft outside H)."""
    return sum((p[i] for i in H), p[0] * 0) + 1 - Q_of(q, H, n, law)


def all_objectives(p, q, n, law):
    """{H: p(H) + 1 - Q(H)} for every subset H, from one pass over the set law."""
    classes = set_law(q, n, law)
    return {
        H: sum((p[i] for i in H), p[0] * 0)
        + 1
        - sum((w for cl, w in classes.items() if cl <= H), 0)
        for H in all_subsets(len(p))
    }


def all_subsets(V):
    return [frozenset(s) for k in range(V + 1) for s in itertools.combinations(range(V), k)]


def random_rational(V, rng, denominator=60, zeros=False):
    """A random distribution with Fraction entries (optionally with zero entries)."""
    while True:
        w = rng.integers(0 if zeros else 1, 12, size=V)
        if w.sum() > 0 and np.count_nonzero(w) >= 1:
            break
    total = int(w.sum())
    # common denominator keeps numbers small and exact
    return [Fraction(int(k) * denominator, total * denominator) for k in w]


# %% [markdown]
# ## 1. The primal LP of a tiny instance, written out
#
# Instance A of docs/theory.md §8.1: $p = (3/10, 4/10, 3/10)$, $q = (6/10, 3/10, 1/10)$ on tokens
# $a, b, c$, two i.i.d. drafts. The primal has one variable $\pi(\bar x, y)$ per ordered pair of
# drafts and output token: $3^2 \cdot 3 = 27$ variables, $9 + 3$ equality constraints.

# %%
p_A = [R(3, 10), R(4, 10), R(3, 10)]
q_A = [R(6, 10), R(3, 10), R(1, 10)]
V, n = 3, 2
tuples = list(itertools.product(range(V), repeat=n))
P_draft = ordered_law(q_A, n, "iid")
names = "abc"
pi = {
    (t, y): sp.Symbol(f"pi_{''.join(names[i] for i in t)}_{names[y]}")
    for t in tuples
    for y in range(V)
}
primal_objective = sum(var for (t, y), var in pi.items() if y in t)
row_sums = [sp.Eq(sum(pi[t, y] for y in range(V)), P_draft[t]) for t in tuples]
col_sums = [sp.Eq(sum(pi[t, y] for t in tuples), p_A[y]) for y in range(V)]
primal_value, primal_solution = lpmax(
    primal_objective, [*row_sums, *col_sums, *(var >= 0 for var in pi.values())]
)
assert primal_value == R(89, 100)  # docs/theory.md §8.1
print("objective:", primal_objective)
print("first constraints:", row_sums[:2], col_sums[:1])
display(primal_value)

# %% [markdown]
# ## 2. Its dual, derived from the constraint matrix
#
# For $\max c^\top \pi$ s.t. $A\pi = b$, $\pi \ge 0$ the dual is $\min b^\top y$ s.t.
# $A^\top y \ge c$ with $y$ free. The rows of $A$ are the draft tuples (multiplier $u(\bar x)$)
# and the output tokens (multiplier $v(y)$); column $(\bar x, y)$ has a one in row $\bar x$ and
# in row $y$, so the dual constraints are $u(\bar x) + v(y) \ge \mathbb 1[y \in \bar x]$.

# %%
variables = list(pi.values())
A, b = sp.linear_eq_to_matrix([eq.lhs - eq.rhs for eq in [*row_sums, *col_sums]], variables)
c_vec = sp.Matrix([1 if y in t else 0 for (t, y) in pi])
u = {t: sp.Symbol(f"u_{''.join(names[i] for i in t)}") for t in tuples}
v = {y: sp.Symbol(f"v_{names[y]}") for y in range(V)}
y_vec = sp.Matrix([*u.values(), *v.values()])
dual_objective = (b.T * y_vec)[0]
dual_constraints = [lhs >= rhs for lhs, rhs in zip(A.T * y_vec, c_vec, strict=True)]
# The mechanical dual is exactly u(x) + v(y) >= 1[y in x]:
for (t, y), con in zip(pi, dual_constraints, strict=True):
    assert sp.simplify(con.lhs - (u[t] + v[y])) == 0 and con.rhs == (1 if y in t else 0)
# This dual has free variables and a line of optima (u -> u + s, v -> v - s, below), on which
# sympy's simplex can fail ("oscillating system") in an order set by the symbols' hashes: 3 of
# 60 hash seeds. So HiGHS finds a dual point in floats, and the point, rounded to small
# fractions, is certified in exact arithmetic: it meets every constraint and its objective
# equals the primal value, so by weak duality it is optimal.
A_num = np.array(A.T.tolist(), dtype=float)
cost = np.array(b.T.tolist()[0], dtype=float)
needed = np.array(c_vec.tolist(), dtype=float).ravel()
highs = linprog(cost, A_ub=-A_num, b_ub=-needed, bounds=[(None, None)] * len(y_vec), method="highs")
dual_solution = {
    var: R(Fraction(val).limit_denominator(1000)) for var, val in zip(y_vec, highs.x, strict=True)
}
assert all(con.subs(dual_solution) for con in dual_constraints)  # exactly feasible
dual_value = dual_objective.subs(dual_solution)
assert dual_value == primal_value  # strong duality, exactly  # strong duality, exactly
print("dual objective:", dual_objective)
print("optimal dual point (free variables):", dual_solution)

# %% [markdown]
# **From the free dual to docs/theory.md's form.** (i) Shifting $u \to u + s$, $v \to v - s$ keeps
# every constraint and, since $\sum P_{\text{draft}} = \sum p = 1$, the objective. (ii) The
# primal with $\le$ on both marginals (a sub-coupling, which always extends to a coupling by the
# product of the leftover masses, docs/theory.md §2.2) has the same value; its dual has
# $u, v \ge 0$ and constraints only for $y \in \bar x$:
#
# $$\min \sum_{\bar x} P_{\text{draft}}(\bar x) u(\bar x) + \sum_y p(y) v(y) \quad
#   \text{s.t.}\quad u(\bar x) + v(y) \ge 1\ \ \forall y \in \bar x,\ \ u, v \ge 0 .$$

# %%
s = sp.Symbol("s")
shift = {**{u[t]: u[t] + s for t in tuples}, **{v[y]: v[y] - s for y in range(V)}}
assert sp.expand(dual_objective.subs(shift, simultaneous=True) - dual_objective) == 0
for con in dual_constraints:
    assert sp.expand(con.lhs.subs(shift, simultaneous=True) - con.lhs) == 0

theory_constraints = [u[t] + v[y] >= 1 for t in tuples for y in range(V) if y in t]
theory_value, theory_solution = lpmin(
    dual_objective, [*theory_constraints, *(var >= 0 for var in y_vec)]
)
assert theory_value == primal_value
# The incidence matrix is totally unimodular, so the simplex vertex is 0/1:
assert set(theory_solution.values()) <= {0, 1}
H_lp = frozenset(y for y in range(V) if theory_solution[v[y]] == 1)
print("0/1 vertex:", theory_solution, " H =", {names[i] for i in H_lp})

# %% [markdown]
# **Subset selection.** With $v = \mathbb 1_H$ fixed, the cheapest feasible $u$ is
# $u(\bar x) = \max_{y \in \bar x}(1 - v(y))^+ = \mathbb 1[\bar x \not\subseteq H]$, and the
# objective becomes $p(H) + P(\bar x \not\subseteq H) = p(H) + 1 - Q(H)$. Every $H$ gives a dual
# feasible point, so each term upper-bounds $\alpha^*$; the 0/1 optimum makes the minimum exact.
# Checked for all $2^3$ sets:

# %%
table = []
for H in all_subsets(V):
    point = {
        **{v[y]: int(y in H) for y in range(V)},
        **{u[t]: int(not set(t) <= H) for t in tuples},
    }
    assert all(bool(con.subs(point)) for con in theory_constraints)
    assert all(bool(con.subs(point)) for con in dual_constraints)  # also feasible for the free dual
    value = dual_objective.subs(point)
    assert (
        value
        == objective(p_A, q_A, H, n, "iid")
        == 1 + sum(p_A[i] for i in H) - sum(q_A[i] for i in H) ** n
    )
    table.append(("{" + "".join(names[i] for i in sorted(H)) + "}", value))
best = min(val for _, val in table)
assert best == primal_value and objective(p_A, q_A, H_lp, n, "iid") == best
for name, val in table:
    print(f"H = {name:5s}  p(H) + 1 - Q(H) = {val}")

# %% [markdown]
# **Two tokens, symbolically.** With $p = (a, 1 - a)$, $q = (b, 1 - b)$ and two i.i.d. drafts the
# four sets give $\alpha^* = \min\{1,\ 1 + a - b^2,\ 2 - a - (1 - b)^2\}$; so $\alpha^* = 1$ iff
# $a \ge b^2$ and $1 - a \ge (1 - b)^2$, Khisti's condition $p(S) \ge q(S)^2$ (docs/theory.md §2.3).
# The library agrees on a grid:

# %%
a_s, b_s = sp.symbols("a b", nonnegative=True)
terms = {sp.expand(objective([a_s, 1 - a_s], [b_s, 1 - b_s], H, 2, "iid")) for H in all_subsets(2)}
expected_terms = [sp.Integer(1), 1 + a_s - b_s**2, 2 - a_s - (1 - b_s) ** 2]
assert terms == {sp.expand(term) for term in expected_terms}
f_terms = sp.lambdify((a_s, b_s), expected_terms)
a_grid, b_grid = np.meshgrid(np.linspace(0.0, 1.0, 11), np.linspace(0.05, 0.95, 10))
ours = np.min(np.broadcast_arrays(*f_terms(a_grid, b_grid)), axis=0).ravel()
P_grid = np.stack([a_grid.ravel(), 1 - a_grid.ravel()], axis=1)
Q_grid = np.stack([b_grid.ravel(), 1 - b_grid.ravel()], axis=1)
assert np.allclose(st.bound(P_grid, Q_grid, n=2), ours, rtol=0, atol=1e-12)
sp.Min(*expected_terms, evaluate=False)

# %% [markdown]
# ## 3. The reduction on random instances, in exact arithmetic
#
# Random rational instances (some with zero entries), $V \in \{3, 4\}$, $n \in \{2, 3\}$, i.i.d.
# and without replacement: the exact LP value (sympy's rational simplex on the set-level
# sub-coupling primal), the minimum over all $2^V$ subsets, and the library's exact methods
# (`enumerate`, `maxflow`) are the same rational number.


# %%
def exact_lp(p, q, n, law):
    """Set-level sub-coupling primal, solved exactly by sympy's simplex."""
    classes = set_law(q, n, law)
    flow = {(cl, y): sp.Symbol(f"f{k}_{y}") for k, cl in enumerate(classes) for y in sorted(cl)}
    cons = [var >= 0 for var in flow.values()]
    cons += [sum(flow[cl, y] for y in sorted(cl)) <= R(prob) for cl, prob in classes.items()]
    cons += [
        sum(var for (cl, yy), var in flow.items() if yy == y) <= R(p[y]) for y in range(len(p))
    ]
    return lpmax(sum(flow.values()), cons)[0]


rng = np.random.default_rng(2)
checked = 0
for V_, n_, law in [
    (3, 2, "iid"),
    (3, 2, "wor"),
    (4, 3, "iid"),
    (4, 2, "wor"),
    (4, 3, "wor"),
    (4, 2, "iid"),
]:
    p_r = random_rational(V_, rng, zeros=True)
    q_r = random_rational(V_, rng, zeros=law == "iid")
    value_lp = exact_lp(p_r, q_r, n_, law)
    value_sets = min(all_objectives(p_r, q_r, n_, law).values())
    sampling = "iid" if law == "iid" else "without_replacement"
    p_obj, q_obj = np.array(p_r, dtype=object), np.array(q_r, dtype=object)
    lib_enum = st.solve_bound(p_obj, q_obj, n=n_, sampling=sampling, method="enumerate")
    lib_flow = st.solve_bound(p_obj, q_obj, n=n_, sampling=sampling, method="maxflow")
    assert value_lp == R(value_sets) == R(lib_enum.exact_value) == R(lib_flow.exact_value)
    checked += 1
print(f"{checked} random instances: exact LP = min over subsets = enumerate = maxflow")

# %% [markdown]
# ## 4. The prefix lemma
#
# **Lemma** (docs/theory.md §2.4). Sort the tokens by $r_i = p_i/q_i$ ascending and let $H_k$ be the
# first $k$. Then $\alpha^* = 1 + \min_k [p(H_k) - Q(H_k)]$.
#
# **Proof for i.i.d. drafts.** $Q(H) = \varphi(q(H))$ with $\varphi(s) = s^n$ convex. Let $H$ be
# optimal, $s = q(H)$, $i \in H$, $j \notin H$. Not gaining by adding $j$ and not gaining by
# removing $i$ give
#
# $$\varphi(s + q_j) - \varphi(s) \le p_j, \qquad \varphi(s) - \varphi(s - q_i) \ge p_i .$$
#
# Convexity gives $\varphi(s + h) - \varphi(s) \ge h\varphi'(s)$ and
# $\varphi(s) - \varphi(s - h) \le h\varphi'(s)$ ($0 \le h \le s$), hence
# $r_i \le \varphi'(s) \le r_j$: every token of $H$ has a ratio at most that of every token
# outside, so $H$ is a prefix of the ratio order (ties aside). The two convexity inequalities
# for $\varphi(s) = s^n$ are polynomial identities with non-negative coefficients
# (put $s = t + h$ in the second, $t \ge 0$):

# %%
s_, h_, t_ = sp.symbols("s h t", nonnegative=True)
for power in range(1, 9):
    phi = s_**power
    d_phi = sp.diff(phi, s_)
    gain = sp.Poly(sp.expand(phi.subs(s_, s_ + h_) - phi - h_ * d_phi), s_, h_)
    loss = sp.Poly(
        sp.expand(h_ * d_phi.subs(s_, t_ + h_) - (phi.subs(s_, t_ + h_) - phi.subs(s_, t_))), t_, h_
    )
    assert all(coef >= 0 for coef in gain.coeffs()) and all(coef >= 0 for coef in loss.coeffs())
print("phi(s) = s^n, n = 1..8: both exchange inequalities hold coefficient-wise")

# %% [markdown]
# **Exhaustive check in exact rationals.** On random instances without ties in $p/q$
# ($V = 3..6$; $n = 2..4$; i.i.d. and without replacement): the minimum over the $V + 1$ prefixes
# equals the minimum over all $2^V$ sets. For i.i.d. drafts every optimal set also satisfies the
# sandwich $\max_{i \in H} r_i \le n\,q(H)^{n-1} \le \min_{j \notin H} r_j$ of the proof; the
# proof without replacement follows the check.


# %%
def ratio_sorted(p, q):
    key = [Fraction(p[i]) / q[i] if q[i] else math.inf for i in range(len(p))]
    return sorted(range(len(p)), key=lambda i: key[i]), key


rng = np.random.default_rng(4)
cases = 0
while cases < 36:
    V_ = int(rng.integers(3, 7))
    n_ = int(rng.integers(2, 5))
    law = ("iid", "wor")[cases % 2]
    if law == "wor" and (n_ > V_ or (V_ == 6 and n_ == 4)):
        continue
    p_r, q_r = random_rational(V_, rng), random_rational(V_, rng)
    order, key = ratio_sorted(p_r, q_r)
    if len(set(key)) < V_:
        continue  # ties: the prefix is then defined only up to the order within a tie
    values = all_objectives(p_r, q_r, n_, law)
    best = min(values.values())
    prefixes = [frozenset(order[:k]) for k in range(V_ + 1)]
    assert min(values[H] for H in prefixes) == best, (p_r, q_r, n_, law)
    if law == "iid":
        for H in (H for H, val in values.items() if val == best):
            slope = n_ * sum((q_r[i] for i in H), Fraction(0)) ** (n_ - 1)
            assert all(key[i] <= slope for i in H) and all(
                key[j] >= slope for j in set(range(V_)) - H
            )
    cases += 1
print(f"{cases} exact instances: an optimal set is a prefix of the p/q order")

# %% [markdown]
# **Proof without replacement** (docs/theory.md §2.4). $Q$ is no function of $q(H)$ alone, so
# the convexity of $\varphi$ is replaced by an exchange inequality between two tokens $i \ne j$
# outside a set $G$:
#
# $$(*)\qquad q_i\,[Q(G+i+j) - Q(G+i)] \;\ge\; q_j\,[Q(G+i) - Q(G)].$$
#
# With exponential clocks $E_x \sim \mathrm{Exp}(q_x)$ (the drafts are the first $n$ tokens to
# ring), let $m = \min(E_i, E_j)$ and $C$ the event "fewer than $n$ rings of $G$ before $m$, and
# the later of $m$ and the $(n-1)$-th ring of $G$ comes before every ring outside $G+i+j$". On
# $\{i \in S \subseteq G+i\}$ the token $i$ rings before $j$ and $C$ holds; on $C$ with $j$
# ringing first, $j \in S \subseteq G+i+j$. Which of $i, j$ rings first is independent of $m$
# and of the other clocks (it is $i$ with probability $q_i/(q_i+q_j)$), and $C$ depends on those
# alone, so
#
# $$\frac{Q(G+i) - Q(G)}{q_i} \;\le\; \frac{P(C)}{q_i + q_j} \;\le\;
#   \frac{Q(G+i+j) - Q(G+i)}{q_j}.$$
#
# $P(C)$ is the gain of adding $i$ and $j$ merged into one token of mass $q_i + q_j$ (when
# $n < V$). For an optimal $H$, $i \in H$, $j \notin H$: $r_j \ge [Q(H+j) - Q(H)]/q_j \ge
# [Q(H) - Q(H-i)]/q_i \ge r_i$, with equality throughout when $r_i = r_j$ (then $H + j$ is
# optimal too), so the largest optimal set is a prefix of every order sorted by $r$, ties
# broken any way. Checked exactly below: the sandwich against the merged token's gain for every
# $G, i, j$; and, on instances with many ties in $p/q$, that the largest minimiser over all
# $2^V$ sets is a prefix of both tie-breaks of the order.


# %%
def merged(q, i, j):
    """The draft with tokens i and j merged into one (the last) token of mass q_i + q_j."""
    rest = [x for x in range(len(q)) if x not in (i, j)]
    return [q[x] for x in rest] + [q[i] + q[j]], {x: k for k, x in enumerate(rest)}


rng = np.random.default_rng(12)
checked = 0
for _ in range(10):
    V_ = int(rng.integers(3, 6))
    n_ = int(rng.integers(1, V_))
    q_r = random_rational(V_, rng)
    Q = {H: Q_of(q_r, H, n_, "wor") for H in all_subsets(V_)}
    for i, j in itertools.permutations(range(V_), 2):
        q_m, index = merged(q_r, i, j)
        rho = len(q_m) - 1
        rest = [x for x in range(V_) if x not in (i, j)]
        for k in range(len(rest) + 1):
            for G in map(frozenset, itertools.combinations(rest, k)):
                gain_i = (Q[G | {i}] - Q[G]) / q_r[i]
                gain_j = (Q[G | {i, j}] - Q[G | {i}]) / q_r[j]
                G_m = frozenset(index[x] for x in G)
                gain_rho = (Q_of(q_m, G_m | {rho}, n_, "wor") - Q_of(q_m, G_m, n_, "wor")) / (
                    q_r[i] + q_r[j]
                )
                assert gain_i <= gain_rho <= gain_j, (q_r, n_, G, i, j)
                checked += 1
print(f"{checked} exact (G, i, j) cases: the merged-token sandwich, hence (*), holds")

ties = 0
while ties < 12:
    V_ = int(rng.integers(3, 6))
    n_ = int(rng.integers(2, V_ + 1))
    q_r = random_rational(V_, rng)
    ratio = [Fraction(int(rng.integers(0, 3)), 2) for _ in range(V_)]  # few values: ties
    p_raw = [r * x for r, x in zip(ratio, q_r)]
    if sum(p_raw) == 0:
        continue
    p_r = [x / sum(p_raw) for x in p_raw]
    values = all_objectives(p_r, q_r, n_, "wor")
    best = min(values.values())
    largest = max((H for H, val in values.items() if val == best), key=len)
    for flip in (False, True):  # ties broken by id, then against it
        order = sorted(range(V_), key=lambda x: (p_r[x] / q_r[x], -x if flip else x))
        assert largest == frozenset(order[: len(largest)]), (p_r, q_r, n_)
    ties += 1
print(f"{ties} exact instances with ties in p/q: the largest optimal set is a prefix either way")

# %% [markdown]
# **Beyond enumeration, numerically.** The library's dual solver (a prefix scan, i.e. it
# *assumes* the lemma) against the primal LP solved by HiGHS (`method="lp"`, which assumes
# nothing), on random instances up to $V = 9$; and, at $V = 400$, local optimality of the dual's
# certificate: no single token added or removed lowers $p(H) - q(H)^n$.

# %%
rng = np.random.default_rng(5)
worst = 0.0
for trial in range(24):
    V_ = int(rng.integers(4, 10))
    n_ = int(rng.integers(2, 5))
    sampling = ("iid", "without_replacement")[trial % 2]
    p_f = rng.dirichlet(np.full(V_, 0.6))
    q_f = rng.dirichlet(np.full(V_, 0.6))
    dual = st.solve_bound(p_f, q_f, n=n_, sampling=sampling)
    lp = st.solve_bound(p_f, q_f, n=n_, sampling=sampling, method="lp")
    worst = max(worst, abs(dual.value - lp.value))
    assert abs(dual.value - lp.value) <= 1e-7, (trial, dual.value, lp.value)  # HiGHS tolerance
print(f"dual prefix scan vs primal LP: max |difference| = {worst:.1e} over 24 instances")

for n_ in (2, 4, 8):
    p_f = rng.dirichlet(np.full(400, 0.3))
    q_f = rng.dirichlet(np.full(400, 0.3))
    res = st.solve_bound(p_f, q_f, n=n_)
    H = res.certificate.copy()
    base = p_f[H].sum() - q_f[H].sum() ** n_
    assert abs(1 + base - res.value) < 1e-12
    flips = []
    for i in range(400):
        H[i] = ~H[i]
        flips.append(p_f[H].sum() - q_f[H].sum() ** n_)
        H[i] = ~H[i]
    assert min(flips) >= base - 1e-12
print("V = 400: the certificate is 1-flip optimal for n = 2, 4, 8")

# %% [markdown]
# ## 5. $Q(H)$ without replacement
#
# **Definition** (2.5(a)): the sum over ordered distinct $(i_1..i_n) \in H^n$ of
# $\prod_j q(i_j)/(1 - \sum_{l<j} q(i_l))$. For $n = 2$ this regroups as
# $Q(H) = \sum_{i \in H} q_i\,(q(H) - q_i)/(1 - q_i)$; symbolically, $|H| = 4$:

# %%
qs = sp.symbols("q1:5", positive=True)
h = len(qs)
ordered_2 = sum(qs[i] * qs[k] / (1 - qs[i]) for i in range(h) for k in range(h) if k != i)
closed_2 = sum(qs[i] * (sum(qs) - qs[i]) / (1 - qs[i]) for i in range(h))
assert sp.simplify(ordered_2 - closed_2) == 0

# %% [markdown]
# **Exponential clocks** (2.5(c)). Give token $i$ an exponential clock of rate $q_i$; the order
# of arrivals is the without-replacement order. The first $n$ draws all lie in $H$ iff at least
# $n$ clocks of $H$ ring before the first clock outside $H$, which rings at an $\text{Exp}(\lambda)$
# time, $\lambda = 1 - q(H)$:
#
# $$Q(H) = 1 - \int_0^\infty \lambda e^{-\lambda t}\, P(N_H(t) \le n - 1)\,dt, \qquad
#   N_H(t) = \sum_{i \in H} \mathbb 1[E_i \le t].$$
#
# $P(N_H(t) \le n-1)$ is a signed sum of exponentials $e^{-\sigma t}$, and
# $\int_0^\infty \lambda e^{-\lambda t} e^{-\sigma t} dt = \lambda/(\lambda + \sigma)$. Doing this
# symbolically gives closed forms, here checked against the ordered-draw definition for
# $|H| = 3$ and $n = 2, 3$ (docs/theory.md's $n = 2$ and $n = 3$ formulas):

# %%
tt = sp.symbols("t", positive=True)
lam, sigma = sp.symbols("lambda sigma", positive=True)
laplace = sp.integrate(lam * sp.exp(-(lam + sigma) * tt), (tt, 0, sp.oo))
assert sp.simplify(laplace - lam / (lam + sigma)) == 0


def Q_clocks(qH, n):
    """Q(H) from the clock integral, term by term (symbolic q's of the tokens in H)."""
    lam_H = 1 - sum(qH)
    survive = 0  # P(N_H(t) <= n - 1) as a polynomial in the exponentials
    for k in range(n):
        for ring in itertools.combinations(range(len(qH)), k):
            term = 1
            for i in range(len(qH)):
                e = sp.exp(-qH[i] * tt)
                term *= (1 - e) if i in ring else e
            survive += term
    total = 0
    for term in sp.Add.make_args(sp.expand(survive)):
        coef, expo = term.as_independent(tt)
        rate = -sp.log(expo).expand(force=True).coeff(tt) if expo != 1 else 0
        total += coef * lam_H / (lam_H + rate)
    return 1 - total


q3 = sp.symbols("q1:4", positive=True)
lam3 = 1 - sum(q3)
for n_ in (2, 3):
    ordered = sum(
        math.prod(q3[t[j]] / (1 - sum(q3[t[m]] for m in range(j))) for j in range(n_))
        for t in itertools.permutations(range(3), n_)
    )
    assert sp.simplify(Q_clocks(q3, n_) - ordered) == 0
h3 = 3
theory_n3 = 1 - lam3 * (
    R((h3 - 1) * (h3 - 2), 2)
    + (2 - h3) * sum(1 / (1 - qi) for qi in q3)
    + sum(1 / (1 - q3[i] - q3[k]) for i, k in itertools.combinations(range(3), 2))
)
assert sp.simplify(Q_clocks(q3, 3) - theory_n3) == 0
closed_n2 = sum(q3[i] * (sum(q3) - q3[i]) / (1 - q3[i]) for i in range(3))
assert sp.simplify(Q_clocks(q3, 2) - closed_n2) == 0
print("clock integral = ordered draws = docs/theory.md §2.5(b) for |H| = 3, n = 2, 3")

# %% [markdown]
# The general inclusion-exclusion form of 2.5(b),
# $Q(H) = 1 - \lambda\sum_{w=0}^{n-1} (-1)^{n-1-w}\binom{h-w-1}{n-1-w}\sum_{|W| = w} 1/(1 - q(W))$,
# against the ordered-draw definition and the library's reference `draft_set_probability`, in
# exact arithmetic ($n \le 4$, $|H| \le 6$); the clock integral by numerical quadrature; and
# $Q_{\text{wor}}(H) \le q(H)^n$ (docs/theory.md §2.7).


# %%
def Q_inclusion_exclusion(q, H, n):
    H = sorted(H)
    hh = len(H)
    if hh < n:
        return Fraction(0)
    lam_H = 1 - sum(q[i] for i in H)
    total = Fraction(0)
    for w in range(n):
        inner = sum(
            (
                Fraction(1) / (1 - sum((q[i] for i in W), Fraction(0)))
                for W in itertools.combinations(H, w)
            ),
            Fraction(0),
        )
        total += (-1) ** (n - 1 - w) * math.comb(hh - w - 1, n - 1 - w) * inner
    return 1 - lam_H * total


def Q_quadrature(q, H, n):
    qH = np.array([float(q[i]) for i in H])
    lam_H = 1.0 - qH.sum()

    def survive(t):  # P(N_H(t) <= n - 1), Poisson-binomial by dynamic programming
        dist = np.zeros(n)
        dist[0] = 1.0
        for qi in qH:
            ring = -np.expm1(-qi * t)
            dist[1:] = dist[1:] * (1 - ring) + dist[:-1] * ring
            dist[0] *= 1 - ring
        return dist.sum()

    val, _ = quad(
        lambda t: lam_H * np.exp(-lam_H * t) * survive(t),
        0,
        np.inf,
        epsabs=1e-13,
        epsrel=1e-13,
        limit=200,
    )
    return 1.0 - val


rng = np.random.default_rng(6)
for _ in range(30):
    V_ = int(rng.integers(3, 8))
    n_ = int(rng.integers(2, min(V_, 4) + 1))
    q_r = random_rational(V_, rng)
    H = [i for i in range(V_) if rng.random() < 0.7]
    if len(H) == V_:
        H = H[:-1]
    exact = Q_of(q_r, H, n_, "wor") if len(H) <= 6 else None
    ie = Q_inclusion_exclusion(q_r, H, n_)
    if exact is not None:
        assert ie == exact
    lib = st.draft_set_probability(
        np.array(q_r, dtype=object), H, n=n_, sampling="without_replacement"
    )
    assert lib == ie
    assert abs(Q_quadrature(q_r, H, n_) - float(ie)) < 1e-10
    assert ie <= sum((q_r[i] for i in H), Fraction(0)) ** n_
print("inclusion-exclusion = ordered draws = library reference = clock quadrature; Q_wor <= q(H)^n")

# %% [markdown]
# Finally the library's fast without-replacement bound (prefix scan with the clock integral)
# against exact enumeration of all subsets, on random instances:

# %%
rng = np.random.default_rng(7)
worst = 0.0
for _ in range(12):
    V_ = int(rng.integers(3, 7))
    n_ = int(rng.integers(2, min(V_, 4) + 1))
    p_r, q_r = random_rational(V_, rng), random_rational(V_, rng)
    exact_value = min(all_objectives(p_r, q_r, n_, "wor").values())
    fast = st.bound(
        np.array(p_r, dtype=float), np.array(q_r, dtype=float), n=n_, sampling="without_replacement"
    )
    worst = max(worst, abs(fast - float(exact_value)))
assert worst < 1e-12
# docs/theory.md §8.1: 139/140 for instance A, n = 2 without replacement
assert min(all_objectives(p_A, q_A, 2, "wor").values()) == R(139, 140)
print(f"fast without-replacement bound vs exact: max error {worst:.1e}")
