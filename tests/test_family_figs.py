"""The label-noise floor (gallery Figure F2, solvers.theory.floor): its Gaussian averages against
quadrature, and the floor against the scalar closed form it reduces to for one hidden unit."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from solvers.app.gallery.family_figs import floor_estimate
from solvers.theory.floor import derivative_moment

pytestmark = [pytest.mark.closed_form]  # oracle (tests/conftest.py)


def _gprime(x):
    return math.sqrt(2 / math.pi) * np.exp(-x * x / 2)


@pytest.mark.parametrize("idx", [[0, 1], [0, 0], [0, 0, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1]])
def test_erf_moments_against_gauss_hermite(idx):
    Q = np.array([[0.9, 0.3], [0.3, 1.2]])
    # 2-d Gauss-Hermite with 60 nodes per axis: the integrand is smooth and Gaussian-damped,
    # so the rule is exact to rounding (~1e-15 relative)
    t, w = np.polynomial.hermite_e.hermegauss(60)
    Lc = np.linalg.cholesky(Q)
    z1, z2 = np.meshgrid(t, t, indexing="ij")
    x = np.stack([Lc[0, 0] * z1, Lc[1, 0] * z1 + Lc[1, 1] * z2])
    vals = np.prod([_gprime(x[i]) for i in idx], axis=0)
    ref = float(np.sum(np.outer(w, w) * vals) / (2 * math.pi))
    assert abs(derivative_moment("erf", Q, idx) / ref - 1) < 1e-12


def test_one_unit_floor_is_the_scalar_closed_form():
    # K = 1: A X + X A − η B X = η A is scalar, X = η a / (2a − η b), ε = a X / 2 with
    # a = <g'²>, b = <g'⁴> at x ~ N(0, q) (v = 1): closed forms (2/π)/√(1+2q), (4/π²)/√(1+4q)
    q, eta = 0.8, 0.3
    a = (2 / math.pi) / math.sqrt(1 + 2 * q)
    b = (4 / math.pi ** 2) / math.sqrt(1 + 4 * q)
    expected = a * (eta * a / (2 * a - eta * b)) / 2
    assert abs(floor_estimate({"K": 1, "eta": eta}, [[q]]) / expected - 1) < 1e-13


@pytest.mark.parametrize("idx", [[0, 1], [0, 0], [0, 0, 1, 1], [0, 1, 2], [0, 1, 2, 3],
                                 [0, 0, 2, 3]])
def test_relu_derivative_moments_against_monte_carlo(idx):
    """<Π θ(x_a)>: the orthant probability of the distinct units, against 4e6 Gaussian
    samples (standard error ≤ 2.5e-4: 6 SE = 1.5e-3)."""
    ref = float(np.mean(np.all(_signs()[:, sorted(set(idx))], axis=1)))
    assert abs(derivative_moment("relu", _Q4, idx) - ref) < 1.5e-3


_Q4 = np.array([[1.0, 0.3, -0.2, 0.5], [0.3, 1.4, 0.1, 0.2], [-0.2, 0.1, 0.8, -0.3],
                [0.5, 0.2, -0.3, 1.1]])


@functools.lru_cache(maxsize=1)
def _signs():
    """One sample for every case: the signs of 4e6 draws of x ~ N(0, _Q4)."""
    return np.random.default_rng(0).multivariate_normal(np.zeros(4), _Q4, size=4_000_000) > 0
