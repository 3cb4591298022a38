"""Reference implementations of every published verifier, on the coins protocol.

Each verifier is one function ``fn(p, q, drafts, coins, *, sampling) -> int``
(:mod:`._registry`, which also holds each verifier's facts and lets users
register their own, :func:`register_verifier`): the same code samples
(:class:`~spectheory.coins.RandomCoins`), replays injected uniforms
(:class:`~spectheory.coins.ReplayCoins`) and is enumerated exactly
(:func:`spectheory.exact.output_distribution`).  See ``docs/verifiers.md``
for the table of papers, draft laws and costs.
"""

from ._api import check_instance, verify
from ._registry import (
    PROTOCOLS,
    REGISTRY,
    Verifier,
    as_verifier,
    get_verifier,
    register_verifier,
    unregister_verifier,
    verifier,
)
from .coupling import khisti, optimal_lp, transport_plan
from .embedded import embedded_iid
from .hub import greedy, spechub
from .kseq import kseq, kseq_rho
from .pair_scores import pair_scores
from .pair_tiers import pair_tiers
from .pointmass import nss
from .random_utility import random_utility
from .rrs import rrs, rrs_wor
from .single import naive, sd
from .typical import typical

__all__ = [
    "PROTOCOLS",
    "REGISTRY",
    "Verifier",
    "as_verifier",
    "check_instance",
    "embedded_iid",
    "get_verifier",
    "greedy",
    "khisti",
    "kseq",
    "kseq_rho",
    "naive",
    "nss",
    "optimal_lp",
    "pair_scores",
    "pair_tiers",
    "random_utility",
    "register_verifier",
    "rrs",
    "rrs_wor",
    "sd",
    "spechub",
    "transport_plan",
    "typical",
    "unregister_verifier",
    "verifier",
    "verify",
]
