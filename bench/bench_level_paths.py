"""Where the level-basis speed-up comes from: the same RK7(8) run through each code path.

    .venv/bin/python bench/bench_level_paths.py [--quick] [--L 64] [--alpha-max 100]

System: the level basis's headline case — erf K = M = 2, order 1, power-law
spectrum β = 1 with L distinct eigenvalues, η = 1/10, the finite-N (N = 1024, σ_J = 1/100,
seed 0) initial condition — in the level basis at dps = estimated_dps(L, 8, "levels"),
rtol 1e-11, α ∈ [0, alpha_max] (default 100: the object-array paths are slow).

Paths (``solvers.hierarchy.odes.integrate_problem`` flags):
1. flint, arb_mat algebra, short row-independent scalars (the default);
2. flint, arb_mat algebra, every scalar at full precision (``short_scalars=False``);
3. flint, the generated module on numpy object arrays (``matrix_rhs=False``) — the
   implementation before this optimisation;
4. mpmath mpf on numpy object arrays (``arithmetic="mpmath"``), timed on a tenth of the range
   when --alpha-max > 20 and scaled by the ratio of RHS evaluations (stated in the table).
All paths take the same steps (same controller, same error estimates up to rounding), so the
ratios are per-step cost ratios; the accuracy column is against the modes basis in float64
(RK7(8), rtol 1e-13: ~1e-12, bench/ARCHIVE.md §2).  Times are the minimum of up to 3 runs.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from machine_info import load_avg  # noqa: E402

from derive import spectra  # noqa: E402
from derive.hierarchy import SystemKey  # noqa: E402
from solvers.hierarchy.odes import estimated_dps, integrate_problem  # noqa: E402
from solvers.core.problem import Problem, random_init  # noqa: E402


def make_problem(L):
    s = spectra.power_law(L, 1)
    return Problem(SystemKey("erf", 2, 2), s, Fraction(1, 10), 1,
                   random_init(2, 2, 1024, s, Fraction(1, 100), 0))




def timed(fn, repeats, budget=60.0):
    best, out, spent = float("inf"), None, 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best, spent = min(best, dt), spent + dt
        if spent > budget:
            break
    return best, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=64)
    ap.add_argument("--alpha-max", type=float, default=100.0)
    ap.add_argument("--quick", action="store_true", help="L = 16, α ≤ 20, one run each")
    args = ap.parse_args(argv)
    L, amax, repeats = (16, 20.0, 1) if args.quick else (args.L, args.alpha_max, 3)
    prob = make_problem(L)
    grid = [0.0] + list(np.geomspace(1, amax, 6))
    dps = estimated_dps(L, 8, "levels")
    ref = integrate_problem(prob, grid, basis="modes", arithmetic="float64",
                            rtol=1e-13).eps_float()

    def err(tr):
        return float(np.max(np.abs(tr.eps_float() / ref[:len(tr.alpha)] - 1)))

    print(f"## Level-basis code paths, L = {L}, dps = {dps}, rtol 1e-11, α ≤ {amax:g}\n")
    print(f"Load average at start: {load_avg()}; {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}.\n")
    print("| path | wall time [s] | RHS evaluations | steps | max rel. error ε_g | "
          "time / default |")
    print("|---|---:|---:|---:|---:|---:|")
    rows = [("flint arb_mat, short scalars (default)", dict(arithmetic="flint")),
            ("flint arb_mat, full-precision scalars",
             dict(arithmetic="flint", short_scalars=False)),
            ("flint on numpy object arrays (previous)",
             dict(arithmetic="flint", matrix_rhs=False))]
    base = None
    for name, kw in rows:
        t, tr = timed(lambda kw=kw: integrate_problem(prob, grid, basis="levels", dps=dps,
                                                      rtol=1e-11, **kw), repeats)
        base = base or t
        print(f"| {name} | {t:.3g} | {tr.stats['n_fevals']} | {tr.stats['n_steps']} | "
              f"{err(tr):.1e} | {t / base:.2f}x |", flush=True)
    # mpmath: a shorter range, scaled by RHS evaluations (per-step cost is what differs)
    short = grid if amax <= 20 else [a for a in grid if a <= amax / 10] + [amax / 10]
    short = sorted(set(short))
    t_m, tr_m = timed(lambda: integrate_problem(prob, short, basis="levels", dps=dps,
                                                rtol=1e-11, arithmetic="mpmath"), 1)
    t_f, tr_f = timed(lambda: integrate_problem(prob, short, basis="levels", dps=dps,
                                                rtol=1e-11, arithmetic="flint"), repeats)
    print(f"| mpmath on numpy object arrays, α ≤ {short[-1]:g} | {t_m:.3g} "
          f"(default on the same range: {t_f:.3g}) | {tr_m.stats['n_fevals']} | "
          f"{tr_m.stats['n_steps']} | — | {t_m / t_f:.2f}x |")
    print(f"\nLoad average at end: {load_avg()}.")


if __name__ == "__main__":
    main()
