"""The ReLU plateau escape is seeded by SGD noise, not by the initial condition.

ReLU student and teacher, K = M = 2, L = 8, beta = 1, eta = 0.5, sigma_J = 0.01: the ODE of a
seed's own realisation (started from the simulator's initial overlaps) escapes the plateau
much later than SGD (alpha ~ 28 against ~ 15 at N = 16384), and the gap does not close as N
grows.  Not an error of either side (the hierarchy's coefficients match a Monte Carlo average
over the fields at plateau states, also for nearly aligned students; the numba loop matches the
literal NumPy loop; the ODE's routes agree): the escape is the growth of the mode that tells the
two teachers apart, and its seed differs.  In the realisation's ODE that seed is the initial
asymmetry of R, of order sigma_J / sqrt(N).  In SGD the first steps, whose size
eta / sqrt(N) exceeds the tiny initial student (sigma_J^2 < eta^2 alpha), add gradient noise
with a random O(1/sqrt(N)) component along the teacher difference, independent of sigma_J; the
ODE's eta^2 term grows Q by the same amount but isotropically, with no such component.  So
(measured) R11 + R22 - R12 - R21, times sqrt(N), is 1 to 4 in SGD at alpha = 1 and 0.05 to 0.6
in the ODE, and SGD's escape does not move when sigma_J drops from 0.01 to 0.001 while the
ODE's moves from alpha ~ 24 to ~ 36 (N = 4096).  An erf student does not show it: at tiny
weights g'(x_i) ~ g'(0) for both students, so every sample moves them alike and the noise
cancels in the difference (R11 + R22 - R12 - R21 times sqrt(N) at alpha = 1: -0.006 in SGD,
-0.009 in the ODE); a ReLU sample with theta(x_1) != theta(x_2), half of them while the tiny
students point in independent directions, moves one student only.

The check: restarted at alpha = 1 from the simulator's state (mode overlaps of its weights), the
ODE follows a continuation of that SGD run (fresh samples) to the finite-size scale, while the
ODE from alpha = 0 misses it by far more.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.simulation, pytest.mark.full]


def _rms_rel(sim, theory):
    return float(np.sqrt(np.mean(((sim - theory) / theory) ** 2)))


def test_ode_restarted_after_the_noisy_start_follows_sgd_through_the_relu_plateau():
    import solvers
    from solvers.sim.simulate import _init_modes, _initial_weights, _validate, simulate
    N, seed, a0 = 16384, 0, 1.0
    kw = dict(activation="relu", K=2, M=2, N=N, eta=0.5, sigma_J=0.01, L=8, beta=1.0)
    alphas = np.arange(2.0, 32.0, 2.0)
    full = simulate(seed=seed, alphas=list(alphas), **kw)
    st = _validate(seed=seed, alphas=[a0], **kw)
    _, B, W, _, _ = _initial_weights(st)
    assert W is None                      # no rotation: the weights are in the eigenbasis
    J_a0 = simulate(seed=seed, alphas=[a0], **kw).J_final
    # the same state, continued on samples of another seed
    cont = simulate(seed=seed + 1000, alphas=list(alphas - a0), J0=J_a0, B0=B, **kw)
    modes = {k: np.asarray(v).tolist() for k, v in _init_modes(st, J_a0, B).items()}

    def ode(training, shift=0.0, init=None):
        spec = {"model": {"activation": "relu", "K": 2, "M": 2},
                "data": {"L": 8, "beta": 1.0, "N": N},
                "training": {"eta": 0.5, "sigma_J": 0.01, **training},
                "solve": {"alpha_min": alphas[0] - shift, "alpha_max": alphas[-1] - shift,
                          "n_points": len(alphas), "spacing": "linear", "basis": "modes",
                          "dps": "float64", "digits": 8}}
        if init is not None:
            spec["init"] = {"modes": init}
        return np.array([float(e) for e in solvers.solve(spec).eps_g])

    from_zero = _rms_rel(full.eps_g, ode({"seed": seed}))
    restarted = _rms_rel(cont.eps_g, ode({"init": "explicit"}, a0, modes))
    scale = 3 / np.sqrt(N)
    # Measured 0.024 (restart) and 0.415 (from alpha = 0) against 3/sqrt(N) = 0.023.  The
    # escape amplifies the noise after alpha = 1 too, so the restart is held to twice the
    # finite-size scale; a wrong plateau drift would show in both, the seeding only in the
    # run from alpha = 0.
    assert restarted < 2 * scale, (restarted, scale)
    assert from_zero > 5 * scale, (from_zero, scale)
