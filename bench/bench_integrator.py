"""Benchmark: adaptive RKF7(8) (solvers.integrators.rk78) vs mpmath.odefun (Taylor) vs fixed-step RK4.

Problem: two coupled, damped oscillators, one of them a Duffing (cubic) spring, on t in [0, 2]:

    x1' = v1,  v1' = -x1 - v1/10 - x1^3 + (x2 - x1)/5
    x2' = v2,  v2' = -2 x2 - v2/10 + (x1 - x2)/5,       y(0) = (1, 0, 0, 1).

Smooth, non-chaotic, O(1) time scales.  Reference: mpmath.odefun at 100 digits (its agreement
with RKF7(8) at dps 30 is an independent check).  Accuracy target at working precision dps:
10^-(dps-5).  Where a method cannot reach the target within the time budget, it is run at
looser settings and the cost at the target is extrapolated from the last two runs (RKF7(8):
steps ~ tol^-slope, RK4: error ~ n^-order, both fitted; time per step from the last run);
such rows are marked "extrap.".  The time ratios are relative to mpmath.odefun run with
tol = target; odefun with its default tol (full working precision) is listed too.

Timings are the minimum of 3 runs (2-core machine, noisy).  Run:
    .venv/bin/python bench/bench_integrator.py [--budget SECONDS]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import mpmath
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from solvers.integrators.rk78 import fixed_step_rk4, integrate  # noqa: E402
from solvers.core.numbers import context  # noqa: E402

T_END = 2
Y0 = [1, 0, 0, 1]
REPEATS = 3


def rhs_list(t, y):
    x1, v1, x2, v2 = y
    return [v1, -x1 - v1 / 10 - x1 ** 3 + (x2 - x1) / 5, v2, -2 * x2 - v2 / 10 + (x1 - x2) / 5]


def rhs_array(t, y):
    out = np.empty(4, dtype=object)
    out[:] = rhs_list(t, y)
    return out


def best_of(fn, repeats=REPEATS):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def to_mpf(x):
    if hasattr(x, "mid"):  # flint arb: its binary midpoint, exactly
        man, exp = x.mid().man_exp()
        return mpmath.ldexp(mpmath.mpf(int(man)), int(exp))
    return mpmath.mpf(x)


def rel_error(y, ref):
    with mpmath.workdps(120):
        return float(max(abs(to_mpf(a) - r) for a, r in zip(y, ref)) / max(abs(r) for r in ref))


def reference():
    with mpmath.workdps(100):
        return mpmath.odefun(rhs_list, 0, [mpmath.mpf(v) for v in Y0])(T_END)


def run_odefun(dps, tol=None):
    with mpmath.workdps(dps):
        tol = None if tol is None else mpmath.mpf(tol)
        return mpmath.odefun(rhs_list, 0, [mpmath.mpf(v) for v in Y0], tol=tol)(T_END)


def run_rk8(kind, dps, tol, stats):
    with context(kind, dps) as ctx:
        return integrate(rhs_array, [0, T_END], ctx.array(Y0), ctx=ctx, rtol=tol, atol=tol,
                         stats=stats)[-1]


def run_rk4(dps, n):
    with context("mpmath", dps) as ctx:
        return fixed_step_rk4(rhs_array, [0, T_END], ctx.array(Y0), ctx=ctx,
                              n_steps_per_interval=n)[-1]


def rk8_rows(kind, dps, target, ref, budget, detail):
    """Tighten tol by 1e-5 per run from 1e-15 until the target or the time budget is reached."""
    runs, k = [], 15
    while True:
        tol = f"1e-{min(k, dps - 5)}"
        stats = {}
        secs, y = best_of(lambda: run_rk8(kind, dps, tol, stats))
        err = rel_error(y, ref)
        runs.append((float(tol), secs, stats["n_steps"], err))
        detail.append((dps, f"RKF7(8) {kind}", f"rtol={tol}", stats["n_steps"], secs, err))
        if k >= dps - 5:
            return secs, stats["n_steps"], f"{err:.1e}", ""
        # the next run costs ~ (1e5)^(1/8) = 4.2x more; stop before it would blow the budget
        if secs * 10 ** (5 / 8) > budget:
            break
        k += 5
    # Step counts follow tol^-(1/8) very closely; time per step is taken from the last run.
    (tol1, _, n1, _), (tol2, s2, n2, _) = runs[-2], runs[-1]
    slope = math.log(n2 / n1) / math.log(tol1 / tol2)
    steps = n2 * (tol2 / target) ** slope
    return s2 / n2 * steps, float(f"{steps:.2g}"), f"~{target:.0e}", \
        f"extrap. (steps ~ tol^-{slope:.3f})"


def rk4_rows(dps, target, ref, budget, detail):
    """Double the step count from 200 until the target or the time budget is reached."""
    runs, n = [], 200
    while True:
        secs, y = best_of(lambda: run_rk4(dps, n))
        err = rel_error(y, ref)
        runs.append((n, secs, err))
        detail.append((dps, "RK4 fixed, mpmath", f"n={n}", n, secs, err))
        if err <= target:
            return secs, n, f"{err:.1e}", ""
        if 2 * secs > budget or len(runs) >= 4:
            break
        n *= 2
    (n1, s1, e1), (n2, s2, e2) = runs[-2], runs[-1]
    order = math.log(e1 / e2) / math.log(n2 / n1)
    n_needed = n2 * (e2 / target) ** (1 / order)
    return s2 * n_needed / n2, float(f"{n_needed:.2g}"), f"~{target:.0e}", \
        f"extrap. (observed order {order:.2f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=6.0,
                        help="max seconds for a single measured run (default 6)")
    args = parser.parse_args()

    ref = reference()
    rows, detail = [], []
    for dps in (30, 60):
        target = 10.0 ** -(dps - 5)
        secs_ode, y = best_of(lambda: run_odefun(dps, f"1e-{dps - 5}"))
        rows.append((dps, "mpmath.odefun (Taylor), tol=target", 1.0, secs_ode, "-",
                     f"{rel_error(y, ref):.1e}", ""))
        secs, y = best_of(lambda: run_odefun(dps))
        rows.append((dps, "mpmath.odefun (Taylor), default tol", secs / secs_ode, secs, "-",
                     f"{rel_error(y, ref):.1e}", ""))
        for kind in ("mpmath", "flint"):
            secs, steps, err, note = rk8_rows(kind, dps, target, ref, args.budget, detail)
            rows.append((dps, f"RKF7(8) adaptive, {kind}", secs / secs_ode, secs, steps, err, note))
        secs, steps, err, note = rk4_rows(dps, target, ref, args.budget, detail)
        rows.append((dps, "RK4 fixed step, mpmath", secs / secs_ode, secs, steps, err, note))

    print(f"\nProblem: 4-d damped coupled oscillators (one Duffing), t in [0, {T_END}]; "
          f"target rel. error 10^-(dps-5); min of {REPEATS} runs.\n")
    print("| dps | method | wall time [s] | time / odefun | steps | rel. error at t_end | note |")
    print("|---:|---|---:|---:|---:|---:|---|")
    for dps, name, ratio, secs, steps, err, note in rows:
        steps = steps if isinstance(steps, str) else f"{steps:.3g}"
        print(f"| {dps} | {name} | {secs:.3g} | {ratio:.3g} | {steps} | {err} | {note} |")

    print("\nMeasured runs behind the table:\n")
    print("| dps | method | setting | steps | wall time [s] | rel. error |")
    print("|---:|---|---|---:|---:|---:|")
    for dps, name, setting, steps, secs, err in detail:
        print(f"| {dps} | {name} | {setting} | {steps} | {secs:.3g} | {err:.1e} |")


if __name__ == "__main__":
    main()
