"""Benchmark: the four-field orthant probability P4 (ReLU students at order 2) in each number
context of solvers/core/orthant.py, against the plainest routes a user would write.

Plain routes, measured in the same run on the same correlations:
  float64  scipy.stats.multivariate_normal(cov=R).cdf(0) of -z (Genz's randomised QMC; its
           default tolerance), per call;
  mpmath   mpmath.quad of Plackett's integrand with the default tanh-sinh rule at the same dps.
Ours: float64 graded Gauss–Legendre (checked against a second rule), vectorised over arrays
too; mpmath tanh-sinh at 10 guard digits with its error estimate checked (the plain route plus that
check); flint ``acb.integral`` (rigorous), or tanh-sinh for nearly aligned fields.
Accuracy against the mpmath route at 60 digits (Orthant4's evaluation, a higher precision).

    .venv/bin/python bench/bench_orthant.py
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import mpmath  # noqa: E402
import numpy as np  # noqa: E402

from solvers.core import orthant as O  # noqa: E402
from solvers.core.orthant_ray import ray_derivative  # noqa: E402

CASES = {"moderate": ["0.3", "0.1", "-0.2", "0.25", "0.4", "0.05"],
         "aligned (r12 = 0.99)": ["0.99", "0.5", "0.5", "0.5", "0.5", "0.3"]}


def timed(fn, n):
    t0 = time.process_time()
    for _ in range(n):
        out = fn()
    return (time.process_time() - t0) / n, out


def main():
    from flint import arb
    from solvers.core.numbers import FlintContext
    from scipy.stats import multivariate_normal
    from derive.family.orthant import orthant4_digits

    print(f"load average {os.getloadavg()[0]:.1f}")
    for name, r in CASES.items():
        with mpmath.workdps(70):
            ref = orthant4_digits(r, 60)
        R = np.eye(4)
        for (a, b), x in zip(O.PAIRS, r):
            R[a, b] = R[b, a] = float(x)
        print(f"\n{name}: P4 = {mpmath.nstr(ref, 20)}")
        t_sc, v_sc = timed(lambda: multivariate_normal(mean=np.zeros(4), cov=R).cdf(np.zeros(4)),
                           5)
        t_f, v_f = timed(lambda: O.orthant4_float(*[float(x) for x in r]), 20)
        rv = [np.full(1000, float(x)) for x in r]
        t_v, _ = timed(lambda: O.orthant4_float(*rv), 3)
        print(f"  float64  scipy mvn.cdf   {t_sc * 1e3:8.2f} ms  err {abs(v_sc - float(ref)):.1e}")
        print(f"  float64  ours            {t_f * 1e3:8.2f} ms  err {abs(v_f - float(ref)):.1e}"
              f"  ({t_sc / t_f:.1f}x faster); 1000 at once {t_v * 1e3:.1f} ms")
        for dps in (30, 100):
            with mpmath.workdps(dps):
                rr = [mpmath.mpf(x) for x in r]

                def plain():
                    f = lambda t: ray_derivative(rr, t, mpmath.sqrt, mpmath.asin, mpmath.pi)  # noqa: E731
                    return mpmath.mpf(1) / 16 + mpmath.quad(f, [0, 1])
                t_p, v_p = timed(plain, 2)
                t_m, v_m = timed(lambda: O.orthant4_mpmath(*rr), 2)
            with FlintContext(dps):            # flint's precision scoped, restored on exit
                t_a, v_a = timed(lambda: O.orthant4_arb(*[arb(x) for x in r]), 2)
                with mpmath.workdps(dps + 10):
                    err_a = abs(mpmath.mpf(v_a.mid().str(dps + 5, radius=False)) - ref)
            with mpmath.workdps(dps + 10):
                print(f"  {dps:3d} dps  mpmath tanh-sinh {t_p * 1e3:8.1f} ms  "
                      f"err {mpmath.nstr(abs(v_p - ref), 2)}")
                print(f"  {dps:3d} dps  mpmath ours      {t_m * 1e3:8.1f} ms  "
                      f"err {mpmath.nstr(abs(v_m - ref), 2)}  ({t_p / t_m:.1f}x)")
                print(f"  {dps:3d} dps  flint ours       {t_a * 1e3:8.1f} ms  "
                      f"err {mpmath.nstr(err_a, 2)}  ({t_p / t_a:.1f}x vs tanh-sinh)")


if __name__ == "__main__":
    main()
