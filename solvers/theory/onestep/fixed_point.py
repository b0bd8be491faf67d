"""The replica fixed point of ridge on the spiked random features (float64, vectorised in α).

Order parameters V1, V2, q1, q2, t, ψ, m and their conjugates (see the package docstring for the
equations).  The structure used here: once (V1, V2) are known, every other equation is linear —
(m, t) jointly (a 2 × 2 system: for small r or linear σ the two directions are nearly degenerate
and a plain iteration on them diverges), ψ explicitly, (q1, q2) by a 2 × 2 solve.  (V1, V2)
solve a two-dimensional monotone problem: the map V ↦ V̂ ↦ V is increasing, so the iteration
from V = 0 rises to the fixed point; a Newton polish in log V finishes it.  The result is
refused (FixedPointError) when the residual does not reach ``tol``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .activation import Activation, trapezoid_rule
from .spectrum import MPQuadrature

KAPPA_STEP = 0.1       # trapezoid step in κ and ξ: error ~exp(−2πa/h) for a strip |Im| < a
KAPPA_HALF = 11.0      # Gaussian tail exp(−60) beyond


class FixedPointError(ArithmeticError):
    """The fixed point was not reached to the tolerance (never a silent wrong number)."""


@dataclass
class Tables:
    """κ-nodes, weights and the conditional coefficients / target functions on them."""

    kappa: np.ndarray
    w: np.ndarray
    mu0: np.ndarray
    mu1: np.ndarray
    mus2: np.ndarray       # μ⋆(κ)²
    h: np.ndarray
    h1: np.ndarray
    h2: np.ndarray

    def E(self, f):
        """E_κ of an array over the κ nodes (leading axes broadcast)."""
        return f @ self.w


def _tables_at(student, target, gamma, r, c, step, half) -> Tables:
    k, w = trapezoid_rule(step, half)
    xi, wx = trapezoid_rule(step, half)
    u = r * k[:, None] + np.sqrt(c) * xi[None, :]
    s = student.f(u)
    mu0 = s @ wx
    mu1 = student.df(u) @ wx
    # μ⋆² = E_ξ (σ − μ0 − √c μ1 ξ)² (Stein: √c μ1 ξ is the projection on ξ), a sum of squares:
    # exactly 0 for linear σ, where E σ² − μ0² − c μ1² would leave 1e-16 — which multiplies
    # V2 ~ 1/λ in 1 + μ1²V1 + μ⋆²V2 (measured: 2e-10 relative in ε_g at λ = 1e-7, β = 3)
    resid = s - mu0[:, None] - np.sqrt(c) * mu1[:, None] * xi[None, :]
    mus2 = (resid * resid) @ wx
    if r == 0:          # σ odd: E σ(√c ξ) = 0 exactly (the rule's rounding would leave 1e-17)
        mu0 = np.zeros_like(mu0)
    rho = np.sqrt(max(1.0 - gamma * gamma, 0.0))
    tv = target.f(gamma * k[:, None] + rho * xi[None, :])
    h = tv @ wx
    if gamma == 0:
        h = np.zeros_like(h)
    h1 = (tv * xi[None, :]) @ wx
    h2 = (tv * tv) @ wx
    return Tables(k, w, mu0, mu1, mus2, h, h1, h2)


def _moments(t: Tables):
    k = t.kappa
    return np.array([t.E(t.mu0 ** 2), t.E(t.mu1 ** 2), t.E(t.mus2), t.E(t.h * t.mu0),
                     t.E(k * t.mu1 * t.h), t.E(t.mu1 * t.h1), t.E(t.h2), t.E(t.mu1 ** 4)])


def tables(student: Activation, target: Activation, gamma: float, r: float, c: float,
           step: float = KAPPA_STEP, half: float = KAPPA_HALF, rtol: float = 1e-12,
           max_halvings: int = 3) -> Tables:
    """Tabulate μ0, μ1, μ⋆², h, h1, h2 on the κ nodes (inner ξ averages by the same rule).

    The rule is checked against the one with half the step (whose nodes contain the first):
    the tables at the shared nodes and eight κ-averages must agree to ``rtol`` (relative to
    their scale), else the step is halved again; FixedPointError if that does not help (a
    large c makes tanh's poles come close to the real ξ axis: error ~exp(−π²/(√c h)))."""
    finest = step / 2 ** (max_halvings + 1)
    if not np.isfinite(c) or np.exp(-np.pi ** 2 / (np.sqrt(c) * finest)) > 1e-6:
        # sized before any work: even the finest rule cannot resolve σ(√c ξ) (tanh's poles at
        # distance π/(2√c) give an error ~exp(−π²/(√c h)))
        raise FixedPointError(f"c = {c:.3g} is too large for the Gaussian quadrature (finest "
                              f"step {finest:g}); lower eta or raise alpha0")
    coarse = _tables_at(student, target, gamma, r, c, step, half)
    for _ in range(max_halvings + 1):
        step /= 2
        fine = _tables_at(student, target, gamma, r, c, step, half)
        worst = 0.0
        for name in ("mu0", "mu1", "mus2", "h", "h1", "h2"):
            a, b = getattr(coarse, name), getattr(fine, name)[::2]
            worst = max(worst, float(np.max(np.abs(a - b))) / max(1.0, float(np.max(np.abs(b)))))
        ma, mb = _moments(coarse), _moments(fine)
        worst = max(worst, float(np.max(np.abs(ma - mb) / np.maximum(1.0, np.abs(mb)))))
        if worst <= rtol:
            return fine
        coarse = fine
    raise FixedPointError(f"the Gaussian averages do not settle (relative change {worst:.1e} at "
                          f"step {step:g}; c = {c:g}, r = {r:g} too large for the quadrature)")


def _solve2(a11, a12, a21, a22, b1, b2):
    det = a11 * a22 - a12 * a21
    return (b1 * a22 - a12 * b2) / det, (a11 * b2 - a21 * b1) / det


def solve(tab: Tables, alpha, beta: float, c: float, lam: float, noise: float = 0.0,
          spectrum: MPQuadrature | None = None, tol: float = 1e-12, max_iter: int = 400) -> dict:
    """The fixed point at every α of an array; returns a dict of arrays (see ``curve``)."""
    alpha = np.atleast_1d(np.asarray(alpha, dtype=float))
    spec = spectrum or MPQuadrature(beta)
    ap = alpha / beta
    m1sq, ms2 = tab.mu1 ** 2, tab.mus2

    def weights(V1, V2):
        return 1.0 / (1.0 + m1sq[None, :] * V1[:, None] + ms2[None, :] * V2[:, None])

    def hats(W):
        return ap * tab.E(W * m1sq), ap * tab.E(W * ms2)

    def T(V1, V2):
        Vh1, Vh2 = hats(weights(V1, V2))
        av = spec.averages(lam + Vh2, Vh1, c)
        return av["D/S"], av["1/S"]

    V1, V2 = T(np.zeros_like(ap), np.zeros_like(ap))
    for _ in range(30):                 # monotone rise: no overshoot, safe start for Newton
        V1, V2 = T(V1, V2)
    x1, x2 = np.log(V1), np.log(V2)
    eps = 1e-7
    for it in range(max_iter):
        t1, t2 = T(np.exp(x1), np.exp(x2))
        g1, g2 = np.log(t1) - x1, np.log(t2) - x2
        res = np.maximum(np.abs(g1), np.abs(g2))
        if np.all(res < tol):
            break
        a1, a2 = T(np.exp(x1 + eps), np.exp(x2))
        b1, b2 = T(np.exp(x1), np.exp(x2 + eps))
        j11, j21 = (np.log(a1) - x1 - eps - g1) / eps, (np.log(a2) - x2 - g2) / eps
        j12, j22 = (np.log(b1) - x1 - g1) / eps, (np.log(b2) - x2 - eps - g2) / eps
        d1, d2 = _solve2(j11, j12, j21, j22, -g1, -g2)
        bad = ~np.isfinite(d1) | ~np.isfinite(d2)
        d1, d2 = np.where(bad, g1, d1), np.where(bad, g2, d2)     # fall back to iteration
        d1, d2 = np.clip(d1, -1.0, 1.0), np.clip(d2, -1.0, 1.0)
        x1, x2 = x1 + d1, x2 + d2
    else:
        worst = float(np.max(res))
        raise FixedPointError(f"the (V1, V2) fixed point did not converge (residual {worst:.1e} "
                              f"after {max_iter} Newton steps)")
    V1, V2 = np.exp(x1), np.exp(x2)
    W = weights(V1, V2)
    Vh1, Vh2 = hats(W)
    av = spec.averages(lam + Vh2, Vh1, c)
    A = av["1/S"]

    # (m, t): E_κ[μ0 (h − ŷ0) W] = 0 and t = βc t̂ E 1/S, t̂ = α_p E_κ[κ μ1 (h − ŷ0) W]
    k, mu0, mu1, h = tab.kappa, tab.mu0, tab.mu1, tab.h
    a11 = tab.E(W * mu0 ** 2)
    a12 = tab.E(W * k * mu0 * mu1)
    a22 = tab.E(W * (k * mu1) ** 2)
    b1 = tab.E(W * mu0 * h)
    b2 = tab.E(W * k * mu1 * h)
    g = beta * c * A * ap
    if np.max(np.abs(mu0)) == 0.0:      # r = 0: no spike, the free mean direction is absent
        m = np.zeros_like(ap)
        t = g * b2 / (1 + g * a22)
    else:
        m, t = _solve2(a11, a12, g * a12, 1 + g * a22, b1, g * b2)
    y0 = m[:, None] * mu0[None, :] + t[:, None] * (k * mu1)[None, :]
    that = ap * tab.E(W * k * mu1 * (h - y0))
    psihat = ap * tab.E(W * mu1 * tab.h1)
    psi = beta * psihat * av["D/S"]

    # (q1, q2): q = K q̂ + f, q̂ = α_p (e + G q)
    e0 = tab.h2 - 2 * h * y0 - 2 * psi[:, None] * (mu1 * tab.h1)[None, :] + y0 ** 2
    W2 = W * W
    e1 = ap * tab.E(W2 * m1sq * (e0 + noise))
    e2 = ap * tab.E(W2 * ms2 * (e0 + noise))
    G11, G12, G22 = (ap * tab.E(W2 * m1sq * m1sq), ap * tab.E(W2 * m1sq * ms2),
                     ap * tab.E(W2 * ms2 * ms2))
    K11, K12, K22 = av["D2/S2"], av["D/S2"], av["1/S2"]
    f1 = beta * (c * that ** 2 * av["D/S2"] + psihat ** 2 * av["D2/S2"])
    f2 = beta * (c * that ** 2 * av["1/S2"] + psihat ** 2 * av["D/S2"])
    M11 = 1 - (K11 * G11 + K12 * G12)
    M12 = -(K11 * G12 + K12 * G22)
    M21 = -(K12 * G11 + K22 * G12)
    M22 = 1 - (K12 * G12 + K22 * G22)
    q1, q2 = _solve2(M11, M12, M21, M22, K11 * e1 + K12 * e2 + f1, K12 * e1 + K22 * e2 + f2)
    qh1 = e1 + G11 * q1 + G12 * q2
    qh2 = e2 + G12 * q1 + G22 * q2

    En = e0 + m1sq[None, :] * q1[:, None] + ms2[None, :] * q2[:, None]
    eps_g = tab.E(En)
    train = tab.E((En + noise) * W2)
    out = {"alpha": alpha, "eps_g": eps_g, "train_error": train, "m": m, "t": t, "psi": psi,
           "q1": q1, "q2": q2, "V1": V1, "V2": V2, "V1hat": Vh1, "V2hat": Vh2, "q1hat": qh1,
           "q2hat": qh2, "that": that, "psihat": psihat}
    bad = [k_ for k_, v in out.items() if not np.all(np.isfinite(v))]
    if bad or np.any(q1 < 0) or np.any(q2 < 0) or np.any(eps_g < 0):
        raise FixedPointError(f"the fixed point has non-finite or negative entries ({bad or 'q'}):"
                              f" refused")
    return out
