"""Mutation kills for the torch backend: verifiers, input checks, chain and RRS entry points,
the differentiable bound and the draft-training losses.

Each test is deterministic and cheap, and names in its docstring the bug it
catches; the expected values come from hand computation (exact in binary where
equality is asserted), the coins reference verifiers, or the definitions,
never from the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from spectheory import (
    InvalidDistributionError,
    InvalidParameterError,
)
from spectheory.coins import ReplayCoins
from spectheory.torch import (
    bound,
    chain_speculative_sampling,
    draft_loss,
    kseq_rho,
    recursive_rejection_sampling,
    verify,
)
from spectheory.torch._checks import draw_uniforms
from spectheory.torch.losses import parse_loss
from spectheory.verifiers import REGISTRY
from spectheory.verifiers import kseq_rho as kseq_rho_reference

D = torch.float64

# --------------------------------------------------------------------------- verifiers.py


def test_kseq_rho_is_exactly_one_when_target_equals_draft():
    """Bug: K-SEQ's bisection started whenever ``g(1) >= 0`` instead of ``g(1) > 0``.

    With ``p = q`` every draft is accepted at ``rho = 1``:
    :math:`\\beta(1) = 1` and :math:`g(1) = 1 - 0^n - 1 = 0`, so
    :math:`\\rho^* = 1` exactly (the reference returns 1.0).  Bisecting from
    a zero ``g(1)`` converges to the smallest float above 1, and then the
    accept probability :math:`1/\\rho` is below 1: the coin
    ``u = 1 - 2^{-53}`` rejects the first draft, which the reference accepts.
    """
    p = np.array([0.5, 0.25, 0.25])
    for n in (2, 3):
        assert kseq_rho_reference(p, p, n) == 1.0
        pt = torch.tensor(np.stack([p, p]), dtype=D)
        assert kseq_rho(pt, pt, n).tolist() == [1.0, 1.0]
    u = np.array([1.0 - 2.0**-53, 0.5, 0.5, 0.5])
    want = REGISTRY["kseq"].function(p, p, (0, 1, 2), ReplayCoins(u))
    assert want == 0
    pt = torch.tensor(p[None], dtype=D)
    out = verify("kseq", pt, pt, torch.tensor([[0, 1, 2]]), uniforms=torch.tensor(u[None]))
    assert out.tokens.tolist() == [0] and out.accepted.tolist() == [True]


def test_kseq_rho_keeps_a_midpoint_where_g_is_exactly_zero_as_the_upper_end():
    """Bug: the bisection moved the lower end to a midpoint where ``g`` is exactly 0
    (``g < 0`` for ``g <= 0``), so it converged to the float above the root.

    ``p = (3/8, 5/8)``, ``q = (3/4, 1/4)``, ``n = 2``: at :math:`\\rho = 3/2` (the first
    midpoint of [1, 2]) :math:`\\beta = \\min(1/4, 3/4) + \\min(5/12, 1/4) = 1/2` and
    :math:`g = 1 - (1/2)^2 - (3/2)(1/2) = 0`, all exact in binary; ``g`` is
    decreasing there, so :math:`\\rho^* = 3/2` exactly (the reference agrees).
    """
    p = np.array([0.375, 0.625])
    q = np.array([0.75, 0.25])
    assert kseq_rho_reference(p, q, 2) == 1.5
    assert kseq_rho(torch.tensor(p[None]), torch.tensor(q[None]), 2).tolist() == [1.5]


@pytest.mark.parametrize("name", ["greedy", "spechub"])
def test_greedy_split_breaks_ties_in_the_draft_to_the_lowest_id(name):
    """Bug: the greedy split of the verifiers took the top draft tokens by an unstable
    sort, so with tied draft probabilities the fixed draft was not the lowest id: the
    drafts of the greedy law were refused, or verified against the wrong ``T``.

    Uniform ``q`` over ``V = 100`` tokens (torch's unstable CPU sort reorders
    ties there), two greedy drafts: the fixed draft is token 0
    (:func:`spectheory.drafting.greedy_split`), the last one any other token.
    The tokens equal the coins reference's for the same uniforms.
    """
    V = 100
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(V), size=6)
    q = np.full((6, V), 1.0 / V)
    d = np.array([[0, x] for x in (1, 5, 50, 62, 99, 7)])
    u = rng.random((6, 4))
    fn = REGISTRY[name].function
    want = [fn(p[b], q[b], tuple(d[b]), ReplayCoins(u[b]), sampling="greedy") for b in range(6)]
    k = 4 if name == "spechub" else 2
    out = verify(
        name,
        torch.tensor(p),
        torch.tensor(q),
        torch.tensor(d),
        uniforms=torch.tensor(u[:, :k]),
        sampling="greedy",
    )
    assert out.tokens.tolist() == want


def test_typical_acceptance_needs_a_probability_strictly_above_the_threshold():
    """Bug: typical acceptance accepted a draft whose target probability equals the
    threshold (``>=`` for Medusa's ``>``).

    ``p = (0.09, 0.91)`` has entropy about 0.30, so
    :math:`0.3\\,e^{-H} \\approx 0.22` and the threshold is the cap
    :math:`\\varepsilon = 0.09`, exactly the float ``p_0``: draft 0 does not pass and
    the output is the target's argmax, token 1 (the reference agrees).
    """
    p = np.array([0.09, 0.91])
    entropy = -(p * np.log(p + 1e-5)).sum()  # Medusa's, with its 1e-5
    assert 0.3 * math.exp(-entropy) > 0.09
    assert REGISTRY["typical"].function(p, None, (0,), None) == 1
    pt = torch.tensor(p[None], dtype=D)
    out = verify("typical", pt, pt, torch.tensor([[0]]), uniforms=torch.zeros((1, 0), dtype=D))
    assert out.tokens.tolist() == [1]


def test_optimal_sends_a_draft_of_mass_3e_16_to_the_reference():
    """Bug: the cut-off below which a tiny-mass draft's row is decided by the reference was
    lowered (``TINY_CONTACT`` of 2^-60 instead of 2^-40), so a draft of mass 3.3e-16 at
    ``u_0 = 0.48`` (``q_x u_0 = 1.6e-16``, below 2^-40 but above 2^-60) was placed by the
    secant search, whose contact comparisons cannot resolve it: it selected the tiny
    draft (token 5), where the reference's merge sweep selects token 1.

    Oracles: the coins reference and the numba kernel, on the same uniforms.
    """
    from spectheory.sim._optimal_kernel import run_optimal
    from spectheory.verifiers.optimal import optimal

    p = np.array(
        [
            0.00044664274787210764,
            0.3509775365025859,
            0.14915149628061464,
            0.411428263823817,
            3.425133425991477e-05,
            4.817720645845013e-16,
            0.013071316203690243,
            0.07489049310715977,
        ]
    )
    q = np.array(
        [
            0.012351638000241876,
            0.17019839951689775,
            0.06306974328897946,
            0.1722347500304141,
            0.06445925714474404,
            3.3036354503990883e-16,
            0.04564883944297794,
            0.47203737257574446,
        ]
    )
    d = (5, 1, 3)
    u = np.array([0.4799879238078322, 0.23237291963930384, 0.8018805787183079])
    want = optimal(p, q, d, ReplayCoins(u))
    assert want == 1
    assert run_optimal(p[None], q[None], np.array([[d]]), u[None, None])[0, 0] == want
    out = verify(
        "optimal",
        torch.tensor(p[None]),
        torch.tensor(q[None]),
        torch.tensor([d]),
        uniforms=torch.tensor(u[None]),
    )
    assert out.tokens.tolist() == [want]


# --------------------------------------------------------------------------- _ops.py


def test_a_rejection_with_no_residual_mass_draws_from_the_target():
    """Bug: ``normalise_or`` took every row as having mass (``total >= 0``), so a rejected
    row whose residual ``(p - q)_+`` is all zero became 0/0 = NaN and the inverse CDF
    returned the last token (2) instead of falling back to ``p``.

    Such a row is a rejection by rounding: ``p = [0.2, 0.3, 0.5 - 2^-54]`` sums to 1 in
    float64 (kept as given) and lies below ``q = [0.2, 0.3, 0.5]`` everywhere, so draft 2
    is accepted with probability ``1 - 2^-53``, which the coin ``1 - 2^-53`` fails.  The
    fallback law is ``p`` (the reference's ``residual``); the coin 0.1 draws token 0 from it
    (hand computation: 0.1 < p_0 = 0.2).  Checked on ``sd``, ``rrs``, ``rrs_wor`` and the
    chain round, each against the coins reference or that hand value.
    """
    p = [0.2, 0.3, 0.5 - 2.0**-54]
    q = [0.2, 0.3, 0.5]
    assert sum(p) == 1.0 and p[2] < q[2]  # kept as given; (p - q)_+ = 0
    P, Q = torch.tensor([p], dtype=D), torch.tensor([q], dtype=D)
    no = 1 - 2.0**-53
    for name, sampling, drafts, u in [
        ("sd", "iid", (2,), [no, 0.1]),
        ("rrs", "iid", (2, 2), [no, no, 0.1]),
        ("rrs_wor", "without_replacement", (2,), [no, 0.1]),
    ]:
        want = REGISTRY[name].function(
            np.array(p), np.array(q), drafts, ReplayCoins(np.array(u)), sampling=sampling
        )
        out = verify(name, P, Q, torch.tensor([drafts]), uniforms=torch.tensor([u], dtype=D),
                     sampling=sampling)
        assert want == 0 and out.tokens.tolist() == [0], name
    res = chain_speculative_sampling(
        torch.tensor([[p, p]], dtype=D), torch.tensor([[q]], dtype=D), torch.tensor([[2]]),
        uniforms=torch.tensor([[no, 0.1]], dtype=D), backend="torch",
    )
    assert res.output_token_ids.tolist() == [[0, -1]]


# --------------------------------------------------------------------------- _checks.py


def test_an_infinite_entry_is_named_non_finite():
    """Bug: the finiteness check let ``+inf`` through (``<= inf`` for ``< inf``), so the
    error became a confusing "row sums to inf" or, for a float16 overflow, nothing
    clear about the entry.

    ``(inf, 0, 0)`` is refused with the entry's index, as NaN is.
    """
    inf = float("inf")
    p = torch.tensor([[0.5, 0.5, 0.0]], dtype=D)
    with pytest.raises(InvalidDistributionError, match=r"non-finite entry inf at index \(0, 0\)"):
        verify("sd", torch.tensor([[inf, 0.0, 0.0]], dtype=D), p, torch.tensor([[0]]))


def test_each_row_off_beyond_rounding_is_renormalised_in_a_mixed_batch():
    """Bug: the check left the whole batch as given when *any* row's sum was 1 within
    rounding (``.any()`` for ``.all()``), so a row off by 3e-10 (within the float64
    tolerance 1e-9, beyond rounding) beside an exact row was used unnormalised.

    Row 0 sums to 1 exactly (dyadic entries); row 1 is row 0 times ``1 + 3e-10``.
    Each returned row equals the numpy check's row (row 1 divided by its sum), so
    both rows of the output are the same distribution to rounding.
    """
    from spectheory._validate import as_distribution_pair
    from spectheory.torch._checks import check_probabilities

    exact = np.array([0.25, 0.25, 0.125, 0.375])
    x = np.stack([exact, exact * (1 + 3e-10)])
    got = check_probabilities(torch.tensor(x), "target", 2).numpy()
    for b in range(2):
        want = as_distribution_pair(x[b : b + 1], x[b : b + 1])[0][0]
        assert np.array_equal(got[b], want), b
    assert abs(got[1].sum() - 1.0) < 1e-15
    assert np.array_equal(got[0], exact)


def test_a_generator_on_another_device_type_is_refused():
    """Bug: the generator's device was not compared with the tensors' device, so a CUDA
    generator with CPU tensors (or the reverse) failed deep inside ``torch.rand`` or,
    with a stand-in generator, drew from the wrong stream silently.

    A ``torch.Generator`` reporting device ``cuda`` is refused for CPU tensors
    with an error naming both devices.
    """

    class CudaReporting(torch.Generator):
        @property
        def device(self):
            return torch.device("cuda")

    with pytest.raises(InvalidParameterError, match="generator is on device cuda"):
        draw_uniforms((2, 3), torch.device("cpu"), CudaReporting())


# ------------------------------------------------------------------ chain.py, multidraft.py


def test_chain_checks_injected_uniforms_when_validating():
    """Bug: with ``validate=True`` the injected uniforms were converted but not checked,
    so ``u = 1`` (outside [0, 1)) or a NaN silently decided the round.
    """
    p = torch.tensor([[[0.3, 0.4, 0.3]] * 2], dtype=D)
    q = torch.tensor([[[0.6, 0.3, 0.1]]], dtype=D)
    for bad in (1.0, float("nan"), -0.25):
        u = torch.tensor([[0.5, bad]], dtype=D)
        with pytest.raises(InvalidParameterError, match=r"uniforms\[0, 1\]"):
            chain_speculative_sampling(p, q, torch.tensor([[0]]), uniforms=u, backend="torch")


def test_rrs_without_validation_draws_one_uniform_per_draft_and_one_for_the_residual():
    """Bug: the unvalidated path of ``recursive_rejection_sampling`` drew ``(B, n)``
    uniforms instead of ``(B, n + 1)``: an index error (or a reused coin) at the residual.

    With the same generator seed the unvalidated call returns the validated
    call's tokens (both read ``n + 1`` uniforms per row in the same order);
    ``p`` and ``q`` are disjoint, so every draft is rejected (``p(x) = 0``) and
    the residual draw is reached on every row.
    """
    p = torch.tensor([[0.0, 0.0, 0.5, 0.5]] * 8, dtype=D)
    q = torch.tensor([[0.5, 0.5, 0.0, 0.0]] * 8, dtype=D)
    d = torch.tensor([[0, 1], [1, 0], [0, 0], [1, 1]] * 2)
    for sampling, drafts in (("iid", d), ("without_replacement", d[:2].repeat(4, 1))):
        a = recursive_rejection_sampling(
            p,
            q,
            drafts,
            sampling=sampling,
            backend="torch",
            generator=torch.Generator().manual_seed(3),
        )
        b = recursive_rejection_sampling(
            p,
            q,
            drafts,
            sampling=sampling,
            backend="torch",
            generator=torch.Generator().manual_seed(3),
            validate=False,
        )
        assert torch.equal(a.tokens, b.tokens)
        assert set(a.tokens.tolist()) <= {2, 3} and not a.accepted.any()


# --------------------------------------------------------------------------- bound.py


def test_iid_gradient_at_a_tie_is_that_of_the_shortest_optimal_prefix():
    """Bug: the i.i.d. solver took the last minimiser of the prefix objective (the longest
    optimal prefix) instead of the first, against the documented subgradient.

    ``p = (1/4, 1/4, 1/2)``, ``q = (1/2, 1/4, 1/4)``, ``n = 1``: the ratio order is
    0, 1, 2 and the objective :math:`p(H) - q(H)` is 0, -1/4, -1/4, 0 over the
    prefixes (exact in binary), so :math:`\\alpha^* = 3/4` with ``H = {0}`` and
    ``H = {0, 1}`` tied.  The shortest, ``{0}``, has the gradient of
    :math:`-q_0/\\sum q`: :math:`(-1 + 1/2, 1/2, 1/2)`; ``{0, 1}`` would give
    :math:`(-1/4, -1/4, 3/4)`.
    """
    p = torch.tensor([0.25, 0.25, 0.5], dtype=D)
    q = torch.tensor([0.5, 0.25, 0.25], dtype=D, requires_grad=True)
    a = bound(p, q, 1)
    a.backward()
    assert float(a.detach()) == 0.75
    assert q.grad.tolist() == [-0.5, 0.5, 0.5]


def test_greedy_bound_with_as_many_drafts_as_tokens():
    """Bug: the greedy law refused ``n = V`` (``n >= V`` for ``n > V``).

    With ``n = V = 3`` the fixed drafts are the top two tokens of ``q`` and the
    last draft is the remaining token with probability 1, so every token is
    covered: :math:`\\alpha^* = p(T) + \\min(p_2, 1) = 1`.  ``n = 4 > V`` is refused.
    """
    p = torch.tensor([0.3, 0.4, 0.3], dtype=D)
    q = torch.tensor([0.5, 0.3, 0.2], dtype=D)
    assert float(bound(p, q, 3, "greedy")) == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(InvalidParameterError, match="exceeds the vocabulary"):
        bound(p, q, 4, "greedy")


def test_greedy_bound_breaks_ties_in_the_draft_to_the_lowest_id():
    """Bug: the top ``n - 1`` draft tokens were taken by an unstable sort, so tied draft
    probabilities could put another id than the lowest in ``T`` (the documented rule).

    Uniform ``q`` over ``V = 100`` tokens (torch's unstable CPU sort reorders ties
    from about 17 entries on), ``p`` a point mass on token 0, ``n = 2``: with the
    rule ``T = {0}`` and :math:`\\alpha = p(T) = 1`; any other top token leaves
    :math:`\\alpha = \\min(p_0, \\tilde q_0) = 1/99`.
    """
    V = 100
    p = torch.zeros((2, V), dtype=D)
    p[:, 0] = 1.0
    q = torch.full((2, V), 1.0 / V, dtype=D)
    assert bound(p, q, 2, "greedy").tolist() == [1.0, 1.0]


def test_greedy_bound_refuses_a_draft_with_no_mass_outside_its_top_tokens():
    """Bug: the greedy law's check refused only a negative mass outside the top ``n - 1``
    tokens (``< 0`` for ``<= 0``): with none left, :math:`\\tilde q = 0/0` and the
    value was NaN instead of an error.

    ``q = (1/2, 1/2, 0)``, ``n = 3``: the fixed drafts take tokens 0 and 1 and the
    last draft has nothing to be drawn from.
    """
    p = torch.tensor([0.2, 0.3, 0.5], dtype=D)
    q = torch.tensor([0.5, 0.5, 0.0], dtype=D)
    with pytest.raises(InvalidParameterError, match="no mass outside its top n - 1 = 2"):
        bound(p, q, 3, "greedy")


def test_without_replacement_bound_when_the_drafts_exhaust_the_support():
    """Bug: ``n`` drafts without replacement were refused when the draft has exactly ``n``
    tokens of positive mass (``support <= n`` for ``support < n``).

    ``q = (1/2, 1/2, 0)``, ``n = 2``: the drafts are always {0, 1}, so every set
    ``H`` containing both has ``Q(H) = 1`` and any other ``Q(H) = 0``;
    :math:`\\alpha^* = \\min(1, p_0 + p_1) = 0.7` for ``p = (0.3, 0.4, 0.3)``.
    """
    p = torch.tensor([0.3, 0.4, 0.3], dtype=D)
    q = torch.tensor([0.5, 0.5, 0.0], dtype=D)
    assert float(bound(p, q, 2, "without_replacement")) == pytest.approx(0.7, abs=1e-13)


# --------------------------------------------------------------------------- losses.py


def test_kl_loss_with_target_zeros():
    """Bug: the KL term summed ``p (log p - log q)`` without treating ``p = 0`` as 0,
    which gives ``0 * -inf = NaN``.

    ``p = (1/2, 1/2, 0)``, uniform draft: :math:`\\mathrm{KL} = \\log(3/2)` by hand.
    """
    p = torch.tensor([[0.5, 0.5, 0.0]], dtype=D)
    z = torch.zeros((1, 3), dtype=D, requires_grad=True)
    loss = draft_loss("kl", p, z)
    assert float(loss.detach()) == pytest.approx(math.log(1.5), rel=1e-14)
    loss.backward()
    # d KL / d z = softmax(z) - p
    assert torch.allclose(z.grad, torch.tensor([[1 / 3 - 0.5, 1 / 3 - 0.5, 1 / 3]], dtype=D))


def test_a_zero_weight_term_is_allowed_beside_a_positive_one():
    """Bug: a weight of exactly 0 was refused (``w <= 0`` for ``w < 0``); the rule is
    non-negative weights, not all zero.

    ``"0*kl+tv"`` is the TV loss alone: :math:`-\\log \\sum \\min(p, q)` with
    ``p = (1/2, 1/2)``, ``q = (1/4, 3/4)``: :math:`-\\log(3/4)`.
    """
    assert parse_loss("0*kl+tv") == {"kl": 0.0, "tv": 1.0}
    assert parse_loss({"kl": 0, "tv": 2}) == {"kl": 0.0, "tv": 2.0}
    p = torch.tensor([[0.5, 0.5]], dtype=D)
    z = torch.log(torch.tensor([[0.25, 0.75]], dtype=D))
    assert float(draft_loss("0*kl+tv", p, z)) == pytest.approx(-math.log(0.75), rel=1e-14)


def test_draft_loss_refuses_infinite_logits():
    """Bug: only NaN logits were refused, so a ``-inf`` logit (a masked token) reached
    the losses: an infinite KL and NaN gradients instead of an error naming the input.
    """
    p = torch.tensor([[0.5, 0.25, 0.25]], dtype=D)
    for bad in (-math.inf, math.inf):
        z = torch.tensor([[0.0, bad, 0.0]], dtype=D)
        with pytest.raises(InvalidParameterError, match="non-finite"):
            draft_loss("kl", p, z)


def test_draft_loss_refuses_a_vocabulary_mismatch_by_name():
    """Bug: only the batch sizes of ``target`` and ``draft_logits`` were compared, so
    rows of different vocabulary sizes failed later with a bare broadcasting error.
    """
    p = torch.tensor([[0.5, 0.25, 0.25]], dtype=D)
    z = torch.zeros((1, 4), dtype=D)
    for spec in ("kl", "tv"):
        with pytest.raises(InvalidParameterError, match="draft_logits has"):
            draft_loss(spec, p, z)


def test_without_replacement_loss_with_more_drafts_than_tokens_gets_the_bounds_error():
    """Bug: the loss's underflow check ran for a vocabulary smaller than ``n`` too, so
    ``V < n`` was blamed on logits more than ~745 apart (a wrong diagnosis) instead of
    getting the bound's error: ``n`` drafts without replacement need ``n`` tokens.
    """
    p = torch.tensor([[0.5, 0.25, 0.25]], dtype=D)
    z = torch.zeros((1, 3), dtype=D)
    with pytest.raises(InvalidParameterError, match="drafts without replacement need at least n"):
        draft_loss("alpha:4:without_replacement", p, z)


@pytest.mark.parametrize("weight", [None, "abc", [1.0]])
def test_a_mapping_weight_that_is_not_a_number_is_refused_naming_the_term(weight):
    """Bug: ``{"tv": None}`` raised float()'s bare TypeError (``"abc"`` a ValueError naming
    neither the loss nor the term), not the loss's own error."""
    with pytest.raises(InvalidParameterError, match=r"loss weight of 'tv' must be a number"):
        parse_loss({"kl": 1.0, "tv": weight})


def test_weights_of_a_repeated_name_must_sum_to_a_finite_number():
    """Bug: ``1e308*kl+1e308*kl`` passed the finite-weight check term by term, summed to an
    infinite weight, and draft_loss returned inf (hand: 2e308 overflows float64)."""
    with pytest.raises(InvalidParameterError, match=r"'kl' sum to inf"):
        parse_loss("1e308*kl+1e308*kl")
    assert parse_loss("1e308*kl+1e308*tv") == {"kl": 1e308, "tv": 1e308}  # each term finite
