"""Covariance spectra with L distinct eigenvalues, kept exact.

A spectrum is the list of distinct eigenvalues λ_1 > ... > λ_L together with the fraction
p_k of input directions carrying each (p_k = 1/L for the equal multiplicities N/L of the
paper).  Everything derived from it -- ν_l = Σ_k p_k λ_k^l, the characteristic polynomial
P(λ) = Π_k (λ - λ_k) = Σ_j c_j λ^j and the expected teacher T^(l) = δ_nm ν_l -- is exact:
Rationals when β is an integer (the polynomial is then expanded with python-flint's
``fmpq_poly``, which is much faster than SymPy at L in the hundreds), algebraic numbers or
symbols otherwise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import sympy as sp


def _exact(x, name: str = "value") -> sp.Expr:
    """An exact SymPy number from an int, Fraction, decimal string or float.

    A float is read through its shortest decimal repr, as the spec files read a TOML float
    (``0.3`` -> 3/10, not the binary double 5404319552844595/18014398509481984): the number a
    user typed, kept exact.  NaN and infinities are refused.
    """
    if isinstance(x, bool):
        raise TypeError(f"{name} must be a number, got {x!r}")
    if isinstance(x, Fraction):
        return sp.Rational(x.numerator, x.denominator)
    if isinstance(x, float):      # also numpy.float64, a float subclass
        if not math.isfinite(x):
            raise ValueError(f"{name} must be finite, got {x!r}")
        f = Fraction(repr(float(x)))
        return sp.Rational(f.numerator, f.denominator)
    return sp.sympify(x, rational=True)


@dataclass(frozen=True)
class Spectrum:
    """Distinct eigenvalues (descending) and their multiplicity fractions, as SymPy numbers."""

    eigenvalues: tuple
    weights: tuple

    def __post_init__(self):
        if len(self.eigenvalues) == 0:
            raise ValueError("a spectrum needs at least one eigenvalue")
        if len(self.weights) != len(self.eigenvalues):
            raise ValueError("one weight per eigenvalue")

    @property
    def L(self) -> int:
        return len(self.eigenvalues)

    @property
    def is_rational(self) -> bool:
        return all(isinstance(v, sp.Rational) for v in self.eigenvalues + self.weights)

    def nu(self, l: int) -> sp.Expr:
        """ν_l = Tr(Σ^l)/N."""
        return sp.Add(*[w * lam**l for w, lam in zip(self.weights, self.eigenvalues)])

    @cached_property
    def charpoly(self) -> tuple:
        """(c_0, ..., c_L) with Π_k (λ - λ_k) = Σ_j c_j λ^j, c_L = 1."""
        if self.is_rational:
            # Integer factors (q x - p) multiplied in a balanced tree keep the coefficient
            # sizes even; dividing by the leading coefficient at the end makes it monic.
            from flint import fmpq, fmpz_poly
            polys = [fmpz_poly([-int(lam.p), int(lam.q)]) for lam in self.eigenvalues]
            while len(polys) > 1:
                polys = [polys[i] * polys[i + 1] if i + 1 < len(polys) else polys[i]
                         for i in range(0, len(polys), 2)]
            coeffs = polys[0].coeffs()
            lead = coeffs[-1]
            monic = [fmpq(c, lead) for c in coeffs]  # flint's gcd is far faster than SymPy's
            return tuple(sp.Rational(int(c.p), int(c.q)) for c in monic)
        x = sp.Dummy("x")
        poly = sp.Poly(sp.prod([x - lam for lam in self.eigenvalues]), x)
        return tuple(reversed(poly.all_coeffs()))


def power_law(L: int, beta) -> Spectrum:
    """λ_l = λ_+ / l^(1+β), l = 1..L, with λ_+ fixed by mean_l λ_l = 1 (Tr Σ = N).

    ``beta`` may be an int, a Fraction, a decimal string or a float; a float is taken as its
    shortest decimal repr (0.5 -> 1/2, 0.3 -> 3/10), exactly as a spec file reads it.

    Examples
    --------
    >>> from derive import spectra
    >>> s = spectra.power_law(4, 0.5)
    >>> s.L, s.eigenvalues[0] / s.eigenvalues[1]
    (4, 2*sqrt(2))
    """
    if isinstance(L, bool) or int(L) != L or L < 1:
        raise ValueError(f"L must be a positive integer, got {L!r}")
    L = int(L)
    beta = _exact(beta, "beta")
    if not beta > -1:
        raise ValueError(f"beta must be > -1, got {beta}")
    raw = [sp.Integer(l) ** (-(1 + beta)) for l in range(1, L + 1)]
    lam_plus = sp.Integer(L) / sp.Add(*raw)
    eig = tuple(lam_plus * r for r in raw)
    return Spectrum(eig, tuple(sp.Rational(1, L) for _ in range(L)))


def explicit(eigenvalues, weights=None) -> Spectrum:
    """A user's eigenvalue list (e.g. measured from data), sorted descending; equal weights 1/L.

    Entries may be ints, Fractions, decimal strings or floats (a float is read through its
    shortest decimal repr, like ``beta`` in :func:`power_law`).
    """
    eig = [_exact(v, "eigenvalue") for v in eigenvalues]
    if any(not (v > 0) for v in eig):
        raise ValueError("eigenvalues must be positive")
    if len(set(eig)) != len(eig):
        raise ValueError("eigenvalues must be distinct")
    L = len(eig)
    if weights is None:
        w = [sp.Rational(1, L)] * L
    else:
        w = [_exact(v, "weight") for v in weights]
    order = sorted(range(L), key=lambda k: eig[k], reverse=True)
    return Spectrum(tuple(eig[k] for k in order), tuple(w[k] for k in order))


def symbolic(L: int, name: str = "lambda") -> Spectrum:
    """Eigenvalues as positive symbols λ_1..λ_L (for derivations shown in notebooks)."""
    eig = tuple(sp.Symbol(f"{name}_{k}", positive=True) for k in range(1, L + 1))
    return Spectrum(eig, tuple(sp.Rational(1, L) for _ in range(L)))
