"""One giant gradient step on the first layer, then ridge on the readout: the spiked
random-features (sRF) theory and its simulators.

Model (Cui et al., ICML 2024, arXiv:2402.04980; the equations re-derived and checked here):
x ~ N(0, I_d), y = σ⋆(θ⋆·x) + √Δ noise; p = β d rows on the unit sphere, readout 1/√p; one step
w_i ← w_i + η (1/n0) Σ (y − f) σ'(w_i·x) x with n0 = α0 d samples (η is the paper's η̃; gradient
descent on (1/2n0)Σ(y − f)² with rate p·η, at every width); ridge Σ(y − w·σ(Wx)/√p)² + λ‖w‖² on n = α d
fresh samples; ε_g = E(σ⋆ − ŷ)² on fresh inputs (noiseless target).  σ, σ⋆ odd.

Asymptotics.  The trained rows are an sRF σ(√c w·x + rκ), κ = v̂·x, θ⋆ = γv̂ + ρζ̂ (``srf``).
With the conditional coefficients μ0(κ) = E_ξ σ(rκ + √cξ), μ1(κ) = E_ξ σ'(·),
μ⋆(κ)² = E_ξ σ(·)² − μ0² − cμ1², the targets h = E σ⋆(γκ + ρξ), h1 = E ξσ⋆(·), h2 = E σ⋆(·)²,
D ~ c·MP(β), α_p = α/β, S = λ + V̂1 D + V̂2, W = 1/(1 + μ1²V1 + μ⋆²V2), ŷ0 = μ0 m + κμ1 t,
E(κ) = h2 − 2hŷ0 − 2μ1ψh1 + ŷ0² + μ1²q1 + μ⋆²q2:

    V̂1 = α_p E[μ1² W],  V̂2 = α_p E[μ⋆² W],  V1 = E_D D/S,  V2 = E_D 1/S,
    E[μ0 (h − ŷ0) W] = 0,  t = βc t̂ E_D 1/S,  t̂ = α_p E[κμ1 (h − ŷ0) W],
    ψ = β ψ̂ E_D D/S,  ψ̂ = α_p E[μ1 h1 W],
    q̂1 = α_p E[μ1² (E + Δ) W²],  q̂2 = α_p E[μ⋆² (E + Δ) W²],
    q1 = E_D D(q̂1 D + q̂2)/S² + β(c t̂² E_D D/S² + ψ̂² E_D D²/S²),
    q2 = E_D (q̂1 D + q̂2)/S² + β(c t̂² E_D 1/S² + ψ̂² E_D D/S²),
    ε_g = E_κ E(κ),  training error = E_κ[(E + Δ) W²].

Python API (``scaling-odes onestep`` / ``onestep-sim`` are thin layers over it)::

    from solvers.theory.onestep import Setup, curve
    st = Setup(student="tanh", target="tanh", alpha0=0.5, eta=1.0, beta=1.0, ridge=0.01)
    res = curve(st, [0.2, 0.5, 1, 2, 3])     # eps_g, train_error, overlaps, srf, bounds, ...

Pieces: :mod:`.activation`, :mod:`.srf` (Result 3.1), :mod:`.spectrum` (MP, two routes),
:mod:`.fixed_point` (float64, vectorised), :mod:`.mp_route` (mpmath), :mod:`.mei_montanari`
(the r = 0 oracle), :mod:`.bounds`, :mod:`.simulate`.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .activation import Activation, ActivationError, resolve
from .bounds import lambda_inf, lower
from .fixed_point import FixedPointError, Tables, solve, tables
from .srf import srf_parameters

__all__ = ["Setup", "curve", "Activation", "ActivationError", "FixedPointError", "Tables",
           "resolve", "solve", "tables", "srf_parameters", "OVERLAPS"]

SMALL_SPIKE = 0.05      # below: warn that finite widths do not see the free mean direction
OVERLAPS = ("m", "t", "psi", "q1", "q2", "V1", "V2", "V1hat", "V2hat", "q1hat", "q2hat",
            "that", "psihat")


@dataclass
class Setup:
    """One problem: activations, step (α0, η), width ratio β = p/d, ridge λ, label noise Δ."""

    student: str = "tanh"
    target: str = "tanh"
    alpha0: float = 0.5
    eta: float = 1.0
    beta: float = 1.0
    ridge: float = 0.01
    noise: float = 0.0
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        for key, lo, strict in (("alpha0", 0.0, False), ("eta", 0.0, False), ("beta", 0.0, True),
                                ("ridge", 0.0, True), ("noise", 0.0, False)):
            v = getattr(self, key)
            if not isinstance(v, (int, float)) or math.isnan(v) or \
                    (math.isinf(v) and key != "alpha0") or (v <= lo if strict else v < lo):
                rel = ">" if strict else ">="
                raise ValueError(f"{key} = {v} must be a finite number {rel} {lo:g}"
                                 + (" (alpha0 may be inf)" if key == "alpha0" else ""))
        self.student_act = resolve(self.student)
        self.target_act = resolve(self.target)

    def srf(self) -> dict:
        """γ, r, c (Result 3.1)."""
        return srf_parameters(self.student_act, self.target_act, self.alpha0, self.eta,
                              self.noise)

    def tables(self) -> Tables:
        if "tab" not in self._cache:
            p = self.srf()
            self._cache["tab"] = tables(self.student_act, self.target_act, p["gamma"], p["r"],
                                        p["c"])
        return self._cache["tab"]


def bounds(st: Setup) -> dict:
    """(26), (27) at γ = 1 (α0 → ∞, same η), and at the setup's own (γ, r, c) the λ → ∞ value
    and the span lower bound."""
    ct = st.target_act.constants()
    inf = Setup(st.student, st.target, math.inf, st.eta, st.beta, st.ridge, st.noise)
    ti = inf.tables()
    tab = st.tables()
    return {"upper": lambda_inf(ti, ct["m2"]), "lower": lower(ti, ct["m2"]),
            "srf_alpha0_inf": {k: inf.srf()[k] for k in ("gamma", "r", "c")},
            "lambda_inf": lambda_inf(tab, ct["m2"]), "lower_here": lower(tab, ct["m2"])}


def curve(st: Setup, alpha) -> dict:
    """Test and training error, overlaps, sRF parameters, bounds and the best linear baseline
    at each α (> 0).  Raises FixedPointError when a fixed point is not reached."""
    from solvers import __version__
    t0 = time.perf_counter()
    alpha = np.asarray(alpha, dtype=float)
    if alpha.ndim != 1 or alpha.size == 0 or not np.all(np.isfinite(alpha)) or \
            np.any(alpha <= 0):
        raise ValueError("alpha must be a non-empty list of finite numbers > 0")
    p = st.srf()
    notes = []
    if 0 < p["r"] < SMALL_SPIKE:
        # the mean direction m is free (unregularised) for every r > 0 at p = ∞, so the theory
        # jumps at r = 0; a network of width p sees it only when r ≫ p^(−1/2)
        notes.append(f"spike r = {p['r']:.3g} is small: the theory's free mean direction needs "
                     f"r >> p^(-1/2), i.e. p >> {1 / p['r'] ** 2:.3g}; below that the network "
                     f"follows the r = 0 (random-features) curve")
        warnings.warn(notes[-1])
    res = solve(st.tables(), alpha, st.beta, p["c"], st.ridge, st.noise)
    ct = st.target_act.constants()
    return {"alpha": alpha.tolist(), "eps_g": res["eps_g"].tolist(),
            "train_error": res["train_error"].tolist(),
            "overlaps": {k: res[k].tolist() for k in OVERLAPS},
            "srf": {k: float(p[k]) for k in ("gamma", "r", "c")},
            "bounds": bounds(st),
            "linear_baseline": float(ct["m2"] - ct["mu1_star"] ** 2),
            "meta": {"version": __version__, "student_activation": st.student, "target_activation": st.target,
                     "alpha0": st.alpha0, "eta": st.eta, "width": st.beta, "ridge": st.ridge,
                     "noise": st.noise, "route": "float64 (trapezoid in κ, ξ; midpoint in θ "
                     "for MP)", "notes": notes, "wall_s": time.perf_counter() - t0}}
