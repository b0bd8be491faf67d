"""Independent numerical checks of the closed-form Gaussian expectations in derive/integrals.py.

    I2(C) = <g(z1) g(z2)>,  I3(C) = <g'(z1) z2 g(z3)>,  I4(C) = <g'(z1) g'(z2) g(z3) g(z4)>

for z ~ N(0, C), with g(x) = erf(x / sqrt(2)) ("erf") or g(x) = x ("linear").

Routes: tensor-product Gauss-Hermite quadrature in whitened coordinates (z = chol(C) u),
Monte Carlo with a sample standard error, a 50-digit mpmath.quad of the 2-d I2 integral, and
symbolic structural facts (I3 independent of C22 and linear in C12, C23; exact coefficients).
"""
from __future__ import annotations

import functools

import mpmath as mp
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import erf

from derive.integrals import ACTIVATIONS, I2, I3, I4, covariance_symbols

pytestmark = [pytest.mark.quadrature]  # oracle (tests/conftest.py)

FUNCS = {2: I2, 3: I3, 4: I4}  # keyed by the dimension of the covariance each one takes
SEEDS = [0, 1, 2, 3, 4]


# ----------------------------------------------------------------------------- helpers

def _g(act, x):
    return erf(x / np.sqrt(2.0)) if act == "erf" else x


def _gp(act, x):
    return np.sqrt(2.0 / np.pi) * np.exp(-0.5 * x * x) if act == "erf" else np.ones_like(x)


def integrand(act, d, z):
    """The integrand of I_d at points z (shape (d, npts))."""
    if d == 2:
        return _g(act, z[0]) * _g(act, z[1])
    if d == 3:
        return _gp(act, z[0]) * z[1] * _g(act, z[2])
    return _gp(act, z[0]) * _gp(act, z[1]) * _g(act, z[2]) * _g(act, z[3])


@functools.lru_cache(maxsize=None)
def _closed_fn(act, d):
    S = covariance_symbols(d)
    syms = [S[a, b] for a in range(d) for b in range(a, d)]
    return sp.lambdify(syms, FUNCS[d](act, S), "mpmath")


def closed(act, C, dps=30):
    """Closed form at the numerical covariance C, evaluated with `dps` digits (mpf result)."""
    d = C.shape[0]
    args = [C[a, b] for a in range(d) for b in range(a, d)]
    with mp.workdps(dps):
        return +_closed_fn(act, d)(*[mp.mpf(float(x)) for x in args])


def make_cov(A, eps, top):
    """C = A A^T / n + eps I, rescaled so that max(diag C) == top (correlations unchanged)."""
    n = A.shape[0]
    C = A @ A.T / n + eps * np.eye(n)
    C = C * (top / np.max(np.diag(C)))
    return 0.5 * (C + C.T)


def random_cov(seed, d, top_range=(0.3, 1.0)):
    rng = np.random.default_rng([seed, d])
    A = rng.normal(size=(d, d))
    return make_cov(A, rng.uniform(0.02, 0.3), rng.uniform(*top_range))


@st.composite
def covariances(draw, d):
    entries = draw(st.lists(st.floats(-1.0, 1.0, allow_subnormal=False),
                            min_size=d * d, max_size=d * d))
    eps = draw(st.floats(0.02, 0.3))
    top = draw(st.floats(0.2, 1.0))
    return make_cov(np.array(entries).reshape(d, d), eps, top)


@functools.lru_cache(maxsize=None)
def _grid(d, n):
    x, w = hermegauss(n)
    w = w / np.sqrt(2.0 * np.pi)  # probabilists' weights, normalised to the N(0,1) density
    U = np.stack([m.ravel() for m in np.meshgrid(*([x] * d), indexing="ij")])
    W = functools.reduce(np.multiply, [m.ravel() for m in np.meshgrid(*([w] * d), indexing="ij")])
    return U, W


def gauss_hermite(act, C, n):
    d = C.shape[0]
    U, W = _grid(d, n)
    Z = np.linalg.cholesky(C) @ U
    return float(np.sum(W * integrand(act, d, Z)))


def monte_carlo(act, C, nsamp, seed):
    d = C.shape[0]
    rng = np.random.default_rng([seed, d, 12345])
    Z = np.linalg.cholesky(C) @ rng.standard_normal((d, nsamp))
    f = integrand(act, d, Z)
    return float(f.mean()), float(f.std(ddof=1) / np.sqrt(nsamp))


# ----------------------------------------------------------------------------- Gauss-Hermite

N_LOW_DIM = 40          # nodes per dimension for the 2-d and 3-d rules
N_4D = 24               # nodes per dimension for the 4-d rule (compared with N_4D + 8)
TOL_LOW_DIM = 1e-12
ABS_FLOOR_4D = 1e-12


def check_low_dim(act, C):
    d = C.shape[0]
    q = gauss_hermite(act, C, N_LOW_DIM)
    c = float(closed(act, C))
    assert abs(q - c) < TOL_LOW_DIM, (act, d, C.tolist(), c, q, q - c)


def check_4d(act, C):
    q1 = gauss_hermite(act, C, N_4D)
    q2 = gauss_hermite(act, C, N_4D + 8)
    c = float(closed(act, C))
    conv = abs(q2 - q1)  # quadrature's own error estimate
    assert conv < 1e-8, ("4-d quadrature not converged", C.tolist(), q1, q2)
    tol = max(3.0 * conv, ABS_FLOOR_4D)
    assert abs(q2 - c) < tol, (act, C.tolist(), c, q1, q2, q2 - c, tol)


@pytest.mark.parametrize("act", ACTIVATIONS)
@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("seed", SEEDS)
def test_gauss_hermite_low_dim(act, d, seed):
    check_low_dim(act, random_cov(seed, d))


@pytest.mark.parametrize("act", ACTIVATIONS)
@pytest.mark.parametrize("seed", SEEDS)
def test_gauss_hermite_I4(act, seed):
    check_4d(act, random_cov(seed, 4))


@settings(max_examples=8, deadline=None, database=None)
@given(C=covariances(2))
def test_gauss_hermite_I2_hypothesis(C):
    check_low_dim("erf", C)


@settings(max_examples=8, deadline=None, database=None)
@given(C=covariances(3))
def test_gauss_hermite_I3_hypothesis(C):
    check_low_dim("erf", C)


@settings(max_examples=4, deadline=None, database=None)
@given(C=covariances(4))
def test_gauss_hermite_I4_hypothesis(C):
    check_4d("erf", C)


def test_gauss_hermite_rule_sanity():
    """The normalised rule integrates low moments of N(0, 1) exactly."""
    U, W = _grid(1, N_LOW_DIM)
    for k, m in [(0, 1.0), (2, 1.0), (4, 3.0), (6, 15.0)]:
        assert np.sum(W * U[0] ** k) == pytest.approx(m, rel=1e-13)


# ----------------------------------------------------------------------------- Monte Carlo

N_MC = 2_000_000


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("seed", [0, 1])
def test_monte_carlo_erf(d, seed):
    # wider spread of variances than the quadrature tests (MC does not care about smoothness)
    C = random_cov(100 + seed, d, top_range=(0.5, 3.0))
    mean, se = monte_carlo("erf", C, N_MC, seed)
    c = float(closed("erf", C))
    assert abs(c - mean) < 5 * se, (d, C.tolist(), c, mean, se, (c - mean) / se)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_monte_carlo_linear(d):
    C = random_cov(200, d, top_range=(0.5, 3.0))
    mean, se = monte_carlo("linear", C, N_MC, 7)
    c = float(closed("linear", C))
    assert abs(c - mean) < 5 * se, (d, C.tolist(), c, mean, se)


# ----------------------------------------------------------------------------- structure

def _sym(name):
    return sp.Symbol(name, real=True)


@pytest.mark.parametrize("act", ACTIVATIONS)
def test_I3_independent_of_C22_and_linear_in_C12_C23(act):
    S = covariance_symbols(3)
    expr = I3(act, S)
    C12, C22, C23 = _sym("C12"), _sym("C22"), _sym("C23")
    assert S[0, 1] == C12 and S[1, 2] == C23 and S[1, 1] == C22
    assert C22 not in expr.free_symbols
    for a, b in [(C12, C12), (C23, C23), (C12, C23)]:
        assert sp.simplify(sp.diff(expr, a, b)) == 0, (act, a, b)
    rest = sp.simplify(expr - C12 * sp.diff(expr, C12) - C23 * sp.diff(expr, C23))
    assert C12 not in rest.free_symbols and C23 not in rest.free_symbols, rest


def test_linear_closed_forms():
    assert I2("linear", covariance_symbols(2)) == _sym("C12")
    assert I3("linear", covariance_symbols(3)) == _sym("C23")
    assert I4("linear", covariance_symbols(4)) == _sym("C34")


@pytest.mark.parametrize("act", ACTIVATIONS)
@pytest.mark.parametrize("d", [2, 3, 4])
def test_closed_forms_are_exact(act, d):
    for C in (covariance_symbols(d),
              sp.Matrix(d, d, lambda a, b: sp.Rational(1, 2) if a == b else sp.Rational(1, 7))):
        expr = sp.sympify(FUNCS[d](act, C))
        assert expr.atoms(sp.Float) == set(), expr
        for num in expr.atoms(sp.Number):
            assert isinstance(num, sp.Rational), (num, type(num))
        assert expr.atoms(sp.NumberSymbol) <= {sp.pi}, expr


def test_unknown_activation_rejected():
    with pytest.raises(ValueError):
        I2("tanh", covariance_symbols(2))


# ----------------------------------------------------------------------------- 50-digit check

def test_I2_erf_mpmath_50_digits():
    """<erf(z1/sqrt2) erf(z2/sqrt2)> by mpmath.quad of the 2-d integral in polar coordinates.

    With z = L u, u ~ N(0, I_2) and u = r (cos t, sin t), the density is r exp(-r^2/2) / (2 pi);
    the integrand is even under u -> -u, so t runs over [0, pi] with weight 1/pi.  The radial
    range is cut at r = 15 (tail ~ exp(-112), far below 1e-40).
    """
    C = random_cov(7, 2, top_range=(0.6, 0.9))
    with mp.workdps(50):
        c11, c12, c22 = (mp.mpf(float(C[0, 0])), mp.mpf(float(C[0, 1])), mp.mpf(float(C[1, 1])))
        l11 = mp.sqrt(c11)
        l21 = c12 / l11
        l22 = mp.sqrt(c22 - l21 ** 2)
        s2 = mp.sqrt(2)
        a1, a2, b2 = l11 / s2, l21 / s2, l22 / s2
        radial, angular = {}, {}  # the tensor rule revisits the same nodes: cache exp, cos, sin

        def f(t, r):
            w = radial.get(r)
            if w is None:
                w = radial[r] = r * mp.exp(-r * r / 2)
            cs = angular.get(t)
            if cs is None:
                cs = angular[t] = (mp.cos(t), mp.sin(t))
            c, s = cs
            return mp.erf(a1 * r * c) * mp.erf(r * (a2 * c + b2 * s)) * w

        val, err = mp.quad(f, [0, mp.pi], [0, 15], method="gauss-legendre",
                           maxdegree=6, error=True)
        val = val / mp.pi
        exact = closed("erf", C, dps=50)
        assert err < mp.mpf("1e-42"), err
        assert abs(exact) > mp.mpf("0.01")  # a non-trivial correlation
        assert abs(val - exact) < mp.mpf("1e-40"), (mp.nstr(val, 50), mp.nstr(exact, 50))
