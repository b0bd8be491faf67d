"""Students that learn their teacher, integrated to convergence: a ReLU, a polynomial and an erf
pair (student = teacher activation, K = M, L = 1, σ_J = 0.3: no long plateau).

Independent routes:
* the level basis against the modes basis (two assemblies of the printed system; for erf and the
  polynomial the level basis runs on flint with Taylor series at dps = "auto", against the modes
  basis in float64 with RK7(8));
* finite-N online SGD (``solvers.compare``: the simulator, then the ODEs of each seed's own
  realisation), rms relative deviation of ε_g within 3/√N (K = M = 2; K = M = 3 and 4 restarted
  after the plateau escape, ``test_larger_committees_follow_sgd_after_the_escape``).
"""
from __future__ import annotations

import numpy as np
import pytest

import solvers
from cache_support import generated_cache_fixtures
from solvers.app.solve import solve_spec
from solvers.app.spec import parse_spec

pytestmark = [pytest.mark.second_basis, pytest.mark.simulation]

run_cache, cache = generated_cache_fixtures()

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
# and 4.7e-7).  From a random start these committees sit on the plateau (ε_g flat from α ≈ 20
# to 400) and one run leaves it when its own O(1/√N) asymmetry has grown, which the ODE from
# the initial overlaps does not carry; measured through the escape at N = 1024, 2 seeds: rms
# 0.12 (erf K = 3), 1.9 and 0.13 (polynomial K = 3, 4) against 0.094.  So the comparison with
# simulation restarts the ODE after the escape (below).
# ReLU (float64, α ≤ 3000 and 1500): K = 3 ε_g / ε_g(0) = 7.8e-4 at α = 405, 3.5e-6 at α = 605,
# then within its float64 error bound (the end of learning, held from α ≈ 760; levels and modes
# identical to 7 digits above it); K = 4 7.2e-5 at α = 569, held from α ≈ 908.  Run as below
# (float64 modes against float64 levels, both RK7(8), 5 digits; K = 3: 247 steps, held from
# α = 760; K = 4: 273 steps, held from α = 908), both pass; CPU of the whole pytest case with
# the modules cached (generation: 3 s at K = 3, 10 s at K = 4), AMD EPYC with AVX-512, loaded:
# relu K = 3 21 s, K = 4 58 s.  (With the float64 orthant probability a scalar quadrature,
# ~1 ms a call, 27 calls a right-hand side at K = 3 and 132 at K = 4, the same cases took
# 322 s and ~2400 s estimated; compiled and memoised it is 12-15 µs a call.)
LARGER = {("erf", 3): 1500, ("erf", 4): 2000, ("polynomial", 3): 800, ("polynomial", 4): 1000,
          ("relu", 3): 800, ("relu", 4): 1000}

# Against simulation, the larger committees are restarted after the plateau escape: α0 per
# (pair, K), after both seeds have left the plateau (from a random start one run's escape is
# seeded by its own O(1/√N) noise, which the ODE from the initial overlaps does not carry). From
# α0 on, the ODE solved from each seed's simulated mode overlaps predicts the descent to
# convergence: hundreds of units of α over which ε_g falls by about 3 to 5 orders of magnitude,
# so a wrong right-hand side would drift away from the run.  The ODE from the initial overlaps
# is reported beside it (``restart.from_start``) and misses by far.  Measured at N = 1024
# (3/√N = 0.094), seeds 0 and 1, rms relative deviation over α > α0 per seed, restarted / from
# the start, ε_g(end) / ε_g(α0), CPU seconds (AMD EPYC with AVX-512, shared):
#   erf K = 3, α0 = 600:         0.029 0.009 / 0.41 0.34,  6e-6 2e-5,   27 s
#   erf K = 4, α0 = 1200:        0.013 0.009 / 0.23 0.34,  2e-4 3e-4,   61 s
#   polynomial K = 3, α0 = 500:  0.044 0.014 / 9.96 0.99,  1.2e-4,      15 s
#   polynomial K = 4, α0 = 700:  0.023 0.017 / 0.77 0.32,  1.0e-3 1.2e-3, 37 s
#   relu K = 3, α0 = 300 to 600:  0.006 0.010 / 526 1.5,  1.4e-3 2.8e-4, 45 s
#   relu K = 4, α0 = 600 to 1000: 0.013 0.012 / 106 0.35, 3.1e-4 2.2e-3, 111 s
# (relu CPU: the whole pytest case, modules cached; the ODE from the start reaches its own end
# of learning inside the window, at α = 569 and 898, where its contrast stops:
# restart.from_start.alpha_max.)
# The window ends at α_max of the case (LARGER unless given): a ReLU run restarted late reaches
# its float64 error bound early (K = 3 above α ≈ 650), where the ODE reports ε_g = 0 while the
# finite-N run still decays, so the relative deviation there measures nothing but the bound.
RESTART_AFTER_ESCAPE = {("erf", 3): (600, None), ("erf", 4): (1200, None),
                        ("polynomial", 3): (500, None), ("polynomial", 4): (700, None),
                        ("relu", 3): (300, 600), ("relu", 4): (600, 1000)}


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


def _restarted_against_simulation(name, K, N):
    act, eta, *_ = PAIRS[name]
    a0, amax = RESTART_AFTER_ESCAPE[(name, K)]
    amax = amax or LARGER[(name, K)]
    spec = _spec(act, K, eta, amax, "modes", "float64", N=N, seeds=[0, 1])
    spec["solve"].update(n_points=60, spacing="linear")
    spec["compare"] = {"restart_alpha": a0}
    c = solvers.compare(spec)
    r = c._data["restart"]
    restarted = np.array([[float(e) for e in run] for run in r["eps_g_runs"]])
    # integrated to convergence: ε_g at the end far below its value at the restart (measured
    # 1.2e-3 of it and less)
    assert np.all(restarted[:, -1] < 1e-2 * restarted[:, 0]), (name, K, restarted[:, -1])
    # each seed within the finite-size scale of its own restarted ODE (measured 3-30x below)
    assert np.all(c.rms_deviation_per_seed < c.finite_size_scale), \
        (name, K, c.rms_deviation_per_seed, c.finite_size_scale)
    return c


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


@pytest.mark.full
@pytest.mark.parametrize("name,K", list(RESTART_AFTER_ESCAPE))
def test_larger_committees_follow_sgd_after_the_escape(name, K, cache):
    """K = M = 3, 4 against simulation to convergence, with the restart (not a specialised
    start): each seed's ODE is solved from that seed's simulated state after its plateau
    escape, whose timing is the run's own noise.  Honest because the restarted curve is a
    prediction from α0 to convergence — ε_g falls by 3 to 5 orders of magnitude after α0 and
    the run is held to 3/√N relative at every recorded α, which a wrong hierarchy, η or
    activation would miss — while the escape, which no deterministic theory of one run can
    time, is left out (``restart.from_start`` shows the ODE from the initial overlaps missing
    by 0.2 to 10)."""
    _restarted_against_simulation(name, K, 1024)
