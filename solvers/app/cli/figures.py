"""``scaling-odes figures``: regenerate the paper's figures into docs/figures and docs/gallery.md."""
from __future__ import annotations

from pathlib import Path


def cmd_figures(args) -> int:
    from solvers.app.gallery import runner
    from solvers.app.cli.common import CliError
    if args.list:
        from solvers.app.gallery import all_figures
        for n, f in all_figures().items():
            print(f"{str(n):>3}  {f.title}")
        return 0
    figs = None
    if args.fig is not None:
        # the order given is kept: cheapest first when the caller says so; an empty --fig ''
        # names no figure (it must not fall back to "all", hours of work)
        from solvers.app.gallery import all_figures, figure_id
        figs = list(dict.fromkeys(figure_id(x) for part in args.fig for x in str(part).replace(",", " ").split()))
        if not figs:
            raise CliError("--fig names no figure (got an empty value); give e.g. --fig 6 or "
                           "--fig 2,7, or leave --fig out for all figures")
        bad = [n for n in figs if n not in all_figures()]
        if bad:
            extra = ", ".join(str(n) for n in all_figures() if isinstance(n, str))
            raise CliError(f"--fig: no such figure {bad}; the paper has Figures 1-20 (companions: {extra})")
    out = Path(args.out) if args.out else runner.OUT
    records = runner.RECORDS if not args.out else out / "records.json"
    gallery = runner.DOCS / "gallery.md" if not args.out else out / "gallery.md"
    cache = None if args.no_cache else (runner.CACHE if not args.out else out / "cache")
    runner.run(figs, small=args.small, out=out, cache_dir=cache, records=records, gallery=gallery,
               progress=True)
    print(f"wrote figures to {out} and {gallery}")
    return 0


def register(sub) -> None:
    f = sub.add_parser("figures", help="regenerate the paper's Figures 1-20 (docs/figures, docs/gallery.md)")
    f.add_argument("--fig", action="append", help="figure number(s), e.g. --fig 6 or --fig 2,7 or --fig B1 (default: all)")
    f.add_argument("--small", action="store_true", help="reduced test size (placeholders, stamped as such)")
    f.add_argument("--out", help="output directory (default docs/figures; records and gallery go there too)")
    f.add_argument("--no-cache", action="store_true", help="recompute every piece")
    f.add_argument("--list", action="store_true", help="list the figures and exit")
    f.set_defaults(func=cmd_figures)
