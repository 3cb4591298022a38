"""Exact output laws and acceptances of any verifier, by enumeration, and the closed forms.

:func:`output_distribution` and :func:`acceptance` enumerate every draft tuple
and every coin of the verifier's own code (docs/theory.md §7.1).  The closed forms of
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
from ._law import acceptance, exact_row, output_distribution
from ._tuples import ordered_draft_law

#: Closed-form acceptance by verifier name (docs/theory.md §3.0).
CLOSED_FORMS = {
    "sd": sd_acceptance,
    "rrs": rrs_acceptance,
    "kseq": kseq_acceptance,
    "spechub": spechub_acceptance,
    "greedy": greedy_acceptance,
    "nss": nss_acceptance,
    "naive": naive_acceptance,
}

__all__ = [
    "CLOSED_FORMS",
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
