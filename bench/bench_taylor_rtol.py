"""Which tolerance does the Taylor route need for the checking pair of ``solve`` to agree?

``runner.settle`` compares a first run (dps, rtol) with a checking run (dps + max(10, dps/4),
rtol/100) and accepts when ε_g agrees to ``digits`` significant digits.  For each spec and each
offset k this runs that pair at rtol = 10^-(digits+k) on the Taylor integrator and prints the
agreement, together with the digits each run shares with a reference (the checking run of the
largest k, i.e. the tightest tolerance measured), the order, the steps and the CPU time.

Specs: ``bench/specs/`` (``solve_*.toml``: the default-solve targets; ``rtol_*.toml``: the same
system at other L and α ranges, and the tests' small L = 4 spec), each on its own grid with
dps = estimated_dps; ``--digits`` overrides the spec's digits.

  .venv/bin/python bench/bench_taylor_rtol.py SPEC.toml [SPEC.toml ...] \\
      [--digits 12 30] [--k 0 1 2 3 5]

Markdown rows to stdout, progress to stderr.  Not a timing benchmark (run it under nice).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solvers.app.solve import problem_of  # noqa: E402
from solvers.app.spec import load_spec  # noqa: E402
from solvers.hierarchy.odes import agreement_digits, estimated_dps, integrate_problem  # noqa: E402
from solvers.hierarchy.precision import checking_dps  # noqa: E402

T0 = time.perf_counter()


def log(msg):
    print(f"[{time.perf_counter() - T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def timed(problem, alphas, dps, rtol):
    t = time.process_time()
    tr = integrate_problem(problem, alphas, basis="levels", dps=dps, rtol=rtol,
                           integrator="taylor")
    return tr, time.process_time() - t


def measure(path, digits, ks):
    spec = load_spec(path)
    problem = problem_of(spec)
    grid = spec.solve.alpha_grid()
    alphas = grid if grid[0] == 0 else [0.0] + list(grid)
    dps = estimated_dps(problem.L, digits, "levels")
    dps2 = checking_dps(dps)
    pairs = {}
    for k in sorted(ks, reverse=True):          # tightest first: it is the reference
        rtol = 10.0 ** -(digits + k)
        log(f"{Path(path).name} digits={digits} k={k}: first run dps {dps} rtol {rtol:g}")
        first = timed(problem, alphas, dps, rtol)
        log(f"  checking run dps {dps2} rtol {rtol / 100:g}")
        second = timed(problem, alphas, dps2, rtol / 100)
        pairs[k] = (first, second)
    ref = pairs[max(ks)][1][0]
    for k in sorted(ks):
        (f, tf), (s, ts) = pairs[k]
        agree = agreement_digits(f.eps_g, s.eps_g)
        acc_f = agreement_digits(f.eps_g, ref.eps_g) if k != max(ks) else float("nan")
        acc_s = agreement_digits(s.eps_g, ref.eps_g) if k != max(ks) else float("nan")
        print(f"| {spec.model.activation} K={spec.model.K} L={problem.L} α≤{grid[-1]:g} "
              f"({len(grid)} pts) | {digits} | {k} | {dps}/{dps2} | {agree:.2f} | "
              f"{acc_f:.2f} | {acc_s:.2f} | {f.stats['order']}/{s.stats['order']} | "
              f"{f.stats['n_steps']}/{s.stats['n_steps']} | {tf:.1f}/{ts:.1f} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--digits", type=int, nargs="+", default=[12, 30])
    ap.add_argument("--k", type=int, nargs="+", default=[0, 1, 2, 3, 5])
    args = ap.parse_args()
    print("| spec | digits | k (rtol = 10^-(digits+k)) | dps first/check | pair agreement | "
          "first vs ref | check vs ref | order | steps | CPU [s] |")
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for path in args.specs:
        for d in args.digits:
            measure(path, d, args.k)


if __name__ == "__main__":
    main()
