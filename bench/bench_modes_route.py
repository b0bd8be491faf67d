"""The automatic policy's modes route against the plain call of the stiff solver, in one run.

Spec: erf K = M = 3, L = 32, β = 0.5, η = 0.5, N = 1024, seed 0, α ≤ 5000 (200 log-spaced
points), basis = "modes", dps = "auto", digits = 9.  Measured, all in this process:

1. ``solve_modes_fast(problem, grid)`` at its default rtol 1e-8 — what a user would write;
2. the same at the tolerance of the run the policy returns (equal accuracy);
3. ``solve_spec(spec)`` — the policy (``meta.route``: the RODAS4 pair, the first run in a
   forked child when two CPUs are free);
4. the RK7(8) pair the policy ran before (``--no-rk78`` skips it: minutes on a busy machine);
5. the reference: RK7(8) in float64 at rtol 1e-14 (an independent integrator), against which
   the digits of every ε_g are counted.

Wall and CPU seconds (this process and its children) are printed; on a shared machine the CPU
time is the steadier measure, the wall time is what the user waits.

    python bench/bench_modes_route.py [--no-rk78] [--quick] [--digits=9]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

SPEC = """
[model]
activation = "erf"
K = {K}
M = {K}
[data]
L = {L}
beta = 0.5
N = 1024
[training]
eta = 0.5
[solve]
alpha_max = {amax}
basis = "modes"
digits = 9
"""


def cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed(fn):
    w, c = time.perf_counter(), cpu()
    out = fn()
    return out, time.perf_counter() - w, cpu() - c


def digits(a, b) -> float:
    from solvers.hierarchy.precision import agreement_digits
    return agreement_digits(a, b)


def main(argv) -> int:
    import tempfile
    from pathlib import Path
    from solvers.app.solve import problem_of, solve_spec
    from solvers.app.spec import load_spec
    from solvers.hierarchy import precision, verify
    from solvers.hierarchy.modes_fast import solve_modes_fast
    from solvers.hierarchy.odes import integrate_problem

    quick = "--quick" in argv
    K, L, amax = (2, 16, 2000) if quick else (3, 32, 5000)
    wanted = 9
    for a in argv:
        if a.startswith("--digits="):
            wanted = int(a.split("=", 1)[1])
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "spec.toml"
        path.write_text(SPEC.format(K=K, L=L, amax=amax).replace("digits = 9",
                                                                   f"digits = {wanted}"))
        spec = load_spec(path)
    problem = problem_of(spec)
    grid = spec.solve.alpha_grid()
    plan = precision.plan("modes", "auto", wanted, L)
    final_rtol = plan.faster.rtol / 100
    print(f"# erf K = M = {K}, L = {L}, beta = 0.5, eta = 0.5, alpha <= {amax}, digits {wanted}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    solve_modes_fast(problem, grid[:3], rtol=1e-6)          # warm-up (imports, BLAS)

    ref, w_ref, c_ref = timed(lambda: integrate_problem(problem, grid, basis="modes",
                                                        arithmetic="float64", rtol=1e-14))
    rows = []
    plain, w1, c1 = timed(lambda: solve_modes_fast(problem, grid))
    rows.append(("solve_modes_fast, default rtol 1e-8", w1, c1, digits(plain.eps_g, ref.eps_g)))
    same, w2, c2 = timed(lambda: solve_modes_fast(problem, grid, rtol=final_rtol))
    rows.append((f"solve_modes_fast, rtol {final_rtol:.0e} (the policy's returned run)", w2, c2,
                 digits(same.eps_g, ref.eps_g)))
    res, w3, c3 = timed(lambda: solve_spec(spec))
    meta = res["meta"]
    rows.append((f"policy: solve_spec, route {meta['route']} (tried first: "
                 f"{', '.join(meta['routes_tried']) or 'none'}; concurrent: "
                 f"{meta['concurrent_runs']}, agreement {meta['agreement_digits']:.2f})", w3, c3,
                 digits(res["eps_g"], ref.eps_g)))
    if "--no-rk78" not in argv:
        slow = precision.Plan("float64", "rk78", None, precision.FLOAT64_RTOL, "tighter",
                              plan.fallback)
        old, w4, c4 = timed(lambda: verify._execute(slow, problem, grid, basis="modes",
                                                    digits=wanted, progress=None))
        rows.append(("the RK7(8) pair (the route before)", w4, c4, digits(old.eps_g, ref.eps_g)))
    rows.append(("reference: RK7(8) float64, rtol 1e-14", w_ref, c_ref, float("inf")))

    print("| run | wall s | CPU s | digits of eps_g vs the reference |")
    print("|---|---:|---:|---:|")
    for name, w, c, dg in rows:
        print(f"| {name} | {w:.2f} | {c:.2f} | {dg:.2f} |")
    print(f"\nratio policy / solve_modes_fast at the returned rtol: wall {w3 / w2:.2f}, "
          f"CPU {c3 / c2:.2f}")
    print(f"ratio policy / solve_modes_fast at default rtol: wall {w3 / w1:.2f}, CPU {c3 / c1:.2f}")
    if "--no-rk78" not in argv:
        print(f"ratio RK7(8) pair / policy: wall {w4 / w3:.2f}, CPU {c4 / c3:.2f}")
    print(f"eps_g(alpha_max) = {float(res['eps_g'][-1]):.6e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
