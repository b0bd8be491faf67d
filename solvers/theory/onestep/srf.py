"""Result 3.1: the spike (γ, r) and bulk (c) of the first layer after one large step."""
from __future__ import annotations

import math

from .activation import Activation


def srf_parameters(student: Activation, target: Activation, alpha0: float, eta: float,
                   noise: float = 0.0, sqrt=math.sqrt, consts=None) -> dict:
    """γ, r, c and ‖u‖ (float64; α0 = ∞ allowed: the population step).

    ‖u‖² = μ1⋆² + (m2⋆ + Δ)/α0,  γ = μ1⋆/‖u‖,  r = η μ1 ‖u‖,  c = 1 + η² (m2⋆ + Δ) v_σ'/α0.
    α0 = 0 means no step: γ = r = 0, c = 1 (plain random features).

    Examples
    --------
    >>> from solvers.theory.onestep.activation import resolve
    >>> p = srf_parameters(resolve("linear"), resolve("linear"), float("inf"), 2.0)
    >>> (p["gamma"], p["r"], p["c"])
    (1.0, 2.0, 1.0)
    """
    cs, ct = consts or (student.constants(), target.constants())
    if alpha0 == 0:
        return {"gamma": 0.0 * eta, "r": 0.0 * eta, "c": 1.0 + 0.0 * eta, "unorm": float("nan")}
    y2 = ct["m2"] + noise
    inv = 0.0 if alpha0 == float("inf") else 1 / alpha0
    unorm = sqrt(ct["mu1_star"] ** 2 + y2 * inv)
    if unorm == 0:          # μ1⋆ = 0 and α0 = ∞: the step has no mean direction at all
        return {"gamma": 0.0, "r": 0.0, "c": 1.0, "unorm": 0.0}
    return {"gamma": ct["mu1_star"] / unorm, "r": eta * cs["mu1"] * unorm,
            "c": 1 + eta ** 2 * y2 * cs["var_dsigma"] * inv, "unorm": unorm}
