"""One step + ridge (the sRF theory): exact layer, the two spectral routes, the random-features
limit against Mei & Montanari, the mpmath route, limits and bounds."""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp

from derive import onestep as D
from solvers.theory.onestep import Setup, curve, resolve, tables
from solvers.theory.onestep import mei_montanari as MM
from solvers.theory.onestep.fixed_point import _tables_at, solve
from solvers.theory.onestep.mp_route import solve_mp
from solvers.theory.onestep.spectrum import MPQuadrature, stieltjes_averages

pytestmark = [pytest.mark.closed_form, pytest.mark.quadrature, pytest.mark.higher_precision,
              pytest.mark.second_basis]

CLOSED = ("linear", "erf", "sin", "sin2", "cubic")


@pytest.mark.parametrize("name", CLOSED)
def test_gaussian_constants_exact_vs_quadrature(name):
    """The hand-written exact μ1, Var σ', μ1⋆, E σ² = SymPy's integration of the expression,
    and both = mpmath.quad (30 digits)."""
    ex = D.gaussian_constants(name)
    by_int = D.gaussian_constants_by_integration(name)
    for k in ex:
        assert sp.simplify(ex[k] - by_int[k]) == 0, k
    s = sp.lambdify(D.z, D.activation(name), "mpmath")
    ds = sp.lambdify(D.z, sp.diff(D.activation(name), D.z), "mpmath")
    with mpmath.workdps(40):
        def E(g):
            return mpmath.quad(lambda t: g(t) * mpmath.npdf(t), [-mpmath.inf, 0, mpmath.inf])
        m1 = E(ds)
        num = {"mu1": m1, "var_dsigma": E(lambda t: ds(t) ** 2) - m1 ** 2,
               "mu1_star": E(lambda t: t * s(t)), "m2": E(lambda t: s(t) ** 2)}
        for k, v in num.items():
            assert abs(mpmath.mpf(sp.N(ex[k], 40)) - v) < mpmath.mpf(10) ** -30, k


def test_erf_constants_named():
    ex = D.gaussian_constants("erf")
    assert ex["mu1"] == 1 / sp.sqrt(sp.pi) and ex["m2"] == sp.Rational(1, 3)
    assert sp.simplify(ex["var_dsigma"] - (2 / (sp.pi * sp.sqrt(3)) - 1 / sp.pi)) == 0


def test_tanh_constants_quadrature_two_ways():
    """float64 trapezoid (step 0.05) vs mpmath.quad: tanh has poles at ±iπ/2, error ~e^-200."""
    act = resolve("tanh")
    fl = act.constants()
    with mpmath.workdps(30):
        mp_ = act.constants_mp()
    for k in fl:
        assert abs(fl[k] - float(mp_[k])) < 1e-15, k


@pytest.mark.parametrize("name", ["relu", "cos", "square"])
def test_even_or_non_odd_refused(name):
    with pytest.raises(ValueError, match="odd"):
        resolve(name)


@pytest.mark.parametrize("name", ["linear", "erf", "sin", "sin2", "he3"])
def test_conditional_coefficients_closed_vs_tables(name):
    """Exact μ0(κ), μ1(κ), E_ξσ² (erf smoothed is an erf, …) vs the trapezoid tables."""
    act = resolve(name)
    g, r, c = 0.7, 0.9, 1.4
    tab = _tables_at(act, act, g, r, c, 0.05, 11.0)
    cc = D.conditional_coefficients(name)
    f = {k: sp.lambdify((D.kappa, D.r, D.c), v, ["scipy", "numpy"]) for k, v in cc.items()}
    k = tab.kappa
    sl = np.abs(k) < 6

    def close(a, b, tol):       # relative to the size of the values (polynomials grow)
        return np.max(np.abs(a + 0 * k - b)[sl]) < tol * max(1.0, np.max(np.abs(b)[sl]))
    assert close(f["mu0"](k, r, c), tab.mu0, 1e-13)
    assert close(f["mu1"](k, r, c), tab.mu1, 1e-13)
    if "second" in cc:
        ms2 = f["second"](k, r, c) - f["mu0"](k, r, c) ** 2 - c * f["mu1"](k, r, c) ** 2
        # the tables subtract O(values²): cancellation of a few digits
        assert close(ms2, tab.mus2, 1e-11)
    tf = D.target_functions(name)
    gs = sp.Symbol("gamma", nonnegative=True)
    h = sp.lambdify((D.kappa, gs), tf["h"], ["scipy", "numpy"])
    h1 = sp.lambdify((D.kappa, gs), tf["h1"], ["scipy", "numpy"])
    assert close(h(k, g), tab.h, 1e-13)
    assert close(h1(k, g), tab.h1, 1e-13)


@pytest.mark.parametrize("beta", [0.3, 1.0, 2.5])
def test_mp_moments_and_two_spectral_routes(beta):
    """θ-quadrature moments = Narayana polynomials; the five averages = Stieltjes closed form."""
    q = MPQuadrature(beta)
    for k in range(6):
        exact = float(D.mp_moment(k).subs(D.beta, sp.Rational(str(beta))))
        got = q.expect(lambda x: x ** k, 1.0 if k == 0 else 0.0)
        assert abs(got - exact) < 1e-12 * max(1, exact), k
    for s, v, c in [(0.3, 0.7, 1.3), (0.01, 2.0, 1.0), (5.0, 0.1, 2.2)]:
        a = q._quadrature(s, v, c)          # the rule alone (averages() switches near s < vc)
        b = stieltjes_averages(s, v, c, beta)
        for key in a:
            assert abs(a[key] - b[key]) < 1e-11 * abs(b[key]), (key, s, v, c)


@pytest.mark.parametrize("beta", ["1/2", "1", "3"])
def test_mp_density_mass_and_mean(beta):
    """derive's continuous MP density: mass min(1, 1/β), first moment 1 (the atom adds no
    mean), by mpmath.quad (30 digits)."""
    b = sp.Rational(beta)
    rho = sp.lambdify(D.x, D.mp_density().subs(D.beta, b), "mpmath")
    with mpmath.workdps(30):
        lo, hi = (mpmath.mpf(sp.N(e.subs(D.beta, b), 40)) for e in D.mp_edges())
        # x = lo + u²: the √(x − a) edge (and the x^(−1/2) one at β = 1) become smooth
        def E(g):
            return mpmath.quad(lambda u: g(lo + u * u) * rho(lo + u * u) * 2 * u,
                               [0, mpmath.sqrt(hi - lo)])
        mass, mean = E(lambda t: 1), E(lambda t: t)
        assert abs(mass - min(1, 1 / mpmath.mpf(b))) < mpmath.mpf(10) ** -20
        assert abs(mean - 1) < mpmath.mpf(10) ** -20


def test_stieltjes_equation_is_derives():
    m, w = sp.symbols("m w")
    P = D.mp_stieltjes_equation(m, w)
    for bv, wv in [(0.5, -0.3), (2.0, -1e-3), (1.0, -2.0)]:
        from solvers.theory.onestep.spectrum import stieltjes
        mv, _ = stieltjes(wv, bv)
        assert abs(float(P.subs({D.beta: bv, m: mv, w: wv}))) < 1e-12


def test_srf_parameters_symbolic_limits():
    """α0 → ∞: γ = 1, c = 1, r = η μ1 μ1⋆ (μ1⋆ > 0); the numeric layer agrees."""
    p = D.srf_parameters()
    pos = {D.mu1s: sp.Symbol("a", positive=True)}
    assert sp.limit(p["gamma"].subs(pos), D.a0, sp.oo) == 1
    assert sp.limit(p["c"], D.a0, sp.oo) == 1
    st = Setup("tanh", "erf", math.inf, 1.7)
    cs, ct = st.student_act.constants(), st.target_act.constants()
    sp_ = st.srf()
    assert sp_["gamma"] == 1.0 and sp_["c"] == 1.0
    assert abs(sp_["r"] - 1.7 * cs["mu1"] * ct["mu1_star"]) < 1e-15
    big = Setup("tanh", "erf", 1e12, 1.7).srf()
    assert abs(big["gamma"] - 1) < 1e-11 and abs(big["c"] - 1) < 1e-11


def test_srf_parameters_numbers():
    """tanh/tanh, α0 = 1/2, η = 3: c = 1 + 9·2·m2·Var σ' (1.692 at d → ∞)."""
    p = Setup("tanh", "tanh", 0.5, 3.0).srf()
    c = resolve("tanh").constants()
    assert abs(p["c"] - (1 + 9 * 2 * c["m2"] * c["var_dsigma"])) < 1e-14
    assert abs(p["c"] - 1.6922) < 1e-4


RF_CASES = [("tanh", "tanh", 0.5, 0.01, 0.0), ("erf", "sin2", 1.0, 0.01, 0.3),
            ("erf", "erf", 2.0, 1.0, 0.1), ("sin", "cubic", 1.0, 0.1, 0.0),
            ("tanh", "linear", 4.0, 1e-3, 0.0)]


@pytest.mark.parametrize("student,target,beta,lam,noise", RF_CASES)
def test_rf_limit_matches_mei_montanari(student, target, beta, lam, noise):
    """α0 = 0 (no step): the sRF fixed point is RF ridge; Mei & Montanari's closed form
    (λ_MM = λ/α, ψ1 = β, ψ2 = α) to 1e-8 (both routes are ~1e-13 apart in float64)."""
    st = Setup(student, target, 0.0, 1.0, beta, lam, noise)
    al = [0.3, 0.9, 1.0, 1.1, 3.0, 10.0]
    res = curve(st, al)
    cs, ct = st.student_act.constants(), st.target_act.constants()
    for a, e in zip(al, res["eps_g"], strict=True):
        ref = MM.test_error(cs["mu1"], cs["m2"], ct["mu1_star"], ct["m2"], beta, a, lam, noise)
        assert abs(e - ref) < 1e-8 * max(1.0, ref), a


@pytest.mark.parametrize("beta", [0.5, 1.0, 3.0])
def test_rf_limit_near_interpolation_small_ridge(beta):
    """λ = 1e-7 at and around the interpolation threshold α = β, where s = λ + V̂2 ≪ V̂1 c
    (the regime in which the spectral rule alone loses digits; the closed form takes over):
    Mei & Montanari to 1e-8 relative (the error itself is up to ~10³ at α = β)."""
    st = Setup("tanh", "tanh", 0.0, 1.0, beta, 1e-7)
    al = [0.5 * beta, beta, 2 * beta]
    res = curve(st, al)
    c = st.student_act.constants()
    for a, e in zip(al, res["eps_g"], strict=True):
        ref = MM.test_error(c["mu1"], c["m2"], c["mu1_star"], c["m2"], beta, a, 1e-7)
        assert abs(e - ref) < 1e-8 * ref, (a, e, ref)


@pytest.mark.parametrize("beta,alpha", [(1.0, 1.2), (3.0, 2.4)])
def test_nearly_singular_spectrum_float_vs_mpmath(beta, alpha):
    """Linear student (μ⋆ = 0, so S = λ + V̂1 D), λ = 1e-7: the pole of 1/S sits next to the
    spectrum's edge (the spectral rule alone is off by 2e-4 at β = 1, α = 1.2; a rounded
    μ⋆² ~ 1e-16 against V2 ~ 1/λ cost 2e-10 at β = 3).  Float64 vs the 30-digit route: 1e-11."""
    st = Setup("linear", "tanh", 0.5, 1.0, beta, 1e-7)
    p = st.srf()
    fl = curve(st, [alpha])
    ref = solve_mp(st.student_act, st.target_act, p["gamma"], p["r"], p["c"], alpha, beta,
                   "1e-7", dps=30, step="0.2",
                   start=(fl["overlaps"]["V1"][0], fl["overlaps"]["V2"][0]))
    assert abs(fl["eps_g"][0] / float(ref["eps_g"]) - 1) < 1e-11


def test_rf_limit_mpmath_twenty_digits():
    """The mpmath route (Stieltjes closed form, findroot, 40 digits) against Mei & Montanari in
    mpmath: 20 digits at r = 0, noise and β = 1 included."""
    act = resolve("erf")
    res = solve_mp(act, act, 0, 0, 1, 2, 1, "0.05", "0.1", dps=40, step="0.25")
    with mpmath.workdps(40):
        c = act.constants_mp()
        ref = MM.test_error(c["mu1"], c["m2"], c["mu1_star"], c["m2"], 1, 2,
                            mpmath.mpf("0.05"), mpmath.mpf("0.1"), mp=True)
        assert abs(res["eps_g"] - ref) < mpmath.mpf(10) ** -20 * ref
    fl = curve(Setup("erf", "erf", 0.0, 1.0, 1.0, 0.05, 0.1), [2.0])["eps_g"][0]
    assert abs(fl - float(ref)) < 1e-13


def test_spiked_float_vs_mpmath_route():
    """r > 0, tanh (no closed forms): float64 route vs the mpmath route (30 digits, closed-form
    spectrum, its own tables) — agreement to 1e-11 of ε_g and t."""
    st = Setup("tanh", "tanh", 0.5, 1.0, 2.0, 0.01)
    p = st.srf()
    fl = curve(st, [1.5])
    ref = solve_mp(st.student_act, st.target_act, p["gamma"], p["r"], p["c"], 1.5, 2.0,
                   0.01, dps=30, step="0.2",
                   start=(fl["overlaps"]["V1"][0], fl["overlaps"]["V2"][0]))
    assert abs(fl["eps_g"][0] - float(ref["eps_g"])) < 1e-11
    assert abs(fl["train_error"][0] - float(ref["train_error"])) < 1e-11
    for k in ("t", "m", "psi", "q1", "q2"):
        assert abs(fl["overlaps"][k][0] - float(ref[k])) < 1e-10 * max(1, abs(float(ref[k]))), k


def test_linear_student_and_target_give_m_gamma_over_r():
    """σ = σ⋆ = identity: ŷ0 = κ(rm + t); the m equation forces rm + t = γ, and t = 0."""
    st = Setup("linear", "linear", 0.7, 1.3, 1.5, 0.05)
    p = st.srf()
    res = curve(st, [0.5, 2.0, 5.0])
    for m, t in zip(res["overlaps"]["m"], res["overlaps"]["t"], strict=True):
        assert abs(t) < 1e-12
        assert abs(m - p["gamma"] / p["r"]) < 1e-12


def test_lambda_to_infinity_gives_the_mean_direction_bound():
    """λ → ∞: only m survives, ε_g → E σ⋆² − E[hμ0]²/E[μ0²]; the deviation is O(1/λ)."""
    st = Setup("tanh", "tanh", 2.0, 1.5, 1.0, 1e5)
    lim = curve(st, [2.0])["bounds"]["lambda_inf"]
    d5 = curve(st, [2.0])["eps_g"][0] - lim
    st7 = Setup("tanh", "tanh", 2.0, 1.5, 1.0, 1e7)
    d7 = curve(st7, [2.0])["eps_g"][0] - lim
    assert abs(d7) < 1e-6 and abs(d7) < abs(d5) / 50


@pytest.mark.parametrize("student,target", [("tanh", "tanh"), ("erf", "sin2")])
def test_bounds_sandwich_min_over_ridge(student, target):
    """At γ = 1 (α0 → ∞): (27) ≤ min_λ ε_g ≤ (26) at every α; and the span bound holds at
    every (α, λ) at finite α0."""
    lams = np.logspace(-4, 4, 33)
    st = Setup(student, target, math.inf, 2.0, 1.0)
    b = curve(st, [1.0])["bounds"]
    al = [0.5, 3.0, 30.0]
    errs = np.array([solve(st.tables(), al, 1.0, 1.0, lam)["eps_g"] for lam in lams])
    best = errs.min(axis=0)
    assert np.all(b["lower"] <= best + 1e-12)
    assert np.all(best <= b["upper"] + 1e-12)
    for lam in (1e-3, 1.0):
        res = curve(Setup(student, target, 0.5, 2.0, 1.0, lam), [0.5, 3.0, 30.0])
        assert all(res["bounds"]["lower_here"] <= e + 1e-12 for e in res["eps_g"])


def test_bounds_at_gamma_one_match_derive_formulas():
    """(26), (27) from the tables = derive's formulas on independently integrated moments."""
    st = Setup("erf", "erf", math.inf, 2.0)
    b = curve(st, [1.0])["bounds"]
    r = b["srf_alpha0_inf"]["r"]
    f = D.conditional_coefficients("erf")
    mu0 = sp.lambdify(D.kappa, f["mu0"].subs({D.r: r, D.c: 1}), "mpmath")
    mu1 = sp.lambdify(D.kappa, f["mu1"].subs({D.r: r, D.c: 1}), "mpmath")
    s = sp.lambdify(D.z, D.activation("erf"), "mpmath")
    with mpmath.workdps(25):
        def E(g):
            return mpmath.quad(lambda t: g(t) * mpmath.npdf(t), [-mpmath.inf, 0, mpmath.inf])
        s2 = mpmath.mpf(1) / 3
        up = D.bound_upper(s2, E(lambda t: s(t) * mu0(t)), E(lambda t: mu0(t) ** 2))
        lo = D.bound_lower(E(lambda t: mu0(t) ** 2), E(lambda t: t * mu0(t) * mu1(t)),
                           E(lambda t: (t * mu1(t)) ** 2), E(lambda t: s(t) * mu0(t)),
                           E(lambda t: s(t) * t * mu1(t)), s2)
    assert abs(b["upper"] - float(up)) < 1e-12 and abs(b["lower"] - float(lo)) < 1e-12


def test_beta_one_is_regular():
    """The MP density's x^(−1/2) edge at β = 1: ε_g(β) smooth across β = 1 — the value at
    β = 1 is the mean of its neighbours at 1 ± 1e-6 up to the O(δ²) curvature (< 1e-10)."""
    al = [0.5, 1.0, 2.0]
    e = [np.array(curve(Setup("tanh", "tanh", 0.5, 1.0, b, 1e-3), al)["eps_g"])
         for b in (1 - 1e-6, 1.0, 1 + 1e-6)]
    assert np.max(np.abs(e[1] - (e[0] + e[2]) / 2)) < 1e-10


def test_wide_small_ridge_converges():
    """β > 1 with small λ (where a plain iteration needs heavy damping): converged, and the
    result satisfies the fixed-point equations (residual re-checked independently via the
    Stieltjes route)."""
    st = Setup("tanh", "sin", 1.0, 2.0, 4.0, 1e-5)
    p = st.srf()
    res = solve(st.tables(), [0.5, 4.0, 20.0], 4.0, p["c"], 1e-5)
    for i in range(3):
        av = stieltjes_averages(1e-5 + res["V2hat"][i], res["V1hat"][i], p["c"], 4.0)
        assert abs(av["D/S"] - res["V1"][i]) < 1e-10 * res["V1"][i]
        assert abs(av["1/S"] - res["V2"][i]) < 1e-10 * res["V2"][i]


def test_large_c_refines_the_quadrature():
    """η = 20 makes c ≈ 32: the ξ rule has to be refined (tanh's poles approach the axis)."""
    st = Setup("tanh", "tanh", 0.5, 20.0)
    assert len(st.tables().kappa) > 441
    assert np.isfinite(curve(st, [1.0])["eps_g"][0])


def test_hundred_point_curve_is_fast():
    import time
    st = Setup()
    st.tables()
    t0 = time.process_time()
    curve(st, np.linspace(0.05, 5, 100))
    assert time.process_time() - t0 < 1.0


def test_small_spike_limit_is_stable_and_jumps_at_zero():
    """r → 0⁺: the joint (m, t) solve stays finite (ŷ0 = μ0 m has a limit although m ~ 1/r),
    the limit differs from r = 0 (the mean direction is free for every r > 0: a jump that a
    finite network only shows for r ≫ p^(−1/2)), and the small-r case warns."""
    with pytest.warns(UserWarning, match="free mean direction"):
        a = curve(Setup("tanh", "tanh", 0.5, 1e-8), [0.5, 2.0])["eps_g"]
    with pytest.warns(UserWarning):
        b = curve(Setup("tanh", "tanh", 0.5, 1e-5), [0.5, 2.0])["eps_g"]
    zero = curve(Setup("tanh", "tanh", 0.5, 0.0), [0.5, 2.0])["eps_g"]
    assert np.max(np.abs(np.array(a) - b)) < 1e-9
    assert min(z - x for z, x in zip(zero, a, strict=True)) > 0.03
