"""The scalar channel m_σ(λ) = argmax_{q∈[0,1)} [λ g(q) + q + ln(1−q)] and its jump (λ_σ, q_σ).

Above λ_σ the maximiser is the root of r(q) = q/((1−q) g'(q)) = λ on (q_σ, 1); it is solved in
t = −ln(1−q), where the equation reads ln(e^t − 1) − ln g'(1 − e^{−t}) = ln λ (increasing in t;
1 − q = e^{−t} stays exact when it reaches 1e−7 and below).  Two routes for (λ_σ, q_σ):
"pair" (root of H(q) = F(r(q), q), i.e. F = ∂_qF = 0) and "min" (golden-section minimum of
h(q) = (−q − ln(1−q))/g(q)).  All mpmath work runs under ``mpmath.workdps`` (scoped).
"""
from __future__ import annotations

from dataclasses import dataclass

import mpmath
import numpy as np
import sympy as sp

from derive import bayes as D

from .activation import Activation


@dataclass(frozen=True)
class Jump:
    lam: mpmath.mpf        # λ_σ
    q: mpmath.mpf          # q_σ
    t: mpmath.mpf          # −ln(1 − q_σ)
    dps: int

    @property
    def lam_f(self) -> float:
        return float(self.lam)

    @property
    def q_f(self) -> float:
        return float(self.q)

    @property
    def t_f(self) -> float:
        return float(self.t)


def _channel_fns(act: Activation):
    key = ("channel",)
    if key not in act._cache:
        ch = D.scalar_channel(act.g)
        act._cache[key] = {name: sp.lambdify(D.q, ch[name], modules="mpmath")
                           for name in ("H", "h", "r")}
    return act._cache[key]


def _bracket_H(fns, lo=1e-3, hi=1 - 1e-9, n=400):
    """A float sign-change bracket of H on (0, 1), scanned on a grid in t (H < 0 near 0)."""
    ts = np.linspace(-np.log1p(-lo), -np.log(1 - hi), n)
    prev = None
    for tt in ts:
        qq = mpmath.mpf(-np.expm1(-tt))
        val = fns["H"](qq)
        if prev is not None and prev[1] < 0 <= val:
            return prev[0], qq
        prev = (qq, val)
    raise ArithmeticError("no root of F = ∂_qF = 0 on (0, 1)")


def jump_pair(act: Activation, dps: int = 30) -> Jump:
    """(λ_σ, q_σ) from the pair F = 0, ∂_qF = 0 (root of H(q) = F(r(q), q))."""
    fns = _channel_fns(act)
    with mpmath.workdps(dps + 15):
        a, b = _bracket_H(fns)
        qs = mpmath.findroot(fns["H"], (a, b), solver="anderson")
        lam = fns["r"](qs)
        t = -mpmath.log1p(-qs)
    with mpmath.workdps(dps):
        return Jump(+lam, +qs, +t, dps)


def jump_min(act: Activation, dps: int = 30) -> Jump:
    """(λ_σ, q_σ) as the minimum of h(q) (golden section; λ_σ to full precision, q_σ to half)."""
    fns = _channel_fns(act)
    with mpmath.workdps(2 * dps + 10):
        a, b = mpmath.mpf("0.05"), 1 - mpmath.mpf(10) ** -6
        # coarse scan first: h is unimodal on (0, 1) for the activations tested, but start the
        # golden section on the bracket around the grid minimum to be safe
        grid = [a + (b - a) * j / 200 for j in range(201)]
        vals = [fns["h"](x) for x in grid]
        j = min(range(len(vals)), key=vals.__getitem__)
        a, b = grid[max(j - 1, 0)], grid[min(j + 1, 200)]
        invphi = (mpmath.sqrt(5) - 1) / 2
        c, d = b - invphi * (b - a), a + invphi * (b - a)
        fc, fd = fns["h"](c), fns["h"](d)
        tol = mpmath.mpf(10) ** (-(dps + 5))
        while b - a > tol:
            if fc < fd:
                b, d, fd = d, c, fc
                c = b - invphi * (b - a)
                fc = fns["h"](c)
            else:
                a, c, fc = c, d, fd
                d = a + invphi * (b - a)
                fd = fns["h"](d)
        qs = (a + b) / 2
        lam = fns["h"](qs)
        t = -mpmath.log1p(-qs)
    with mpmath.workdps(dps):
        return Jump(+lam, +qs, +t, dps)


def _R_mp(act, t, loglam):
    qv = -mpmath.expm1(-t)
    return mpmath.log(mpmath.expm1(t)) - mpmath.log(act.gp_mp(qv)) - loglam


def _dR_mp(act, t):
    qv = -mpmath.expm1(-t)
    e = mpmath.exp(-t)
    return 1 / (-mpmath.expm1(-t)) - act.gpp_mp(qv) * e / act.gp_mp(qv)


def branch_t_mp(act: Activation, lam, jump: Jump, dps: int = 30):
    """t = −ln(1−q) on the learned branch r(q) = λ, λ ≥ λ_σ (q_σ at λ_σ); mpmath, scoped."""
    with mpmath.workdps(dps + 10):
        lam = mpmath.mpf(lam)
        if lam < jump.lam:
            raise ValueError(f"λ = {lam} is below λ_σ = {jump.lam}: no learned branch")
        loglam = mpmath.log(lam)
        lo = mpmath.mpf(jump.t)
        hi = mpmath.log1p(lam * act.gp_mp(1)) + mpmath.mpf(1) / 10
        t = min(max(mpmath.log(lam * act.gp_mp(1)), lo), hi)
        tol = mpmath.mpf(10) ** (-(dps + 5))
        for _ in range(400):
            f = _R_mp(act, t, loglam)
            if f > 0:
                hi = t
            else:
                lo = t
            step = f / _dR_mp(act, t)
            tn = t - step
            if not (lo < tn < hi):
                tn = (lo + hi) / 2
            if abs(tn - t) < tol * max(1, abs(t)) or hi - lo < tol:
                t = tn
                break
            t = tn
        else:
            raise ArithmeticError("m_σ: Newton–bisection did not converge")
    with mpmath.workdps(dps):
        return +t


def m_mp(act: Activation, lam, jump: Jump, dps: int = 30):
    """m_σ(λ) (0 for λ ≤ λ_σ) at ``dps`` digits."""
    with mpmath.workdps(dps + 10):
        if mpmath.mpf(lam) <= jump.lam:
            return mpmath.mpf(0)
        t = branch_t_mp(act, lam, jump, dps)
        out = -mpmath.expm1(-t)
    with mpmath.workdps(dps):
        return +out


def branch_t_np(act: Activation, lam, jump: Jump, iters: int = 100) -> np.ndarray:
    """Vectorised float64 version of `branch_t_mp` (λ ≥ λ_σ, clipped at λ_σ)."""
    lam = np.maximum(np.asarray(lam, float), jump.lam_f)
    gp1 = act.gp1
    loglam = np.log(lam)
    lo = np.full(lam.shape, jump.t_f)
    hi = np.log1p(lam * gp1) + 0.1
    t = np.clip(np.log(lam * gp1), lo, hi)
    for _ in range(iters):
        e = np.exp(-t)
        qv = -np.expm1(-t)
        gp = act.gp_np(qv)
        f = np.log(np.expm1(t)) - np.log(gp) - loglam
        pos = f > 0
        hi = np.where(pos, t, hi)
        lo = np.where(pos, lo, t)
        df = 1 / qv - act.gpp_np(qv) * e / gp
        tn = t - f / df
        bad = ~((tn > lo) & (tn < hi)) | ~np.isfinite(tn)
        tn = np.where(bad, (lo + hi) / 2, tn)
        done = np.abs(tn - t) <= 4e-16 * np.maximum(1, np.abs(t))
        t = tn
        if np.all(done | (hi - lo <= 4e-16 * np.maximum(1, hi))):
            break
    at_jump = lam <= jump.lam_f
    return np.where(at_jump, jump.t_f, t)


def m_np(act: Activation, lam, jump: Jump) -> np.ndarray:
    lam = np.asarray(lam, float)
    t = branch_t_np(act, lam, jump)
    return np.where(lam > jump.lam_f, -np.expm1(-t), 0.0)
