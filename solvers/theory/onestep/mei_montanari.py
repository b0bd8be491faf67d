"""The random-features ridge asymptotics of Mei & Montanari (arXiv:1908.05355): an oracle for
the r = 0 (no step) limit of the sRF fixed point, derived independently of it.

Their normalisation: loss (1/n) Σ (y − Σ_a a_a σ(w_a·x))² + (N λ_MM/d) ‖a‖², ψ1 = N/d, ψ2 = n/d.
Ours: Σ (y − w·σ/√p)² + λ ‖w‖² with a = w/√p, so λ_MM = λ/α, ψ1 = β, ψ2 = α.
Target y = σ⋆(θ⋆·x) + noise: F1² = μ1⋆², F⋆² = E σ⋆² − μ1⋆², τ² = Δ.  Features: μ0 = 0 (odd σ),
μ1 = E σ', μ⋆² = E σ² − μ1², ζ = μ1/μ⋆, λ̄ = λ_MM/μ⋆².  The polynomials E0, E1, E2 come from
:func:`derive.onestep.mei_montanari`.
"""
from __future__ import annotations

from functools import lru_cache

import mpmath
import sympy as sp

from derive import onestep as D


@lru_cache(maxsize=None)
def _polys(module: str):
    mm = D.mei_montanari()
    return tuple(sp.lambdify(mm["symbols"], mm[k], modules=module) for k in ("E0", "E1", "E2"))


def _nu(psi1, psi2, zeta2, s, tol, one, max_iter=100000):
    """ν1 = i a, ν2 = i b at ξ = i s: a = ψ1/(s + b + ζ²b/(1 + ζ²ab)), b likewise; a damped
    iteration from a = b = 0, then Newton (mpmath.findroot) at the caller's precision."""
    a = b = 0 * one
    for _ in range(max_iter):
        an = psi1 / (s + b + zeta2 * b / (1 + zeta2 * a * b))
        bn = psi2 / (s + a + zeta2 * a / (1 + zeta2 * a * b))
        if abs(an - a) + abs(bn - b) < tol:
            a, b = an, bn
            break
        a, b = (a + an) / 2, (b + bn) / 2
    return a, b


def test_error(mu1, m2, mu1_star, m2_star, beta, alpha, lam, noise=0.0, mp: bool = False):
    """Asymptotic test error of RF ridge (float64, or mpmath at the current precision)."""
    if mp:
        one = mpmath.mpf(1)
        mu1, m2, mu1_star, m2_star, beta, alpha, lam, noise = (
            mpmath.mpf(v) for v in (mu1, m2, mu1_star, m2_star, beta, alpha, lam, noise))
        sqrt, tol = mpmath.sqrt, mpmath.mpf(10) ** (-mpmath.mp.dps + 3)
    else:
        one, sqrt, tol = 1.0, (lambda v: v ** 0.5), 1e-15
    mus2 = m2 - mu1 ** 2
    zeta2 = mu1 ** 2 / mus2
    lam_bar = lam / alpha / mus2
    s = sqrt(beta * alpha * lam_bar)
    if mp:      # float64 start, then Newton at the working precision
        a, b = _nu(float(beta), float(alpha), float(zeta2), float(s), 1e-15, 1.0)
        def F(aa, bb):
            return (aa - beta / (s + bb + zeta2 * bb / (1 + zeta2 * aa * bb)),
                    bb - alpha / (s + aa + zeta2 * aa / (1 + zeta2 * aa * bb)))
        a, b = mpmath.findroot(F, (mpmath.mpf(a), mpmath.mpf(b)))
    else:
        a, b = _nu(beta, alpha, zeta2, s, tol, one)
    chi = -a * b
    zeta = sqrt(zeta2)
    E0, E1, E2 = (f(chi, zeta, beta, alpha) for f in _polys("mpmath" if mp else "math"))
    F1 = mu1_star ** 2
    Fs = m2_star - mu1_star ** 2
    return F1 * E1 / E0 + (noise + Fs) * E2 / E0 + Fs
