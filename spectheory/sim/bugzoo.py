"""A zoo of biased verifiers that reproduce real bug classes (docs/theory.md §7.5).

Each is a user callable ``fn(target, draft, drafts, rng) -> int`` as accepted
by :func:`spectheory.check_lossless`, written to fail the way a published
system failed.  They exist to show that the checker catches each class on real
model positions (``tests/sim/test_bugzoo.py``); never use them to decode.

=================================  =============================================================
name                               real reports (docs/theory.md §7.5)
=================================  =============================================================
``softmax_residual``               transformers PR #28508: softmax(clamp(p - q)) as the residual
``argmax_draft_sampled_ratio``     transformers #32867: argmax drafts verified with softmax q
``rrs_dedup``                      pitfall P1: repeated i.i.d. drafts skipped without a residual
``rrs_top_k``                      pitfall P2 (EAGLE #221): RRS ratios on deterministic top-k drafts
``target_at_temperature(0.7)``     vLLM #9834 / PR #10198: target processed at another temperature
``fp16_flush_to_zero``             vLLM PRs #37798, #45996; mlxcel #992: half-precision tails lost
=================================  =============================================================

Every bug prepares what does not depend on the drafts once per (target, draft)
row, cached on the row's contents (compared exactly: a buffer rewritten in place
holds another row, and every row of a distribution sums to about 1), so a trial
costs O(V) comparisons and O(n log V) work, and the checker runs them at full
vocabulary size.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BUGS", "Bug"]


def _cdf_draw(cdf, rng):
    """Inverse-CDF draw from an unnormalised cumulative vector."""
    return int(min(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"), cdf.size - 1))


def _same(kept, row):
    """Whether ``row`` holds exactly the values of the copy ``kept``."""
    return kept.shape == np.shape(row) and np.array_equal(kept, row)


def _residual(p, q):
    r = np.maximum(p - q, 0.0)
    s = r.sum()
    return r / s if s > 0 else p


class Bug:
    """A biased verifier: ``prepare(p, q)`` once per row, then ``run(...)`` per trial.

    Parameters
    ----------
    name : str
    prepare : callable ``(p, q) -> object``
    run : callable ``(prep, p, q, drafts, rng) -> int``
    doc : str
        What goes wrong, and where it was reported.
    """

    def __init__(self, name, prepare, run, doc):
        self.__name__ = name
        self.__doc__ = doc
        self._prepare, self._run = prepare, run
        self._key, self._prep = None, None

    def __call__(self, p, q, drafts, rng):
        # Reused only for the same rows, compared by content: the data address and the sums
        # (about 1 for every distribution) served the previous row's preparation to a row
        # written into the same buffer (or a buffer freed and allocated again there).
        kept = self._key
        if kept is None or not (_same(kept[0], p) and _same(kept[1], q)):
            prep = self._prepare(p, q)
            self._key, self._prep = (np.array(p, copy=True), np.array(q, copy=True)), prep
        return int(self._run(self._prep, p, q, drafts, rng))

    def __repr__(self):
        return f"Bug({self.__name__})"


def _sd_run(prep, p, q, drafts, rng, x=None):
    """Single-draft SD of ``x`` with the ratios and residual CDF held in ``prep``."""
    x = int(drafts[0]) if x is None else x
    pp, qq = prep["p"], prep["q"]
    if qq[x] == 0 or rng.random() * qq[x] < pp[x]:
        return x
    return _cdf_draw(prep["cdf"], rng)


def _softmax_residual_prep(p, q):
    z = np.maximum(p - q, 0.0)
    e = np.exp(z - z.max())
    return {"p": p, "q": q, "cdf": np.cumsum(e)}


def _argmax_prep(p, q):
    return {"p": p, "q": q, "cdf": np.cumsum(_residual(p, q)), "x": int(np.argmax(q))}


def _rrs_prep(p, q):
    return {"p": p, "q": q, "chain": {}}


def _rrs_run(prep, p, q, drafts, rng):
    r, level = p, 0
    for x in drafts:
        if q[x] > 0 and rng.random() * q[x] < r[x]:
            return int(x)
        level += 1
        if level not in prep["chain"]:  # r_{level+1} = norm((r_level - q)_+), shared by all trials
            prep["chain"][level] = _residual(r, q)
        r = prep["chain"][level]
    key = ("cdf", level)
    if key not in prep["chain"]:
        prep["chain"][key] = np.cumsum(r)
    return _cdf_draw(prep["chain"][key], rng)


def _dedup_run(prep, p, q, drafts, rng):
    return _rrs_run(prep, p, q, list(dict.fromkeys(int(d) for d in drafts)), rng)


def _top_k_run(prep, p, q, drafts, rng):
    n = len(drafts)
    if ("top", n) not in prep["chain"]:
        top = np.argpartition(-q, n - 1)[:n]
        prep["chain"][("top", n)] = top[np.argsort(-q[top], kind="stable")]
    return _rrs_run(prep, p, q, [int(x) for x in prep["chain"][("top", n)]], rng)


def _tempered_prep(power):
    def prep(p, q):
        t = p**power
        t /= t.sum()
        return {"p": t, "q": q, "cdf": np.cumsum(_residual(t, q))}

    return prep


def _fp16_ftz(v):
    h = v.astype(np.float16)
    h[h < np.finfo(np.float16).tiny] = 0  # flush subnormals to zero, as fast GPU kernels do
    return h.astype(np.float64)


def _fp16_prep(p, q):
    ph, qh = _fp16_ftz(p), _fp16_ftz(q)
    return {
        "p": ph,
        "q": qh,
        "cdf": np.cumsum(_residual(ph / ph.sum(), qh / max(qh.sum(), 1e-300))),
    }


softmax_residual = Bug(
    "softmax_residual",
    _softmax_residual_prep,
    _sd_run,
    "SD whose residual is softmax((p - q)_+) instead of norm((p - q)_+) (transformers PR "
    "#28508): exp(0) = 1 gives every token mass, pulling the output towards uniform.",
)
argmax_draft_sampled_ratio = Bug(
    "argmax_draft_sampled_ratio",
    _argmax_prep,
    lambda prep, p, q, d, rng: _sd_run(prep, p, q, d, rng, x=prep["x"]),
    "The drafter proposes argmax q but the verifier uses q as if sampled (transformers "
    "#32867): with q = [.8, .2] and p = [.6, .4] the output is [.75, .25].",
)
rrs_dedup = Bug(
    "rrs_dedup",
    _rrs_prep,
    _dedup_run,
    "RRS that keeps only the first copy of a repeated i.i.d. draft (pitfall P1).",
)
rrs_top_k = Bug(
    "rrs_top_k",
    _rrs_prep,
    _top_k_run,
    "RRS with q-ratios on the deterministic top-n draft tokens instead of samples from q "
    "(pitfall P2, EAGLE #221); the point-mass recursion (nss) would be valid.",
)
target_at_temperature_07 = Bug(
    "target_at_temperature(0.7)",
    _tempered_prep(0.7),
    _sd_run,
    "SD against the target at T = 1 while the request (and the draft) are at T = 0.7: "
    "norm(p ** 0.7) instead of p (vLLM #9834).",
)
fp16_flush_to_zero = Bug(
    "fp16_flush_to_zero",
    _fp16_prep,
    _sd_run,
    "SD on probabilities stored in float16 with subnormals flushed to zero: tokens below "
    "2^-14 ~ 6.1e-5 lose their target mass, and a draft whose probability underflowed is "
    "accepted for sure.",
)

#: The zoo: name -> (callable, n, draft law) as the checker should run it.
BUGS = {
    "softmax_residual": (softmax_residual, 1, "iid"),
    "argmax_draft_sampled_ratio": (argmax_draft_sampled_ratio, 1, "iid"),
    "rrs_dedup": (rrs_dedup, 4, "iid"),
    "rrs_top_k": (rrs_top_k, 4, "iid"),
    "target_at_temperature(0.7)": (target_at_temperature_07, 1, "iid"),
    "fp16_flush_to_zero": (fp16_flush_to_zero, 1, "iid"),
}
