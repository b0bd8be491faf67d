"""Activations of the one-step theory as numeric callables, and their Gaussian constants.

The expressions come from :mod:`derive.onestep` (exact); they are lambdified for numpy float64
and for mpmath (evaluated at the caller's scoped precision).  The constants μ1 = E σ',
v_σ' = Var σ', μ1⋆ = E zσ, m2 = E σ² are exact where SymPy closes them and integrated
otherwise (tanh): float64 by a fine trapezoid rule (error ~1e-20, far below float64), mpmath by
``mpmath.quad`` at the working precision.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import mpmath
import numpy as np
import sympy as sp

from derive import onestep as D
from derive.polynomial_text import ActivationError   # the one error of a bad activation

CONSTANTS = ("mu1", "var_dsigma", "mu1_star", "m2")


@dataclass(frozen=True, eq=False)
class Activation:
    """σ with σ', numeric (numpy, mpmath) and exact (SymPy) forms."""

    name: str
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def expr(self):
        return D.activation(self.name)

    def _fn(self, which: str, module: str):
        key = (which, module)
        if key not in self._cache:
            e = self.expr if which == "f" else sp.diff(self.expr, D.z)
            mods = ["scipy", "numpy"] if module == "numpy" else module
            self._cache[key] = sp.lambdify(D.z, e, modules=mods)
        return self._cache[key]

    def f(self, zv):
        """σ on float64 arrays."""
        return np.asarray(self._fn("f", "numpy")(zv), dtype=float) + 0 * zv

    def df(self, zv):
        """σ' on float64 arrays."""
        return np.asarray(self._fn("df", "numpy")(zv), dtype=float) + 0 * zv

    def f_mp(self, zv):
        return self._fn("f", "mpmath")(zv)

    def df_mp(self, zv):
        return self._fn("df", "mpmath")(zv)

    @property
    def exact_constants(self) -> dict | None:
        """{mu1, var_dsigma, mu1_star, m2} as SymPy numbers, or None (no closed form)."""
        return D.gaussian_constants(self.name)

    def constants(self) -> dict:
        """The four Gaussian constants in float64."""
        if "float" not in self._cache:
            ex = self.exact_constants
            if ex is not None:
                out = {k: float(sp.N(ex[k], 20)) for k in CONSTANTS}
            else:
                zz, w = trapezoid_rule(0.05, 14.0)
                s, ds = self.f(zz), self.df(zz)
                m1 = float(w @ ds)
                out = {"mu1": m1, "var_dsigma": float(w @ ds ** 2) - m1 ** 2,
                       "mu1_star": float(w @ (zz * s)), "m2": float(w @ s ** 2)}
            self._cache["float"] = out
        return self._cache["float"]

    def constants_mp(self) -> dict:
        """The four constants at the current mpmath precision."""
        ex = self.exact_constants
        if ex is not None:
            return {k: mpmath.mpf(sp.N(ex[k], mpmath.mp.dps + 10)) for k in CONSTANTS}

        def E(g):
            return mpmath.quad(lambda t: g(t) * mpmath.npdf(t), [-mpmath.inf, 0, mpmath.inf])
        m1 = E(self.df_mp)
        return {"mu1": m1, "var_dsigma": E(lambda t: self.df_mp(t) ** 2) - m1 ** 2,
                "mu1_star": E(lambda t: t * self.f_mp(t)), "m2": E(lambda t: self.f_mp(t) ** 2)}


def trapezoid_rule(h: float, half_width: float):
    """Nodes and weights of E over N(0, 1) by the trapezoid rule on [−L, L] with step h.

    For an integrand analytic in the strip |Im z| < a the error is ~exp(−2πa/h), plus the
    Gaussian tail exp(−L²/2) (tanh: a = π/2; the smoothed coefficients: entire)."""
    n = int(round(half_width / h))
    zz = h * np.arange(-n, n + 1)
    w = h * np.exp(-zz ** 2 / 2) / np.sqrt(2 * np.pi)
    return zz, w


@lru_cache(maxsize=None)
def resolve(name: str) -> Activation:
    """The Activation of a name; ActivationError (one line) for unknown or non-odd ones."""
    try:
        e = D.activation(name)
    except ValueError as exc:
        raise ActivationError(str(exc)) from None
    if not D.is_odd(e):     # cannot happen for the listed names; guards later additions
        raise ActivationError(f"activation {name!r} is not odd")
    return Activation(name)
