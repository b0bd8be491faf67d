"""``scaling-odes cache [--clear]``: what the cache of generated artifacts holds, one line per kind
(solvers/core/artifacts.py), or deletes it; ``--json`` / ``-o FILE`` write
``{"cache": path, "kinds": {kind: {"files", "bytes"}}, "cleared": bool}``."""
from __future__ import annotations


def cmd_cache(args) -> int:
    from solvers.app.cli.common import emit
    from solvers.core.artifacts import clear, listing
    from solvers.core.cachedir import cache_dir
    kinds = listing()
    if args.clear:
        clear()
    if args.json or args.output:
        emit({"cache": str(cache_dir()), "cleared": bool(args.clear),
              "kinds": {kind: {"files": n, "bytes": size} for kind, n, size in kinds}}, args)
        return 0
    print(f"{'cleared' if args.clear else 'cache'}: {cache_dir()}")
    for kind, n, size in kinds:
        print(f"  {kind}: {n} file{'s' if n != 1 else ''}, {_size(size)}")
    return 0


def _size(size: int) -> str:
    for unit in ("B", "kB", "MB"):
        if size < 1000:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def register(sub) -> None:
    p = sub.add_parser("cache", help="list (or --clear) the cached generated modules and kernels")
    p.add_argument("--clear", action="store_true",
                   help="delete them (the next run builds what it needs again)")
    p.add_argument("-o", "--output", help="write JSON here")
    p.add_argument("--json", action="store_true", help="write compact JSON to stdout")
    p.set_defaults(func=cmd_cache)
