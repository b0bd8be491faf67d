"""The general (numeric) route of the plateau and asymptotic linearisations against its oracles:
the erf closed forms, and the ODE itself (measured escape / decay rates, late states)."""
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import scipy.linalg as sl
import sympy as sp

from derive import plateau as dp
from derive import spectra
from derive.keys import SystemKey
from solvers.core.numbers import Float64Context
from solvers.core.problem import Problem, explicit_init, random_init, unpack_state
from solvers.core.registry import load
from solvers.hierarchy.odes import integrate_problem
from solvers.theory.asymptotic import matched_permutation
from solvers.theory.plateau import SymmetricTeacher
from solvers.theory.variants import (Refused, _teacher_matrices, asymptotic_numeric,
                                     ode_starts, plateau_numeric, plateau_refusal,
                                     symmetric_teacher_modes)

pytestmark = [pytest.mark.closed_form, pytest.mark.higher_precision]  # oracle (tests/conftest.py)


def _exact(f):
    return sp.Rational(f.numerator, f.denominator)


@pytest.mark.closed_form
@pytest.mark.parametrize("M,L", [(2, 3), (3, 2), pytest.param(2, 8, marks=pytest.mark.full),
                                 pytest.param(4, 4, marks=pytest.mark.full)])
def test_numeric_plateau_is_the_erf_closed_form(M, L):
    """Newton from the ODE state (not from the ansatz) lands on Eq. 97 / 99 / the escape
    eigenvalue, to 25 digits (the route verifies 30 by rerunning at 60 digits)."""
    spectrum = spectra.power_law(L, 1)
    init = random_init(M, M, 100 * L, spectrum, Fraction(1, 100), 3)
    tea = SymmetricTeacher.from_modes(init.T)
    eta = Fraction(1, 2)
    prob = Problem(SystemKey("erf", M, M), spectrum, eta, 1, init)
    r = plateau_numeric(prob, symmetric_teacher_modes(M, tea), dps=40, digits=30)
    assert min(r["digits"].values()) >= 30
    lam = spectrum.eigenvalues
    T1, D1, T2, D2 = (sum(l ** j * _exact(v[k]) for k, l in enumerate(lam))
                      for j, v in ((1, tea.T), (1, tea.D), (2, tea.T), (2, tea.D)))
    R, Q = dp.plateau_level1(M, T1, D1)
    with mpmath.workdps(50):
        lamn = [mpmath.mpf(sp.N(x, 60)) for x in lam]
        v1 = sum(x * r["y"][k] for k, x in enumerate(lamn))
        ref = lambda e: mpmath.mpf(sp.N(e, 60))  # noqa: E731
        tol = mpmath.mpf(10) ** -25
        # every R_in and Q_ij of level 1 (the route does not assume the teacher symmetry)
        assert all(abs(v1[s] - ref(R)) < tol * ref(R) for s in range(M * M))
        assert all(abs(v1[s] - ref(Q)) < tol * ref(Q) for s in range(M * M, len(v1)))
        assert abs(r["eps"] - ref(dp.plateau_height(M, T1, D1))) < tol
        lam_esc = ref(dp.escape_eigenvalue(eta, M, T1, D1, T2, D2))
        assert abs(r["escape"] - lam_esc) < tol * lam_esc


def _float_jacobian(key, prob, T_packed, y):
    num = prob.numeric(Float64Context())
    f = lambda a: np.array([[float(v) for v in row] for row in a])  # noqa: E731
    return load(key, "numpy").jac_modes(
        f(y), f(T_packed), np.asarray(num.lam, float), np.asarray(num.w, float),
        float(num.eta), float(num.e2), Float64Context(), noise=float(num.noise),
        decay=float(num.decay))


def _perturbed(prob, T_packed, y, amplitude, seed):
    K, M = prob.key.K, prob.key.M
    d = np.random.default_rng(seed).standard_normal(y.shape) * amplitude
    R, Q = unpack_state(y + d, K, M)
    fr = lambda a: np.array([[[Fraction(float(x)) for x in row] for row in m] for m in a],  # noqa
                            dtype=object)
    return Problem(prob.key, prob.spectrum, prob.eta, prob.order,
                   explicit_init("modes", fr(R), fr(Q), _teacher_matrices(T_packed, M)),
                   noise=prob.noise, weight_decay=prob.weight_decay)


def _rate(alphas, c, lo, hi):
    c = np.abs(np.asarray(c))
    win = (c > lo) & (c < hi)
    assert win.sum() >= 20
    return float(np.polyfit(np.asarray(alphas)[win], np.log(c[win]), 1)[0])


@pytest.mark.second_basis
@pytest.mark.parametrize("L", [3, pytest.param(8, marks=pytest.mark.full)])
def test_relu_teacher_noisy_plateau_escape_rate_is_the_odes(L):
    """erf student, ReLU teacher, label noise at order 2: the ODE started next to the numeric
    plateau leaves it at the largest eigenvalue of the generated Jacobian, and the ODE on the
    equal-students subspace settles on the numeric fixed point."""
    key = SystemKey("erf", 2, 2, teacher="relu")
    spectrum = spectra.power_law(L, 1)
    init = random_init(2, 2, 100 * L, spectrum, Fraction(1, 100), 3)
    prob = Problem(key, spectrum, Fraction(1, 2), 2, init, noise=Fraction(1, 10))
    T_packed = symmetric_teacher_modes(2, SymmetricTeacher.from_modes(init.T))
    r = plateau_numeric(prob, T_packed, dps=30, digits=20)
    esc = float(r["escape"])
    assert esc > 0.01 and r["digits"]["escape"] >= 20
    ys = np.array([[float(v) for v in row] for row in r["y"]])
    mu, left = sl.eig(_float_jacobian(key, prob, T_packed, r["y"]), left=True, right=False)
    i = int(np.argmax(mu.real))
    assert abs(mu[i].real - esc) < 1e-12 and abs(mu[i].imag) < 1e-12
    ell = left[:, i].real        # the component along the escape direction grows as e^{esc α}
    pert = _perturbed(prob, T_packed, ys, 1e-10, seed=0)
    alphas = list(np.linspace(0, np.log(1e6) / esc, 200))
    tr = integrate_problem(pert, alphas, basis="modes", arithmetic="float64", rtol=1e-13)
    c = [ell @ (np.asarray(s, float) - ys).ravel() for s in tr.states]
    # window |c| in [1e-9, 1e-6] of an O(0.5) state: the quadratic terms shift the rate by
    # ~1e-6 relative; RK7(8) at rtol 1e-13 adds nothing visible: 1e-4 is a safe bound
    assert _rate(alphas, c, 1e-9, 1e-6) == pytest.approx(esc, rel=1e-4)
    # the ODE made symmetric settles on the fixed point (its best projected state, the one
    # Newton started from): within 1e-5 of it.  Only at L = 3: at L = 8 the slowest mode on the
    # subspace (~ λ_8) has not settled by α = 2^10/η (measured: 5e-3 off), and the full ODE
    # leaves the subspace by round-off (growing at the escape rate) before it would
    if L > 3:
        return
    start = ode_starts(prob, T_packed, n_best=1)[0]
    fp = [r["y"][k, j] for k in range(L) for j in (0, 1, 4)]
    assert max(abs(a - float(b)) for a, b in zip(start, fp, strict=True)) < 1e-5


@pytest.mark.second_basis
def test_noisy_asymptotic_state_and_decay_rate_are_the_odes():
    """erf K = M = 2 with label noise at order 2: the fixed point moves off R = Q = T; the ODE
    from a random start converges to it at the slowest rate, ε_g to its clean value there (the
    noise floor), and a perturbation of it decays along the slowest eigenvector at that rate."""
    L, key = 3, SystemKey("erf", 2, 2)
    spectrum = spectra.power_law(L, 1)
    init = random_init(2, 2, 300, spectrum, Fraction(1, 100), 3)
    prob = Problem(key, spectrum, Fraction(1, 2), 2, init, noise=Fraction(1, 10))
    tr = integrate_problem(prob, [0, 3000, 6000], basis="modes", arithmetic="float64",
                           rtol=1e-13)
    perm = matched_permutation(tr.R1[1], 2)
    r = asymptotic_numeric(prob, np.asarray(tr.states[1], float), perm, dps=30, digits=20)
    assert not r["exact"] and min(r["digits"].values()) >= 20
    ys = np.array([[float(v) for v in row] for row in r["y"]])
    T_packed = np.array([[Fraction(float(v)) for v in row] for row in r["T_modes"]])
    slowest = -float(r["eigenvalues"][0].real)
    assert slowest > 0
    # the ODE's state approaches the numeric point at >= the slowest rate (factor 10 for the
    # prefactors of the two nearly degenerate slowest directions)
    d1, d2 = (np.max(np.abs(np.asarray(s, float) - ys)) for s in tr.states[1:])
    assert d2 < 10 * d1 * np.exp(-slowest * 3000)
    # ... and ε_g to the noise floor: the first-order distance shrinks the same way
    eps = tr.eps_float()
    eps_star = float(r["eps"])
    assert abs(eps[2] - eps_star) < 10 * abs(eps[1] - eps_star) * np.exp(-slowest * 3000)
    assert abs(eps[2] - eps_star) < 1e-6 * eps_star
    # decay of a small perturbation along the slowest left eigenvector
    mu, left = sl.eig(_float_jacobian(key, prob, T_packed, r["y"]), left=True, right=False)
    i = int(np.argmax(mu.real))
    ell = left[:, i].real
    pert = _perturbed(prob, T_packed, ys, 1e-7, seed=1)
    alphas = list(np.linspace(0, 3.0 / slowest, 150))
    tr2 = integrate_problem(pert, alphas, basis="modes", arithmetic="float64", rtol=1e-13)
    c = [ell @ (np.asarray(s, float) - ys).ravel() for s in tr2.states]
    # |c| <= 1e-7 of an O(0.5) state: quadratic terms ~1e-7 relative on the rate; the ODE's
    # own error (rtol 1e-13 on the state) is 1e-6 of c at the end: 1e-4 bounds both
    assert _rate(alphas, c, 1e-12, 1e-6) == pytest.approx(-slowest, rel=1e-4)


@pytest.mark.contract
@pytest.mark.parametrize("kw,needle", [
    (dict(activation="relu", K=2, M=2), "relu"),
    (dict(activation="linear", K=2, M=2), "linear"),
    (dict(activation="erf", K=1, M=2), "K = 1"),
    (dict(activation="erf", K=2, M=2, readout=("1/2", "1/3", "1", "1")), "not uniform"),
])
def test_plateau_refusals_name_the_reason(kw, needle):
    readout = kw.pop("readout", None)
    key = SystemKey(kw.pop("activation"), kw["K"], kw["M"], readout=readout)
    reason = plateau_refusal(key)
    assert reason and needle in reason and "\n" not in reason


@pytest.mark.contract
def test_mixed_pairs_and_other_readouts_are_supported():
    for key in (SystemKey("erf", 2, 2, teacher="relu"), SystemKey("x**3", 3, 2),
                SystemKey("erf", 2, 3, readout=("1/2", "1/2", "1", "2", "1/3"))):
        assert plateau_refusal(key) is None


@pytest.mark.contract
def test_relu_perfect_learning_is_refused_with_the_reason():
    L, key = 2, SystemKey("relu", 2, 2)
    spectrum = spectra.power_law(L, 1)
    init = random_init(2, 2, 200, spectrum, Fraction(1, 100), 0)
    prob = Problem(key, spectrum, Fraction(1, 2), 1, init)
    with pytest.raises(Refused, match="singular covariance"):
        asymptotic_numeric(prob, np.zeros((L, 7)), [0, 1])


@pytest.mark.closed_form
def test_the_refusals_follow_from_the_hierarchy():
    """What the numeric route assumes is derived: the equal-students subspace is invariant
    exactly for uniform student readouts (any teacher), singular for ReLU students; perfect
    learning is a fixed point exactly when the student can copy the teacher unit by unit."""
    from derive.asymptotic import perfect_learning_residual
    from derive.plateau import equal_students_defect
    from solvers.theory.variants import perfect_learning_available
    for key in (SystemKey("erf", 2, 2, teacher="relu"), SystemKey("x**3", 3, 2),
                SystemKey("erf", 2, 2, readout=("1/2", "1/3", "1", "1"))):
        invariant = equal_students_defect(key) < 1e-25      # 30 digits evaluated
        assert invariant == (plateau_refusal(key) is None), key
    assert equal_students_defect(SystemKey("relu", 2, 2)) is sp.nan
    swapped = SystemKey("erf", 2, 2, readout=("1/2", "1", "1", "1/2"))
    for key, perm in ((SystemKey("x**3", 2, 2), [0, 1]), (swapped, [0, 1]), (swapped, [1, 0]),
                      (SystemKey("erf", 2, 2, teacher="relu"), [0, 1])):
        exact = perfect_learning_residual(key, perm) < 1e-25
        assert exact == (perfect_learning_available(key, perm) is None), (key, perm)
    assert perfect_learning_residual(SystemKey("relu", 2, 2)) is sp.nan


@pytest.mark.contract
def test_fixed_points_docstring_example():
    import doctest
    import solvers.theory.fixed_points as fp
    result = doctest.testmod(fp)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.closed_form
@pytest.mark.parametrize("M,L", [(2, 3), (3, 2)])
def test_numeric_asymptotic_spectrum_has_the_erf_exact_groups(M, L):
    """At perfect learning (expected teacher, T_1 = 1, order 1) the eigenvalues of the numeric
    route contain every exact group -a g λ_k (derive.asymptotic.exact_groups) with its
    multiplicity, to 25 digits (a = 2η/(√3 π M))."""
    from derive.asymptotic import exact_groups
    from solvers.core.problem import expected_init
    spectrum = spectra.power_law(L, 1)
    eta = Fraction(1, 2)
    prob = Problem(SystemKey("erf", M, M), spectrum, eta, 1,
                   expected_init(spectrum, M, M, Fraction(1, 100)))
    n = M * M + M * (M + 1) // 2
    r = asymptotic_numeric(prob, np.zeros((L, n)), list(range(M)), dps=40, digits=30)
    assert r["exact"] and r["residual"] == 0 and min(r["digits"].values()) >= 30
    ev = r["eigenvalues"]
    with mpmath.workdps(50):
        radius = max(abs(z) for z in ev)
        tol = mpmath.mpf(10) ** -25 * radius
        a = 2 * mpmath.mpf(eta.numerator) / eta.denominator / (mpmath.sqrt(3) * mpmath.pi * M)
        targets = [(-a * mpmath.mpf(sp.N(g, 60)) * mpmath.mpf(sp.N(lk, 60)), m)
                   for g, m in exact_groups(M).items() for lk in spectrum.eigenvalues]
        for t, _ in targets:
            expected = sum(m for s, m in targets if abs(s - t) < tol)
            found = sum(1 for z in ev if abs(z - t) < tol)
            assert found >= expected, (t, expected, found)


@pytest.mark.closed_form
def test_numeric_asymptotic_spectrum_of_the_linear_model():
    """Linear K = M = 1 at order 1 (the paper's §4): at R = Q = T the Jacobian is triangular
    in (R_k, Q_k) with eigenvalues -η λ_k (R) and -2 η λ_k (Q), to 25 digits."""
    from solvers.core.problem import expected_init
    L, eta = 4, Fraction(1, 2)
    spectrum = spectra.power_law(L, 1)
    prob = Problem(SystemKey("linear", 1, 1), spectrum, eta, 1,
                   expected_init(spectrum, 1, 1, Fraction(1, 100)))
    r = asymptotic_numeric(prob, np.zeros((L, 2)), [0], dps=40, digits=30)
    assert r["exact"] and r["eps"] == 0       # below 10^-30 of the zero student's ε_g
    with mpmath.workdps(50):
        lam = [mpmath.mpf(sp.N(x, 60)) for x in spectrum.eigenvalues]
        want = sorted([-c * mpmath.mpf(1) / 2 * x for x in lam for c in (1, 2)], reverse=True)
        got = [z.real for z in r["eigenvalues"]]
        assert all(abs(z.imag) < 1e-30 for z in r["eigenvalues"])
        assert all(abs(a - b) < mpmath.mpf(10) ** -25 * abs(b)
                   for a, b in zip(got, want, strict=True))
