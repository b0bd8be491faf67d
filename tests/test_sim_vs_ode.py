"""Simulation vs ODE: the gap is finite-size noise, shrinking like N^(-1/2); plateau escape
in simulation vs M and L (Fig. 5).

Each simulation run is compared with the ODEs (order 2: SGD contains the eta^2 term) started from
that run's own initial order parameters, so the initial-condition spread is removed and what is
left is the SGD noise accumulated along the trajectory, whose amplitude is O(N^(-1/2)).
Measured discrepancy D = RMS over alpha in [0, 10] of eps_sim - eps_ode (erf, K = M = 2, L = 4,
beta = 1, eta = 0.5, sigma_J = 0.1: learning is well under way by alpha = 10, before the
plateau escape, whose exponential sensitivity would only add noise to the estimate).
"""
from fractions import Fraction

import numpy as np
import pytest

from derive import spectra
from derive.keys import SystemKey
from solvers.hierarchy.odes import integrate_problem
from solvers.core.problem import Problem, explicit_init
from solvers.sim.simulate import simulate

pytestmark = [pytest.mark.simulation]  # oracle (tests/conftest.py)
# one xdist worker runs the whole module: its module-scoped fixture is computed once (make test
# runs --dist loadgroup)
pytestmark.append(pytest.mark.xdist_group("test_sim_vs_ode"))

SEEDS = range(12)
ETA = Fraction(1, 2)


def discrepancies(N, spectrum, alphas, generator="xoshiro"):
    lam = [float(v) for v in spectrum.eigenvalues]
    out = []
    for seed in SEEDS:
        r = simulate(activation="erf", K=2, M=2, N=N, eta=float(ETA), sigma_J=0.1, seed=seed,
                     alphas=alphas, eigenvalues=lam, generator=generator)
        init = explicit_init("modes", r.init_modes["R"], r.init_modes["Q"], r.init_modes["T"])
        prob = Problem(SystemKey("erf", 2, 2), spectrum, ETA, 2, init)
        # rtol 1e-10: ODE error ~1e-10, negligible next to D >= 1e-4
        ode = integrate_problem(prob, list(r.alpha), basis="modes", arithmetic="float64",
                                rtol=1e-10).eps_float()
        out.append(np.sqrt(np.mean((r.eps_g - ode) ** 2)))
    return np.array(out)


def fit_exponent(Ns, D):
    """Weighted least-squares slope of log mean(D) vs log N.

    The error of log mean(D) at each N is sem(D)/mean(D) (delta method, seeds independent), so
    the slope's error bar comes from the seed-to-seed spread alone.
    """
    x = np.log(Ns)
    y = np.log([d.mean() for d in D])
    s = np.array([d.std(ddof=1) / np.sqrt(len(d)) / d.mean() for d in D])
    w = 1 / s**2
    xm = np.sum(w * x) / np.sum(w)
    slope = np.sum(w * (x - xm) * y) / np.sum(w * (x - xm) ** 2)
    err = np.sqrt(1 / np.sum(w * (x - xm) ** 2))
    return slope, err


@pytest.mark.parametrize("NS", [
    (128, 512, 2048),                     # ~10 s; measured -0.44 +- 0.05
    pytest.param((128, 512, 2048, 8192), marks=pytest.mark.full),   # ~2 min; -0.511 +- 0.028
])
@pytest.mark.parametrize("generator", ["xoshiro", "float32"])
def test_discrepancy_scales_like_inverse_sqrt_N(NS, generator):
    """The same finite-size law with either input generator (float64 ziggurat or float32
    inverse-CDF inputs): the inputs' float32 resolution must not show at these N."""
    spectrum = spectra.power_law(4, 1)
    alphas = np.linspace(0, 10, 21)
    D = [discrepancies(N, spectrum, alphas, generator) for N in NS]
    slope, err = fit_exponent(NS, D)
    print(f"D(N) = {[f'{d.mean():.2e}' for d in D]}, exponent = {slope:.3f} +- {err:.3f}")
    # informative: the error bar must be small enough to tell -1/2 from 0 and from -1
    assert err < 0.17
    # consistent with -1/2 within 3 standard errors (a 3-sigma band for a single test)
    assert abs(slope + 0.5) < 3 * err, (slope, err)
    # and the agreement is real: at the largest N the RMS gap is < 5 % of eps_g's range here
    assert D[-1].mean() < 0.05 * 0.2


# --------------------------------------------------------------------------------------------
# Plateau escape in simulation scales with M and L as in the paper's Fig. 5 (qualitatively).
#
# Escape time measurement (no theory input): on a log-log grid the plateau is where eps_g is
# stationary, i.e. the flattest point of log eps_g vs log alpha after the initial descent
# (alpha >= 10 here; the initial descent takes a few 1/eta) and before the steepest fall; its
# eps_g is the plateau height h.
# The escape time is the first alpha after it where eps_g < h/2: eps_g has then left the fixed
# point by a finite amount, which is the escape (the fall continues over orders of magnitude,
# so any threshold well below h and well above the final error serves).  Medians over 3 seeds.
#
# Sizes are small (N = 256, eta = 0.5, sigma_J = 1e-3, beta = 0.25) so that the plateau is
# escaped by alpha ~ 10^3; the paper uses N = 500, eta = 0.01, sigma_J = 1e-6.
ALPHAS = np.geomspace(0.5, 4000, 120)


def escape_time(alpha, eps, alpha_after=10.0):
    le = np.log(np.maximum(eps, 1e-300))
    slope = np.gradient(le, np.log(alpha))
    # search before the steepest fall: after the escape eps_g decays exponentially (L = 1)
    # to the rounding floor, which is flat too but is not a plateau
    steepest = np.argmin(slope)
    cand = np.nonzero((alpha >= alpha_after) & (np.arange(alpha.size) < steepest))[0]
    i = cand[np.argmin(np.abs(slope[cand]))]
    h = eps[i]
    below = np.nonzero((alpha > alpha[i]) & (eps < h / 2))[0]
    return (alpha[below[0]] if below.size else np.inf), h


def median_escape(K, L, seeds=range(3)):
    out = []
    for s in seeds:
        r = simulate(activation="erf", K=K, M=K, N=256, eta=0.5, sigma_J=1e-3, seed=s,
                     alphas=ALPHAS, L=L, beta=0.25)
        out.append(escape_time(r.alpha, r.eps_g))
    t = np.median([o[0] for o in out])
    h = np.median([o[1] for o in out])
    return t, h


@pytest.fixture(scope="module")
def escapes():
    res = {(K, L): median_escape(K, L) for K, L in [(2, 1), (4, 1), (2, 4), (2, 16)]}
    print({k: (round(float(t)), float(f"{h:.3g}")) for k, (t, h) in res.items()})
    return res


def test_plateau_is_real(escapes):
    # a plateau at eps ~ 5e-3 .. 1e-2 (K = M = 2, 4), far below eps(0) ~ 0.3 and far above the
    # eps reached after the escape; and every configuration escaped within the run
    for (K, L), (t, h) in escapes.items():
        assert 2e-3 < h < 2e-2, (K, L, h)
        assert np.isfinite(t)


def test_escape_takes_longer_for_larger_M(escapes):
    # measured ~600 (M = 2) vs ~2100 (M = 4); seed spread ~ +-20 %: require a factor 1.5
    assert escapes[(4, 1)][0] > 1.5 * escapes[(2, 1)][0]


def test_escape_is_faster_for_larger_L(escapes):
    # measured ~600 (L = 1), ~390 (L = 4), ~230 (L = 16); each step a factor >= 1.2
    t1, t4, t16 = (escapes[(2, L)][0] for L in (1, 4, 16))
    assert t1 > 1.2 * t4 and t4 > 1.2 * t16, (t1, t4, t16)
