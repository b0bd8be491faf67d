"""The trained readout in the ODEs: the student's second-layer weights v_1..v_K join the state.

dv_i/dα = η_v <g_s(x_i) Δ> (level 1: v multiplies a unit's output, not a generalised field), and
v enters every coefficient of the level equations (the factor v_i of the gradient, the v_k of
Δ, v_i v_j of the η² term and of the label-noise term) and ε_g.  What can fail, each from an
independent route:

* The printed right-hand side of a trained system, evaluated at v = the paper's readouts,
  against the fixed-readout system of the same pair (for erf/erf a different derivation: the
  paper's hand-written sums of derive/hierarchy.py, not the general-readout ones), at 40 digits.
* The printed dv/dα against two-dimensional Gaussian quadrature (mpmath, 30 digits) of
  <g_s(x_i) g(z)> for a ReLU student (whose I2 has a kink the quadrature is split at).
* The variant matrix (every activation pair x K, M <= 2 x {noise, decay, batch} x schedules,
  trained): ε_g(0) against the closed form of derive/family's I2; v(α) - v(0) at α = 1e-3
  against α η_v <g_s(x_i) Δ> of the same closed forms (first order); a vanishing η_v
  reproduces the fixed-readout solve to the verified digits.
* Levels against modes at L = 16 (and 64 under ``make verify``): the second basis.
* The simulation (the family loop: SGD on N-dimensional weights with the readout learned):
  ε_g and v within the finite-size scale 3/√N, and the deviation falling like N^(-1/2).
* nn2pp's published ODE for a trained readout is in tests/test_peer_equations.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from itertools import product

import mpmath
import numpy as np
import pytest
import sympy as sp

import solvers
from derive.family.integrals import I2
from derive.keys import SystemKey, paper_readout
from solvers.core.numbers import MpmathContext
from solvers.core.registry import load
# the matrix's realisable initial overlaps (two modes) and their level-1 sums, shared
from test_variant_matrix import LAM, _init, _level1  # noqa: E402

pytestmark = [pytest.mark.closed_form, pytest.mark.second_basis]

ACTS = ["erf", "linear", "relu", "x**2", "x**3 - 3*x"]
PAIRS = list(product(ACTS, ACTS))
KMS = [(1, 1), (1, 2), (2, 1), (2, 2)]
NOISE, DECAY, BATCH = 1, 2, 4
DIGITS = 12


@pytest.fixture(scope="session")
def trained_cache(tmp_path_factory):
    """One generated-module cache for this file, shared by the xdist workers."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    path = base / "trained-readout-cache"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture
def cache(trained_cache, monkeypatch):
    monkeypatch.setenv("SCALING_ODES_CACHE", str(trained_cache))
    return trained_cache


def _point(K, M, seed):
    """A realisable level-1 point (R, Q, T) and readouts v (exact Fractions)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(K + M, K + M + 2)) / np.sqrt(K + M + 2)
    G = A @ A.T + 0.2 * np.eye(K + M)
    F = np.vectorize(lambda x: Fraction(float(x)).limit_denominator(10**6))(G)
    v = [Fraction(float(x)).limit_denominator(1000) for x in rng.uniform(0.3, 1.2, K)]
    return F[:K, K:], F[:K, :K], F[K:, K:], v


def _flat(R, Q, T, K, M):
    iu, it = np.triu_indices(K), np.triu_indices(M)
    return (list(R.reshape(-1)) + [Q[i, j] for i, j in zip(*iu, strict=True)],
            [T[n, m] for n, m in zip(*it, strict=True)])


# -- the printed equations ---------------------------------------------------------------------

@pytest.mark.parametrize("student, teacher, K, M", [("erf", "erf", 2, 2), ("relu", "erf", 2, 1),
                                                    ("x**2", "relu", 1, 2)])
def test_trained_rhs_at_the_fixed_readouts_is_the_fixed_system(cache, student, teacher, K, M):
    fixed = load(SystemKey(student, K, M, teacher=teacher), "mpmath")
    trained = load(SystemKey(student, K, M, teacher=teacher, trained=True), "mpmath")
    R, Q, T = _point(K, M, 3)[:3]
    with MpmathContext(40) as ctx:
        c = ctx.convert
        y, t = _flat(R, Q, T, K, M)
        y = np.array([[c(x) for x in y]], dtype=object)
        t = np.array([[c(x) for x in t]], dtype=object)
        v = np.array([mpmath.sqrt(M) / K] * K, dtype=object)
        args = (t, np.array([c(1)], dtype=object), np.array([c(Fraction(1, 3))], dtype=object),
                c(Fraction(1, 2)), c(Fraction(1, 4)), ctx)
        want = fixed.rhs_modes(y, *args, noise=c(Fraction(1, 10)), decay=c(Fraction(1, 20)))
        got = trained.rhs_modes(y, *args, noise=c(Fraction(1, 10)), decay=c(Fraction(1, 20)),
                                readout=v)
        for a, b in zip(got.reshape(-1), want.reshape(-1), strict=True):
            assert abs(a - b) <= mpmath.mpf(10) ** -36 * (1 + abs(b)), (a, b)
        e1 = fixed.eps_g(y[0], t[0], ctx)
        e2 = trained.eps_g(np.concatenate([y[0], v]), t[0], ctx)
        assert abs(e1 - e2) <= mpmath.mpf(10) ** -36 * abs(e1)
        with pytest.raises(ValueError, match="trained readout"):
            trained.rhs_modes(y, *args)           # the v is required, never defaulted


def _relu_times(inner, a, b, c):
    """<relu(x) f(z)> over (x, z) Gaussian with covariance [[a, b], [b, c]]: x = √a s,
    z = (b/√a) s + q w with q = √(c - b²/a); the w-average of f is ``inner(μ, q)`` (closed
    form), the s-integral a one-dimensional quadrature over s > 0 (where relu(x) ≠ 0)."""
    sa = mpmath.sqrt(a)
    r, q = b / sa, mpmath.sqrt(c - b * b / a)
    phi = lambda x: mpmath.exp(-x * x / 2) / mpmath.sqrt(2 * mpmath.pi)   # noqa: E731
    return mpmath.quad(lambda s: phi(s) * sa * s * inner(r * s, q), [0, 4, mpmath.inf])


def _erf_avg(mu, q):
    """E_w erf((μ + q w)/√2) = erf(μ / √(2 (1 + q²)))."""
    return mpmath.erf(mu / mpmath.sqrt(2 * (1 + q * q)))


def _relu_avg(mu, q):
    """E_w relu(μ + q w) = μ Φ(μ/q) + q φ(μ/q)."""
    if q == 0:
        return max(mu, 0)
    t = mu / q
    return mu * mpmath.ncdf(t) + q * mpmath.npdf(t)


def test_readout_rate_against_quadrature(cache):
    """ReLU student, erf teacher, K = M = 2: dv_i/dα / η_v = Σ_m u_m <relu(x_i) erf(y_m/√2)>
    - Σ_k v_k <relu(x_i) relu(x_k)>, each reduced to a one-dimensional quadrature."""
    K, M = 2, 2
    R, Q, T, v = _point(K, M, 5)
    sys_ = load(SystemKey("relu", K, M, teacher="erf", trained=True), "mpmath")
    mp = lambda x: mpmath.mpf(x.numerator) / x.denominator   # noqa: E731
    with mpmath.workdps(30), MpmathContext(30) as ctx:
        y, t = _flat(R, Q, T, K, M)
        args = [ctx.convert(x) for x in y] + [ctx.convert(x) for x in v]
        got = sys_.readout_rates(np.array(args, dtype=object),
                                 np.array([ctx.convert(x) for x in t], dtype=object), ctx)
        u = 1 / mpmath.sqrt(M)
        for i in range(K):
            want = sum(u * _relu_times(_erf_avg, mp(Q[i, i]), mp(R[i, m]), mp(T[m, m]))
                       for m in range(M))
            want -= sum(mp(v[k]) * _relu_times(_relu_avg, mp(Q[i, i]), mp(Q[i, k]),
                                               mp(Q[k, k])) for k in range(K))
            # smooth integrands on [0, inf): quadrature good to ~28 of the 30 digits
            assert abs(got[i] - want) <= mpmath.mpf(10) ** -25 * (1 + abs(want)), (i, got[i],
                                                                                    want)


# -- the variant matrix, trained ------------------------------------------------------------

ETA, ETA_V, ETA_CUBIC = "0.1", "0.2", "0.02"
NOISE_V, KAPPA, B = "0.1", "0.05", 2
A_SMALL = 0.001
ALPHAS = [0, A_SMALL / 2, A_SMALL, 0.25]
# the readout-rate check: D = 2 d(h/2) - d(h), d(h) = (v(h) - v(0)) / h, is η_v rate(0) up to
# -η_v rate''(0) h²/12 (Richardson: the O(h) term cancels).  Measured over the K, M <= 4 matrix
# (1806 checks, subsets 0 and 7): max |D/η_v - rate| = 7.0e-7 (x**2/x**2, K = 2, M = 4, where
# rate = 2.8), i.e. |rate''| ~ 8; 5e-6 allows |rate''| up to 60 (7x the largest seen), and a
# first-order check without Richardson failed on near-cancelling rates (rate ~ 1e-3, where the
# O(h) term is 3 % of it); plus 1e-6 relative (v is output in float64: 1e-16 / 5e-4 per quotient)
RATE_ABS, RATE_REL = 5e-6, 1e-6
V0 = {1: ["0.75"], 2: ["0.75", "-0.5"]}           # not the paper's: v must be read from the spec


def _eta(student):
    # the cubic student diverges near α = 0.2 at η = 0.1 (see tests/test_variant_matrix.py)
    return ETA_CUBIC if student == "x**3 - 3*x" else ETA


def _doc(student, teacher, K, M, subset, *, trained=True, eta_v=ETA_V, basis=None,
         alphas=ALPHAS, schedule=None):
    R, Q, T = _init(K, M)
    tr = {"eta": _eta(student), "init": "explicit",
          "noise": NOISE_V if subset & NOISE else "0",
          "weight_decay": KAPPA if subset & DECAY else "0",
          "batch_size": B if subset & BATCH else 1}
    model = {"student_activation": student, "teacher_activation": teacher, "K": K, "M": M,
             "student_readout": V0[K], "teacher_readout": ["1"] * M}
    if trained:
        model["readout"] = "trained"
        tr["eta_readout"] = eta_v
    if schedule is not None:
        tr["schedule"] = schedule
    doc = {"model": model, "data": {"eigenvalues": [float(x) for x in LAM]}, "training": tr,
           "init": {"modes": {"R": R, "Q": Q, "T": T}},
           "solve": {"alphas": alphas, "basis": basis or "levels", "digits": DIGITS}}
    return doc


def _closed(student, teacher, K, M):
    """(ε_g, [<g_s(x_i) Δ>]) at the initial overlaps and readouts, from derive/family's I2."""
    R, Q, T = _level1(K, M)
    v = [sp.Rational(x) for x in V0[K]]
    u = [sp.Integer(1)] * M

    def i2(g1, g2, a, b, c):
        return I2(g1, g2, sp.Matrix([[a, b], [b, c]]))
    st = [[i2(student, teacher, Q[i, i], R[i, n], T[n, n]) for n in range(M)] for i in range(K)]
    ss = [[i2(student, student, Q[i, i], Q[i, j], Q[j, j]) for j in range(K)] for i in range(K)]
    tt = sum(u[n] * u[m] * i2(teacher, teacher, T[n, n], T[n, m], T[m, m])
             for n in range(M) for m in range(M))
    eps = (tt - 2 * sum(v[i] * u[n] * st[i][n] for i in range(K) for n in range(M))
           + sum(v[i] * v[j] * ss[i][j] for i in range(K) for j in range(K))) / 2
    rates = [sum(u[m] * st[i][m] for m in range(M)) - sum(v[k] * ss[i][k] for k in range(K))
             for i in range(K)]
    return eps, rates


def _run(doc, tag):
    r = solvers.solve(doc)
    eps = [mpmath.mpf(e) for e in r.eps_g]
    assert all(mpmath.isfinite(e) and e > 0 for e in eps), (tag, eps)
    assert r.meta["agreement_digits"] >= DIGITS, (tag, r.meta["agreement_digits"])
    assert "/taylor/" in r.meta["route"], (tag, r.meta["route"])
    return r, eps


def _check(student, teacher, K, M, subset, r, eps):
    tag = (student, teacher, K, M, subset)
    with mpmath.workdps(30):
        e0, rates = _closed(student, teacher, K, M)
        ref = mpmath.mpf(sp.N(e0, 30))
        assert abs(eps[0] - ref) <= 2 * mpmath.mpf(10) ** -DIGITS * abs(ref), (tag, eps[0], ref)
        v = np.asarray(r.v, float)
        assert v.shape == (len(ALPHAS), K)
        assert np.array_equal(v[0], [float(Fraction(x)) for x in V0[K]]), (tag, v[0])
        eta_v, h = float(Fraction(ETA_V)), A_SMALL
        for i in range(K):
            rate = float(sp.N(rates[i], 20))
            D = 2 * (v[1, i] - v[0, i]) / (h / 2) - (v[2, i] - v[0, i]) / h
            err = abs(D / eta_v - rate)
            assert err <= RATE_ABS + RATE_REL * abs(rate), (tag, i, D / eta_v, rate)


def _subsets(p, q):
    # all on, plus one rotating subset: over its four (K, M) each pair meets four of the
    # eight subsets besides 7; with PAIRS ordered, neighbouring pairs take the others
    return sorted({7, (p + 3 * q) % 7})


def _id(p, q):
    short = {"x**2": "x2", "x**3 - 3*x": "x3m3x"}
    (s, t), (K, M) = PAIRS[p], KMS[q]
    return f"{short.get(s, s)}-{short.get(t, t)}-K{K}M{M}"


def test_trained_covering_meets_every_subset():
    seen = {sub for p in range(len(PAIRS)) for q in range(len(KMS)) for sub in _subsets(p, q)}
    assert seen == set(range(8))
    for p in range(len(PAIRS)):
        assert len({sub for q in range(len(KMS)) for sub in _subsets(p, q)}) >= 4


@pytest.mark.parametrize("p, q", [(p, q) for p in range(len(PAIRS)) for q in range(len(KMS))],
                         ids=[_id(p, q) for p in range(len(PAIRS)) for q in range(len(KMS))])
def test_trained_variant_matrix(cache, p, q):
    student, teacher = PAIRS[p]
    K, M = KMS[q]
    for subset in _subsets(p, q):
        r, eps = _run(_doc(student, teacher, K, M, subset), (student, teacher, K, M, subset))
        _check(student, teacher, K, M, subset, r, eps)


def _full_params():
    short = {"x**2": "x2", "x**3 - 3*x": "x3m3x"}
    return [pytest.param(s, t, K, M, id=f"{short.get(s, s)}-{short.get(t, t)}-K{K}M{M}")
            for (s, t), K, M in product(PAIRS, range(1, 5), range(1, 5))]


@pytest.mark.full
@pytest.mark.parametrize("student, teacher, K, M", _full_params())
def test_trained_variant_matrix_full(cache, student, teacher, K, M):
    """K, M <= 4 under make verify: every pair, all options off and all on."""
    V0.setdefault(K, [f"{0.75 - 0.1 * i:.2f}" for i in range(K)])      # exact decimals
    for subset in (0, 7):
        r, eps = _run(_doc(student, teacher, K, M, subset), (student, teacher, K, M, subset))
        _check(student, teacher, K, M, subset, r, eps)


@pytest.mark.parametrize("student, teacher", PAIRS,
                         ids=[_id(p, 0).rsplit("-", 1)[0] for p in range(len(PAIRS))])
def test_trained_schedules_and_vanishing_eta_v(cache, student, teacher):
    """K = M = 1, all options on: steps and power schedules run trained; η_v = 1e-40 gives the
    fixed-readout solve to the verified digits (v moves by ~1e-41)."""
    for sched in ({"kind": "steps", "alphas": [0.1], "etas": ["0.01"]},
                  {"kind": "power", "alpha0": "0.1", "p": 1}):
        r, eps = _run(_doc(student, teacher, 1, 1, 7, schedule=sched), (student, teacher, sched))
        _check(student, teacher, 1, 1, 7, r, eps)
    _, still = _run(_doc(student, teacher, 1, 1, 7, eta_v="1e-40"), (student, teacher, "1e-40"))
    fixed = [mpmath.mpf(e) for e in solvers.solve(_doc(student, teacher, 1, 1, 7,
                                                       trained=False)).eps_g]
    for a, b in zip(still, fixed, strict=True):
        assert abs(a - b) <= 2 * mpmath.mpf(10) ** -DIGITS * abs(b), (student, teacher, a, b)


def test_trained_readout_routes_refused_in_one_line(cache):
    from solvers.app.solve import problem_of
    from solvers.app.spec import parse_spec
    from solvers.hierarchy.odes import integrate_problem
    problem = problem_of(parse_spec(_doc("erf", "erf", 2, 2, 0)))
    for kw in ({"arithmetic": "scipy"},):
        with pytest.raises(ValueError, match="trained readout") as exc:
            integrate_problem(problem, [0, 1], basis="modes", **kw)
        assert "\n" not in str(exc.value)
    sys_ = load(problem.key, "numpy")
    with pytest.raises(ValueError, match="Jacobian"):
        sys_.jac_modes(np.zeros((2, 7)), np.zeros((2, 3)), np.ones(2), np.ones(2), 0.1, 0.0)


# -- the second basis ------------------------------------------------------------------------

def _power_law_doc(L, basis, digits=10):
    return {"model": {"activation": "erf", "K": 2, "M": 2, "readout": "trained"},
            "data": {"L": L, "beta": 1.0, "N": 256},
            "training": {"eta": 0.5, "eta_readout": 0.3, "sigma_J": 0.3, "seed": 4},
            "solve": {"alpha_max": 20, "n_points": 5, "spacing": "linear", "basis": basis,
                      "digits": digits}}


def _levels_vs_modes(L):
    lv = solvers.solve(_power_law_doc(L, "levels"))
    md = solvers.solve(_power_law_doc(L, "modes"))
    for a, b in zip(lv.eps_g, md.eps_g, strict=True):
        # each claims 10 verified digits
        assert abs(a - b) <= 2e-10 * abs(b), (L, a, b)
    assert np.allclose(lv.v, md.v, rtol=1e-10, atol=0), (L, lv.v, md.v)
    assert not np.allclose(lv.v[-1], lv.v[0], rtol=1e-3)       # the readout did move


def test_levels_and_modes_agree_at_L16(cache):
    _levels_vs_modes(16)


@pytest.mark.full
def test_levels_and_modes_agree_at_L64(cache):
    _levels_vs_modes(64)


# -- the simulation --------------------------------------------------------------------------

NS = (256, 1024, 4096)
SEEDS = (0, 1, 2)
SIM_VARIANTS = {
    "erf, trained": ({}, {"eta_readout": 0.3}),
    "erf, trained, readouts 1, noise, decay, batch 2": (
        {"normalisation": "none"},
        {"eta_readout": 0.2, "noise": 0.01, "weight_decay": 0.05, "batch_size": 2}),
    "relu/erf, trained": ({"student_activation": "relu", "teacher_activation": "erf"},
                          {"eta_readout": 0.3}),
    # the readout decayed too: η_v κ_v = 0.15 shrinks v by ~e^-1.5 over α <= 10 without the
    # gradient, so a decay missing on either side is far outside 3/√N
    "erf, trained, both layers decayed": ({}, {"eta_readout": 0.3, "weight_decay": 0.1,
                                               "weight_decay_readout": 0.5}),
}
SLOW = ("relu/erf, trained",)


def _sim_spec(name, N, seeds=SEEDS):
    from compare_support import variant_spec
    model, training = SIM_VARIANTS[name]
    return variant_spec({"readout": "trained", **model}, training, N, seeds)


def _compare(name, N):
    from compare_support import compared
    return compared(_sim_spec(name, N))


def _law(name):
    # the family's N^-1/2 criterion (tests/test_family_ode_vs_sim.py), on these variants
    from test_family_ode_vs_sim import NS as FAMILY_NS, _law as family_law
    assert FAMILY_NS == NS
    family_law(name, _compare)


@pytest.mark.simulation
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.full) if n in SLOW else n
                                  for n in SIM_VARIANTS])
def test_trained_ode_within_finite_size_scale_of_simulation(cache, name):
    c = _compare(name, 1024)
    assert c.within, (name, c.rms_deviation * 32)
    assert c.rms_deviation > 0.01 / 32            # not vacuous: the simulation fluctuates
    dv = c.v_rms_absolute
    # v ~ 1 moves by O(0.1) over α <= 10; its fluctuation is O(1/√N) like the overlaps'
    assert dv < 3 / np.sqrt(1024), (name, dv * 32)


@pytest.mark.simulation
def test_trained_deviation_falls_as_inverse_sqrt_N(cache):
    _law("erf, trained")


@pytest.mark.simulation
@pytest.mark.full
@pytest.mark.parametrize("name", [n for n in SIM_VARIANTS if n != "erf, trained"])
def test_trained_deviation_falls_as_inverse_sqrt_N_full(cache, name):
    _law(name)


# -- the command line --------------------------------------------------------------------------

def test_cli_solve_trained_readout(cache, tmp_path):
    spec = tmp_path / "trained.toml"
    spec.write_text('[model]\nactivation = "erf"\nK = 2\nM = 2\nreadout = "trained"\n'
                    '[data]\nL = 4\nbeta = 1\nN = 256\n'
                    '[training]\neta = 0.5\neta_readout = 0.3\nsigma_J = 0.3\n'
                    '[solve]\nalpha_max = 5\nn_points = 3\nspacing = "linear"\ndigits = 8\n')
    out = subprocess.run([sys.executable, "-m", "solvers.app.cli.main", "solve", str(spec)],
                         capture_output=True, text=True, env={**os.environ}, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["meta"]["readout"] == "trained"
    assert np.shape(doc["v"]) == (3, 2)
    assert doc["v"][0] == [float(np.sqrt(2) / 2)] * 2
    assert doc["meta"]["agreement_digits"] >= 8
