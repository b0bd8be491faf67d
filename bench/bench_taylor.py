"""Taylor integrator against heyoka's Taylor integrator and the project's RK7(8).

Same run, same system: erf K = M = 2, order 1, β = 1, η = 0.1, σ_J = 0.01 (N = 1024, seed 0),
level basis, α ∈ [0, 300] (9 points: 0 and 8 log-spaced from 1), dps = estimated_dps(L, digits),
tolerance 10^-(digits + 5) for both integrators (``solve``'s rule when the table was measured; the
Taylor route of ``solve`` now uses 10^-(digits + 3)), for L ∈ {16, 32, 64} × digits ∈ {12, 30, 60}.

Methods per cell:
  * ours: ``integrate_problem(..., integrator="taylor")`` (order from the tolerance, arb_mat);
  * heyoka ``taylor_adaptive`` (fp_type=real, compact mode) on the same generated system, built
    as in bench_levels.py; its time = compile + integrate (building the expressions not counted);
  * RK7(8) (``integrator="rk78"``), at 12 digits only by default: beyond, its steps grow like
    tol^(-1/8) (measured: L = 16, 30 digits did not finish in 400 s); ``--rk-digits`` adds more.
The two integrators of each cell run back to back, in alternating order from cell to cell, and
every timing carries the 1-min load average before it and the process CPU time (the machine is
shared; CPU time is the steadier number).  ε_g agreement = smallest number of agreeing
significant digits over the grid.  Progress to stderr, Markdown to stdout.

  .venv/bin/python bench/bench_taylor.py [--L 16 32 64] [--digits 12 30 60] [--rk-digits 12] [--quick]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import bench_levels as bl  # noqa: E402
from machine_info import cpu_name, load_avg  # noqa: E402
from solvers.hierarchy.odes import agreement_digits, estimated_dps, integrate_problem  # noqa: E402

T0 = time.perf_counter()


def log(msg):
    print(f"[{time.perf_counter() - T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def grid(a_max=300.0):
    return [0.0] + [float(a) for a in np.geomspace(1, a_max, 8)]


def ours(prob, alphas, dps, tol, method):
    with bl.Timing() as t:
        tr = integrate_problem(prob, alphas, basis="levels", dps=dps, rtol=tol, integrator=method)
    return t, tr


def cell(L, digits, rk_digits, flip):
    prob = bl.make_problem(L)
    alphas = grid()
    dps = estimated_dps(L, digits, "levels")
    tol = 10.0 ** -(digits + 5)
    out = {"L": L, "digits": digits, "dps": dps, "tol": tol}

    def run_ours():
        log(f"L={L} digits={digits}: ours (Taylor)")
        out["ours"] = ours(prob, alphas, dps, tol, "taylor")

    def run_hy():
        log(f"L={L} digits={digits}: heyoka")
        out["hy"] = bl.run_heyoka(prob, alphas, dps, tol, 1, 0)
    for f in ((run_hy, run_ours) if flip else (run_ours, run_hy)):
        f()
    if digits in rk_digits:
        log(f"L={L} digits={digits}: RK7(8)")
        out["rk"] = ours(prob, alphas, dps, tol, "rk78")
    return out


def header():
    print("| L | digits | dps | ours: Taylor wall [s] (CPU) | order, steps | heyoka compile + integrate "
          "[s] (CPU) | order, steps | ours / heyoka (wall; CPU) | ε_g digits ours vs heyoka | "
          "RK7(8) wall [s] (CPU) | RK7(8) / ours | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)


def row(c):
    t, tr = c["ours"]
    hy = c["hy"]
    hw = hy["compile"].wall + hy["integrate"].wall
    hc = hy["compile"].cpu + hy["integrate"].cpu
    agree = agreement_digits(tr.eps_g, hy["eps"])
    rk = c.get("rk")
    rk_s = f"{rk[0].wall:.1f} ({rk[0].cpu:.1f})" if rk else "not run"
    rk_r = f"{rk[0].cpu / t.cpu:.1f}x (CPU)" if rk else "—"
    if rk:
        rk_agree = agreement_digits(tr.eps_g, rk[1].eps_g)
        rk_s += f", agree {rk_agree:.1f} d"
    loads = [t.load, hy["compile"].load] + ([rk[0].load] if rk else [])
    print(f"| {c['L']} | {c['digits']} | {c['dps']} | {t.wall:.1f} ({t.cpu:.1f}) | "
          f"{tr.stats['order']}, {tr.stats['n_steps']} | "
          f"{hy['compile'].wall:.1f} + {hy['integrate'].wall:.1f} ({hc:.1f}) | "
          f"{hy['order']}, {hy['nsteps']} | {t.wall / hw:.2f}; {t.cpu / hc:.2f} | "
          f"{agree:.1f} | {rk_s} | {rk_r} | {min(loads):.1f}–{max(loads):.1f} |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--L", type=int, nargs="+", default=[16, 32, 64])
    ap.add_argument("--digits", type=int, nargs="+", default=[12, 30, 60])
    ap.add_argument("--rk-digits", type=int, nargs="*", default=[12])
    ap.add_argument("--quick", action="store_true", help="L = 16, digits 12 and 30 only")
    args = ap.parse_args(argv)
    if args.quick:
        args.L, args.digits = [16], [12, 30]
    if bl.hy is None:
        sys.exit("heyoka is not installed: pip install -e '.[bench]'")
    print(f"Machine: {cpu_name()}; heyoka {bl.hy.__version__}; load average at start "
          f"{load_avg()}\n")
    header()
    k = 0
    for L in args.L:
        for d in args.digits:
            row(cell(L, d, args.rk_digits, flip=bool(k % 2)))    # rows appear as cells finish
            k += 1
    print(f"\nload average at end {load_avg()}; total {time.perf_counter() - T0:.0f} s")


if __name__ == "__main__":
    main()
