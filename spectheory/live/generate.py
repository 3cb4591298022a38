r"""Live speculative generation with a Hugging Face causal LM and a draft sharing its weights.

One round of **chain** speculative sampling (Leviathan et al. [1]_, docs/theory.md
1.1) with the target :math:`p` and the draft :math:`q`, both processed with the
same temperature, top-k and top-p (:func:`spectheory.process_logits`):

.. math::

    x_i \sim q(\cdot \mid c, x_{<i}),\ i = 1..\gamma;\qquad
    p_i = p(\cdot \mid c, x_{<i}),\ i = 1..\gamma+1 \text{ (one target pass)}

then position by position a registered single-draft verifier (``"sd"``:
accept :math:`x_i` with probability :math:`\min(1, p_i(x_i)/q_i(x_i))`, else
emit :math:`y \sim \mathrm{norm}((p_i - q_i)_+)` and end the round); if all
:math:`\gamma` drafts survive, a bonus token :math:`y \sim p_{\gamma+1}`.  A
round emits :math:`A + 1` tokens for one target call, :math:`A` the accepted
drafts (docs/theory.md §1.3).

**Multi-draft** rounds (SpecTr sequence form [2]_, docs/theory.md §4.1): ``n``
draft sequences of length :math:`\gamma` are drafted as ``n`` rows of one
batch.  At every node (the rows that share a prefix) the children are drawn
under the chosen draft law from the node's :math:`q`: i.i.d. (``"iid"``),
without replacement (``"without_replacement"``: distinct children, so rows
split at the first node), or Hu et al.'s greedy law (``"greedy"``: the top
``m - 1`` tokens plus one sampled).  The target scores all rows in one pass;
then, from the root, the verifier is run at the node of the accepted prefix
on the next tokens of the rows that still agree with it, :math:`m` of them:

.. math::

    y_d = \mathrm{verify}\big(p_d, q_d, (x^{(r)}_d)_{r \in S_d}\big),\qquad
    S_{d+1} = \{r \in S_d : x^{(r)}_d = y_d\},

and the round ends at the first :math:`S_{d+1} = \emptyset` (``y_d`` is the
correction) or with a bonus token after depth :math:`\gamma`.

Why this is lossless.  The rows were drafted independently given their own
prefixes, and the verifier at depth :math:`d` looks only at depth-:math:`d`
tokens and its own coins.  So, conditionally on everything revealed up to
depth :math:`d` (all depth-:math:`\le d` tokens, all earlier outputs and
coins), the next tokens of the surviving rows :math:`S_{d+1}` are
:math:`|S_{d+1}|` draws *under the same draft law* from
:math:`q(\cdot \mid c, y_{\le d})`, the law the verifier at that node assumes.
A lossless verifier then emits :math:`y_{d+1} \sim p(\cdot \mid c, y_{\le d})`
given the whole past; a correction or bonus token has that law too.  By
induction every emitted token has the target's law given the tokens before
it, so the output sequence has exactly the target's law.  (For
``"iid"`` the surviving rows' next tokens are i.i.d.; for the other laws all
children of the root are distinct, each later node has one row, and a single
child drawn from :math:`q` is a valid draft under every law.)  A node with one
child is verified with ``"sd"`` when the chosen verifier needs more drafts
(``spechub`` needs exactly two).

Caches: the target and the draft each keep a key-value cache
(``transformers.DynamicCache``).  Multi-draft rounds replicate both over the
``n`` rows (``batch_repeat_interleave``), then keep the row of the accepted
prefix (``batch_select_indices``) and crop the rejected positions.

Recording (``record=True``) keeps the processed target distribution
:math:`p` at every emitted position, the distribution the token was emitted
from, so that losslessness can be tested on the live run
(:func:`check_live_lossless`), and at every single-draft node the bound
:math:`\sum_x \min(p(x), q(x))` on its acceptance (docs/theory.md §7.3).

References
----------
.. [1] Leviathan, Kalman, Matias. "Fast Inference from Transformers via
   Speculative Decoding". ICML 2023, arXiv:2211.17192.
.. [2] Sun et al. "SpecTr: Fast Speculative Decoding via Optimal
   Transport". NeurIPS 2023, arXiv:2310.15141.
.. [3] Miao et al. "SpecInfer". arXiv:2305.09781.
.. [4] Elhoushi et al. "LayerSkip". ACL 2024, arXiv:2404.16710.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from .._errors import InvalidParameterError, ShapeMismatchError
from .._validate import check_choice, check_positive_int
from ..coins import RandomCoins
from ..distributions import _check_settings, process_logits
from ..drafting import sample_drafts
from ..lm._kv import cache_kwargs
from ..lm._loader import require_cpu
from ..verifiers._api import check_token, check_verifier_law
from ..verifiers._registry import REGISTRY
from ._draft import make_draft

__all__ = ["LiveResult", "chat_prompt_ids", "speculative_generate", "target_generate"]

MODES = ("chain", "multi")
_RECORD_DTYPES = ("float32", "float64")


@dataclass(frozen=True)
class LiveResult:
    r"""Result of :func:`speculative_generate` or :func:`target_generate`.

    Attributes
    ----------
    tokens : ndarray, int64 (N,)
        The generated tokens (the prompt excluded), ending with an end-of-turn
        token when ``finished``.
    prompt_ids : ndarray, int64 (P,)
    accepted : ndarray, int64 (R,)
        Accepted draft tokens emitted in each round (:math:`A`).
    drafted : ndarray, int64 (R,)
        Draft depth of each round (:math:`\gamma`, smaller near
        ``max_new_tokens``; 0 for a target-only step).
    token_round : ndarray, int64 (N,)
        The round that emitted each token.
    from_draft : ndarray, bool (N,)
        Whether each token is an accepted draft token (else a correction,
        bonus or target-only token).
    target_probs : ndarray, float32 or float64 (N, V), or None
        With ``record``: the processed target distribution each token was
        emitted from.
    node_drafts : ndarray, int64 (K,)
        Number of drafts :math:`m` at each verified node, in order.
    node_hit : ndarray, bool (K,)
        Whether the node's output was one of its drafts (membership acceptance).
    node_token : ndarray, int64 (K,)
        Index in ``tokens`` of the token each node emitted.
    draft_probs : ndarray, float32 or float64 (K, V), or None
        With ``record``: the processed draft distribution :math:`q` at each
        node, the law its drafts were drawn from.
    node_bound : ndarray, float64 (K,)
        With ``record``: :math:`\sum_x \min(p(x), q(x))`, the largest
        acceptance of a lossless verifier, at nodes with one draft; NaN
        elsewhere (and everywhere without ``record``).
    target_calls, draft_calls : int
        Forward passes after the prefill (one target call per round).
    timings : dict of str to float
        Seconds: ``"prefill"``, ``"draft"`` (draft forwards), ``"target"``
        (target forwards), ``"verify"`` (processing, sampling and
        verification), ``"total"`` (the whole call).
    settings : dict
        The arguments (mode, draft, gamma, n, verifier, sampling,
        temperature, top_k, top_p).
    finished : bool
        Generation stopped at an end-of-turn token.
    """

    tokens: np.ndarray
    prompt_ids: np.ndarray
    accepted: np.ndarray
    drafted: np.ndarray
    token_round: np.ndarray
    from_draft: np.ndarray
    target_probs: np.ndarray | None = field(repr=False)
    node_drafts: np.ndarray = field(repr=False)
    node_hit: np.ndarray = field(repr=False)
    node_token: np.ndarray = field(repr=False)
    draft_probs: np.ndarray | None = field(repr=False)
    node_bound: np.ndarray = field(repr=False)
    target_calls: int
    draft_calls: int
    timings: dict
    settings: dict
    finished: bool

    @property
    def num_tokens(self) -> int:
        """Number of generated tokens :math:`N`."""
        return int(self.tokens.size)

    @property
    def acceptance_rate(self) -> float:
        r"""Accepted over drafted tokens, :math:`\sum A / \sum \gamma` (NaN without drafts)."""
        d = int(self.drafted.sum())
        return float(self.accepted.sum() / d) if d else math.nan

    @property
    def block_efficiency(self) -> float:
        r"""Tokens per target call :math:`\tau` (1 without drafts; docs/theory.md §4.4)."""
        return self.num_tokens / self.target_calls if self.target_calls else math.nan

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens over the wall-clock time of the whole call (prefill included)."""
        return self.num_tokens / self.timings["total"]


def chat_prompt_ids(loaded, text: str) -> np.ndarray:
    """Token ids of one user turn under the model's chat template, ready for generation.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
    text : str

    Returns
    -------
    ndarray, int64 (P,)
    """
    import torch

    if not isinstance(text, str) or not text:
        raise InvalidParameterError(f"text must be a non-empty string; got {text!r}")
    msgs = [{"role": "user", "content": text}]
    tok = loaded.tokenizer
    ids = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt")
    ids = ids if torch.is_tensor(ids) else ids["input_ids"]
    return ids[0].numpy().astype(np.int64)


# --------------------------------------------------------------------------- checks


def _check_prompt(prompt_ids, vocab_size):
    try:
        import torch

        if torch.is_tensor(prompt_ids):
            prompt_ids = prompt_ids.detach().cpu().numpy()
    except ImportError:  # pragma: no cover - torch is required by the callers
        pass
    arr = np.asarray(prompt_ids)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise InvalidParameterError(
            f"prompt_ids must be a non-empty 1-D sequence of integer token ids; got dtype "
            f"{arr.dtype} and shape {arr.shape}"
        )
    bad = (arr < 0) | (arr >= vocab_size)
    if bad.any():
        i = int(np.argmax(bad))
        raise InvalidParameterError(
            f"prompt_ids[{i}] = {int(arr[i])} is outside the vocabulary [0, {vocab_size})"
        )
    return arr.astype(np.int64)


def _numpy_rng(seed):
    """A numpy Generator from None, an int, a numpy Generator or a torch.Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise InvalidParameterError(f"seed must be >= 0; got {seed}")
        return np.random.default_rng(int(seed))
    import torch

    if isinstance(seed, torch.Generator):
        # One 63-bit draw from the torch stream seeds the numpy stream used by
        # the reference verifiers and draft laws: reproducible from the torch seed.
        draw = torch.randint(0, 2**62, (1,), generator=seed, dtype=torch.int64)
        return np.random.default_rng(int(draw.item()))
    raise InvalidParameterError(
        f"seed must be None, an int >= 0, a numpy Generator or a torch.Generator; got {seed!r}"
    )


class _UserVerifier:
    """A user callable ``fn(target, draft, drafts, rng) -> int`` on the coins interface."""

    def __init__(self, fn):
        self.fn = fn
        self.name = getattr(fn, "__name__", repr(fn))

    def __call__(self, p, q, drafts, coins, *, sampling):
        # not int(...): a float or out-of-vocabulary return is refused by check_token
        return self.fn(p, q, np.asarray(drafts, dtype=np.int64), coins.rng)


def _resolve_verifier(verifier, mode, n, sampling):
    """(name, function(p, q, drafts, coins, *, sampling), n_values, sampling)."""
    if verifier is None:
        # The multi-draft default follows the caller's draft law: "rrs" alone was refused
        # for sampling="greedy" or "without_replacement", naming a verifier never given.
        by_law = {"without_replacement": "rrs_wor", "greedy": "greedy"}
        verifier = "sd" if n == 1 else by_law.get(sampling, "rrs")
    # A plain function's protocol is read from its signature (coins or black box): a
    # coins-protocol function runs on the coins, a black box gets the numpy stream.
    v, sampling = check_verifier_law(verifier, n, sampling)
    if v.protocol == "blackbox":
        user = _UserVerifier(v.function)
        return v.name, user, v.n_values_for(sampling), sampling
    return v.name, v.function, v.n_values_for(sampling), sampling


def _crop(cache, length):
    """Keep the first ``length`` positions of a key-value cache."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)  # negative: remove that many (every transformers version)


def _eos_ids(loaded):
    ids = set()
    eos = getattr(getattr(loaded.model, "generation_config", None), "eos_token_id", None)
    if eos is not None:
        ids.update(int(t) for t in np.atleast_1d(eos))
    if getattr(loaded.tokenizer, "eos_token_id", None) is not None:
        ids.add(int(loaded.tokenizer.eos_token_id))
    return ids


# --------------------------------------------------------------------------- the generator


class _Run:
    """State of one generation call (caches, streams, records, clocks)."""

    def __init__(self, loaded, prompt, draft, settings, rng, record, record_dtype, eos):
        self.loaded = loaded
        self.model = loaded.model
        self.draft = draft
        self.s = settings
        self.rng = rng
        self.coins = RandomCoins(rng)
        self.record = record
        self.record_dtype = np.dtype(record_dtype)
        self.eos = eos
        self.ctx = [int(t) for t in prompt]
        self.out, self.round_of, self.from_draft, self.probs = [], [], [], []
        self.accepted, self.drafted = [], []
        self.node_m, self.node_hit, self.node_bound, self.node_token = [], [], [], []
        self.qprobs = []
        self.t = {"prefill": 0.0, "draft": 0.0, "target": 0.0, "verify": 0.0}
        self.target_calls = self.draft_calls = 0
        self.finished = False

    # ---- model calls
    def _timed(self, key, fn, *args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        self.t[key] += time.perf_counter() - t0
        return out

    def _draft_logits(self, ids):
        """The draft's next-token logits, refused unless they cover the target's vocabulary."""
        import torch

        logits = self._timed("draft", self.draft, ids, self.dcache)
        name = getattr(self.draft, "spec", self.draft)
        if not torch.is_tensor(logits) or not logits.is_floating_point():
            raise ShapeMismatchError(
                f"draft {name!r} returned {type(logits).__name__}"
                f"{' of dtype ' + str(logits.dtype) if torch.is_tensor(logits) else ''}; a "
                f"LiveDraft returns a float torch tensor of logits, shape (B, V)"
            )
        if logits.shape[-1] != self.loaded.vocab_size:  # else a broadcast error, or silence
            raise ShapeMismatchError(
                f"draft {name!r} returned logits over "
                f"{logits.shape[-1]} tokens; the target has {self.loaded.vocab_size}"
            )
        if tuple(logits.shape) != (ids.shape[0], self.loaded.vocab_size):
            # (B, k, V) (every position, not the last) or one row for B draft rows: an
            # IndexError deep in the verifier, or rows of another draft sequence
            raise ShapeMismatchError(
                f"draft {name!r} returned logits of shape {tuple(logits.shape)} for input_ids "
                f"of shape {tuple(ids.shape)}; a LiveDraft returns the next-token logits of "
                f"each row, shape (B, V) = ({ids.shape[0]}, {self.loaded.vocab_size})"
            )
        return logits

    def _tensor(self, rows):
        import torch

        return torch.as_tensor(np.asarray(rows, dtype=np.int64).reshape(len(rows), -1))

    def prefill(self):
        self.tcache = self._new_target_cache()
        self.dcache = self.draft.new_cache() if self.draft is not None else None
        self.dlen = 0
        head = self.ctx[:-1]
        if not head:
            return
        ids = self._tensor([head])
        t0 = time.perf_counter()
        kv = cache_kwargs(self.model, self.tcache)
        self.model(input_ids=ids, **kv, use_cache=True, logits_to_keep=1)
        if self.draft is not None:
            self.draft(ids, self.dcache)
            self.dlen = len(head)
        self.t["prefill"] += time.perf_counter() - t0

    def _new_target_cache(self):
        from transformers import DynamicCache

        return DynamicCache()

    def process(self, logits_row):
        s = self.s
        z = logits_row.double().numpy()
        return process_logits(z, s["temperature"], s["top_k"], s["top_p"])

    # ---- emitting
    def emit(self, y, p, rnd, is_draft):
        self.out.append(int(y))
        self.round_of.append(rnd)
        self.from_draft.append(bool(is_draft))
        if self.record:
            self.probs.append(p.astype(self.record_dtype))
        if int(y) in self.eos and self.s["stop_at_eos"]:
            self.finished = True
        self.ctx.append(int(y))

    # ---- one round
    def draft_tree(self, g, n):
        """Draft ``n`` rows of depth ``g``; returns (tokens (n, g), alive (n, g), node q's)."""
        law = self.s["sampling"]
        toks = np.zeros((n, g), dtype=np.int64)
        alive = np.ones((n, g), dtype=bool)
        qnode = {}  # (depth, representative row) -> q
        rows_alive = np.ones(n, dtype=bool)
        new = self._tensor([self.ctx[self.dlen :]])  # tokens the draft cache lacks (1 or 2)
        logits = self._draft_logits(new)
        self.draft_calls += 1
        for d in range(g):
            if d == 1 and n > 1:
                self.dcache.batch_repeat_interleave(n)
            if d >= 1:
                logits = self._draft_logits(self._tensor(toks[:, d - 1]))
                self.draft_calls += 1
            t0 = time.perf_counter()
            groups = {}
            for r in range(n):
                if rows_alive[r]:
                    groups.setdefault(tuple(toks[r, :d].tolist()), []).append(r)
            for rows in groups.values():
                rep = rows[0]
                q = self.process(logits[rep if d >= 1 else 0])
                qnode[(d, rep)] = q
                m = len(rows)
                if law != "iid":  # distinct children: at most the support of q
                    m = min(m, int(np.count_nonzero(q)))
                kids = sample_drafts(q, n=m, sampling=law, rng=self.rng)
                toks[rows[:m], d] = kids
                toks[rows[m:], d] = kids[0]  # surplus rows die here; the token is never verified
                rows_alive[rows[m:]] = False
            alive[:, d] = rows_alive
            self.t["verify"] += time.perf_counter() - t0
        return toks, alive, qnode

    def round(self, rnd, g):
        import torch

        n = self.s["n"] if g > 0 else 1
        c_old = len(self.ctx)
        if g > 0:
            toks, alive, qnode = self.draft_tree(g, n)
        else:
            toks, alive, qnode = np.zeros((1, 0), dtype=np.int64), np.ones((1, 0), bool), {}
        if n > 1:
            self.tcache.batch_repeat_interleave(n)
        inp = np.concatenate([np.full((n, 1), self.ctx[-1], dtype=np.int64), toks], axis=1)
        t0 = time.perf_counter()
        ids = torch.as_tensor(inp)
        kv = cache_kwargs(self.model, self.tcache)
        logits = self.model(input_ids=ids, **kv, use_cache=True).logits
        self.t["target"] += time.perf_counter() - t0
        self.target_calls += 1

        t0 = time.perf_counter()
        S = [r for r in range(n) if g == 0 or alive[r, 0]]
        keep, A, stop = 0, 0, False
        for d in range(g):
            rep = S[0]
            p = self.process(logits[rep, d])
            q = qnode[(d, rep)]
            drafts = tuple(int(toks[r, d]) for r in S)
            y = self.verify(p, q, drafts)
            hit = y in drafts
            self.node_m.append(len(drafts))
            self.node_hit.append(hit)
            self.node_token.append(len(self.out))
            self.node_bound.append(
                float(np.minimum(p, q).sum()) if self.record and len(drafts) == 1 else math.nan
            )
            if self.record:
                self.qprobs.append(q.astype(self.record_dtype))
            S = [r for r in S if alive[r, d] and toks[r, d] == y]
            self.emit(y, p, rnd, is_draft=bool(S))
            if not S:
                stop = True
                break
            keep, A = S[0], A + 1
            if self.finished:
                stop = True
                break
        if not stop:  # bonus token after g accepted drafts (or a target-only step)
            p = self.process(logits[keep, g])
            self.emit(self.coins.categorical(p), p, rnd, is_draft=False)
        self.t["verify"] += time.perf_counter() - t0

        self.accepted.append(A)
        self.drafted.append(g)
        # Keep the accepted row; the target cache then holds ctx[:-1].
        if n > 1:
            idx = torch.tensor([keep])
            self.tcache.batch_select_indices(idx)
            if g > 1:
                self.dcache.batch_select_indices(idx)
        _crop(self.tcache, c_old + A)
        if g > 0:  # the draft saw ctx_old and the first g - 1 drafts of its row
            self.dlen = c_old + min(A, g - 1)
            _crop(self.dcache, self.dlen)

    def verify(self, p, q, drafts):
        m = len(drafts)
        fn = self.s["_verifier_fn"]
        nv = self.s["_n_values"]
        if nv is not None and m not in nv:
            if m != 1:
                raise InvalidParameterError(
                    f"verifier {self.s['verifier']!r} accepts n in {nv}; a node of the draft "
                    f"tree has {m} drafts"
                )
            fn = REGISTRY["sd"].function  # one child drawn from q: SD is exact for it
        # The token id is checked as everywhere else (spectheory.verifiers._api.check_token):
        # int() silently truncated a float (2.7 -> 2) and an id outside [0, V) reached the
        # target's embedding as an IndexError after being emitted.
        y = fn(p, q, drafts, self.coins, sampling=self.s["sampling"])
        return check_token(y, p.shape[0], self.s["verifier"])

    def run(self):
        import torch

        t0 = time.perf_counter()
        with torch.no_grad():
            self.prefill()
            rnd = 0
            gamma, budget = self.s["gamma"], self.s["max_new_tokens"]
            while len(self.out) < budget and not self.finished:
                g = min(gamma, budget - len(self.out) - 1)
                self.round(rnd, g)
                rnd += 1
        self.t["total"] = time.perf_counter() - t0
        return self.result()

    def result(self):
        s = {k: v for k, v in self.s.items() if not k.startswith("_")}
        V = self.loaded.vocab_size
        probs = qprobs = None
        if self.record:
            probs = np.stack(self.probs) if self.probs else np.zeros((0, V), self.record_dtype)
            qprobs = np.stack(self.qprobs) if self.qprobs else np.zeros((0, V), self.record_dtype)
        return LiveResult(
            tokens=np.asarray(self.out, dtype=np.int64),
            prompt_ids=np.asarray(self.ctx[: len(self.ctx) - len(self.out)], dtype=np.int64),
            accepted=np.asarray(self.accepted, dtype=np.int64),
            drafted=np.asarray(self.drafted, dtype=np.int64),
            token_round=np.asarray(self.round_of, dtype=np.int64),
            from_draft=np.asarray(self.from_draft, dtype=bool),
            target_probs=probs,
            node_drafts=np.asarray(self.node_m, dtype=np.int64),
            node_hit=np.asarray(self.node_hit, dtype=bool),
            node_token=np.asarray(self.node_token, dtype=np.int64),
            draft_probs=qprobs,
            node_bound=np.asarray(self.node_bound, dtype=np.float64),
            target_calls=self.target_calls,
            draft_calls=self.draft_calls,
            timings=dict(self.t),
            settings=s,
            finished=self.finished,
        )


def _common_checks(
    loaded, prompt_ids, max_new_tokens, temperature, top_k, top_p, record, record_dtype, stop_at_eos
):
    if not hasattr(loaded, "model") or not hasattr(loaded, "vocab_size"):
        raise InvalidParameterError(
            f"loaded must be a spectheory.lm.LoadedModel (from load_model()); got {loaded!r}"
        )
    require_cpu(loaded, "live generation")
    prompt = _check_prompt(prompt_ids, loaded.vocab_size)
    max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens")
    # Past its trained context a model's positions are extrapolated: the run would go on
    # and report numbers about a model nobody trained.
    context = getattr(getattr(loaded.model, "config", None), "max_position_embeddings", None)
    if isinstance(context, int) and len(prompt) + max_new_tokens > context:
        raise InvalidParameterError(
            f"max_new_tokens = {max_new_tokens} with a prompt of {len(prompt)} tokens exceeds "
            f"the model's context of {context} positions (max_position_embeddings)"
        )
    _check_settings(temperature, top_k, top_p, loaded.vocab_size)
    check_choice(record_dtype, "record_dtype", _RECORD_DTYPES)
    for name, flag in (("record", record), ("stop_at_eos", stop_at_eos)):
        if not isinstance(flag, bool):
            raise InvalidParameterError(f"{name} must be True or False; got {flag!r}")
    return prompt, max_new_tokens


def speculative_generate(
    loaded,
    prompt_ids,
    *,
    draft="exit:15",
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    mode: str = "chain",
    gamma: int = 4,
    n: int | None = None,
    verifier=None,
    sampling: str | None = None,
    seed=None,
    record: bool = True,
    record_dtype: str = "float32",
    stop_at_eos: bool = True,
) -> LiveResult:
    r"""Generate with speculative sampling: a draft proposes, the target verifies in one pass.

    See the module docstring for the algorithm and why it is lossless: the
    generated tokens have exactly the law of sampling the target alone with
    the same processing (greedy at ``temperature=0``).

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
        The target (e.g. ``load_model()``: SmolLM2-135M-Instruct).
    prompt_ids : array_like of int, shape (P,)
        Prompt token ids (e.g. :func:`chat_prompt_ids`).
    draft : str or LiveDraft
        ``"exit:L"``: the target's first ``L`` layers, final norm and head;
        ``"adapter:L"``: the trained adapter of the cache
        (:class:`AdapterDraft`); or any :class:`LiveDraft` object.
    max_new_tokens : int >= 1
        With the prompt, at most the model's context (``max_position_embeddings``
        of its config, where it has one); more is refused.
    temperature : float >= 0
        0 is greedy (one-hot :math:`p` and :math:`q`).
    top_k : int >= 1, optional
    top_p : float in (0, 1], optional
        Applied to both models (docs/theory.md §0, processing rule).
    mode : {"chain", "multi"}
        One draft sequence verified token by token, or ``n`` draft sequences
        verified node by node.
    gamma : int >= 1
        Draft length per round (shortened near ``max_new_tokens``).
    n : int >= 1, optional
        Draft sequences: 1 in chain mode (the default there), default 2 in
        multi mode.
    verifier : str or callable, optional
        A registry name (:data:`spectheory.verifiers.REGISTRY`: ``"sd"``,
        ``"rrs"``, ``"rrs_wor"``, ``"kseq"``, ``"spechub"``, ``"nss"``,
        ``"naive"``, ...) valid for ``n`` drafts under ``sampling``, or a
        callable ``fn(target, draft, drafts, rng) -> int``.  Default
        ``"sd"`` (chain); in multi mode ``"rrs"``, ``"rrs_wor"`` or ``"greedy"``
        for ``sampling`` i.i.d. (or unset), without replacement or greedy.
    sampling : {"iid", "without_replacement", "greedy"}, optional
        Draft law at each node; default the verifier's first law.
    seed : int, numpy.random.Generator, torch.Generator or None
        Randomness of the drafts and of the verifier (one numpy stream; a
        torch generator seeds it with one draw).
    record : bool
        Keep the target distribution at every emitted position and the draft
        distribution at every verified node.
    record_dtype : {"float32", "float64"}
    stop_at_eos : bool
        Stop after an end-of-turn token.

    Returns
    -------
    LiveResult
    """
    prompt, max_new_tokens = _common_checks(
        loaded,
        prompt_ids,
        max_new_tokens,
        temperature,
        top_k,
        top_p,
        record,
        record_dtype,
        stop_at_eos,
    )
    check_choice(mode, "mode", MODES)
    gamma = check_positive_int(gamma, "gamma")
    if n is None:
        n = 1 if mode == "chain" else 2
    n = check_positive_int(n, "n")
    if mode == "chain" and n != 1:
        raise InvalidParameterError(f"mode='chain' drafts one sequence; got n={n} (use 'multi')")
    name, fn, n_values, sampling = _resolve_verifier(verifier, mode, n, sampling)
    if sampling != "iid" and n > 1 and (temperature == 0 or (top_k is not None and top_k < n)):
        raise InvalidParameterError(
            f"sampling={sampling!r} draws {n} distinct tokens, but temperature={temperature!r} "
            f"and top_k={top_k!r} leave fewer than n={n} tokens with draft probability > 0"
        )
    dr = make_draft(loaded, draft)
    settings = {
        "mode": mode,
        "draft": dr.spec,
        "gamma": gamma,
        "n": n,
        "verifier": name,
        "sampling": sampling,
        "temperature": float(temperature),
        "top_k": top_k,
        "top_p": top_p,
        "max_new_tokens": max_new_tokens,
        "stop_at_eos": bool(stop_at_eos),
        "_verifier_fn": fn,
        "_n_values": n_values,
    }
    rng = _numpy_rng(seed)
    return _Run(loaded, prompt, dr, settings, rng, record, record_dtype, _eos_ids(loaded)).run()


def target_generate(
    loaded,
    prompt_ids,
    *,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed=None,
    record: bool = True,
    record_dtype: str = "float32",
    stop_at_eos: bool = True,
) -> LiveResult:
    """Target-only generation with a key-value cache: the baseline of :func:`speculative_generate`.

    One target forward per token on the last token (the prompt but its last
    token is prefilled, as in :func:`speculative_generate`), then
    :math:`y \\sim p` (inverse CDF, the coins protocol) or the argmax at
    ``temperature=0``.  Same parameters and result type as
    :func:`speculative_generate` (``drafted`` and ``accepted`` are zeros,
    ``block_efficiency`` is 1).
    """
    prompt, max_new_tokens = _common_checks(
        loaded,
        prompt_ids,
        max_new_tokens,
        temperature,
        top_k,
        top_p,
        record,
        record_dtype,
        stop_at_eos,
    )
    settings = {
        "mode": "target",
        "draft": None,
        "gamma": 0,
        "n": 1,
        "verifier": None,
        "sampling": None,
        "temperature": float(temperature),
        "top_k": top_k,
        "top_p": top_p,
        "max_new_tokens": max_new_tokens,
        "stop_at_eos": bool(stop_at_eos),
        "_verifier_fn": None,
        "_n_values": None,
    }
    rng = _numpy_rng(seed)
    return _Run(loaded, prompt, None, settings, rng, record, record_dtype, _eos_ids(loaded)).run()
