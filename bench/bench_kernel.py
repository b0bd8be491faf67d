"""Eigenlearning at scale: κ and E_g for M = 2·10⁶ power-law modes and 100 values of P.

    .venv/bin/python bench/bench_kernel.py [--quick]

Compares, in the same run, `solvers.theory.kernel.eigenlearning` (bracketed Newton in log κ,
block moments; numba) with the plain approach: scipy.optimize.brentq on the fixed-point form
κ − T − κ Σ λ/(λP + κ) with a vectorised numpy sum, on the same guaranteed bracket, followed by
a numpy pass for γ and E_g.  The plain loop runs on every 10th P (every 25th with --quick)
and its per-P time is compared with ours; both answers are compared as well.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import cpu_name, load_avg  # noqa: E402
from solvers.theory.kernel import eigenlearning, power_law  # noqa: E402
from solvers.theory.kernel.eigenlearning import bracket  # noqa: E402


def plain(lam, c2, P, T, s2):
    N, trace, inv_trace = lam.size, lam.sum(), (1.0 / lam).sum()
    br = bracket(N, trace, inv_trace, P, T)

    def f(k):
        return k - T - k * np.sum(lam / (lam * P + k))
    kappa = brentq(f, br[0], br[1], xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    kS = kappa / P
    L = lam / (lam + kS)
    g = np.sum(L * L) / P
    eps = (np.sum((1 - L) ** 2 * c2) + s2 * g) / (1 - g)
    return kappa, eps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    M = 2_000_000
    Ps = np.geomspace(1e3, 3e4, 100)
    stride = 25 if args.quick else 10
    print(f"CPU: {cpu_name()}; load average {load_avg()} at start\n")
    print(f"M = {M} modes, lambda_k = k^-2, c_k^2 = k^-2, 100 values of P in [1e3, 3e4] "
          f"(log-spaced); plain brentq loop on every {stride}th P.\n")
    # warm the numba cache (compilation is not what users pay per call)
    eigenlearning(power_law(2, 5000, 2), [10, 20], 0.0)
    print("| T, sigma^2 | ours: spectrum + 100 P (s), 3 runs | ours per P (ms) | "
          "brentq per P (ms) | ratio | max rel. diff kappa | max rel. diff E_g |")
    print("|---|---|---|---|---|---|---|")
    for T, s2 in ((0.0, 0.0), (1e-2, 1e-2)):
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            spec = power_law(2, M, 2)
            pts = eigenlearning(spec, Ps, T, s2)
            runs.append(time.perf_counter() - t0)
        best = min(runs)
        sub = list(range(0, 100, stride))
        t0 = time.perf_counter()
        ref = [plain(spec.lam, spec.c2, Ps[i], T, s2) for i in sub]
        t_plain = (time.perf_counter() - t0) / len(sub)
        dk = max(abs(pts[i].kappa - r[0]) / r[0] for i, r in zip(sub, ref))
        de = max(abs(pts[i].eps_g - r[1]) / r[1] for i, r in zip(sub, ref))
        ours = best / len(Ps)
        print(f"| {T:g}, {s2:g} | {' / '.join(f'{r:.2f}' for r in runs)} | {1e3 * ours:.1f} | "
              f"{1e3 * t_plain:.0f} | {t_plain / ours:.0f}x | {dk:.1e} | {de:.1e} |")
        sys.stdout.flush()
    print(f"\nload average {load_avg()} at the end")


if __name__ == "__main__":
    main()
