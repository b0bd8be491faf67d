"""The command line's modes route against the plain call of the stiff solver, in one run.

Spec: erf K = M = 3, L = 32, β = 0.5, η = 0.5, N = 1024, seed 0, α ≤ 5000 (200 log-spaced
points), basis = "modes", dps = "auto", digits = 9.  Interleaved, ``--reps`` times (the order
alternates between repetitions, so a drift of the machine's load hits both alike):

1. ``solve_modes_fast(problem, grid, rtol=r)`` in this process, r the tolerance of the run the
   policy returns (equal tolerance) — the plain call a user would write;
2. ``scaling-odes solve spec.toml`` in a child process: the user's path, start-up included
   (``meta.route``: the RODAS4 pair, ε_g evaluated exactly from the float64 states, the first
   run in a forked grandchild when two CPUs are free).

Once: the plain call at its default rtol 1e-8.  Wall and CPU seconds (CPU: this process and its
reaped children) and the load average are printed per repetition; on a shared machine only the
ratios measured in the same run mean something.

Digits of ε_g are counted against a reference: ``--reference=FILE`` (written by
``--make-reference=FILE``: the modes basis in python-flint arb, Taylor integrator, 30 digits,
rtol 1e-14 — an independent arithmetic and integrator; ~30 min on a loaded machine), else the
RK7(8) in float64 at rtol 1e-14 (its float64 ε_g evaluation caps it near 9 digits here).

    python bench/bench_modes_route.py [--reps=3] [--digits=9] [--quick] [--reference=FILE]
    python bench/bench_modes_route.py --make-reference=FILE [--quick]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from specs import erf_modes  # noqa: E402  (the spec the modes-route tests use)


def cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed(fn):
    w, c = time.perf_counter(), cpu()
    out = fn()
    return out, time.perf_counter() - w, cpu() - c


def digits(a, b) -> float:
    from solvers.hierarchy.verify import agreement_digits
    return agreement_digits(a, b)


def option(argv, name, default=None):
    for a in argv:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


def spec_text(quick: bool, wanted: int) -> str:
    K, L, amax = (2, 16, 2000) if quick else (3, 32, 5000)
    return erf_modes(K, L, amax, digits=wanted)


def make_reference(path: Path, text: str) -> None:
    from solvers.app.solve import problem_of
    from solvers.app.spec import load_spec
    from solvers.hierarchy.odes import integrate_problem
    spec = load_spec(_write(Path(tempfile.mkdtemp()), text))
    started = time.perf_counter()
    ref = integrate_problem(problem_of(spec), spec.solve.alpha_grid(), basis="modes",
                            arithmetic="flint", dps=30, rtol=1e-14, integrator="taylor")
    path.write_text(json.dumps({"spec": text, "dps": 30, "rtol": 1e-14, "integrator": "taylor",
                                "wall_s": time.perf_counter() - started,
                                "eps_g": [str(e.mid()) if hasattr(e, "mid") else str(e)
                                          for e in ref.eps_g]}))


def _write(d: Path, text: str) -> Path:
    p = d / "spec.toml"
    p.write_text(text)
    return p


def reference(argv, text, problem, grid):
    """(ε_g of the reference, its description): ``--reference=FILE`` (waited for up to an hour
    when it is still being made), else the RK7(8) in float64 at rtol 1e-14."""
    import mpmath
    from solvers.hierarchy.odes import integrate_problem
    name = option(argv, "reference")
    if name:
        path = Path(name)
        for _ in range(360):
            if path.exists():
                break
            time.sleep(10)
        data = json.loads(path.read_text())
        if tomllib.loads(data["spec"]) != tomllib.loads(text):   # the spec, not its spelling
            raise SystemExit("the reference file was made for another spec")
        return ([mpmath.mpf(e) for e in data["eps_g"]],
                f"flint arb, Taylor, {data['dps']} digits, rtol {data['rtol']:g} "
                f"({data['wall_s']:.0f} s)")
    ref = integrate_problem(problem, grid, basis="modes", arithmetic="float64", rtol=1e-14)
    return ref.eps_g, "RK7(8) float64, rtol 1e-14"


def main(argv) -> int:
    import mpmath
    from solvers.app.solve import problem_of
    from solvers.app.spec import load_spec
    from solvers.hierarchy import precision
    from solvers.hierarchy.modes_fast import solve_modes_fast

    quick = "--quick" in argv
    wanted = int(option(argv, "digits", 9))
    text = spec_text(quick, wanted)
    if option(argv, "make-reference"):
        make_reference(Path(option(argv, "make-reference")), text)
        return 0
    reps = int(option(argv, "reps", 3))
    work = Path(tempfile.mkdtemp())
    path = _write(work, text)
    spec = load_spec(path)
    problem = problem_of(spec)
    grid = spec.solve.alpha_grid()
    plan = precision.plan_for(problem, "modes", "auto", wanted)
    final_rtol = plan.faster.check.rtol
    exe = Path(sys.executable).parent / "scaling-odes"
    env = dict(os.environ, SCALING_ODES_PROGRESS="off")
    print(f"# {' '.join(text.split())}")
    print(f"# {os.cpu_count()} CPUs; the returned run's rtol {final_rtol:.0e}")
    solve_modes_fast(problem, grid[:3], rtol=1e-6)          # warm-up (imports, BLAS)

    ref, ref_name = reference(argv, text, problem, grid)
    rows = []            # (repetition, run, load, wall, cpu, eps_g)

    plain_default, w0, c0 = timed(lambda: solve_modes_fast(problem, grid))
    rows.append(("—", "solve_modes_fast, default rtol 1e-8", os.getloadavg()[0], w0, c0,
                 plain_default.eps_g))
    ratios = []
    for rep in range(reps):
        got = {}

        def plain():
            load = os.getloadavg()[0]
            tr, w, c = timed(lambda: solve_modes_fast(problem, grid, rtol=final_rtol))
            got["plain"] = (w, c)
            rows.append((rep + 1, f"solve_modes_fast, rtol {final_rtol:.0e}", load, w, c,
                         tr.eps_g))
            print(f"plain {rep + 1}: wall {w:.1f} s, CPU {c:.1f} s, load {load:.1f}, digits "
                  f"{digits(tr.eps_g, ref):.2f}", flush=True)

        def cli():
            load = os.getloadavg()[0]
            out = work / f"out{rep}.json"
            proc, w, c = timed(lambda: subprocess.run([str(exe), "solve", str(path), "-o",
                                                       str(out)], env=env,
                                                      capture_output=True, text=True))
            if proc.returncode != 0:
                raise SystemExit(f"scaling-odes solve failed: {proc.stderr.strip()}")
            res = json.loads(out.read_text())
            meta = res["meta"]
            got["cli"] = (w, c)
            rows.append((rep + 1, f"`scaling-odes solve`: route {meta['route']} (tried before: "
                                  f"{', '.join(meta['routes_tried']) or 'none'}; pair agreement "
                                  f"{meta['agreement_digits']:.2f}; concurrent "
                                  f"{meta['concurrent_runs']})", load, w, c,
                         [mpmath.mpf(e) for e in res["eps_g"]]))
            print(f"CLI {rep + 1}: wall {w:.1f} s, CPU {c:.1f} s, load {load:.1f}, route "
                  f"{meta['route']}, agreement {meta['agreement_digits']}, digits "
                  f"{digits(rows[-1][-1], ref):.2f}", flush=True)

        for step in ((plain, cli) if rep % 2 == 0 else (cli, plain)):
            step()
        ratios.append((got["cli"][0] / got["plain"][0], got["cli"][1] / got["plain"][1]))
    print(f"\n| repetition | run | load avg (1 min) | wall s | CPU s | digits of eps_g |")
    print("|---|---|---:|---:|---:|---:|")
    for rep, name, load, w, c, eps in rows:
        print(f"| {rep} | {name} | {load:.1f} | {w:.1f} | {c:.1f} | {digits(eps, ref):.2f} |")
    print(f"\ndigits: minimum over alpha of the agreement with the reference, {ref_name}")
    for i, (rw, rc) in enumerate(ratios):
        print(f"repetition {i + 1}: CLI / solve_modes_fast at rtol {final_rtol:.0e}: "
              f"wall {rw:.2f}, CPU {rc:.2f}")
    ws = sorted(r[0] for r in ratios)
    cs = sorted(r[1] for r in ratios)
    print(f"median: wall {ws[len(ws) // 2]:.2f}, CPU {cs[len(cs) // 2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
