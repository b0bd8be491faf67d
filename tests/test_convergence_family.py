"""Students that learn their teacher, integrated to convergence: a ReLU, a polynomial and an erf
pair (student = teacher activation, K = M, L = 1, σ_J = 0.3: no long plateau).

Independent routes:
* the level basis against the modes basis (two assemblies of the printed system; for erf and the
  polynomial the level basis runs on flint with Taylor series at dps = "auto", against the modes
  basis in float64 with RK7(8));
* finite-N online SGD (``solvers.compare``: the simulator, then the ODEs of each seed's own
  realisation), rms relative deviation of ε_g within 3/√N (K = M = 2).
"""
from __future__ import annotations

import numpy as np
import pytest

import solvers
from cache_support import generated_cache_fixtures
from solvers.app.solve import solve_spec
from solvers.app.spec import parse_spec

pytestmark = [pytest.mark.second_basis, pytest.mark.simulation]

run_cache, cache = generated_cache_fixtures("convergence-family-cache")

# activation, η, α where ε_g is far below its start (levels vs modes), α for the simulation,
# level-basis precision.  The simulation window ends earlier for ReLU: near convergence ε_g
# decays exponentially, and a finite-N run's rate differs by O(1/√N), so the relative deviation
# grows like α/√N (measured at N = 256, 2 seeds: rms 0.15 to α = 80, 0.19 to α = 120 against
# 3/√N = 0.19).
PAIRS = {
    "erf": ("erf", 0.5, 700, 700, "auto"),
    "polynomial": ("x + x**2/4", 0.2, 400, 400, "auto"),
    # the flint level basis of a ReLU student costs ~12 s of CPU to α = 120 (a quadrature per
    # evaluation): the default suite uses float64 levels, make verify the flint route
    # (tests/test_relu_learns.py)
    "relu": ("relu", 0.5, 160, 80, "float64"),
}


def _spec(act, K, eta, alpha_max, basis, dps, N=256, seeds=None):
    out = {"model": {"activation": act, "K": K, "M": K}, "data": {"L": 1, "N": N},
           "training": {"eta": eta, "sigma_J": 0.3, "seed": 0},
           "solve": {"alpha_max": alpha_max, "n_points": 12, "basis": basis, "dps": dps,
                     "digits": 5}}
    if seeds is not None:
        out["simulate"] = {"seeds": seeds}
    return out


# larger committees stay longer on the symmetric plateau: α to convergence per (pair, K),
# measured with the modes basis (ε_g / ε_g(0) there: erf 1.1e-6 and 3.6e-6, polynomial 2.5e-8
# and 4.7e-7).  No simulation here: from a random start these committees sit on the plateau
# (ε_g flat from α ≈ 20 to 400) and one run leaves it when its own O(1/√N) asymmetry has grown,
# which the ODE from the initial overlaps does not carry; measured through the escape at
# N = 1024, 2 seeds: rms 0.12 (erf K = 3), 1.9 and 0.13 (polynomial K = 3, 4) against 0.094.
# ReLU (float64, α ≤ 3000 and 1500): K = 3 ε_g / ε_g(0) = 7.8e-4 at α = 405, 3.5e-6 at α = 605,
# then within its float64 error bound (the end of learning, held from α ≈ 760; levels and modes
# identical to 7 digits above it; 176 and 131 s CPU); K = 4 7.2e-5 at α = 569, held from α ≈ 908
# (modes: 860 s CPU with the module's generation, on a loaded machine).
LARGER = {("erf", 3): 1500, ("erf", 4): 2000, ("polynomial", 3): 800, ("polynomial", 4): 1000,
          ("relu", 3): 800, ("relu", 4): 1000}


def _levels_vs_modes(name, K, amax=None):
    act, eta, amax2, _, dps = PAIRS[name]
    amax = amax or amax2
    modes = solve_spec(parse_spec(_spec(act, K, eta, amax, "modes", "float64")))
    levels = solve_spec(parse_spec(_spec(act, K, eta, amax, "levels", dps)))
    a, b = np.array(modes["eps_g"]), np.array(levels["eps_g"], dtype=float)
    assert a[-1] < 1e-4 * a[0], (name, a[-1] / a[0])        # converged: ε_g ≲ 1e-4 of its start
    # 5 digits asked of each route: they agree to 1e-4 relative at every α where ε_g is above
    # the larger of their error bounds (meta.eps_g_bound), within that bound below it (the end
    # of learning: ε_g = 0 reported)
    bound = max(modes["meta"]["eps_g_bound"], levels["meta"]["eps_g_bound"])
    above = np.maximum(a, b) > bound
    assert np.all(np.abs(a - b)[~above] <= bound), name
    assert np.max(np.abs(a - b)[above] / np.maximum(a, b)[above]) < 1e-4, name


def _against_simulation(name, K, N):
    act, eta, _, amax, _ = PAIRS[name]
    c = solvers.compare(_spec(act, K, eta, amax, "modes", "float64", N=N, seeds=[0, 1]))
    assert c.theory.eps_g[-1] < 0.01 * c.theory.eps_g[0], name
    # one run's ε_g fluctuates by O(1/√N) relative around the ODE of its own realisation
    assert c.within, (name, c.rms_deviation, c.finite_size_scale)


@pytest.mark.parametrize("name", list(PAIRS))
def test_levels_and_modes_agree_to_convergence(name, cache):
    _levels_vs_modes(name, 2)


@pytest.mark.parametrize("name", list(PAIRS))
def test_ode_follows_sgd_towards_convergence(name, cache):
    _against_simulation(name, 2, 256)


@pytest.mark.full
@pytest.mark.parametrize("name,K", list(LARGER))
def test_larger_committees_converge(name, K, cache):
    _levels_vs_modes(name, K, LARGER[(name, K)])
