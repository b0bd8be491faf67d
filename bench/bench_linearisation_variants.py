"""The numeric route of plateau / asymptotic (solvers.theory.variants) against the plainest
alternatives, measured in the same run (CPU seconds, one thread):

* the whole plateau: the numeric route (Newton from the ODE state, flint eigenvalues, a verifying
  rerun at 1.5x the digits) against the erf closed-form route (closed-form fixed point,
  float64 eigenvalues), erf K = M = 2, order 1, random teacher;
* the eigenvalues of the generated Jacobian at the plateau: python-flint's approximate
  ``acb_mat.eig`` against ``mpmath.eig`` at the same digits (what a user would write).

    .venv/bin/python bench/bench_linearisation_variants.py [--L 4 8 16] [--dps 30 45]
"""
from __future__ import annotations

import argparse
import time
from fractions import Fraction

import mpmath


def cpu(f):
    t = time.process_time()
    out = f()
    return time.process_time() - t, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--L", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--dps", type=int, nargs="+", default=[30, 45])
    args = ap.parse_args()
    from derive import spectra
    from derive.keys import SystemKey
    from solvers.core.numbers import MpmathContext
    from solvers.core.problem import Problem, random_init
    from solvers.theory.fixed_points import Setup, eigenvalues
    from solvers.theory.plateau import (SymmetricTeacher, escape_rate, plateau_fixed_point,
                                        plateau_height)
    from solvers.theory.variants import plateau_numeric, symmetric_teacher_modes
    key = SystemKey("erf", 2, 2)
    print("whole plateau, erf K = M = 2, order 1 (CPU s)")
    print(f"{'L':>4} {'closed form':>12} {'numeric':>9} {'ratio':>7} {'|d escape|':>11}")
    for L in args.L:
        spectrum = spectra.power_law(L, 1)
        init = random_init(2, 2, 100 * L, spectrum, Fraction(1, 100), 3)
        tea = SymmetricTeacher.from_modes(init.T)
        prob = Problem(key, spectrum, Fraction(1, 2), 1, init)

        def closed():
            fp = plateau_fixed_point(2, spectrum, tea, prob.eta, 1, dps=30)
            return escape_rate(fp), plateau_height(fp)
        tc, (esc_c, _) = cpu(closed)
        tn, r = cpu(lambda: plateau_numeric(prob, symmetric_teacher_modes(2, tea), dps=30,
                                            digits=20))
        print(f"{L:>4} {tc:>12.2f} {tn:>9.2f} {tn / tc:>7.1f} "
              f"{abs(float(r['escape']) - esc_c):>11.1e}")
        if L == args.L[-1]:
            y = r["y"]
            T_packed = symmetric_teacher_modes(2, tea)
    print(f"\neigenvalues of the L = {args.L[-1]} plateau Jacobian ({y.size} x {y.size}), CPU s")
    print(f"{'dps':>4} {'flint approx':>13} {'mpmath.eig':>11} {'ratio':>7} {'max |diff|':>11}")
    for dps in args.dps:
        with MpmathContext(dps) as ctx:
            st = Setup.build(key, spectrum, T_packed, prob.eta, 1, ctx)
            yy = y.copy()
            J = st.jac(yy)
            tf, ev = cpu(lambda: eigenvalues(J, dps))
            tm, (evm, _) = cpu(lambda: mpmath.eig(mpmath.matrix(J.tolist())))
            diff = max(min(abs(a - b) for b in evm) for a in ev)
        print(f"{dps:>4} {tf:>13.2f} {tm:>11.2f} {tm / tf:>7.1f} {mpmath.nstr(diff, 2):>11}")


if __name__ == "__main__":
    main()
