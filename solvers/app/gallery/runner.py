"""Run gallery figures: compute (cached pieces, progress bars), plot, check, record, render."""
from __future__ import annotations

import json
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

from . import all_figures, figure_id
from .cache import Cache, _plain

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
OUT = DOCS / "figures"
CACHE = OUT / "cache"
RECORDS = OUT / "records.json"


def params_of(fig, small: bool) -> dict:
    return fig.small if small else fig.full


def compute(fig, small: bool, cache: Cache, progress: bool = False):
    """The figure's data through its cached pieces (the path the test suite runs at small size)."""
    bar = tqdm(desc=f"Fig. {fig.number}", unit="piece", disable=not progress, leave=False)

    def piece(name, params, fn, group=None):
        # group: pieces shared between figures (e.g. the plateau trajectory of Figs. 4 and 18)
        bar.set_postfix_str(name)
        out = cache.get(group or fig.number, f"{'small' if small else 'full'}-{name}", params, fig.version, fn)
        bar.update(1)
        return out
    try:
        return fig.compute(params_of(fig, small), piece)
    finally:
        bar.close()


def load_records(path: Path = RECORDS) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def command_for(n: int, small: bool) -> str:
    return f"scaling-odes figures --fig {n}" + (" --small" if small else "") + f"   # or: make figures FIG={n}"


def run(numbers=None, *, small=False, out: Path = OUT, cache_dir: Path | None = CACHE,
        records: Path | None = RECORDS, progress=True, gallery: Path | None = DOCS / "gallery.md") -> dict:
    figs = all_figures()
    numbers = list(figs) if not numbers else [figure_id(n) for n in numbers]
    unknown = [n for n in numbers if n not in figs]
    if unknown:
        raise ValueError(f"no such figure: {unknown} (the paper has Figures 1-20; companions: "
                         f"{', '.join(str(n) for n in figs if isinstance(n, str))})")
    out = Path(out)
    done = {}
    for n in tqdm(numbers, desc="figures", unit="fig", disable=not progress):
        fig = figs[n]
        cache = Cache(Path(cache_dir) / ("small" if small else "full") if cache_dir else None)
        t0 = time.perf_counter()
        data = compute(fig, small, cache, progress)
        t1 = time.perf_counter()
        files = fig.plot(data, params_of(fig, small), out, small)
        t2 = time.perf_counter()
        checks = fig.checks(data, params_of(fig, small))
        rec = {"size": "small" if small else "full",
               "compute_s": round(cache.piece_s, 2), "compute_cpu_s": round(cache.cpu_s, 2),
               "plot_s": round(t2 - t1, 2),
               "wall_s_this_run": round(time.perf_counter() - t0, 2),
               "pieces_computed": cache.misses, "pieces_cached": cache.hits,
               "pieces": {k: round(v, 2) for k, v in cache.used.items()},
               "files": [str(Path(f).relative_to(DOCS)) if Path(f).is_relative_to(DOCS) else str(f) for f in files],
               "checks": _plain(checks), "params": _plain(params_of(fig, small)),
               "command": command_for(n, small),
               "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "load_avg": [round(x, 2) for x in os.getloadavg()], "host": platform.node()}
        done[n] = rec
        if records:
            recs = load_records(records)          # merge: another run may have written meanwhile
            recs.setdefault(str(n), {})[rec["size"]] = rec
            records.parent.mkdir(parents=True, exist_ok=True)
            records.write_text(json.dumps(recs, indent=1, ensure_ascii=False) + "\n")
        if gallery:
            from .gallery_md import write_gallery
            write_gallery(load_records(records) if records else {}, gallery)
        if progress:
            bad = [c["name"] for c in checks if c["ok"] is False]
            tqdm.write(f"Fig. {n}: {rec['compute_s']:.1f} s compute, {len(files)} PNG"
                       + (f"; checks not met: {bad}" if bad else "; checks ok"))
    return done
