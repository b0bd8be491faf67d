"""PLRF expected loss to r = 10⁸: the closed form against a plain step-by-step NumPy loop.

    .venv/bin/python bench/bench_plrf.py [--quick]

Two curves, 60 log-spaced r in 1..10⁸, α = 1, β = 0.7, B = 1, γ = 0.5/Σσ:
- exact route, one draw of W at d = 2000, v = 8000 (draw + eigen-decomposition + closed form);
- deterministic route at d = 10⁴, v = ∞ (equivalent + closed form); ``--quick``: d = 2000;
  once with the compressed sums over the input directions (the default) and once with every
  term summed plainly (``compress=False``, the route before the compression), with the cells'
  largest differences between the two.
Plain: the same recursion S ← aS + c·p stepped one r at a time in NumPy on the same modes or
cells, timed to r = 10⁵ in the same run and extrapolated linearly to 10⁸ (its cost per step is
constant); its values at the common r ≤ 10⁵ are compared with the closed form's.
BLAS runs on one thread (this is a shared 2-core machine; see the theory page).  The compiled
kernels are warmed up on a small problem first: the times exclude numba's compilation.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import cpu_name, load_avg  # noqa: E402
from timing import WallCpu  # noqa: E402
from solvers.theory.plrf import Problem, spectrum  # noqa: E402
from solvers.theory.plrf.deterministic import equivalent  # noqa: E402
from solvers.theory.plrf.frontier import gamma_auto  # noqa: E402
from solvers.theory.plrf.recursion import loss_curve, steps  # noqa: E402

R_PLAIN = 100_000


def _spectrum(pb, route):
    if route == "deterministic, plain sums":
        return equivalent(pb, compress=False).spectrum
    return spectrum(pb, route.split(",")[0], 0)[0]


def one(route, d, v, against=None):
    pb = Problem(1.0, 0.7, v, d, 1, gamma_auto(1.0, v))
    rs = np.unique(np.geomspace(1, 1e8, 60).astype(np.int64))
    with WallCpu() as t_spec:
        sp = _spectrum(pb, route)
    with WallCpu() as t_solve:
        out = loss_curve(sp, pb.gamma, 1, rs, rtol=1e-6)
    with WallCpu() as t_plain:
        ref = steps(sp, pb.gamma, 1, R_PLAIN)      # the plain loop (recursion.steps)
    common = rs[rs <= R_PLAIN]
    diff = float(np.max(np.abs(out["loss"][:common.size] / ref[common] - 1)))
    per_step = t_plain.wall / (R_PLAIN + 1)
    if against is not None:      # the other deterministic row: same cells, compare them
        sp2, out2 = against
        cells = max(float(np.max(np.abs(sp.mult - sp2.mult)) / np.max(sp2.mult)),
                    float(np.max(np.abs(sp.w - sp2.w)) / np.max(sp2.w)))
        curve = float(np.max(np.abs(out["loss"] / out2["loss"] - 1)))
        one.note = (f"The two deterministic rows: cells differ by ≤ {cells:.1e} of the "
                    f"largest, the curves by ≤ {curve:.1e} relative.")
    one.last = (sp, out)
    return (f"| {route} | {d} | {'inf' if v == math.inf else v} | {sp.lam.size} | "
            f"{t_spec.wall:.2f} | {t_solve.wall:.2f} | {t_spec.wall + t_solve.wall:.2f} "
            f"({t_spec.cpu + t_solve.cpu:.2f}) | {t_plain.wall:.2f} ({t_plain.cpu:.2f}) | "
            f"{per_step * 1e8:.0f} | {diff:.1e} |")


def main(argv=None):
    quick = "--quick" in (argv or sys.argv[1:])
    print(f"\n### PLRF loss curve to r = 1e8 (CPU: {cpu_name()}; load before: {load_avg()})\n")
    print("| route | d | v | modes/cells | spectrum s | closed form s | total s (CPU s) | plain "
          "loop to 1e5 s (CPU s) | plain to 1e8 s (extrapolated) | max rel. diff (r ≤ 1e5) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    warm = Problem(1.0, 0.7, math.inf, 300, 1, gamma_auto(1.0, math.inf))
    for compress in (True, False):
        loss_curve(equivalent(warm, compress=compress).spectrum, warm.gamma, 1, [1, 10])
    loss_curve(spectrum(Problem(1.0, 0.7, 400, 100, 1, 0.1), "exact", 0)[0], 0.1, 1, [1, 10])
    print(one("exact", 2000, 8000), flush=True)
    d = 2000 if quick else 10_000
    print(one("deterministic", d, math.inf), flush=True)
    print(one("deterministic, plain sums", d, math.inf, against=one.last), flush=True)
    print(f"\n{one.note}\nload after: {load_avg()}")


if __name__ == "__main__":
    main()
