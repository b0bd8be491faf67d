"""The deterministic equivalent of the Hessian's spectrum at large v, d (v = ∞ where 2α > 1).

K̂ = WᵀDW = Σ_j (σ_j/d) g_j g_jᵀ with g_j ~ N(0, I_d).  Its normalised resolvent trace
s(z) = (1/d) tr(K̂ − z)⁻¹ concentrates on the root (Im s > 0 for Im z > 0) of

    1/s = −z + (1/d) Σ_j σ_j/(1 + σ_j s),

and the forcing G(z) = ⟨D^{1/2}b, (K̂_v − z)⁻¹ D^{1/2}b⟩ on −(1/z) Σ_j σ_j b_j²/(1 + σ_j s).
The eigenvalue density is n(x) = (d/π) Im s(x + i0) (d eigenvalues).  The forcing has an atom at
λ = 0 — the part of the target no feature reaches — of mass w₀ = Σ σ_j b_j²/(1 + c₀σ_j), with
c₀ = s(0) the root of (1/d) Σ c₀σ_j/(1 + c₀σ_j) = 1 (it needs v > d), so P* = w₀/2; the rest
of G is (s − c₀)/z · Σ σ_j² b_j²/((1 + σ_j s)(1 + σ_j c₀)), whose (1/π) Im is the forcing
density.  Cells of a log grid in λ then feed the same recursion as the modes of one W; each
carries the exact eigenvalue count of its range (:func:`counts`), its cells bisected where the
midpoint rule misses that count (the isolated top eigenvalues, narrower than a cell at large d).

s is found at z = x(1 + 10⁻⁷ i) by continuation in Im z (Newton from Im z = 10 down, keeping
Im s > 0): reading it at a larger relative Im z would smear every isolated top eigenvalue over
the whole log range.  For v = ∞ the sums beyond j = J are power series in s with Hurwitz-zeta
coefficients (convergent while |s| σ_{J+1} < 1, which is checked).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq

from . import kernels
from .blocks import Blocks
from .model import Problem
from .recursion import Spectrum

N_SERIES = 48            # terms of the tail series (ratio ≤ 0.45 ⇒ < 1e-16)
MAX_RATIO = 0.45
EDGE_GAP = 0.02          # the grid's origin sits this fraction below the spectrum's lower edge
ETA = 1e-7               # s is read at z = x(1 + iη)
# a cell is halved while its midpoint-rule eigenvalue count misses the exact one by more than
# CELL_RTOL of it plus CELL_ATOL eigenvalues (an eigenvalue near the top weighs ~0.2 in ‖K‖)
CELL_RTOL = 1e-3
CELL_ATOL = 1e-6
MAX_LEVELS = 24
LEAF_RESID = 1e-5


class DEError(ValueError):
    pass


class _TailDiverges(Exception):
    """|s|σ_{J+1} too large for the v = inf tail series: take more terms explicitly."""


@lru_cache(maxsize=64)
def _scaled_zeta(p: float, step: float, q: int) -> np.ndarray:
    """ζ(p + n·step, q)·q^(n·step), n = 0..N_SERIES+1 (mpmath: the unscaled values underflow).
    Cached: the grid and the forcing of every β at the same α, d ask for the same values."""
    import mpmath
    with mpmath.workdps(30):
        out = np.array([float(mpmath.zeta(p + n * step, q) * mpmath.mpf(q) ** (n * step))
                        for n in range(N_SERIES + 2)])
    out.flags.writeable = False
    return out


@dataclass
class _Sums:
    """Σ_j of functions of σ_j = j^(−2α), b_j² = j^(−2β): explicitly to J, then a series."""

    pb: Problem
    J: int
    compress: bool = True     # False: every term explicitly (the reference for the blocks)

    def __post_init__(self):
        pb = self.pb
        self.sig = pb.sigma(self.J)
        self.b2 = pb.target(self.J) ** 2
        self.blocks = Blocks(self.sig, pb.alpha, self.compress)
        self.packed = (self.blocks.pack(self.sig), self.blocks.pack(self.sig ** 2))
        self._ones = None
        self.tail = pb.v == math.inf
        if self.tail:
            # Σ_{j>J} j^(−p − 2αn) for the weights σ, σ², σb², σ²b², scaled by σ_{J+1}^(−n) so
            # that the series run in powers of u·σ_{J+1} (no overflow at large c₀)
            a2 = 2.0 * pb.alpha
            self.sig_next = float(self.J + 1) ** (-a2)
            self.z_sig = _scaled_zeta(a2, a2, self.J + 1)
            self.z_sig2 = _scaled_zeta(2 * a2, a2, self.J + 1)
            self.z_sb = _scaled_zeta(a2 + 2 * pb.beta, a2, self.J + 1)
            self.z_s2b = _scaled_zeta(2 * a2 + 2 * pb.beta, a2, self.J + 1)

    def tails(self):
        """The series coefficients of (1/d)Σσ/(1+σs), (1/d)Σσ²/(1+σs)² beyond J, and σ_{J+1}."""
        if not self.tail:
            return np.zeros(0), np.zeros(0), 0.0
        return (self.z_sig[:N_SERIES], (np.arange(N_SERIES) + 1) * self.z_sig2[:N_SERIES],
                self.sig_next)

    def check_ratio(self, u) -> None:
        if self.tail:
            worst = float(np.max(np.abs(u))) * self.sig_next
            if worst > MAX_RATIO:
                raise _TailDiverges(worst)

    def total(self, which: str) -> float:
        w = {"sig": self.sig, "sb": self.sig * self.b2}[which]
        out = float(np.sum(w))
        if self.tail:
            out += float({"sig": self.z_sig, "sb": self.z_sb}[which][0])
        return out

    def counting(self, c: float) -> float:
        """(1/d) Σ cσ/(1 + cσ) at real c > 0."""
        out = float(np.sum(c * self.sig / (1.0 + c * self.sig)))
        if self.tail:
            n = np.arange(N_SERIES)
            out += float(np.sum(c * (-c * self.sig_next) ** n * self.z_sig[:N_SERIES]))
        return out / self.pb.d

    def atom(self, c0: float) -> float:
        """w₀ = Σ σb²/(1 + c₀σ)."""
        out = float(np.sum(self.sig * self.b2 / (1.0 + c0 * self.sig)))
        if self.tail:
            n = np.arange(N_SERIES)
            out += float(np.sum((-c0 * self.sig_next) ** n * self.z_sb[:N_SERIES]))
        return out

    def logsum(self, s):
        """Σ log(1 + σs) at each s (Im s > 0: every term in the upper half plane, principal
        branch)."""
        if self._ones is None:
            self._ones = self.blocks.pack(np.ones_like(self.sig))
        s = np.ascontiguousarray(s, dtype=complex)
        out = kernels.logsum(s, self.sig, self._ones)
        if self.tail:
            # Σ_{j>J} log(1+σs) = s Σ_n (−sσ_{J+1})ⁿ Σσ^(n+1)σ_{J+1}^(−n)/(n+1)
            u = -s * self.sig_next
            acc = np.zeros_like(s)
            for n in range(N_SERIES - 1, -1, -1):
                acc = acc * u + self.z_sig[n] / (n + 1)
            out = out + s * acc
        return out

    def forcing(self, s, c0: float):
        """Σ σ²b²/((1 + σs)(1 + σc₀)) at each s."""
        w = self.sig ** 2 * self.b2 / (1.0 + c0 * self.sig)
        out = kernels.weighted(np.ascontiguousarray(s), self.sig, w, self.blocks.pack(w))
        if self.tail:
            # 1/((1+σs)(1+σc₀)) = Σ_n (−σ)^n h_n,  h_n = Σ_{k≤n} s^k c₀^(n−k)  (scaled by
            # σ_{J+1}^n like the coefficients)
            us, uc = s * self.sig_next, c0 * self.sig_next
            h = np.ones_like(s)
            acc = np.zeros_like(s)
            for n in range(N_SERIES):
                acc = acc + (-1) ** n * h * self.z_s2b[n]
                h = us * h + uc ** (n + 1)
            out = out + acc
        return out


def _cutoff(pb: Problem) -> int:
    if pb.v != math.inf:
        return int(pb.v)
    # the tail series runs in powers of |s|σ_{J+1} ≲ c₀σ_{J+1} ≈ κ(d/J)^(2α) (checked)
    return 2 * pb.d


def c0_root(sums: _Sums) -> float:
    d, J = sums.pb.d, sums.J
    if sums.pb.v != math.inf and sums.pb.v <= d:
        raise DEError(f"the deterministic route needs v > d (v = {sums.pb.v}, d = {d}): with "
                      f"v <= d every direction is reachable and K has zero eigenvalues")
    # the count (1/d)Σ cσ/(1+cσ) grows from 0 to v/d > 1; bracket its crossing of 1 (for
    # v = inf only where the tail series converges)
    hi = 1.0
    while sums.counting(hi) < 1.0:
        hi *= 1.25
        sums.check_ratio(np.array([hi]))
    return brentq(lambda c: sums.counting(c) - 1.0, hi * 1e-12, hi, xtol=1e-300, rtol=1e-15,
                  maxiter=500)


def _solve_s(sums: _Sums, x: np.ndarray, eta_end: float = ETA, stages: int = 24,
             start: np.ndarray | None = None):
    """s(x(1 + i η_end)) by continuation in Im z (or Newton from ``start``, one value per
    point); returns s and the final relative residual."""
    start = np.zeros(0, complex) if start is None else np.ascontiguousarray(start, complex)
    return kernels.stieltjes(x, eta_end, stages, 80, sums.sig, *sums.packed, 1.0 / sums.pb.d,
                             *sums.tails(), start)


@dataclass(frozen=True)
class Equivalent:
    """The deterministic spectrum: cells, their totals and the scalars c₀, P*."""

    spectrum: Spectrum
    c0: float
    p_star: float
    eig_total: float          # Σ n_k (→ d)
    forcing_total: float      # Σ w_k + 2P* (→ Σ σ b²)
    sigma_b2: float           # Σ σ b²
    max_residual: float


def lower_edge(sums: _Sums, c0: float) -> float:
    """The bottom of the deterministic spectrum: below it s is real and z(s) = −1/s +
    (1/d)Σσ/(1+σs) increases from z(c₀) = 0; the edge is its maximum, dz/ds = 0 (s > c₀)."""
    def slope(s):
        _, f1 = kernels.resolvent(complex(s), sums.sig, *sums.packed, 1.0 / sums.pb.d,
                                  *sums.tails())
        return 1.0 / s ** 2 - f1.real
    hi = 2.0 * c0
    while slope(hi) > 0:
        hi *= 2.0
        sums.check_ratio(np.array([hi]))
    s_e = brentq(slope, c0, hi, rtol=1e-12)
    f0, _ = kernels.resolvent(complex(s_e), sums.sig, *sums.packed, 1.0 / sums.pb.d,
                              *sums.tails())
    return -1.0 / s_e + f0.real


def grid(pb: Problem, edge: float, sig_total: float, per_decade: int = 250,
         per_decade_top: int = 1000):
    """Cell edges up to 2(1 + Σσ/d), log-spaced in the distance to a point just below the
    spectrum's lower edge (a far tail of small σ_j shifts the whole bulk up, and its edge then
    rises over a small fraction of its height), and finer above d^(−α), where the top
    eigenvalues are isolated bumps of relative width ~ d^(−1/2)."""
    x0 = edge * (1.0 - EDGE_GAP)
    lo, hi = edge * EDGE_GAP * 0.5, 2.0 * (1.0 + sig_total / pb.d) - x0
    iso = min(max(pb.d ** (-pb.alpha) - x0, lo * 10), hi / 10)
    n1 = max(2, int(math.ceil(per_decade * math.log10(iso / lo))))
    n2 = max(2, int(math.ceil(max(per_decade_top, per_decade) * math.log10(hi / iso))))
    return x0 + np.concatenate([np.geomspace(lo, iso, n1 + 1)[:-1],
                                np.geomspace(iso, hi, n2 + 1)])


def counts(sums: _Sums, x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The number of eigenvalues below x (up to a constant), from the antiderivative of s:
    along z = x(1 + iη), Φ(z) = s z + log s − (1/d) Σ log(1 + σ s) has dΦ/dz = s, because
    ∂Φ/∂s = z + 1/s − (1/d)Σσ/(1+σs) vanishes at the root — so an error in s enters Φ only
    at second order.  Every logarithm's argument stays in the upper half plane, so Im Φ is
    continuous along the real line without branch tracking.  Returns (d/π) Im Φ along the
    path and the same on the real axis: Im Φ(x + iηx) = Im Φ(x) + ηx Re s + O(η²), so the
    first order is taken off (the rest is ~10⁻¹⁴ of the count)."""
    z = x * (1.0 + 1j * ETA)
    phi = s * z + np.log(s) - sums.logsum(s) / sums.pb.d
    path = sums.pb.d / math.pi * phi.imag
    return path, path - sums.pb.d / math.pi * ETA * x * s.real


@dataclass(frozen=True)
class _Grid:
    """The cells of one (α, v, d): base cells (``x``, ``dx``, ``s`` at their midpoints) and the
    leaves they were bisected into until the midpoint rule holds each leaf's eigenvalue count
    (``leaf_*``; ``parent`` maps a leaf to its base cell)."""

    c0: float
    J: int
    x: np.ndarray
    dx: np.ndarray
    s: np.ndarray
    leaf_x: np.ndarray
    leaf_dx: np.ndarray
    leaf_s: np.ndarray
    leaf_n: np.ndarray          # eigenvalues in the leaf, from the counting function
    parent: np.ndarray
    worst: float                # the largest relative residual of any root
    levels: int                 # bisections used


def _solve_sorted(sums: _Sums, x: np.ndarray, start: np.ndarray | None = None):
    """s at arbitrary points (solved in ascending order, returned in the given one)."""
    order = np.argsort(x)
    s_sorted, resid = _solve_s(sums, x[order], start=None if start is None else start[order])
    s = np.empty_like(s_sorted)
    s[order] = s_sorted
    return s, float(np.max(resid)) if resid.size else 0.0


def _refine(sums: _Sums, edges: np.ndarray) -> tuple:
    """Cells whose midpoint count misses the exact count (from :func:`counts`) by more than
    CELL_RTOL of it plus CELL_ATOL eigenvalues are halved until none does.  At large d the top
    eigenvalues are isolated bumps of relative width ~ d^(−1/2), narrower than a fixed log
    grid's cells: the midpoint rule then gives a bump anything from 0 to several times its one
    eigenvalue, and the noise kernel's norm ‖K‖ — to which the top eigenvalue contributes most
    — jumps from one d to the next.  The grid of the leaves scales with d by construction."""
    d = sums.pb.d
    n = edges.size - 1
    pts = np.empty(2 * n + 1)
    pts[0::2] = edges
    pts[1::2] = 0.5 * (edges[1:] + edges[:-1])
    s_all, worst = _solve_sorted(sums, pts)
    leaf_worst = 0.0
    p_all, r_all = counts(sums, edges, s_all[0::2])
    lo, hi, s_mid = edges[:-1], edges[1:], s_all[1::2]
    p_lo, p_hi, r_lo, r_hi = p_all[:-1], p_all[1:], r_all[:-1], r_all[1:]
    parent = np.arange(n)
    base_s = s_mid.copy()
    out = []
    level = 0
    while True:
        dx = hi - lo
        # the midpoint rule and the exact count of the same path (Im(s dz/dx) = Im s + η Re s):
        # like for like, so the Lorentzian tails of reading s off the axis cancel
        mid = d / math.pi * (s_mid.imag + ETA * s_mid.real) * dx
        exact = p_hi - p_lo
        bad = np.abs(mid - exact) > CELL_RTOL * np.abs(exact) + CELL_ATOL
        ok = ~bad
        out.append((0.5 * (lo + hi)[ok], dx[ok], s_mid[ok], (r_hi - r_lo)[ok], parent[ok]))
        if not bad.any():
            break
        if level == MAX_LEVELS:
            miss = float(np.sum(np.abs(mid - exact)[bad]))
            raise DEError(f"the deterministic equivalent's cells did not resolve the spectrum "
                          f"after {MAX_LEVELS} bisections ({miss:.2g} eigenvalues unresolved "
                          f"near x = {float(lo[bad][0]):.3g})")
        level += 1
        lo, hi, s_mid, p_lo, p_hi, r_lo, r_hi, parent = (
            a[bad] for a in (lo, hi, s_mid, p_lo, p_hi, r_lo, r_hi, parent))
        xm = 0.5 * (lo + hi)
        p_m, r_m = counts(sums, xm, s_mid)
        # each half starts from its parent's root, a quarter of the parent's width away
        s_new, w_new = _solve_sorted(sums, np.concatenate([0.5 * (lo + xm), 0.5 * (xm + hi)]),
                                     np.concatenate([s_mid, s_mid]))
        leaf_worst = max(leaf_worst, w_new)
        k = lo.size
        lo, hi = np.concatenate([lo, xm]), np.concatenate([xm, hi])
        s_mid = s_new
        p_lo, p_hi = np.concatenate([p_lo, p_m]), np.concatenate([p_m, p_hi])
        r_lo, r_hi = np.concatenate([r_lo, r_m]), np.concatenate([r_m, r_hi])
        parent = np.concatenate([parent, parent])
        assert s_mid.size == 2 * k
    leaves = [np.concatenate([o[i] for o in out]) for i in range(5)]
    # a bisection point can land on the branch point of the spectrum's lower edge, where Newton
    # stalls at a residual ~1e-7 (plain sums too); a leaf's count is second order in the root's
    # error and its midpoint value is checked against that count, so leaves accept LEAF_RESID
    if not leaf_worst < LEAF_RESID:
        raise DEError(f"the deterministic equivalent did not converge on a refined cell "
                      f"(relative residual {leaf_worst:.2g})")
    return base_s, leaves, worst, level


@lru_cache(maxsize=16)
def _stieltjes_on_grid(alpha: float, v, d: int, per_decade: int, per_decade_top: int,
                       compress: bool) -> _Grid:
    """c₀, s and the exact eigenvalue counts on the cells (independent of β and of the step:
    shared by a whole ladder).  The cutoff J may have been doubled for the v = ∞ tail series:
    the forcing must be summed with the same J (it is returned)."""
    pb = Problem(alpha, 1.0, v, d)
    J = _cutoff(pb)
    while True:
        sums = _Sums(pb, J, compress)
        try:
            c0 = c0_root(sums)
            edges = grid(pb, lower_edge(sums, c0), sums.total("sig"), per_decade,
                         per_decade_top)
            base_s, leaves, worst, levels = _refine(sums, edges)
            if not worst < 1e-8:
                raise DEError(f"the deterministic equivalent did not converge (relative "
                              f"residual {worst:.2g})")
            sums.check_ratio(leaves[2])
            sums.check_ratio(base_s)
            break
        except _TailDiverges:
            if J >= 64 * d:
                raise DEError(f"the v = inf tail series does not converge even beyond j = "
                              f"{J}") from None
            J *= 2            # more terms explicitly, a smaller ratio for the series
    x = 0.5 * (edges[1:] + edges[:-1])
    arrays = (x, np.diff(edges), base_s, *leaves)
    for arr in arrays:
        arr.flags.writeable = False
    return _Grid(c0, J, *arrays, worst=worst, levels=levels)


def equivalent(pb: Problem, per_decade: int = 250, per_decade_top: int = 1000,
               compress: bool = True) -> Equivalent:
    """``compress=False`` sums every σ_j explicitly (slow; the reference for the blocks).
    Each base cell carries the exact eigenvalue count of its range, and the forcing and the
    count-weighted eigenvalue of its leaves."""
    g = _stieltjes_on_grid(pb.alpha, pb.v, pb.d, per_decade, per_decade_top, compress)
    sums = _Sums(pb, g.J, compress)
    c0 = g.c0
    w0 = sums.atom(c0)
    w_leaf = ((g.leaf_s - c0) / g.leaf_x * sums.forcing(g.leaf_s, c0)).imag / math.pi \
        * g.leaf_dx
    if np.any(w_leaf < -1e-12 * np.max(np.abs(w_leaf))):
        raise DEError("the forcing density came out negative: the deterministic equivalent "
                      "is not resolved on this grid")
    # a count below 0 is rounding in a gap of the spectrum (≲ 1e-9 eigenvalues)
    n_leaf = np.maximum(g.leaf_n, 0.0)
    m = g.x.size
    n = np.bincount(g.parent, n_leaf, m)
    w = np.bincount(g.parent, w_leaf, m)
    lam_n = np.bincount(g.parent, n_leaf * g.leaf_x, m)
    lam = np.where(n > 0, lam_n / np.where(n > 0, n, 1.0), g.x)
    spec = Spectrum(lam=lam, mult=n, w=w, p_star=0.5 * w0)
    return Equivalent(spectrum=spec, c0=c0, p_star=0.5 * w0, eig_total=float(n.sum()),
                      forcing_total=float(w.sum()) + w0, sigma_b2=sums.total("sb"),
                      max_residual=g.worst)
