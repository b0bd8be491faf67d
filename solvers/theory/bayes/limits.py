"""d → ∞ forms (the paper's Eqs. 41–46 as repaired), evaluated from derive.bayes.

β > 1/2 (fixed α = n/d²):  k_c ≃ k̄ d^{1/(2β)},  ε ≃ ε̄ d^{1/(2β)−1},  q_i → φ(i/k_c),
    φ(x) = m_σ(λ_σ x^{−2β}) (φ(1) = q_σ, the learned-branch limit).
β < 1/2:  ε solves ε = g(1) − ∫₀¹ g(m(c u^{−p})) du, c = α(1−2β)/(γ(Δ+ε)), p = 2β/(1−2β);
    k_c/k = min{1, (c/λ_σ)^{1/(2β)}}; α⋆ (Eq. 46) starts the all-learned branch; the Bayes-optimal
    completion is where the continuum potential Ψ/k of the all-learned branch overtakes the
    partial one.

Integrals by Gauss–Legendre in float64 (the integrands are smooth after the substitutions used
below; the node count is checked by doubling in the tests).
"""
from __future__ import annotations

import math

import numpy as np
import sympy as sp
from scipy.optimize import brentq, minimize_scalar

from derive import bayes as D

from .activation import Activation
from .channel import Jump, branch_t_np

NODES = 400


def _gl(n=NODES):
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * (x + 1), 0.5 * w


def phi_profile(act: Activation, jump: Jump, xs, beta: float) -> np.ndarray:
    """φ(x) = m_σ(λ_σ x^{−2β}) for x ∈ (0, 1] (learned branch), 0 for x > 1."""
    xs = np.asarray(xs, float)
    lam = jump.lam_f * np.power(np.maximum(xs, 1e-300), -2 * beta)
    t = branch_t_np(act, lam, jump)
    return np.where(xs <= 1, -np.expm1(-t), 0.0)


def gap_integral(act, jump, beta, n=NODES):
    """I = ∫₀¹ (g(1) − g(φ(x))) x^{−2β} dx, with x = w² (smooth near 0 for 2β ≥ 1)."""
    w, wt = _gl(n)
    x = w ** 2
    t = branch_t_np(act, jump.lam_f * x ** (-2 * beta), jump)
    G = act.gap_np(np.exp(-t))
    return float(np.sum(wt * G * x ** (-2 * beta) * 2 * w))


def limit_gt_half(act: Activation, jump: Jump, alpha: float, beta: float, Delta: float,
                  n=NODES) -> dict:
    if not beta > 0.5:
        raise ValueError(f"the β > 1/2 limit needs beta > 1/2, got {beta}")
    L = D.limit_beta_gt_half()
    I = gap_integral(act, jump, beta, n)
    subs = {D.alpha: sp.nsimplify(alpha), D.beta: sp.nsimplify(beta), D.Delta: sp.nsimplify(Delta),
            D.lam_sigma: jump.lam_f, D.integral: I, L["g1"]: act.g1}
    kbar = float(sp.N(L["kbar"].subs(subs), 20))
    ebar = float(sp.N(L["ebar"].subs(subs), 20))
    return {"kc_bar": kbar, "eps_bar": ebar, "gap_integral": I,
            "kc_exponent": float(L["kc_exponent"].subs(D.beta, sp.nsimplify(beta))),
            "eps_exponent": float(L["eps_exponent"].subs(D.beta, sp.nsimplify(beta)))}


# ---- β < 1/2 ----------------------------------------------------------------------------------

class LimitLtHalf:
    """The continuum system for β < 1/2 at given (β, γ, Δ)."""

    def __init__(self, act: Activation, jump: Jump, beta: float, gamma: float, Delta: float,
                 n=NODES):
        if not 0 < beta < 0.5:
            raise ValueError(f"the β < 1/2 limit needs 0 < beta < 1/2, got {beta}")
        self.act, self.jump, self.beta, self.gamma, self.Delta = act, jump, beta, gamma, Delta
        self.p = 2 * beta / (1 - 2 * beta)
        self.g1 = act.g1
        self.w, self.wt = _gl(n)

    def c_of(self, alpha, eps):
        return alpha * (1 - 2 * self.beta) / (self.gamma * (self.Delta + eps))

    def _branch(self, c):
        """u-nodes, weights and t on (0, u_c), u_c = min(1, (c/λ_σ)^{1/p}); u = u_c w².

        ``c`` may be an array: rows of nodes, one per value (one vectorised channel solve).
        """
        c = np.asarray(c, float)
        uc = np.minimum(1.0, (c / self.jump.lam_f) ** (1 / self.p))
        u = uc[..., None] * self.w ** 2
        wt = self.wt * 2 * self.w * uc[..., None]
        t = branch_t_np(self.act, c[..., None] * u ** (-self.p), self.jump)
        return uc, u, wt, t

    def phi_map(self, alpha, eps):
        """Φ∞(ε) = g(1) − ∫₀¹ g(m(c u^{−p})) du  (= ∫ G over the learned part + g(1)(1 − u_c))."""
        uc, u, wt, t = self._branch(self.c_of(alpha, np.asarray(eps, float)))
        out = np.sum(wt * self.act.gap_np(np.exp(-t)), axis=-1) + self.g1 * (1 - uc)
        return float(out) if np.ndim(out) == 0 else out

    def psi(self, alpha, eps):
        uc, u, wt, t = self._branch(self.c_of(alpha, eps))
        qv = -np.expm1(-t)
        prior = float(np.sum(wt * (qv - t) * u ** self.p)) / (2 * (1 - 2 * self.beta))
        return prior - alpha / (2 * self.gamma) * math.log(self.Delta + eps)

    def kc_fraction(self, alpha, eps):
        return min(1.0, (self.c_of(alpha, eps) / self.jump.lam_f) ** (1 / (2 * self.beta)))

    def solutions(self, alpha, points=300) -> list[dict]:
        """Stable solutions (downward crossings of Φ∞(ε) − ε on (0, g(1)])."""
        grid = np.linspace(self.g1 * 1e-6, self.g1, points)
        f = lambda e: self.phi_map(alpha, e) - e        # noqa: E731
        vals = self.phi_map(alpha, grid) - grid
        # a pair of crossings born at a fold can fall inside one grid cell: refine every grid
        # extremum of f and split the cell at it, so such pairs are not missed
        pts = [(grid[0], vals[0])]
        for j in range(1, points - 1):
            if (vals[j] - vals[j - 1]) * (vals[j + 1] - vals[j]) < 0:
                sign = 1 if vals[j] < vals[j - 1] else -1          # minimum: +1
                r = minimize_scalar(lambda e: sign * f(e), bounds=(grid[j - 1], grid[j + 1]),
                                    method="bounded", options={"xatol": 1e-13})
                if grid[j - 1] < r.x < grid[j + 1] and r.x != grid[j]:
                    pts.append((r.x, f(r.x)))
            pts.append((grid[j], vals[j]))
        pts.append((grid[-1], vals[-1]))
        pts.sort()
        out = []
        for (e0, f0), (e1, f1) in zip(pts[:-1], pts[1:]):
            if f0 > 0 >= f1:
                e = e1 if f1 == 0 else brentq(f, e0, e1, xtol=1e-15, rtol=1e-14)
                out.append({"eps": e, "kc_fraction": self.kc_fraction(alpha, e),
                            "psi": self.psi(alpha, e)})
        return out

    def alpha_star(self) -> float:
        """Eq. 46: α⋆ = λ_σ γ [(Δ + g(1))/(1−2β) − J], J = ∫₀¹ g(φ(x)) x^{−2β} dx."""
        L = D.limit_beta_lt_half()
        # J = (1/(1−2β)) ∫₀¹ g(m(λ_σ u^{−p})) du (u = x^{1−2β})
        _, u, wt, t = self._branch(np.float64(self.jump.lam_f))
        J = float(np.sum(wt * (self.g1 - self.act.gap_np(np.exp(-t))))) / (1 - 2 * self.beta)
        subs = {D.lam_sigma: self.jump.lam_f, D.gamma: self.gamma, D.Delta: self.Delta,
                L["g1"]: self.g1, L["J"]: J, D.beta: self.beta}
        return float(L["alpha_star"].subs(subs))

    def _has(self, alpha, full: bool) -> bool:
        return any((s["kc_fraction"] >= 1) == full for s in self.solutions(alpha))

    def _selected_full(self, alpha) -> bool:
        sols = self.solutions(alpha)
        return max(sols, key=lambda s: s["psi"])["kc_fraction"] >= 1

    def _bisect(self, pred, lo, hi, tol=1e-7):
        if pred(lo) or not pred(hi):
            raise ArithmeticError("transition not bracketed")
        while hi - lo > tol * hi:
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if pred(mid) else (mid, hi)
        return 0.5 * (lo + hi)

    def completion(self, lo=None, hi=None) -> dict:
        """α where the all-learned branch starts (= α⋆), the BO switch, the partial branch end."""
        a_star = self.alpha_star()
        lo = a_star * 0.9 if lo is None else lo
        hi = a_star * 1.2 if hi is None else hi
        start = self._bisect(lambda a: self._has(a, True), lo, hi)
        switch = self._bisect(self._selected_full, lo, hi)
        end = self._bisect(lambda a: not self._has(a, False), lo, hi)
        return {"alpha_star_eq46": a_star, "all_learned_starts": start,
                "bo_completion": switch, "partial_ends": end}
