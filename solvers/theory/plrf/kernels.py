"""Compiled inner loops of the PLRF room (numba): the secular roots and amplitudes of the
closed-form recursion, and Newton's method for the deterministic equivalent.  Each loop is
O(modes) per evaluation with no temporaries; the callers in recursion.py / deterministic.py
hold the reasoning."""
from __future__ import annotations

import numpy as np
from numba import njit

_EPS = 2.220446049250313e-16


@njit(cache=True, nogil=True)
def _secular(e, z, origin, t):
    g = 1.0
    dg = 0.0
    for i in range(e.size):
        q = 1.0 / ((e[i] - origin) - t)
        g -= z[i] * q
        dg -= z[i] * q * q
    return g, dg


@njit(cache=True, nogil=True)
def secular_roots(e, z):
    """Roots of Σ z_i/(e_i − ν) = 1 in (e_{k−1}, e_k) (e_{−1} := 0), e ascending: ν = origin + t
    with the origin at the nearer end of the gap (bisection, then safeguarded Newton)."""
    m = e.size
    origin = np.empty(m)
    tt = np.empty(m)
    for k in range(m):
        left = 0.0 if k == 0 else e[k - 1]
        right = e[k]
        half = 0.5 * (right - left)
        g_mid, _ = _secular(e, z, left, half)
        if g_mid < 0.0:            # g falls through the gap: the root is left of the middle
            org, a, b = left, 0.0, half
        else:
            org, a, b = right, -half, 0.0
        t = 0.5 * (a + b)
        for _ in range(300):
            g, dg = _secular(e, z, org, t)
            if g > 0.0:
                a = t
            else:
                b = t
            new = t - g / dg if dg != 0.0 else 0.5 * (a + b)
            if not (a < new < b):
                new = 0.5 * (a + b)
            done = abs(new - t) <= 2.0 * _EPS * abs(new) or \
                (b - a) <= 2.0 * _EPS * max(abs(a), abs(b))
            t = new
            if done:
                break
        origin[k] = org
        tt[k] = t
    return origin, tt


@njit(cache=True, nogil=True)
def amplitudes(e, z, dS, origin, t):
    """A_k = ½ Σ dS_i/(e_i − ν_k) / Σ z_i/(e_i − ν_k)²."""
    m = e.size
    A = np.empty(m)
    for k in range(m):
        num = 0.0
        den = 0.0
        for i in range(m):
            q = 1.0 / ((e[i] - origin[k]) - t[k])
            num += dS[i] * q
            den += z[i] * q * q
        A[k] = 0.5 * num / den
    return A


@njit(cache=True, nogil=True)
def resolvent(s, sig, inv_d, tail_sig, tail_sig2, sig_next):
    """(1/d)Σσ/(1+σs) and (1/d)Σσ²/(1+σs)² at one complex s (tails as power series)."""
    f0 = 0.0 + 0.0j
    f1 = 0.0 + 0.0j
    sr, si = s.real, s.imag
    a0 = 0.0
    b0 = 0.0
    a1 = 0.0
    b1 = 0.0
    for j in range(sig.size):
        # q = σ/(1 + σs) in real arithmetic (one division; numba's complex one is careful and slow)
        wr = 1.0 + sig[j] * sr
        wi = sig[j] * si
        inv = sig[j] / (wr * wr + wi * wi)
        qr = wr * inv
        qi = -wi * inv
        a0 += qr
        b0 += qi
        a1 += qr * qr - qi * qi
        b1 += 2.0 * qr * qi
    f0 += a0 + 1j * b0
    f1 += a1 + 1j * b1
    pw = 1.0 + 0.0j
    for n in range(tail_sig.size):
        f0 += pw * tail_sig[n]
        f1 += (n + 1) * pw * tail_sig2[n]
        pw *= -s * sig_next
    return f0 * inv_d, f1 * inv_d


@njit(cache=True, nogil=True)
def stieltjes(x, eta_end, stages, final_steps, sig, inv_d, tail_sig, tail_sig2, sig_next):
    """s(x(1 + i η_end)) solving 1/s = −z + (1/d)Σσ/(1+σs), by continuation in Im z from 10
    down (two Newton steps per stage, step halving keeps Im s > 0); returns s and the relative
    residual |s·f(s)|."""
    n = x.size
    out = np.empty(n, dtype=np.complex128)
    res = np.empty(n)
    for p in range(n):
        s = -1.0 / (x[p] + 10.0j)
        for k in range(stages + 1):
            if k < stages:
                im = 10.0 * (eta_end * x[p] / 10.0) ** ((k + 1) / stages)
                steps = 2
            else:
                im = eta_end * x[p]
                steps = final_steps
            zc = x[p] + 1j * im
            for _ in range(steps):
                f0, f1 = resolvent(s, sig, inv_d, tail_sig, tail_sig2, sig_next)
                f = 1.0 / s + zc - f0
                df = -1.0 / (s * s) + f1
                step = f / df
                new = s - step
                h = 0
                while not (new.imag > 0.0) and h < 60:
                    step *= 0.5
                    new = s - step
                    h += 1
                if new.imag > 0.0:
                    s = new
                if k == stages and abs(step) <= 1e-13 * abs(s):
                    break
        f0, _ = resolvent(s, sig, inv_d, tail_sig, tail_sig2, sig_next)
        out[p] = s
        res[p] = abs((1.0 / s + (x[p] + 1j * eta_end * x[p]) - f0) * s)
    return out, res
