"""Benchmark: the float64 orthant probability P4 compiled (solvers/core/orthant_jit.py) against
the NumPy implementation it replaced, read from git (``--before=REV``, default the commit before
the change), in the same run, alternating.

1. CPU µs per scalar call on five correlation matrices (moderate, exchangeable r = 1/2, one
   pair at r = 0.99, nearly aligned fields, exactly aligned fields), the memo of canonical
   orderings cleared before every call (a fresh matrix each time); and 1000 matrices as arrays.
2. CPU ms per right-hand side of the ReLU modes module, K = M = 2 and 3 (L = 1, N = 256,
   η = 0.5, σ_J = 0.3, seed 0: the convergence tests' spec), at the initial state and at the
   state reached at α = ``--late`` (nearly aligned fields): before, after without the memo,
   after with it (each right-hand side asks for the same four fields in several orders).

    .venv/bin/python bench/bench_orthant_float.py [--before=REV] [--reps=3] [--late=300]
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

from machine_info import cpu_name, load_avg  # noqa: E402
from solvers.core import orthant as O  # noqa: E402
from solvers.core.numbers import Float64Context  # noqa: E402

BEFORE = "1d6bedc"      # the last commit with the NumPy float64 path

CASES = {
    "moderate": (0.3, 0.1, -0.2, 0.25, 0.4, 0.05),
    "exchangeable r = 1/2": (0.5,) * 6,
    "r12 = 0.99": (0.99, 0.5, 0.5, 0.5, 0.5, 0.3),
    # x1 = y1 + 1e-4 d1, x2 = y2 + 1e-4 d2 (smallest eigenvalue ~1e-8)
    "nearly aligned": None,
    # x1 = y1, x2 = y2 exactly: P(y1 > 0, y2 > 0)
    "aligned (singular)": (0.3, 1.0, 0.3, 0.3, 1.0, 0.3),
}


def _nearly_aligned(eps=1e-4):
    y1, y2 = np.array([1, 0.2, -0.3, 0.1]), np.array([0.4, 1, 0.5, -0.2])
    d1, d2 = np.array([0.3, -0.5, 0.2, 0.7]), np.array([-0.1, 0.4, 0.6, 0.3])
    F = np.array([y1 + eps * d1, y2 + eps * d2, y1, y2])
    C = F @ F.T
    s = np.sqrt(np.diag(C))
    C = C / np.outer(s, s)
    return tuple(float(C[a, b]) for a, b in O.PAIRS)


def option(name, default):
    for a in sys.argv[1:]:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


def before_module(rev: str):
    """solvers/core/orthant.py as it was at ``rev``, as a module of its own."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:solvers/core/orthant.py"],
                          capture_output=True, text=True, check=True).stdout
    mod = types.ModuleType("orthant_before")
    exec(compile(text, f"{rev}:solvers/core/orthant.py", "exec"), mod.__dict__)
    return mod


def cpu_per_call(fn, seconds=0.3):
    """CPU seconds per call of ``fn``, repeated for about ``seconds``."""
    n, t0 = 0, time.process_time()
    while True:
        fn()
        n += 1
        used = time.process_time() - t0
        if used > seconds and n >= 3:
            return used / n


def fresh(r):
    O._MEMO.clear()
    return O.orthant4_float(*r)


def per_call(old, reps):
    print("\n## µs of CPU per scalar call (memo cleared before each), min over reps\n")
    print("| matrix | before | after | before / after | |after - before| |")
    print("|---|---:|---:|---:|---:|")
    for name, r in CASES.items():
        r = r or _nearly_aligned()
        tb, ta = [], []
        for rep in range(reps):
            order = [("b", lambda: old.orthant4_float(*r)), ("a", lambda: fresh(r))]
            for tag, fn in order if rep % 2 == 0 else order[::-1]:
                (tb if tag == "b" else ta).append(cpu_per_call(fn))
        diff = abs(old.orthant4_float(*r) - fresh(r))
        print(f"| {name} | {min(tb) * 1e6:.0f} | {min(ta) * 1e6:.1f} | {min(tb) / min(ta):.0f} "
              f"| {diff:.1e} |")
    rv = [np.full(1000, x) for x in CASES["moderate"]]
    tb = cpu_per_call(lambda: old.orthant4_float(*rv), 1.0)
    ta = cpu_per_call(lambda: O.orthant4_float(*rv), 1.0)
    print(f"| 1000 moderate matrices as arrays (ms) | {tb * 1e3:.1f} | {ta * 1e3:.1f} "
          f"| {tb / ta:.1f} | |")


def _spec(K, amax):
    return {"model": {"activation": "relu", "K": K, "M": K}, "data": {"L": 1, "N": 256},
            "training": {"eta": 0.5, "sigma_J": 0.3, "seed": 0},
            "solve": {"alpha_max": amax, "n_points": 12, "basis": "modes", "dps": "float64",
                      "digits": 5}}


def per_rhs(old, reps, late):
    from solvers.app.solve import problem_of
    from solvers.app.spec import parse_spec
    from solvers.core.numbers import context
    from solvers.core.registry import load
    from solvers.hierarchy.odes import integrate_problem

    new = Float64Context.__dict__["orthant4"]
    print("\n## ms of CPU per right-hand side, ReLU modes module (L = 1), min over reps\n")
    print("| K = M | state | P4 calls | distinct up to order | before | after, no memo "
          "| after | before / after |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for K in (2, 3):
        problem = problem_of(parse_spec(_spec(K, late)))
        ctx = context("float64")
        num = problem.numeric(ctx)
        mod = load(problem.key, "numpy")
        end = integrate_problem(problem, [0.0, float(late)], basis="modes",
                                arithmetic="float64").states[-1]
        for where, y in (("start", num.y_modes.copy()), (f"α = {late}", end)):
            def rhs():
                O._MEMO.clear()         # reuse within one evaluation only (the state moves)
                return mod.rhs_modes(y, num.T_modes, num.lam, num.w, num.eta, num.e2, ctx,
                                     noise=num.noise, decay=num.decay)
            calls = []

            def record(*r):
                calls.append(r)
                return O.orthant4_float(*r)
            Float64Context.orthant4 = staticmethod(record)
            rhs()
            keys = {O._kernels().canonical(tuple(float(x) for x in r)) for r in calls}
            times = {"b": [], "n": [], "a": []}
            for rep in range(reps):
                for tag in ("b", "n", "a") if rep % 2 == 0 else ("a", "n", "b"):
                    Float64Context.orthant4 = staticmethod(old.orthant4_float) if tag == "b" \
                        else new
                    O._MEMO_SIZE = 0 if tag == "n" else 256
                    O._MEMO.clear()
                    times[tag].append(cpu_per_call(rhs, 0.5 if tag == "b" else 0.3))
            Float64Context.orthant4 = new
            b, n, a = (min(times[t]) * 1e3 for t in "bna")
            print(f"| {K} | {where} | {len(calls)} | {len(keys)} | {b:.2f} | {n:.3f} | {a:.3f} "
                  f"| {b / a:.0f} |")


def main():
    rev, reps, late = option("before", BEFORE), int(option("reps", 3)), option("late", "300")
    print(f"CPU {cpu_name()}; load {load_avg()}; before = {rev}; pid {os.getpid()}")
    old = before_module(rev)
    fresh(CASES["moderate"])            # the kernels loaded (or compiled) before timing
    per_call(old, reps)
    per_rhs(old, reps, int(late))
    print(f"\nload after {load_avg()}")


if __name__ == "__main__":
    main()
