"""Limits and bounds of the one-step sRF, from the conditional tables.

* ``lambda_inf``: λ → ∞ keeps only the free mean direction, m = E[h μ0]/E[μ0²]:
  ε = E σ⋆² − E[h μ0]²/E[μ0²]  — at γ = 1 (α0 → ∞) this is the paper's (26), an upper bound on
  min_λ ε_g.
* ``lower``: E[ŷ | κ, ζ] lies in span{μ0(κ), κ μ1(κ), ζ μ1(κ)} (the bulk W0 x averages to κ W0 v̂
  plus the ζ̂ part), so ε_g ≥ min over that span of E(σ⋆ − ŷ)² — a 3 × 3 least-squares problem,
  for every α and λ.  At γ = 1 the ζ column vanishes and this is the paper's (27).
* ``best_linear``: E σ⋆² − μ1⋆², the error of the best linear predictor (the kernel/RF limit
  at infinite width and samples).
"""
from __future__ import annotations

import numpy as np

from .fixed_point import Tables


def lambda_inf(tab: Tables, m2_star: float) -> float:
    e00 = tab.E(tab.mu0 ** 2)
    if e00 == 0.0:
        return float(m2_star)
    return float(m2_star - tab.E(tab.h * tab.mu0) ** 2 / e00)


def lower(tab: Tables, m2_star: float) -> float:
    k, mu0, mu1 = tab.kappa, tab.mu0, tab.mu1
    sw = np.sqrt(tab.w)
    # least squares on √w-weighted columns: for small r, μ0 ≈ r κ μ1 and the two columns are
    # nearly parallel — lstsq with a cut-off keeps the projection well defined
    A = np.stack([sw * mu0, sw * k * mu1], axis=1)
    b = sw * tab.h
    coef = np.linalg.lstsq(A, b, rcond=1e-12)[0]
    explained = float(np.sum((A @ coef) ** 2))
    e11 = tab.E(mu1 ** 2)
    zeta_part = tab.E(tab.h1 * mu1) ** 2 / e11 if e11 > 0 else 0.0
    return float(m2_star - explained - zeta_part)
