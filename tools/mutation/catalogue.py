# ruff: noqa: E501  (mutants quote whole source lines)
"""The catalogue of realistic mutants of spectheory's core modules (tools/mutation/run.py).

Each mutant is one textual edit of one module, written the way the bug classes
of docs/theory.md §7.5 and issue reports happen: an off-by-one, a flipped
comparison, a dropped renormalisation, p and q swapped, a coin read twice, a
wrong degree of freedom.  ``old`` must occur exactly once in the module (the
runner refuses a stale entry).  ``tests`` are the pytest arguments that cover
the module (run under the ``ci`` hypothesis profile, ``-x``).  ``equivalent``
gives the reason when the mutant cannot change any observable result; those are
run too but left out of the score.
"""

from __future__ import annotations

from typing import NamedTuple


class Mutant(NamedTuple):
    id: str
    module: str
    old: str
    new: str
    why: str
    tests: tuple
    equivalent: str = ""


# Covering tests per module family: the fast, exact ones first (``-x`` stops at the first
# failure, so a killed mutant costs seconds; a survivor costs the whole selection).
V_REF = ("tests/test_handfed.py", "tests/verifiers/test_registered.py", "-k", "reference or verif or lossless or law")
EXACT = ("tests/test_mutation_kills.py", "tests/test_exact_values.py", "tests/verifiers/test_registered.py", "-k", "bug or exact or law")
BOUND = ("tests/solvers/test_ot_dual.py",)
KERN = ("tests/test_handfed.py", "tests/sim/test_kernels.py", "-k", "numba or replay")
TORCH = ("tests/test_handfed.py", "tests/torch/test_verifiers.py", "-k", "torch or replay")
SPEC = ("tests/test_exact_values.py", "tests/solvers/test_specdecpp.py", "-k", "not bug and not checker")
TREES = ("tests/test_mutation_kills.py", "tests/sim/test_tree_replay.py", "tests/trees/test_exact.py")
CHECK = ("tests/test_exact_values.py", "tests/sim/test_check.py", "-k", "checker or flag or lossy or impossible")

MUTANTS = [
    # ------------------------------------------------------------ verifiers (reference)
    Mutant(
        "ops-q0-accept",
        "spectheory/verifiers/_ops.py",
        "    return 0 * num\n",
        "    return 1 + 0 * num\n",
        "a drafted token with q = 0 accepted (the old rule)",
        V_REF,
    ),
    Mutant(
        "ops-residual-unnormalised",
        "spectheory/verifiers/_ops.py",
        "    return normalise_or(positive_part(r - q), r)",
        "    return positive_part(r - q)",
        "residual not renormalised",
        V_REF,
    ),
    Mutant(
        "rrs-residual-from-p",
        "spectheory/verifiers/rrs.py",
        "            return x\n        r = residual(r, q)\n",
        "            return x\n        r = residual(p, q)\n",
        "RRS residual recomputed from p instead of r_k",
        V_REF,
    ),
    Mutant(
        "rrs-dedup",
        "spectheory/verifiers/rrs.py",
        "    r = p\n    for x in drafts:\n",
        "    r = p\n    for x in dict.fromkeys(drafts):\n",
        "pitfall P1: repeated i.i.d. drafts skipped",
        V_REF,
    ),
    Mutant(
        "rrs_wor-original-q",
        "spectheory/verifiers/rrs.py",
        "        r = residual(r, qc)\n",
        "        r = residual(r, q)\n",
        "pitfall P3: residual against the original q",
        V_REF,
    ),
    Mutant(
        "rrs_wor-q-unnormalised",
        "spectheory/verifiers/rrs.py",
        "        qc = normalise_or(removed, qc)\n",
        "        qc = removed\n",
        "draft law not renormalised after removing a draft",
        V_REF,
    ),
    Mutant(
        "sd-swapped-pq",
        "spectheory/verifiers/single.py",
        "    if coins.bernoulli(accept_prob(p[x], q[x])):",
        "    if coins.bernoulli(accept_prob(q[x], p[x])):",
        "accept ratio q/p instead of p/q",
        V_REF,
    ),
    Mutant(
        "sd-residual-swapped",
        "spectheory/verifiers/single.py",
        "    return coins.categorical(residual(p, q))",
        "    return coins.categorical(residual(q, p))",
        "residual (q - p)+ instead of (p - q)+",
        V_REF,
    ),
    Mutant(
        "kseq-no-rho",
        "spectheory/verifiers/kseq.py",
        "accept_prob(p[x], rho * q[x])",
        "accept_prob(p[x], q[x])",
        "K-SEQ accept ratio without rho",
        V_REF,
    ),
    Mutant(
        "kseq-pacc-off-by-one",
        "spectheory/verifiers/kseq.py",
        "    p_acc = 1 - (1 - b) ** n\n",
        "    p_acc = 1 - (1 - b) ** (n - 1)\n",
        "off-by-one exponent in the acceptance of the residual",
        V_REF,
    ),
    Mutant(
        "kseq-first-no-rho",
        "spectheory/verifiers/kseq.py",
        "    first = np.minimum(q, p / rho)\n",
        "    first = np.minimum(q, p)\n",
        "residual built without rho",
        V_REF,
    ),
    Mutant(
        "greedy-residual-q",
        "spectheory/verifiers/hub.py",
        "    return coins.categorical(residual(p, qt))",
        "    return coins.categorical(residual(p, q))",
        "greedy residual against q instead of q_tilde",
        V_REF,
    ),
    Mutant(
        "spechub-pair-coin-flipped",
        "spectheory/verifiers/hub.py",
        "    if coins.bernoulli(1 - q[a]):",
        "    if coins.bernoulli(q[a]):",
        "pair-type coin with the complementary probability",
        V_REF,
    ),
    Mutant(
        "spechub-p2a-wrong-sum",
        "spectheory/verifiers/hub.py",
        "    p2a = max(p[a] - s_ai, z)",
        "    p2a = max(p[a] - s_ia, z)",
        "hub budget from the wrong excess sum",
        V_REF,
    ),
    Mutant(
        "nss-no-renormalise",
        "spectheory/verifiers/pointmass.py",
        "        r = normalise_or(rest, r)\n",
        "        r = rest\n",
        "point-mass recursion without renormalisation",
        V_REF,
    ),
    Mutant(
        "khisti-residual-q",
        "spectheory/verifiers/coupling.py",
        "    return coins.categorical(residual(p, r_beta))",
        "    return coins.categorical(residual(p, q))",
        "canonical decomposition: residual against q instead of the selection law",
        ("tests/verifiers/test_registered.py",),
    ),
    Mutant(
        "typical-threshold-max",
        "spectheory/verifiers/typical.py",
        "    threshold = min(POSTERIOR_THRESHOLD, POSTERIOR_ALPHA * math.exp(-entropy))",
        "    threshold = max(POSTERIOR_THRESHOLD, POSTERIOR_ALPHA * math.exp(-entropy))",
        "flipped min/max in Medusa's threshold",
        ("tests/verifiers/test_registered.py", "tests/test_handfed.py", "-k", "typical"),
    ),
    # ------------------------------------------------------------ exact laws
    Mutant(
        "tuples-wor-unnormalised",
        "spectheory/exact/_tuples.py",
        "            w = w * q[x] / (total - used if used * 2 <= total else _rest(q, support, t, x))",
        "            w = w * q[x]",
        "ordered draws without replacement not renormalised",
        EXACT,
    ),
    Mutant(
        "tuples-wor-unordered",
        "spectheory/exact/_tuples.py",
        "    for t in itertools.permutations(support, n):",
        "    for t in itertools.combinations(support, n):",
        "draw order lost (combinations for permutations)",
        EXACT,
    ),
    Mutant(
        "law-acceptance-first-draft",
        "spectheory/exact/_law.py",
        "            if y in members:",
        "            if y == drafts[0]:",
        "membership acceptance counts the first draft only",
        EXACT,
    ),
    Mutant(
        "law-unweighted",
        "spectheory/exact/_law.py",
        "            law[y] = law[y] + weight * w",
        "            law[y] = law[y] + w",
        "draft tuple weight dropped",
        EXACT,
    ),
    # ------------------------------------------------------------ bound
    Mutant(
        "greedy-min-with-q",
        "spectheory/solvers/ot_dual.py",
        "    value = pT + np.where(inT, 0.0, np.minimum(p, qt)).sum(axis=1)",
        "    value = pT + np.where(inT, 0.0, np.minimum(p, q)).sum(axis=1)",
        "greedy closed form with q instead of q_tilde",
        BOUND,
    ),
    Mutant(
        "greedy-normaliser-1-qT",
        "spectheory/solvers/ot_dual.py",
        "    qt = rest / rest.sum(axis=1)[:, None]",
        "    qt = rest / (1.0 - np.where(inT, q, 0.0).sum(axis=1))[:, None]",
        "q_tilde normalised by 1 - q(T) (rounds to 0 at low temperature)",
        BOUND,
    ),
    Mutant(
        "wor-cert-off-by-one",
        "spectheory/solvers/ot_dual.py",
        '        cert[b, order[b, : kbest[b]]] = True\n    return 1.0 + best, cert, "prefix scan with exp',
        '        cert[b, order[b, : max(kbest[b] - 1, 0)]] = True\n    return 1.0 + best, cert, "prefix scan with exp',
        "without-replacement certificate one token short",
        BOUND,
    ),
    Mutant(
        "iid-cert-off-by-one",
        "spectheory/solvers/_bound_kernels.py",
        "        for k in range(best_inner + 1):",
        "        for k in range(best_inner):",
        "i.i.d. certificate one boundary token short (value moves by 1e-12..1e-9)",
        BOUND,
    ),
    Mutant(
        "iid-excluded-mass-dropped",
        "spectheory/solvers/_bound_kernels.py",
        "    acc = excluded\n",
        "    acc = 0.0\n",
        "draft mass of tokens above the ratio limit left out of q(H)",
        BOUND,
    ),
    # ------------------------------------------------------------ numba kernels
    Mutant(
        "k-sd-coin-reuse",
        "spectheory/sim/_kernels.py",
        "            out[b, t] = x\n        else:\n            out[b, t] = _search(cum[b], u[b, t, 1], last[b])\n\n\n@njit(cache=True, parallel=True)\ndef _k_greedy",
        "            out[b, t] = x\n        else:\n            out[b, t] = _search(cum[b], u[b, t, 0], last[b])\n\n\n@njit(cache=True, parallel=True)\ndef _k_greedy",
        "SD residual drawn with the accept coin (RNG reuse)",
        KERN,
    ),
    Mutant(
        "k-q0-accept",
        "spectheory/sim/_kernels.py",
        "        return ratio if ratio < 1.0 else 1.0\n    return 0.0\n",
        "        return ratio if ratio < 1.0 else 1.0\n    return 1.0\n",
        "a drafted token with q = 0 accepted",
        KERN,
    ),
    Mutant(
        "k-rrs-stale-residual",
        "spectheory/sim/_kernels.py",
        "_accept(chain[b, k, x], q[b, x])",
        "_accept(chain[b, 0, x], q[b, x])",
        "RRS kernel tests every draft against r_1 = p",
        KERN,
    ),
    Mutant(
        "k-kseq-one-coin",
        "spectheory/sim/_kernels.py",
        "            if u[b, t, k] < _accept(p[b, x], rho[b] * q[b, x]):",
        "            if u[b, t, 0] < _accept(p[b, x], rho[b] * q[b, x]):",
        "K-SEQ kernel reads one uniform for every draft",
        KERN,
    ),
    Mutant(
        "k-rrs_wor-q-unnormalised",
        "spectheory/sim/_kernels.py",
        "                qc[i] = qc[i] / tot\n",
        "                qc[i] = qc[i]\n",
        "RRS-wor kernel keeps q_k unnormalised",
        KERN,
    ),
    Mutant(
        "k-search-flipped",
        "spectheory/sim/_kernels.py",
        "        if cum[mid] > u:\n",
        "        if cum[mid] >= u:\n",
        "inverse CDF with >= (a zero-mass token at u = cum)",
        KERN,
    ),
    Mutant(
        "k-nss-no-renormalise",
        "spectheory/sim/_kernels.py",
        "            prob = p[b, x] if m == 0 else p[b, x] / (cum[b, V - 1] - taken)",
        "            prob = p[b, x]",
        "point-mass kernel without renormalisation",
        KERN,
    ),
    Mutant(
        "k-wor-draft-mass",
        "spectheory/sim/_kernels.py",
        "            taken += q[b, y]\n",
        "            taken = q[b, y]\n",
        "drafting without replacement forgets earlier draws' mass",
        KERN,
    ),
    # ------------------------------------------------------------ torch verifiers
    Mutant(
        "t-kseq-coin-twice",
        "spectheory/torch/verifiers.py",
        "        out = torch.where((out < 0) & _ops.bernoulli(u[:, k], prob), x, out)",
        "        first = (d == x[:, None]).to(torch.int64).argmax(dim=-1)\n"
        "        out = torch.where((out < 0) & _ops.bernoulli(u.gather(1, first[:, None])[:, 0], prob), x, out)",
        "a repeated draft reads its first copy's uniform again",
        TORCH,
    ),
    Mutant(
        "t-rrs_wor-q-unnormalised",
        "spectheory/torch/verifiers.py",
        "            qc = _ops.normalise_or(qc.scatter(-1, x[:, None], 0.0), qc)",
        "            qc = qc.scatter(-1, x[:, None], 0.0)",
        "torch RRS-wor skips the renormalisation of q_k",
        TORCH,
    ),
    Mutant(
        "t-residual-unnormalised",
        "spectheory/torch/verifiers.py",
        "        r_next = _ops.residual(r, qc)",
        "        r_next = torch.clamp_min(r - qc, 0.0)",
        "torch RRS residual not renormalised",
        TORCH,
    ),
    Mutant(
        "t-spechub-coin",
        "spectheory/torch/verifiers.py",
        "    pair_ia = _ops.bernoulli(u[:, 0], 1 - qa)",
        "    pair_ia = _ops.bernoulli(u[:, 1], 1 - qa)",
        "pair-type coin reads the accept coin",
        TORCH,
    ),
    Mutant(
        "t-nss-coin-count",
        "spectheory/torch/verifiers.py",
        "        m = m + rejected.to(torch.int64)",
        "        m = m + live.to(torch.int64)",
        "coin counter also advanced on acceptance",
        TORCH,
        equivalent="an accepted row never reads another coin",
    ),
    # ------------------------------------------------------------ checker
    Mutant(
        "check-impossible-never",
        "spectheory/sim/check.py",
        "        impossible += int(counts[p[b] == 0].sum())",
        "        impossible += int(counts[p[b] < 0].sum())",
        "outputs of target probability 0 never flagged",
        CHECK,
    ),
    Mutant(
        "check-bound-no-bonferroni",
        "spectheory/sim/check.py",
        "    exceeds = excess_p * m <= alpha",
        "    exceeds = excess_p <= alpha",
        "bound test without the multiple-testing factor",
        CHECK,
    ),
    Mutant(
        "check-strict-alpha",
        "spectheory/sim/check.py",
        "    lossy = bool(impossible or p_value <= alpha)",
        "    lossy = bool(impossible or p_value < alpha)",
        "verdict at p < alpha instead of p <= alpha",
        CHECK,
        equivalent="p-values are continuous; p = 0 exactly only with impossible outputs",
    ),
    # ------------------------------------------------------------ SpecDec++
    Mutant(
        "specdecpp-continue-on-ties",
        "spectheory/solvers/specdecpp.py",
        "            cont = G > 0.0\n",
        "            cont = G >= 0.0\n",
        "ties broken towards drafting",
        SPEC,
    ),
    Mutant(
        "specdecpp-drafts-off-by-one",
        "spectheory/solvers/specdecpp.py",
        "        D = np.where(cont, 1.0 + (lv.prob * D[lv.child]).sum(axis=1), 0.0)",
        "        D = np.where(cont, (lv.prob * D[lv.child]).sum(axis=1), 0.0)",
        "drafts per round off by one",
        SPEC,
    ),
    Mutant(
        "specdecpp-root-not-in-groups",
        "spectheory/solvers/specdecpp.py",
        "            sel = use & ((lv.last == g) | (lv.last < 0)) if markov else use",
        "            sel = use & (lv.last == g) if markov else use",
        "Markov threshold interval ignores the root",
        SPEC,
    ),
    Mutant(
        "specdecpp-model-reach",
        "spectheory/solvers/specdecpp.py",
        "        go = seen[k] & conts[k]\n",
        "        go = seen[k]\n",
        "threshold interval over model-reachable states (states behind a stop)",
        SPEC,
    ),
    Mutant(
        "specdecpp-tokens-off-by-one",
        "spectheory/solvers/specdecpp.py",
        "        new = (t_target + t_draft * D) / (1.0 + N)",
        "        new = (t_target + t_draft * D) / N",
        "bonus token left out of the tokens per round",
        SPEC,
    ),
    # ------------------------------------------------------------ trees
    Mutant(
        "tree-token-residual-p",
        "spectheory/trees/verify.py",
        "            out.append(coins.categorical(residual(p, q)))",
        "            out.append(coins.categorical(p))",
        "token-level tree verification draws the correction from p",
        TREES,
    ),
    Mutant(
        "tree-traversal-w-undivided",
        "spectheory/trees/verify.py",
        "    w_new = total / den if den > 0 else 1 + 0 * total",
        "    w_new = total",
        "traversal update without the Z / (Z + 1 - w) normalisation",
        TREES,
    ),
    Mutant(
        "tree-block-h-undivided",
        "spectheory/trees/verify.py",
        "        h.append(z / den if den > 0 else 1 + 0 * z)",
        "        h.append(z)",
        "block verification stop probability not normalised",
        TREES,
    ),
    Mutant(
        "treek-q0-accept",
        "spectheory/sim/_tree_kernels.py",
        "            ratio = num / den if den > 0 else 0.0",
        "            ratio = num / den if den > 0 else 1.0",
        "block kernel: a q = 0 draft accepted",
        TREES,
    ),
    Mutant(
        "treek-h-undivided",
        "spectheory/sim/_tree_kernels.py",
        "            h[i, a] = z / den if den > 0 else 1.0",
        "            h[i, a] = z",
        "block kernel stop probability not normalised",
        TREES,
    ),
]
