r"""Typical acceptance (Medusa [1]_ 3.3.1; vLLM v0 ``typical_acceptance_sampler.py``): LOSSY.

A draft ``x`` is accepted iff

.. math::

    p(x) > \min\big(\varepsilon,\; \delta\, e^{-H(p)}\big), \qquad
    H(p) = -\sum_t p(t)\log(p(t) + 10^{-5}),

with :math:`\varepsilon = 0.09` (posterior threshold) and :math:`\delta = 0.3`
(posterior alpha) (docs/theory.md §3.8).  The first accepted draft is output; if
none is accepted the verifier falls back to the target's argmax (ties to the
lowest id).  ``q`` is unused and no coin is flipped.  The output law is not
``p`` in general: the registry marks it lossy, and the losslessness checks
must find it so.

References
----------
.. [1] Cai, Li, Geng, Peng, Lee, Chen, Dao. "Medusa: Simple LLM Inference
   Acceleration Framework with Multiple Decoding Heads". arXiv:2401.10774.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["POSTERIOR_ALPHA", "POSTERIOR_THRESHOLD", "typical"]

#: Medusa's ``posterior_threshold`` (epsilon).
POSTERIOR_THRESHOLD = 0.09
#: Medusa's ``posterior_alpha`` (delta).
POSTERIOR_ALPHA = 0.3


def typical(p, q, drafts, coins, *, sampling="iid"):
    """Medusa's typical acceptance: first draft above the entropy-adaptive threshold.

    Parameters
    ----------
    p, q : ndarray, shape (V,)
    drafts : tuple of int
    coins : Coins
        Unused (the rule is deterministic).
    sampling : str
        Unused.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> typical(np.array([0.5, 0.3, 0.2]), None, (2, 1), None)
    2
    """
    pf = np.array([float(v) for v in p])
    entropy = -float(np.sum(pf * np.log(pf + 1e-5)))
    threshold = min(POSTERIOR_THRESHOLD, POSTERIOR_ALPHA * math.exp(-entropy))
    for x in drafts:
        if pf[x] > threshold:
            return x
    return int(np.argmax(pf))
