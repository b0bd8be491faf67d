"""One-pass mini-batch SGD on the PLRF model, many runs at once (NumPy, seeded).

Each run starts at θ₀ = 0 and takes θ ← θ − γ Σ_{i≤B} φᵢ(⟨φᵢ, θ⟩ − yᵢ) with fresh samples,
φ = Wᵀx, y = ⟨x, b⟩, x ~ N(0, D); the runs share one W and differ in their samples.  At the
reported r the exact population loss P(θ_r) = ½ Σ_j σ_j ((Wθ_r)_j − b_j)² of every run is
recorded (no test-set noise).

``inputs="full"`` draws x in R^v, the literal model.  ``inputs="features"`` draws (φ, y)
directly from their joint Gaussian law N(0, [[WᵀDW, WᵀDb], [bᵀDW, bᵀDb]]) — the same
distribution in d + 1 numbers instead of v, which makes 400 runs cheap when v ≫ d.
"""
from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from .model import Problem


def _sampler(pb: Problem, W: np.ndarray, inputs: str):
    sig, b = pb.sigma(), pb.target()
    if inputs == "full":
        sd = np.sqrt(sig)
        wt = np.concatenate([W, b[:, None]], axis=1)          # x ↦ (Wᵀx, bᵀx)

        def draw(rng, n):
            return (rng.standard_normal((n, pb.v)) * sd) @ wt
        return draw
    if inputs != "features":
        raise ValueError(f"inputs = {inputs!r} must be 'full' or 'features'")
    wt = np.concatenate([W, b[:, None]], axis=1) * np.sqrt(sig)[:, None]
    cov = wt.T @ wt
    ev, U = np.linalg.eigh(cov)
    root = (U * np.sqrt(np.clip(ev, 0.0, None))).T            # cov = rootᵀ root

    def draw(rng, n):
        return rng.standard_normal((n, pb.d + 1)) @ root
    return draw


def population_loss(pb: Problem, W: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """P(θ) for each row of theta."""
    resid = theta @ W.T - pb.target()[None, :]
    return 0.5 * (resid ** 2) @ pb.sigma()


def sgd(pb: Problem, W: np.ndarray, r_report, runs: int, seed: int = 0,
        inputs: str = "features") -> np.ndarray:
    """P(θ_r) of ``runs`` independent runs at the sorted integers ``r_report``: (runs, len(r))."""
    r_report = np.asarray(r_report, dtype=int)
    if r_report.ndim != 1 or np.any(np.diff(r_report) <= 0) or r_report[0] < 0:
        raise ValueError("r_report must be increasing integers >= 0")
    rng = np.random.default_rng(seed)
    draw = _sampler(pb, W, inputs)
    B, g = pb.batch, pb.gamma
    theta = np.zeros((runs, pb.d))
    out = np.empty((runs, r_report.size))
    k = 0
    # the products are small (runs·B × d): BLAS threads only contend with each other
    with np.errstate(over="raise", invalid="raise"), threadpool_limits(1, user_api="blas"):
        for r in range(int(r_report[-1]) + 1):
            if r == r_report[k]:
                out[:, k] = population_loss(pb, W, theta)
                k += 1
                if k == r_report.size:
                    break
            z = draw(rng, runs * B).reshape(runs, B, pb.d + 1)
            phi, y = z[..., :-1], z[..., -1]
            err = (phi @ theta[:, :, None])[..., 0] - y
            theta -= g * (err[:, None, :] @ phi)[:, 0, :]
    if not np.all(np.isfinite(out)):
        raise FloatingPointError("an SGD run diverged (lower gamma)")
    return out


def mean_curve(pb: Problem, W: np.ndarray, r_report, runs: int, seed: int = 0,
               inputs: str = "features") -> dict:
    """Mean and standard error over runs of P(θ_r)."""
    L = sgd(pb, W, r_report, runs, seed, inputs)
    return {"r": [int(r) for r in r_report], "loss": L.mean(axis=0),
            "sem": L.std(axis=0, ddof=1) / np.sqrt(runs), "runs": runs}
