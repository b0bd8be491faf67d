"""The power-law random-features problem and one draw of its features.

x ~ N(0, D), D = diag(σ_j), σ_j = j^(−2α); y = ⟨x, b⟩, b_j = j^(−β) (j = 1..v); features Wᵀx
with W_jk ~ N(0, 1/d) (v × d); loss P(θ) = ½ E(⟨Wᵀx, θ⟩ − y)² = ½ Σ_j σ_j ((Wθ)_j − b_j)².
The step γ is the summed-gradient one: θ ← θ − γ Σ_{i≤B} Wᵀxᵢ(⟨Wᵀxᵢ, θ⟩ − yᵢ), θ₀ = 0.

One draw of W reduces to d modes of the Hessian K̂ = WᵀDW: eigenvalues λ_i and the part
w_i = ⟨u_i, WᵀDb⟩²/λ_i of P(0) each carries; what no mode can reach is P* (the misfit of the
best θ).  :func:`draw` returns them; the simulator draws the same W from the same seed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import eigh
from scipy.linalg.blas import dsyrk
from threadpoolctl import threadpool_limits


@dataclass(frozen=True)
class Problem:
    """One PLRF problem: exponents, sizes (``v`` may be ``math.inf`` where 2α > 1), batch and
    summed-gradient step."""

    alpha: float
    beta: float
    v: float
    d: int
    batch: int = 1
    gamma: float = 0.1

    def __post_init__(self):
        for key in ("alpha", "beta", "gamma"):
            x = getattr(self, key)
            if not isinstance(x, (int, float)) or not math.isfinite(x):
                raise ValueError(f"{key} = {x} must be a finite number")
        if self.alpha <= 0:
            raise ValueError(f"alpha = {self.alpha} must be > 0")
        if self.gamma <= 0:
            raise ValueError(f"gamma = {self.gamma} must be > 0")
        if self.alpha + self.beta <= 0.5:
            raise ValueError(f"alpha + beta = {self.alpha + self.beta:g} must be > 1/2 (below, "
                             f"P(0) grows without bound with v: there is no scaling law)")
        if not isinstance(self.d, int) or self.d < 1:
            raise ValueError(f"d = {self.d} must be an integer >= 1")
        if not isinstance(self.batch, int) or self.batch < 1:
            raise ValueError(f"batch = {self.batch} must be an integer >= 1")
        if self.v == math.inf:
            if 2 * self.alpha <= 1:
                raise ValueError(f"v = inf needs 2*alpha > 1 (alpha = {self.alpha}): below the "
                                 f"line the spectrum's trace diverges; give v as an integer")
        elif not isinstance(self.v, int) or self.v < 1:
            raise ValueError(f"v = {self.v} must be an integer >= 1 or inf")

    def sigma(self, n: int | None = None) -> np.ndarray:
        j = np.arange(1, (self.v if n is None else n) + 1, dtype=float)
        return j ** (-2.0 * self.alpha)

    def target(self, n: int | None = None) -> np.ndarray:
        j = np.arange(1, (self.v if n is None else n) + 1, dtype=float)
        return j ** (-self.beta)


def features(pb: Problem, seed: int) -> np.ndarray:
    """W (v × d), entries N(0, 1/d), from ``numpy.random.default_rng(seed)``."""
    if pb.v == math.inf:
        raise ValueError("one draw of W needs a finite v (the deterministic route takes v = inf)")
    rng = np.random.default_rng(seed)
    return rng.standard_normal((pb.v, pb.d)) / math.sqrt(pb.d)


@dataclass(frozen=True)
class Modes:
    """The Hessian's eigenvalues ``lam`` (ascending), the loss weights ``w`` (P(0) = P* + ½Σw)
    and the unreachable misfit ``p_star``.  Zero modes (v < d) are dropped: they carry nothing."""

    lam: np.ndarray
    w: np.ndarray
    p_star: float


def modes(pb: Problem, W: np.ndarray, threads: int | None = 1) -> Modes:
    """``threads``: BLAS threads for forming and diagonalising K̂ (one by default: on a shared
    machine oversubscribed BLAS threads cost 5-10×; None leaves the library's choice)."""
    sig, b = pb.sigma(), pb.target()
    with threadpool_limits(threads, user_api="blas"):
        # K̂ = XᵀX with X = D^(1/2)W: a symmetric rank-k update fills one triangle (half the
        # flops of a general product); eigh reads that triangle
        X = np.asfortranarray(W * np.sqrt(sig)[:, None])
        K = dsyrk(1.0, X, trans=1, lower=0)
        lam, U = eigh(K, lower=False, overwrite_a=True, check_finite=False)
    h = U.T @ (W.T @ (sig * b))
    keep = lam > lam[-1] * pb.d * np.finfo(float).eps * 4
    lam, h, U = lam[keep], h[keep], U[:, keep]
    coef = h / lam
    # P* straight from the residual of the best θ: Σσb² − Σw would cancel to a few digits
    with threadpool_limits(threads, user_api="blas"):
        resid = W @ (U @ coef) - b
    p_star = 0.5 * float(np.sum(sig * resid ** 2))
    return Modes(lam=lam, w=h * coef, p_star=p_star)


def draw(pb: Problem, seed: int, threads: int | None = 1) -> Modes:
    return modes(pb, features(pb, seed), threads)
