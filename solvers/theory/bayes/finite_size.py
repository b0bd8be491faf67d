"""Finite-size extrapolation of sampled quantities: weighted least squares in 1/d.

A sampled mean y_d ± s_d at several d is fitted by y = a + b/d (weights 1/s_d²); a is the
d → ∞ extrapolation, with its standard error from the fit's covariance (the s_d are taken as
the true standard deviations, not rescaled by χ², which is returned separately so that a poor
fit is visible rather than absorbed into the error bar).
"""
from __future__ import annotations

import math

import numpy as np


def fit_inverse_d(d, y, se) -> dict:
    """Fit y = a + b/d with weights 1/se².

    Returns a, se_a, b, se_b, cov_ab, chi2 and dof (= len(d) − 2).

    Examples
    --------
    >>> r = fit_inverse_d([20, 40, 80], [0.3, 0.2, 0.15], [0.01, 0.01, 0.01])
    >>> round(r["a"], 6), round(r["b"], 6), round(r["chi2"], 9)
    (0.1, 4.0, 0.0)
    """
    d, y, se = (np.asarray(x, float) for x in (d, y, se))
    if not (d.shape == y.shape == se.shape and d.ndim == 1 and len(d) >= 2):
        raise ValueError("d, y, se: equal-length 1-D sequences of at least 2 points needed")
    if np.any(se <= 0) or np.any(d <= 0):
        raise ValueError("se and d must be > 0")
    A = np.stack([np.ones_like(d), 1.0 / d], 1)
    w = 1.0 / se ** 2
    F = A.T @ (A * w[:, None])
    cov = np.linalg.inv(F)
    a, b = cov @ (A.T @ (w * y))
    chi2 = float(np.sum(w * (y - a - b / d) ** 2))
    return {"a": float(a), "se_a": math.sqrt(cov[0, 0]), "b": float(b),
            "se_b": math.sqrt(cov[1, 1]), "cov_ab": float(cov[0, 1]), "chi2": chi2,
            "dof": len(d) - 2}
