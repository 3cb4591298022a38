r"""Testing helpers for verifiers: hypothesis strategies and losslessness assertions.

For a researcher's own test suite (and spectheory's own):

:func:`assert_exactly_lossless`
    Enumerates the verifier's exact output law (:func:`spectheory.output_distribution`)
    in :class:`fractions.Fraction` arithmetic on small vocabularies and asserts it
    equals the target, exactly.  Without an instance it checks the fixed
    :func:`lm_like_pairs`, then searches the edge cases of
    :func:`distribution_pairs` with hypothesis [1]_, and the
    :class:`AssertionError` names the *shrunk* (smallest) counterexample.
    Coins-protocol verifiers only: a black box has no exact law.
:func:`assert_lossless`
    The statistical checker (:func:`spectheory.check_lossless`) at a stated
    false-alarm rate ``alpha``, on given rows or on :func:`edge_cases`; the
    message states the power (the smallest total-variation bias per row
    detected with probability 0.99).  Works for black boxes and at any
    vocabulary size.
:func:`distribution_pairs`, :func:`distributions`, :func:`draft_tuples`
    Hypothesis strategies (``pip install 'spectheory[testing]'``): target and
    draft rows with the cases that break verifiers (zeros, ties and
    near-ties, one-hot rows, peaked rows with long light tails as language
    models produce, identical and disjoint pairs), and draft tuples of
    positive probability under each draft law.

Example (the test a researcher copies, README "Testing your own verifier")::

    from spectheory.testing import assert_exactly_lossless, assert_lossless

    def my_sd(p, q, drafts, coins, *, sampling):  # every law it claims is checked
        x = drafts[0]
        if coins.bernoulli(min(1, p[x] / q[x])):
            return x
        rest = np.maximum(p - q, 0)
        return coins.categorical(rest / rest.sum())

    def test_my_sd_is_lossless():
        assert_exactly_lossless(my_sd, n=1)
        assert_lossless(my_sd, n=1)

References
----------
.. [1] D. R. MacIver, Z. Hatfield-Dodds et al., "Hypothesis: A new approach to
   property-based testing", JOSS 4(43), 1891 (2019).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ._errors import InvalidParameterError, MissingDependencyError, SpecTheoryError
from .drafting import SAMPLINGS

__all__ = [
    "assert_exactly_lossless",
    "assert_lossless",
    "distribution_pairs",
    "distributions",
    "draft_tuples",
    "edge_cases",
    "lm_like_pairs",
]


def _st():
    try:
        from hypothesis import strategies
    except ImportError:
        raise MissingDependencyError(
            "spectheory.testing's strategies need hypothesis: pip install 'spectheory[testing]'"
        ) from None
    return strategies


def _normalise(weights, exact):
    total = sum(weights)
    if exact:
        return np.array([Fraction(int(w), int(total)) for w in weights], dtype=object)
    w = np.asarray(weights, dtype=np.float64)
    return w / w.sum()


def distributions(vocab, *, exact: bool = True):
    """Strategy: one distribution over ``vocab`` tokens, edge cases included.

    Drawn from integer weights normalised (exactly, as Fractions, by default):
    generic rows with zeros, one-hot rows, rows with ties and near-ties
    (weights ``k`` and ``k + 1`` out of ~10^3), and peaked rows (one token of
    weight 1000, a light tail).  Tokens are then permuted.

    Parameters
    ----------
    vocab : int
    exact : bool
        Fraction object arrays (True) or float64.
    """
    st = _st()
    if vocab < 1:
        raise InvalidParameterError(f"vocab must be >= 1; got {vocab!r}")
    generic = st.lists(st.integers(0, 12), min_size=vocab, max_size=vocab).filter(any)
    one_hot = st.integers(0, vocab - 1).map(lambda i: [int(j == i) for j in range(vocab)])
    ties = st.integers(300, 600).flatmap(
        lambda k: st.lists(st.sampled_from([k, k + 1, 0]), min_size=vocab, max_size=vocab)
    ).filter(any)
    peaked = st.lists(st.integers(0, 3), min_size=vocab - 1, max_size=vocab - 1).map(
        lambda tail: [1000, *tail]
    )
    rows = st.one_of(generic, one_hot, ties, peaked)
    return st.tuples(rows, st.permutations(range(vocab))).map(
        lambda rp: _normalise([rp[0][i] for i in rp[1]], exact)
    )


def distribution_pairs(min_vocab: int = 2, max_vocab: int = 4, *, exact: bool = True):
    """Strategy: ``(p, q)`` target and draft rows of one vocabulary, edge cases included.

    Besides independent draws from :func:`distributions`, a fifth of the
    pairs are identical (``q = p``) and a fifth have disjoint supports where
    possible (every draft token has target probability 0, or the reverse).
    """
    st = _st()

    def pair(V):
        d = distributions(V, exact=exact)
        same = d.map(lambda p: (p, p.copy()))

        def disjoint(p):
            q = np.where(p == 0, 1, 0)
            return (p, _normalise(list(q), exact)) if q.any() else (p, p.copy())

        return st.one_of(st.tuples(d, d), st.tuples(d, d), st.tuples(d, d), same, d.map(disjoint))

    return st.integers(min_vocab, max_vocab).flatmap(pair)


def draft_tuples(q, n: int, sampling: str):
    """Strategy: draft tuples ``(x_1..x_n)`` of positive probability under ``sampling``.

    The support of the ordered draft law of :func:`spectheory.exact.ordered_draft_law`
    (i.i.d., without replacement, greedy), in draw order.
    """
    from .exact import ordered_draft_law

    if sampling not in SAMPLINGS:
        raise InvalidParameterError(f"sampling must be one of {SAMPLINGS}; got {sampling!r}")
    tuples = [t for t, _ in ordered_draft_law(np.asarray(q, dtype=object), n, sampling)]
    if not tuples:
        raise InvalidParameterError(f"no draft tuple of n = {n} has positive probability")
    return _st().sampled_from(tuples)


def _fmt(row):
    return "[" + ", ".join(str(x) for x in row) + "]"


def _exact_counterexample(v, p, q, n, sampling):
    """None if the exact law equals ``p``, else the assertion message."""
    from .exact import output_distribution

    law = output_distribution(v, p, q, n=n, sampling=sampling)
    if all(a == b for a, b in zip(law, p, strict=True)):
        return None
    tv = sum(abs(a - b) for a, b in zip(law, p, strict=True)) / 2
    return (
        f"verifier {v.name!r} is not lossless: with n = {n}, sampling = {sampling!r}, "
        f"target p = {_fmt(p)} and draft q = {_fmt(q)} its exact output law is {_fmt(law)} "
        f"(total variation {tv} = {float(tv):.4g} from p)"
    )


def _supported(v, q, n, sampling):
    from .drafting import check_draft_support

    if not v.supports(n, sampling):
        return False
    try:
        check_draft_support(q[None], n, sampling, True)
    except SpecTheoryError:
        return False
    return True


def assert_exactly_lossless(
    verifier,
    target=None,
    draft=None,
    *,
    n: int = 2,
    sampling: str | None = None,
    max_examples: int = 100,
    max_vocab: int = 4,
):
    """Assert that a verifier's exact output law is the target (Fraction arithmetic).

    Parameters
    ----------
    verifier : str, Verifier or function
        On the coins protocol ``fn(p, q, drafts, coins, *, sampling)``.
    target, draft : array_like, optional
        One instance (Fractions, or floats converted to Fractions).  If
        omitted, the pairs of :func:`lm_like_pairs` are checked, then
        hypothesis searches :func:`distribution_pairs` (vocabularies 2 to
        ``max_vocab``); both skip pairs whose draft cannot supply ``n`` drafts
        under the law, and the search reports the shrunk counterexample.
    n : int
        Number of drafts.
    sampling : str, optional
        Draft law; default every law the verifier claims (``Verifier.samplings``;
        all three for an undecorated function) that allows ``n`` drafts, each
        checked in turn: a verifier is only lossless for the laws it is checked
        under, and a record's claim is what the registry, the report and the
        simulator trust.
    max_examples : int
        Hypothesis examples tried (deterministic search: ``derandomize``).
    max_vocab : int
        Largest vocabulary searched (the cost grows like ``V^n``).

    Raises
    ------
    AssertionError
        The output law differs from the target; the message gives the
        (smallest found) target, draft, law and their total variation.
    InvalidParameterError
        A black-box verifier (no exact law) or an unsupported ``n``/``sampling``.
    """
    _check_instance_pair(target, draft)
    v, laws = _laws(verifier, n, sampling)
    if v.protocol != "coins":
        raise InvalidParameterError(
            f"verifier {v.name!r} is a black box: it has no exact law; use assert_lossless"
        )
    for law in laws:
        _assert_exactly_lossless_under(v, target, draft, n, law, max_examples, max_vocab)


def _check_instance_pair(target, draft):
    """Refuse half an instance: a lone ``draft`` was ignored (the default search ran instead)."""
    if (target is None) != (draft is None):
        given, missing = ("draft", "target") if target is None else ("target", "draft")
        raise InvalidParameterError(
            f"{given} was given without {missing}: give both target and draft, or neither "
            "(then the built-in cases are checked)"
        )


def _laws(verifier, n, sampling):
    """The verifier record and the draft laws to check: ``sampling``, or every law it claims."""
    from .verifiers._api import laws_to_check

    return laws_to_check(verifier, n, sampling)


def _assert_exactly_lossless_under(v, target, draft, n, sampling, max_examples, max_vocab):
    if target is not None:
        from ._validate import as_distribution_pair

        p, q, batched = as_distribution_pair(target, draft, allow_exact=True)
        if p.dtype != object:
            from ._validate import _as_exact

            p, q = _as_exact(p), _as_exact(q)
        for b in range(p.shape[0]):
            message = _exact_counterexample(v, p[b], q[b], n, sampling)
            if message:
                raise AssertionError(message + (f" (row {b})" if batched else ""))
        return
    if sampling != "iid" and n > max_vocab:
        # no pair searched has n tokens of draft support: every example would be assumed
        # away and hypothesis would raise Unsatisfiable, blaming filters the user never wrote
        raise InvalidParameterError(
            f"n = {n} drafts with sampling={sampling!r} need n tokens of draft support, but "
            f"max_vocab = {max_vocab}: pass max_vocab >= {n} (or a target and draft)"
        )
    # The fixed language-model pairs first: a search of 100 examples can miss
    # a bias that only shows where a peaked target meets a draft with mass on
    # its light tail (the common case in practice).
    for p, q in lm_like_pairs(max_vocab):
        if _supported(v, q, n, sampling):
            message = _exact_counterexample(v, p, q, n, sampling)
            if message:
                raise AssertionError(message)
    from hypothesis import HealthCheck, assume, given, settings

    @settings(
        max_examples=max_examples, deadline=None, database=None, derandomize=True,
        suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    )  # fmt: skip
    @given(distribution_pairs(2, max_vocab))
    def search(pair):
        p, q = pair
        assume(_supported(v, q, n, sampling))
        message = _exact_counterexample(v, p, q, n, sampling)
        if message:
            raise AssertionError(message)

    try:
        search()
    except AssertionError:
        raise
    except Exception as group:  # an ExceptionGroup of several distinct failures
        members = getattr(group, "exceptions", ())
        first = next((e for e in members if isinstance(e, AssertionError)), None)
        if first is None:
            raise
        raise AssertionError(str(first)) from group


def lm_like_pairs(max_vocab: int = 4) -> list:
    """Fixed exact ``(p, q)`` pairs of peaked targets and drafts with light tails.

    For each vocabulary ``V = 2 .. max_vocab``: a peaked target
    ``(1000, 1, ..., 1, 0)/Z`` against a uniform draft, against a draft peaked on
    its tail (the reverse order), and against a draft peaked elsewhere; a
    uniform target against a peaked draft; and the two peaked rows of a
    near-tie ``(500, 501, 0, ...)``.  :func:`assert_exactly_lossless` checks
    them before its hypothesis search: they are where verifiers that mistreat
    small probabilities (thresholds, floors, skipped residual mass) fail.

    >>> p, q = lm_like_pairs(2)[0]
    >>> str(p[0]), str(p[1]), str(q[0])
    ('1000/1001', '1/1001', '1/2')
    """
    if isinstance(max_vocab, bool) or not isinstance(max_vocab, int) or max_vocab < 2:
        raise InvalidParameterError(f"max_vocab must be an int >= 2; got {max_vocab!r}")
    out = []
    for V in range(2, max_vocab + 1):
        peaked = [1000] + [1] * (V - 2) + ([0] if V > 2 else [1])
        uniform = [1] * V
        other = [1] * V
        other[1] = 1000
        near_tie = [500, 501] + [0] * (V - 2)
        for p, q in (
            (peaked, uniform),
            (peaked, peaked[::-1]),
            (peaked, other),
            (uniform, peaked),
            (near_tie, near_tie[::-1]),
        ):
            out.append((_normalise(p, True), _normalise(q, True)))
    return out


def edge_cases(vocab: int = 50, seed: int = 0):
    """Deterministic ``(p, q)`` rows (B, V) of the cases that break verifiers, float64.

    Rows: generic Dirichlet pairs; a target with zeros where the draft has
    mass; a one-hot target; a one-hot draft; near-tied top tokens; peaked
    LM-like rows (Zipf tails, different peaks); identical rows.
    """
    rng = np.random.default_rng(seed)
    V = int(vocab)
    if V < 4:
        raise InvalidParameterError(f"vocab must be >= 4; got {vocab!r}")
    rows = []
    rows.append((rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))))
    p = rng.dirichlet(np.ones(V))
    p[: V // 2] = 0
    rows.append((p / p.sum(), rng.dirichlet(np.ones(V))))
    rows.append((np.eye(V)[1], rng.dirichlet(np.ones(V))))
    rows.append((rng.dirichlet(np.ones(V)), np.eye(V)[2] * 0.999 + 0.001 / V))
    tie = np.full(V, 0.2 / (V - 2))
    tie[:2] = [0.4, 0.4 + 1e-9]
    rows.append((tie / tie.sum(), np.roll(tie, 1) / tie.sum()))
    zipf = 1 / np.arange(1, V + 1) ** 1.5
    rows.append((zipf / zipf.sum(), np.roll(zipf, 3) / zipf.sum()))
    same = rng.dirichlet(np.full(V, 0.3))
    rows.append((same, same.copy()))
    p, q = (np.array(x) for x in zip(*rows, strict=True))
    return p, q


def assert_lossless(
    verifier,
    target=None,
    draft=None,
    n: int = 1,
    sampling: str | None = None,
    *,
    trials: int | None = None,
    alpha: float = 1e-6,
    rng=0,
):
    """Assert that :func:`spectheory.check_lossless` finds no bias, at false-alarm rate ``alpha``.

    A lossless verifier fails this assertion with probability at most
    ``alpha`` (the checker's Bonferroni-combined tests); a bias of total
    variation at least the reported ``detectable_tv`` on one row is caught
    with probability at least 0.99.

    Parameters
    ----------
    verifier : str, Verifier or function
        Any protocol (a black box included).
    target, draft : array_like (V,) or (B, V), optional
        Rows to test; default :func:`edge_cases` (7 rows, V = 50).
    n, sampling
        Number of drafts and draft law; default every law the verifier claims
        that allows ``n`` drafts, each checked at ``alpha / laws`` (Bonferroni,
        so the false-alarm rate of the whole assertion stays ``alpha``).
    trials : int, optional
        Trials per row (default :data:`spectheory.sim.check.DEFAULT_TRIALS`).
    alpha : float
        False-alarm rate.
    rng : int or numpy.random.Generator
        Seed (0 by default, so the assertion is reproducible).

    Returns
    -------
    dict
        The :class:`~spectheory.sim.check.LosslessReport` of each law checked.

    Raises
    ------
    AssertionError
        The checker rejects losslessness under some law; the message names the
        law and has the verdict and power.
    """
    from .sim.check import DEFAULT_TRIALS, check_lossless

    _check_instance_pair(target, draft)
    v, laws = _laws(verifier, n, sampling)
    share = alpha / len(laws)
    reports = {}
    for law in laws:
        rows, cols = (target, draft) if target is not None else edge_cases()
        if target is None and law != "iid":  # distinct drafts need n tokens of mass
            keep = np.count_nonzero(cols, axis=1) >= n
            rows, cols = rows[keep], cols[keep]
        # `trials or DEFAULT` ran 20,000 trials for trials=0 instead of refusing it
        count = DEFAULT_TRIALS if trials is None else trials
        report = check_lossless(v, rows, cols, n, law, trials=count, alpha=share, rng=rng)
        if report.lossy:
            raise AssertionError(
                f"verifier {v.name!r} is not lossless with sampling={law!r} ({report.verdict}) "
                f"at false-alarm rate {share:g}; per-row p-values {report.tests}; this test "
                f"detects with probability 0.99 a bias of total variation "
                f"{report.detectable_tv:.3g} on one row"
            )
        reports[law] = report
    return reports
