"""Small helpers shared by the figure modules (spectra, grids, theory-vs-simulation numbers)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def frac(x) -> Fraction:
    return Fraction(str(x)) if isinstance(x, float) else Fraction(x)


def power_law(L, beta):
    from derive import spectra
    return spectra.power_law(int(L), frac(beta))


def eigenvalues(L, beta) -> np.ndarray:
    return np.array([float(v) for v in power_law(L, beta).eigenvalues])


def log_grid(lo, hi, n, with_zero=False):
    g = np.geomspace(lo, hi, int(n))
    return np.concatenate([[0.0], g]) if with_zero else g


def finite_size_bound(N) -> float:
    """The simulator tests' criterion (tests/test_sim_vs_ode.py): rms relative deviation of one
    run from its ODE < 3/sqrt(N)."""
    return 3.0 / math.sqrt(N)


def sim_dev(sim, theory, skip=1) -> float:
    """rms relative deviation of a simulated curve from theory (the first ``skip`` points, α = 0
    included, are the same initial condition for both and are left out)."""
    from solvers.app.deviation import rms_relative
    return rms_relative(np.asarray(sim, float)[skip:], np.asarray(theory, float)[skip:])
