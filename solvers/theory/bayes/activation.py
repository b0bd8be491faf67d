"""Activations of the Bayes-optimal theory: g_σ, g', g'' and the stable gap G(δ) as callables.

The expressions come from :mod:`derive.bayes` (exact); here they are lambdified twice, once for
mpmath (evaluated at the caller's scoped precision, constants such as π and √3 exact until then)
and once for numpy float64.  The gap G(δ) = g(1) − g(1−δ) is evaluated from its exact δ → 0
series below ``SERIES_BELOW`` (no cancellation) and directly above it; for polynomial g the
expanded gap polynomial is exact everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp

from derive import bayes as D
from derive.polynomial_text import ActivationError   # the one error of a bad activation

SERIES_BELOW = 1e-3          # float64: direct G loses ≤ 3 digits above, series error < δ^8 below
SERIES_ORDER = 8


@dataclass(frozen=True, eq=False)
class Activation:
    """g_σ (the ℓ ≥ 3 Hermite part of σ) with its derivatives and gap, exact and numeric."""

    name: str
    g: sp.Expr                                  # in derive.bayes.x
    note: str = ""
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    # -- symbolic ----------------------------------------------------------------------------
    @property
    def polynomial(self) -> bool:
        return bool(self.g.is_polynomial(D.x))

    def _sym(self):
        if "sym" not in self._cache:
            gp = sp.diff(self.g, D.x)
            self._cache["sym"] = {"g": self.g, "gp": gp, "gpp": sp.diff(gp, D.x),
                                  "G": D.gap(self.g),
                                  "Gser": D.gap_series(self.g, SERIES_ORDER)}
        return self._cache["sym"]

    def _fn(self, key, module):
        ck = (key, module)
        if ck not in self._cache:
            var = D.delta if key in ("G", "Gser") else D.x
            self._cache[ck] = sp.lambdify(var, self._sym()[key], modules=module)
        return self._cache[ck]

    # -- mpmath (caller's precision) ------------------------------------------------------------
    def gp_mp(self, xv):
        return mpmath.mpf(self._fn("gp", "mpmath")(xv))

    def gpp_mp(self, xv):
        return mpmath.mpf(self._fn("gpp", "mpmath")(xv))

    def gap_mp(self, dv):
        """G(δ) with guard digits for the cancellation g(1) − g(1−δ) (≈ −log10 δ digits)."""
        dv = mpmath.mpf(dv)
        if dv == 0:
            return mpmath.mpf(0)
        guard = 10 + max(0, int(-mpmath.log10(dv)))
        with mpmath.workdps(mpmath.mp.dps + guard):
            val = self._fn("G", "mpmath")(dv)
        return +mpmath.mpf(val)

    # -- float64 --------------------------------------------------------------------------------
    def g_np(self, xv):
        return np.asarray(self._fn("g", "numpy")(np.asarray(xv, float)), float) + 0 * np.asarray(xv, float)

    def gp_np(self, xv):
        xv = np.asarray(xv, float)
        return np.asarray(self._fn("gp", "numpy")(xv), float) + 0 * xv

    def gpp_np(self, xv):
        xv = np.asarray(xv, float)
        return np.asarray(self._fn("gpp", "numpy")(xv), float) + 0 * xv

    def gap_np(self, dv):
        dv = np.asarray(dv, float)
        if self.polynomial:
            return np.asarray(self._fn("G", "numpy")(dv), float) + 0 * dv
        out = np.empty_like(dv)
        small = dv < SERIES_BELOW
        with np.errstate(invalid="ignore"):
            out[small] = self._fn("Gser", "numpy")(dv[small])
            out[~small] = self._fn("G", "numpy")(dv[~small])
        return out

    @property
    def g1(self) -> float:
        if "g1" not in self._cache:
            self._cache["g1"] = float(sp.N(self.g.subs(D.x, 1), 30))
        return self._cache["g1"]

    @property
    def gp1(self) -> float:
        if "gp1" not in self._cache:
            self._cache["gp1"] = float(sp.N(self._sym()["gp"].subs(D.x, 1), 30))
        return self._cache["gp1"]


@lru_cache(maxsize=None)
def named(name: str) -> Activation:
    if name in D.NAMED:
        notes = {"cubic": "σ = He3/√6", "erf3": "σ = erf(z/√2) − z/√π (ℓ ≥ 3 part of erf)",
                 "relu4": "σ = relu minus its ℓ ≤ 2 Hermite part (k⋆ = 4)"}
        return Activation(name, D.g_closed(name), notes[name])
    if name == "tanh3":
        return tanh3()
    if name in D.RAW_TO_HIGHER or name == "tanh":
        raise ActivationError(
            f"activation {name!r} has μ1 or μ2 ≠ 0 (k⋆ < 3): the fixed-point system covers only "
            f"the ℓ ≥ 3 part; use {D.RAW_TO_HIGHER.get(name, 'tanh3')!r} or set "
            f"drop_low_orders = true")
    raise ActivationError(f"unknown activation {name!r} (allowed: cubic, erf3, relu4, tanh3, "
                          f"erf and relu with drop_low_orders = true, or hermite = [...])")


TANH_LMAX = 61
TANH_NODES = 300


def tanh_coefficients(lmax: int = TANH_LMAX, nodes: int = TANH_NODES):
    """c_ℓ = μ_ℓ²/ℓ! of tanh for ℓ ≤ lmax by Gauss–Hermite quadrature (no closed form), with the
    truncation residual E[tanh²] − μ₁² − Σ_{3≤ℓ≤lmax} c_ℓ = g_tanh3(1) − g_truncated(1).

    Normalised Hermite polynomials h_ℓ = He_ℓ/√ℓ! by their three-term recurrence keep the sums
    well conditioned in float64 (tanh is analytic in a strip: the rule converges geometrically).
    """
    import math
    z, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / math.sqrt(2 * math.pi)
    f = np.tanh(z)
    h_prev, h = np.ones_like(z), z.copy()
    a = [float(np.sum(w * f * h_prev)), float(np.sum(w * f * h))]     # μ_ℓ/√ℓ!
    for ell in range(1, lmax):
        h_prev, h = h, (z * h - math.sqrt(ell) * h_prev) / math.sqrt(ell + 1)
        a.append(float(np.sum(w * f * h)))
    c = [v * v for v in a]
    residual = float(np.sum(w * f * f)) - c[1] - sum(c[3:lmax + 1])
    return c, residual


@lru_cache(maxsize=None)
def tanh3() -> Activation:
    """σ = tanh − μ₁ z: g as the ℓ ≤ 61 Hermite series (odd ℓ; coefficients by quadrature)."""
    c, residual = tanh_coefficients()
    g = sum(sp.Rational(c[ell]) * D.x ** ell for ell in range(3, TANH_LMAX + 1, 2))
    return Activation("tanh3", g, f"σ = tanh − μ1 z; Hermite series to ℓ = {TANH_LMAX} by "
                                  f"Gauss–Hermite ({TANH_NODES} nodes); truncation residual "
                                  f"g(1) − g_61(1) = {residual:.2g} bounds its accuracy")


def from_hermite(mus, start: int = 3, drop_low_orders: bool = False) -> Activation:
    """g from Hermite coefficients μ_start, μ_start+1, … (exact numbers: int, Fraction, str)."""
    mus = [sp.Rational(Fraction(m)) if not isinstance(m, sp.Basic) else m for m in mus]
    ks = D.k_star(mus, start)
    if ks is not None and ks < 3 and not drop_low_orders:
        raise ActivationError(
            f"hermite coefficients give k⋆ = {ks} < 3 (μ1 or μ2 ≠ 0): the fixed-point system "
            f"covers only the ℓ ≥ 3 part; set drop_low_orders = true to use it")
    high = [(start + j, m) for j, m in enumerate(mus) if start + j >= 3]
    if not high or all(m == 0 for _, m in high):
        raise ActivationError("hermite coefficients: all μ_ℓ with ℓ ≥ 3 vanish (g = 0)")
    g = sum(m ** 2 / sp.factorial(l) * D.x ** l for l, m in high)
    return Activation("hermite", sp.expand(g), f"Hermite coefficients from ℓ = {start}")


def resolve(activation: str | None = None, hermite=None, start: int = 3,
            drop_low_orders: bool = False) -> Activation:
    if hermite is not None:
        return from_hermite(hermite, start, drop_low_orders)
    if drop_low_orders and activation in D.RAW_TO_HIGHER:
        return named(D.RAW_TO_HIGHER[activation])
    if drop_low_orders and activation == "tanh":
        return tanh3()
    return named(activation)
