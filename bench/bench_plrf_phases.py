"""The PLRF phase table: fitted compute-optimal exponents ξ (d* ~ f^ξ) and η (P* ~ f^(−η)) of
every phase row, on ladders of d, next to the phase's prediction.

    nice -n 19 .venv/bin/python bench/bench_plrf_phases.py [--quick] [--ladders 100-1600,400-6400,1600-25600] [--rows Ib,IVb]

A ladder ``LO-HI`` is d = LO·2^(k/2) up to HI (nine sizes for a factor 16), v = 4d, γ = "auto",
B = 1, cells (250, 1000) per decade (``--quick``: the ladder 100-400 at (80, 250), rows Ia and
Ib only).  The compute grid has 12 points per decade from 10³·(LO/100)² to 10¹²·(HI/1600)² (the
grid of the 100-1600 ladder moved with the ladder: every predicted ξ is ≳ ⅓, mostly ≈ ½).
Each row prints ξ and η ± their uncertainty (the fit's standard error and the ladder drift in
quadrature), then the standard error alone and the values on the lower / upper sub-ladders;
the prediction, the number of refined minima and their range of d*, the CPU seconds of the row
(BLAS on one thread) and the process's peak resident memory so far.
Rows with a noise-off control also print the noise share of the optimal loss,
P*(noise)/P*(no noise) − 1 at the smallest → largest common f, and its growth with d*: where
it is small the noise term, which defines phases III, IVa and IVb, does not set the optimum.
"""
from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import cpu_name, load_avg  # noqa: E402
from solvers.theory.plrf.frontier import fit_slope, frontier  # noqa: E402

# (label, α, β, with a noise-off control)
ROWS = [("Ia", 1.0, 0.3, False), ("II", 1.0, 0.7, False), ("III", 1.0, 1.5, True),
        ("Ib", 0.4, 0.3, False), ("IVb", 0.4, 0.7, True), ("IVa", 0.27, 0.8, True),
        ("Ic", 0.2, 0.7, True)]
DEFAULT_LADDERS = "100-1600,400-6400,1600-25600"


def ladder(spec: str) -> list[int]:
    lo, hi = (int(x) for x in spec.split("-"))
    if not 0 < lo < hi:
        raise ValueError(spec)
    n = int(round(2 * math.log2(hi / lo)))
    return [int(round(lo * 2 ** (k / 2))) for k in range(n + 1)]


def f_grid(ds) -> np.ndarray:
    """The 100-1600 grid 10³..10¹² scaled by (d/100)² at the bottom and (d/1600)² at the top.
    The bottom matters: at the smallest f the largest sizes have taken only r ≈ 10 steps, and
    below the line (γ ∝ d^(2α−1)) that early loss is not monotone in d, so the ladder shows
    spurious interior minima at P ≈ P(0) which the fit would take (seen at 102400-1638400)."""
    f_min = 1e3 * max(1.0, (min(ds) / 100) ** 2)
    f_max = 1e12 * max(1.0, (max(ds) / 1600) ** 2)
    return np.geomspace(f_min, f_max, int(round(12 * math.log10(f_max / f_min))) + 1)


def _pm(x, se):
    return f"{x:.3f} ± {se:.3f}" if math.isfinite(x) else "—"


def _pm_drift(out, key):
    """x ± (standard error ⊕ ladder drift), then the standard error alone and the lower /
    upper sub-ladders' values."""
    x, err, se, sub = out[key], out[f"{key}_err"], out[f"{key}_se"], out[f"{key}_sub"]
    if not math.isfinite(x):
        return "—"
    if err is None:
        return _pm(x, se)
    return f"{x:.3f} ± {err:.3f} (se {se:.3f}; {sub[0]:.3f}/{sub[1]:.3f})"


def noise_share(on, off) -> str:
    """How much the SGD noise raises the optimal loss, P*(noise)/P*(no noise) − 1, at the
    smallest and largest f both runs refined, and the slope of its log against log d* (the
    rate at which the noise term closes in on the terms that set the noiseless optimum)."""
    both = sorted(set(on["f"]) & set(off["f"]))
    if len(both) < 3:
        return "—"
    i_on = [on["f"].index(f) for f in both]
    i_off = [off["f"].index(f) for f in both]
    ex = np.array([on["loss_star"][i] / off["loss_star"][j] - 1 for i, j in zip(i_on, i_off)])
    dstar = np.array([on["d_star"][i] for i in i_on])
    text = f"{ex[0]:.3f} → {ex[-1]:.3f}"
    if np.all(ex > 0):
        slope, se = fit_slope(dstar, ex)
        text += f" (∝ d*^{slope:.2f}±{se:.2f})"
    return text


def row(label, alpha, beta, noise, spec, cells):
    ds = ladder(spec)
    c0 = time.process_time()
    out = frontier(alpha, beta, ds, noise=noise, cells=cells, f=f_grid(ds))
    out["cpu"] = time.process_time() - c0
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def line(label, alpha, beta, spec, out, share="") -> str:
    noise = share != "off"
    pr = out["predicted"]
    name = f"{label} ({alpha:g}, {beta:g})" + ("" if noise else ", noise off")
    pxi = f"{pr['xi']:.3f}" if noise and pr["xi"] is not None else "—"
    peta = f"{pr['eta']:.3f}" if noise and pr["eta"] is not None else "—"
    dst = f"{min(out['d_star']):.0f}–{max(out['d_star']):.0f}" if out["d_star"] else "—"
    return (f"| {name} | {spec} | {_pm_drift(out, 'xi')} | {pxi} | "
            f"{_pm_drift(out, 'eta')} | {peta} | {len(out['f'])} | {dst} | "
            f"{share if noise else ''} | {out['cpu']:.1f} | {out['peak_mb']:.0f} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ladders", default=None, help=f"comma-separated LO-HI (default {DEFAULT_LADDERS})")
    ap.add_argument("--rows", default=None, help="comma-separated phase labels (default: all)")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    try:
        specs = (a.ladders or ("100-400" if a.quick else DEFAULT_LADDERS)).split(",")
        for s in specs:
            ladder(s)
    except ValueError:
        ap.exit(2, f"--ladders: expected LO-HI,... with 0 < LO < HI, got {a.ladders!r}\n")
    labels = a.rows.split(",") if a.rows else (["Ia", "Ib"] if a.quick else [r[0] for r in ROWS])
    unknown = set(labels) - {r[0] for r in ROWS}
    if unknown:
        ap.exit(2, f"--rows: unknown phase {sorted(unknown)}; known: {[r[0] for r in ROWS]}\n")
    cells = (80, 250) if a.quick else (250, 1000)
    print(f"\n### PLRF phase table (CPU: {cpu_name()}; load before: {load_avg()}; "
          f"cells {cells[0]}/{cells[1]} per decade)\n")
    print("| phase (α, β) | ladder | ξ measured | ξ predicted | η measured | η predicted | "
          "minima | d* | noise share of P* | CPU s | peak MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for spec in specs:
        for label, alpha, beta, control in ROWS:
            if label not in labels:
                continue
            on = row(label, alpha, beta, True, spec, cells)
            if not control:
                print(line(label, alpha, beta, spec, on), flush=True)
                continue
            off = row(label, alpha, beta, False, spec, cells)
            print(line(label, alpha, beta, spec, on, noise_share(on, off)), flush=True)
            print(line(label, alpha, beta, spec, off, "off"), flush=True)
    print(f"\nload after: {load_avg()}")


if __name__ == "__main__":
    main()
