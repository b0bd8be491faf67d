"""Linear activation, K = M = 1: symbolic identities, three exact routes, asymptotics."""
import functools
import time
from fractions import Fraction
from itertools import pairwise

import mpmath
import numpy as np
import pytest
import sympy as sp

from derive import linear as dl
from derive import spectra
from derive.keys import SystemKey
from solvers.theory import linear as sl
from solvers.hierarchy.odes import agreement_digits, integrate_problem
from solvers.core.problem import Problem, expected_init

pytestmark = [pytest.mark.closed_form, pytest.mark.higher_precision, pytest.mark.second_basis]  # oracle (tests/conftest.py)

ETAS = [Fraction(1, 10), Fraction(1, 2), Fraction(1)]
BETAS = [Fraction(3, 10), Fraction(1), Fraction(3, 2)]
# α grid as powers of two: the level route reuses its chain of squarings along it
ALPHAS = [Fraction(2) ** j for j in range(-3, 11)]


# ---- symbolic layer ------------------------------------------------------------------------

@pytest.mark.parametrize("L", range(2, 7))
def test_a1_eigenpairs_symbolic(L):
    assert dl.prove_a1_eigenpairs(L)


@pytest.mark.parametrize("L", [2, 3, 4])
def test_closed_form_inverses_symbolic(L):
    assert dl.prove_inverses(L)


def test_paper_eq44_corner_entry_is_off():
    """Erratum: the printed (1,1) entry c_1/(2c_0) - η/(2-η) of A4⁻¹ is not the inverse's."""
    s = spectra.symbolic(3)
    eta = sp.Symbol("eta", positive=True)
    c, nu, T = dl.levels_of(s)
    true = (dl.A4(s, eta).inv())[0, 0]
    assert sp.simplify(true - sp.Matrix(dl.a4_inverse(c, nu, T, eta))[0, 0]) == 0
    printed = c[1] / (2 * c[0]) - eta / (2 - eta)
    # the printed form assumes ν_1 = 1; impose it by using a normalised rational spectrum
    r = spectra.explicit([Fraction(3, 2), Fraction(1), Fraction(1, 2)])
    cr, nur, Tr = dl.levels_of(r)
    assert nur[0] == 1
    true_r = dl.A4(r, eta).inv()[0, 0]
    assert sp.simplify(true_r - (cr[1] / (2 * cr[0]) + eta / (2 * (eta - 2)))) == 0
    assert sp.simplify(true_r - (cr[1] / (2 * cr[0]) - eta / (2 - eta))) != 0
    del printed


@pytest.mark.parametrize("L", [2, 3, 4])
def test_shifted_charpoly_paper_coefficients_and_similarity(L):
    assert dl.prove_shifted_charpoly(L)


def test_a1_residual_at_working_precision_L256():
    """‖A1 v_k + λ_k v_k‖ = |P(λ_k)| (only the last row is nonzero) at the size of rounding."""
    L, dps = 256, 60
    s = spectra.power_law(L, 1)
    with mpmath.workdps(dps):
        c = [mpmath.mpf(int(x.p)) / int(x.q) for x in s.charpoly]
        lam = [mpmath.mpf(int(x.p)) / int(x.q) for x in s.eigenvalues]
        A = dl.a1_matrix(c[:L])
        worst = 0
        for lk in lam[::17]:
            v = dl.vandermonde_vector(lk, L)
            # rows 0..L-2: -λ^(l+1) + λ·λ^l, zero up to the rounding of the powers
            for l in range(L - 1):
                worst = max(worst, abs(A[l][l + 1] * v[l + 1] + lk * v[l]) / abs(v[l + 1]))
            res = mpmath.fsum(cj * vj for cj, vj in zip(A[L - 1], v, strict=True)) + lk * v[L - 1]
            scale = (mpmath.fsum(abs(cj * vj) for cj, vj in zip(A[L - 1], v, strict=True))
                     + abs(lk * v[L - 1]))
            worst = max(worst, abs(res) / scale)
        # c_j rounded to dps digits each, exact fsum: relative residual ≤ a few units of 10^-dps
        assert worst < 10 * mpmath.mpf(10) ** -dps


# ---- the three exact routes -------------------------------------------------------------------

@functools.lru_cache(maxsize=None)      # the modes curve is the reference of two tests
def _curve(L, beta, eta, route, digits=30):
    vals, meta = sl.exact_curve(spectra.power_law(L, beta), eta, ALPHAS, route=route,
                                sigma_J=Fraction(1, 10), digits=digits)
    assert meta["agreement_digits"] >= digits
    return vals


# The level route costs a few CPU seconds per curve at L = 64 (444 and 555 digits), the
# companion route 1-4 s: three (β, η) pairs covering every β and every η run by default, the
# other six in the full set.
_DIAGONAL = [(BETAS[i], ETAS[i]) for i in range(3)]
_OFF_DIAGONAL = [(b, e) for b in BETAS for e in ETAS if (b, e) not in _DIAGONAL]


@pytest.mark.parametrize("beta,eta", _DIAGONAL + [pytest.param(b, e, marks=pytest.mark.full)
                                                  for b, e in _OFF_DIAGONAL])
def test_modes_and_companion_routes_agree_L64(beta, eta):
    a = _curve(64, beta, eta, "modes")
    b = _curve(64, beta, eta, "companion")
    assert agreement_digits(a, b) >= 30


@pytest.mark.parametrize("beta,eta", _DIAGONAL)
def test_level_exponential_agrees_L64(beta, eta):
    assert agreement_digits(_curve(64, beta, eta, "levels"), _curve(64, beta, eta, "modes")) >= 30


@pytest.mark.full
@pytest.mark.parametrize("eta", ETAS)
@pytest.mark.parametrize("beta", BETAS)
def test_three_routes_agree_L128(beta, eta):
    # per-route wall times are printed (pytest -s); bench/verify_linear_L128.py tabulates them
    t = {}
    curves = {}
    for route in ("modes", "companion", "levels"):
        t0 = time.perf_counter()
        curves[route] = _curve(128, beta, eta, route)
        t[route] = time.perf_counter() - t0
    print(f"L=128 beta={beta} eta={eta}: " + ", ".join(f"{k} {v:.0f} s" for k, v in t.items()))
    m = curves["modes"]
    assert agreement_digits(m, curves["companion"]) >= 30
    assert agreement_digits(m, curves["levels"]) >= 30


@pytest.mark.full
@pytest.mark.parametrize("beta,eta", _OFF_DIAGONAL)
def test_level_exponential_agrees_L64_rest(beta, eta):
    assert agreement_digits(_curve(64, beta, eta, "levels"), _curve(64, beta, eta, "modes")) >= 30


def test_float64_modes_route_is_accurate():
    """The modes route in float64 keeps ≥ 12 digits at L = 128 (vs. itself at 30 digits)."""
    s = spectra.power_law(128, Fraction(1, 2))
    f = sl.modes_solution(s, Fraction(1, 2), sigma_J=Fraction(1, 10))
    m = sl.modes_solution(s, Fraction(1, 2), sigma_J=Fraction(1, 10), dps=30)
    al = [0.01, 1.0, 100.0, 1e4]
    assert agreement_digits([f.eps_g(a) for a in al], [m.eps_g(a) for a in al]) >= 12


def test_ode_system_agrees_with_level_exponential():
    """Independent route: the generated linear K=M=1 ODEs (levels basis, arb RK7(8))."""
    L, eta = 8, Fraction(1, 2)
    s = spectra.power_law(L, 1)
    prob = Problem(SystemKey("linear", 1, 1), s, eta, 2, expected_init(s, 1, 1, Fraction(1, 10)))
    al = [0, 1, 10, 100]
    traj = integrate_problem(prob, al, basis="levels", arithmetic="flint", dps=60, rtol=1e-22)
    exact, _ = sl.exact_curve(s, eta, [Fraction(a) for a in al], route="levels",
                              sigma_J=Fraction(1, 10), digits=25)
    # rtol 1e-22 on O(1) order parameters, ε_g down to 1e-6: ≥ 15 digits are expected
    assert agreement_digits(traj.eps_g, exact) >= 15


def test_small_eta_limit():
    """At fixed ηα the exact curve tends to Eq. (8); the relative gap shrinks ∝ η."""
    L, beta = 64, Fraction(1)
    s = spectra.power_law(L, beta)
    lam = np.array([float(v) for v in s.eigenvalues])
    w = np.full(L, 1.0 / L)
    t = np.array([0.1, 1.0, 10.0, 100.0])                     # t = ηα
    gaps = []
    for eta in (Fraction(1, 10), Fraction(1, 100), Fraction(1, 1000)):
        sol = sl.modes_solution(s, eta, sigma_J=Fraction(1, 10))
        ex = np.array([sol.eps_g(float(x / eta)) for x in t])
        sm = sl.small_eta(lam, w, float(eta), t / float(eta), 0.1)
        assert np.all(ex > sm)       # the η² term only adds error (paper, Fig. 2)
        gaps.append(np.max(np.abs(ex / sm - 1)))
    assert gaps[1] < gaps[0] / 5 and gaps[2] < gaps[1] / 5 and gaps[2] < 1e-2


def test_order_one_is_eq8():
    s = spectra.power_law(32, 1)
    sol = sl.modes_solution(s, Fraction(1, 2), order=1, sigma_J=Fraction(1, 10), dps=30)
    lam = np.array([float(v) for v in s.eigenvalues])
    ref = sl.small_eta(lam, np.full(32, 1 / 32), 0.5, [3.0], 0.1)[0]
    assert abs(float(sol.eps_g(3.0)) / ref - 1) < 1e-13


def test_b_amplitudes_tend_to_spectrum():
    """L ω_k → λ_k as η → 0 (paper: b_k = 1/L, λ_B = -2λ_k); Σ ω_k = ν_1 = D^(1)(0) exactly."""
    s = spectra.power_law(40, 1)
    lam = np.array([float(v) for v in s.eigenvalues])
    for eta, tol in ((Fraction(1, 1000), 2e-3), (Fraction(1), None)):
        mu_abs, Lw, lam_k = sl.b_spectrum(s, eta)
        assert abs(Lw.sum() / 40 - 1) < 1e-12
        if tol:
            assert np.max(np.abs(Lw / lam - 1)) < tol
            assert np.max(np.abs(mu_abs / (2 * lam) - 1)) < tol


# ---- asymptotics ------------------------------------------------------------------------------

@pytest.mark.parametrize("beta", [0.5, 1.0, 1.5])
def test_local_exponent_converges_to_theory(beta):
    Ls = [256, 1024, 4096, 16384, 65536]
    dev = [sl.window_result(L, beta, 1.0)["exponent"] - beta / (1 + beta) for L in Ls]
    assert all(d > 0 for d in dev)
    assert all(b < a for a, b in pairwise(dev))            # monotone approach
    # measured 0.024 / 0.0021 / 0.0002 at L = 65536: the approach is slow for small β
    assert dev[-1] < {0.5: 0.03, 1.0: 0.003, 1.5: 0.0005}[beta]


@pytest.mark.parametrize("beta", [0.5, 1.0])
@pytest.mark.parametrize("eta", [0.01, 1e-5])
def test_incomplete_gamma_forms_within_bounds(beta, eta):
    L = 128
    em = sl.EulerMaclaurin(L, beta, eta, sigma_J=1.0)
    lo, hi = sl.window(L, beta, eta)
    worst = em.bound_worst_case()
    eq49_fails_late = False
    for a in np.logspace(-3, 9, 120):
        ex, e50 = em.exact_sum(a), em.eq50(a)
        d = abs(ex - e50)
        rnd = 1e-14 * ex                        # float64 sums/incomplete gammas, ~1e-15 each
        assert d <= em.bound_sum_integral(a) + rnd
        assert d <= worst + rnd
        if a > lo:
            assert abs(em.eq52(a) - e50) <= em.bound_eq52(a) + 1e-14 * e50
            assert abs(em.eq53(a) - em.eq52(a)) <= em.bound_eq53(a) + 1e-14 * e50
            eq49_fails_late |= d > em.bound_eq49(a)
        else:
            assert d <= em.bound_eq49(a) + rnd        # Eq. (49) is rigorous before the window
    # erratum: beyond 1/(2ηλ_+) the endpoint term F(L)/2 is not covered by Eq. (49)
    assert eq49_fails_late
