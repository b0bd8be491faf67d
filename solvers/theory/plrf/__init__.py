"""Power-law random features (PLRF) trained by one-pass mini-batch SGD: the expected loss, its
deterministic equivalent, the compute-optimal frontier, and a simulator.

Model (the conventions of :mod:`.model`): x ~ N(0, D), σ_j = j^(−2α); y = ⟨x, b⟩, b_j = j^(−β);
features Wᵀx, W_jk ~ N(0, 1/d); P(θ) = ½ E(⟨Wᵀx, θ⟩ − y)²; summed-gradient step
θ ← θ − γ Σ_{i≤B} Wᵀxᵢ(⟨Wᵀxᵢ, θ⟩ − yᵢ), θ₀ = 0.

Two routes to p(r) = E[P(θ_r)]:
- ``"exact"``: one draw of W (seeded); for Gaussian x the per-mode recursion of
  :mod:`.recursion` is exact, solved in closed form at any r;
- ``"deterministic"``: the large-(v, d) equivalent of the spectrum (:mod:`.deterministic`),
  v = ∞ allowed where 2α > 1, fed to the same recursion.

Python API (``scaling-odes plrf curve|frontier|simulate`` are thin layers over it)::

    from solvers.theory.plrf import Problem, curve
    pb = Problem(alpha=1.0, beta=0.7, v=800, d=200, batch=1, gamma=0.3)
    out = curve(pb, [10, 100, 10**4, 10**8], route="deterministic")   # r, loss, meta
"""
from __future__ import annotations

import math
import time

import numpy as np

from .deterministic import DEError, equivalent
from .model import Problem, draw, features, modes
from .recursion import Spectrum, Unstable, loss_curve

__all__ = ["Problem", "curve", "simulate", "spectrum", "Unstable", "DEError", "r_grid",
           "size_curve", "size_simulation", "modes", "features", "draw"]

MAX_POINTS = 100_000
# The deterministic route is checked up to this d: the top of the phase table's largest ladder
# (bench/bench_plrf_phases.py), whose noise-on rows agree with the smaller ladders, and the
# noise share smooth in d (tests/test_plrf_noise.py).  Beyond it nothing has been checked.
DETERMINISTIC_MAX_D = 1_638_400

# The CPU-time model of the three requests (seconds of process CPU, BLAS on its default two
# threads), fitted to a ladder measured on an AMD EPYC (AVX-512): d = 250..4000 for the exact
# route, 10³..1.6·10⁶ for the deterministic one, d = 20..400 for the simulator; every point within
# 0.7-1.35 of the model except runs under 0.2 s.  ``tests/test_sizing.py`` measures it again.
# exact: W's v·d normals, the Gram matrix (v d² flops) and its eigendecomposition (~10 d³)
EXACT_NORMAL_S = 2e-8
EXACT_FLOP_RATE = 4e10
# deterministic: the cells' Newton roots and eigenvalue counts grow like d^0.7 (measured
# exponent 0.69 between d = 10⁵ and 1.6·10⁶); v = 4d costs the same as v = ∞ there
DET_START_S = 0.6
DET_PER_D07_S = 8.5e-4
# simulator: per SGD step of every run, and the feature products at BLAS speed
SIM_STEP_S = 8e-7
SIM_FLOP_RATE = 1.8e10


def r_grid(r_max: int, n_points: int) -> list[int]:
    """About n_points log-spaced integers 1..r_max (duplicates at small r merged)."""
    return sorted({int(round(x)) for x in np.geomspace(1, r_max, n_points)})


def _refuse_above(secs: float, need: float, what: str, knobs: str) -> None:
    """The refusal every subcommand applies (``sizing.check``: SCALING_ODES_MAX_HOURS,
    SCALING_ODES_MAX_MEMORY_GB), with this request's knobs in the label."""
    from solvers.app.sizing import check, work_estimate
    check(work_estimate("plrf", what, "float64", secs, need), knobs)


def size_curve(pb: Problem, route: str, n_r: int) -> tuple[float, float]:
    """(CPU seconds, bytes) of a curve; refuses (ValueError, one line) a request the route
    cannot answer or one above the limits, before any work."""
    if n_r > MAX_POINTS:
        raise ValueError(f"{n_r} values of r is more than {MAX_POINTS}")
    if route == "exact":
        if pb.v == math.inf:
            raise ValueError("route = \"exact\" draws W and needs a finite v (route = "
                             "\"deterministic\" takes v = \"inf\")")
        need = 8.0 * (pb.v * pb.d + 3 * pb.d ** 2)
        secs = (EXACT_NORMAL_S * pb.v * pb.d
                + (pb.v * pb.d ** 2 + 10 * pb.d ** 3 + 40 * pb.d ** 2 + n_r * pb.d)
                / EXACT_FLOP_RATE)
        knobs = f"lower d (or v), or use route = \"deterministic\""
    elif route == "deterministic":
        if pb.v != math.inf and pb.v <= pb.d:
            raise ValueError(f"route = \"deterministic\" needs v > d (v = {pb.v}, d = {pb.d})")
        if pb.d > DETERMINISTIC_MAX_D:
            raise ValueError(f"route = \"deterministic\" at d = {pb.d}: checked up to d = "
                             f"{DETERMINISTIC_MAX_D} only (the largest size verified against "
                             f"the phase table and a finer grid): lower d")
        J = pb.v if pb.v != math.inf else 4 * pb.d
        need = 8.0 * 16 * J          # σ, b², weights and the moments' temporaries
        secs = DET_START_S + DET_PER_D07_S * pb.d ** 0.7
        knobs = "lower v" if need > 8.0 * 16 * 4 * pb.d else "lower d"
    else:
        raise ValueError(f"route = {route!r} must be \"exact\" or \"deterministic\"")
    _refuse_above(secs, need, f"route = \"{route}\" at v = {pb.v}, d = {pb.d}", knobs)
    return secs, need


def spectrum(pb: Problem, route: str, seed: int = 0) -> tuple[Spectrum, dict]:
    """The modes (exact: one draw of W) or cells (deterministic) and what describes them."""
    if route == "exact":
        m = draw(pb, seed)
        return Spectrum(m.lam, np.ones_like(m.lam), m.w, m.p_star), {"seed": seed}
    eq = equivalent(pb)
    return eq.spectrum, {"c0": eq.c0, "cells": int(eq.spectrum.lam.size),
                         "eigenvalue_total": eq.eig_total, "forcing_total": eq.forcing_total,
                         "sigma_b2": eq.sigma_b2}


def curve(pb: Problem, r, route: str = "exact", seed: int = 0, rtol: float = 1e-9) -> dict:
    """p(r) at the integers r ≥ 0 (any size: the recursion is solved in closed form).
    Raises Unstable (one line) when the step makes the expected loss diverge."""
    from solvers import __version__
    t0 = time.perf_counter()
    r = [int(x) for x in r]
    if any(x < 0 for x in r):
        raise ValueError("r must be integers >= 0")
    size_curve(pb, route, len(r))
    sp, info = spectrum(pb, route, seed)
    # the cells of the equivalent are a quadrature: 1e-6 is far below its own error
    out = loss_curve(sp, pb.gamma, pb.batch, r, rtol=rtol if route == "exact" else 1e-6)
    return {"r": r, "loss": out["loss"].tolist(),
            "meta": {"version": __version__, "route": route, "alpha": pb.alpha,
                     "beta": pb.beta, "v": "inf" if pb.v == math.inf else pb.v, "d": pb.d,
                     "batch": pb.batch, "gamma": pb.gamma, "p_star": sp.p_star,
                     "p_inf": out["p_inf"], "norm_K": out["norm_K"],
                     "max_rel_error": float(np.max(out["err"] / np.abs(out["loss"])))
                     if r else 0.0, **info, "wall_s": time.perf_counter() - t0}}


def size_simulation(pb: Problem, r_max: int, runs: int, inputs: str) -> tuple[float, float]:
    """(CPU seconds, bytes) of the SGD runs alone (the exact curve beside them is sized by
    :func:`size_curve`); refuses (ValueError, one line) above the limits."""
    width = pb.v if inputs == "full" else pb.d + 1
    steps = runs * pb.batch * (r_max + 1)
    secs = steps * SIM_STEP_S + 2.0 * steps * (width * (pb.d + 1) + 2 * pb.d) / SIM_FLOP_RATE
    need = 8.0 * (runs * pb.batch * (width + pb.d + 1) + pb.v * (pb.d + 1) + runs * pb.d)
    _refuse_above(secs, need, f"the simulation ({runs} runs to r = {r_max})",
                  "lower runs, batch, the largest r or d")
    return secs, need


def simulate(pb: Problem, r, runs: int = 400, seed: int = 0, sim_seed: int = 1,
             inputs: str = "full") -> dict:
    """Seeded one-pass SGD on one draw of W (``seed``) next to the exact expected loss of that
    draw: mean and standard error over ``runs`` runs at the integers r."""
    from .sgd import mean_curve
    t0 = time.perf_counter()
    r = sorted({int(x) for x in r})
    if not r or r[0] < 0:
        raise ValueError("r must be integers >= 0")
    if pb.v == math.inf:
        raise ValueError("the simulator needs a finite v")
    if inputs not in ("full", "features"):
        raise ValueError(f"inputs = {inputs!r} must be \"full\" or \"features\"")
    size_simulation(pb, r[-1], runs, inputs)
    th = curve(pb, r, "exact", seed)
    W = features(pb, seed)
    mc = mean_curve(pb, W, r, runs, seed=sim_seed, inputs=inputs)
    sem = mc["sem"]
    z = [float((m - t) / e) if e > 0 else 0.0 for m, t, e in zip(mc["loss"], th["loss"], sem)]
    th["sim"] = {"loss": mc["loss"].tolist(), "sem": sem.tolist(), "z": z, "runs": runs,
                 "sim_seed": sim_seed, "inputs": inputs,
                 "wall_s": time.perf_counter() - t0 - th["meta"]["wall_s"]}
    return th



