"""Sums over the spectrum at a given κ_S = t, in float64 (numba), with block moments.

For every solve and every error evaluation the theory needs four sums over the groups,

    S_L = Σ m L,  S_LL = Σ m L²,  S_Lq = Σ m L (1 − L),  B = Σ m (1 − L)² c²,   L = λ/(λ + t).

A direct pass costs O(groups).  Far from the "learning front" λ ≈ t each summand is a geometric
series: in the head (y = t/λ ≤ ρ) in powers of y, in the tail (r = λ/t ≤ ρ) in powers of r.
Block-wise moments Σ m λ^(∓j), Σ m c² λ^(∓j) (j ≤ J), summed once per spectrum into prefix
(head) and suffix (tail) arrays, turn head and tail into O(J) work; only the groups between
(λ from t/ρ down to ρ t, rounded out to whole blocks) are summed explicitly.  With ρ = 1/20 and
J = 13 the truncation error is below (J + 2) ρ^(J+1) ≈ 2e-17 relative to each sum.

The moments are used only where they are representable: every λ^(±(J+1)), c² λ^(±(J+1)) must
stay inside the double range and 1e-20 ≤ t ≤ 1e20 (checked; otherwise the direct pass).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

RHO = 1.0 / 20.0
J = 13
BLOCK = 256
_LOG10_LIMIT = 280.0


@njit(cache=True)
def _block_moments(lam, mult, c2, block, nJ):
    nb = (lam.size + block - 1) // block
    H = np.zeros((nb, nJ + 1))     # Σ m λ^-j
    HC = np.zeros((nb, nJ + 1))    # Σ m c² λ^-j
    A = np.zeros((nb, nJ + 1))     # Σ m λ^j
    AC = np.zeros((nb, nJ + 1))    # Σ m c² λ^j
    for i in range(lam.size):
        b = i // block
        inv = 1.0 / lam[i]
        p = mult[i]
        q = mult[i]
        for j in range(nJ + 1):
            H[b, j] += q
            HC[b, j] += q * c2[i]
            A[b, j] += p
            AC[b, j] += p * c2[i]
            q *= inv
            p *= lam[i]
    return H, HC, A, AC


@njit(cache=True)
def _direct(lam, mult, c2, t, i0, i1):
    # compensated (Neumaier) sums: millions of summands of very different size
    acc = np.zeros(4)
    comp = np.zeros(4)
    val = np.zeros(4)
    for i in range(i0, i1):
        d = lam[i] + t
        L = lam[i] / d
        q = t / d
        m = mult[i]
        val[0] = m * L
        val[1] = m * L * L
        val[2] = m * L * q
        val[3] = m * q * q * c2[i]
        for k in range(4):
            s = acc[k] + val[k]
            if abs(acc[k]) >= abs(val[k]):
                comp[k] += (acc[k] - s) + val[k]
            else:
                comp[k] += (val[k] - s) + acc[k]
            acc[k] = s
    return acc[0] + comp[0], acc[1] + comp[1], acc[2] + comp[2], acc[3] + comp[3]


@njit(cache=True)
def sums(lam, neglam, mult, c2, t, block, Hp, HCp, As, ACs, use_moments, n):
    """(S_L, S_LL, S_Lq, B) at κ_S = t over the first ``n`` groups (t = 0: L = 1)."""
    if t == 0.0:
        s = 0.0
        for i in range(n):
            s += mult[i]
        return s, s, 0.0, 0.0
    if not use_moments:
        return _direct(lam, mult, c2, t, 0, n)
    nJ = Hp.shape[1] - 1
    nb = Hp.shape[0] - 1
    # head: groups with λ ≥ t/ρ, floored to whole blocks; tail: λ ≤ ρ t, ceiled to whole
    # blocks.  Over a prefix [0, n): head blocks [0, hb), explicit groups, tail blocks
    # [tb, nbn) (suffix-moment differences), explicit remainder of the last partial block.
    n_head = np.searchsorted(neglam, -t / RHO, side="right")
    bh = n_head // block
    n_tail = np.searchsorted(neglam, -RHO * t, side="left")
    bt = min((n_tail + block - 1) // block, nb)
    nbn = n // block
    hb = min(bh, nbn)
    tail = bt < nbn
    lo = hb * block
    hi = bt * block if tail else n
    sL, sLL, sLq, bias = _direct(lam, mult, c2, t, lo, hi)
    if tail:
        r0, r1, r2, r3 = _direct(lam, mult, c2, t, nbn * block, n)
        sL += r0
        sLL += r1
        sLq += r2
        bias += r3
    if hb > 0:
        # head: L = Σ (−y)^j, L(1−L) = −Σ j (−y)^j, L² = Σ (j+1)(−y)^j,
        #       (1−L)² = Σ_{j≥2} (j−1)(−y)^j   with y = t/λ
        pw = 1.0
        for j in range(nJ + 1):
            h = pw * Hp[hb, j]
            sL += h
            sLL += (j + 1) * h
            sLq -= j * h
            if j >= 2:
                bias += (j - 1) * pw * HCp[hb, j]
            pw *= -t
    if tail:
        # tail: L = −Σ_{j≥1} (−r)^j, L(1−L) = −Σ j (−r)^j, L² = Σ_{j≥2} (j−1)(−r)^j,
        #       (1−L)² = Σ (j+1)(−r)^j   with r = λ/t
        pw = 1.0
        inv_t = 1.0 / t
        for j in range(nJ + 1):
            a = pw * (As[bt, j] - As[nbn, j])
            if j >= 1:
                sL -= a
                sLq -= j * a
            if j >= 2:
                sLL += (j - 1) * a
            bias += (j + 1) * pw * (ACs[bt, j] - ACs[nbn, j])
            pw *= -inv_t
    return sL, sLL, sLq, bias


@njit(cache=True)
def solve_log_kappa(lam, neglam, mult, c2, block, Hp, HCp, As, ACs, use_moments,
                    P, T, u_lo, u_hi, u0, t_lo, t_hi, n):
    """Safeguarded Newton on F(u) = log h(e^u), h(κ) = T/κ + S_L(κ/P)/P, inside [u_lo, u_hi].

    Returns (u, |F'| at the root, iterations).  Moments are used only for κ_S in
    [t_lo, t_hi] (where their powers are representable).  Only the first n groups count."""
    u = u0
    if not (u_lo < u < u_hi):
        u = 0.5 * (u_lo + u_hi)
    dF = 1.0
    for it in range(300):
        kappa = math.exp(u)
        t = kappa / P
        um = use_moments and t_lo <= t <= t_hi
        sL, sLL, sLq, bias = sums(lam, neglam, mult, c2, t, block, Hp, HCp, As, ACs, um, n)
        h = T / kappa + sL / P
        dh = -T / kappa - sLq / P
        F = math.log(h)
        dF = dh / h
        if F > 0.0:
            u_lo = u
        elif F < 0.0:
            u_hi = u
        else:
            return u, -dF, it
        step = -F / dF
        scale = max(1.0, abs(u))
        if abs(step) <= 4e-16 * scale:
            return u + step, -dF, it
        un = u + step
        inside = u_lo < un < u_hi
        if not inside:
            un = 0.5 * (u_lo + u_hi)
        if u_hi - u_lo <= 4e-16 * scale:
            return un, -dF, it
        if inside and abs(step) < 1e-8 * scale:
            # Newton from a 1e-8 error lands at rounding level: accept after this step
            return un, -dF, it + 1
        u = un
    return u, -dF, 300


class Moments:
    """Block moments of a sorted spectrum, or the plain arrays when they cannot be used."""

    def __init__(self, lam, mult, c2, block=BLOCK):
        self.lam = np.ascontiguousarray(lam, dtype=np.float64)
        self.neglam = -self.lam
        self.mult = np.ascontiguousarray(mult, dtype=np.float64)
        self.c2 = np.ascontiguousarray(c2, dtype=np.float64)
        self.block = int(block)
        G = self.lam.size
        empty = np.zeros((1, J + 1))
        self.Hp = self.HCp = self.As = self.ACs = empty
        self.use = False
        self.t_lo, self.t_hi = 0.0, 0.0
        if G < 8 * self.block:
            return                      # small spectra: the direct pass is as fast
        lg = np.log10(self.lam)
        cpos = self.c2[self.c2 > 0]
        lc = np.log10(cpos) if cpos.size else np.zeros(1)
        span = (J + 1) * max(abs(lg.min()), abs(lg.max())) + max(abs(lc.min()), abs(lc.max())) \
            + math.log10(max(float(self.mult.max()), 1.0)) + math.log10(G)
        if span > _LOG10_LIMIT:
            return
        H, HC, A, AC = _block_moments(self.lam, self.mult, self.c2, self.block, J)
        z = np.zeros((1, J + 1))
        self.Hp = np.ascontiguousarray(np.concatenate([z, np.cumsum(H, axis=0)]))
        self.HCp = np.ascontiguousarray(np.concatenate([z, np.cumsum(HC, axis=0)]))
        self.As = np.ascontiguousarray(np.concatenate([np.cumsum(A[::-1], axis=0)[::-1], z]))
        self.ACs = np.ascontiguousarray(np.concatenate([np.cumsum(AC[::-1], axis=0)[::-1], z]))
        # the powers t^(±j) must not overflow (products with the moments are bounded by
        # G ρ^j where they are used; underflowing terms are negligible)
        self.t_lo, self.t_hi = 1e-20, 1e20
        self.use = True

    def sums(self, t, n=None):
        """The four sums at κ_S = t over the first n groups (default: all)."""
        n = self.lam.size if n is None else int(n)
        um = self.use and self.t_lo <= t <= self.t_hi
        return sums(self.lam, self.neglam, self.mult, self.c2, float(t), self.block,
                    self.Hp, self.HCp, self.As, self.ACs, um, n)

    def sums_direct(self, t, n=None):
        n = self.lam.size if n is None else int(n)
        return _direct(self.lam, self.mult, self.c2, float(t), 0, n)

    def solve(self, P, T, u_lo, u_hi, u0, n=None):
        n = self.lam.size if n is None else int(n)
        return solve_log_kappa(self.lam, self.neglam, self.mult, self.c2, self.block, self.Hp,
                               self.HCp, self.As, self.ACs, self.use, float(P), float(T),
                               u_lo, u_hi, u0, self.t_lo, self.t_hi, n)


from solvers.core.artifacts import numba_kernels  # noqa: E402

numba_kernels(globals())     # compiled code under the cache of generated artifacts
