"""Compiled inner loops of the PLRF room (numba): the secular roots and amplitudes of the
closed-form recursion, and Newton's method for the deterministic equivalent.  Each loop is
O(modes) per evaluation with no temporaries; the callers in recursion.py / deterministic.py
hold the reasoning."""
from __future__ import annotations

import cmath

import numpy as np
from numba import njit

from .blocks import RHO_MAX, TAU

_EPS = 2.220446049250313e-16
# relative residual |s·f(s)| accepted for the Stieltjes root: the sum over v ~ 10⁴-10⁵ terms
# rounds at ~1e-13, and the caller refuses anything above 1e-8
TOL = 1e-11


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
    with the origin at the nearer end of the gap (Newton on t·g(t), kept inside the bracket by
    bisection)."""
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
            # Newton on h(t) = t·g(t): the pole at the origin cancels, h is smooth across
            # the root and the iteration converges in a few steps
            dh = g + t * dg
            new = t - t * g / dh if dh != 0.0 else 0.5 * (a + b)
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
def _plain(s, sig, lo, hi):
    """Σσ/(1+σs) and Σσ²/(1+σs)² over j in [lo, hi), term by term."""
    sr, si = s.real, s.imag
    a0 = 0.0
    b0 = 0.0
    a1 = 0.0
    b1 = 0.0
    for j in range(lo, hi):
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
    return a0 + 1j * b0, a1 + 1j * b1


@njit(cache=True, nogil=True)
def _series(s, c, h, m, p):
    """Σ w/(1+σs)^p over one block from its moments m (see blocks.py); False if ρ is too large
    for the series to reach TAU within the stored moments."""
    den = 1.0 + c * s
    t = s * (h / den)
    rho = abs(t)
    if rho > RHO_MAX:
        return 0.0j, False
    fac = (1.0 + rho) / (1.0 - rho)
    if p == 2:
        fac = fac * fac
    acc = 0.0j
    pw = 1.0 + 0.0j
    rk = 1.0
    for n in range(m.size):
        acc += (n + 1 if p == 2 else 1) * pw * m[n]
        pw *= -t
        rk *= rho
        # the rest of the series, per term and relative to its modulus
        if (rk * fac if p == 1 else rk * (n + 2) * fac) <= TAU:
            return (acc / den if p == 1 else acc / (den * den)), True
    return 0.0j, False


@njit(cache=True, nogil=True)
def _pair(s, sig, b1, b2):
    """Σσ/(1+σs), Σσ²/(1+σs)² over all j: plainly below j₀, by blocks above (b1, b2: the packed
    moments of σ and σ²)."""
    j0, f_lo, f_hi, fc, fh, fm1, c_first, c_last, cc, ch, cm1 = b1
    fm2 = b2[5]
    cm2 = b2[10]
    f0, f1 = _plain(s, sig, 0, j0)
    for k in range(cc.size):
        v0, ok = _series(s, cc[k], ch[k], cm1[k], 1)
        if ok:
            v1, ok = _series(s, cc[k], ch[k], cm2[k], 2)
        if ok:
            f0 += v0
            f1 += v1
            continue
        for f in range(c_first[k], c_last[k]):
            v0, ok = _series(s, fc[f], fh[f], fm1[f], 1)
            if ok:
                v1, ok = _series(s, fc[f], fh[f], fm2[f], 2)
            if not ok:
                v0, v1 = _plain(s, sig, f_lo[f], f_hi[f])
            f0 += v0
            f1 += v1
    return f0, f1


@njit(cache=True, nogil=True)
def _log_series(s, c, h, m):
    """Σ log(1+σs) over one block from the moments m of the weight 1: with u = (σ − c)/h and
    t = sh/(1 + cs), log(1+σs) = log(1+cs) + log(1 + ut) (both arguments in the upper half
    plane and |ut| < 1, so the principal branches add up to the principal branch).  The
    remainder after n terms is ≤ ρ^(n+1)/((n+1)(1−ρ)) per term; stop at TAU of |log(1+cs)|."""
    den = 1.0 + c * s
    t = s * (h / den)
    rho = abs(t)
    if rho > RHO_MAX:
        return 0.0j, False
    base = cmath.log(den)
    acc = m[0] * base
    scale = TAU * abs(base)
    pw = t
    rk = rho
    for n in range(1, m.size):
        acc += pw * (m[n] / n)
        pw *= -t
        rk *= rho
        if rk / ((n + 1) * (1.0 - rho)) <= scale:
            return acc, True
    return 0.0j, False


@njit(cache=True, nogil=True)
def _term(log, w, sig, z):
    return cmath.log(1.0 + sig * z) if log else w / (1.0 + sig * z)


@njit(cache=True, nogil=True)
def _block(log, z, c, h, m):
    return _log_series(z, c, h, m) if log else _series(z, c, h, m, 1)


@njit(cache=True, nogil=True)
def _blocked(s, sig, w, b, log):
    """Σ_j w_j/(1+σ_j s) (``log`` False) or Σ_j log(1+σ_j s) (True, w unused) at each s:
    plainly below j₀, by blocks above (b: the packed moments of w, or of the weight 1)."""
    j0, f_lo, f_hi, fc, fh, fm, c_first, c_last, cc, ch, cm = b
    out = np.empty(s.size, dtype=np.complex128)
    for p in range(s.size):
        z = s[p]
        acc = 0.0j
        for j in range(j0):
            acc += _term(log, w[j], sig[j], z)
        for k in range(cc.size):
            v, ok = _block(log, z, cc[k], ch[k], cm[k])
            if ok:
                acc += v
                continue
            for f in range(c_first[k], c_last[k]):
                v, ok = _block(log, z, fc[f], fh[f], fm[f])
                if ok:
                    acc += v
                else:
                    for j in range(f_lo[f], f_hi[f]):
                        acc += _term(log, w[j], sig[j], z)
        out[p] = acc
    return out


@njit(cache=True, nogil=True)
def weighted(s, sig, w, b):
    """Σ_j w_j/(1+σ_j s) at each s (b: the packed moments of w)."""
    return _blocked(s, sig, w, b, False)


@njit(cache=True, nogil=True)
def logsum(s, sig, b):
    """Σ_j log(1+σ_j s) at each s (Im s > 0; b: the packed moments of the weight 1)."""
    return _blocked(s, sig, sig, b, True)


@njit(cache=True, nogil=True)
def resolvent(s, sig, b1, b2, inv_d, tail_sig, tail_sig2, sig_next):
    """(1/d)Σσ/(1+σs) and (1/d)Σσ²/(1+σs)² at one complex s (tails as power series)."""
    f0, f1 = _pair(s, sig, b1, b2)
    pw = 1.0 + 0.0j
    for n in range(tail_sig.size):
        f0 += pw * tail_sig[n]
        f1 += (n + 1) * pw * tail_sig2[n]
        pw *= -s * sig_next
    return f0 * inv_d, f1 * inv_d


@njit(cache=True, nogil=True)
def _newton(s, zc, steps, tol, sig, b1, b2, inv_d, tail_sig, tail_sig2, sig_next):
    """Newton on f(s) = 1/s + z − (1/d)Σσ/(1+σs) = 0 in the upper half plane; returns s and
    whether the relative residual |s·f(s)| fell to tol.  A step that leaves Im s > 0 is halved;
    if that does not help (in a spectral gap Im s is at the rounding level of Re s) the real
    part is kept and Im s shrinks by 10 instead."""
    for it in range(steps + 1):
        if not (s.imag > 0.0 and abs(s) < 1e300):
            return s, False                   # lost: the caller's continuation starts afresh
        f0, f1 = resolvent(s, sig, b1, b2, inv_d, tail_sig, tail_sig2, sig_next)
        f = 1.0 / s + zc - f0
        # the imaginary part of the equation, Im s·(1/|s|² − (1/d)Σσ²/|1+σs|²) = Im z, has no
        # cancellation; checking it rejects the real roots of the real-z equation, whose
        # residual |s·f| ≈ |s|·Im z is below tol wherever Im z is tiny
        if abs(f * s) <= tol and abs(f.imag) <= 0.5 * zc.imag:
            return s, True
        if it == steps:
            break
        df = -1.0 / (s * s) + f1
        if df == 0.0:
            return s, False
        step = f / df
        new = s - step
        h = 0
        while not (new.imag > 0.0) and h < 30:
            step *= 0.5
            new = s - step
            h += 1
        if not (new.imag > 0.0):
            new = (s - f / df).real + 0.1j * s.imag
        s = new
    return s, False


@njit(cache=True, nogil=True)
def stieltjes(x, eta_end, stages, final_steps, sig, b1, b2, inv_d, tail_sig, tail_sig2,
              sig_next, start):
    """s(x(1 + i η_end)) solving 1/s = −z + (1/d)Σσ/(1+σs) for ascending x.  From the top
    down, each point starts Newton from its upper neighbour's root (the root with Im s > 0 is
    unique for Im z > 0, so converging there is converging to it); a point where that does not
    converge in 8 steps — and the first point — is found by continuation in Im z from 10 down
    (two Newton steps per stage).  A non-empty ``start`` gives each point its own starting
    value instead (points scattered over the spectrum: a far neighbour's root can lead Newton
    to a wrong one).  Returns s and the relative residual |s·f(s)|."""
    n = x.size
    out = np.empty(n, dtype=np.complex128)
    res = np.empty(n)
    have = False
    s_prev = 0.0j
    for p in range(n - 1, -1, -1):
        zc = x[p] * (1.0 + 1j * eta_end)
        ok = False
        if start.size:
            s_prev = start[p]
            have = True
        if have:
            s, ok = _newton(s_prev, zc, 8, TOL, sig, b1, b2, inv_d, tail_sig, tail_sig2,
                            sig_next)
        if have and not ok:
            # crossing the edge of an isolated eigenvalue: a short continuation in Im z from
            # the neighbour's root usually lands; the full one from Im z = 10 is the last resort
            s = s_prev
            for k in range(8):
                im = x[p] * (0.1 * (eta_end / 0.1) ** ((k + 1) / 8))
                s, _ = _newton(s, x[p] + 1j * im, 3, 0.0, sig, b1, b2, inv_d, tail_sig,
                               tail_sig2, sig_next)
            s, ok = _newton(s, zc, final_steps, TOL, sig, b1, b2, inv_d, tail_sig,
                            tail_sig2, sig_next)
        tries = 0
        while not ok and tries < 3:          # 24, 96, 384 stages
            n_st = stages * 4 ** tries
            s = -1.0 / (x[p] + 10.0j)
            for k in range(n_st):
                im = 10.0 * (eta_end * x[p] / 10.0) ** ((k + 1) / n_st)
                s, _ = _newton(s, x[p] + 1j * im, 2, 0.0, sig, b1, b2, inv_d, tail_sig,
                               tail_sig2, sig_next)
            s, ok = _newton(s, zc, final_steps, TOL, sig, b1, b2, inv_d, tail_sig,
                            tail_sig2, sig_next)
            tries += 1
        if s.imag > 0.0 and abs(s) < 1e300:
            f0, _ = resolvent(s, sig, b1, b2, inv_d, tail_sig, tail_sig2, sig_next)
            res[p] = abs((1.0 / s + zc - f0) * s)
        else:
            res[p] = np.inf                   # not found: the caller refuses the grid
        out[p] = s
        s_prev = s
        have = True
    return out, res


# blocks.py's RHO_MAX and TAU are compiled into the cached kernels as literals.
from solvers.core.artifacts import numba_kernels  # noqa: E402
from solvers.theory.plrf import blocks as _blocks  # noqa: E402

numba_kernels(globals(), [_blocks.__file__])
