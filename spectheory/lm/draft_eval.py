r"""Held-out evaluation of trained and quantised drafts: acceptance on the target's continuations.

Both :func:`evaluate_adapter` (``adapter:L``) and :func:`evaluate_quantised`
(``quant:TYPE``) replay the target's sampled continuations of the held-out
prompts (:func:`held_out_sequences`, the evaluation prompts of the default
trace) with teacher forcing and report the mean acceptance
:math:`\frac1N\sum_t\sum_x \min(p_t, q_t)` (the single-draft acceptance of
Leviathan et al., arXiv 2211.17192) with cluster-bootstrap intervals over
prompts (:func:`prompt_bootstrap`).  Split from :mod:`.adapters` and
:mod:`.quantised` so that those stay free of traces and recording (no import
cycle inside ``spectheory.lm``).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError
from .._threads import with_torch_threads
from .._validate import check_positive_int, check_rng, integer_vector, real_array
from ._kv import cache_kwargs, cache_of
from ._loader import model_device
from .adapters import Adapter
from .quantised import quantised_model

__all__ = [
    "AdapterEvaluation",
    "MultiDraftEvaluation",
    "evaluate_adapter",
    "evaluate_multidraft",
    "evaluate_quantised",
    "held_out_sequences",
    "held_out_table",
    "load_held_out",
    "lumped_rows",
    "prompt_bootstrap",
    "sampled_held_out_sequences",
    "save_held_out",
]


@dataclass(frozen=True)
class AdapterEvaluation:
    r"""Held-out acceptance of an adapter draft (:func:`evaluate_adapter`).

    Attributes
    ----------
    temperatures : tuple of float
    acceptance : tuple of float
        Mean :math:`\sum_x \min(p_t, q_t)` over the held-out positions, per temperature.
    raw_exit : tuple of float
        The same for the untrained ``exit:L`` on the same positions.
    coverage : tuple of float
        Mean :math:`p_t(S)` (1 without a subset): the ceiling of the acceptance.
    positions : tuple of int
    per_prompt : tuple of ndarray (P, 2)
        Per temperature and held-out prompt: the sum of
        :math:`\sum_x \min(p_t, q_t)` over its positions, and their number
        (the unit of resampling of :meth:`acceptance_ci`).
    """

    temperatures: tuple
    acceptance: tuple
    raw_exit: tuple
    coverage: tuple
    positions: tuple
    per_prompt: tuple = ()

    def acceptance_ci(self, level=0.95, n_boot=2000, seed=0):
        r"""Percentile bootstrap intervals of :attr:`acceptance`, resampling prompts.

        Positions within a prompt are dependent, so whole prompts are
        resampled (a cluster bootstrap); the statistic is the ratio
        :math:`\sum_{\text{prompts}} \text{sum} / \sum_{\text{prompts}} \text{count}`.

        Returns
        -------
        tuple of (lo, hi), one per temperature.
        """
        return tuple(
            prompt_bootstrap([pp], level=level, n_boot=n_boot, seed=seed)[0]
            for pp in self.per_prompt
        )


def prompt_bootstrap(tables, statistic=None, *, level=0.95, n_boot=2000, seed=0):
    r"""Cluster-bootstrap interval of a statistic of several per-prompt tables.

    Parameters
    ----------
    tables : sequence of ndarray (P, 2)
        Per draft (or condition), ``(sum, count)`` per held-out prompt, the
        prompts in the same order in every table: one resample of prompt
        indices is applied to all tables alike (paired).  Sums are finite
        reals, counts finite and >= 0; a prompt with count 0 must have sum 0
        (it holds no positions).
    statistic : callable, optional
        Maps the vector of ratio estimates (one per table) to a float; default
        is the first table's ratio.
    level : float in (0, 1)
    n_boot : int
    seed : int >= 0, numpy Generator or None (:func:`spectheory._validate.check_rng`)

    Returns
    -------
    (lo, hi), and the point estimate: ``((lo, hi), value)``.

    Notes
    -----
    Each table's ratio is :math:`\sum_i s_i / \sum_i n_i` over the (resampled)
    prompts.  Prompts with count 0 are kept as clusters (they add nothing to
    either sum, so the point estimate is unchanged by them); the ratio is
    defined as long as the prompts drawn have a positive total count.  If a
    table's total count is 0, or some bootstrap resample draws only prompts
    of count 0 for some table (its ratio would be 0/0), the call raises
    :class:`~spectheory.InvalidParameterError` instead of returning NaN: drop
    the empty prompts, or use more prompts.

    Raises
    ------
    InvalidParameterError
        Bad ``tables`` (not equal-shaped ``(P, 2)`` real arrays with ``P >= 1``,
        a non-finite sum, a negative or non-finite count, a non-zero sum at
        count 0, a zero total count, an undefined resample as above), or a bad
        ``level``, ``n_boot``, ``seed`` or ``statistic``.

    Examples
    --------
    >>> t = np.array([[1.0, 2.0], [3.0, 4.0], [2.0, 4.0]])
    >>> (lo, hi), v = prompt_bootstrap([t], n_boot=200)
    >>> round(v, 4), bool(lo <= v <= hi)
    (0.6, True)
    """

    if isinstance(level, bool | np.bool_) or not isinstance(level, numbers.Real):
        raise InvalidParameterError(f"level must be in (0, 1); got {level!r}")
    if not 0 < level < 1:
        raise InvalidParameterError(f"level must be in (0, 1); got {level!r}")
    n_boot = check_positive_int(n_boot, "n_boot")
    rng = check_rng(seed, "seed")
    if statistic is not None and not callable(statistic):
        raise InvalidParameterError(f"statistic must be callable or None; got {statistic!r}")
    if isinstance(tables, str | bytes | np.ndarray) and np.ndim(tables) != 3:
        raise InvalidParameterError("tables must be a sequence of (P, 2) arrays of (sum, count)")
    try:
        tables = list(tables)
    except TypeError:
        raise InvalidParameterError(
            "tables must be a sequence of (P, 2) arrays of (sum, count)"
        ) from None
    arrs = [real_array(t, f"tables[{j}]") for j, t in enumerate(tables)]
    if not arrs or any(a.ndim != 2 or a.shape[1] != 2 or a.shape != arrs[0].shape for a in arrs):
        raise InvalidParameterError("tables must be equal-shaped (P, 2) arrays of (sum, count)")
    if arrs[0].shape[0] == 0:
        raise InvalidParameterError("tables hold no prompts (P = 0)")
    for j, a in enumerate(arrs):
        s, n = a[:, 0], a[:, 1]
        bad = ~np.isfinite(s) | ~np.isfinite(n) | (n < 0) | ((n == 0) & (s != 0))
        if bad.any():
            i = int(np.argmax(bad))
            raise InvalidParameterError(
                f"tables[{j}] prompt {i} has (sum, count) = ({float(s[i])!r}, {float(n[i])!r}): "
                "sums must be finite, counts finite and >= 0, and a prompt of count 0 must have "
                "sum 0"
            )
        if not n.sum() > 0:
            raise InvalidParameterError(
                f"tables[{j}] has total count 0: its ratio sum / count is undefined"
            )
    stat = statistic or (lambda r: float(r[0]))
    value = stat(np.array([a[:, 0].sum() / a[:, 1].sum() for a in arrs]))
    idx = rng.integers(0, arrs[0].shape[0], size=(n_boot, arrs[0].shape[0]))
    counts = np.stack([a[idx, 1].sum(1) for a in arrs], axis=1)  # (n_boot, tables)
    empty = ~(counts > 0)
    if empty.any():
        j = int(np.argmax(empty.any(axis=0)))
        zero = int((arrs[j][:, 1] == 0).sum())
        raise InvalidParameterError(
            f"{int(empty[:, j].sum())} of {n_boot} bootstrap resamples draw only prompts of "
            f"count 0 from tables[{j}] ({zero} of its {arrs[j].shape[0]} prompts have count 0): "
            "their ratio is 0/0; drop the prompts of count 0 or use more prompts"
        )
    ratios = np.stack([a[idx, 0].sum(1) for a in arrs], axis=1) / counts
    boots = np.array([stat(r) for r in ratios])
    lo, hi = np.percentile(boots, [50 * (1 - level), 50 * (1 + level)])
    return (float(lo), float(hi)), value


def held_out_sequences(loaded, temperature, max_new_tokens=24, prompts=None):
    """Yield ``(ids, b)`` per held-out prompt: prompt + continuation (minus its last token).

    The continuations are those of the default trace
    (:func:`spectheory.lm.record_trace`, ``TraceSettings(temperature=...,
    max_new_tokens=...)``, cached) over the 38 evaluation prompts; positions
    ``b = len(prompt) - 1 ..`` of ``ids`` predict the continuation's tokens.
    """
    from .acceptance import _prompt_slices
    from .trace import TraceSettings, record_trace

    extra = {} if prompts is None else {"prompts": tuple(int(i) for i in prompts)}
    trace = record_trace(
        TraceSettings(temperature=temperature, max_new_tokens=max_new_tokens, **extra),
        loaded=loaded,
        progress=False,
    )
    order = list(trace.metadata["prompt_order"])
    for pid, sl in _prompt_slices(trace):
        j = order.index(pid)
        prompt = trace.prompt_tokens[trace.prompt_offsets[j] : trace.prompt_offsets[j + 1]]
        yield np.concatenate([prompt, trace.tokens[sl][:-1]]), prompt.size - 1


def held_out_table(loaded, temperatures=(0.7, 1.0), max_new_tokens=24, prompts=None) -> dict:
    """:func:`held_out_sequences` for each temperature: ``{T: [(ids, b), ...]}``.

    What :func:`evaluate_adapter` takes as ``sequences``; with
    :func:`save_held_out` and :func:`load_held_out` it carries the CPU-recorded
    held-out positions to a model on a GPU (where no trace is recorded).
    """
    from .acceptance import _check_temperature

    temps = [_check_temperature(t, "temperatures") for t in temperatures]
    return {T: list(held_out_sequences(loaded, T, max_new_tokens, prompts)) for T in temps}


def _pair_source(sequences, temps, loaded, max_new_tokens, prompts):
    """``T -> (ids, b) pairs`` from ``sequences``: None (the trace), a table or a callable.

    A table (:func:`held_out_table`, :func:`load_held_out`) must hold every
    temperature asked for; this is checked before any pass.  Its pairs are
    used as they are, so ``prompts`` (which selects among the trace's prompts)
    is refused beside it rather than ignored.
    """
    if sequences is None:
        return lambda T: held_out_sequences(loaded, T, max_new_tokens, prompts)
    if callable(sequences):
        return lambda T: sequences(loaded, T, max_new_tokens, prompts)
    if not hasattr(sequences, "keys"):
        raise InvalidParameterError(
            f"sequences must be a table {{T: [(ids, b), ...]}} or a callable; got {sequences!r}"
        )
    if prompts is not None:
        raise InvalidParameterError(
            f"prompts={prompts!r} selects prompts of the recorded trace; a sequences table "
            "holds its own pairs (select them when building it: held_out_table(..., prompts=))"
        )
    missing = [T for T in temps if T not in sequences]
    if missing:
        raise InvalidParameterError(
            f"sequences holds temperatures {sorted(sequences)}; got no pairs for {missing}"
        )
    return lambda T: sequences[T]


def save_held_out(table: dict, path) -> None:
    """Write a :func:`held_out_table` as ``.npz`` (token ids, offsets, starts per temperature).

    Each pair is checked: ``ids`` a non-empty 1-D integer sequence and ``b`` a
    position inside it (the table's meaning: positions ``b ..`` are scored).
    """
    from .acceptance import _check_temperature

    if not hasattr(table, "items") or not table:
        raise InvalidParameterError(
            f"table must be a non-empty {{T: [(ids, b), ...]}}; got {table!r}"
        )
    arrays = {}
    for k, (T, pairs) in enumerate(sorted(table.items())):
        T = _check_temperature(T, "table temperature")
        pairs = [(integer_vector(ids, f"table[{T}] ids"), b) for ids, b in pairs]
        for ids, b in pairs:
            if isinstance(b, bool) or not isinstance(b, int | np.integer) or not 0 <= b < ids.size:
                raise InvalidParameterError(
                    f"table[{T}]: start {b!r} must be a position of its {ids.size} ids"
                )
        if not pairs:
            raise InvalidParameterError(f"table[{T}] holds no (ids, b) pairs")
        arrays[f"T{k}"] = np.float64(T)
        arrays[f"ids{k}"] = np.concatenate([ids for ids, _ in pairs])
        arrays[f"offsets{k}"] = np.cumsum([0] + [len(ids) for ids, _ in pairs]).astype(np.int64)
        arrays[f"starts{k}"] = np.asarray([b for _, b in pairs], dtype=np.int64)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def load_held_out(path) -> dict:
    """Read a table written by :func:`save_held_out` (``{T: [(ids, b), ...]}``)."""
    out = {}
    with np.load(path) as z:
        k = 0
        while f"T{k}" in z:
            ids, offs, starts = z[f"ids{k}"], z[f"offsets{k}"], z[f"starts{k}"]
            out[float(z[f"T{k}"])] = [
                (ids[offs[i] : offs[i + 1]], int(starts[i])) for i in range(starts.size)
            ]
            k += 1
    if not out:
        raise InvalidParameterError(f"{str(path)!r} holds no held-out table")
    return out


@with_torch_threads
def sampled_held_out_sequences(loaded, temperature, max_new_tokens=24, *, seed=0, prompts=None):
    r"""The target's continuations of the held-out prompts, sampled in one batch.

    A cheaper stand-in for :func:`held_out_sequences` (which replays the
    recorded default trace, one prompt at a time, with its drafts): the
    prompts are encoded as the trace encodes them, left-padded into one batch
    and continued with a key-value cache, each row sampling from
    :math:`\mathrm{softmax}(z / T)` (the argmax at ``T = 0``) with one seeded
    torch generator, until it emits an end-of-turn token or reaches
    ``max_new_tokens``.  The continuations are other draws from the same
    target laws as the trace's, not the same tokens.  Runs on the model's
    device (a GPU's generator draws other tokens than the CPU's).

    Returns
    -------
    list of ``(ids, b)``
        As :func:`held_out_sequences`: prompt plus continuation minus its last
        token; positions ``b ..`` predict the continuation.
    """
    import torch

    from .acceptance import _check_temperature
    from .prompts import encode_prompt, prompt_set

    T = _check_temperature(temperature, "temperature")
    max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens")
    pset = prompt_set()
    order = range(len(pset)) if prompts is None else sorted(int(i) for i in prompts)
    enc = [encode_prompt(loaded.tokenizer, pset[i][1], pset[i][2], f"prompt {i}") for i in order]
    model = loaded.model
    eos = {int(t) for t in np.atleast_1d(model.generation_config.eos_token_id)}
    if loaded.tokenizer.eos_token_id is not None:
        eos.add(int(loaded.tokenizer.eos_token_id))
    n = max(e.size for e in enc)
    ids = torch.zeros((len(enc), n), dtype=torch.long)
    mask = torch.zeros((len(enc), n), dtype=torch.long)
    for i, e in enumerate(enc):  # left padding; positions count real tokens only
        ids[i, n - e.size :] = torch.as_tensor(e)
        mask[i, n - e.size :] = 1
    device = model_device(model)
    ids, mask = ids.to(device), mask.to(device)
    gen = torch.Generator(device=device).manual_seed(int(seed))
    out, done, past, inp = [[] for _ in enc], [False] * len(enc), None, ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            pos = (mask.cumsum(-1) - 1).clamp(min=0)[:, -inp.shape[1] :]
            o = model(
                input_ids=inp, attention_mask=mask, position_ids=pos, **cache_kwargs(model, past),
                use_cache=True,
            )  # fmt: skip
            past = cache_of(o)
            z = o.logits[:, -1].double()
            if T == 0:
                nxt = z.argmax(-1)
            else:
                nxt = torch.multinomial(torch.softmax(z / T, dim=-1), 1, generator=gen)[:, 0]
            for i, t in enumerate(nxt.tolist()):  # one transfer per step, not per row
                if not done[i]:
                    out[i].append(t)
                    done[i] = t in eos
            if all(done):
                break
            inp = nxt[:, None]
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
    return [
        (np.concatenate([e, np.asarray(c[:-1], dtype=np.int64)]), e.size - 1)
        for e, c in zip(enc, out)
    ]


@with_torch_threads
def evaluate_adapter(
    loaded,
    adapter: Adapter,
    temperatures=(0.7, 1.0),
    *,
    max_new_tokens=24,
    prompts=None,
    sequences=None,
):
    r"""Mean acceptance on target-sampled continuations of the 38 held-out prompts.

    For each temperature :math:`T` the target's continuations come from
    :func:`held_out_sequences`, or from ``sequences`` (as for
    :func:`evaluate_multidraft`); one teacher-forced pass per prompt gives
    :math:`p_t = \mathrm{softmax}(z_t / T)` and the adapter's :math:`q_t` (its
    attention sees the prompt and the continuation so far), and

    .. math:: \bar\beta(T) = \frac1N \sum_t \sum_x \min(p_t(x), q_t(x)).

    Returns
    -------
    AdapterEvaluation
        With the raw ``exit:L`` on the same positions for comparison.
    """
    import torch

    from .acceptance import _check_temperature
    from .drafts import early_exit_logits

    temps = tuple(_check_temperature(t, "temperatures") for t in temperatures)
    pairs_at = _pair_source(sequences, temps, loaded, max_new_tokens, prompts)
    device = model_device(loaded.model)
    vocab = None if adapter.vocab is None else adapter.vocab.to(device)
    accs, raws, covs, npos, per = [], [], [], [], []
    for T in temps:
        tot, n, rows = np.zeros(3), 0, []
        with torch.no_grad():
            for ids, b in pairs_at(T):
                out = loaded.model(
                    input_ids=torch.as_tensor(ids[None]).to(device),
                    output_hidden_states=True,
                    use_cache=False,
                )
                p = _softmax_t(out.logits[0, b:].double(), T)
                pos = torch.arange(ids.size, device=device)[None]
                z = adapter.subset_logits(out.hidden_states[adapter.layer], pos)[0, b:]
                q = _softmax_t(z.double(), T)
                raw = early_exit_logits(loaded.model, out.hidden_states, adapter.layer)[0, b:]
                praw = _softmax_t(raw.double(), T)
                pS = p if vocab is None else p[:, vocab]
                acc = float(torch.minimum(pS, q).sum())
                tot += [acc, float(torch.minimum(p, praw).sum()), float(pS.sum())]
                n += p.shape[0]
                rows.append((acc, p.shape[0]))
        accs.append(tot[0] / n)
        raws.append(tot[1] / n)
        covs.append(tot[2] / n)
        npos.append(n)
        per.append(np.asarray(rows, dtype=np.float64))
    return AdapterEvaluation(
        temperatures=temps,
        acceptance=tuple(accs),
        raw_exit=tuple(raws),
        coverage=tuple(covs),
        positions=tuple(npos),
        per_prompt=tuple(per),
    )


def _softmax_t(z, T):
    import torch

    if T == 0:
        out = torch.zeros_like(z)
        out.scatter_(-1, z.argmax(-1, keepdim=True), 1.0)
        return out
    return torch.softmax(z / T, dim=-1)


def lumped_rows(p, q, vocab):
    r"""Target and draft rows on :math:`S \cup \{\text{rest}\}`: exact for :math:`\alpha^*`.

    The draft's ``q`` (B, K) lives on the sorted ids ``vocab`` (K,) of
    :math:`S` (``None``: the whole vocabulary, rows returned unchanged); the
    target's ``p`` (B, V) on all ``V`` tokens.  Returns ``p'`` = (p on S,
    p(outside S)) and ``q'`` = (q, 0), shape (B, K + 1).  Tokens with
    :math:`q = 0` never enter an optimal set of
    :math:`\alpha^* = 1 + \min_H [p(H) - Q(H)]` (they add :math:`p`, and
    :math:`Q(H)` depends on :math:`q` on :math:`H` only), so lumping them
    leaves :math:`\alpha^*` unchanged for every ``n`` and draft law
    (docs/theory.md §2.3), at a sixth of the width for ``K = 8192``.

    Examples
    --------
    >>> import spectheory
    >>> p = np.array([[0.1, 0.2, 0.3, 0.4]]); q = np.array([[0.5, 0.5]])
    >>> pl, ql = lumped_rows(p, q, np.array([1, 3]))
    >>> pl.round(12).tolist(), ql.tolist()
    ([[0.2, 0.4, 0.4]], [[0.5, 0.5, 0.0]])
    >>> full = np.array([[0.0, 0.5, 0.0, 0.5]])
    >>> bool(np.isclose(spectheory.bound(pl, ql, 2), spectheory.bound(p, full, 2), rtol=1e-12))
    True
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if vocab is None:
        return p, q
    vocab = np.asarray(vocab, dtype=np.int64)
    pS = p[:, vocab]
    rest = np.clip(1.0 - pS.sum(axis=1, keepdims=True), 0.0, None)
    return np.concatenate([pS, rest], axis=1), np.concatenate([q, np.zeros_like(rest)], axis=1)


@dataclass(frozen=True)
class MultiDraftEvaluation:
    r"""Held-out optimal acceptance of several adapters on the same positions.

    Attributes
    ----------
    names : tuple of str
        One label per adapter, in the order given.
    temperatures : tuple of float
    ns : tuple of int
        Numbers of drafts; ``1`` is the single-draft acceptance
        :math:`\sum_x \min(p, q)` (the same for every law).
    laws : tuple of str
        Draft laws of ``n > 1`` (:data:`spectheory.drafting.SAMPLINGS`).
    tables : dict
        ``(name, T, n, law) -> ndarray (P, 2)``: per held-out prompt, the sum
        of :math:`\alpha^*_n(p_t, q_t)` over its positions and their number
        (``law`` is ``"iid"`` for ``n = 1``); the prompts in the same order in
        every table, so differences can be bootstrapped paired
        (:func:`prompt_bootstrap`).
    """

    names: tuple
    temperatures: tuple
    ns: tuple
    laws: tuple
    tables: dict

    def value(self, name, T, n, law="iid") -> float:
        """Mean :math:`\alpha^*_n` over the positions (ratio of the table's sums)."""
        t = self.tables[(name, T, n, "iid" if n == 1 else law)]
        return float(t[:, 0].sum() / t[:, 1].sum())

    def interval(self, name, T, n, law="iid", *, versus=None, **kwargs):
        """Prompt-bootstrap interval of the value, or of its difference to ``versus`` (paired).

        Returns ``((lo, hi), value)`` as :func:`prompt_bootstrap`.
        """
        key = (T, n, "iid" if n == 1 else law)
        if versus is None:
            return prompt_bootstrap([self.tables[(name, *key)]], **kwargs)
        pair = [self.tables[(name, *key)], self.tables[(versus, *key)]]
        return prompt_bootstrap(pair, lambda r: float(r[0] - r[1]), **kwargs)


def evaluate_multidraft(
    loaded,
    adapters,
    temperatures=(1.0,),
    ns=(1, 2, 4),
    laws=("iid", "without_replacement"),
    *,
    max_new_tokens=24,
    prompts=None,
    progress=None,
    sequences=None,
):
    r"""Held-out :math:`\alpha^*_n` of several adapters, one target pass per prompt.

    For each temperature :math:`T` and held-out prompt
    (:func:`held_out_sequences`): :math:`p_t = \mathrm{softmax}(z_t / T)` from
    the target and :math:`q_t` from each adapter (as in
    :func:`evaluate_adapter`), then :math:`\alpha^*_n(p_t, q_t)` by
    :func:`spectheory.bound` on :func:`lumped_rows` (exact), summed per prompt.

    Parameters
    ----------
    adapters : mapping {str: Adapter}
        All on the same exit layer's target (any layers; each reads its own).
    temperatures, ns, laws : sequences
    progress : callable, optional
        Called with a message after each temperature.
    sequences : mapping or callable, optional
        Where the ``(ids, b)`` pairs come from; default
        :func:`held_out_sequences` (the recorded trace's).  A table
        ``{T: [(ids, b), ...]}`` (:func:`held_out_table`, or
        :func:`load_held_out` of a file written on the CPU, for a model on a
        GPU, where no trace is recorded), or a callable
        ``sequences(loaded, T, max_new_tokens, prompts)``, e.g.
        :func:`sampled_held_out_sequences` for a cheaper batched sample.

    Returns
    -------
    MultiDraftEvaluation
    """
    import torch

    from ..drafting import SAMPLINGS
    from ..solvers.ot_dual import bound
    from .acceptance import _check_temperature

    temps = tuple(_check_temperature(t, "temperatures") for t in temperatures)
    ns = tuple(check_positive_int(n, "ns") for n in ns)
    laws = tuple(laws)
    for law in laws:
        if law not in SAMPLINGS:
            raise InvalidParameterError(f"laws must be among {SAMPLINGS}; got {law!r}")
    if not adapters:
        raise InvalidParameterError("adapters must name at least one adapter")
    names = tuple(adapters)
    pairs_at = _pair_source(sequences, temps, loaded, max_new_tokens, prompts)
    device = model_device(loaded.model)
    keys = [(n, "iid") for n in ns if n == 1] + [(n, law) for n in ns if n > 1 for law in laws]
    rows = {(a, T, n, law): [] for a in names for T in temps for n, law in keys}
    for T in temps:
        with torch.no_grad():
            for ids, b in pairs_at(T):
                out = loaded.model(
                    input_ids=torch.as_tensor(ids[None]).to(device),
                    output_hidden_states=True,
                    use_cache=False,
                )
                p = _softmax_t(out.logits[0, b:].double(), T)
                pos = torch.arange(ids.size, device=device)[None]
                for a in names:
                    ad = adapters[a]
                    z = ad.subset_logits(out.hidden_states[ad.layer], pos)[0, b:]
                    q = _softmax_t(z.double(), T)
                    vocab = None if ad.vocab is None else ad.vocab.numpy()
                    pl, ql = lumped_rows(p.numpy(), q.numpy(), vocab)
                    for n, law in keys:
                        if n == 1:
                            acc = np.minimum(pl, ql).sum(axis=1)
                        else:
                            acc = np.asarray(bound(pl, ql, n, law), dtype=np.float64)
                        rows[(a, T, n, law)].append((float(acc.sum()), acc.size))
        if progress is not None:
            progress(f"evaluated T = {T:g}")
    tables = {k: np.asarray(v, dtype=np.float64) for k, v in rows.items()}
    return MultiDraftEvaluation(
        names=names,
        temperatures=temps,
        ns=ns,
        laws=laws,
        tables=tables,
    )


def evaluate_quantised(loaded, qtype: str = "Q4_0", temperatures=(0.7, 1.0), *, max_new_tokens=24):
    r"""Held-out acceptance :math:`\frac1N\sum_t\sum_x \min(p_t, q_t)` of ``quant:TYPE``.

    Same positions as :func:`evaluate_adapter` (the
    target's continuations of the 38 held-out prompts); ``raw_exit`` holds
    NaN (no exit to compare with) and ``coverage`` 1.

    Returns
    -------
    AdapterEvaluation
    """
    import torch

    from .acceptance import _check_temperature

    temps = tuple(_check_temperature(t, "temperatures") for t in temperatures)
    qmodel = quantised_model(loaded, qtype)
    accs, npos, per = [], [], []
    for T in temps:
        rows = []
        with torch.no_grad():
            for ids, b in held_out_sequences(loaded, T, max_new_tokens):
                x = torch.as_tensor(ids[None])
                p = _softmax_t(loaded.model(input_ids=x, use_cache=False).logits[0, b:].double(), T)
                q = _softmax_t(qmodel(input_ids=x, use_cache=False).logits[0, b:].double(), T)
                rows.append((float(torch.minimum(p, q).sum()), p.shape[0]))
        rows = np.asarray(rows, dtype=np.float64)
        accs.append(rows[:, 0].sum() / rows[:, 1].sum())
        npos.append(int(rows[:, 1].sum()))
        per.append(rows)
    nan = tuple(float("nan") for _ in temps)
    return AdapterEvaluation(
        temperatures=temps,
        acceptance=tuple(accs),
        raw_exit=nan,
        coverage=tuple(1.0 for _ in temps),
        positions=tuple(npos),
        per_prompt=tuple(per),
    )
