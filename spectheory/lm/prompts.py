"""The embedded prompt set of the default traces, written for this project.

Six categories, six to seven prompts each (38 in all), short enough that a
135M-parameter chat model answers them in a few dozen tokens.  Each prompt is
a single user turn; the model's own chat template is applied when a trace is
recorded (:func:`spectheory.lm.trace.record_trace`).
"""

from __future__ import annotations

__all__ = ["CATEGORIES", "PROMPTS", "encode_prompt", "load_prompts", "prompt_set"]

#: (category, prompt) pairs, in a fixed order: prompt ids are indices here.
PROMPTS: tuple[tuple[str, str], ...] = (
    ("chat", "Hi! Could you suggest a name for a small grey kitten?"),
    ("chat", "What is a good way to spend a rainy Sunday afternoon at home?"),
    ("chat", "I feel nervous before my first job interview tomorrow. Any advice?"),
    ("chat", "Tell me a short, friendly joke about vegetables."),
    ("chat", "What should I pack for a weekend hiking trip in the mountains?"),
    ("chat", "Can you recommend three easy houseplants for a beginner?"),
    ("code", "Write a Python function that returns the sum of the squares of a list."),
    ("code", "How do I reverse a string in JavaScript?"),
    ("code", "Write a SQL query that counts the rows of a table named orders."),
    ("code", "Explain what a for loop does in Python, with a tiny example."),
    ("code", "Write a Python function that checks whether a number is prime."),
    ("code", "What does the git command 'git status' show?"),
    ("math", "What is 17 multiplied by 23?"),
    ("math", "Solve for x: 3x + 7 = 22."),
    ("math", "What is the area of a circle with radius 4 centimetres?"),
    ("math", "If a train travels 120 km in 2 hours, what is its average speed?"),
    ("math", "What is the sum of the angles of a triangle, and why?"),
    ("math", "Convert 0.75 to a fraction in lowest terms."),
    (
        "summarisation",
        "Summarise in one sentence: The town library will close for two weeks in "
        "March while workers replace the roof and install new lighting. Books can "
        "still be returned through the drop box by the front door.",
    ),
    (
        "summarisation",
        "Summarise briefly: Bees visit flowers to collect nectar and pollen. While "
        "doing so they carry pollen between plants, which helps many crops and wild "
        "plants produce seeds and fruit.",
    ),
    (
        "summarisation",
        "Give a one-line summary: The school football team won its final match 3-1 "
        "after trailing at half time, securing the regional title for the first time "
        "in ten years.",
    ),
    (
        "summarisation",
        "Summarise: Regular exercise improves heart health, strengthens muscles and "
        "bones, lifts mood, and helps people sleep better.",
    ),
    (
        "summarisation",
        "Summarise in a few words: The bakery on Elm Street now opens at six in the "
        "morning and sells fresh bread, croissants and coffee.",
    ),
    (
        "summarisation",
        "Summarise: Volcanoes form where molten rock from deep inside the Earth rises "
        "to the surface, often at the edges of tectonic plates.",
    ),
    ("translation", "Translate into French: Good morning, how are you today?"),
    ("translation", "Translate into Spanish: The cat is sleeping on the warm windowsill."),
    ("translation", "Translate into German: Where is the train station?"),
    ("translation", "How do you say 'thank you very much' in Italian?"),
    ("translation", "Translate into English: Je voudrais un café, s'il vous plaît."),
    ("translation", "Translate into French: I like reading books in the evening."),
    (
        "reasoning",
        "If all roses are flowers and some flowers fade quickly, can we conclude that "
        "some roses fade quickly? Explain.",
    ),
    ("reasoning", "Tom is taller than Anna, and Anna is taller than Ben. Who is the shortest?"),
    (
        "reasoning",
        "A farmer has 10 sheep and all but 3 run away. How many sheep are left?",
    ),
    ("reasoning", "Which is heavier, a kilogram of feathers or a kilogram of iron?"),
    (
        "reasoning",
        "It is 3 o'clock now. What time will it be in 10 hours?",
    ),
    ("reasoning", "Why does ice float on water?"),
    ("chat", "What are some tips for learning a new language?"),
    ("code", "What is the difference between a list and a tuple in Python?"),
)

#: The category names in order of first appearance.
CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(c for c, _ in PROMPTS))


def load_prompts(path) -> tuple[tuple[str, object, str], ...]:
    """Read a prompt file: ``((category, content, mode), ...)``.

    Two layouts, by extension (in any case):

    ``.jsonl`` or ``.json``
        One JSON object per non-blank line, with exactly one of ``"prompt"``
        (a string: one user turn, put through the tokenizer's chat template
        when it has one, else used raw), ``"text"`` (a string used raw, no
        template) or ``"messages"`` (a list of ``{"role", "content"}``
        objects: a chat, which needs a chat template); and optionally
        ``"category"`` (a string, default ``"file"``); no other key, none
        twice.  A ``.json`` file may also be one JSON array of such objects.
    any other extension (``.txt``)
        One prompt per non-blank line (UTF-8; a leading byte-order mark is
        dropped; lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only, so a line
        separator such as U+2028 stays inside its prompt; leading and trailing
        whitespace is stripped), each one user turn (as ``"prompt"``).
        A line that is a JSON prompt object is refused (a JSON file under
        another name would otherwise reach the model as raw JSON).

    ``mode`` is ``"user"``, ``"raw"`` or ``"messages"``.

    Raises
    ------
    InvalidParameterError
        Missing or unreadable file, bad JSON, a line of another shape, or no
        prompt at all; the message names the file and the line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "p.jsonl"
    >>> _ = f.write_text('{"prompt": "Hi"}\\n{"text": "Once upon", "category": "story"}\\n')
    >>> load_prompts(f)
    (('file', 'Hi', 'user'), ('story', 'Once upon', 'raw'))
    """
    import json
    from pathlib import Path

    from .._errors import InvalidParameterError
    from .._files import unique_keys

    path = Path(path)
    try:
        # utf-8-sig: a byte-order mark (Windows editors write one) is no part of the first
        # prompt; read as utf-8 it reached the model as an extra character of a .txt prompt
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidParameterError(f"prompt file {str(path)!r} cannot be read: {exc}") from None
    is_json = path.suffix.lower() in (".jsonl", ".json")

    def parse(chunk, where):
        try:
            return json.loads(chunk, object_pairs_hook=unique_keys)
        except json.JSONDecodeError as exc:
            raise InvalidParameterError(f"{where} is not JSON: {exc}") from None
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"{where} {exc}") from None

    # Lines end at \n (read_text has made \r\n and \r into \n), as in a text editor:
    # str.splitlines also split at U+2028, U+0085, form feeds and other separators, so one
    # .txt prompt holding one became two prompts, and a .jsonl string holding one (valid JSON)
    # was refused as "not JSON".
    lines = text.split("\n")
    entries = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    if is_json and text.lstrip().startswith("["):  # one JSON array of objects
        docs = parse(text, f"prompt file {str(path)!r}")
        entries = [(f"item {k}", d) for k, d in enumerate(docs)]
    out = []
    for n, line in entries:
        where = f"prompt file {str(path)!r} {'line ' if isinstance(n, int) else ''}{n}"
        if not is_json:
            stripped = line.strip()
            if stripped.startswith("{") and stripped.endswith("}"):
                try:
                    looks = set(json.loads(stripped)) & {"prompt", "text", "messages"}
                except (json.JSONDecodeError, TypeError):
                    looks = set()
                if looks:  # a JSON prompt file under another suffix: never sent raw
                    raise InvalidParameterError(
                        f"{where} is a JSON prompt object, but the file's suffix "
                        f"{path.suffix!r} means one plain-text prompt per line; name it .jsonl"
                    )
            out.append(("file", stripped, "user"))
            continue
        doc = line if isinstance(n, str) else parse(line, where)
        keys = [k for k in ("prompt", "text", "messages") if isinstance(doc, dict) and k in doc]
        if len(keys) != 1:
            raise InvalidParameterError(
                f"{where} must be an object with exactly one of 'prompt', 'text' or "
                f"'messages'; got {json.dumps(doc)[:80]!r}"
            )
        extra = sorted(set(doc) - {keys[0], "category"})
        if extra:
            raise InvalidParameterError(
                f"{where} has unknown key(s) {extra}; expected one of 'prompt', 'text', "
                f"'messages' and optionally 'category'"
            )
        category = doc.get("category", "file")
        content = doc[keys[0]]
        if not isinstance(category, str):
            raise InvalidParameterError(f"{where}: category must be a string; got {category!r}")
        if keys[0] == "messages":
            ok = (
                isinstance(content, list)
                and content
                and all(
                    isinstance(m, dict)
                    and isinstance(m.get("role"), str)
                    and isinstance(m.get("content"), str)
                    for m in content
                )
            )
            if not ok:
                raise InvalidParameterError(
                    f"{where}: messages must be a non-empty list of "
                    f"{{'role': str, 'content': str}}; got {content!r}"
                )
            if not any(m["content"].strip() for m in content):  # as a blank prompt: the
                # template alone would reach the model
                raise InvalidParameterError(
                    f"{where}: every message of the chat is blank; got {content!r}"
                )
            out.append((category, [dict(m) for m in content], "messages"))
        else:
            if not isinstance(content, str):
                raise InvalidParameterError(f"{where}: {keys[0]} must be a string; got {content!r}")
            if not content.strip():  # a chat template would still make tokens of it
                raise InvalidParameterError(f"{where}: {keys[0]} is blank; got {content!r}")
            out.append((category, content, "user" if keys[0] == "prompt" else "raw"))
    if not out:
        raise InvalidParameterError(f"prompt file {str(path)!r} holds no prompt")
    return tuple(out)


def prompt_set(prompt_file: str = "") -> tuple[tuple[str, object, str], ...]:
    """The built-in prompts (``prompt_file=""``) or a file's, as ``(category, content, mode)``."""
    if not prompt_file:
        return tuple((c, text, "user") for c, text in PROMPTS)
    return load_prompts(prompt_file)


def encode_prompt(tokenizer, content, mode: str, where: str = "prompt"):
    """Token ids (int64 numpy array) of one prompt for ``tokenizer``.

    ``"user"``: one user turn through the chat template when the tokenizer
    has one (and raw text otherwise); ``"raw"``: the text as is (with the
    tokenizer's usual special tokens); ``"messages"``: the chat through the
    template (an error without one).  A prompt that tokenizes to nothing
    raises :class:`~spectheory.InvalidParameterError` naming ``where``.
    """
    import numpy as np

    from .._errors import InvalidParameterError

    template = getattr(tokenizer, "chat_template", None)
    if mode == "messages" and not template:
        raise InvalidParameterError(
            f"{where} is a chat (messages) but the tokenizer has no chat template"
        )
    if mode == "raw" or (mode == "user" and not template):
        ids = tokenizer(content)["input_ids"]
    else:
        messages = content if mode == "messages" else [{"role": "user", "content": content}]
        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
        if not isinstance(ids, list):  # a BatchEncoding in some transformers versions
            ids = ids["input_ids"]
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    if ids.size == 0:
        raise InvalidParameterError(f"{where} tokenizes to no tokens; got {content!r}")
    return ids
