"""Compressed sums Σ_j w_j/(1 + σ_j s)^p over the far input directions (σ_j = j^(−2α)).

Beyond a few hundred terms the summand is smooth in j, so a run of consecutive j with σ in
[c − h, c + h] is summed through its moments: with u = (σ − c)/h and t = s·h/(1 + c·s),

    Σ w/(1 + σs)   = (1 + cs)^(−1) Σ_n (−t)^n M_n,
    Σ w/(1 + σs)²  = (1 + cs)^(−2) Σ_n (n + 1)(−t)^n M_n,      M_n = Σ w uⁿ,

exact series while ρ = |t| < 1.  The moments do not depend on s, so each block costs K terms
instead of its length.  Truncating after K terms changes each term of the block by at most the
fraction ρ^K(1 + ρ)/(1 − ρ) (p = 1) or ρ^K(K + 1)(1 + ρ)²/(1 − ρ)² (p = 2) of its modulus; K is
taken per evaluation so that this is ≤ TAU — below the rounding of the plain sum itself.  Where
1 + σs nearly vanishes inside a block (an isolated eigenvalue's own j) ρ is large: the block is
split into its fine sub-blocks, and those that are still too wide are summed term by term.
"""
from __future__ import annotations

import math

import numpy as np

TAU = 1e-16               # truncation per term, relative to its modulus
RHO_MAX = 0.3             # above this a block is split (K would exceed K_MAX)
K_MAX = 48                # moments kept: ρ = 0.3 needs K = 38 for p = 2
COARSE_HALF = 0.15        # h/c of a coarse block ...
FINE_PER_COARSE = 10      # ... split into this many fine ones
MIN_FINE = 8              # fewest terms in a fine block (shorter ones are summed plainly)


def layout(sig: np.ndarray, alpha: float, n: int | None = None):
    """The start j₀ of the compressed range and the fine / coarse block boundaries (0-based
    index ranges; coarse blocks as ranges of fine blocks).  No compression where it would not
    pay (then j₀ = len(sig) and there are no blocks)."""
    n = sig.size if n is None else n
    # a block [a, b) has h/c = tanh(α ln(b/a)) (in j, up to the ±1 of the integer ends)
    step_f = math.atanh(COARSE_HALF) / (alpha * FINE_PER_COARSE)
    j0 = int(math.ceil(MIN_FINE / (math.expm1(step_f))))
    if j0 * math.exp(step_f * FINE_PER_COARSE) >= n:
        return n, np.zeros(0, np.int64), np.zeros(0, np.int64)
    edges = [j0]
    while edges[-1] < n:
        edges.append(min(n, max(edges[-1] + 1, int(edges[-1] * math.exp(step_f)))))
    fine = np.array(edges, dtype=np.int64)
    coarse = np.arange(0, fine.size - 1, FINE_PER_COARSE, dtype=np.int64)
    coarse = np.append(coarse, fine.size - 1)
    return j0, fine, coarse


def moments(sig: np.ndarray, w: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """Centre c, half-width h and scaled moments Σ w ((σ − c)/h)ⁿ, n < K_MAX, of each block
    [lo_k, hi_k) (contiguous, σ descending inside a block)."""
    if lo.size == 0:
        return np.zeros(0), np.zeros(0), np.zeros((0, K_MAX))
    top, bot = sig[lo], sig[hi - 1]
    c = 0.5 * (top + bot)
    h = np.maximum(0.5 * (top - bot), 1e-300)    # one-term block: all moments but M₀ vanish
    which = np.repeat(np.arange(lo.size), hi - lo)
    u = (sig[lo[0]:hi[-1]] - c[which]) / h[which]
    p = np.asarray(w[lo[0]:hi[-1]], dtype=float).copy()
    m = np.empty((lo.size, K_MAX))
    start = lo - lo[0]
    for q in range(K_MAX):
        m[:, q] = np.add.reduceat(p, start)
        p *= u
    return c, h, m


class Blocks:
    """The block layout of one σ and the moments of the weights it is asked for."""

    def __init__(self, sig: np.ndarray, alpha: float, compress: bool = True):
        self.sig = sig
        if compress:
            self.j0, self.fine, self.coarse = layout(sig, alpha)
        else:
            self.j0, self.fine, self.coarse = sig.size, np.zeros(0, np.int64), \
                np.zeros(0, np.int64)
        nf = max(self.fine.size - 1, 0)
        self.f_lo, self.f_hi = self.fine[:nf], self.fine[1:nf + 1]
        nc = max(self.coarse.size - 1, 0)
        self.c_first, self.c_last = self.coarse[:nc], self.coarse[1:nc + 1]
        self.c_lo = self.fine[self.c_first] if nc else np.zeros(0, np.int64)
        self.c_hi = self.fine[self.c_last] if nc else np.zeros(0, np.int64)

    def pack(self, w: np.ndarray):
        """The tuple the kernels take for weights w (a sum over all of sig)."""
        fc, fh, fm = moments(self.sig, w, self.f_lo, self.f_hi)
        cc, ch, cm = moments(self.sig, w, self.c_lo, self.c_hi)
        return (self.j0, self.f_lo, self.f_hi, fc, fh, fm, self.c_first, self.c_last, cc, ch,
                cm)
