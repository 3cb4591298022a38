"""Reproductions of the papers' figures and tables (``spectheory reproduce PAPER``).

One module per paper; each has ``reproduce(out_dir, *, quick=False, trace=None,
loaded=None, progress=True) -> PaperResult``, which writes CSV tables and PNG
figures into ``out_dir`` and returns the tables and a list of :class:`Check`
records comparing published numbers or claims (docs/theory.md §9) with ours.
Exact solvers are used where the paper's numbers are theoretical; the real
model (SmolLM2-135M-Instruct and its early-exit drafts, through a recorded
trace) where the paper measured models.  ``papers/README.md`` in the source
tree indexes them and says where our setting differs.

Examples
--------
>>> sorted(PAPERS)
['blockverify', 'hu2025', 'leviathan', 'scaling', 'specdecpp', 'spectr']
>>> PAPERS["spectr"].arxiv
'2310.15141'
"""

from __future__ import annotations

from .._errors import InvalidParameterError
from . import blockverify, hu2025, leviathan, scaling, specdecpp, spectr
from ._common import Check, Paper, PaperResult

__all__ = ["PAPERS", "Check", "Paper", "PaperResult", "get_paper", "reproduce"]

_ENTRIES = [
    Paper(
        "hu2025",
        "Hu, Zheng, Viswanathan, Chen, Rossi, Wu, Manocha, Huang. "
        "Towards Optimal Multi-draft Speculative Decoding (ICLR 2025)",
        "2502.18779",
        hu2025.reproduce,
        "optimal acceptance against n for each draft law (i.i.d., without replacement, greedy) "
        "at T = 0.7, a temperature sweep at n = 3, each verifier's gap to the bound, the main "
        "table (bound against RRS, K-SEQ, RRS without replacement, greedy) on a temperature grid",
        needs_model=False,
    ),
    Paper(
        "spectr",
        "Sun et al. SpecTr: Fast Speculative Decoding via Optimal Transport (NeurIPS 2023)",
        "2310.15141",
        spectr.reproduce,
        "K-SEQ against the optimum for n = 1..8, the (1 - 1/e) guarantee at every position and "
        "over a worst-case search, block efficiency against the number of drafts K and length L",
        needs_model=False,
    ),
    Paper(
        "leviathan",
        "Leviathan, Kalman, Matias. Fast Inference from Transformers via Speculative Decoding "
        "(ICML 2023)",
        "2211.17192",
        leviathan.reproduce,
        "the optimal-gamma table and speedup curves (Thm 3.8), Tables 1, 2 and 4 through the "
        "closed forms, Figures 2 and 3, the Table 3 capacity fits, the trace's alpha table with "
        "intervals, the early-exit analogue with the measured CPU cost ratio",
        needs_model=True,
        draft_prefixes=("exit:", "ngram:"),
    ),
    Paper(
        "specdecpp",
        "Huang, Guo, Wang. SpecDec++: Boosting Speculative Decoding via Adaptive Candidate "
        "Lengths (COLM 2025)",
        "2405.19715",
        specdecpp.reproduce,
        "the exact threshold policy against the best fixed length (docs/theory.md §8.7), speedup "
        "and draft length against the threshold (h = 0, never draft, included), fixed, "
        "heuristic, oracle-threshold and acceptance-head policies on the real model, the main "
        "table beside the abstract's",
        needs_model=True,
        draft_prefixes=(),
    ),
    Paper(
        "scaling",
        "Scaling laws: Yan et al. Scylla; Leviathan et al. Table 3; Spec-Bench",
        "2505.07858, 2211.17192, 2401.07851",
        scaling.reproduce,
        "the published log-linear capacity fits beside the capacity law of the real model's "
        "early exits, and the batch law: the optimal number of drafts against the batch size",
        needs_model=True,
    ),
]

#: Registered reproductions by name.
_ENTRIES.append(
    Paper(
        "blockverify",
        "Sun et al. Block Verification Accelerates Speculative Decoding; Weng et al. Traversal "
        "Verification for Speculative Tree Decoding",
        "2403.10444, 2505.12398",
        blockverify.reproduce,
        "the motivating example (10/9, 11/9, the ideal 12/9), block efficiency against gamma = "
        "1..8 (exact on the example and on random Markov models, Monte Carlo with intervals on "
        "the trace), and exact token-level, block and traversal verification on chains and "
        "trees of random Markov models",
        needs_model=False,
        uses_trace=True,
        draft_prefixes=(),
    )
)

PAPERS: dict[str, Paper] = {p.name: p for p in _ENTRIES}


def get_paper(name: str) -> Paper:
    """The registered :class:`Paper` called ``name``; an error naming the known ones otherwise."""
    if isinstance(name, str) and name in PAPERS:
        return PAPERS[name]
    raise InvalidParameterError(
        f"PAPER must be one of {', '.join(sorted(PAPERS))} (or 'all'); got {name!r}"
    )


def reproduce(name: str, out_dir, **kwargs) -> PaperResult:
    """Run the reproduction ``name`` into ``out_dir`` (keyword arguments as its ``reproduce``)."""
    return get_paper(name).reproduce(out_dir, **kwargs)
