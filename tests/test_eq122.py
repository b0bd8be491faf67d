"""Eq. (122) against the ODE in the asymptotic phase (K = M = 2, η = 1/4, β = 1, order 1).

References are the generated modes system integrated with RK7(8) in float64 at rtol 1e-13
(``mode_states``), compared only where ε_g >= EPS_MIN = 1e-10: there the float64 run agrees
with a 30-digit run at rtol 1e-20 to 2e-7 relative (measured, L = 3 from α = 3000;
``test_float64_reference_is_accurate_where_used`` checks it under ``make verify``).  Below
~1e-12 the float64 ε_g is rounding noise (O(1) order parameters, ulp 1e-16).

Findings (numbers measured on this set-up, see the report in notebook 05, section 5):
* First-order Eq. (122) has a structural O(1) error from any state with a component along the
  "in-span" deformations J = (1 + D) B (students rotated/mixed inside the teacher span): they
  change ε_g only at second order (∇ε annihilates them exactly), decay at a (1 - √3/2) λ_k-like
  rates, half the slowest visible rate a (2 - √3) λ_L, and their squares therefore decay like
  the first-order term.  They live in the symmetric (r, s, q, c) subspace too, so symmetrising
  the state does not help.
* Where the premise holds (no in-span component: student = teacher + orthogonal noise) Eq. (122)
  converges, with an error proportional to the perturbation.
* The second-order formula (``SecondOrder``) converges from generic starts, error cubic in the
  perturbation.
"""
from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp

from derive import asymptotic as da
from derive import spectra
from derive.keys import SystemKey
from solvers.theory import asymptotic as A
from solvers.core.numbers import Float64Context
from solvers.core.problem import InitialCondition, Problem, expected_init, random_init, unpack_state

pytestmark = [pytest.mark.closed_form, pytest.mark.second_basis]  # oracle (tests/conftest.py)
# one xdist worker runs the whole module: its module-scoped fixture is computed once (make test
# runs --dist loadgroup)
pytestmark.append(pytest.mark.xdist_group("test_eq122"))

ETA = Fraction(1, 4)
KEY = SystemKey("erf", 2, 2)
EPS_MIN = 1e-10
# α_0 in the asymptotic phase and the end of the window where ε_g >= EPS_MIN (random seed 0)
ALPHA0 = {3: 3000.0, 9: 6000.0}
ALPHA_END = {3: 6000.0, 9: 14000.0}
STEP = {3: 250.0, 9: 500.0}


def _exact(a):
    return np.vectorize(Fraction, otypes=[object])(np.asarray(a, dtype=float))


def _restart(problem, y):
    """The problem started from the float64 mode state y (exact binary fractions)."""
    R, Q = unpack_state(np.asarray(y, dtype=float), 2, 2)
    return Problem(problem.key, problem.spectrum, problem.eta, problem.order,
                   InitialCondition("modes", _exact(R), _exact(Q), problem.init.T))


def _maxrel(pred, ref):
    keep = ref >= EPS_MIN
    return float(np.max(np.abs(pred[keep] / ref[keep] - 1)))


def _maxabs(pred, ref):
    keep = ref >= EPS_MIN
    return float(np.max(np.abs(pred[keep] - ref[keep])))


@pytest.fixture(scope="module", params=[3, 9])
def generic(request):
    """Fully random realisation (students and teacher, N = 9000, σ_J = 0.01, seed 0)."""
    L = request.param
    spL = spectra.power_law(L, 1)
    pr = Problem(KEY, spL, ETA, 1, random_init(2, 2, 9000, spL, Fraction(1, 100), 0))
    a0, a1, da_ = ALPHA0[L], ALPHA_END[L], STEP[L]
    al = np.concatenate([[0.0, a0 - 1000.0], np.arange(a0, a1 + da_ / 2, da_)])
    st, e = A.mode_states(pr, list(al))
    lam = pr.numeric(Float64Context()).lam
    F = A.FullLinearisation(pr, A.matched_permutation((lam @ st[2])[:4].reshape(2, 2), 2))
    return {"L": L, "problem": pr, "alpha": al[2:], "states": st[2:], "eps": e[2:],
            "early": (al[1], st[1]), "F": F, "S2": A.SecondOrder(F)}


# -- why first order fails: exact statements ---------------------------------------------------

@pytest.mark.parametrize("M", [2, 3])
def test_in_span_deformations_are_first_order_invisible(M):
    """J = (1 + D) B with symmetric D (diag d, off-diagonal e) moves the level-1 order
    parameters by r = d, s = e, q = 2d, c = 2e (T_1 = 1); Eq. (121)'s gradient annihilates it
    exactly: such deformations change ε_g only at second order."""
    g = da.eps_gradient(M)
    d, e = sp.symbols("d e")
    assert sp.simplify(g[0] * d + g[1] * e + g[2] * 2 * d + g[3] * 2 * e) == 0
    assert any(sp.simplify(x) != 0 for x in g)


@pytest.mark.parametrize("L", [3, 9])
def test_reduced_system_has_invisible_half_rate_direction(L):
    """The paper's reduced (r, s, q, c) matrix itself (30 digits) has an eigen-direction with
    zero first-order ε weight decaying at ≈ half the slowest visible rate (measured ratios
    0.49856 at L = 3, 0.49993 at L = 9): symmetric starts are not enough for Eq. (122)."""
    lin = A.Linearisation(2, spectra.power_law(L, 1), ETA, dps=30)
    with mpmath.workdps(30):
        scale = max(abs(w) for w in lin.weights)
        invisible = [float(-mpmath.re(m)) for m, w in zip(lin.mu, lin.weights, strict=True)
                     if abs(w) < mpmath.mpf(10) ** -20 * scale]
    visible = lin.rates()
    assert invisible, "expected first-order-invisible directions"
    ratio = min(invisible) / min(visible)
    # the (1 - √3/2) constant is moved by the rank-one level coupling; it lands just below
    # (2 - √3)/2 (the exact value would be 0.5)
    assert 0.49 < ratio < 0.5


# -- 1. Eq. (122) where its premise holds ------------------------------------------------------

def _noise_problem(L, s):
    """Expected teacher, students = teacher + orthogonal noise: R_k = T_k, Q_k = (1 + s) T_k
    (no in-span component; symmetric under swapping students and teachers)."""
    spL = spectra.power_law(L, 1)
    ex = expected_init(spL, 2, 2, Fraction(1, 100))
    Q = np.array([ex.T[k] * (1 + s) for k in range(L)], dtype=object)
    return Problem(KEY, spL, ETA, 1, InitialCondition("modes", ex.T.copy(), Q, ex.T))


@pytest.mark.parametrize("L", [3, 9])
def test_eq122_converges_where_premise_holds(L):
    lin = A.Linearisation(2, spectra.power_law(L, 1), ETA, dps=30)
    span = {3: 3000.0, 9: 8000.0}[L]
    al = np.linspace(0.0, span, 17)
    err = {}
    for s in (Fraction(1, 100), Fraction(1, 1000)):
        st, e = A.mode_states(_noise_problem(L, s), list(al))
        for i0 in (0, 4, 8):
            pred = np.array([float(v) for v in lin.eps_g(st[i0], al[i0], al[i0 + 1:])])
            err[s, i0] = _maxrel(pred, e[i0 + 1:])
    print(L, {(float(s), float(al[i])): f"{v:.2e}" for (s, i), v in err.items()})
    # error ∝ perturbation: the quadratic terms are O(s²) against the O(s) linear ones
    ratio = err[Fraction(1, 1000), 0] / err[Fraction(1, 100), 0]
    assert 0.05 < ratio < 0.2
    # ... and it shrinks as α_0 grows (the perturbation decays)
    assert err[Fraction(1, 100), 8] < err[Fraction(1, 100), 4] < err[Fraction(1, 100), 0]
    assert err[Fraction(1, 100), 4] < 1e-3 and err[Fraction(1, 1000), 0] < 1e-3


# -- 2. second order from generic starts -------------------------------------------------------

def test_quadratic_part_step_error(generic):
    S2 = generic["S2"]
    # budget of the class docstring: ~1e-11 per quotient; 1e-8 leaves room for |∂³f| ~ 100
    assert S2.B_asymmetry < 1e-8
    # an independent route: second differences of rhs_modes along a random direction x,
    # Richardson-extrapolated over h = 1e-3, 5e-4 (the plain quotient converges like h²:
    # measured 6e-7 at h = 1e-3); left: h⁴ terms ~ 1e-12 and rounding ~ 1e-17 / h² ~ 4e-11
    # absolute against |B(x, x)| ~ 0.02 .. 0.04, i.e. ~ 1e-9 relative; B's own step error
    # ~1e-10 max|B| per entry sums over the n² pairs of a unit x to a few 1e-9 max|B|
    # (measured total: 6e-10 at L = 3, 1.1e-8 at L = 9)
    F = S2.lin
    x = np.random.default_rng(1).standard_normal(F.y_star.size)
    x /= np.linalg.norm(x)
    num = F.num
    args = (num.T_modes, num.lam, num.w, num.eta, num.e2, F.ctx)
    y = F.y_star.ravel()
    f = lambda z: F.mod.rhs_modes(z.reshape(F.y_star.shape), *args).ravel()  # noqa: E731
    d2 = {h: (f(y + h * x) + f(y - h * x) - 2 * f(y)) / h ** 2 for h in (1e-3, 5e-4)}
    rich = (4 * d2[5e-4] - d2[1e-3]) / 3
    assert np.max(np.abs(rich - 2 * S2.quadratic_rhs(x))) < 1e-7 * np.max(np.abs(rich))


def test_x2_closed_form_matches_integration(generic):
    """∇ε·x2 in closed form (eigenbasis, φ functions) vs DOP853 on x1' = J x1,
    x2' = J x2 + ½ B(x1, x1) at rtol 1e-12."""
    from scipy.integrate import solve_ivp
    S2, F = generic["S2"], generic["S2"].lin
    x0 = (generic["states"][0] - F.y_star).ravel()
    n = x0.size
    # 3000 α units: several e-folds of the near-resonant pairs (μ t ≈ 1.3 .. 4.5), and short
    # enough for the explicit DOP853 on the stiff J (fastest rate ~1)
    ts = np.linspace(0, 3000.0, 7)

    def rhs(t, z):
        return np.concatenate([F.J @ z[:n], F.J @ z[n:] + S2.quadratic_rhs(z[:n])])
    sol = solve_ivp(rhs, (0, ts[-1]), np.concatenate([x0, np.zeros(n)]), method="DOP853",
                    t_eval=ts, rtol=1e-12, atol=1e-20)
    ode = S2.grad @ sol.y[n:]
    closed = S2.parts(generic["states"][0], 0.0, ts)[:, 1]
    # rtol 1e-12 on x2, eigenbasis round-off ~ cond(V)·1e-16 ~ 1e-13: 1e-8 is generous
    assert np.max(np.abs(closed - ode)) < 1e-8 * np.max(np.abs(ode))


def test_second_order_meets_requirement_generic(generic):
    S2, L = generic["S2"], generic["L"]
    al, st, e = generic["alpha"], generic["states"], generic["eps"]
    p = S2.parts(st[0], al[0], al[1:])
    rel2 = _maxrel(p.sum(axis=1), e[1:])
    rel1 = _maxrel(p[:, 0], e[1:])
    print(f"L={L}: α0={al[0]}, window to {al[-1]} (ε {e[0]:.1e} .. {e[-1]:.1e}): "
          f"first order {rel1:.2e}, second order {rel2:.2e}")
    assert e[-1] >= EPS_MIN                      # the whole window is compared
    assert rel2 < 1e-3                           # the accuracy the window must reach
    # first-order Eq. (122) does not meet it (measured 0.12 at L = 3, 2.7e-3 at L = 9 and
    # still growing at the end of the window)
    assert rel1 > 1e-3


def test_second_order_error_is_cubic(generic):
    """Start from y* + x0 and y* + x0/2: the second-order error scales like the cube of the
    perturbation (ratio 8), the first-order error like its square (ratio 4)."""
    S2, L, pr = generic["S2"], generic["L"], generic["problem"]
    al, st, e = generic["alpha"], generic["states"], generic["eps"]
    y_half = S2.lin.y_star + 0.5 * (st[0] - S2.lin.y_star)
    t = al - al[0]
    st_h, e_h = A.mode_states(_restart(pr, y_half), list(t))
    errs = {}
    for name, y, ref in (("full", st[0], e), ("half", y_half, e_h)):
        p = S2.parts(y, 0.0, t)
        errs[name] = (_maxabs(p[:, 0], ref), _maxabs(p.sum(axis=1), ref))
    r1 = errs["full"][0] / errs["half"][0]
    r2 = errs["full"][1] / errs["half"][1]
    print(f"L={L}: error ratios for a halved perturbation: first order {r1:.2f}, "
          f"second order {r2:.2f}")
    # leading terms give 4 and 8 exactly; the next order is O(|x0|) ≲ 10 % here
    assert 3.2 < r1 < 4.8
    assert 6.4 < r2 < 9.6


def test_second_order_error_falls_with_alpha0(generic):
    """Later α_0 = smaller perturbation: second-order error falls like |x_inv(α_0)| (the
    slowest invisible amplitude); the first-order error stays above 1e-3."""
    S2, pr = generic["S2"], generic["problem"]
    a_early, y_early = generic["early"]
    al, e = generic["alpha"], generic["eps"]
    t = np.concatenate([[0.0], al - a_early])     # the integration starts at t[0]
    st_e, e_e = A.mode_states(_restart(pr, y_early), list(t))
    e_e = e_e[1:]
    p_early = S2.parts(y_early, 0.0, t[1:])
    p_late = S2.parts(generic["states"][0], al[0], al[1:])
    rel2 = (_maxrel(p_early.sum(axis=1), e_e), _maxrel(p_late.sum(axis=1), e[1:]))
    rel1 = (_maxrel(p_early[:, 0], e_e), _maxrel(p_late[:, 0], e[1:]))
    slow = -np.max(S2.mu.real)
    expected = np.exp(-slow * (al[0] - a_early))
    print(f"L={generic['L']}: second order {rel2[0]:.2e} -> {rel2[1]:.2e} "
          f"(ratio {rel2[1] / rel2[0]:.3f}, e^(-μ Δα0) = {expected:.3f}); "
          f"first order {rel1[0]:.2e} -> {rel1[1]:.2e}")
    assert 0.5 * expected < rel2[1] / rel2[0] < 2 * expected
    assert min(rel1) > 1e-3


# -- the symmetric subspace alone does not rescue Eq. (122) --------------------------------------

@pytest.mark.parametrize("L", [3, pytest.param(9, marks=pytest.mark.full)])
def test_symmetric_projection_does_not_rescue_eq122(L):
    """Random students, expected teacher (notebook 05): project the state at α = 1000 on the
    permutation-symmetric (r, s, q, c) subspace and integrate on.  Over a fixed window after
    α_0 the first-order error levels off instead of following the perturbation: the reduced
    system's own in-span direction.  Measured (window 2000 / 6000, α_0 counted from the
    projection): L = 3: 2.0e-2, 1.8e-2, 1.7e-2 at α_0 = 2000, 2500, 3000 while the slowest
    perturbation shrinks by 0.22; L = 9: 3.5e-3, 2.2e-3 at α_0 = 4500, 6000."""
    spL = spectra.power_law(L, 1)
    ini = random_init(2, 2, 9000, spL, Fraction(1, 100), 0)
    ex = expected_init(spL, 2, 2, Fraction(1, 100))
    pr = Problem(KEY, spL, ETA, 1, InitialCondition("modes", ini.R, ini.Q, ex.T))
    st, _ = A.mode_states(pr, [0.0, 1000.0])
    lam = pr.numeric(Float64Context()).lam
    ys = A.symmetric_projection(st[1], A.matched_permutation((lam @ st[1])[:4].reshape(2, 2), 2))
    dt, window, starts = {3: (250.0, 2000.0, (2000.0, 2500.0, 3000.0)),
                          9: (500.0, 6000.0, (4500.0, 6000.0))}[L]
    al = np.arange(0.0, starts[-1] + window + dt / 2, dt)
    sts, es = A.mode_states(_restart(pr, ys), list(al))
    # the trajectory stays symmetric (R_11 = R_22 etc. up to rounding)
    R, Q = unpack_state(sts[-1], 2, 2)
    assert np.max(np.abs(R[:, 0, 0] - R[:, 1, 1])) < 1e-12
    assert np.max(np.abs(Q[:, 0, 0] - Q[:, 1, 1])) < 1e-12
    lin = A.Linearisation(2, spL, ETA, dps=30)
    n = int(round(window / dt))
    errs = []
    for a0 in starts:
        i0 = int(np.argmin(np.abs(al - a0)))
        pred = np.array([float(v) for v in lin.eps_g(sts[i0], al[i0], al[i0 + 1:i0 + n + 1])])
        errs.append(_maxrel(pred, es[i0 + 1:i0 + n + 1]))
    print(f"L={L}: Eq. 122 from the symmetric trajectory, α0 = {starts}: {errs}")
    assert min(errs) > 1e-3                      # misses the requirement at every α_0
    if L == 3:
        shrink = np.exp(-(-np.max(np.real(np.linalg.eigvals(
            A.FullLinearisation(pr, [0, 1]).J)))) * (starts[-1] - starts[0]))
        # an error ∝ perturbation would fall by `shrink` (0.22); it falls by 0.87
        assert errs[-1] / errs[0] > 3 * shrink


# -- the float64 reference, checked against 30 digits (make verify) -----------------------------

@pytest.mark.full
def test_float64_reference_is_accurate_where_used(generic):
    """RK7(8) in arb at 30 digits, rtol 1e-20, from the same float64 state at α_0 as the
    prediction: the float64 reference is good to 1e-5 relative where ε_g >= EPS_MIN (budget
    for a comparison at 1e-3: 1 %), and the second-order requirement holds against it."""
    from solvers.hierarchy.odes import integrate_problem
    al, st, e, S2 = generic["alpha"], generic["states"], generic["eps"], generic["S2"]
    tr = integrate_problem(_restart(generic["problem"], st[0]), list(al - al[0]),
                           basis="modes", arithmetic="flint", dps=30, rtol=1e-20)
    ref = tr.eps_float()
    keep = ref >= EPS_MIN
    dev = float(np.max(np.abs(e[keep] / ref[keep] - 1)))
    rel2 = _maxrel(S2.eps_g(st[0], al[0], al[1:]), ref[1:])
    print(f"L={generic['L']}: float64 vs 30 digits {dev:.1e}; second order vs 30 digits {rel2:.2e}")
    assert dev < 1e-5
    assert rel2 < 1e-3
