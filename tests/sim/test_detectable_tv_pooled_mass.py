"""A bias hidden among the rare tokens that the row test pools into one cell is not below the
reported detectable_tv (a TV 0.2 bias passed while detectable_tv claimed 0.038)."""

import numpy as np

from spectheory.sim.check import check_lossless


def test_detectable_tv_covers_a_bias_among_pooled_tokens():
    V = 40_010
    p = np.full(V, 0.5 / 40_000)
    p[:10] = 0.05  # ten likely tokens, half the mass spread over 40,000 rare ones
    biased = p.copy()
    biased[10::2] *= 0.2
    biased[11::2] *= 1.8  # TV 0.2, entirely inside the pooled cell
    biased /= biased.sum()
    tv = 0.5 * np.abs(biased - p).sum()
    cdf = np.cumsum(biased)

    def lossy(target, draft, drafts, rng):
        return int(min(np.searchsorted(cdf, rng.random(), side="right"), V - 1))

    r = check_lossless(lossy, p, np.full(V, 1 / V), n=1, sampling="iid", trials=20_000, seed=0)
    # the claim "every bias of TV >= detectable_tv is found with probability 0.99" must hold here
    assert r.lossy or r.detectable_tv > tv, (r.lossy, r.detectable_tv, tv)
