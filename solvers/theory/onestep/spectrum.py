"""Expectations over the bulk spectrum D ~ c·MP(β) of the trained first layer.

MP(β) is the law of the eigenvalues of W0 W0ᵀ (p × p, unit rows, β = p/d): mean 1, support
[(1−√β)², (1+√β)²], plus an atom 1 − 1/β at 0 when β > 1.  The fixed point needs, for
S = s + v D (s = λ + V̂2 > 0, v = V̂1 ≥ 0), the five averages

    E 1/S,  E D/S,  E 1/S²,  E D/S²,  E D²/S².

Two independent routes: :class:`MPQuadrature` (float64; x = (a+b)/2 − (b−a)/2 cos θ and the
midpoint rule in θ — the integrand is then a smooth periodic function, even at β = 1 where the
density has its x^(−1/2) singularity, so the rule converges geometrically) and
:func:`stieltjes_averages` (closed form through the Stieltjes transform of MP, any number type,
used by the mpmath route and by the tests).
"""
from __future__ import annotations

import math

import numpy as np


def mp_edges(beta: float):
    """Support (a, b) of the continuous part of MP(β)."""
    sb = math.sqrt(beta)
    return (1 - sb) ** 2, (1 + sb) ** 2


class MPQuadrature:
    """E_{MP(β)} g = g(0) + ∫ ρ(x) x · (g(x) − g(0))/x dx (the total mass is 1, atom included).

    Written this way the weight ρ(x)·x = √((b − x)(x − a))/(2πβ) has no 1/x, so neither the
    x^(−1/2) edge at β = 1 nor the near-singular edge a = (1 − √β)² ≈ 0 around it spoil the
    midpoint rule in θ (x = (a+b)/2 − (b−a)/2 cos θ), and the atom at 0 for β > 1 needs no
    separate term; the quotients (g(x) − g(0))/x of the five averages are written out in closed
    form (no cancellation)."""

    def __init__(self, beta: float, n: int = 400):
        if not beta > 0:
            raise ValueError(f"beta = {beta} must be > 0")
        a, b = mp_edges(beta)
        theta = (np.arange(n) + 0.5) * np.pi / n
        half = (b - a) / 2
        self.x = (a + b) / 2 - half * np.cos(theta)
        self.wx = (np.pi / n) * half ** 2 * np.sin(theta) ** 2 / (2 * np.pi * beta)
        self.beta = beta

    def expect(self, g, g0: float = None):
        """E g for a vectorised g (g0 = g(0); the quotient is formed numerically here)."""
        g0 = g(0.0) if g0 is None else g0
        return g0 + self.wx @ ((g(self.x) - g0) / self.x)

    def averages(self, s, v, c: float):
        """The five averages for arrays s, v.

        Where s < v c (the pole of 1/S at x = −s/(vc) within distance 1 of the spectrum's lower
        edge, which sits at 0 for β ≥ 1: near interpolation with small λ) the midpoint rule
        would converge slowly — 0.6 % error at s/(vc) = 1e-4, β = 1 — and the closed form
        through the Stieltjes transform is used instead; it has no cancellation there (its
        (1 − sA)/v only cancels for s ≫ vc, where the rule converges geometrically)."""
        s_ = np.asarray(s, dtype=float)
        v_ = np.asarray(v, dtype=float)
        quad = self._quadrature(s_, v_, c)
        near = s_ < v_ * c
        if not np.any(near):
            return quad
        vs = np.where(near, v_, 1.0)
        ss = np.where(near, s_, 0.5 * c)
        closed = stieltjes_averages(ss, vs, c, self.beta, sqrt=np.sqrt)
        return {k: np.where(near, closed[k], quad[k]) for k in quad}

    def _quadrature(self, s, v, c: float):
        s = np.asarray(s, dtype=float)[..., None]
        v = np.asarray(v, dtype=float)[..., None]
        x = self.x
        S = s + v * c * x
        inv = 1.0 / S
        vc = v * c
        w = self.wx
        s0 = s[..., 0]
        return {"1/S": 1 / s0 - (vc * inv / s) @ w,
                "D/S": (c * inv) @ w,
                "1/S2": 1 / s0 ** 2 - (vc * (2 * s + vc * x) * inv * inv / (s * s)) @ w,
                "D/S2": (c * inv * inv) @ w,
                "D2/S2": (c * c * x * inv * inv) @ w}


def stieltjes(wv, beta, sqrt=math.sqrt):
    """m(w) = E_{MP(β)} 1/(x − w) for real w < 0 and its derivative m'(w).

    m is the root of β w m² + (w + β − 1) m + 1 = 0 with m ~ −1/w at infinity, taken in the
    form that adds terms of one sign (no cancellation)."""
    bq = wv + beta - 1
    disc = sqrt(bq * bq - 4 * beta * wv)
    if isinstance(wv, np.ndarray):
        pos = -bq >= 0
        m = np.where(pos, 2 / np.where(pos, -bq + disc, 1.0),
                     (-bq - disc) / (2 * beta * np.where(pos, -1.0, wv)))
    elif -bq >= 0:
        m = 2 / (-bq + disc)
    else:
        m = (-bq - disc) / (2 * beta * wv)
    dm = -(beta * m * m + m) / (2 * beta * wv * m + wv + beta - 1)
    return m, dm


def stieltjes_averages(s, v, c, beta, sqrt=math.sqrt):
    """The five averages in closed form (scalars of any number type; v > 0).

    With A(s, v) = E 1/(s + vD) = m(w)/(vc), w = −s/(vc):  E 1/S² = −∂A/∂s = m'(w)/(vc)²,
    E D/S = (1 − sA)/v, E D/S² = (A − s E 1/S²)/v, E D²/S² = (E D/S − s E D/S²)/v."""
    if beta > 1:
        # the nonzero eigenvalues of W0 W0ᵀ are those of W0ᵀ W0: MP(β) = (1 − 1/β) δ0 + (1/β)
        # law(β Y), Y ~ MP(1/β).  Averaging the atom separately avoids the cancellation of its
        # 1/s pieces in (A − s E 1/S²)/v (4.8e-7 relative at s/(vc) = 1e-9, β = 4)
        cont = stieltjes_averages(s, v, c * beta, 1 / beta, sqrt)
        atom = 1 - 1 / beta
        out = {k: val / beta for k, val in cont.items()}
        out["1/S"] = out["1/S"] + atom / s
        out["1/S2"] = out["1/S2"] + atom / (s * s)
        return out
    vc = v * c
    m, dm = stieltjes(-s / vc, beta, sqrt)
    A = m / vc
    i2 = dm / vc ** 2
    ds = (1 - s * A) / v
    ds2 = (A - s * i2) / v
    return {"1/S": A, "D/S": ds, "1/S2": i2, "D/S2": ds2, "D2/S2": (ds - s * ds2) / v}
