"""The plateau length read off a trajectory (the ``plateau`` subcommand's last step).

Theory, not command line: everything here takes a Problem and an α grid.
"""
from __future__ import annotations

import math

import numpy as np

from solvers.core.numbers import Float64Context
from solvers.theory.asymptotic import mode_states
from solvers.theory.plateau import specialisation_component

# "on the way to the plateau" at α_0: ε_g within 5 % of the symmetric plateau height and the
# symmetry-breaking component below 1 % of R* (still in the linear regime of the escape)
PLATEAU_EPS_TOL = 0.05
PLATEAU_RHO_TOL = 0.01


def level_one_R(states, lam, M):
    """Level-1 R (n, M, M) and the whole level-1 state (n, N_STATE) of mode states."""
    v1 = np.array([np.asarray(lam, dtype=float) @ s for s in states])
    return v1[:, :M * M].reshape(-1, M, M), v1


def plateau_length(problem, grid, eps_star, R_star, rate, alpha0=None, fraction=0.1, *,
                   sigma_J=None, N=None) -> dict:
    """Plateau length from the problem's own trajectory on ``grid`` (float64, modes basis).

    The symmetry-breaking (specialisation) component ρ of R^(1) grows as e^{λ(α-α_0)} on the
    plateau; on top of it sits a static offset (a random teacher's plateau is not exactly the
    symmetric one).  Fit ρ(α) = a + b e^{λ(α-α_0)} over one escape time after α_0 with the
    Jacobian's λ (linear least squares in a, b), and extrapolate to |ρ - a| = f R*:
        α_P - α_0 = τ ln(f R* / |b|)    (the paper's Eq. 117 with τ(D - ln σ_J + ln N / 2)
    replaced by this measured log-ratio; D itself is reported for random initial conditions).
    The escape is declared at the fraction f = ``escape_fraction`` (default 0.1) of R*: up to
    f ≈ 0.3 the extrapolation matches the ODE to the grid spacing (K = M = 2, L = 4); at
    f = 1 (the paper's "R(α_P) = e R*" is of this size) the nonlinear saturation makes the
    linear extrapolation ~25 % short, so the length would not be a property of τ_esc.
    α_0 defaults to the first grid point with |ε_g - ε*| <= 5 % ε*.  Returns {} plus a note
    when the trajectory is not on the way to the plateau.  ``sigma_J`` and ``N`` (a random
    initial condition) add the constant D of Eq. 117.
    """
    M = problem.key.M
    grid = list(grid)
    tau = 1.0 / rate
    if alpha0 is not None:
        alpha0 = float(alpha0)
        grid = sorted(set(grid) | {alpha0})
    states, eps = mode_states(problem, grid)
    R1, _ = level_one_R(states, problem.numeric(Float64Context()).lam, M)
    rho = specialisation_component(R1, M)
    grid = np.asarray(grid)
    if alpha0 is None:
        near = np.flatnonzero(np.abs(eps - eps_star) <= PLATEAU_EPS_TOL * eps_star)
        if near.size == 0:
            return {"plateau_length_note": "the trajectory does not reach the plateau "
                    f"(|eps_g - eps*| > {PLATEAU_EPS_TOL:g} eps* on the whole grid)"}
        alpha0 = float(grid[near[0]])
    i0 = int(np.flatnonzero(grid == alpha0)[0])
    if abs(eps[i0] - eps_star) > PLATEAU_EPS_TOL * eps_star or \
            abs(rho[i0]) > PLATEAU_RHO_TOL * R_star:
        return {"plateau_length_note": f"alpha0 = {alpha0:g} is not on the plateau "
                f"(eps_g = {eps[i0]:.4g}, eps* = {eps_star:.4g}, rho = {rho[i0]:.3g})"}
    # the fit stretch: one escape time, on a fine grid of its own (the spec's may be coarse)
    fit = np.linspace(alpha0, alpha0 + tau, 21)
    fstates, _ = mode_states(problem, [0.0] + list(fit))
    fR1, _ = level_one_R(fstates[1:], problem.numeric(Float64Context()).lam, M)
    frho = specialisation_component(fR1, M)
    X = np.stack([np.ones_like(fit), np.exp((fit - alpha0) / tau)], axis=1)
    (a, b), *_ = np.linalg.lstsq(X, frho, rcond=None)
    if abs(b) < 1e-300 or not np.isfinite(b):
        return {"plateau_length_note": "no growing symmetry-breaking component "
                "(a symmetric initial condition never escapes)"}
    length = tau * math.log(fraction * R_star / abs(b))
    out = {"plateau_length": length, "alpha0": alpha0, "escape_fraction": fraction,
           "rho_alpha0": float(b), "rho_offset": float(a)}
    # the escape as seen on the spec's grid: first α with |ρ - a| >= f R*
    hit = np.flatnonzero((np.abs(rho - a) >= fraction * R_star) & (grid > alpha0))
    if hit.size:
        out["plateau_length_ode"] = float(grid[hit[0]] - alpha0)
    if sigma_J is not None and N:
        out["D"] = length / tau + math.log(float(sigma_J)) - 0.5 * math.log(N)
    return out
