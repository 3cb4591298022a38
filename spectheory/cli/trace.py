"""``spectheory trace record|shard``: record real-model traces, whole or sharded."""

from __future__ import annotations

import time

from ._common import ExitCode, existing_path, log, positive_float
from ._recording import add_recording_options, reject_with_trace, trace_settings

HELP = "record real-model traces, whole or sharded (needs the models extra)"


def add_parser(subparsers):
    """Register ``spectheory trace`` and its ``record`` and ``shard`` subcommands."""
    t = subparsers.add_parser("trace", help=HELP, description=HELP)
    tsub = t.add_subparsers(dest="trace_command", required=True, metavar="{record,shard}")
    r = tsub.add_parser(
        "record",
        help="record (or reuse from the cache) a trace of the target and its drafts",
        description=(
            "Samples continuations of the embedded prompts from the target and stores the "
            "target's and each early-exit draft's full-vocabulary logits (float16) with "
            "the tokens, as safetensors with JSON metadata and checksums."
        ),
    )
    add_recording_options(r)
    r.add_argument("--no-cache", action="store_true", help="neither reuse nor store in the cache")
    r.add_argument("--out", default="", help="also write the trace to this file")
    r.set_defaults(run=run_record)

    s = tsub.add_parser(
        "shard",
        help="record a sharded trace, or split a trace file into shards",
        description=(
            "Writes a sharded trace (manifest.json and shard files of at most --max-shard-mb "
            "MiB, whole prompts each) into --out: splits the trace file --trace, or else "
            "records one with the recording options, prompt by prompt, resuming an "
            "interrupted recording in the same folder."
        ),
    )
    s.add_argument("--out", required=True, help="folder of the sharded trace")
    s.add_argument("--trace", type=existing_path, default=None,
                   help="a saved trace file to split (else record)")  # fmt: skip
    s.add_argument("--max-shard-mb", type=positive_float, default=256.0,
                   help="largest shard file, in MiB (default %(default)s)")  # fmt: skip
    add_recording_options(s)
    s.set_defaults(run=run_shard)
    return t


def run_record(args) -> int:
    from ..lm import record_trace, trace_cache_path

    settings = trace_settings(args)
    t0 = time.perf_counter()
    trace = record_trace(settings, cache=not args.no_cache, progress=not args.quiet)
    seconds = time.perf_counter() - t0
    path = trace_cache_path(settings.key())
    if args.out:
        path = trace.save(args.out)
    elif args.no_cache:
        path = None
    size = path.stat().st_size / 2**20 if path else float("nan")
    print(
        f"trace {settings.key()}: {trace.num_positions} positions x {trace.vocab_size} tokens, "
        f"drafts {', '.join(trace.drafts)}\n"
        f"model {trace.metadata['model']['name']} ({trace.metadata['model'].get('source')})\n"
        f"file {path} ({size:.1f} MiB); {seconds:.1f} s "
        f"(recording {trace.metadata['recording_seconds']} s)"
    )
    return ExitCode.OK


def run_shard(args) -> int:
    from ..lm.shards import MANIFEST_NAME, record_sharded, shard_trace
    from ..lm.trace import load_trace

    max_bytes = int(args.max_shard_mb * 2**20)
    if args.trace:
        reject_with_trace(args, seed_used=False)  # splitting a file records nothing
        sharded = shard_trace(load_trace(args.trace), args.out, max_bytes)
    else:
        sharded = record_sharded(
            trace_settings(args), args.out, max_bytes, progress=not args.quiet
        )
    sizes = [s.bytes for s in sharded.shards]
    log.debug("shard sizes: %s", sizes)
    print(
        f"{sharded!r}\nshard files of {min(sizes):,} to {max(sizes):,} bytes "
        f"(at most {max_bytes:,}); manifest {sharded.folder / MANIFEST_NAME}"
    )
    return ExitCode.OK
