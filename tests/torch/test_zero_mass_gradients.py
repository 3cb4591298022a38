"""Gradients where a token has no mass: top-k masks and softmax underflow.

Both failed silently before their fixes:
- ``bound(..., sampling="iid")`` gave NaN in every entry of the gradient as soon as one
  token had ``p = q = 0`` (the usual case after top-k or top-p on both rows): its prefix
  has all the draft mass outside, ``log1p(-1) = -inf``, and autograd's ``0 * inf`` spread
  NaN through the cumulative sums; the value itself was right.
- ``draft_loss("tv")`` formed ``exp(log_softmax(z))``, which is 0 for logits 745 below the
  largest: an infinite loss and NaN gradients where the loss is finite.

Oracles: the derivative of Σ min(p, q/Σq) by hand, and central finite differences.
"""

import math

import pytest

torch = pytest.importorskip("torch")

from spectheory import InvalidParameterError  # noqa: E402
from spectheory.torch import bound, draft_loss  # noqa: E402

D = torch.float64


def test_iid_gradient_with_a_token_of_no_mass_on_either_side():
    p = torch.tensor([[0.0, 0.5, 0.5]], dtype=D)
    q = torch.tensor([[0.0, 0.6, 0.4]], dtype=D, requires_grad=True)
    a = bound(p, q, n=1)
    a.sum().backward()
    assert float(a.detach()) == pytest.approx(0.9, abs=1e-15)
    # d/dq_j sum_i min(p_i, q_i / S) at S = 1: 1[q_j < p_j] - sum_{q_i < p_i} q_i
    torch.testing.assert_close(q.grad, torch.tensor([[-0.4, -0.4, 0.6]], dtype=D))


@pytest.mark.parametrize("n", [1, 2, 5])
def test_iid_gradient_through_top_k_masked_logits(n):
    p = torch.tensor([[0.0, 0.5, 0.5]], dtype=D)
    z = torch.tensor([[-math.inf, 1.0, 2.0]], dtype=D, requires_grad=True)
    bound(p, torch.softmax(z, -1), n=n).sum().backward()
    assert torch.isfinite(z.grad).all()
    assert float(z.grad[0, 0]) == 0.0
    h = 1e-6
    for j in (1, 2):
        zp, zm = z.detach().clone(), z.detach().clone()
        zp[0, j] += h
        zm[0, j] -= h
        fd = (bound(p, torch.softmax(zp, -1), n=n) - bound(p, torch.softmax(zm, -1), n=n)) / (2 * h)
        assert float(z.grad[0, j]) == pytest.approx(float(fd), abs=1e-8)


def test_tv_loss_when_the_softmax_underflows():
    p = torch.tensor([[1.0, 0.0, 0.0]], dtype=D)
    z = torch.tensor([[-800.0, 0.0, 0.0]], dtype=D, requires_grad=True)
    loss = draft_loss("tv", p, z)
    loss.backward()
    # -log q_0 = 800 + log 2; its gradient is softmax(z) - e_0
    assert float(loss.detach()) == pytest.approx(800.0 + math.log(2.0), rel=1e-15)
    torch.testing.assert_close(z.grad, torch.tensor([[-1.0, 0.5, 0.5]], dtype=D))


def test_tv_loss_unchanged_on_ordinary_rows():
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(4, 50, generator=g, dtype=D), -1)
    z = torch.randn(4, 50, generator=g, dtype=D, requires_grad=True)
    loss = draft_loss("tv", p, z)
    want = (-torch.log(torch.minimum(p, torch.softmax(z, -1)).sum(-1))).mean()
    assert float(loss.detach()) == pytest.approx(float(want.detach()), rel=1e-14)


def test_without_replacement_loss_names_the_underflowing_logits():
    p = torch.tensor([[0.4, 0.3, 0.3]], dtype=D)
    z = torch.tensor([[0.0, -800.0, -800.0]], dtype=D)
    with pytest.raises(InvalidParameterError, match=r"softmax\(draft_logits\) row 0"):
        draft_loss("alpha:2:without_replacement", p, z)
