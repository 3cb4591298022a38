"""The recording options (``--model``, ``--drafts``, ...) of the commands that record.

They are generated from :class:`spectheory.lm.TraceSettings`, so each default
is written once, in the dataclass.
"""

from __future__ import annotations

from ._common import dataclass_options, id_list, positive_int, settings_from_args, usage_error

#: The fields of TraceSettings exposed as options, in this order.
FIELDS = ("model", "drafts", "prompts", "prompt_file", "max_new_tokens", "temperature", "seed")


def add_recording_options(parser) -> None:
    """Add the :class:`~spectheory.lm.TraceSettings` options to ``parser``."""
    group = parser.add_argument_group("recording (spectheory.lm.TraceSettings)")
    dataclass_options(group, "spectheory.lm.trace:TraceSettings", FIELDS,
                      types={"prompts": id_list, "max_new_tokens": positive_int})  # fmt: skip


def trace_settings(args):
    """The :class:`~spectheory.lm.TraceSettings` of the parsed options."""
    from ..lm.trace import TraceSettings

    return settings_from_args(TraceSettings, args)


def load_or_record(args):
    """The trace of ``--trace FILE``, else the recording options' trace (recorded or reused)."""
    from ..lm import load_trace, record_trace

    if getattr(args, "trace", ""):
        reject_with_trace(args)
        return load_trace(args.trace)
    return record_trace(trace_settings(args), progress=not args.quiet)


def reject_with_trace(args, also=(), seed_used=True) -> None:
    """Refuse recording options given together with ``--trace`` (they would be ignored).

    ``--seed`` is allowed where ``seed_used``: the commands that replay also use
    it for their own random streams; the others (``report``, ``trace shard``)
    pass ``seed_used=False``, since it would be ignored there too.
    """
    given = [f for f in (*FIELDS, *also) if f in vars(args) and not (f == "seed" and seed_used)]
    if given:
        flags = ", ".join("--" + f.replace("_", "-") for f in given)
        raise usage_error(f"{flags} cannot be combined with --trace (the trace file has its own)")
