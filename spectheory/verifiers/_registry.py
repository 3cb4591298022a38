"""The verifier registry: one :class:`Verifier` record per published verifier.

Every verifier is one function ``fn(p, q, drafts, coins, *, sampling) -> int``
written against the coins protocol (:mod:`spectheory.coins`): ``p`` and ``q``
are 1-D target and draft rows (float64 or Fraction object arrays), ``drafts``
the tuple of draft token ids in draw order (``n = len(drafts)``), and the
return value is the output token ``y``.  Membership acceptance is
:math:`P(y \\in \\{x_1..x_n\\})`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .._errors import InvalidParameterError
from ..drafting import SAMPLINGS
from . import _closed_forms as cf
from .coupling import khisti, optimal_lp
from .hub import greedy, spechub
from .kseq import kseq
from .pointmass import nss
from .rrs import rrs, rrs_wor
from .single import naive, sd
from .typical import typical

__all__ = ["REGISTRY", "Verifier", "get_verifier"]


@dataclass(frozen=True)
class Verifier:
    """A registered verifier and its metadata.

    Attributes
    ----------
    name : str
        Registry key.
    function : callable
        ``function(p, q, drafts, coins, *, sampling) -> int``.
    paper : str
        Authors and title (short).
    arxiv : str or None
        arXiv id(s) of the source.
    samplings : tuple of str
        Draft laws (subset of :data:`spectheory.drafting.SAMPLINGS`) under which it is valid.
    lossless : bool
        Whether its output law is the target for every valid input.
    closed_form : callable or None
        ``closed_form(p, q, n, sampling)``: exact membership acceptance.
    closed_form_samplings : tuple of str
        The draft laws the closed form covers.
    cost : str
        Cost per position.
    n_values : tuple of int or None
        Allowed numbers of drafts (None: any ``n >= 1``).
    needs_draft_law : bool
        True if it relies on the drafts having been drawn from ``q`` under
        the declared law (its q-ratios); False for verifiers valid for any
        drafter (point-mass, typical).
    """

    name: str
    function: Callable
    paper: str
    arxiv: str | None
    samplings: tuple[str, ...]
    lossless: bool
    closed_form: Callable | None
    closed_form_samplings: tuple[str, ...]
    cost: str
    n_values: tuple[int, ...] | None = None
    needs_draft_law: bool = True

    def __post_init__(self):
        bad = [s for s in self.samplings if s not in SAMPLINGS]
        if bad or not set(self.closed_form_samplings) <= set(self.samplings):
            raise InvalidParameterError(f"verifier {self.name!r} lists unknown draft laws {bad}")


_ALL = SAMPLINGS
_ENTRIES = [
    Verifier("sd", sd, "Leviathan, Kalman, Matias; Chen et al.", "2211.17192, 2302.01318",
             _ALL, True, cf.sd_acceptance, _ALL, "O(V)", n_values=(1,)),
    Verifier("rrs", rrs, "Miao et al., SpecInfer (multi-step speculative sampling)",
             "2305.09781", ("iid",), True, cf.rrs_acceptance, ("iid",), "O(nV)"),
    Verifier("rrs_wor", rrs_wor, "Jeon et al., RSD; Chen et al., Sequoia; EAGLE",
             "2402.14160, 2402.12374", ("without_replacement",), True, None, (), "O(nV)"),
    Verifier("kseq", kseq, "Sun et al., SpecTr (K-SEQ)", "2310.15141", ("iid",), True,
             cf.kseq_acceptance, ("iid",), "O(V log 1/eps) bisection for rho*, then O(n + V)"),
    Verifier("spechub", spechub, "R. Sun et al., SpecHub", "2411.05289", ("greedy",), True,
             cf.spechub_acceptance, ("greedy",), "O(V)", n_values=(2,)),
    Verifier("greedy", greedy,
             "Hu, Zheng, Viswanathan, Chen, Rossi, Wu, Manocha, Huang, "
             "Towards Optimal Multi-draft SD",
             "2502.18779", ("greedy",), True, cf.greedy_acceptance, ("greedy",),
             "O(V) (plus top-(n-1) selection)"),
    Verifier("nss", nss, "Miao et al., SpecInfer (naive sampling); point-mass recursion",
             "2305.09781", _ALL, True, cf.nss_acceptance, ("iid", "greedy"), "O(nV)",
             needs_draft_law=False),
    Verifier("naive", naive, "Thomas et al., Alg. 7 (SD on the first draft)", None,
             ("iid", "without_replacement"), True, cf.naive_acceptance, ("iid",), "O(V)"),
    Verifier("khisti", khisti, "Khisti et al., canonical decomposition (IS + SD)",
             "2410.18234", _ALL, True, None, (),
             "transport LP over draft sets once per instance, then O(V)"),
    Verifier("optimal_lp", optimal_lp, "Sun et al., SpecTr / Hu et al. (optimal transport LP)",
             "2310.15141, 2502.18779", _ALL, True, None, (),
             "transport LP over draft sets once per instance, then O(V)"),
    Verifier("typical", typical, "Cai et al., Medusa (typical acceptance), LOSSY", "2401.10774",
             _ALL, False, None, (), "O(V)", needs_draft_law=False),
]  # fmt: skip

#: Registered verifiers by name.
REGISTRY: dict[str, Verifier] = {v.name: v for v in _ENTRIES}


def get_verifier(verifier) -> Verifier:
    """Resolve a registry name (or pass a :class:`Verifier` through).

    Examples
    --------
    >>> get_verifier("rrs").samplings
    ('iid',)
    """
    if isinstance(verifier, Verifier):
        return verifier
    if isinstance(verifier, str) and verifier in REGISTRY:
        return REGISTRY[verifier]
    raise InvalidParameterError(
        f"verifier must be a Verifier or one of {', '.join(map(repr, REGISTRY))}; got {verifier!r}"
    )
