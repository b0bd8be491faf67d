"""One timed run of a headline case, importing the package from the current directory.

    (cd TREE && python bench/before_after_one.py CASE)   -- driven by bench/before_after.py

The driver runs this file from the *after* tree with the working directory in either tree, so
the requests (the specs below, the grids) are the same on both sides and only the package
differs.  Cases (erf, K = M = 2, β = 1, σ_J = 1/100, seed 0 unless said):

levels:    the L = 64 level-basis headline: order 1, η = 1/10, N = 1024, α ∈ [0, 3500] on
           bench_levels' grid, flint RK7(8), rtol 1e-11, dps = estimated_dps(64, 8, "levels").
solve64:   ``solve`` of bench/specs/solve_L64_default.toml (levels, dps "auto", 12 digits:
           the default request before the default route became modes/float64), the
           verifying pair run serially, through solvers.app.solve.solve_spec.
solve16:   ``solve`` of bench/specs/solve_L16_d30.toml (L = 16, 30 digits, α ≤ 300), likewise.
simulate:  the whole command ``scaling-odes simulate`` at its defaults (N = 1024, L = 16,
           α ≤ 2000, η = 1/10, the default generator) in a child process.
gen-erf4:  generation of erf/erf K = M = 4 into the empty cache the driver gives: the modules a
           solve of that system waits for (solver and Taylor jets), printed and imported.
gen-relu4: the same for relu/relu K = M = 4.
modes:     the Figure 6 modes run of bench/bench_modes_fast.py section (b), β = 1, rtol 1e-8.
warm:      untimed: fills the side's cache (the simulator's compiled kernel, bytecode) with
           short runs of the routes above, so that no timed run pays for a one-time build.

CPU time is this process's plus that of its finished children (the Taylor jets' process of a
generation, the simulate command), threads included.  Prints one JSON line: case, wall, cpu,
load1 (at the start), value (a number of the result, the same on both sides if they compute the
same thing) and solvers (the package file imported, to check which tree ran).
"""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.path.join(HERE, "specs")
# the editable install of a branch must not fill in modules missing from the tree run here
STRIP_EDITABLE = (
    "import os, sys\n"
    "sys.path.insert(0, os.getcwd())\n"
    "sys.meta_path = [f for f in sys.meta_path\n"
    "                 if '__editable__' not in getattr(type(f), '__module__', '')\n"
    "                 and '__editable__' not in getattr(f, '__module__', '')]\n")
exec(STRIP_EDITABLE)

# the command line in a child, importing from the working directory like this process
CLI = STRIP_EDITABLE + (
    "import solvers\n"
    "print('solvers=' + solvers.__file__, file=sys.stderr)\n"
    "from solvers.app.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n")


def cpu() -> float:
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + child.ru_utime + child.ru_stime


def levels():
    from fractions import Fraction
    from derive import spectra
    from derive.keys import SystemKey
    from solvers.core.problem import Problem, random_init
    from solvers.hierarchy.odes import estimated_dps, integrate_problem
    sys.path.insert(0, HERE)
    import bench_levels
    s = spectra.power_law(64, 1)
    prob = Problem(SystemKey("erf", 2, 2), s, Fraction(1, 10), 1,
                   random_init(2, 2, 1024, s, Fraction(1, 100), 0))
    grid, dps = bench_levels.log_grid(3500, 15), estimated_dps(64, 8, "levels")
    return lambda: float(integrate_problem(prob, grid, basis="levels", arithmetic="flint",
                                           dps=dps, rtol=1e-11).eps_g[-1])


def solve(spec_file):
    os.environ["SCALING_ODES_SERIAL"] = "1"
    from solvers.app.spec import load_spec
    from solvers.app.solve import solve_spec
    spec = load_spec(spec_file)
    return lambda: float(solve_spec(spec)["eps_g"][-1])


def simulate(alpha_max=2000):
    folder = tempfile.mkdtemp(prefix="before_after_sim_")
    spec, out = os.path.join(folder, "spec.toml"), os.path.join(folder, "out.json")
    sys.path.insert(0, HERE)
    from simulate_spec import spec_text
    with open(spec, "w") as f:
        f.write(spec_text(alpha_max=alpha_max))

    def run():
        done = subprocess.run([sys.executable, "-c", CLI, "simulate", spec, "-o", out,
                               "--no-progress"], capture_output=True, text=True)
        imported = [ln for ln in done.stderr.splitlines() if ln.startswith("solvers=")]
        if done.returncode or imported != [f"solvers={solvers_file()}"]:
            raise SystemExit(f"simulate failed or imported another tree: {done.stderr[-2000:]}")
        with open(out) as f:
            return json.load(f)["eps_g"][-1]
    return run


def generation(activation):
    from derive.keys import SystemKey
    from solvers.core import registry
    key = SystemKey(activation, 4, 4)
    if os.listdir(os.environ["SCALING_ODES_CACHE"]):
        raise SystemExit("generation cases need an empty SCALING_ODES_CACHE")

    def run():
        registry.ensure_printed(key)
        registry.load(key, "mpmath")
        registry.load(key, "taylor")
        return 0.0
    return run


def modes():
    import numpy as np
    from solvers.hierarchy import modes_fast as mf
    inp = mf.random_inputs(40, 40, 512, L=512, beta=1.0, eta=0.01, sigma_J=1e-6, seed=0)
    alphas = [0.0] + list(np.logspace(0, np.log10(5e4), 61))
    return lambda: float(mf.solve_modes_fast(inp, alphas, rtol=1e-8, keep_states=False).eps_g[-1])


def warm():
    """Short runs that leave in the cache whatever a route builds once."""
    simulate(alpha_max=20)()
    folder = tempfile.mkdtemp(prefix="before_after_warm_")
    short = os.path.join(folder, "solve.toml")
    with open(os.path.join(SPECS, "solve_L16_d30.toml")) as f, open(short, "w") as g:
        g.write(f.read().replace("alpha_max = 300", "alpha_max = 5"))
    solve(short)()
    levels()
    modes()
    return lambda: 0.0


def solvers_file():
    import solvers
    return solvers.__file__


CASES = {
    "levels": levels,
    "solve64": lambda: solve(os.path.join(SPECS, "solve_L64_default.toml")),
    "solve16": lambda: solve(os.path.join(SPECS, "solve_L16_d30.toml")),
    "simulate": simulate,
    "gen-erf4": lambda: generation("erf"),
    "gen-relu4": lambda: generation("relu"),
    "modes": modes,
    "warm": warm,
}


def main(case):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    run = CASES[case]()
    load = os.getloadavg()[0]
    w, c = time.perf_counter(), cpu()
    value = run()
    w, c = time.perf_counter() - w, cpu() - c
    print(json.dumps({"case": case, "wall": round(w, 3), "cpu": round(c, 3), "load1": load,
                      "value": value, "solvers": solvers_file()}))


if __name__ == "__main__":
    main(sys.argv[1])
