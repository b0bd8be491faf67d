"""What a gallery figure is: parameters at the paper's size and at test size, a computation made
of cached pieces, a plot, and quantitative checks against the paper (or a corrected erratum)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class Figure:
    number: int
    title: str
    what: str                      # one or two sentences for the gallery
    full: dict                     # the paper's parameters
    small: dict                    # reduced size: the test suite runs these through the same code
    compute: Callable              # compute(params, piece) -> data (dict of plain values)
    plot: Callable                 # plot(data, params, out_dir, small) -> list of PNG paths
    checks: Callable               # checks(data, params) -> list of check dicts (see ``check``)
    version: int = 1
    errata: str = ""
    overlay: bool = False          # a simulation overlay (theory vs finite-N SGD)
    data_note: str = ""
    files: tuple = field(default_factory=tuple)


def check(name: str, value, target=None, ok=None, note: str = "", *, tol: str | None = None,
          ref: str | None = None) -> dict:
    """One quantitative comparison; ``ok`` None means "reported, no pass/fail criterion".

    A verdict (``ok`` not None) must say what it was judged by: ``tol``, the pass criterion with
    its tolerance ("|Δ| < 0.05", "exact ordering"), and ``ref``, where the reference value comes
    from and why the tolerance is that wide ("closed form Eq. (74)", "simulation: 3/√N finite-size
    criterion", "second route").  A verdict without them is refused, so no ✅ on the gallery page
    can stand without its tolerance and its source.
    """
    if ok is not None and not (tol and ref):
        raise ValueError(f"check {name!r}: a pass/fail verdict needs tol= and ref=")
    return {"name": name, "value": value, "target": target,
            "ok": None if ok is None else bool(ok), "note": note, "tol": tol, "ref": ref}


def slope(x, y, lo=None, hi=None) -> float:
    """Least-squares d ln y / d ln x over lo <= x <= hi."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = (x > 0) & (y > 0)
    if lo is not None:
        keep &= x >= lo
    if hi is not None:
        keep &= x <= hi
    if keep.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(x[keep]), np.log(y[keep]), 1)[0])


def fmt(x, digits=3) -> str:
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(fmt(v, digits) for v in x) + "]"
    if isinstance(x, dict):
        return ", ".join(f"{k}: {fmt(v, digits)}" for k, v in x.items())
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return str(x)
    if isinstance(x, (float, np.floating)):
        if not np.isfinite(x):
            return str(x)
        return f"{x:.{digits}g}"
    return str(x)
