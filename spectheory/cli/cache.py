"""``spectheory cache list|clear``: show and remove cached traces, adapters, heads, corpora."""

from __future__ import annotations

from ._common import ExitCode

HELP = "list or clear the cache (traces, adapters, heads, corpora, sweep pieces)"

_KINDS = ("traces", "adapters", "heads", "corpus", "sweeps")  # spectheory.lm.cache.CACHE_KINDS


def add_parser(subparsers):
    """Register ``spectheory cache`` and its ``list`` and ``clear`` subcommands."""
    c = subparsers.add_parser(
        "cache",
        help=HELP,
        description=(
            "The cache folder is $SPECTHEORY_CACHE, else $SPECTHEORY_CACHE_DIR, else "
            "$XDG_CACHE_HOME/spectheory, else ~/.cache/spectheory."
        ),
    )
    csub = c.add_subparsers(dest="cache_command", required=True, metavar="{list,clear}")
    ls = csub.add_parser("list", help="one line per cached file: kind, size, date, name")
    ls.add_argument("--kind", choices=_KINDS, default=None, help="only this kind of entry")
    ls.set_defaults(run=run_list)
    cl = csub.add_parser("clear", help="remove cached files (all, or of one --kind)")
    cl.add_argument("--kind", choices=_KINDS, default=None, help="only this kind of entry")
    cl.set_defaults(run=run_clear)
    return c


def run_list(args) -> int:
    import time

    from ..lm.cache import cache_dir, cache_entries

    entries = cache_entries(args.kind)
    print(f"cache folder {cache_dir()}")
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.mtime))
        note = "  (partial write, safe to clear)" if e.partial else ""
        print(f"{e.kind:<9}{e.bytes / 2**20:>10.2f} MiB  {when}  {e.name}{note}")
    total = sum(e.bytes for e in entries)
    print(f"{len(entries)} files, {total / 2**20:.2f} MiB")
    return ExitCode.OK


def run_clear(args) -> int:
    from ..lm.cache import cache_dir, clear_cache

    n, size = clear_cache(args.kind)
    what = f"{args.kind} " if args.kind else ""
    print(f"removed {n} {what}files ({size / 2**20:.2f} MiB) from {cache_dir()}")
    return ExitCode.OK
