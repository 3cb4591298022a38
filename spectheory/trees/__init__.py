"""Speculative decoding over sequences and trees: drafting, verification, exact laws.

Draft and target are model functions ``prefix_tokens -> distribution over V``
(:mod:`.models`), so small exact Markov models and the real language model
(:mod:`.lm`) plug in alike.  Drafters (:mod:`.drafting`) build a
:class:`DraftTree`; verifiers (:mod:`.verify`, registered in
:data:`TREE_REGISTRY`) return the emitted block; :func:`block_law` gives its
exact law.  Sequoia's tree DP is :mod:`spectheory.solvers.sequoia`.
"""

from ._registry import TREE_REGISTRY, TreeVerifier, get_tree_verifier, verify_tree
from ._tree import TREE_KINDS, DraftTree, TreeBuilder
from .drafting import (
    FILLS,
    draft_chain,
    draft_fixed,
    draft_rsd_c,
    draft_rsd_s,
    draft_spectr,
    shape_from_branching,
)
from .exact import BlockLaw, block_law, joint_law
from .models import CachedModel, MarkovModel, as_model, random_markov_model
from .verify import (
    block_weights,
    traversal_update,
    verify_block,
    verify_kseq,
    verify_nss,
    verify_rrs,
    verify_rrs_wor,
    verify_token,
    verify_traversal,
)

__all__ = [
    "FILLS",
    "TREE_KINDS",
    "TREE_REGISTRY",
    "BlockLaw",
    "CachedModel",
    "DraftTree",
    "MarkovModel",
    "TreeBuilder",
    "TreeVerifier",
    "as_model",
    "block_law",
    "block_weights",
    "draft_chain",
    "draft_fixed",
    "draft_rsd_c",
    "draft_rsd_s",
    "draft_spectr",
    "get_tree_verifier",
    "joint_law",
    "random_markov_model",
    "shape_from_branching",
    "traversal_update",
    "verify_block",
    "verify_kseq",
    "verify_nss",
    "verify_rrs",
    "verify_rrs_wor",
    "verify_token",
    "verify_traversal",
    "verify_tree",
]
