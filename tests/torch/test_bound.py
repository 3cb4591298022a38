"""spectheory.torch.bound and spectheory.torch.losses against the numpy solver.

Oracles: values against :func:`spectheory.solve_bound` (itself certified against
LP, max-flow and enumeration in tests/solvers/test_ot_dual.py); gradients against central
finite differences of the numpy solver through a softmax parametrisation, at
points where the optimal set does not change within the step (checked).
"""

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spectheory as st  # noqa: E402
from spectheory._errors import (  # noqa: E402
    InstanceTooLargeError,
    InvalidDistributionError,
    InvalidParameterError,
    ShapeMismatchError,
)
from spectheory.drafting import draft_set_probability  # noqa: E402
from spectheory.torch.bound import bound, wor_outside_probability  # noqa: E402
from spectheory.torch.losses import draft_loss, parse_loss  # noqa: E402

LAWS = ("iid", "without_replacement", "greedy")


def _rows(rng, B, V, peaked=False):
    conc = 0.2 if peaked else 1.0
    p = rng.dirichlet(np.full(V, conc), size=B)
    z = rng.normal(size=(B, V)) * (3.0 if peaked else 1.0)
    return p, z


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("sampling", LAWS)
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_value_equals_numpy_bound(sampling, n):
    rng = np.random.default_rng(100 + n)
    for V, peaked in [(6, False), (40, True), (300, False)]:
        p, z = _rows(rng, 4, V, peaked)
        q = _softmax(z)
        want = st.bound(p, q, n, sampling)
        got = bound(torch.tensor(p), torch.tensor(q), n, sampling).numpy()
        # float64 sums of the same terms in another order (i.i.d., greedy) or an
        # independent quadrature of Q(H) (without replacement, both below 1e-12).
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-11)


def test_one_row_gives_a_scalar():
    p = torch.tensor([0.3, 0.4, 0.3], dtype=torch.float64)
    q = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    a = bound(p, q, 2, "without_replacement")
    assert a.shape == ()
    assert abs(float(a) - 139 / 140) < 1e-13  # docs/theory.md §8.1


@pytest.mark.parametrize("n", [2, 3])
def test_wor_outside_probability_against_enumeration(n):
    rng = np.random.default_rng(7)
    for _ in range(20):
        V = int(rng.integers(n + 1, 7))
        q = rng.dirichlet(np.full(V, 0.5))
        members = rng.random(V) < 0.6
        want = 1.0 - draft_set_probability(q, np.flatnonzero(members), n, "without_replacement")
        got = wor_outside_probability(torch.tensor(q[None]), torch.tensor(members[None]), n)
        assert abs(float(got[0]) - want) < 1e-13, (q, members)


def test_wor_outside_probability_tiny_outside_mass():
    # Outside mass 1e-200: the rescaled grid still integrates the rare escape.
    q = np.array([0.5, 0.5 - 1e-200, 1e-200])
    q = q / q.sum()
    H = np.array([True, True, False])
    got = float(wor_outside_probability(torch.tensor(q[None]), torch.tensor(H[None]), 2)[0])
    # 1 - Q(H) = P(token c among 2 draws) = q_c (1 + sum_j q_j / (1 - q_j)) to first order in q_c.
    want = 1e-200 * (1 + 0.5 / 0.5 + 0.5 / 0.5)
    assert abs(got - want) <= 1e-12 * want


def _fd_check(p, z, n, sampling, wrt):
    """Central differences of the numpy bound in the logits of ``wrt``."""
    pt = torch.tensor(np.log(p), requires_grad=True)
    zt = torch.tensor(z, requires_grad=True)
    a = bound(torch.softmax(pt, -1), torch.softmax(zt, -1), n, sampling)
    a.backward()
    grad = (pt if wrt == "target" else zt).grad.numpy()
    base = np.log(p) if wrt == "target" else z
    h = 1e-5
    cert0 = st.solve_bound(p, _softmax(z), n, sampling).certificate
    for i in range(base.size):
        vals = []
        for s in (+1, -1):
            x = base.copy()
            x[i] += s * h
            pp, qq = (_softmax(x), _softmax(z)) if wrt == "target" else (p, _softmax(x))
            r = st.solve_bound(pp, qq, n, sampling)
            assert (r.certificate == cert0).all(), "the optimal set moved within the step"
            vals.append(r.value)
        fd = (vals[0] - vals[1]) / (2 * h)
        # Truncation O(h^2) ~ 1e-10, rounding ~1e-12 / h ~ 1e-7 for the quadrature.
        assert abs(grad[i] - fd) <= 1e-6 + 1e-5 * abs(fd), (wrt, i, grad[i], fd)


@pytest.mark.parametrize("sampling", LAWS)
@pytest.mark.parametrize("wrt", ["draft", "target"])
def test_gradient_matches_finite_differences(sampling, wrt):
    rng = np.random.default_rng(11)
    for n, V in [(2, 5), (3, 8)]:
        p, z = _rows(rng, 1, V)
        _fd_check(p[0], z[0], n, sampling, wrt)


def test_gradient_is_tangent_to_the_simplex():
    rng = np.random.default_rng(3)
    p, z = _rows(rng, 3, 9)
    for sampling in LAWS:
        q = torch.tensor(_softmax(z), requires_grad=True)
        bound(torch.tensor(p), q, 3, sampling).sum().backward()
        np.testing.assert_allclose((q.grad * q.detach()).sum(-1).numpy(), 0.0, rtol=0, atol=1e-12)


def test_bad_input_is_refused_by_name():
    p = torch.tensor([0.5, 0.5], dtype=torch.float64)
    with pytest.raises(InvalidDistributionError, match="draft"):
        bound(p, torch.tensor([0.7, 0.7], dtype=torch.float64), 1)
    with pytest.raises(InvalidParameterError, match=r"target must be a torch\.Tensor"):
        bound([0.5, 0.5], p, 1)
    with pytest.raises(InvalidParameterError, match="sampling"):
        bound(p, p, 1, "bogus")
    with pytest.raises(InvalidParameterError, match="n"):
        bound(p, p, 0)
    one_hot = torch.tensor([1.0, 0.0], dtype=torch.float64)
    with pytest.raises(InvalidParameterError, match="positive probability"):
        bound(p, one_hot, 2, "without_replacement")
    # one row against a batch of one: numpy refuses it; torch returned a scalar or a (1,) tensor
    for a, b in ((p, p[None]), (p[None], p)):
        with pytest.raises(ShapeMismatchError, match="draft has shape"):
            bound(a, b, 2)
        with pytest.raises(ShapeMismatchError):
            st.bound(a.numpy(), b.numpy(), 2)


def test_iid_value_at_large_n_equals_numpy():
    # The prefix sum of row 0's draft in ratio order rounds to 1 + 2^-52, so
    # q(H)^n was (1 + 2^-52)^n: -2.7e96 at n = 1e18 and an OverflowError at 2^70.
    p = torch.tensor([[0.3, 0.4, 0.3], [0.1, 0.1, 0.8]], dtype=torch.float64)
    q = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]], dtype=torch.float64)
    for n in (10, 10**6, 10**12, 10**18, 2**70, 10**300):
        want = st.bound(p.numpy(), q.numpy(), n, "iid")
        np.testing.assert_allclose(bound(p, q, n).numpy(), want, rtol=0, atol=1e-15)
    with pytest.raises(InstanceTooLargeError, match="MAX_DRAFTS"):
        bound(p, q, 10**301)


def test_parse_loss():
    assert parse_loss("kl") == {"kl": 1.0}
    assert parse_loss({"tv": 2, "alpha:3:without_replacement": 0.5}) == {
        "tv": 2.0,
        "alpha:3:without_replacement": 0.5,
    }
    for bad in [
        "bogus",
        "alpha:0:iid",
        "alpha:2:bogus",
        "x*kl",
        "0*kl",
        {"kl": -1.0},
        {},
        "-1*kl+tv",
        "inf*tv",
        "alpha:²:iid",  # str.isdigit() is true for a superscript; int() is not
        "alpha:٣:iid",  # an Arabic-Indic digit was read as 3
    ]:
        with pytest.raises(InvalidParameterError):
            parse_loss(bad)
    # a name written twice is one term with the summed weight (the last weight alone had
    # silently halved "0.5*kl+0.5*kl")
    assert parse_loss("0.5*kl+0.5*kl") == {"kl": 1.0}
    assert parse_loss("kl+2*tv+kl") == {"kl": 2.0, "tv": 2.0}


def test_losses_equal_their_definitions():
    rng = np.random.default_rng(5)
    p, z = _rows(rng, 4, 12)
    q = _softmax(z)
    zt = torch.tensor(z)
    pt = torch.tensor(p)
    kl = np.sum(p * (np.log(p) - np.log(q)), axis=1).mean()
    tv = (-np.log(np.minimum(p, q).sum(axis=1))).mean()
    for spec, want in [
        ("kl", kl),
        ("tv", tv),
        ("alpha:1:iid", tv),  # one draft: alpha* = sum min(p, q)
        ("alpha:4:iid", (-np.log(st.bound(p, q, 4))).mean()),
        ("0.5*kl+2*tv", 0.5 * kl + 2 * tv),
        ("0.5*kl+0.5*kl", kl),
        ("tv + kl + tv", kl + 2 * tv),
    ]:
        got = float(draft_loss(spec, pt, zt))
        assert abs(got - want) <= 1e-11 * max(1.0, abs(want)), spec


@pytest.mark.parametrize("spec", ["tv", "alpha:2:iid", "alpha:2:without_replacement", "kl"])
def test_a_small_gradient_step_lowers_the_loss(spec):
    rng = np.random.default_rng(9)
    p, z = _rows(rng, 3, 10)
    pt = torch.tensor(p)
    zt = torch.tensor(z, requires_grad=True)
    loss = draft_loss(spec, pt, zt)
    loss.backward()
    with torch.no_grad():
        stepped = zt - 1e-3 * zt.grad
    assert float(draft_loss(spec, pt, stepped)) < float(loss.detach())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_equals_cpu():
    rng = np.random.default_rng(13)
    p, z = _rows(rng, 8, 2000, peaked=True)
    q = _softmax(z)
    for sampling, n in itertools.product(LAWS, (2, 4)):
        cpu = bound(torch.tensor(p), torch.tensor(q), n, sampling)
        gpu = bound(torch.tensor(p).cuda(), torch.tensor(q).cuda(), n, sampling).cpu()
        np.testing.assert_allclose(gpu.numpy(), cpu.numpy(), rtol=0, atol=1e-11)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("V", [49_152, 151_936])
def test_cuda_full_vocabulary_value_and_gradient_equal_cpu(V):
    """Value and the draft-logit gradient at full vocabulary, CUDA against CPU (float64)."""
    rng = np.random.default_rng(V)
    z = 3.0 * rng.standard_normal((4, V))
    p = torch.from_numpy(_softmax(z))
    logits = torch.from_numpy(z + rng.standard_normal((4, V)))
    for sampling, n in itertools.product(LAWS, (2, 4, 8)):
        out = []
        for device in ("cpu", "cuda"):
            x = logits.to(device).detach().clone().requires_grad_(True)
            a = bound(p.to(device), torch.softmax(x, -1), n, sampling)
            a.sum().backward()
            out.append((a.detach().cpu().numpy(), x.grad.cpu().numpy()))
        (a_cpu, g_cpu), (a_gpu, g_gpu) = out
        np.testing.assert_allclose(a_gpu, a_cpu, rtol=0, atol=1e-11)
        np.testing.assert_allclose(g_gpu, g_cpu, rtol=0, atol=1e-11)


def test_readme_example_runs():
    import pathlib
    import re

    readme = (pathlib.Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("## Training drafts for acceptance", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope = {}
    exec(code, scope)
    assert scope["alpha"].shape == (8,)
    assert scope["z"].grad.shape == (8, 1000)
    assert torch.isfinite(scope["z"].grad).all()


def _zipf_rows(rng, B, V):
    """Softmax(N(0, 9)) rows over V tokens: a few large rates and a long tail of tiny ones."""
    return _softmax(3.0 * rng.normal(size=(B, V)))


@pytest.mark.parametrize("n", [2, 4, 8, 10])
def test_batched_wor_outside_probability_equals_the_tree_reference(n, monkeypatch):
    """The batched form (skipped nodes, power sums, tail moments) against the per-row product
    tree over every token of H: values to 1e-13 and gradients to 1e-12, at V = 3,000 where
    most of H is in the tail (n <= 9) and with the tail path switched off."""
    import importlib

    tb = importlib.import_module("spectheory.torch.bound")  # the module, not the function
    rng = np.random.default_rng(40 + n)
    q_np = _zipf_rows(rng, 3, 3000)
    H = torch.tensor(rng.random((3, 3000)) < 0.9)
    results = []
    for tail_max in (tb._TAIL_MAX_N, 0):
        monkeypatch.setattr(tb, "_TAIL_MAX_N", tail_max)
        for f in (wor_outside_probability, tb._wor_outside_tree):
            q = torch.tensor(q_np, requires_grad=True)
            v = f(q, H, n)
            v.sum().backward()
            results.append((v.detach().numpy(), q.grad.numpy()))
    for v, g in results[1:]:
        np.testing.assert_allclose(v, results[0][0], rtol=0, atol=1e-13)
        np.testing.assert_allclose(g, results[0][1], rtol=0, atol=1e-12)
    # the instance exercises the tail: most tokens of H have a tiny rate
    assert (q_np[:, :] < 1e-5).mean() > 0.3


def test_power_sums_gradient():
    from spectheory.torch.bound import _PowerSums

    r = torch.rand(2, 7, dtype=torch.float64) * 0.5
    r.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: _PowerSums.apply(x, 5), (r,))
    want = torch.stack([(r.detach() ** m).sum(-1) for m in range(1, 6)], dim=-1)
    np.testing.assert_allclose(_PowerSums.apply(r, 5).detach().numpy(), want.numpy(), rtol=1e-15)
