"""Exact output laws and acceptances of any verifier, by enumeration, and the closed forms.

:func:`output_distribution` and :func:`acceptance` enumerate every draft tuple
and every coin of the verifier's own code (docs/theory.md §7.1), for
vocabularies small enough (:data:`MAX_CALLS`); above that :func:`acceptance`
uses the verifier's closed form where it has one and both refuse otherwise.
The closed forms take single rows (V,) or batches (B, V) (one value per row).  The closed forms of
docs/theory.md §3.0 (:data:`CLOSED_FORMS`) are an independent check.
"""

from ..verifiers._closed_forms import (
    greedy_acceptance,
    kseq_acceptance,
    naive_acceptance,
    nss_acceptance,
    rrs_acceptance,
    sd_acceptance,
    spechub_acceptance,
)
from ..verifiers._registry import REGISTRY, builtin_names
from ._law import MAX_CALLS, acceptance, exact_row, output_distribution
from ._tuples import ordered_draft_law

#: Closed-form acceptance of the built-in verifiers by name (docs/theory.md §3.0),
#: read from the registry (each record's ``closed_form``).
CLOSED_FORMS = {name: REGISTRY[name].closed_form for name in builtin_names("closed_form")}

__all__ = [
    "CLOSED_FORMS",
    "MAX_CALLS",
    "acceptance",
    "exact_row",
    "greedy_acceptance",
    "kseq_acceptance",
    "naive_acceptance",
    "nss_acceptance",
    "ordered_draft_law",
    "output_distribution",
    "rrs_acceptance",
    "sd_acceptance",
    "spechub_acceptance",
]
