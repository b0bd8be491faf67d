"""Eigenlearning (Canatar–Bordelon–Pehlevan / Simon et al.): κ, κ_S, L_k, γ, E_g.

    κ = T + κ Σ_k m_k λ_k/(λ_k P + κ)    ⇔    P = T/κ_S + Σ_k m_k L_k,   κ_S = κ/P,
    L_k = λ_k/(λ_k + κ_S),   γ = Σ_k m_k L_k²/P,
    E_g = [Σ_k m_k (1 − L_k)² c_k² + σ² γ]/(1 − γ)      (excess test error; noise not included)

The root is found in u = log κ on F(u) = log h(e^u), h(κ) = T/κ + Σ m λ/(λP + κ), which is
strictly decreasing from h(0+) (= ∞ if T > 0, = N/P if T = 0) to 0.  A bracket is guaranteed:
κ ≤ T + Σ mλ (h < 1 there) and κ ≥ max(T, (N − P) P / Σ(m/λ)) (h ≥ 1 there; the second bound
from λ/(λP+κ) ≥ 1/P − κ/(λP²)).  Newton steps in u are kept inside the bracket (bisection
otherwise).  Ridgeless (T = 0) with P ≥ N: κ = 0, L_k = 1, γ = N/P.

1 − γ is evaluated as (T/κ_S + Σ m L (1 − L))/P (the κ equation substituted), which does not
cancel near the interpolation threshold P → N.

Float64 sums run in numba with block moments (passes.py); `*_mp` functions do the same in
mpmath (for spectra beyond the double range and for digit checks).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np
from solvers.theory.kernel.passes import Moments
from solvers.theory.kernel.spectrum import KernelSpectrum

_EPS = np.finfo(np.float64).eps


@dataclass
class Point:
    """Eigenlearning at one P: κ, κ_S, γ, the bias sum, E_g (excess) and Σ L_k."""
    P: float
    kappa: float
    kappa_S: float
    gamma: float
    one_minus_gamma: float
    bias: float
    eps_g: float
    sum_L: float
    rel_err: float = 0.0         # estimated relative error of κ (rounding x condition)


class KernelError(ValueError):
    """Input the theory cannot answer (one-line message)."""


def _mp(x):
    """mpf of an int / float / Fraction / str / mpf, exactly rounded at the working precision."""
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    return mpmath.mpf(x)


def _float_exact(x) -> bool:
    """Whether float(x) keeps x (no overflow, no underflow of a non-zero value)."""
    f = float(x)
    return math.isfinite(f) and (f != 0.0 or x == 0)


def _check_inputs(P, T, sigma2):
    if not P > 0:
        raise KernelError(f"P = {P} must be > 0")
    if not T >= 0:
        raise KernelError(f"ridge T = {T} must be >= 0")
    if not sigma2 >= 0:
        raise KernelError(f"noise sigma^2 = {sigma2} must be >= 0")


class _Prepared:
    """The float64 arrays, their block moments (passes.py) and the bracket's sums."""

    def __init__(self, spec: KernelSpectrum | None, lam=None, mult=None, c2=None,
                 moments=True):
        if spec is not None:
            if not spec.float64_ok:
                raise KernelError("the spectrum spans more than the float64 range "
                                  "(use the mpmath route)")
            lam, mult, c2 = spec.lam, spec.mult, spec.c2
        self.mo = Moments(lam, mult, c2) if moments else Moments(lam, mult, c2, block=1 << 62)
        self.lam, self.mult, self.c2 = self.mo.lam, self.mo.mult, self.mo.c2
        self.N = float(self.mult.sum())
        self.trace = float(np.dot(self.mult, self.lam))
        self.inv_trace = float(np.dot(self.mult, 1.0 / self.lam))
        self._prefix = None

    def sums(self, kS, n=None):
        return self.mo.sums(kS, n)

    def prefix(self, n):
        """(N, trace, Σ m/λ) of the first n groups (for the decimated problems)."""
        if self._prefix is None:
            z = np.zeros(1)
            self._prefix = (np.concatenate([z, np.cumsum(self.mult)]),
                            np.concatenate([z, np.cumsum(self.mult * self.lam)]),
                            np.concatenate([z, np.cumsum(self.mult / self.lam)]))
        return tuple(float(c[n]) for c in self._prefix)


def bracket(N, trace, inv_trace, P, T):
    """[κ_lo, κ_hi] with h(κ_lo) ≥ 1 > h(κ_hi), or None when κ = 0 (T = 0, P ≥ N)."""
    hi = T + trace
    lo = T
    if N > P:
        lo = max(lo, (N - P) * P / inv_trace)
    if lo <= 0.0:
        return None
    return lo, hi


def solve_kappa(spec_or_prep, P, T, u0=None, n=None) -> tuple[float, float]:
    """κ (fixed-point form) in float64 and its estimated relative error (over the first n
    groups when n is given: the kept modes of a decimation)."""
    prep = spec_or_prep if isinstance(spec_or_prep, _Prepared) else _Prepared(spec_or_prep)
    if n is None:
        N, trace, inv_trace = prep.N, prep.trace, prep.inv_trace
    else:
        N, trace, inv_trace = prep.prefix(n)
    br = bracket(N, trace, inv_trace, float(P), float(T))
    if br is None:
        return 0.0, 0.0
    lo, hi = br
    if lo >= hi:           # T dominates everything to rounding: h(T) = 1 + O(trace/T)
        return lo, _EPS
    u_lo, u_hi = math.log(lo), math.log(hi)
    u_start = 0.5 * (u_lo + u_hi) if u0 is None else float(u0)
    u, slope, _ = prep.mo.solve(P, T, u_lo, u_hi, u_start, n)
    # h carries a few ulps of rounding (compensated / moment sums); δu ≈ δF / |F'|
    rel = 8.0 * _EPS / max(slope, 1e-300) + 4.0 * _EPS * max(1.0, abs(u))
    return math.exp(u), rel


def _point(prep: _Prepared, P, T, sigma2, kappa, rel) -> Point:
    kS = kappa / P
    sL, sL2, sLq, bias = prep.sums(kS)
    gamma = sL2 / P
    if kappa == 0.0:
        omg = (P - prep.N) / P
    else:
        omg = (T / kS + sLq) / P
    if omg <= 0.0:
        if sigma2 > 0:
            raise KernelError(f"ridgeless noisy regression at P = {P:g} = rank {prep.N:g}: "
                              f"the test error is infinite")
        eps = 0.0 if bias == 0.0 else math.inf
    else:
        eps = (bias + sigma2 * gamma) / omg
    return Point(P, kappa, kS, gamma, omg, bias, eps, sL, rel)


def eigenlearning(spec: KernelSpectrum, Ps, T=0.0, sigma2=0.0, max_rel_err=1e-11,
                  prepared=None) -> list[Point]:
    """Eigenlearning at each P (float64; the mpmath route when the spectrum leaves it or when a
    root is too ill-conditioned for ``max_rel_err``)."""
    Ps = [float(p) for p in Ps]
    for p in Ps:
        _check_inputs(p, T, sigma2)
    if not (spec.float64_ok and _float_exact(T) and _float_exact(sigma2)):
        # beyond the double range (spectrum, ridge or noise): mpmath with the exact inputs
        return eigenlearning_mp(spec, Ps, T, sigma2)
    T, sigma2 = float(T), float(sigma2)
    prep = prepared if prepared is not None else _Prepared(spec)
    order = sorted(range(len(Ps)), key=lambda i: Ps[i])
    out = [None] * len(Ps)
    prev = []                     # (log P, log κ) of the last roots: warm start by extrapolation
    for i in order:
        P = Ps[i]
        u0 = None
        if len(prev) >= 2 and prev[-1][1] is not None and prev[-2][1] is not None:
            (x1, y1), (x2, y2) = prev[-2], prev[-1]
            u0 = y2 + (y2 - y1) / (x2 - x1) * (math.log(P) - x2) if x2 > x1 else y2
        elif prev and prev[-1][1] is not None:
            u0 = prev[-1][1]
        kappa, rel = solve_kappa(prep, P, T, u0)
        if rel > max_rel_err:
            out[i] = eigenlearning_mp(spec, [P], T, sigma2)[0]
            prev.append((math.log(P), math.log(out[i].kappa) if out[i].kappa > 0 else None))
            continue
        out[i] = _point(prep, P, T, sigma2, kappa, rel)
        prev.append((math.log(P), math.log(kappa) if kappa > 0 else None))
    return out


def learnabilities(spec: KernelSpectrum, kappa_S) -> np.ndarray:
    """L_k = λ_k/(λ_k + κ_S) per group (float64)."""
    lam = spec.lam
    return lam / (lam + kappa_S)


# ---- mpmath route -----------------------------------------------------------------------

def _h_mp(lam, mult, P, kappa, T):
    s = mpmath.mpf(0)
    s2 = mpmath.mpf(0)
    for l, m in zip(lam, mult):
        d = l * P + kappa
        r = m * l / d
        s += r
        s2 += r * kappa / d
    return T / kappa + s, -T / kappa - s2


def solve_kappa_mp(lam, mult, P, T, tol=None):
    """κ of the fixed-point form in mpmath (current precision); lists of mpf in."""
    P, T = mpmath.mpf(P), mpmath.mpf(T)
    N = mpmath.fsum(mult)
    trace = mpmath.fsum(m * l for l, m in zip(lam, mult))
    hi = T + trace
    lo = T
    if N > P:
        lo = max(lo, (N - P) * P / mpmath.fsum(m / l for l, m in zip(lam, mult)))
    if lo <= 0:
        return mpmath.mpf(0)
    if lo >= hi:
        return lo
    u_lo, u_hi = mpmath.log(lo), mpmath.log(hi)
    u = (u_lo + u_hi) / 2
    tol = tol if tol is not None else mpmath.mpf(10) ** (-mpmath.mp.dps + 3)
    for _ in range(20 * mpmath.mp.dps):
        h, dh = _h_mp(lam, mult, P, mpmath.exp(u), T)
        F = mpmath.log(h)
        if F > 0:
            u_lo = u
        elif F < 0:
            u_hi = u
        else:
            break
        step = -F * h / dh
        if abs(step) <= tol * max(1, abs(u)):
            u += step
            break
        un = u + step
        if not (u_lo < un < u_hi):
            un = (u_lo + u_hi) / 2
        if u_hi - u_lo <= tol * max(1, abs(u)):
            u = un
            break
        u = un
    return mpmath.exp(u)


def solve_kappa_S_mp(lam, mult, P, T):
    """κ_S of the learnability form P = T/κ_S + Σ m λ/(λ + κ_S) by the Illinois method in
    log κ_S on a bracket found by doubling: a route independent of `solve_kappa`."""
    P, T = mpmath.mpf(P), mpmath.mpf(T)
    N = mpmath.fsum(mult)
    if T == 0 and N <= P:
        return mpmath.mpf(0)

    def G(v):
        kS = mpmath.exp(v)
        return T / kS + mpmath.fsum(m * l / (l + kS) for l, m in zip(lam, mult)) - P

    # G is decreasing in v; widen a bracket from κ_S = 1 geometrically (no bound reused),
    # then Illinois (regula falsi with halving) on the sign change
    a, b = mpmath.mpf(-1), mpmath.mpf(1)
    while G(a) <= 0:
        a *= 2
    while G(b) >= 0:
        b *= 2
    Ga, Gb = G(a), G(b)
    tol = mpmath.mpf(10) ** (-mpmath.mp.dps + 3)
    side = 0
    for _ in range(50 * mpmath.mp.dps):
        v = (a * Gb - b * Ga) / (Gb - Ga)
        Gv = G(v)
        if Gv == 0:
            a = b = v
            break
        if (Gv > 0) == (Ga > 0):
            a, Ga = v, Gv
            if side == -1:
                Gb /= 2
            side = -1
        else:
            b, Gb = v, Gv
            if side == 1:
                Ga /= 2
            side = 1
        if abs(b - a) <= tol * max(1, abs(v)):
            break
    return mpmath.exp((a + b) / 2)


def eigenlearning_mp(spec: KernelSpectrum, Ps, T=0, sigma2=0, dps=30) -> list[Point]:
    """Eigenlearning in mpmath at ``dps`` digits; values returned as floats (mpf in ``mp``)."""
    out = []
    with mpmath.workdps(dps + 10):
        lam, c2, mult = spec.mp_values()
        T_, s2 = _mp(T), _mp(sigma2)
        N = mpmath.fsum(mult)
        for P in Ps:
            P_ = mpmath.mpf(P)
            kappa = solve_kappa_mp(lam, mult, P_, T_)
            kS = kappa / P_
            sL = sL2 = sLq = bias = mpmath.mpf(0)
            for l, c, m in zip(lam, c2, mult):
                d = l + kS
                L, q = l / d, kS / d
                sL += m * L
                sL2 += m * L * L
                sLq += m * L * q
                bias += m * q * q * c
            gamma = sL2 / P_
            omg = (P_ - N) / P_ if kappa == 0 else (T_ / kS + sLq) / P_
            if omg <= 0:
                if s2 > 0:
                    raise KernelError(f"ridgeless noisy regression at P = {float(P):g} = rank "
                                      f"{float(N):g}: the test error is infinite")
                eps = mpmath.mpf(0)
            else:
                eps = (bias + s2 * gamma) / omg
            pt = Point(float(P), float(kappa), float(kS), float(gamma), float(omg),
                       float(bias), float(eps), float(sL), 10.0 ** (-dps))
            pt.mp = {"kappa": kappa, "kappa_S": kS, "gamma": gamma, "eps_g": eps, "sum_L": sL}
            out.append(pt)
    return out
