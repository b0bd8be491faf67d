"""An erratum check: the slides' effective temperature read literally.

The slides write the effective ridge as "T + ⟨∫(f − y)²⟩_MF".  The replica computation gives
T + (posterior variance only) = T + Σ m λ (1 − L) — eigenlearning's κ.  Read literally, with the
bias included, κ_lit = T + Σ m [λ (1 − L) + (1 − L)² c²], with L = λ/(λ + κ_lit/P), which
depends on the target.  With E_g evaluated by the eigenlearning formula at κ_lit this is 12–14 %
above eigenlearning (and the Monte Carlo) for a = b = 2, ridgeless, P = 16…256
(docs/theory/kernel-curves.md, Errata).  Not offered as a method; kept here, outside the package,
to document the reading; tests/test_kernel.py loads it by path.

    nice .venv/bin/python tools/kernel_slides_erratum.py      # the ratios at a = b = 2, ridgeless

Root finding: dividing by κ, h(κ) = T/κ + Σ m λ/(λP + κ) + Σ m κ c²/(λP + κ)² = 1; at
eigenlearning's κ, h > 1 (the bias term is positive), and h < 1 beyond T + Σ m (λ + c²):
a guaranteed bracket for brentq in log κ.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from solvers.theory.kernel.eigenlearning import Point, _Prepared, eigenlearning
from solvers.theory.kernel.spectrum import KernelSpectrum


def slides_literal(spec: KernelSpectrum, Ps, T=0.0, sigma2=0.0) -> list[Point]:
    prep = _Prepared(spec, moments=False)
    lam, mult, c2 = prep.lam, prep.mult, prep.c2
    out = []
    for P, eig in zip(Ps, eigenlearning(spec, Ps, T, sigma2)):
        P = float(P)
        if eig.kappa == 0.0:
            out.append(eig)       # P ≥ rank, ridgeless: nothing to correct
            continue

        def F(u):
            k = math.exp(u)
            d = lam * P + k
            h = T / k + np.dot(mult, lam / d) + np.dot(mult, k * c2 / d ** 2)
            return math.log(h)

        lo = math.log(eig.kappa)
        hi = math.log(T + float(np.dot(mult, lam + c2))) + 1e-12
        u = brentq(F, lo, hi, xtol=1e-15, rtol=1e-15)
        kappa = math.exp(u)
        kS = kappa / P
        L = lam / (lam + kS)
        q = kS / (lam + kS)
        gamma = float(np.dot(mult, L * L)) / P
        omg = 1.0 - gamma
        bias = float(np.dot(mult, q * q * c2))
        out.append(Point(P, kappa, kS, gamma, omg, bias, (bias + sigma2 * gamma) / omg,
                         float(np.dot(mult, L))))
    return out


def main():
    from solvers.theory.kernel import power_law
    spec = power_law(a=2, M=2000, b=2)
    Ps = [16, 64, 256]
    for lit, eig in zip(slides_literal(spec, Ps), eigenlearning(spec, Ps, 0.0)):
        print(f"P = {int(lit.P):4d}: E_g literal / eigenlearning = {lit.eps_g / eig.eps_g:.4f}")


if __name__ == "__main__":
    main()
