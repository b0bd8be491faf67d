"""The generated systems at L = 1 against the peers' published equations.

At L = 1 (isotropic inputs, Σ = I, ν_1 = 1) the level system is the classical soft-committee
ODE that the peer codes integrate.  tests/peers/ re-implements, from their equations and with no
import from derive/ or solvers/, nn2pp's right-hand side (``scmpp_ode.cpp``) and pyscm's
closed-form ε_g (``scm/scm.py``); the conventions' map (learning rates, weight decay, noise,
readouts) is in the docstrings there.

Today's model (erf, paper normalisation v = √M/K, u = 1/√M, fixed readout, no noise or decay)
is nn2pp's ODE with those readouts: dR/dα, dQ/dα and ε_g of the generated module must equal the
reference at random admissible points (overlaps of random weight vectors) to rounding.

* 40 digits: the generated module through ``MpmathContext(40)`` against the reference in
  mpmath at 40 digits.  Both evaluate the same closed forms in different orders; each entry is
  a sum of at most (K+M)² + 2(K+M) terms of size ≲ 1 whose own rounding is ~1e-40, and the
  points keep every covariance well away from singular (smallest eigenvalue of the joint
  covariance ≥ 0.05, so no Λ of the erf forms loses more than ~2 digits): 1e-34 of the largest
  entry leaves a factor 1e4 over that.
* float64: the numpy-target module (``Float64Context``) against the 40-digit reference: 1e-13
  of the largest entry is ~450 ulp — the same term count and the ≤ 2 digits the Λ's may lose.
  (Measured: ≤ 1.5e-40 and ≤ 2e-15.)

The same bounds hold the family's systems with other fixed readouts (the readouts in the system
key) to nn2pp's right-hand side with those v, A, and the ε_g printed into ReLU / mixed-pair
systems to pyscm's closed form.  pyscm's ε_g is also checked against derive.family's I2
assembled by hand (works without the family's systems).  Noise, weight decay and a trained
readout enter through the family's spec keys: those variants are solved at L = 1 through
``solvers.solve`` and held to nn2pp's ODE integrated independently (section below).  A part of
the family API that the solver refuses fails its test, naming what is missing (never a skip).
"""
from __future__ import annotations

import mpmath
import numpy as np
import pytest

from derive.keys import SystemKey
from peers import nn2pp_equations as nn2pp
from peers import pyscm_equations as pyscm
from solvers.core import registry
from solvers.core.numbers import MpmathContext

pytestmark = [pytest.mark.closed_form]   # oracle: the peers' published equations (tests/peers)

DPS = 40
TOL_MP = mpmath.mpf(10) ** -34
TOL_F64 = 1e-13
SIZES = [(1, 1), (2, 2), (3, 2)]


# -- admissible points -------------------------------------------------------------------------

def random_point(K, M, seed, N=24):
    """(Q, R, T) of random weights (a joint Gram matrix: admissible by construction), with
    student norms between 0.1 and 2 and, for half the seeds, students partly aligned with the
    teacher (R of order 1, as late in learning)."""
    rng = np.random.default_rng(seed)
    while True:
        B = rng.standard_normal((M, N))
        J = rng.standard_normal((K, N)) * rng.uniform(0.3, 1.4, size=(K, 1))
        if seed % 2:
            J += rng.uniform(0.5, 1.0) * B[rng.integers(0, M, size=K)]
        W = np.vstack([J, B])
        C = W @ W.T / N
        if np.linalg.eigvalsh(C).min() >= 0.05:   # far from singular (see the docstring)
            return C[:K, :K], C[:K, K:], C[K:, K:]


# -- the generated level system at L = 1 -------------------------------------------------------

def _state_values(system, Q, R):
    """The level-0 state in the module's STATE order (names R_in, Q_ij, 1-based)."""
    out = []
    for name in system.STATE:
        kind, idx = name.split("_")
        a, b = int(idx[0]) - 1, int(idx[1]) - 1
        out.append({"R": R, "Q": Q}[kind][a][b])
    return out


def _teacher_values(system, T):
    return [T[int(n[2]) - 1][int(n[3]) - 1] for n in system.TEACHER]


def generated_rhs(key, Q, R, T, eta, ctx, target, **extras):
    """dQ/dα, dR/dα (dicts by state name) and ε_g of the generated module at L = 1, order 2:
    Σ = I has characteristic polynomial λ − 1 (c_0 = −1, so X^(1) = X^(0)) and ν_1 = 1.
    ``extras`` (the family's label ``noise`` and weight ``decay``) go to ``rhs_levels``."""
    system = registry.load(key, target)
    conv = ctx.convert
    y = np.array([[conv(x) for x in _state_values(system, Q, R)]], dtype=object)
    t = np.array([[conv(x) for x in _teacher_values(system, T)]], dtype=object)
    if target == "numpy":
        y, t = y.astype(float), t.astype(float)
    eta = conv(eta)
    out = system.rhs_levels(y, t, np.array([conv(-1)], dtype=object),
                            np.array([conv(1)], dtype=object), eta, eta ** 2, ctx,
                            **{k: conv(x) for k, x in extras.items()})
    return dict(zip(system.STATE, out[0], strict=True)), system.eps_g(list(y[0]), list(t[0]), ctx)


def reference(Q, R, T, K, M, eta, lib, v=None, A=None, **params):
    """nn2pp's dQ, dR (dicts by state name) and ε_g; the paper's readouts unless given."""
    v = [lib.sqrt(lib.convert(M)) / K] * K if v is None else v
    A = [1 / lib.sqrt(lib.convert(M))] * M if A is None else A
    dQ, dR, dv = nn2pp.rhs(Q, R, T, v, A, lr=eta, lib=lib, **params)
    named = {f"R_{i + 1}{n + 1}": dR[i, n] for i in range(K) for n in range(M)}
    named |= {f"Q_{i + 1}{j + 1}": dQ[i, j] for i in range(K) for j in range(i, K)}
    return named, nn2pp.eps_g(Q, R, T, v, A, params.get("activation", "erf"), lib=lib)


def _worst(got: dict, ref: dict):
    """max |got − ref| and max |ref| over the state entries."""
    assert set(got) == set(ref)
    return (max(abs(mpmath.mpf(got[k]) - ref[k]) for k in ref), max(abs(x) for x in ref.values()))


@pytest.mark.parametrize("K, M", SIZES, ids=[f"K{k}M{m}" for k, m in SIZES])
@pytest.mark.parametrize("eta", ["0.1", "0.5", "2"])
def test_todays_model_matches_nn2pp(K, M, eta):
    """erf, paper readouts, order 2: the generated right-hand side and ε_g are nn2pp's."""
    key = SystemKey("erf", K, M)
    for seed in range(4):
        Q, R, T = random_point(K, M, seed)
        with mpmath.workdps(DPS):
            ref, ref_eps = reference(Q, R, T, K, M, mpmath.mpf(eta), nn2pp.MPMATH)
        with MpmathContext(DPS) as ctx:
            got, got_eps = generated_rhs(key, Q, R, T, mpmath.mpf(eta), ctx, "mpmath")
            err, scale = _worst(got, ref)
            assert err <= TOL_MP * scale, (seed, err, scale)
            assert abs(got_eps - ref_eps) <= TOL_MP * abs(ref_eps), seed
        system = registry.load(key, "numpy")
        got, got_eps = generated_rhs(key, Q, R, T, float(eta), system.ctx, "numpy")
        err, scale = _worst(got, ref)
        assert err <= TOL_F64 * scale, (seed, float(err), float(scale))
        assert abs(got_eps - ref_eps) <= TOL_F64 * abs(ref_eps), seed


# other fixed readouts: a system key carrying them (family API), exact texts v_1..v_K, u_1..u_M
READOUT_KEYS = {"none": ("1",) * 4, "1/K": ("1/2",) * 4, "1/sqrt(K)": ("sqrt(2)/2",) * 4,
                "explicit": ("7/10", "-2/5", "5/4", "1/2")}


def _readout_key(activation, readout):
    try:
        return SystemKey(activation, 2, 2, readout=readout)
    except TypeError as e:                      # a SystemKey without readouts
        pytest.fail(f"the solver refuses a variant the peer covers: SystemKey(readout=...): {e}")


@pytest.mark.parametrize("activation, kind", [("erf", k) for k in READOUT_KEYS]
                         + [("linear", "none")])
def test_readouts_match_nn2pp(activation, kind):
    """A system printed for other fixed readouts (K = M = 2): its right-hand side and ε_g are
    nn2pp's with v, A = those readouts, to rounding (the bounds of the paper's model)."""
    import sympy as sp
    texts = READOUT_KEYS[kind]
    key = _readout_key(activation, texts)
    for seed in range(3):
        Q, R, T = random_point(2, 2, seed)
        with mpmath.workdps(DPS):
            vals = [mpmath.mpf(str(sp.sympify(t).evalf(DPS + 10))) for t in texts]
            ref, ref_eps = reference(Q, R, T, 2, 2, mpmath.mpf("0.5"), nn2pp.MPMATH,
                                     v=vals[:2], A=vals[2:], activation=activation)
        with MpmathContext(DPS) as ctx:
            got, got_eps = generated_rhs(key, Q, R, T, mpmath.mpf("0.5"), ctx, "mpmath")
            err, scale = _worst(got, ref)
            assert err <= TOL_MP * scale, (seed, err, scale)
            assert abs(got_eps - ref_eps) <= TOL_MP * abs(ref_eps), seed
        system = registry.load(key, "numpy")
        got, got_eps = generated_rhs(key, Q, R, T, 0.5, system.ctx, "numpy")
        err, scale = _worst(got, ref)
        assert err <= TOL_F64 * scale, (seed, float(err), float(scale))
        assert abs(got_eps - ref_eps) <= TOL_F64 * abs(ref_eps), seed


NOISE_DECAY = [("erf", K, M) for K, M in SIZES] + [("linear", 2, 2)]


@pytest.mark.parametrize("activation, K, M", NOISE_DECAY,
                         ids=[f"{a}-K{k}M{m}" for a, k, m in NOISE_DECAY])
def test_noise_and_weight_decay_match_nn2pp(activation, K, M):
    """Label noise (variance 0.04) and weight decay (κ = 0.2) at η = 0.5, paper readouts: the
    family's right-hand side is nn2pp's with σ = 0.2 and wd = η κ = 0.1 (the documented map),
    to rounding (the bounds of the paper's model)."""
    import inspect
    key = SystemKey(activation, K, M)
    if "noise" not in inspect.signature(registry.load(key, "numpy").rhs_levels).parameters:
        pytest.fail("the solver refuses a variant the peer covers: rhs_levels(noise=, decay=)")
    extras = {"noise": "0.04", "decay": "0.2"}
    for seed in range(3):
        Q, R, T = random_point(K, M, seed)
        with mpmath.workdps(DPS):
            ref, _ = reference(Q, R, T, K, M, mpmath.mpf("0.5"), nn2pp.MPMATH,
                               sigma=mpmath.mpf("0.2"), wd=mpmath.mpf("0.1"),
                               activation=activation)
        with MpmathContext(DPS) as ctx:
            got, _ = generated_rhs(key, Q, R, T, mpmath.mpf("0.5"), ctx, "mpmath",
                                   **{k: mpmath.mpf(x) for k, x in extras.items()})
            err, scale = _worst(got, ref)
            assert err <= TOL_MP * scale, (seed, err, scale)
        system = registry.load(key, "numpy")
        got, _ = generated_rhs(key, Q, R, T, 0.5, system.ctx, "numpy",
                               **{k: float(x) for k, x in extras.items()})
        err, scale = _worst(got, ref)
        assert err <= TOL_F64 * scale, (seed, float(err), float(scale))


def test_reference_float64_agrees_with_its_mpmath_evaluation():
    """The reference itself in float64 vs 40 digits (the same bound as the generated module):
    the float64 comparisons above measure the module, not the reference's own rounding."""
    for seed in range(4):
        Q, R, T = random_point(3, 2, seed)
        with mpmath.workdps(DPS):
            ref, ref_eps = reference(Q, R, T, 3, 2, mpmath.mpf("0.5"), nn2pp.MPMATH)
        f64, f64_eps = reference(Q, R, T, 3, 2, 0.5, nn2pp.FLOAT64)
        err, scale = _worst(f64, ref)
        assert err <= TOL_F64 * scale
        assert abs(f64_eps - ref_eps) <= TOL_F64 * abs(ref_eps)


# -- pyscm's closed-form ε_g against derive.family's I2 ----------------------------------------

PAIRS = [("relu", "relu"), ("relu", "erf"), ("erf", "relu"), ("erf", "erf"), ("linear", "linear")]


def _family_pair(student, teacher):
    """derive.family's I2 for (student slot, teacher slot) pairs, printed for mpmath."""
    import sympy as sp
    from derive.family import I2
    from derive.integrals import covariance_symbols
    C = covariance_symbols(2)
    args = (C[0, 0], C[0, 1], C[1, 1])
    q = sp.Symbol("q", positive=True)
    out = {}
    for a, b in ((student, student), (teacher, teacher), (student, teacher)):
        expr = I2(a, b, C)
        out[a, b] = sp.lambdify(args, expr, "mpmath")
        # one field with itself: substituted exactly, as the hierarchy does (numerically,
        # sqrt(c11 c22 - c12²) and asin(c12/(√c11 √c22)) of the ReLU form leave their domain
        # by a rounding error)
        out[a, b, "diag"] = sp.lambdify((q,), expr.xreplace(dict.fromkeys(args, q)), "mpmath")
    return out


def family_eps_g(Q, R, T, student, teacher, v, u):
    """ε_g = ½ <(ζ − σ)²> at L = 1 assembled from derive.family.I2 (the family conventions:
    σ = Σ v_i g_s(x_i), ζ = Σ u_n g_t(y_n)), and the sum of the absolute values of its terms."""
    I2 = _family_pair(student, teacher)
    K, M = len(v), len(u)
    def self_pair(g, X, a, b):
        if a == b:
            return I2[g, g, "diag"](X[a][a])
        return I2[g, g](X[a][a], X[a][b], X[b][b])
    terms = [v[i] * v[j] * self_pair(student, Q, i, j) for i in range(K) for j in range(K)]
    terms += [u[n] * u[m] * self_pair(teacher, T, n, m) for n in range(M) for m in range(M)]
    terms += [-2 * v[i] * u[n] * I2[student, teacher](Q[i][i], R[i][n], T[n][n])
              for i in range(K) for n in range(M)]
    return sum(terms) / 2, sum(abs(t) for t in terms) / 2


def _readouts(K, M, normalisation):
    """The family's readouts (exact, as mpf at the current precision)."""
    K_, M_ = mpmath.mpf(K), mpmath.mpf(M)
    return {"paper": ([mpmath.sqrt(M_) / K_] * K, [1 / mpmath.sqrt(M_)] * M),
            "1/K": ([1 / K_] * K, [1 / M_] * M),
            "none": ([mpmath.mpf(1)] * K, [mpmath.mpf(1)] * M)}[normalisation]


@pytest.mark.parametrize("student, teacher", PAIRS, ids=[f"{s}-{t}" for s, t in PAIRS])
@pytest.mark.parametrize("normalisation", ["none", "1/K", "paper"])
def test_pyscm_closed_eps_g_matches_the_family_integrals(student, teacher, normalisation):
    """pyscm's ε_g (its ReLU–ReLU form is written with atan, the family's with asin; its
    mixed forms by Stein's lemma) equals ½ Σ readouts × derive.family.I2 at 40 digits and in
    float64.  Bounds relative to the sum of |terms| (ε_g itself may cancel): 40 digits 1e-34,
    float64 1e-14 (a dozen terms, each a few ulp: asin/atan/sqrt are correctly rounded to
    ~1 ulp, and no covariance is near singular, see random_point)."""
    for K, M in SIZES:
        for seed in range(3):
            Q, R, T = random_point(K, M, seed)
            with mpmath.workdps(DPS):
                v, u = _readouts(K, M, normalisation)
                Qm, Rm, Tm = ([[mpmath.mpf(x) for x in row] for row in X] for X in (Q, R, T))
                ref, scale = family_eps_g(Qm, Rm, Tm, student, teacher, v, u)
                got = pyscm.eps_g(Q, R, T, teacher, student, lib=nn2pp.MPMATH, v=v, u=u)
                assert abs(got - ref) <= TOL_MP * scale, (K, M, seed, got, ref)
                if normalisation != "paper":      # pyscm's own switch gives the same readouts
                    own = pyscm.eps_g(Q, R, T, teacher, student, lib=nn2pp.MPMATH,
                                      normalise=normalisation == "1/K")
                    assert abs(own - ref) <= TOL_MP * scale
            f64 = pyscm.eps_g(Q, R, T, teacher, student, v=[float(x) for x in v],
                              u=[float(x) for x in u])
            assert abs(f64 - ref) <= 1e-14 * scale, (K, M, seed, f64, float(ref))


RELU_SYSTEMS = [("relu", "relu", 1, 1), ("relu", "relu", 2, 2), ("relu", "erf", 2, 2),
                ("erf", "relu", 2, 2)]


@pytest.mark.parametrize("student, teacher, K, M", RELU_SYSTEMS,
                         ids=[f"{s}-{t}-K{k}M{m}" for s, t, k, m in RELU_SYSTEMS])
def test_generated_relu_eps_g_matches_pyscm(student, teacher, K, M):
    """The ε_g printed into a family system (student/teacher activations, paper readouts) at
    L = 1 is pyscm's closed form: 40 digits and float64, bounds as above."""
    try:
        key = SystemKey(student, K, M, teacher=teacher)
    except (TypeError, ValueError) as e:        # a SystemKey without the family's activations
        pytest.fail(f"the solver refuses a pair the peer covers: SystemKey({student!r}, "
                    f"teacher={teacher!r}): {e}")
    for seed in range(3):
        Q, R, T = random_point(K, M, seed)
        with mpmath.workdps(DPS):
            v, u = _readouts(K, M, "paper")
            ref = pyscm.eps_g(Q, R, T, teacher, student, lib=nn2pp.MPMATH, v=v, u=u)
            scale = pyscm.eps_g(Q, R, T, teacher, student, lib=nn2pp.MPMATH, v=v, u=u,
                                absolute=True)
        with MpmathContext(DPS) as ctx:
            _, got = generated_rhs(key, Q, R, T, mpmath.mpf("0.5"), ctx, "mpmath")
            assert abs(got - ref) <= TOL_MP * scale, (seed, got, ref)
        system = registry.load(key, "numpy")
        _, got = generated_rhs(key, Q, R, T, 0.5, system.ctx, "numpy")
        assert abs(got - ref) <= 1e-14 * scale, (seed, got, float(ref))


def test_relu_eps_g_at_an_anti_aligned_student():
    """A ReLU student that is the negated teacher (R = −√(QT), ρ = −1): relu(x) relu(−x) = 0,
    so ε_g = ½ (Q/2 + T/2) = 0.5 at Q = T = 1; derive.family's I2 and the reference's limit
    agree.  pyscm's published shortcut for c12² ≈ c11 c22 returns c12/2 whatever the sign, an
    ε_g of 1.0 here, and stays wrong by ≈ |c12|/2 for every ρ < −(1 − 5e-6); for ρ near +1 the
    shortcut costs at most ~(1 − ρ²)^(3/2) ≤ 1e-7 relative."""
    with mpmath.workdps(DPS):
        one = [mpmath.mpf(1)]
        Q, R, T = [[mpmath.mpf(1)]], [[mpmath.mpf(-1)]], [[mpmath.mpf(1)]]
        ref, _ = family_eps_g(Q, R, T, "relu", "relu", one, one)
        got = pyscm.eps_g(Q, R, T, "relu", "relu", lib=nn2pp.MPMATH)
        assert abs(ref - mpmath.mpf("0.5")) <= TOL_MP and abs(got - ref) <= TOL_MP
        shortcut = pyscm.relu_relu_as_published
        assert (shortcut(1, 1, 1) + shortcut(1, 1, 1) - 2 * shortcut(1, -1, 1)) / 2 == 1.0
        for rho in ("0.999999", "0.9999999"):     # inside the shortcut's band, ρ > 0
            c12 = mpmath.mpf(rho)
            exact = pyscm.relu_relu(1, c12, 1, nn2pp.MPMATH)
            assert abs(pyscm.relu_relu_as_published(1, c12, 1, nn2pp.MPMATH) - exact) \
                <= (1 - c12 ** 2) ** 1.5 * exact


# -- the family's variants against nn2pp, through the public API -------------------------------
#
# Noise, weight decay, a trained readout and other readouts are spec keys of the family
# (the family's conventions: [model] normalisation / student_readout / teacher_readout / readout,
# [training] noise / weight_decay / eta_readout).  Each variant is solved at L = 1 by
# ``solvers.solve`` (12 verified digits) and compared with nn2pp's right-hand side, mapped by
# ``nn2pp.peer_parameters``, integrated by SciPy's DOP853 at rtol 1e-13 in float64.  Bound on
# ε_g (relative) and R^(1), Q^(1) (relative to their largest entry): 1e-11 — the solve's 12
# verified digits (≤ 1e-12) plus DOP853's error over α ≤ 2 (6e-14, measured against
# rtol = 2.2e-14); a missing or mis-scaled term moves them by far more (the noise term at
# σ² = 0.04 changes ε_g(2) by 5e-3).  A variant whose spec keys the solver refuses fails,
# naming the key.

import solvers                                   # noqa: E402
from scipy.integrate import solve_ivp            # noqa: E402

ALPHAS = [0.5, 1.0, 2.0]
TOL_TRAJ = 1e-11


def _flat(Q, R, v):
    K = len(v)
    return np.concatenate([np.asarray(Q, float)[np.triu_indices(K)], np.asarray(R, float).ravel(),
                           np.asarray(v, float)])


def _unflat(y, K, M):
    Q = np.zeros((K, K))
    Q[np.triu_indices(K)] = y[:K * (K + 1) // 2]
    Q = Q + np.triu(Q, 1).T
    R = y[K * (K + 1) // 2: K * (K + 1) // 2 + K * M].reshape(K, M)
    return Q, R, y[-K:]


def nn2pp_curve(Q, R, T, v, A, alphas, rtol=1e-13, **params):
    """ε_g, R, Q of nn2pp's ODE (float64 reference, DOP853) at ``alphas``."""
    K, M = len(v), len(A)

    def f(_, y):
        q, r, vv = _unflat(y, K, M)
        dQ, dR, dv = nn2pp.rhs(q, r, T, vv, A, **params)
        return _flat(dQ, dR, dv)

    sol = solve_ivp(f, (0, alphas[-1]), _flat(Q, R, v), method="DOP853", t_eval=alphas,
                    rtol=rtol, atol=1e-16)
    assert sol.success, sol.message
    out = []
    for y in sol.y.T:
        q, r, vv = _unflat(y, K, M)
        out.append((nn2pp.eps_g(q, r, T, vv, A, params.get("activation", "erf")), r, q))
    return out


def _exact(x) -> str:
    from decimal import Decimal
    return str(Decimal(float(x)))                # every digit of the binary number


def _spec(Q, R, T, eta, model, training):
    mat = lambda X: [[_exact(x) for x in row] for row in X]   # noqa: E731
    K, M = np.shape(R)
    return {"model": {"activation": "erf", "K": int(K), "M": int(M), **model},
            "data": {"L": 1, "beta": 1.0, "N": 64},
            "training": {"eta": eta, "init": "explicit", **training},
            "init": {"levels": {"R": [mat(R)], "Q": [mat(Q)], "T": [mat(T), mat(T)]}},
            "solve": {"alphas": ALPHAS, "basis": "levels", "digits": 12}}


def _solve_or_fail(spec, keys):
    """solvers.solve(spec); a refusal naming one of the variant's ``keys`` (an unknown key, or
    a variant it does not integrate) fails the test with its message: a regression there must
    not turn into a skip."""
    try:
        return solvers.solve(spec)
    except (solvers.SpecError, ValueError) as e:   # a refused option: ValueError (one line)
        if any(k in str(e) for k in keys):
            pytest.fail(f"the solver refuses a variant the peer covers: {e}")
        raise


V_EXPLICIT, U_EXPLICIT = ["0.7", "-0.4"], ["1.25", "0.5"]

# name: ([model] keys, [training] keys, η, nn2pp readouts (v, A) or a normalisation, nn2pp
# parameters beyond lr = η)
VARIANTS = {
    "paper (today's model)": ({}, {}, "0.5", "paper", {}),
    "normalisation none": ({"normalisation": "none"}, {}, "0.5", "none", {}),
    "normalisation 1/K (pyscm)": ({"normalisation": "1/K"}, {}, "0.5", "1/K", {}),
    "normalisation 1/sqrt(K)": ({"normalisation": "1/sqrt(K)"}, {}, "0.5", "1/sqrt(K)", {}),
    "explicit readouts": ({"student_readout": V_EXPLICIT, "teacher_readout": U_EXPLICIT}, {},
                          "0.5", (V_EXPLICIT, U_EXPLICIT), {}),
    "linear, none": ({"activation": "linear", "normalisation": "none"}, {}, "0.2", "none",
                     {"activation": "linear"}),
    "noise": ({}, {"noise": "0.04"}, "0.5", "paper", {"noise": 0.04}),
    "weight decay": ({}, {"weight_decay": "0.2"}, "0.5", "paper", {"weight_decay": 0.2}),
    "noise + decay, linear": ({"activation": "linear"}, {"noise": "0.09", "weight_decay": "0.5"},
                              "0.2", "paper", {"activation": "linear", "noise": 0.09,
                                               "weight_decay": 0.5}),
    "trained readout": ({"readout": "trained"}, {"eta_readout": "0.3"}, "0.5", "paper",
                        {"both": True, "eta_readout": 0.3}),
    "trained, none": ({"readout": "trained", "normalisation": "none"}, {"eta_readout": "0.8"},
                      "0.3", "none", {"both": True, "eta_readout": 0.8}),
    "trained + noise + decay": ({"readout": "trained"},
                                {"eta_readout": "0.3", "noise": "0.04", "weight_decay": "0.2"},
                                "0.5", "paper",
                                {"both": True, "eta_readout": 0.3, "noise": 0.04,
                                 "weight_decay": 0.2}),
    # nn2pp's one wd decays both layers: wd = η κ = 0.1 = η_v κ_v with η_v = 0.25, κ_v = 0.4
    "trained + noise + decay of both layers": (
        {"readout": "trained"},
        {"eta_readout": "0.25", "noise": "0.04", "weight_decay": "0.2",
         "weight_decay_readout": "0.4"},
        "0.5", "paper",
        {"both": True, "eta_readout": 0.25, "noise": 0.04, "weight_decay": 0.2,
         "decay_readout": True}),
}


def _nn2pp_readouts(kind, K, M):
    if isinstance(kind, tuple):
        return [float(x) for x in kind[0]], [float(x) for x in kind[1]]
    return {"paper": ([np.sqrt(M) / K] * K, [1 / np.sqrt(M)] * M),
            "none": ([1.0] * K, [1.0] * M),
            "1/K": ([1 / K] * K, [1 / M] * M),
            "1/sqrt(K)": ([1 / np.sqrt(K)] * K, [1 / np.sqrt(M)] * M)}[kind]


def _nn2pp_params(eta, family):
    """nn2pp's parameters for a family variant (the documented map) and the family's model:
    with a trained readout the weight decay stays off the readout."""
    family = dict(family)
    activation = family.pop("activation", "erf")
    both = family.pop("both", False)
    decay_readout = family.pop("decay_readout", False)
    params = nn2pp.peer_parameters(eta, **family)
    return {**params, "activation": activation, "both": both, "decay_readout": decay_readout}


@pytest.mark.parametrize("K, M, variant", [(2, 2, v) for v in VARIANTS]
                         + [(3, 2, "trained + noise + decay of both layers")])
def test_family_variant_matches_nn2pp(K, M, variant):
    """The family's solve of each variant at L = 1 follows nn2pp's ODE (mapped conventions)."""
    model, training, eta, readouts, family = VARIANTS[variant]
    Q, R, T = random_point(K, M, 1)
    result = _solve_or_fail(_spec(Q, R, T, eta, model, training), [*model, *training])
    v, A = _nn2pp_readouts(readouts, K, M)
    ref = nn2pp_curve(Q, R, T, v, A, ALPHAS, **_nn2pp_params(float(eta), family))
    for k, (e, r, q) in enumerate(ref):
        assert abs(result.eps_g[k] - e) <= TOL_TRAJ * abs(e), (variant, k, result.eps_g[k], e)
        scale = max(np.abs(r).max(), np.abs(q).max())
        assert np.abs(np.asarray(result.R1[k], float) - r).max() <= TOL_TRAJ * scale
        assert np.abs(np.asarray(result.Q1[k], float) - q).max() <= TOL_TRAJ * scale


def test_nn2pp_decays_a_trained_readout_and_the_family_default_does_not():
    """nn2pp's dv/dα carries −wd·v with a trained readout; the family's does only with
    weight_decay_readout (default 0).  The two right-hand sides differ by exactly that term,
    and dQ, dR do not differ at all."""
    Q, R, T = random_point(2, 2, 1)
    v, A = [0.6, 0.9], [0.7, 0.7]
    params = dict(lr=0.5, lr2=0.3, wd=0.1, sigma=0.2, both=True)
    theirs = nn2pp.rhs(Q, R, T, v, A, **params)
    ours = nn2pp.rhs(Q, R, T, v, A, decay_readout=False, **params)
    assert all(np.array_equal(a, b) for a, b in zip(theirs[:2], ours[:2], strict=True))
    assert np.allclose(np.asarray(ours[2] - theirs[2], float), 0.1 * np.asarray(v), rtol=1e-15)


def test_reference_examples_run():
    """The examples in the reference modules' docstrings hold."""
    import doctest
    for module in (nn2pp, pyscm):
        failed, tried = doctest.testmod(module)
        assert tried > 0 and failed == 0, module.__name__
