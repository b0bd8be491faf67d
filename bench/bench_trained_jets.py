"""Benchmark: a trained readout on the fast routes (Taylor jets / arb_mat algebra carrying v)
against the route it ran on before (RK7(8) on numpy object arrays), in the same run.

"Before" is the same code with the old dispatch forced: the precision plan without Taylor jets
(``precision.plan(..., jets=False)``: RK7(8) at its own tolerance rule) and every run on the
object-array right-hand side (``integrate_problem(..., matrix_rhs=False, short_scalars=False)``,
the generated ``rhs_levels(..., readout=v)`` plus ``readout_rates``).  "After" is
``solvers.solve`` as it is (dps = "auto": the Taylor series, verified by a second run).
Both run serially (SCALING_ODES_SERIAL=1) so that CPU time is the whole cost.

Cases: (1) bench_peers.py's trained case: erf K = M = 2, L = 1, η = 0.1, η_v = 0.3,
α ≤ 5000 (36 log-spaced points), 12 digits, level basis; (2) the power-law system of
tests/test_trained_readout.py at L = 64 (erf K = M = 2, β = 1, η = 0.5, η_v = 0.3, α ≤ 20,
10 digits), level basis.  The two routes' ε_g and v must agree to the digits both verify.

Run:  .venv/bin/python bench/bench_trained_jets.py [--quick] [--skip-old-L64]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
os.environ["SCALING_ODES_SERIAL"] = "1"
from machine_info import load_avg  # noqa: E402
import bench_peers  # noqa: E402


def l1_spec(quick):
    from decimal import Decimal
    Q, R, T = bench_peers.initial_condition()
    mat = lambda X: [[str(Decimal(x)) for x in row] for row in X]   # noqa: E731
    amax = 200.0 if quick else 5000.0
    return {"model": {"activation": "erf", "K": 2, "M": 2, "readout": "trained"},
            "data": {"L": 1, "beta": 1.0, "N": bench_peers.N},
            "training": {"eta": 0.1, "init": "explicit", "eta_readout": bench_peers.ETA_V},
            "init": {"levels": {"R": [mat(R)], "Q": [mat(Q)], "T": [mat(T), mat(T)]}},
            "solve": {"alphas": [float(a) for a in bench_peers.grid(amax)], "basis": "levels",
                      "digits": 12}}


def l64_spec():
    return {"model": {"activation": "erf", "K": 2, "M": 2, "readout": "trained"},
            "data": {"L": 64, "beta": 1.0, "N": 256},
            "training": {"eta": 0.5, "eta_readout": 0.3, "sigma_J": 0.3, "seed": 4},
            "solve": {"alpha_max": 20, "n_points": 5, "spacing": "linear", "basis": "levels",
                      "digits": 10}}


class old_route:
    """Context: solvers.solve on the route a trained readout took before (module docstring)."""

    def __enter__(self):
        from solvers.hierarchy import odes, precision
        self.mods = (odes, precision)
        self.saved = (odes.integrate_problem, precision.plan)
        plan, integrate = precision.plan, odes.integrate_problem
        precision.plan = lambda *a, **k: plan(*a, **{**k, "jets": False})

        def forced(problem, alphas, **kw):
            import dataclasses
            kw.update(matrix_rhs=False, short_scalars=False, integrator="rk78")
            if kw.get("step") is not None:          # a plan's step names its integrator
                kw["step"] = dataclasses.replace(kw["step"], integrator="rk78")
            return integrate(problem, alphas, **kw)
        odes.integrate_problem = forced
        return self

    def __exit__(self, *exc):
        odes, precision = self.mods
        odes.integrate_problem, precision.plan = self.saved


def timed(spec):
    import solvers
    w, c = time.perf_counter(), time.process_time()
    r = solvers.solve(spec)
    return r, time.perf_counter() - w, time.process_time() - c


def compare(name, spec, run_old=True):
    new, w_new, c_new = timed(spec)
    print(f"### {name}\n")
    print(f"- after:  {w_new:.1f} s wall, {c_new:.1f} s CPU; route {new.meta['route']}, "
          f"dps {new.meta.get('dps')}, agreement {new.meta.get('agreement_digits')} digits")
    if not run_old:
        print("- before: not run (--skip-old-L64)\n")
        return
    with old_route():
        old, w_old, c_old = timed(spec)
    print(f"- before: {w_old:.1f} s wall, {c_old:.1f} s CPU; RK7(8) on object arrays, "
          f"dps {old.meta.get('dps')}, agreement {old.meta.get('agreement_digits')} digits")
    e_new, e_old = np.asarray(new.eps_g, float), np.asarray(old.eps_g, float)
    dv = np.abs(np.asarray(new.v) - np.asarray(old.v)).max()
    print(f"- ratio before/after: {w_old / w_new:.1f}x wall, {c_old / c_new:.1f}x CPU")
    print(f"- max relative difference of ε_g {np.max(np.abs(e_new - e_old) / e_old):.1e}, "
          f"max |Δv| {dv:.1e}\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="L = 1 to α = 200 only")
    ap.add_argument("--skip-old-L64", action="store_true", help="L = 64: the new route only")
    args = ap.parse_args()
    print(f"## Trained readout: Taylor jets vs the object-array RK7(8)\n\nload {load_avg()}\n")
    compare(f"L = 1, erf K = M = 2, η = 0.1, α ≤ {200 if args.quick else 5000}, 12 digits",
            l1_spec(args.quick))
    if not args.quick:
        compare("L = 64, erf K = M = 2, power law β = 1, η = 0.5, α ≤ 20, 10 digits, levels",
                l64_spec(), run_old=not args.skip_old_L64)


if __name__ == "__main__":
    main()
