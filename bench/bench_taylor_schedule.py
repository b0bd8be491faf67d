"""Taylor series against the RK7(8) under a power learning-rate schedule (flint arb).

Before the Taylor jets carried η(α), a power schedule ran on the RK7(8) only: that is the
baseline.  Same run, same system: erf K = M = 2 (paper readouts), β = 1, η = 0.5,
η(α) = η (1 + α/a0)^(-p) with a0 = 1, p = 0.5, N = 512 initial condition (seed of the spec
default), level basis, α ∈ [0, A_MAX] (0 and 6 log-spaced points from 0.1), dps =
estimated_dps(L, digits); each integrator at the policy's tolerance for ``digits`` digits of ε_g
(precision.default_rtol: Taylor 10^-(digits+3), RK7(8) 10^-(digits+5)).  Per cell also the
Taylor series at constant η (same settings): the cost of carrying η(α).

The runs of a cell go back to back, their order alternating from cell to cell; CPU time of the
process (the machine is shared), the 1-min load before each run.  ε_g agreement = smallest
number of agreeing significant digits over the grid.  Progress to stderr, Markdown to stdout.

  .venv/bin/python bench/bench_taylor_schedule.py [--L 8 16] [--digits 20 30] [--amax 10]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from machine_info import cpu_name  # noqa: E402
from timing import WallCpu  # noqa: E402
from solvers.app.solve import problem_of  # noqa: E402
from solvers.app.spec import parse_spec  # noqa: E402
from solvers.hierarchy.odes import integrate_problem  # noqa: E402
from solvers.hierarchy.precision import default_rtol, estimated_dps  # noqa: E402
from solvers.hierarchy.verify import agreement_digits  # noqa: E402

T0 = time.perf_counter()
SCHEDULE = {"kind": "power", "alpha0": 1, "p": "0.5"}


def log(msg):
    print(f"[{time.perf_counter() - T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def problem(L, schedule):
    doc = {"model": {"activation": "erf", "K": 2, "M": 2},
           "data": {"L": L, "beta": 1.0, "N": 512},
           "training": {"eta": "0.5", **({"schedule": schedule} if schedule else {})},
           "solve": {"alpha_max": 1.0, "basis": "levels", "digits": 10}}
    return problem_of(parse_spec(doc))


def run(L, digits, method, schedule, alphas):
    prob = problem(L, schedule)
    dps = estimated_dps(L, digits, "levels")
    rtol = default_rtol(digits, method)
    load = os.getloadavg()[0]
    with WallCpu() as t:
        tr = integrate_problem(prob, alphas, basis="levels", dps=dps, rtol=rtol,
                               integrator=method)
    log(f"L={L} digits={digits} {method} {'power' if schedule else 'const'}: cpu {t.cpu:.2f} s "
        f"wall {t.wall:.2f} s steps {tr.stats['n_steps']} load {load:.2f}")
    return {"cpu": t.cpu, "wall": t.wall, "steps": tr.stats["n_steps"], "load": load,
            "eps": tr.eps_g, "dps": dps, "rtol": rtol, "order": tr.stats.get("order")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--L", type=int, nargs="+", default=[8, 16])
    ap.add_argument("--digits", type=int, nargs="+", default=[20, 30])
    ap.add_argument("--amax", type=float, default=10.0)
    args = ap.parse_args()
    alphas = [0.0] + [float(a) for a in np.geomspace(0.1, args.amax, 6)]
    rows = []
    flip = False
    # warm-up (module loading, first-call caches) outside the timings
    for m, sch in (("taylor", SCHEDULE), ("rk78", SCHEDULE), ("taylor", None)):
        for L in args.L:
            integrate_problem(problem(L, sch), [0.0, 0.1], basis="levels", dps=30, rtol=1e-8,
                              integrator=m)
    for L in args.L:
        for digits in args.digits:
            order = [("taylor", SCHEDULE), ("rk78", SCHEDULE), ("taylor", None)]
            if flip:
                order = order[::-1]
            flip = not flip
            res = {(m, s is not None): run(L, digits, m, s, alphas) for m, s in order}
            ts, rk, tc = res[("taylor", True)], res[("rk78", True)], res[("taylor", False)]
            rows.append((L, digits, ts, rk, tc, agreement_digits(ts["eps"], rk["eps"])))
    print(f"CPU: {cpu_name()}; α ≤ {args.amax:g}, {len(alphas)} points; "
          f"schedule η(α) = 0.5 (1 + α)^(-1/2)\n")
    print("| L | digits | dps | Taylor order | Taylor steps / CPU s | RK7(8) steps / CPU s | "
          "RK7(8) / Taylor (CPU) | Taylor const-η CPU s | power / const (Taylor) | "
          "ε_g agreement | load |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for L, d, ts, rk, tc, agree in rows:
        print(f"| {L} | {d} | {ts['dps']} | {ts['order']} | {ts['steps']} / {ts['cpu']:.2f} | "
              f"{rk['steps']} / {rk['cpu']:.2f} | {rk['cpu'] / ts['cpu']:.1f}x | "
              f"{tc['cpu']:.2f} | {ts['cpu'] / tc['cpu']:.2f} | {agree:.1f} | "
              f"{ts['load']:.1f}/{rk['load']:.1f}/{tc['load']:.1f} |")


if __name__ == "__main__":
    main()
