"""The expected loss of one-pass SGD given the Hessian's spectrum: the per-mode recursion, its
Volterra (renewal) form, the stability conditions, and the recursion solved in closed form.

A spectrum is a list of modes (eigenvalue λ_k > 0, multiplicity n_k — 1 for one draw of W, the
mass of a cell for the deterministic equivalent — and loss weight w_k) plus the misfit P* that no
mode reaches.  For Gaussian inputs, with a(λ) = 1 − 2γBλ + γ²B(B+1)λ² (the B(B+1): B(B−1) from
the mean of the batch, 2B from the Gaussian fourth moment),

    S_k(r+1) = a_k S_k(r) + 2γ²B n_k λ_k² p(r),   S_k(0) = w_k,   p(r) = P* + ½ Σ_k S_k(r),

equivalently p(r) = F(r) + Σ_{s<r} K(r−1−s) p(s) with F(r) = P* + ½Σ w_k a_k^r and
K(r) = γ²B Σ n_k λ_k² a_k^r.

Closed form.  The recursion is S ← M S + const with M = diag(a) + z 1ᵀ (z_k = γ²B n_k λ_k²),
a diagonal plus rank one, similar to the symmetric diag(a) + √z √zᵀ.  Its eigenvalues
μ = 1 − ν solve the secular equation Σ z_k/(e_k − ν) = 1 (e_k = 1 − a_k), one in each gap of
the e's, and

    p(r) = p∞ + Σ_k A_k μ_k^r,   A_k = ½ Σ_i ΔS_i/(e_i − ν_k) / Σ_i z_i/(e_i − ν_k)²,

with ΔS = w − 2 z p∞/e the initial distance from the fixed point and p∞ = P*/(1 − ‖K‖).  The
roots are found by bisection on the distance to the nearer pole, so 1 − μ_k keeps its relative
accuracy even when it is 10⁻¹²; p at r = 10⁹ then costs what p at r = 10 costs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import kernels

EPS = np.finfo(float).eps


class Unstable(ValueError):
    """The expected loss grows without bound (a one-line reason)."""


@dataclass(frozen=True)
class Spectrum:
    lam: np.ndarray       # eigenvalues > 0
    mult: np.ndarray      # multiplicities (cell masses)
    w: np.ndarray         # loss weights: P(0) = p_star + ½ Σ w
    p_star: float


def a_of(lam, gamma: float, batch: int):
    return 1.0 - 2.0 * gamma * batch * lam + gamma ** 2 * batch * (batch + 1) * lam ** 2


def e_of(lam, gamma: float, batch: int):
    """1 − a(λ) without cancellation."""
    return gamma * batch * lam * (2.0 - gamma * (batch + 1) * lam)


def kernel_norm(sp: Spectrum, gamma: float, batch: int) -> float:
    """‖K‖ = Σ_r K(r) = Σ n γλ/(2 − γ(B+1)λ) (needs the per-mode condition first)."""
    return float(np.sum(sp.mult * gamma * sp.lam / (2.0 - gamma * (batch + 1) * sp.lam)))


def check_stable(sp: Spectrum, gamma: float, batch: int) -> float:
    """Refuse (Unstable) a step for which the expected loss diverges; return ‖K‖."""
    lam_max = float(np.max(sp.lam))
    edge = gamma * (batch + 1) * lam_max
    if not edge < 2.0:
        raise Unstable(f"gamma = {gamma:g} is unstable: gamma*(batch+1)*lambda_max = {edge:.4g} "
                       f">= 2 (lambda_max = {lam_max:.4g}, batch = {batch}); take gamma < "
                       f"{2.0 / ((batch + 1) * lam_max):.4g}")
    norm = kernel_norm(sp, gamma, batch)
    if not norm < 1.0:
        raise Unstable(f"gamma = {gamma:g} is unstable: the noise kernel's norm ||K|| = "
                       f"{norm:.4g} >= 1, so the SGD noise feeds back without bound; lower gamma "
                       f"(||K|| ~ gamma/2 * sum(lambda))")
    return norm


def steps(sp: Spectrum, gamma: float, batch: int, r_max: int) -> np.ndarray:
    """p(0..r_max) by plain stepping (the reference; O(r_max · modes))."""
    a = a_of(sp.lam, gamma, batch)
    c = 2.0 * gamma ** 2 * batch * sp.mult * sp.lam ** 2
    S = sp.w.astype(float).copy()
    out = np.empty(r_max + 1)
    for r in range(r_max + 1):
        p = sp.p_star + 0.5 * S.sum()
        out[r] = p
        S = a * S + c * p
    return out


def volterra(sp: Spectrum, gamma: float, batch: int, r_max: int) -> np.ndarray:
    """p(0..r_max) from the renewal equation p = F + K * p (O(r_max²))."""
    a = a_of(sp.lam, gamma, batch)
    powers = a[None, :] ** np.arange(r_max + 1)[:, None]
    F = sp.p_star + 0.5 * powers @ sp.w
    K = gamma ** 2 * batch * powers @ (sp.mult * sp.lam ** 2)
    p = np.empty(r_max + 1)
    for r in range(r_max + 1):
        p[r] = F[r] + float(np.dot(K[:r][::-1], p[:r]))
    return p


@dataclass(frozen=True)
class Solution:
    """p(r) = p_inf + Σ A μ^r (+ decoupled modes), evaluated by :meth:`loss`."""

    p_inf: float
    norm_K: float
    nu: np.ndarray        # 1 − μ_k
    A: np.ndarray
    free_w: np.ndarray    # modes the noise does not feed (z = 0): ½ w a^r
    free_a: np.ndarray

    def loss(self, r) -> tuple[np.ndarray, np.ndarray]:
        """p(r) and a bound on its rounding error, for integer r ≥ 0."""
        r = np.asarray(r, dtype=float)
        log_mu = np.log1p(-self.nu)
        p = np.full(r.shape, self.p_inf)
        mag = np.full(r.shape, abs(self.p_inf))
        drift = np.zeros(r.shape)
        flat = r.reshape(-1)
        for lo in range(0, flat.size, 256):
            rr = flat[lo:lo + 256, None]
            terms = self.A[None, :] * np.exp(rr * log_mu[None, :])
            free = 0.5 * self.free_w[None, :] * np.exp(rr * np.log(self.free_a)[None, :])
            idx = np.unravel_index(np.arange(lo, lo + rr.shape[0]), r.shape)
            p[idx] += terms.sum(axis=1) + free.sum(axis=1)
            absum = np.abs(terms).sum(axis=1) + free.sum(axis=1)
            mag[idx] += absum
            drift[idx] = np.abs(terms * (rr * log_mu[None, :])).sum(axis=1)
        err = EPS * (16.0 * mag + 4.0 * drift)
        return p, err


def _merge_equal(e, z, dS):
    """Exactly equal poles act as one mode (the differences within the group never reach p)."""
    order = np.argsort(e, kind="stable")
    e, z, dS = e[order], z[order], dS[order]
    new = np.concatenate([[True], np.diff(e) > 0])
    if new.all():
        return e, z, dS
    groups = np.cumsum(new) - 1
    return e[new], np.bincount(groups, z), np.bincount(groups, dS)


def solve(sp: Spectrum, gamma: float, batch: int) -> Solution:
    """The recursion in closed form (stability is checked first)."""
    norm = check_stable(sp, gamma, batch)
    p_inf = sp.p_star / (1.0 - norm)
    e = e_of(sp.lam, gamma, batch)
    z = gamma ** 2 * batch * sp.mult * sp.lam ** 2
    coupled = z > 0
    dS = sp.w - 2.0 * z * p_inf / e
    ec, zc, dc = _merge_equal(e[coupled], z[coupled], dS[coupled])
    origin, t = kernels.secular_roots(ec, zc)
    A = kernels.amplitudes(ec, zc, dc, origin, t)
    m = ec.size
    nu = origin + t
    if m and not (np.all(nu > 0) and np.all(np.isfinite(A))):
        raise Unstable("the closed form lost the spectrum's smallest rate (1 - mu <= 0): the "
                       "step is at the edge of stability")
    free = ~coupled
    return Solution(p_inf=p_inf, norm_K=norm, nu=nu, A=A, free_w=sp.w[free],
                    free_a=1.0 - e[free])


def loss_curve(sp: Spectrum, gamma: float, batch: int, r, rtol: float = 1e-9) -> dict:
    """p at the integers r, with the closed form's error bound; a bound above ``rtol`` of p is
    refused rather than returned."""
    sol = solve(sp, gamma, batch)
    p, err = sol.loss(r)
    worst = float(np.max(err / np.abs(p))) if p.size else 0.0
    if not math.isfinite(worst) or worst > rtol:
        raise ArithmeticError(f"the closed form carries only {worst:.2g} relative accuracy "
                              f"here (asked {rtol:g})")
    return {"loss": p, "err": err, "p_inf": sol.p_inf, "norm_K": sol.norm_K}
