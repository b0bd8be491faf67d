"""Benchmark of the ODE solvers: RHS cost per number type, float64 integrators, level basis.

    .venv/bin/python bench/bench_solvers.py [--quick] [--mpmath-budget SECONDS]

System: the generated erf K = M = 2 order-2 system, power-law spectrum (β = 1) with L distinct
eigenvalues, η = 1/10, the finite-N (N = 1024, σ_J = 1/100, seed 0) initial condition.

a. One right-hand-side evaluation at L = 64, levels and modes basis: python-flint arb vs mpmath
   mpf at 200 digits, and the numpy float64 target.  Accuracy: largest component error relative
   to the largest component, against flint at 260 digits.
b. Modes basis at L = 64 in float64: the project's RKF7(8) on float64 arrays vs SciPy's DOP853.
   Error: max over the α grid of |ε_g - ε_g^ref| / ε_g^ref, reference = modes basis in flint
   at 40 digits, rtol 1e-22.
c. Level (Cayley-Hamilton) basis at L = 16, 32, 64: flint vs mpmath at estimated_dps(L, 9),
   rtol 1e-14; float64 / SciPy in the level basis (where they break); solve_auto.  Errors
   against the modes-basis reference at the same L.  mpmath runs on the full α range when the
   projected time (flint time x measured RHS cost ratio) is under --mpmath-budget; otherwise
   both flint and mpmath are re-run on α in [0, 100] and the ratio is taken from those runs.

Every timing is the minimum over repeated runs (up to 3; fewer when one run is long, see the
"runs" column), because other processes on a shared machine only ever slow a run down; every
ratio compares runs made in this process, one after the other.  Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mpmath  # noqa: E402
import numpy as np  # noqa: E402

from machine_info import cpu_name, load_avg  # noqa: E402

from derive import spectra  # noqa: E402
from derive.hierarchy import SystemKey  # noqa: E402
from solvers.core.numbers import Float64Context, FlintContext, MpmathContext, to_mpf  # noqa: E402
from solvers.hierarchy.odes import (PrecisionLost, agreement_digits, estimated_dps,  # noqa: E402
                                    integrate_problem)
from solvers.hierarchy.runner import solve_auto  # noqa: E402
from solvers.core.problem import Problem, random_init  # noqa: E402
from solvers.core.registry import load  # noqa: E402

KEY = SystemKey("erf", 2, 2)
GRID = [0, 1, 3, 10, 30, 100, 300, 1000]
SHORT_MAX = 100          # α range of the mpmath-vs-flint comparison when the full one is too long
REPEATS = 3
REPEAT_BUDGET = 120.0    # do not start another repeat when the runs so far took longer than this
T_START = time.perf_counter()


def log(msg):
    print(f"[{time.perf_counter() - T_START:7.1f} s] {msg}", file=sys.stderr, flush=True)


def make_problem(L):
    s = spectra.power_law(L, 1)
    return Problem(KEY, s, Fraction(1, 10), 2,
                   random_init(2, 2, 1024, s, Fraction(1, 100), 0))


def best_of(fn, repeats=REPEATS, budget=REPEAT_BUDGET):
    """(min wall time, number of runs, last result); stops repeating once ``budget`` is spent."""
    times, result = [], None
    while len(times) < repeats and (not times or sum(times) + min(times) <= budget):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), len(times), result


def max_rel_err(eps, ref):
    """max_i |eps_i - ref_i| / |ref_i|, exact inputs, evaluated at 50 digits."""
    with mpmath.workdps(50):
        return float(max(abs(to_mpf(a) - to_mpf(b)) / abs(to_mpf(b)) for a, b in zip(eps, ref)))


def fmt_err(e):
    return "0" if e == 0 else f"{e:.1e}"


def fmt_s(t):
    return f"{t:.3g}"


def machine():
    import flint
    import scipy
    cpu = cpu_name()
    return (f"Machine: {platform.platform()}, {cpu}, os.cpu_count() = {os.cpu_count()}; "
            f"Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
            f"mpmath {mpmath.__version__}, python-flint {flint.__version__}; "
            f"load average (1/5/15 min) at start {load_avg()}")


# -- a. one RHS evaluation ----------------------------------------------------------------------

def per_call(fn, min_batch=0.2):
    """Seconds per call: batches of at least ``min_batch`` s, best of 5."""
    fn()
    n, t = 1, 0.0
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - t0
        if t >= min_batch:
            break
        n *= 2
    best = t / n
    for _ in range(4):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def rel_diff(a, b):
    """max |a - b| / max |b| over components (exact inputs)."""
    with mpmath.workdps(300):
        a = [to_mpf(x) for x in np.ravel(a)]
        b = [to_mpf(x) for x in np.ravel(b)]
        return float(max(abs(x - y) for x, y in zip(a, b)) / max(abs(y) for y in b))


def bench_rhs(L, dps=200):
    log(f"a. RHS evaluation cost, L = {L}, dps = {dps}")
    prob = make_problem(L)
    mp_mod, np_mod = load(KEY, "mpmath"), load(KEY, "numpy")
    calls = {}

    def setup(ctx):
        n = prob.numeric(ctx)
        return {"levels": lambda: mp_mod.rhs_levels(n.y_levels, n.T_levels, n.c, n.nu, n.eta,
                                                     n.e2, ctx),
                "modes": lambda: mp_mod.rhs_modes(n.y_modes, n.T_modes, n.lam, n.w, n.eta,
                                                   n.e2, ctx)}

    with FlintContext(dps + 60) as ctx:        # reference values
        ref = {b: f() for b, f in setup(ctx).items()}
    n64 = prob.numeric(Float64Context())
    eta, e2 = float(n64.eta), float(n64.e2)
    f64 = {"levels": lambda: np_mod.rhs_levels(n64.y_levels, n64.T_levels, n64.c, n64.nu, eta, e2),
           "modes": lambda: np_mod.rhs_modes(n64.y_modes, n64.T_modes, n64.lam, n64.w, eta, e2)}
    rows = []
    for basis in ("levels", "modes"):
        res = {}
        # interleave the number types, three rounds, so drift hits all of them alike
        for _ in range(3):
            with FlintContext(dps) as ctx:
                f = setup(ctx)[basis]
                t = per_call(f)
                res["flint"] = (min(t, res.get("flint", (math.inf,))[0]), rel_diff(f(), ref[basis]))
            with MpmathContext(dps) as ctx:
                f = setup(ctx)[basis]
                t = per_call(f)
                res["mpmath"] = (min(t, res.get("mpmath", (math.inf,))[0]),
                                 rel_diff(f(), ref[basis]))
            t = per_call(f64[basis])
            res["float64"] = (min(t, res.get("float64", (math.inf,))[0]),
                              rel_diff(f64[basis](), ref[basis]))
        rows.append((basis, res))
    print(f"\n### a. One RHS evaluation, erf K=M=2 order 2, L = {L}, {dps} digits\n")
    print("Time per call, best of 3 x 5 batches (interleaved); error = max component error / "
          f"max component vs flint at {dps + 60} digits.\n")
    print("| basis | flint arb [ms] | mpmath mpf [ms] | mpmath / flint | float64 numpy [ms] "
          "| flint / float64 | error flint | error mpmath | error float64 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for basis, r in rows:
        fl, mp, f6 = r["flint"], r["mpmath"], r["float64"]
        print(f"| {basis} | {fl[0] * 1e3:.3g} | {mp[0] * 1e3:.3g} | {mp[0] / fl[0]:.1f}x "
              f"| {f6[0] * 1e3:.3g} | {fl[0] / f6[0]:.1f}x | {fmt_err(fl[1])} | {fmt_err(mp[1])} "
              f"| {fmt_err(f6[1])} |")
    sys.stdout.flush()


# -- references ---------------------------------------------------------------------------------

_refs = {}


def reference(L, grid):
    """Modes basis, flint at 40 digits, rtol 1e-22 (cached per L); eps_g keyed by α."""
    if L not in _refs:
        log(f"reference: L = {L}, modes, flint dps 40, rtol 1e-22, alpha to {grid[-1]}")
        t0 = time.perf_counter()
        tr = integrate_problem(make_problem(L), grid, basis="modes", arithmetic="flint",
                               dps=40, rtol=1e-22)
        _refs[L] = (dict(zip(grid, tr.eps_g)), time.perf_counter() - t0, tr.stats)
        log(f"  done in {_refs[L][1]:.1f} s")
    return _refs[L]


def err_vs_ref(traj, L, grid):
    ref = reference(L, grid)[0]
    return max_rel_err(traj.eps_g, [ref[a] for a in traj.alpha])


# -- b. float64 integrators, modes basis ---------------------------------------------------------

def bench_float64_modes(L, grid):
    prob = make_problem(L)
    _, t_ref, st_ref = reference(L, grid)
    rows = []
    for arith, rtol in [("float64", 1e-11), ("float64", 1e-13), ("float64", 1e-14),
                        ("scipy", 1e-11), ("scipy", 1e-13)]:
        log(f"b. modes, {arith}, rtol {rtol:g}")
        t, n, tr = best_of(lambda: integrate_problem(prob, grid, basis="modes", arithmetic=arith,
                                                     rtol=rtol))
        rows.append((arith, rtol, t, n, tr.stats, err_vs_ref(tr, L, grid)))
    name = {"float64": "RKF7(8), float64 arrays", "scipy": "SciPy DOP853"}
    print(f"\n### b. float64 integrators, modes basis, L = {L}, alpha grid {grid}\n")
    print("Wall time = min over runs; error = max over the grid of |eps_g - ref| / ref, ref = "
          "modes basis in flint at 40 digits, rtol 1e-22.\n")
    print("| method | rtol | wall time [s] | runs | n_fevals | steps (rejected) | max rel. error "
          "eps_g | digits |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for arith, rtol, t, n, st, err in rows:
        steps = f"{st['n_steps']} ({st['n_rejected']})" if "n_steps" in st else "-"
        digits = f"{-math.log10(err):.1f}" if err > 0 else "all"
        print(f"| {name[arith]} | {rtol:g} | {fmt_s(t)} | {n} | {st['n_fevals']} | {steps} "
              f"| {fmt_err(err)} | {digits} |")
    print(f"| reference: RKF7(8), flint 40 digits | 1e-22 | {fmt_s(t_ref)} | 1 "
          f"| {st_ref['n_fevals']} | {st_ref['n_steps']} ({st_ref['n_rejected']}) | - | - |")
    sys.stdout.flush()


# -- c. level basis -----------------------------------------------------------------------------

def rhs_ratio(prob, dps):
    """Measured mpmath / flint cost of one level-basis RHS call at ``dps`` (for the projection)."""
    mod = load(KEY, "mpmath")
    out = {}
    for name, C in (("flint", FlintContext), ("mpmath", MpmathContext)):
        with C(dps) as ctx:
            n = prob.numeric(ctx)
            out[name] = per_call(lambda: mod.rhs_levels(n.y_levels, n.T_levels, n.c, n.nu, n.eta,
                                                        n.e2, ctx), min_batch=0.1)
    return out["mpmath"] / out["flint"]


def run_levels(prob, grid, arith, dps, rtol=1e-14, repeats=REPEATS):
    return best_of(lambda: integrate_problem(prob, grid, basis="levels", arithmetic=arith,
                                             dps=dps, rtol=rtol), repeats=repeats)


def bench_levels(Ls, grid, auto_Ls, mpmath_budget):
    hp_rows, f64_rows, auto_rows = [], [], []
    short = [a for a in grid if a <= SHORT_MAX]
    for L in Ls:
        prob = make_problem(L)
        reference(L, grid)
        dps = estimated_dps(L, 9, "levels")
        log(f"c. L = {L}: levels, flint, dps {dps}, rtol 1e-14")
        t_fl, n_fl, tr_fl = run_levels(prob, grid, "flint", dps)
        ratio = rhs_ratio(prob, dps)
        projected = t_fl * ratio
        full = projected <= mpmath_budget
        log(f"  flint {t_fl:.1f} s; mpmath/flint RHS cost {ratio:.1f}x -> mpmath projected "
            f"{projected:.0f} s: {'full range' if full else f'alpha <= {SHORT_MAX}'}")
        row = dict(L=L, dps=dps, fl=(t_fl, n_fl, tr_fl, err_vs_ref(tr_fl, L, grid)),
                   projected=projected, range=grid if full else short)
        if full:
            row["fl_cmp"] = row["fl"]
        else:
            log(f"  flint on alpha <= {SHORT_MAX}")
            t, n, tr = run_levels(prob, short, "flint", dps)
            row["fl_cmp"] = (t, n, tr, err_vs_ref(tr, L, grid))
        log(f"  mpmath on alpha <= {row['range'][-1]}")
        # a long mpmath run is not repeated (budget); the flint run next to it is the min of 3
        t, n, tr = run_levels(prob, row["range"], "mpmath", dps)
        row["mp"] = (t, n, tr, err_vs_ref(tr, L, grid))
        hp_rows.append(row)

        for arith in ("float64", "scipy"):
            log(f"  levels, {arith}, rtol 1e-13")
            t0 = time.perf_counter()
            try:
                tr = integrate_problem(prob, grid, basis="levels", arithmetic=arith, rtol=1e-13)
                ref = reference(L, grid)[0]
                agree = agreement_digits(tr.eps_g, [ref[a] for a in grid])
                outcome = (f"returned; max rel. error {fmt_err(err_vs_ref(tr, L, grid))}, "
                           f"{max(agree, 0):.1f} digits agree")
                per_alpha = [max_rel_err([e], [ref[a]]) for a, e in zip(grid, tr.eps_g)]
                outcome += "; error at each alpha: " + ", ".join(
                    f"{a}: {fmt_err(e)}" for a, e in zip(grid, per_alpha))
                fe = tr.stats.get("n_fevals", "-")
            except (PrecisionLost, ArithmeticError, RuntimeError) as exc:
                outcome = f"raised {type(exc).__name__}: {exc}"
                fe = "-"
            f64_rows.append((L, arith, time.perf_counter() - t0, fe, outcome))

        if L in auto_Ls:
            log(f"  solve_auto, levels, digits 9, L = {L}")
            t, n, tr = best_of(lambda: solve_auto(prob, grid, basis="levels", digits=9))
            auto_rows.append((L, t, n, tr, err_vs_ref(tr, L, grid)))

    print(f"\n### c. Level (Cayley-Hamilton) basis, erf K=M=2 order 2, alpha grid {grid}\n")
    print("flint and mpmath at dps = estimated_dps(L, 9, 'levels'), rtol 1e-14.  Error = max "
          "over the grid of |eps_g - ref| / ref against the modes-basis reference (flint, 40 "
          "digits, rtol 1e-22) at the same L.\n")
    print("| L | dps | method | alpha range | wall time [s] | runs | n_fevals | max rel. error "
          "eps_g | mpmath / flint |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|")
    for r in hp_rows:
        L, dps = r["L"], r["dps"]
        rng = f"[0, {r['range'][-1]}]"
        lines = [("flint arb", f"[0, {grid[-1]}]", r["fl"], "")]
        if r["fl_cmp"] is not r["fl"]:
            lines.append(("flint arb", rng, r["fl_cmp"], ""))
        lines.append(("mpmath mpf", rng, r["mp"], f"{r['mp'][0] / r['fl_cmp'][0]:.1f}x"))
        for name, rg, (t, n, tr, err), ratio in lines:
            print(f"| {L} | {dps} | {name} | {rg} | {fmt_s(t)} | {n} | {tr.stats['n_fevals']} "
                  f"| {fmt_err(err)} | {ratio} |")
    notes = [f"L = {r['L']}: mpmath full range projected at {r['projected']:.0f} s "
             f"(flint time x measured RHS cost ratio) > budget, compared on [0, {SHORT_MAX}]"
             for r in hp_rows if r["range"][-1] != grid[-1]]
    if notes:
        print("\n" + "\n".join(f"- {s}" for s in notes))

    print(f"\nfloat64 in the level basis, rtol 1e-13 (RKF7(8) on float64 arrays / SciPy DOP853), "
          f"compared with the modes reference:\n")
    print("| L | method | wall time [s] | n_fevals | outcome |")
    print("|---:|---|---:|---:|---|")
    name = {"float64": "RKF7(8) float64", "scipy": "SciPy DOP853"}
    for L, arith, t, fe, outcome in f64_rows:
        print(f"| {L} | {name[arith]} | {fmt_s(t)} | {fe} | {outcome.replace('|', '/')} |")

    if auto_rows:
        print("\nsolve_auto(prob, alphas, basis='levels', digits=9) (flint; starts at "
              "estimated_dps, raises dps until two runs agree):\n")
        print("| L | wall time [s] | runs | start dps | final dps | agreement between its runs "
              "| max rel. error eps_g vs modes ref |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for L, t, n, tr, err in auto_rows:
            print(f"| {L} | {fmt_s(t)} | {n} | {estimated_dps(L, 9, 'levels')} | {tr.dps} "
                  f"| {tr.stats.get('agreement_digits', float('nan')):.1f} digits "
                  f"| {fmt_err(err)} |")
    sys.stdout.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: L = 16 only, alpha up to 200")
    ap.add_argument("--mpmath-budget", type=float, default=600.0,
                    help="projected seconds above which mpmath level runs use alpha <= 100 "
                         "(default 600)")
    args = ap.parse_args(argv)
    if args.quick:
        grid = [a for a in GRID if a <= 200] + [200]
        L_rhs, L_b, Ls, auto_Ls = 16, 16, [16], [16]
    else:
        grid, L_rhs, L_b, Ls, auto_Ls = GRID, 64, 64, [16, 32, 64], [16, 32]

    print(machine() + (" (--quick: smoke-run sizes)" if args.quick else ""))
    sys.stdout.flush()
    bench_rhs(L_rhs)
    bench_float64_modes(L_b, grid)
    bench_levels(Ls, grid, auto_Ls, args.mpmath_budget)
    print(f"\nLoad average at the end: {load_avg()}; total {time.perf_counter() - T_START:.0f} s")


if __name__ == "__main__":
    main()
