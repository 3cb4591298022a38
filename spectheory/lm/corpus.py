"""An offline training corpus for early-exit adapters: deterministic and hashed.

No data set can be downloaded here, so the corpus is built from what is on the
machine, in the target's chat format (one user turn, then an assistant turn):

``"doc"`` sequences
    Text shipped with Python: the reference-manual topics of
    :mod:`pydoc_data.topics` and the docstrings of a fixed list of standard
    library modules, each placed as the assistant's answer to a question that
    names it (teacher forcing: the text is *not* the target's own output,
    but its distributions on it are the training labels).
``"sampled"`` sequences
    The target's own continuations of :func:`training_prompts` (the 48
    hand-written :data:`TRAINING_PROMPTS`, then the generated prompts of
    :mod:`.training_prompts`; none of them is among the 38 held-out evaluation
    prompts of :mod:`spectheory.lm.prompts`), sampled at temperatures 0.7 and
    1.0 (alternating), in left-padded batches with a key-value cache:
    on-distribution text for a draft, and the bulk of the corpus.

Every sequence is chat-formatted with the target's template; ``loss_start``
marks the first position whose next token belongs to the assistant turn, so
that a loss over positions ``loss_start .. len - 2`` covers exactly the
assistant's tokens.  The corpus is a pure function of its settings, the
Python version (the shipped text) and the model; :attr:`Corpus.sha256` hashes
its token ids, and the sampled part is cached under
``cache_dir()/corpus/``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import sys
from dataclasses import dataclass

import numpy as np

from .. import _files
from .._errors import InvalidParameterError, TraceError
from .._threads import with_torch_threads
from .._validate import check_positive_int
from ._kv import cache_kwargs, cache_of
from ._loader import model_device
from .prompts import PROMPTS

__all__ = [
    "DOC_MODULES",
    "TRAINING_PROMPTS",
    "Corpus",
    "CorpusSettings",
    "build_corpus",
    "training_prompts",
]

#: Training prompts (written for this module; disjoint from the evaluation prompts).
TRAINING_PROMPTS: tuple[str, ...] = (
    "What is a nice gift for a friend who loves gardening?",
    "How can I keep my desk tidy while working from home?",
    "Give me three ideas for a quick vegetarian dinner.",
    "What are good habits for getting up early?",
    "Suggest a fun activity for a child's birthday party.",
    "How do I make a cup of green tea properly?",
    "What is a polite way to decline an invitation?",
    "Tell me something interesting about octopuses.",
    "How should I prepare for a long flight?",
    "What can I do to save money on groceries?",
    "Write a Python function that counts the vowels in a string.",
    "How do I read a text file line by line in Python?",
    "Explain what a dictionary is in Python, with an example.",
    "Write a JavaScript function that returns the largest number in an array.",
    "What does the HTML tag <p> do?",
    "How do I create a virtual environment in Python?",
    "Write a Python function that returns the factorial of n.",
    "What is recursion in programming? Give a short example.",
    "Explain the difference between '==' and 'is' in Python.",
    "Write a SQL query that selects all customers from Paris.",
    "What is 45 plus 78?",
    "What is 12 squared?",
    "Solve for y: 2y - 5 = 9.",
    "What is the perimeter of a square with side 7 metres?",
    "How many minutes are there in three and a half hours?",
    "What is 15 percent of 80?",
    "Convert 3/8 to a decimal.",
    "Summarise: The museum opened a new hall of dinosaur fossils, including a nearly "
    "complete skeleton found in a quarry last year.",
    "Summarise in one sentence: Drinking enough water helps the body control its "
    "temperature, keeps joints working well and supports digestion.",
    "Give a short summary: The city will add forty new bicycle lanes next year to make "
    "cycling to work safer and more popular.",
    "Summarise briefly: Owls hunt mostly at night, using sharp hearing and silent "
    "flight to catch mice and insects.",
    "Translate into Spanish: I would like a glass of water, please.",
    "Translate into French: The weather is beautiful today.",
    "Translate into German: My brother lives in a small village.",
    "Translate into Italian: Where can I buy a ticket?",
    "Translate into English: Ich habe heute keine Zeit.",
    "If every square is a rectangle, is every rectangle a square? Explain.",
    "Sara is older than Mia, and Mia is older than Lea. Who is the oldest?",
    "Why is the sky blue?",
    "Why do leaves change colour in autumn?",
    "What happens to water when it boils?",
    "A shop sells pens at 2 euros each. How much do 7 pens cost?",
    "Describe a sunset at the beach in two sentences.",
    "Write a four-line poem about autumn rain.",
    "What is the capital of Canada, and what is it known for?",
    "Explain photosynthesis to a ten-year-old.",
    "What are the planets of the solar system?",
    "How does a refrigerator keep food cold?",
)

#: Standard-library modules whose docstrings enter the corpus.
DOC_MODULES: tuple[str, ...] = (
    "argparse",
    "bisect",
    "calendar",
    "collections",
    "contextlib",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "enum",
    "fractions",
    "functools",
    "heapq",
    "itertools",
    "json",
    "logging",
    "math",
    "operator",
    "pathlib",
    "pickle",
    "random",
    "re",
    "shutil",
    "statistics",
    "string",
    "textwrap",
    "threading",
    "typing",
    "unittest",
    "urllib.parse",
    "uuid",
    "zipfile",
)

_SAMPLED_TEMPERATURES = (0.7, 1.0)


@dataclass(frozen=True)
class CorpusSettings:
    """What the corpus holds; its hash keys the cache of sampled continuations.

    Attributes
    ----------
    max_len : int
        Tokens per sequence at most (prompt and answer; longer texts are cut
        into several answers to the same question).
    doc_sequences : int
        Documentation sequences kept (in a fixed order: topics, then modules).
    prompts : int or None
        Training prompts used: the first ``prompts`` of :func:`training_prompts`
        (``None``: all of them).
    samples_per_prompt : int
        Sampled continuations per training prompt; the temperature alternates
        between 0.7 and 1.0 over the prompts and rounds.
    sampled_tokens : int
        New tokens per sampled continuation (fewer if the model ends its turn).
    seed : int
        Seed of the target's sampling (torch generator).
    """

    max_len: int = 160
    doc_sequences: int = 120
    prompts: int | None = None
    samples_per_prompt: int = 4
    sampled_tokens: int = 64
    seed: int = 0

    def __post_init__(self):
        for name in ("max_len", "sampled_tokens"):
            check_positive_int(getattr(self, name), name)
        for name in ("doc_sequences", "samples_per_prompt", "seed"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InvalidParameterError(f"{name} must be an integer >= 0; got {v!r}")
        if self.prompts is not None:
            check_positive_int(self.prompts, "prompts")
        if self.max_len < 48:
            raise InvalidParameterError(f"max_len must be >= 48; got {self.max_len!r}")

    def key(self) -> str:
        """SHA-256 (16 hex) of the settings, the Python version and the prompt list."""
        blob = json.dumps(
            {
                **dataclasses.asdict(self),
                "python": sys.version.split()[0],
                "prompts": training_prompts(self.prompts),
                "modules": DOC_MODULES,
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Corpus:
    """Token sequences for teacher-forced training.

    Attributes
    ----------
    sequences : tuple of ndarray, int64
        Chat-formatted token ids, one array per sequence.
    loss_start : ndarray, int64 (S,)
        Position (in its sequence) of the last prompt token: positions
        ``loss_start[s] .. len(sequences[s]) - 2`` predict the assistant's tokens.
    sources : tuple of str
        ``"doc"`` or ``"sampled"`` per sequence.
    settings : CorpusSettings
    """

    sequences: tuple
    loss_start: np.ndarray
    sources: tuple
    settings: CorpusSettings

    @property
    def num_loss_tokens(self) -> int:
        """Assistant tokens: positions ``loss_start .. len - 2``, whose next token is the reply's.

        Adapter training uses one position more per sequence (its last, where the target's
        distribution after the reply is a label as well): see
        :attr:`spectheory.lm.adapters.TeacherStates.num_positions`.
        """
        return int(sum(s.size - 1 - b for s, b in zip(self.sequences, self.loss_start.tolist())))

    @property
    def sha256(self) -> str:
        """SHA-256 of the token ids, loss starts and sources (hex)."""
        h = hashlib.sha256()
        for s, b, src in zip(self.sequences, self.loss_start.tolist(), self.sources):
            h.update(np.asarray(s, dtype="<i8").tobytes())
            h.update(f"|{b}|{src};".encode())
        return h.hexdigest()

    def select(self, indices) -> Corpus:
        """The sub-corpus of the given sequence indices (in that order)."""
        idx = [int(i) for i in indices]
        return Corpus(
            sequences=tuple(self.sequences[i] for i in idx),
            loss_start=self.loss_start[idx],
            sources=tuple(self.sources[i] for i in idx),
            settings=self.settings,
        )


def training_prompts(count: int | None = None) -> tuple[str, ...]:
    """The prompts whose continuations the target samples: hand-written, then generated.

    Parameters
    ----------
    count : int, optional
        Keep the first ``count`` (default: all).

    >>> training_prompts(2) == TRAINING_PROMPTS[:2]
    True
    """
    from .training_prompts import generated_prompts

    out = TRAINING_PROMPTS + tuple(p for p in generated_prompts() if p not in TRAINING_PROMPTS)
    if count is None:
        return out
    return out[: check_positive_int(count, "prompts")]


def _doc_texts():
    """(question, text) pairs from Python's own documentation, in a fixed order."""
    import importlib
    from pydoc_data.topics import topics

    out = []
    for name in sorted(topics):
        out.append((f"Explain the Python language topic '{name}'.", topics[name]))
    for mod in DOC_MODULES:
        doc = inspect.getdoc(importlib.import_module(mod)) or ""
        if doc.strip():
            out.append((f"What does the Python module {mod} do?", doc))
    return out


def _chat_prefix(tokenizer, question):
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": question}], add_generation_prompt=True, tokenize=True
    )
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    return np.asarray(ids, dtype=np.int64).reshape(-1)


def _doc_sequences(tokenizer, settings):
    seqs, starts = [], []
    if settings.doc_sequences == 0:  # the count is checked after each append below
        return seqs, starts
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for question, text in _doc_texts():
        prefix = _chat_prefix(tokenizer, question)
        room = settings.max_len - prefix.size - 1
        if room < 16:
            continue
        body = np.asarray(tokenizer(text.strip())["input_ids"], dtype=np.int64)
        for i in range(0, body.size, room):
            piece = body[i : i + room]
            tail = [end] if i + room >= body.size and isinstance(end, int) and end >= 0 else []
            seqs.append(np.concatenate([prefix, piece, np.asarray(tail, dtype=np.int64)]))
            starts.append(prefix.size - 1)
            if len(seqs) == settings.doc_sequences:
                return seqs, starts
    return seqs, starts


#: Continuations sampled together: 64 on the CPU (the recorded corpora), more on a GPU.
_SAMPLE_BATCH = {"cpu": 64, "cuda": 512}  # other accelerators as CUDA


@with_torch_threads
def _sample_continuations(loaded, settings, progress):
    """The target's continuations of the training prompts (batched, KV cache, torch sampling).

    Runs on the model's device; one generator per batch, seeded by the
    settings' seed and the batch's first job, so a corpus is a function of
    its settings and the device type (CPU and CUDA generators differ).
    """
    import torch

    tok, model = loaded.tokenizer, loaded.model
    device = model_device(model)
    # a model without an end token (eos_token_id None, as a base model's generation config
    # may say) samples every continuation to its full length; int(None) was a TypeError
    end = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    eos = set() if end is None else {int(t) for t in np.atleast_1d(end)}
    seqs, starts = [], []
    temps = _SAMPLED_TEMPERATURES
    jobs = [
        (temps[(i + r) % len(temps)], r, q)
        for r in range(settings.samples_per_prompt)
        for i, q in enumerate(training_prompts(settings.prompts))
    ]
    batch = _SAMPLE_BATCH.get(device.type, _SAMPLE_BATCH["cuda"])
    for b0 in range(0, len(jobs), batch):
        chunk = jobs[b0 : b0 + batch]
        prefixes = [_chat_prefix(tok, q) for _, _, q in chunk]
        n = max(p.size for p in prefixes)
        ids = torch.zeros((len(chunk), n), dtype=torch.long)
        mask = torch.zeros((len(chunk), n), dtype=torch.long)
        for i, p in enumerate(prefixes):  # left padding
            ids[i, n - p.size :] = torch.as_tensor(p)
            mask[i, n - p.size :] = 1
        ids, mask = ids.to(device), mask.to(device)
        temps = torch.tensor([T for T, _, _ in chunk], dtype=torch.float32, device=device)[:, None]
        gen = torch.Generator(device=device).manual_seed(settings.seed * 1_000_003 + b0)
        out = [[] for _ in chunk]
        done = [False] * len(chunk)
        past, inp = None, ids
        with torch.no_grad():
            for _ in range(settings.sampled_tokens):
                pos = (mask.cumsum(-1) - 1).clamp(min=0)[:, -inp.shape[1] :]
                o = model(
                    input_ids=inp,
                    attention_mask=mask,
                    position_ids=pos,
                    **cache_kwargs(model, past),
                    use_cache=True,
                )
                past = cache_of(o)
                probs = torch.softmax(o.logits[:, -1].float() / temps, dim=-1)
                nxt = torch.multinomial(probs, 1, generator=gen)[:, 0]
                for i, t in enumerate(nxt.tolist()):  # one transfer per step, not per row
                    if not done[i]:
                        out[i].append(t)
                        done[i] = t in eos
                if all(done):
                    break
                inp = nxt[:, None]
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        for p, o_ in zip(prefixes, out):
            seqs.append(np.concatenate([p, np.asarray(o_, dtype=np.int64)])[: settings.max_len])
            starts.append(p.size - 1)
        if progress:
            print(
                f"  sampled {min(b0 + batch, len(jobs))}/{len(jobs)} continuations",
                file=sys.stderr,
            )
    return seqs, starts


def build_corpus(
    loaded, settings: CorpusSettings | None = None, *, cache=True, progress=False
) -> Corpus:
    """Build (or read from the cache) the training corpus.

    Parameters
    ----------
    loaded : spectheory.lm.LoadedModel
        The target: its tokenizer formats every sequence and it samples the
        continuations of :func:`training_prompts`.
    settings : CorpusSettings, optional
    cache : bool
        Reuse / store the sampled continuations in ``cache_dir()/corpus/<key>.npz``, the key
        naming the settings and the model's weights and tokenizer
        (``<key>-cuda.npz`` for a model on a GPU, whose generator draws other tokens,
        ``<key>-bfloat16.npz`` for another dtype than float32).
    progress : bool
        Report the sampling on stderr.

    Returns
    -------
    Corpus
        Documentation sequences first, then sampled ones.
    """
    from .fingerprint import weights_fingerprint
    from .trace import cache_dir

    settings = settings or CorpusSettings()
    if not isinstance(settings, CorpusSettings):
        raise InvalidParameterError(f"settings must be a CorpusSettings; got {settings!r}")
    dseqs, dstarts = _doc_sequences(loaded.tokenizer, settings)
    if len(dseqs) < settings.doc_sequences:
        raise InvalidParameterError(
            f"doc_sequences={settings.doc_sequences} asked, but max_len={settings.max_len} gives "
            f"only {len(dseqs)} documentation sequences (each needs its question's chat prefix "
            "plus 16 tokens); raise max_len or lower doc_sequences"
        )
    if settings.samples_per_prompt:
        longest = max(
            (_chat_prefix(loaded.tokenizer, q).size, i)
            for i, q in enumerate(training_prompts(settings.prompts))
        )
        if longest[0] + 1 > settings.max_len:
            raise InvalidParameterError(
                f"max_len={settings.max_len} cuts training prompt {longest[1]} ({longest[0]} "
                f"tokens with the chat template) before its answer; use max_len >= "
                f"{longest[0] + 1} or fewer prompts"
            )
    # float32 CPU keys are those of the recorded corpora; a GPU's generator or another dtype
    # samples other tokens from the same settings, so each gets its own key
    device = model_device(loaded.model).type
    dtype = str(getattr(loaded.model, "dtype", "float32")).removeprefix("torch.")
    suffix = "" if device == "cpu" else f"-{device}"
    suffix += "" if dtype == "float32" else f"-{dtype}"
    # The weights' fingerprint too: the name alone served one model's samples to another
    # model under the same name (a folder's weights replaced, an edited or user-named model).
    weights = weights_fingerprint(loaded.model, loaded.tokenizer)[:12]
    path = cache_dir() / "corpus" / f"{_model_slug(loaded)}-{settings.key()}-{weights}{suffix}.npz"
    sseqs = sstarts = None
    if cache and path.is_file() and settings.samples_per_prompt:
        try:
            with np.load(path) as z:
                flat, offs, sstarts = z["tokens"], z["offsets"], z["starts"].tolist()
            sseqs = [flat[offs[i] : offs[i + 1]] for i in range(offs.size - 1)]
        except (OSError, ValueError, KeyError) as exc:
            raise TraceError(
                f"corpus cache {str(path)!r} is unreadable ({exc}); delete it"
            ) from None
    if sseqs is None:
        if settings.samples_per_prompt:
            sseqs, sstarts = _sample_continuations(loaded, settings, progress)
        else:
            sseqs, sstarts = [], []
        if cache and sseqs:
            offs = np.cumsum([0] + [s.size for s in sseqs])
            with _files.atomic_path(path) as tmp, open(tmp, "wb") as f:
                np.savez(f, tokens=np.concatenate(sseqs), offsets=offs, starts=sstarts)
    return Corpus(
        sequences=tuple(dseqs) + tuple(sseqs),
        loss_start=np.asarray(dstarts + list(sstarts), dtype=np.int64),
        sources=("doc",) * len(dseqs) + ("sampled",) * len(sseqs),
        settings=settings,
    )


def _model_slug(loaded) -> str:
    from ._loader import SMOLLM2

    if loaded.name == SMOLLM2:
        return SMOLLM2
    return "local-" + hashlib.sha256(str(loaded.name).encode()).hexdigest()[:8]


def held_out_overlap() -> tuple[str, ...]:
    """Training prompts that are also evaluation prompts (must be empty).

    >>> held_out_overlap()
    ()
    """
    held = {p for _, p in PROMPTS}
    return tuple(p for p in training_prompts() if p in held)
