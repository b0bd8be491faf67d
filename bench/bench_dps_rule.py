"""The precision rule of the level basis, measured: digits of ε_g kept vs working precision.

    .venv/bin/python bench/bench_dps_rule.py [--quick] [--L 16 32 64] [--alpha-max 3500]

For each L: the headline system (erf K = M = 2, order 1, β = 1, η = 1/10, N = 1024 finite-size
initial condition, seed 0) in the level basis with flint at a ladder of dps around
``estimated_dps(L, 8, "levels")`` = 18 + ⌈2.6 L⌉, rtol 1e-11, against the modes basis in float64
(rtol 1e-13; itself good to ~1e-11, so "digits" saturate near 10).  A run that breaks down
(non-finite values, step-size underflow) is reported as such.  The loss grows with α (the
fast modes decay and stop cancelling the rounding carried by the slow ones), so the rule is
stated for the range measured.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench_level_paths import make_problem  # noqa: E402
from machine_info import load_avg  # noqa: E402
from solvers.integrators.rk78 import IntegrationError  # noqa: E402
from solvers.hierarchy.odes import PrecisionLost, estimated_dps, integrate_problem  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, nargs="+", default=[16, 32, 64])
    ap.add_argument("--alpha-max", type=float, default=3500.0)
    ap.add_argument("--quick", action="store_true", help="L = 8, 16 only")
    args = ap.parse_args(argv)
    Ls = [8, 16] if args.quick else args.L
    grid = [0.0] + list(np.geomspace(1, args.alpha_max, 12))
    print(f"## Precision rule of the level basis, α ≤ {args.alpha_max:g}\n")
    print(f"Load average at start: {load_avg()}.\n")
    print("| L | dps | dps − 2.6 L | wall time [s] | digits of ε_g vs modes (min over α) | "
          "estimated_dps(L, 8) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for L in Ls:
        prob = make_problem(L)
        ref = integrate_problem(prob, grid, basis="modes", arithmetic="float64",
                                rtol=1e-13).eps_float()
        est = estimated_dps(L, 8, "levels")
        for dps in sorted({max(20, est - 40), max(20, est - 25), max(20, est - 12), est}):
            t0 = time.perf_counter()
            try:
                tr = integrate_problem(prob, grid, basis="levels", arithmetic="flint", dps=dps,
                                       rtol=1e-11)
                rel = np.abs(tr.eps_float() / ref - 1)
                digits = f"{-math.log10(max(rel.max(), 1e-300)):.1f}"
            except (IntegrationError, PrecisionLost) as exc:
                digits = f"broke down: {str(exc)[:60]}"
            print(f"| {L} | {dps} | {dps - 2.6 * L:.0f} | {time.perf_counter() - t0:.3g} | "
                  f"{digits} | {est} |", flush=True)
    print(f"\nLoad average at end: {load_avg()}.")


if __name__ == "__main__":
    main()
