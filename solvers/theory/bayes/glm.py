"""The exact Bayes-optimal overlap of ONE unit with an O(1) readout: the GLM replica formula.

Why this module exists: the extensive-width fixed-point system (docs/theory/bayes-optimal.md) replaces each unit's output channel by
a Gaussian one (channel free entropy −½ ln(Δ + ε(q)), i.e. only the Hermite-kernel g_σ(q) of the
output enters).  That is exact when every readout is small (v_i² → 0: the extensive regime), but a
unit with v² = O(1) learned from n = O(d) samples is a generalised linear model, whose Bayes-optimal
overlap is given by the (proven) replica formula of Barbier, Krzakala, Macris, Miolane, Zdeborová
(PNAS 2019):

    q* = argmax_q  ½[q + ln(1 − q)] + (n/d) Ψ_out(q),
    Ψ_out(q) = E_ξ ∫dy Z(y; √q ξ, 1 − q) ln Z(y; √q ξ, 1 − q),
    Z(y; ω, V) = E_z N(y; v σ(ω + √V z), s),

for y = v σ(w·x/√d) + √s ξ, w ~ N(0, I_d).  For odd σ = He₃/√6 the posterior mean E[z | y] is not
zero, so Ψ_out′(0) = ½ E_y E[z|y]² > 0 and q = 0 is never a fixed point: the unit is learned
gradually from the first samples, not by the first-order jump of the Gaussian-channel system.
The difference is set by the non-Gaussianity of v σ(z) against the rest, κ₄ v⁴/(s + v²)² with
κ₄ = 90 for He₃/√6: large for the top units of a hierarchy, small in the extensive regime.

Numerics: Ψ_out by tensor Gauss–Hermite quadrature over (ξ, the teacher's z, the noise) and a
uniform grid over the integration variable of Z (σ′ grows like z², so Gauss–Hermite nodes would
leave gaps wider than √s), log-sum-exp for ln Z.  Ψ_out is tabulated once on a q grid and
interpolated (cubic spline); q* is the global maximiser on a fine grid.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SQ6 = math.sqrt(6.0)


def cubic(u):
    return (u * u * u - 3.0 * u) / SQ6


def psi_out(q: float, v: float, s: float, act=cubic, nxi: int = 16, nz0: int = 60,
            neta: int = 12, nz: int = 1000, zmax: float = 9.0) -> float:
    """E ln Z_out for the channel y = v act(z) + √s ξ at overlap q (z ~ N(0, 1)).

    The default rule agrees with (nxi, nz0, neta, nz) = (30, 100, 20, 2000) to 2e−5 at v = 1,
    s = 0.1 (q = 0, 0.05, 0.999) and with Monte Carlo (tests/test_bayes_glm.py)."""
    xg, xw = np.polynomial.hermite_e.hermegauss(nxi)
    zg, zw = np.polynomial.hermite_e.hermegauss(nz0)
    eg, ew = np.polynomial.hermite_e.hermegauss(neta)
    if q == 0.0:
        # no ξ average to smooth ln Z(y(z₀)): its features at the extrema of σ (scale √s/σ′)
        # defeat Gauss–Hermite in z₀ (100 vs 200 nodes differ by 3e−3); a fine uniform grid
        # converges, and one ξ node suffices (ω = 0)
        xg, xw = np.zeros(1), np.ones(1)
        zg = np.linspace(-zmax, zmax, 4 * nz)
        zw = np.exp(-0.5 * zg * zg)
    xw, zw, ew = xw / xw.sum(), zw / zw.sum(), ew / ew.sum()
    z = np.linspace(-zmax, zmax, nz)
    logw = -0.5 * z * z + math.log(z[1] - z[0]) - 0.5 * math.log(2 * math.pi)
    V = 1.0 - q
    wy = (zw[:, None] * ew[None, :]).ravel()
    total = 0.0
    for xi, wx in zip(xg, xw):
        if wx < 1e-14:
            continue
        om = math.sqrt(q) * xi
        y = (v * act(om + math.sqrt(V) * zg)[:, None] + math.sqrt(s) * eg[None, :]).ravel()
        mu = v * act(om + math.sqrt(V) * z)
        for a in range(0, len(y), 4096):          # blocks: bounded memory
            L = logw[None, :] - (y[a:a + 4096, None] - mu[None, :]) ** 2 / (2 * s)
            top = L.max(axis=1)
            lnZ = (top + np.log(np.exp(L - top[:, None]).sum(axis=1))
                   - 0.5 * math.log(2 * math.pi * s))
            total += wx * float(wy[a:a + 4096] @ lnZ)
    return total


def psi_out_gaussian(q, v: float, s: float, g=lambda x: x ** 3):
    """The Gaussian-channel replacement used by the fixed-point system (g = g_σ)."""
    return -0.5 * np.log(2 * math.pi * math.e * (s + v * v * (g(1.0) - g(np.asarray(q)))))


Q_GRID = np.concatenate([np.linspace(0.0, 0.9, 31), [0.92, 0.94, 0.96, 0.97, 0.98, 0.99, 0.995,
                                                    0.999]])


@dataclass
class GLM:
    """One unit, readout v, effective noise s (Δ plus the unlearned units' power)."""

    v: float
    s: float
    act: object = cubic

    def __post_init__(self):
        from scipy.interpolate import CubicSpline
        self.table = np.array([psi_out(q, self.v, self.s, self.act) for q in Q_GRID])
        self._spline = CubicSpline(Q_GRID, self.table)

    def potential(self, q, n_over_d: float):
        q = np.asarray(q, float)
        return 0.5 * (q + np.log1p(-q)) + n_over_d * self._spline(q)

    def overlap(self, n_over_d: float) -> float:
        """Global maximiser of the replica potential (grid 2e−5, then golden refinement)."""
        qq = np.linspace(0.0, Q_GRID[-1], 50001)
        F = self.potential(qq, n_over_d)
        i = int(np.argmax(F))
        from scipy.optimize import minimize_scalar
        lo, hi = qq[max(i - 1, 0)], qq[min(i + 1, len(qq) - 1)]
        if hi - lo <= 0:
            return float(qq[i])
        r = minimize_scalar(lambda x: -self.potential(x, n_over_d), bounds=(lo, hi),
                            method="bounded", options={"xatol": 1e-9})
        return float(r.x)

    def gibbs_half(self, n_over_d: float) -> float:
        """Gibbs error / 2 of this unit at d → ∞: v² (g(1) − g(q*)) for cubic σ."""
        q = self.overlap(n_over_d)
        return self.v ** 2 * (1.0 - q ** 3)
