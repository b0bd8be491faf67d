"""One timed run of a benchmark case, importing the package from the current directory.

    (cd TREE && python bench/before_after_one.py levels|modes)   -- driven by bench/before_after.sh
levels: the L = 64 level-basis headline (erf K = M = 2, order 1, β = 1, η = 1/10, N = 1024,
        σ_J = 1/100, seed 0, α ∈ [0, 3500] on bench_levels' grid, flint RK7(8), rtol 1e-11,
        dps = estimated_dps(64, 8, "levels")), as in bench/bench_levels.py.
modes:  the Figure 6 modes run of bench/bench_modes_fast.py section (b), β = 1, rtol 1e-8.
default: ``solve`` of bench/specs/solve_L64_default.toml at its defaults (dps "auto", the
        verifying pair run serially), through solvers.app.solve.solve_spec.
Prints: case wall cpu load1 eps_last
"""
import os, sys, time
sys.path.insert(0, os.getcwd())
# the editable install of the branch must not fill in modules missing from this tree
sys.meta_path = [f for f in sys.meta_path if "__editable__" not in getattr(type(f), "__module__", "")
                 and "__editable__" not in getattr(f, "__module__", "")]
import numpy as np
from fractions import Fraction

case = sys.argv[1]
if case == "levels":
    from derive import spectra
    from derive.hierarchy import SystemKey
    try:
        from solvers.core.problem import Problem, random_init
    except ImportError:
        from solvers.problem import Problem, random_init
    try:
        from solvers.hierarchy.odes import estimated_dps, integrate_problem
    except ImportError:
        from solvers.odes import estimated_dps, integrate_problem
    s = spectra.power_law(64, 1)
    prob = Problem(SystemKey("erf", 2, 2), s, Fraction(1, 10), 1,
                   random_init(2, 2, 1024, s, Fraction(1, 100), 0))
    sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
    import bench_levels
    grid = bench_levels.log_grid(3500, 15)
    dps = estimated_dps(64, 8, "levels")
    load = os.getloadavg()[0]
    w, c = time.perf_counter(), time.process_time()
    tr = integrate_problem(prob, grid, basis="levels", arithmetic="flint", dps=dps, rtol=1e-11)
    w, c = time.perf_counter() - w, time.process_time() - c
    print(f"levels {w:.2f} {c:.2f} {load:.2f} {float(tr.eps_g[-1]):.12e} fevals={tr.stats.get('n_fevals')}")
elif case == "default":
    os.environ["SCALING_ODES_SERIAL"] = "1"
    from solvers.app.spec import load_spec
    from solvers.app.solve import solve_spec
    spec = load_spec(os.path.join(os.path.dirname(os.path.abspath(__file__)), "specs",
                                  "solve_L64_default.toml"))
    load = os.getloadavg()[0]
    w, c = time.perf_counter(), time.process_time()
    out = solve_spec(spec)
    w, c = time.perf_counter() - w, time.process_time() - c
    print(f"default {w:.2f} {c:.2f} {load:.2f} {float(out['eps_g'][-1]):.12e} "
          f"route={out['meta'].get('route')}")
else:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        from solvers.hierarchy import modes_fast as mf
    except ImportError:
        from solvers import modes_fast as mf
    inp = mf.random_inputs(40, 40, 512, L=512, beta=1.0, eta=0.01, sigma_J=1e-6, seed=0)
    alphas = [0.0] + list(np.logspace(0, np.log10(5e4), 61))
    load = os.getloadavg()[0]
    w, c = time.perf_counter(), time.process_time()
    tr = mf.solve_modes_fast(inp, alphas, rtol=1e-8, keep_states=False)
    w, c = time.perf_counter() - w, time.process_time() - c
    print(f"modes {w:.2f} {c:.2f} {load:.2f} {float(tr.eps_g[-1]):.12e} steps={tr.stats['n_steps']}")
