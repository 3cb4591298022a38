"""Draft masses so small that ``p / q`` overflows to inf (subnormal ``q``).

Every such ratio rounded to inf, so tokens whose ratios differ by 15 orders of magnitude
tied, and the tie went to token order.  Without replacement the order among them sets
which prefixes are scanned: ``bound`` returned 1.0 on a row whose exact value is 0.0569,
and the answer changed when two tokens swapped places.  The oracle here is the exact
enumeration of every token set in Fractions (``solve_bound(..., "enumerate")`` on Fraction
input, no prefix lemma, no float ratio), and, for two drafts, the draft sets by hand.

Two drafts without replacement with a subnormal mass outside the top token made the pair
plans' ``1 / rest`` overflow: a ``nan`` plan and an acceptance below the bound, without an
error.  Such rows are now refused by name.
"""

from fractions import Fraction

import numpy as np
import pytest

import spectheory as st
from spectheory import InvalidParameterError

WOR = "without_replacement"


def _exact(p, q, n, sampling):
    pf = np.array([Fraction(float(x)) for x in p], dtype=object)
    qf = np.array([Fraction(float(x)) for x in q], dtype=object)
    pf, qf = pf / sum(pf), qf / sum(qf)
    return float(st.solve_bound(pf, qf, n, sampling, method="enumerate").exact_value)


@pytest.mark.parametrize(
    ("p", "q", "n", "want"),
    [
        # second draft: token 1 w.p. 1/4, token 2 w.p. 3/4 -> 0.25 + 0.1 + 0.2
        ([0.2, 0.7, 0.1], [1.0, 1e-310, 3e-310], 2, 0.55),
        ([0.2, 0.1, 0.7], [1.0, 3e-310, 1e-310], 2, 0.55),
        # second draft: token 1 w.p. 3/4 -> 0.7 + 0.1 + 0.2
        ([0.2, 0.7, 0.1], [1.0, 3e-310, 1e-310], 2, 1.0),
        ([0.9430710026951382, 0.046900377595893335, 0.0051474923427488484,
          0.00488112736621973], [5e-324, 1e-310, 0.015213749564978356, 0.9847862504350217], 3,
         None),
    ],
)
@pytest.mark.parametrize("sampling", [WOR, "greedy", "iid"])
def test_bound_orders_overflowing_ratios_by_their_true_value(p, q, n, want, sampling):
    p, q = np.array(p), np.array(q)
    exact = _exact(p, q, n, sampling)
    if want is not None and sampling == WOR:
        assert exact == pytest.approx(want, abs=1e-15)
    for method in ("dual", "enumerate", "maxflow"):
        got = float(st.solve_bound(p, q, n, sampling, method=method).value)
        assert got == pytest.approx(exact, abs=1e-12), method
    assert float(st.bound(p, q, n, sampling=sampling)) == pytest.approx(exact, abs=1e-12)
    swap = [0, 2, 1, *range(3, p.size)]  # the answer does not depend on token order
    assert float(st.bound(p[swap], q[swap], n, sampling=sampling)) == pytest.approx(
        _exact(p[swap], q[swap], n, sampling), abs=1e-12)


def test_bound_without_replacement_on_random_tiny_tails():
    """Rows whose draft gives a few tokens masses between 5e-324 and 1e-300."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        V = int(rng.integers(3, 6))
        p = rng.dirichlet(np.full(V, 0.5))
        q = rng.dirichlet(np.full(V, 0.5))
        tiny = rng.random(V) < 0.5
        tiny[np.argmax(q)] = False
        q[tiny] = 10.0 ** rng.uniform(-323, -300, tiny.sum())
        q = q / q.sum()
        n = int(rng.integers(2, V))
        exact = _exact(p, q, n, WOR)
        assert float(st.bound(p, q, n, sampling=WOR)) == pytest.approx(exact, abs=1e-12), (p, q, n)


def test_two_draft_plans_refuse_a_subnormal_rest():
    p, q = np.array([0.2, 0.1, 0.7]), np.array([1.0, 3e-310, 1e-310])
    with pytest.raises(InvalidParameterError, match="khisti or optimal_lp"):
        st.acceptance("optimal", p, q, 2, WOR)
    assert float(st.acceptance("khisti", p, q, 2, WOR)) == pytest.approx(0.55, abs=1e-12)
