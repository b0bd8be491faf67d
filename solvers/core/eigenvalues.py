"""The power-law spectrum in float64, for the numeric layer (solvers/core, solvers/hierarchy) and
the simulator alike, without importing either's other code.

λ_l = λ_+ / l^(1+β), l = 1..L, with λ_+ fixed by mean_l λ_l = 1 (Tr Σ = N).  The exact version
(SymPy) is ``derive.spectra.power_law``; this one is what float64 routes start from.

>>> lam = power_law_eigenvalues(4, 1.0)
>>> round(float(lam.mean()), 12), bool(lam[0] / lam[1] == 4.0)
(1.0, True)
"""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = ["power_law_eigenvalues"]


def power_law_eigenvalues(L, beta) -> np.ndarray:
    """λ_l = λ_+ / l^(1+β), l = 1..L, float64, with mean(λ) = 1.

    Parameters
    ----------
    L : int
        Number of eigenvalues (>= 1).
    beta : real
        Exponent, > -1 (the eigenvalues must decrease).

    Raises
    ------
    ValueError
        One line naming the argument and the value.
    """
    if isinstance(L, bool) or not isinstance(L, Integral):
        raise ValueError(f"L must be an integer, got {L!r}")
    if L < 1:
        raise ValueError(f"L must be >= 1, got {L}")
    if isinstance(beta, bool) or not isinstance(beta, Real) or not math.isfinite(beta):
        raise ValueError(f"beta must be a finite real number, got {beta!r}")
    if beta <= -1:
        raise ValueError(f"beta must be > -1 (eigenvalues must decrease), got {beta}")
    lam = np.arange(1, int(L) + 1, dtype=np.float64) ** (-(1.0 + float(beta)))
    return lam / lam.mean()
