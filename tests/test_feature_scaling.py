"""Feature scaling (paper §4.3, App. B.3): solvers/theory/feature_scaling.py against independent routes.

Routes: the generated order-2 mode ODEs (all directions trainable), exact finite sums vs the
Euler-Maclaurin forms, the exact second-moment fixed point, a least-squares Monte-Carlo of Eq. (86),
and online SGD (the project simulator for an eigenbasis mask, an own kernel for the rotated mask).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from specs import LINEAR_L16
from solvers.theory import feature_scaling as fs
from solvers.sim.simulate import power_law_eigenvalues, simulate

pytestmark = [pytest.mark.closed_form, pytest.mark.simulation]  # oracle (tests/conftest.py)


def test_partial_blocks_match_direction_sum():
    # N_l not a multiple of N/L: the block formula must equal the plain sum over directions.
    lam = power_law_eigenvalues(8, 1.0)
    N, sJ = 64, 0.3
    per_dir = np.repeat(lam, N // 8)
    for N_l in (1, 5, 8, 13, 63, 64):
        direct = (1 + sJ**2) * per_dir[N_l:].sum() / (2 * N)
        assert fs.eps_asymp_eigenbasis(lam, N, N_l, sJ) == pytest.approx(direct, rel=1e-13, abs=1e-16)
        curve = fs.eps_g_eigenbasis([0.0, 5.0], lam, N, N_l, 0.1, sJ)
        assert curve[0] == pytest.approx((1 + sJ**2) / 2, rel=1e-13)   # Tr Sigma = N
    with pytest.raises(ValueError, match="N_l must be between"):
        fs.trainable_counts(64, 8, 0)


def test_masked_modes_all_trainable_matches_generated_odes():
    # The group ODE of the trainable part (finite eta, order 2) against the generated hierarchy.
    from derive import spectra
    from derive.keys import SystemKey
    from solvers.hierarchy.odes import integrate_problem
    from solvers.core.problem import Problem, expected_init
    L, eta, sJ = 8, Fraction(1, 2), Fraction(1, 10)
    spectrum = spectra.power_law(L, 1)
    prob = Problem(SystemKey("linear", 1, 1), spectrum, eta, 2, expected_init(spectrum, 1, 1, sJ))
    alphas = [0.0, 0.5, 2.0, 10.0, 50.0]     # the integration starts at alphas[0]
    traj = integrate_problem(prob, alphas, basis="modes", arithmetic="float64", rtol=1e-12)
    lam = np.array([float(v) for v in spectrum.eigenvalues])
    mine = fs.eps_g_masked_modes(alphas, lam, L, L, float(eta), float(sJ), order=2)
    # both are float64 solutions of the same linear ODE (RK7(8) at rtol 1e-12 vs eigh): 1e-10.
    np.testing.assert_allclose(mine, traj.eps_float(), rtol=1e-10)


def test_fixed_points_and_small_eta_limit():
    lam = power_law_eigenvalues(16, 1.0)
    N, N_l, sJ = 64, 20, 0.5
    for eta in (0.05, 0.5, 1.0):
        closed = fs.eps_asymp_eigenbasis(lam, N, N_l, sJ, eta=eta)
        ode = fs.eps_g_masked_modes([1e6], lam, N, N_l, eta, sJ, order=2)[0]
        second_moment = fs.stationary_eps(np.diag(np.repeat(lam, N // 16)), N_l, eta,
                                          1 + sJ**2, finite_N=False)
        assert ode == pytest.approx(closed, rel=1e-11)        # e^{-2 eta lambda_min 1e6} ~ 0
        assert second_moment == pytest.approx(closed, rel=1e-12)
    # eta -> 0: the order-2 asymptote tends to Eq. (10)'s, and the order-1 curve is Eq. (78)
    eq10 = fs.eps_asymp_eigenbasis(lam, N, N_l, sJ)
    small = fs.eps_asymp_eigenbasis(lam, N, N_l, sJ, eta=1e-6)
    assert abs(small / eq10 - 1) < 1e-6
    a = np.logspace(-1, 4, 30)
    np.testing.assert_allclose(fs.eps_g_masked_modes(a, lam, N, N_l, 0.1, sJ, order=1),
                               fs.eps_g_eigenbasis(a, lam, N, N_l, 0.1, sJ), rtol=1e-12)


@pytest.mark.parametrize("beta", [0.5, 1.0, 1.5])
def test_euler_maclaurin_forms_within_bounds(beta):
    L, sJ, eta = 4096, 0.01, 0.05
    lam = power_law_eigenvalues(L, beta)
    for n in (4, 32, 256, 2048):
        exact = fs.eps_asymp_eigenbasis(lam, L, n, sJ)
        approx, bound = fs.eps_asymp_em(L, beta, n, sJ)
        # the integral over [n, L] exceeds the sum over k = n+1..L by at most (f(n) - f(L))/2
        assert -1e-14 <= approx - exact <= bound
    # Eq. (79) (corrected) vs the exact Eq. (78): zeroth-order Euler-Maclaurin remainder bounded
    # by the maximum of the summand on [1, n] (trainable part) plus the Eq. (74) bound.
    lp = fs._lambda_plus(L, beta)
    n = 256
    alphas = np.logspace(-1, 6, 15)
    em = fs.eps_g_em(alphas, L, beta, n, eta, sJ)
    ex = fs.eps_g_eigenbasis(alphas, lam, L, n, eta, sJ)
    k = np.arange(1, n + 1, dtype=float)
    for a, e1, e2 in zip(alphas, em, ex, strict=True):
        fmax = np.max(k ** -(1 + beta) * np.exp(-2 * eta * lp * a * k ** -(1 + beta)))
        tol = 0.5 * (1 + sJ**2) * lp / L * fmax + fs.eps_asymp_em(L, beta, n, sJ)[1]
        assert abs(e1 - e2) <= tol


@pytest.mark.parametrize("beta", [0.5, 1.0, 1.5])
def test_asymptote_power_law_exponent(beta):
    # eps_asymp ~ sum_{k>n} k^{-1-beta} = n^{-beta}/beta (1 - (1+beta)/(2n) + ...) - L-term: the
    # local exponent is beta - (1+beta)/(2n) + beta (n/L)^beta/(1-(n/L)^beta) + O(n^-2).  Fit over
    # n in [64, 512] at L = 2^20: tolerance (1+beta)/64 + 2 beta (512/L)^beta covers both terms.
    L = 2**20
    lam = power_law_eigenvalues(L, beta)
    n = np.array([64, 128, 256, 512])
    eps = [fs.eps_asymp_eigenbasis(lam, L, int(x), 0.01) for x in n]
    fit = fs.fit_exponent(n, eps)
    assert abs(fit - beta) <= (1 + beta) / 64 + 2 * beta * (512 / L) ** beta


def test_eq88_forms_agree_for_one_W():
    N, N_l, sJ = 96, 30, 0.4
    lam = np.repeat(power_law_eigenvalues(24, 1.0), 4)
    W = fs.haar_orthogonal(np.random.default_rng(5), N)
    Sigma = (W * lam) @ W.T
    paper = fs.eq88(Sigma, N_l, sJ)
    schur = fs.eq88_average(power_law_eigenvalues(24, 1.0), N, [N_l], sJ, 2, seed=0)  # different W
    moment = fs.stationary_eps(Sigma, N_l, 0.0, 1 + sJ**2)
    assert moment == pytest.approx(paper, rel=1e-10)   # two algebraic routes, float64 rounding
    assert schur[0][0] > 0
    # diagonal Sigma (W = 1): Eq. (88) reduces to Eq. (10)
    assert fs.eq88(np.diag(lam), N_l, sJ) == pytest.approx(fs.eps_asymp_eigenbasis(
        power_law_eigenvalues(24, 1.0), N, N_l, sJ), rel=1e-12)


def test_eq88_average_matches_monte_carlo_of_eq86():
    # W-average of Eq. (88) vs an independent least-squares Monte-Carlo of Eq. (86) (different W,
    # B, J0 samples).  Both are means of independent samples: 3.5 combined standard errors.
    lam = power_law_eigenvalues(16, 1.0)
    N, sJ = 64, 0.5
    N_ls = [8, 16, 32]
    mean, err, _ = fs.eq88_average(lam, N, N_ls, sJ, 200, seed=11)
    for j, N_l in enumerate(N_ls):
        mc, mc_err, _ = fs.monte_carlo_eq86(lam, N, N_l, sJ, 300, seed=100 + N_l)
        z = (mc - mean[j]) / math.hypot(err[j], mc_err)
        assert abs(z) < 3.5, (N_l, mc, mean[j], z)
    # the rotated mask is worse than the eigenbasis mask (Fig. 16) by a clear margin
    assert all(m > 1.5 * fs.eps_asymp_eigenbasis(lam, N, n, sJ)
               for m, n in zip(mean, N_ls, strict=True))
    # and the large-N deterministic equivalent is close at this N (finite-N effects ~ 1/N_l)
    free = np.array([fs.eps_asymp_free(lam, N, n, sJ) for n in N_ls])
    assert np.all(np.abs(free / mean - 1) < 0.15)


def _window_mean(alpha, eps, burn):
    return float(np.mean(eps[alpha >= burn]))


def test_rotated_mask_online_sgd_matches_fixed_point():
    # Own finite-N SGD with the mask on original coordinates (rotated Sigma).  Each run is
    # compared with the exact stationary mean given its own W and frozen e^ (this removes the
    # run-to-run variance of e^); the residual is SGD noise, averaged over independent runs.
    lam = power_law_eigenvalues(4, 1.0)
    N, N_l, eta, sJ = 64, 24, 0.5, 0.5
    burn, amax = 60.0, 160.0          # slowest rate 2 eta lambda_min >= 0.17: burn = 10 times
    d_exact, d_eta0 = [], []
    for r in range(30):
        a, e, Sigma, eu = fs.simulate_rotated_mask(lam, N, N_l, eta, sJ, amax, seed=500 + r)
        m = _window_mean(a, e, burn)
        d_exact.append(m - fs.stationary_eps(Sigma, N_l, eta, np.outer(eu, eu)))
        d_eta0.append(m - fs.stationary_eps(Sigma, N_l, 0.0, np.outer(eu, eu)))
    d_exact, d_eta0 = np.array(d_exact), np.array(d_eta0)
    se = d_exact.std(ddof=1) / math.sqrt(d_exact.size)
    assert abs(d_exact.mean()) < 3.5 * se
    # power: the small-eta Eq. (88) value is excluded (the SGD-noise factor is ~10 % here)
    assert abs(d_eta0.mean()) > 5 * d_eta0.std(ddof=1) / math.sqrt(d_eta0.size)


def test_eigenbasis_mask_project_simulator_matches_fixed_point():
    # The project's simulator (mask on eigen-directions, untrainable frozen) vs the exact finite-N
    # stationary mean for each run's own frozen components; N_l = 24 splits a block of 16.
    lam = power_law_eigenvalues(4, 1.0)
    N, N_l, eta, sJ = 64, 24, 0.5, 0.5
    Sigma = np.diag(np.repeat(lam, N // 4))
    burn, amax = 60.0, 200.0
    rng = np.random.default_rng(9)
    diffs = []
    for r in range(40):
        B0 = rng.standard_normal((1, N))
        J0 = sJ * rng.standard_normal((1, N))
        res = simulate(activation="linear", K=1, M=1, N=N, eta=eta, sigma_J=sJ, seed=r,
                       alphas=np.linspace(burn, amax, 141), eigenvalues=lam, n_trainable=N_l,
                       untrainable="frozen", J0=J0, B0=B0)
        eu = (J0 - B0)[0, N_l:]
        diffs.append(res.eps_g.mean() - fs.stationary_eps(Sigma, N_l, eta, np.outer(eu, eu)))
    diffs = np.array(diffs)
    assert abs(diffs.mean()) < 3.5 * diffs.std(ddof=1) / math.sqrt(diffs.size)


def _spec(tmp_path, linear: str, extra_data=""):
    from solvers.app.spec import load_spec
    p = tmp_path / "fs.toml"
    p.write_text(LINEAR_L16 + f"""N = 64
{extra_data}
[training]
eta = 0.1
sigma_J = 0.5
seed = 3
[solve]
alpha_max = 10
[linear]
{linear}
""")
    return load_spec(p, extra_sections=("linear",))


def test_feature_scaling_result(tmp_path):
    out = fs.feature_scaling_result(_spec(tmp_path, "N_l = [4, 8, 16, 64]"))
    assert out["N_l"] == [4, 8, 16, 64]
    assert out["exponent_theory"] == 1.0 and out["eps_asymp"]["theory"][-1] == 0.0
    lam = power_law_eigenvalues(16, 1.0)
    assert out["eps_asymp"]["theory"][1] == pytest.approx(fs.eps_asymp_eigenbasis(lam, 64, 8, 0.5))
    rot = fs.feature_scaling_result(_spec(tmp_path, "N_l = [8, 16]\nrotated = true\nn_W = 4"))
    assert len(rot["eps_asymp"]["theory_stderr"]) == 2 and rot["meta"]["n_W"] == 4
    # the [linear] schema's one error format (solvers.app.sections.LINEAR_SCHEMA)
    for bad, msg in [("N_l = [0]", r"\[linear\] N_l\[0\] = 0 must be >= 1"),
                     ("rotated = 1", r"\[linear\] rotated = 1 has wrong type"),
                     ("n_W = 1", r"\[linear\] n_W = 1 must be >= 2"),
                     ("untrainable = \"x\"", r"\[linear\] untrainable = \"x\" must be one of")]:
        with pytest.raises(ValueError, match=msg):
            fs.feature_scaling_result(_spec(tmp_path, bad))
