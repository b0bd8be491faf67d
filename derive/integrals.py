"""Gaussian expectations I2, I3, I4 of the activation as exact SymPy expressions.

For jointly Gaussian, zero-mean fields (z1, z2, ...) with covariance C (1-based entries C[a, b]):

    I2(C) = <g(z1) g(z2)>
    I3(C) = <g'(z1) z2 g(z3)>
    I4(C) = <g'(z1) g'(z2) g(z3) g(z4)>

Activations: ``"erf"`` is g(x) = erf(x / sqrt(2)) and ``"linear"`` is g(x) = x.
The erf closed forms are the classical Saad-Solla / Biehl-Schwarze results; they are checked
against quadrature and Monte Carlo in tests/test_integrals.py.

I3 is linear in (C12, C23) and independent of C22: this is what makes the order-parameter
hierarchy linear in the next level.  ``covariance_symbols`` gives symbols to build them with.
"""
from __future__ import annotations

import sympy as sp

from .keys import ACTIVATIONS, check_activation as _check  # noqa: F401


def covariance_symbols(n: int, name: str = "C") -> sp.Matrix:
    """Symmetric n x n matrix of symbols C11, C12, ... (shared across the diagonal)."""
    def entry(a, b):
        a, b = min(a, b), max(a, b)
        return sp.Symbol(f"{name}{a + 1}{b + 1}", real=True)
    return sp.Matrix(n, n, lambda a, b: entry(a, b))


def I2(activation: str, C) -> sp.Expr:
    """<g(z1) g(z2)> for a 2x2 covariance."""
    _check(activation)
    c11, c12, c22 = C[0, 0], C[0, 1], C[1, 1]
    if activation == "linear":
        return c12
    # Product of square roots, not root of product: no |1 + C11| when both fields coincide.
    return 2 / sp.pi * sp.asin(c12 / (sp.sqrt(1 + c11) * sp.sqrt(1 + c22)))


def I3(activation: str, C) -> sp.Expr:
    """<g'(z1) z2 g(z3)> for a 3x3 covariance."""
    _check(activation)
    if activation == "linear":
        return C[1, 2]
    c11, c12, c13, c23, c33 = C[0, 0], C[0, 1], C[0, 2], C[1, 2], C[2, 2]
    lam3 = (1 + c11) * (1 + c33) - c13**2
    return 2 / sp.pi * (c23 * (1 + c11) - c12 * c13) / ((1 + c11) * sp.sqrt(lam3))


def I4(activation: str, C) -> sp.Expr:
    """<g'(z1) g'(z2) g(z3) g(z4)> for a 4x4 covariance."""
    _check(activation)
    if activation == "linear":
        return C[2, 3]
    c11, c12, c13, c14 = C[0, 0], C[0, 1], C[0, 2], C[0, 3]
    c22, c23, c24 = C[1, 1], C[1, 2], C[1, 3]
    c33, c34, c44 = C[2, 2], C[2, 3], C[3, 3]
    lam4 = (1 + c11) * (1 + c22) - c12**2
    lam0 = (lam4 * c34 - c23 * c24 * (1 + c11) - c13 * c14 * (1 + c22)
            + c12 * c13 * c24 + c12 * c14 * c23)
    lam1 = lam4 * (1 + c33) - c23**2 * (1 + c11) - c13**2 * (1 + c22) + 2 * c12 * c13 * c23
    lam2 = lam4 * (1 + c44) - c24**2 * (1 + c11) - c14**2 * (1 + c22) + 2 * c12 * c14 * c24
    # Λ1, Λ2 > 0 for a positive-definite C; sqrt(Λ1)·sqrt(Λ2) rather than sqrt(Λ1·Λ2) keeps
    # SymPy from writing |Λ1| when the two coincide (then non-smooth for the Jacobian).
    return 4 / sp.pi**2 / sp.sqrt(lam4) * sp.asin(lam0 / (sp.sqrt(lam1) * sp.sqrt(lam2)))


def gp_gp(activation: str, C) -> sp.Expr:
    """<g'(z1) g'(z2)> for a 2x2 covariance: d I2 / d C12 (Price's theorem)."""
    c11, c12, c22 = sp.symbols("_a _c _b", real=True)   # as in _tidy: C11, C22, C12
    base = I2(activation, sp.Matrix([[c11, c12], [c12, c22]]))
    return _tidy(sp.diff(base, c12)).xreplace({c11: C[0, 0], c12: C[0, 1], c22: C[1, 1]})


def gpp_g(activation: str, C) -> sp.Expr:
    """<g''(z1) g(z2)> for a 2x2 covariance: 2 d I2 / d C11 (Price's theorem: d/dC11 acts as
    (1/2) d²/dz1² under the expectation)."""
    c11, c12, c22 = sp.symbols("_a _c _b", real=True)   # as in _tidy: C11, C22, C12
    base = I2(activation, sp.Matrix([[c11, c12], [c12, c22]]))
    return _tidy(2 * sp.diff(base, c11)).xreplace({c11: C[0, 0], c12: C[0, 1], c22: C[1, 1]})


def _tidy(expr: sp.Expr) -> sp.Expr:
    """One square root of the determinant (1+C11)(1+C22) - C12² instead of nested ones.

    The forced power rules assume positive bases, true here: 1 + C_aa > 0 and the determinant
    of 1 + C is positive for a covariance matrix.
    """
    a, b, c = sp.symbols("_a _b _c", real=True)
    x = sp.factor(sp.powsimp(sp.simplify(sp.powdenest(sp.together(expr), force=True)),
                             force=True))
    det = (1 + a) * (1 + b) - c**2
    return x.replace(lambda e: e.is_Pow and sp.expand(e.base - det) == 0,
                     lambda e: sp.Pow(det, e.exp, evaluate=False))
