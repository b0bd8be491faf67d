"""Correctness of the index-vectorised modes kernel and the RODAS4 modes solver.

* kernel vs the generated modules (a/f coefficients, rhs_modes at order 1 and 2, eps_g) for
  K, M = (1, 1), (2, 2), (2, 3), (3, 3) and the linear activation;
* the factored initial condition reproduces the overlaps (tiny students, indefinite data);
* the structured (Woodbury + reduced dense / GCR) solves equal a dense solve with the
  complex-step Jacobian of the full right-hand side;
* the integrator against the RK7(8) float64 path of ``integrate_problem`` at small sizes, and
  its order of convergence (fixed steps).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from derive import spectra
from derive.keys import SystemKey
from solvers.hierarchy import modes_fast as mf
from solvers.core import modes_kernel as mk
from solvers.hierarchy.odes import integrate_problem
from solvers.core.problem import Problem, expected_init, random_init
from solvers.core.registry import load

pytestmark = [pytest.mark.second_basis]  # oracle (tests/conftest.py)


def _random_state(rng, L, K, M, scale=0.3):
    """Mode overlaps of a random PSD Ω_k (so every square root in the closed forms is real)."""
    A = rng.standard_normal((L, K + M, K + M + 2)) * scale
    Om = A @ np.swapaxes(A, 1, 2) / (K + M + 2)
    return Om[:, :K, K:].copy(), Om[:, :K, :K].copy(), Om[:, K:, K:].copy()


KM = [("erf", 1, 1), ("erf", 2, 2), ("erf", 2, 3), ("erf", 3, 3), ("linear", 1, 1),
      ("linear", 2, 2)]


@pytest.mark.parametrize("activation,K,M", KM)
def test_kernel_matches_generated_module(activation, K, M):
    mod = load(SystemKey(activation, K, M), "numpy")
    rng = np.random.default_rng(K * 10 + M)
    L = 5
    lam = np.sort(rng.uniform(0.1, 3.0, L))[::-1]
    w = np.full(L, 1 / L)
    R, Q, T = _random_state(rng, L, K, M)
    eta = 0.37
    y, t = mk.pack(R, Q), mk.pack_teacher(T)
    for e2 in (0.0, eta ** 2):
        ref = mod.rhs_modes(y, t, lam, w, eta, e2)
        new = mk.pack(*mk.rhs(R, Q, T, lam, w, eta, e2, activation))
        assert np.abs(new - ref).max() <= 1e-13 * np.abs(ref).max()
    # the coefficient matrix a and the η² bracket f, entry by entry
    R1, Q1, T1 = mk.level_one(lam, R, Q, T)
    co = mod.coefficients(mk.pack(R1[None], Q1[None])[0], mk.pack_teacher(T1), eta)
    P, S = mk.coefficients(R1, Q1, T1, eta, activation)
    ns, nt = mod.N_STATE, mod.N_TEACHER
    a = np.zeros((ns, ns + nt))
    for col in range(ns + nt):
        e = np.zeros(ns + nt)
        e[col] = 1.0
        Rn, Qn = mk.unpack(e[:ns], K, M)
        Tn = mk.unpack_teacher(e[ns:], M)
        X = P @ Qn + S @ Rn.T
        a[:, col] = mk.pack((P @ Rn + S @ Tn)[None], (X + X.T)[None])[0]
    a_ref = np.zeros_like(a)
    for k, (s, col) in enumerate(mod.A_INDEX):
        a_ref[s, col] = co[k]
    assert np.abs(a - a_ref).max() <= 1e-13 * np.abs(a_ref).max()
    f_ref = np.asarray(co[len(mod.A_INDEX):], dtype=float)
    F = mk.order2_term(R1, Q1, T1, activation)
    f_new = F[np.triu_indices(K)]
    assert np.abs(f_new - f_ref).max() <= 1e-13 * max(np.abs(f_ref).max(), 1e-300)
    e_ref = mod.eps_g(mk.pack(R1[None], Q1[None])[0], mk.pack_teacher(T1))
    assert mk.eps_g(R1, Q1, T1, activation) == pytest.approx(e_ref, rel=1e-14, abs=1e-16)


def test_coefficients_batch_and_complex_step():
    rng = np.random.default_rng(3)
    R, Q, T = _random_state(rng, 4, 3, 2)
    P, S = mk.coefficients(R, Q, T, 0.2)                 # batched over 4
    for b in range(4):
        Pb, Sb = mk.coefficients(R[b], Q[b], T[b], 0.2)
        assert np.allclose(P[b], Pb, rtol=1e-15, atol=0) and np.allclose(S[b], Sb, rtol=1e-15)
        assert np.allclose(Pb, Pb.T, rtol=1e-15, atol=0)
    # complex step vs central difference for a direction
    d = rng.standard_normal(Q[0].shape)
    d = d + d.T
    Pc, _ = mk.coefficients(R[0], Q[0] + 1e-30j * d, T[0], 0.2)
    h = 1e-6
    fd = (mk.coefficients(R[0], Q[0] + h * d, T[0], 0.2)[0]
          - mk.coefficients(R[0], Q[0] - h * d, T[0], 0.2)[0]) / (2 * h)
    assert np.allclose(Pc.imag / 1e-30, fd, rtol=1e-7, atol=1e-12)


# -- factored initial conditions -------------------------------------------------------------

@pytest.mark.parametrize("N,L,r_expected", [(64, 64, 1), (128, 64, 2), (1024, 16, 5)])
def test_factor_of_realisations(N, L, r_expected):
    K, M = 2, 3
    inp = mf.random_inputs(K, M, N, L=L, beta=1.0, eta=0.1, sigma_J=1e-6, seed=1)
    assert inp.r == r_expected                  # min(N/L, K + M)
    from solvers.sim.simulate import initial_mode_overlaps, power_law_eigenvalues
    m = initial_mode_overlaps(K=K, M=M, N=N, sigma_J=1e-6, seed=1,
                              eigenvalues=power_law_eigenvalues(L, 1.0))
    R, Q, T = inp.overlaps()
    for got, ref in ((R, m["R"]), (Q, m["Q"]), (T, m["T"])):
        # every block to its own scale: the 1e-12-sized student is not truncated
        assert np.abs(got - ref).max() <= 1e-13 * np.abs(ref).max()


def test_factor_expected_and_indefinite():
    sp_ = spectra.power_law(6, 1)
    prob = Problem(SystemKey("erf", 2, 2), sp_, Fraction(1, 10), 1,
                   expected_init(sp_, 2, 2, Fraction(1, 10 ** 6)))
    inp = mf.inputs_from_problem(prob)
    R, Q, T = inp.overlaps()
    w = 1 / 6
    assert np.allclose(Q, 1e-12 * w * np.eye(2), rtol=1e-14, atol=0)
    assert np.allclose(T, w * np.eye(2), rtol=1e-14, atol=0) and np.all(R == 0)
    # an indefinite "overlap" array is still represented exactly (signs s = -1)
    rng = np.random.default_rng(0)
    R, Q, T = _random_state(rng, 3, 2, 2)
    Q = Q - 2 * np.eye(2)
    J, B, s, err = mf.factor_overlaps(R, Q, T)
    assert err < 1e-14 and np.any(s < 0)


# -- the structured linear solves ------------------------------------------------------------

def _complex_step_jacobian(system, y):
    n = y.size
    Jac = np.empty((n, n))
    for i in range(n):
        yc = y.astype(complex)
        yc[i] += 1e-30j
        Jac[:, i] = system.f(yc)[0].imag / 1e-30
    return Jac


@pytest.mark.parametrize("order,dense", [(1, True), (1, False), (2, True), (2, False)])
def test_structured_solve_equals_dense_solve(order, dense):
    inp = mf.random_inputs(2, 3, 12, L=6, beta=1.0, eta=0.3, sigma_J=0.3, seed=2, order=order)
    system = mf._System(inp)
    if not dense:
        system.dense_max = 0                      # GCR path
    y = system.initial_state()
    rng = np.random.default_rng(5)
    y = y + 0.05 * rng.standard_normal(y.size) * np.abs(y).max()
    if order == 2:                                # a nonzero η² part D of Q
        _, D = system.split(y)
        A = rng.standard_normal(D.shape) * 0.01
        D[:] = A @ np.swapaxes(A, 1, 2)
    Jac = _complex_step_jacobian(system, y)
    f0, aux = system.f(y)
    d = np.linalg.eigvalsh(aux[2])
    solved = 0
    for tau in (0.01, 0.3, 3.0, 300.0):
        if not system.prepare(y, aux, tau):
            # refused only when I/τ − (block-diagonal part) is nearly singular
            assert tau * inp.lam.max() * d.max() * (2 if order == 2 else 1) > 0.9
            continue
        solved += 1
        b = rng.standard_normal(y.size)
        if order == 2:                            # the D part lives on symmetric matrices
            _, bD = system.split(b)
            bD[:] = bD + np.swapaxes(bD, 1, 2)
        x = system.solve(b)
        x_ref = np.linalg.solve(np.eye(y.size) / tau - Jac, b)
        assert np.abs(x - x_ref).max() <= 1e-10 * np.abs(x_ref).max()
    assert solved >= 2


# -- the integrator --------------------------------------------------------------------------

def _problem(K, M, L, N, eta=Fraction(1, 10), sigma_J=Fraction(1, 100), order=1, seed=0,
             activation="erf"):
    sp_ = spectra.power_law(L, 1)
    return Problem(SystemKey(activation, K, M), sp_, eta, order,
                   random_init(K, M, N, sp_, sigma_J, seed))


CASES = [  # (K, M, L, N, order, alpha_max)
    (2, 2, 16, 64, 1, 1000.0),
    (2, 2, 8, 32, 2, 300.0),
    (2, 3, 8, 16, 1, 300.0),
    (3, 3, 8, 8, 1, 300.0),
]


@pytest.mark.parametrize("K,M,L,N,order,amax", CASES)
def test_against_rk78_modes_path(K, M, L, N, order, amax):
    prob = _problem(K, M, L, N, order=order)
    alphas = [0.0] + list(np.logspace(-1, np.log10(amax), 16))
    ref = integrate_problem(prob, alphas, basis="modes", arithmetic="float64", rtol=1e-12)
    new = mf.solve_modes_fast(prob, alphas, rtol=1e-9)
    assert new.basis == "modes" and new.arithmetic == mf.ARITHMETIC
    e_ref, e_new = ref.eps_float(), new.eps_float()
    assert np.abs(e_new / e_ref - 1).max() < 1e-7
    assert np.abs(new.R1 - ref.R1).max() < 1e-8 and np.abs(new.Q1 - ref.Q1).max() < 1e-8
    s_ref, s_new = np.array(ref.states, dtype=float), np.array(new.states)
    assert s_new.shape == s_ref.shape
    assert np.abs(s_new - s_ref).max() <= 1e-7 * np.abs(s_ref).max()


def test_linear_activation_against_rk78():
    prob = _problem(1, 1, 8, 8, activation="linear", order=2)
    alphas = [0.0, 1.0, 10.0, 100.0]
    ref = integrate_problem(prob, alphas, basis="modes", arithmetic="float64", rtol=1e-12)
    new = mf.solve_modes_fast(prob, alphas, rtol=1e-10)
    assert np.abs(new.eps_float() / ref.eps_float() - 1).max() < 1e-8


def test_gcr_path_matches_dense_path(monkeypatch):
    inp = mf.random_inputs(2, 2, 32, L=16, beta=1.0, eta=0.1, sigma_J=0.01, seed=0)
    alphas = [0.0, 1.0, 30.0]
    dense = mf.solve_modes_fast(inp, alphas, rtol=1e-9)
    monkeypatch.setattr(mf._System, "dense_max", 0)
    gcr = mf.solve_modes_fast(inp, alphas, rtol=1e-9)
    assert gcr.stats["reduced_solver"] == "gcr" and gcr.stats["gcr_iterations"] > 0
    assert np.abs(gcr.eps_float() / dense.eps_float() - 1).max() < 1e-10


@pytest.mark.parametrize("order", [1, 2])
def test_order_of_convergence(order):
    """Fixed steps h, h/2, h/4 against h/32: the state error falls like h^4 or faster.

    (RODAS4 is of order 4; on this problem the observed rates are 4.4-5.1 at these h.)
    """
    inp = mf.random_inputs(2, 2, 32, L=8, beta=1.0, eta=0.5, sigma_J=0.1, seed=3, order=order)
    alphas = [0.0, 4.0]

    def run(n):
        return mf.solve_modes_fast(inp, alphas, fixed_step=4.0 / n)

    ref = run(256)
    errs = [np.abs(run(n).states[-1] - ref.states[-1]).max() for n in (8, 16, 32)]
    orders = np.log2(np.array(errs[:-1]) / np.array(errs[1:]))
    assert np.all(orders > 3.8) and np.all(orders < 5.5), orders
    # the adaptive run at a tight tolerance agrees with the fixed-step reference
    tight = mf.solve_modes_fast(inp, alphas, rtol=1e-11)
    assert np.abs(tight.states[-1] - ref.states[-1]).max() < 1e-9 * np.abs(ref.states[-1]).max()


def test_large_L_from_problem_without_level_quantities():
    """L = 300: Problem.numeric(float64) overflows (ν_l = Σ λ^l), the fast path does not need it."""
    sp_ = spectra.power_law(300, 1)
    prob = Problem(SystemKey("erf", 2, 2), sp_, Fraction(1, 10), 1,
                   expected_init(sp_, 2, 2, Fraction(1, 100)))
    tr = mf.solve_modes_fast(prob, [0.0, 10.0, 100.0], rtol=1e-8)
    e = tr.eps_float()
    assert np.all(np.isfinite(e)) and e[0] > e[1] > e[2] > 0
    assert tr.stats["rank"] == 4 and len(tr.states) == 3 and tr.states[0].shape == (300, 7)


def test_bad_input():
    inp = mf.random_inputs(1, 1, 8, L=8, beta=1.0, eta=0.1, sigma_J=0.01, seed=0)
    with pytest.raises(ValueError, match="increasing"):
        mf.solve_modes_fast(inp, [0.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="order"):
        mf.solve_modes_fast(inp, [0.0, 1.0], order=3)
    sp_ = spectra.power_law(4, 1)
    from solvers.core.problem import explicit_init
    levels = explicit_init("levels", np.zeros((4, 1, 1)), np.zeros((4, 1, 1)), np.ones((5, 1, 1)))
    with pytest.raises(ValueError, match="modes basis"):
        mf.inputs_from_problem(Problem(SystemKey("erf", 1, 1), sp_, Fraction(1, 10), 1, levels))


@pytest.mark.parametrize("activation", ["erf", "linear"])
def test_coefficient_derivative_matches_complex_step(activation):
    rng = np.random.default_rng(7)
    R, Q, T = _random_state(rng, 1, 4, 3)
    R1, Q1, T1 = R[0], Q[0], T[0]
    dR = rng.standard_normal((2, 4, 3))
    dQ = rng.standard_normal((2, 4, 4))
    dQ = dQ + np.swapaxes(dQ, 1, 2)
    dP, dS = mk.CoefficientDerivative(R1, Q1, T1, 0.3, activation)(dR, dQ)
    Pc, Sc = mk.coefficients(R1 + 1e-30j * dR, Q1 + 1e-30j * dQ, T1.astype(complex), 0.3,
                             activation)
    assert np.allclose(dP, Pc.imag / 1e-30, rtol=1e-13, atol=1e-15)
    assert np.allclose(dS, Sc.imag / 1e-30, rtol=1e-13, atol=1e-15)


def test_explicit_method_on_the_factored_rhs():
    prob = _problem(2, 2, 16, 64)
    alphas = [0.0, 1.0, 10.0, 100.0]
    ref = integrate_problem(prob, alphas, basis="modes", arithmetic="float64", rtol=1e-12)
    new = mf.solve_modes_fast(prob, alphas, rtol=1e-10, method="rk78")
    assert new.arithmetic == "float64-rk78" and new.stats["n_fevals"] > 0
    assert np.abs(new.eps_float() / ref.eps_float() - 1).max() < 1e-9
    with pytest.raises(ValueError, match="method"):
        mf.solve_modes_fast(prob, alphas, method="euler")
