"""The committee-machine family on the ODE side: student and teacher activations (erf, linear,
relu, polynomials) and readouts, from the spec through the generated system to a verified solve.

Independent routes: the modes basis (its own printed right-hand side, no Cayley–Hamilton
closure) against the default level-basis solve; derive/family's orthant probability at higher
precision (and closed-form special cases) against the run-time quadratures; the paper's
equations against the general-readout ones; derive/integrals.py against derive/family.
"""
from __future__ import annotations


import mpmath
import numpy as np
import pytest
import sympy as sp

from cache_support import generated_cache_fixtures
from derive.keys import SystemKey
from solvers.app.solve import solve_spec
from solvers.app.spec import SpecError, parse_spec
from solvers.hierarchy.verify import agreement_digits

pytestmark = [pytest.mark.second_basis, pytest.mark.quadrature, pytest.mark.higher_precision,
              pytest.mark.closed_form, pytest.mark.contract]


# the run-wide generated-module cache (tests/cache_support.py)
run_cache, cache = generated_cache_fixtures()


# -- naming a system ------------------------------------------------------------------------

def test_keys_keep_the_original_tags_and_name_pairs():
    assert SystemKey("erf", 2, 2).tag == "erf_K2_M2"
    assert SystemKey("linear", 1, 1, teacher="x").tag == "linear_K1_M1"
    assert SystemKey("erf", 2, 2, teacher="erf") == SystemKey("erf", 2, 2)
    assert SystemKey("relu", 2, 1, teacher="erf").tag == "relu_erf_K2_M1"
    # equal polynomials written differently name one system; the tag is a stable hash
    a, b = SystemKey("x**3 - 3*x", 1, 1), SystemKey("-3*x+x^3", 1, 1)
    assert a == b and a.tag == b.tag and a.tag.startswith("p") and a.tag.isidentifier()
    # the paper's readouts, given explicitly, are the original system
    assert SystemKey("erf", 2, 2, readout=["1/sqrt(2)"] * 4) == SystemKey("erf", 2, 2)
    assert SystemKey("erf", 2, 2, readout=["1/2"] * 4).tag.startswith("erf_K2_M2_r")


def test_spec_model_keys_and_their_errors():
    doc = {"model": {"student_activation": "relu", "teacher_activation": "erf", "K": 2, "M": 1},
           "training": {"eta": 0.1}, "solve": {"alpha_max": 1}}
    m = parse_spec(doc).model
    assert (m.student, m.teacher) == ("relu", "erf") and not m.is_plain
    assert m.system_key() == SystemKey("relu", 2, 1, teacher="erf")
    bad = [({"activation": "tanh"}, "activation"),
           ({"student_activation": "0.5*x"}, "decimal"),
           ({"normalisation": "1/M"}, "normalisation"),
           ({"student_readout": [1, 2, 3]}, "student_readout"),
           ({"normalisation": "none", "teacher_readout": [1, 1]}, "teacher_readout .*paper")]
    for extra, word in bad:
        with pytest.raises(SpecError, match=word) as exc:
            parse_spec({**doc, "model": {"K": 2, "M": 2, **extra}})
        assert "\n" not in str(exc.value)
    m = parse_spec({**doc, "model": {"K": 2, "M": 2, "normalisation": "1/sqrt(K)"}}).model
    assert m.system_key().readouts == ("sqrt(2)/2",) * 4     # = the paper's at K = M = 2
    assert m.system_key() == SystemKey("erf", 2, 2)


def test_plain_only_routes_refuse_other_models():
    from solvers.app.cli.linear import checked_options
    doc = {"model": {"student_activation": "relu", "teacher_activation": "linear", "K": 1,
                     "M": 1}, "training": {"eta": 0.1}, "solve": {"alpha_max": 1}}
    spec = parse_spec(doc)
    from solvers.hierarchy import modes_fast
    from solvers.app.solve import problem_of
    with pytest.raises(ValueError, match="modes kernel"):
        modes_fast.inputs_from_problem(problem_of(spec))
    with pytest.raises(SpecError, match="linear"):
        checked_options(spec, "curve")
    trained = parse_spec({**doc, "model": {**doc["model"], "readout": "trained"},
                          "training": {"eta": 0.1, "eta_readout": 0.1}})
    with pytest.raises(ValueError, match="modes kernel"):
        modes_fast.inputs_from_problem(problem_of(trained))


# -- the hierarchy ------------------------------------------------------------------------------

def _numeric(h, exprs, seed=0):
    """The expressions at a random realisable level-1 / next-level state (floats, 30 digits)."""
    rng = np.random.default_rng(seed)
    K, M = h.key.K, h.key.M
    A = rng.normal(size=(K + M, K + M))
    G = A @ A.T / (K + M) + 0.2 * np.eye(K + M)
    B = rng.normal(size=(K + M, K + M))
    G2 = B @ B.T / (K + M)
    sub = {h.eta: sp.Rational(3, 10), h.nu: sp.Rational(7, 10), h.e2: 1}
    for blk, g in ((h.v1, G), (h.nxt, G2)):
        for i in range(K):
            for j in range(K):
                sub[blk.Q[i, j]] = sp.Float(g[i, j], 30)
            for n in range(M):
                sub[blk.R[i, n]] = sp.Float(g[i, K + n], 30)
        for n in range(M):
            for m in range(M):
                sub[blk.T[n, m]] = sp.Float(g[K + n, K + m], 30)
    return [sp.N(e.xreplace(sub), 25) for e in exprs]


@pytest.mark.parametrize("act", ["erf", "linear"])
def test_family_route_and_general_readouts_reproduce_the_paper_equations(act):
    """erf / linear through derive/family and through the general-readout formulas give the
    equations of the hand-written paper path (independent code for the same model)."""
    from derive.hierarchy import Hierarchy
    key = SystemKey(act, 2, 1)
    paper = Hierarchy(key)
    ref = _numeric(paper, paper.rhs + [paper.eps_g])
    family = Hierarchy(key)
    family.__dict__["_plain"] = False                 # the derive/family integrals
    family.__dict__["_parts"] = family._parts_readouts()   # v_i u_n sums at v = sqrt(M)/K ...
    got = _numeric(family, family.rhs + [family.eps_g])
    for a, b in zip(ref, got, strict=True):
        assert abs(a - b) <= 1e-20 * max(1, abs(a))


def test_readout_scaling_of_the_linear_model():
    """Linear K = M = 1 with readouts v, u is the paper's model (v = u = 1) with the teacher
    scaled by u and the student's output by v: dR/dα = η v (u T - v R)."""
    from derive.hierarchy import Hierarchy
    h = Hierarchy(SystemKey("linear", 1, 1, readout=["1/3", "2"]))
    R, T = h.nxt.R[0, 0], h.nxt.T[0, 0]
    dR = h.rhs[0]
    assert sp.simplify(dR - h.eta * sp.Rational(1, 3) * (2 * T - R / 3)) == 0


# -- the orthant probability in every number context ----------------------------------------

CORR = ["0.3", "0.1", "-0.2", "0.25", "0.4", "0.05"]


def _plackett_in_t(corr, dps):
    """P4 by Plackett's integral in its own variable t, the integrand built from the exact
    gradient of derive.family.orthant (SymPy) and integrated by mpmath's tanh-sinh rule: none of
    the numeric layer's quadrature (solvers/core/orthant.py integrates in s = sqrt(1 - t), with
    the minors expanded in 1 - t)."""
    from derive.family.orthant import Orthant4
    t = sp.Dummy("t")
    f = sp.lambdify(t, Orthant4(*[sp.Rational(x) for x in corr]).integrand(t), "mpmath")
    with mpmath.workdps(dps + 10):
        val, err = mpmath.quad(f, [0, 1], error=True)
        assert err < mpmath.mpf(10) ** -dps
        return mpmath.mpf(1) / 16 + val


def test_orthant_contexts_agree_with_plackett_in_t_at_higher_precision():
    from solvers.core.numbers import context
    with mpmath.workdps(80):
        ref = _plackett_in_t(CORR, 70)
    for kind, dps, tol in (("mpmath", 40, 1e-38), ("flint", 40, 1e-38), ("float64", None, 1e-14)):
        ctx = context(kind, dps)
        with ctx:
            v = ctx.orthant4(*[ctx.convert(x) for x in CORR])
        with mpmath.workdps(80):
            got = mpmath.mpf(v.mid().str(50, radius=False)) if kind == "flint" else mpmath.mpf(v)
            err = abs(got - ref)
        # each context claims its working precision (float64: the two-rule check at 1e-12;
        # its Gauss–Legendre panels converge to rounding here)
        assert err < tol, (kind, got, ref)


def test_orthant_special_cases_in_closed_form():
    """Exchangeable r = 1/2: P4 = 1/5; a field independent of the others: P3/2 (Sheppard)."""
    from solvers.core.numbers import context
    with mpmath.workdps(40):
        r12, r13, r23 = mpmath.mpf("0.3"), mpmath.mpf("-0.4"), mpmath.mpf("0.2")
        p3 = mpmath.mpf(1) / 8 + (mpmath.asin(r12) + mpmath.asin(r13) + mpmath.asin(r23)) / (4 * mpmath.pi)
    for kind, dps, tol in (("mpmath", 30, 1e-28), ("flint", 30, 1e-28), ("float64", None, 1e-14)):
        ctx = context(kind, dps)
        with ctx:
            half = ctx.convert("0.5")
            a = ctx.orthant4(*[half] * 6)
            b = ctx.orthant4(*[ctx.convert(x) for x in ("0.3", "-0.4", "0", "0.2", "0", "0")])
        with mpmath.workdps(40):
            a, b = (mpmath.mpf(x.mid().str(40, radius=False)) if kind == "flint"
                    else mpmath.mpf(x) for x in (a, b))
            assert abs(a - mpmath.mpf(1) / 5) < tol
            assert abs(b - p3 / 2) < tol


def test_orthant_refuses_a_matrix_that_is_not_positive_definite():
    from solvers.core.numbers import context
    bad = ["0.99", "0.9", "-0.9", "0.9", "-0.9", "0.5"]
    for kind, dps in (("mpmath", 20), ("float64", None)):
        ctx = context(kind, dps)
        with ctx, pytest.raises(ValueError, match="orthant"):
            ctx.orthant4(*[ctx.convert(x) for x in bad])


# -- solving: the default path against the modes basis --------------------------------------

DIGITS = 12


def _doc(student, teacher, K, M, order, *, L=16, eta="0.2", alpha_max=2.0, basis="levels"):
    return {"model": {"student_activation": student, "teacher_activation": teacher,
                      "K": K, "M": M},
            "data": {"L": L, "beta": 1.0, "N": 64 * L},
            "training": {"eta": eta, "order": order},
            "solve": {"alpha_max": alpha_max, "n_points": 3, "basis": basis, "digits": DIGITS}}


def _eps(result):
    return [mpmath.mpf(e) for e in result["eps_g"]]


def _levels_vs_modes(student, teacher, K, M, order, **kw):
    levels = solve_spec(parse_spec(_doc(student, teacher, K, M, order, **kw)))
    modes = solve_spec(parse_spec(_doc(student, teacher, K, M, order, basis="modes", **kw)))
    for r in (levels, modes):
        assert r["meta"]["agreement_digits"] >= DIGITS
        assert all(e > 0 for e in _eps(r))
    # each claims 12 verified digits, so they may differ by two units of the 12th
    assert agreement_digits(_eps(levels), _eps(modes)) >= DIGITS - 0.5
    for key in ("R1", "Q1"):
        np.testing.assert_allclose(levels[key], modes[key], rtol=0, atol=1e-9)
    return levels, modes


SMALL = [("relu", "erf", 1, 1, 2), ("erf", "relu", 1, 1, 2), ("relu", "relu", 1, 1, 2),
         ("x**3 - 3*x", "x", 1, 1, 1)]
FULL = [("relu", "relu", 2, 2, 2), ("relu", "erf", 2, 2, 2), ("erf", "relu", 2, 2, 2),
        ("erf", "linear", 2, 2, 2), ("relu", "erf", 2, 1, 2), ("x**2", "x**2", 2, 2, 1)]


@pytest.mark.parametrize("student, teacher, K, M, order", SMALL)
def test_default_solve_of_a_pair_agrees_with_the_modes_basis(cache, student, teacher, K, M,
                                                              order):
    levels, _ = _levels_vs_modes(student, teacher, K, M, order, L=8, alpha_max=1.0)
    assert levels["meta"]["student_activation"] == SystemKey(student, K, M).activation


@pytest.mark.full
@pytest.mark.parametrize("student, teacher, K, M, order", FULL)
def test_default_solve_of_a_pair_agrees_with_the_modes_basis_full(cache, student, teacher, K,
                                                                   M, order):
    _levels_vs_modes(student, teacher, K, M, order, L=16, alpha_max=2.0)


@pytest.mark.full
def test_relu_pair_at_L64(cache):
    _levels_vs_modes("relu", "erf", 1, 1, 2, L=64, alpha_max=5.0)


# -- the derived equations against Monte Carlo over the Gaussian fields -----------------------

_G = {"relu": (lambda x: np.maximum(x, 0), lambda x: (x > 0) * 1.0),
      "erf": (lambda x: _erf(x / np.sqrt(2)), lambda x: np.sqrt(2 / np.pi) * np.exp(-x * x / 2)),
      "linear": (lambda x: x, lambda x: np.ones_like(x)),
      "x**2": (lambda x: x * x, lambda x: 2 * x),
      "x**3 - 3*x": (lambda x: x**3 - 3 * x, lambda x: 3 * x * x - 3)}


def _erf(x):
    from scipy.special import erf
    return erf(x)


def _monte_carlo_check(student, teacher, K, M, readout=None, n=400_000, seed=7):
    """Every coefficient of the derived hierarchy (the order-1 drift at a given next level,
    the η² bracket, ε_g) at one realisable state against a Monte Carlo average over the
    fields it is an expectation of.  The state is built from vectors (J, B in dimension 5 with
    a diagonal Σ), so the level-1 and level-2 order parameters are consistent."""
    from derive.family.orthant import lambdify
    from derive.hierarchy import Hierarchy
    key = SystemKey(student, K, M, teacher=teacher, readout=readout)
    h = Hierarchy(key)
    v, u = [np.array([float(x) for x in r]) for r in h.readouts]
    rng = np.random.default_rng(seed)
    lam = np.array([1.6, 1.2, 1.0, 0.7, 0.5])
    J, B = rng.normal(size=(K, 5)) * 0.5, rng.normal(size=(M, 5)) * 0.5
    sub = {}
    for blk, p in ((h.v1, 1), (h.nxt, 2)):
        S = np.diag(lam ** p)
        for i in range(K):
            for j in range(K):
                sub[blk.Q[i, j]] = J[i] @ S @ J[j]
            for m in range(M):
                sub[blk.R[i, m]] = J[i] @ S @ B[m]
        for m in range(M):
            for k in range(M):
                sub[blk.T[m, k]] = B[m] @ S @ B[k]
    sub[h.eta] = 1.0
    xi = rng.normal(size=(n, 5)) * np.sqrt(lam)
    x, y = xi @ J.T, xi @ B.T                     # level-1 fields
    zx, zy = (xi * lam) @ J.T, (xi * lam) @ B.T   # generalised (level-2) fields
    gs, gt = _G[SystemKey(student, 1, 1).activation], _G[SystemKey(teacher, 1, 1).activation]
    delta = gt[0](y) @ u - gs[0](x) @ v
    samples = []
    for i in range(K):
        for m in range(M):
            samples.append((v[i] * gs[1](x[:, i]) * zy[:, m] * delta, 0 * delta))
    for i in range(K):
        for j in range(i, K):
            lin = (v[i] * gs[1](x[:, i]) * zx[:, j] + v[j] * gs[1](x[:, j]) * zx[:, i]) * delta
            samples.append((lin, v[i] * v[j] * gs[1](x[:, i]) * gs[1](x[:, j]) * delta**2))
    samples.append((0.5 * delta**2, None))
    exprs = [p for part in h._parts for p in part] + [h.eps_g]
    want = [s for pair in samples[:-1] for s in pair] + [samples[-1][0]]
    for e, s in zip(exprs, want, strict=True):
        syms = sorted(sp.sympify(e).free_symbols, key=str)
        val = float(lambdify(syms, e, "numpy")(*[sub[q] for q in syms])) if syms else float(e)
        mean, err = float(np.mean(s)), float(np.std(s)) / np.sqrt(n)
        # 5 standard errors: a single comparison fails by chance with probability 6e-7
        assert abs(val - mean) <= 5 * err + 1e-12, (key.description, e, val, mean, err)


@pytest.mark.parametrize("student, teacher, K, M", [("relu", "erf", 2, 2), ("erf", "relu", 2, 1)])
def test_derived_equations_match_monte_carlo(student, teacher, K, M):
    _monte_carlo_check(student, teacher, K, M)


@pytest.mark.full
@pytest.mark.parametrize("student, teacher, K, M, readout", [
    ("relu", "relu", 2, 2, None), ("erf", "relu", 2, 2, None), ("erf", "linear", 2, 2, None),
    ("x**2", "x**2", 2, 2, None), ("x**3 - 3*x", "x", 2, 1, None), ("relu", "linear", 2, 2, None),
    ("relu", "erf", 2, 2, ["1/2", "1/2", "1/2", "1/2"]), ("erf", "erf", 2, 1, ["1", "-1", "2"])])
def test_derived_equations_match_monte_carlo_full(student, teacher, K, M, readout):
    _monte_carlo_check(student, teacher, K, M, readout, n=2_000_000)


# -- label noise, weight decay, batch size ----------------------------------------------------

def _linear_reference(lam, init, eta, noise, kappa, batch, order, alphas, dps=30):
    """ε_g of linear K = M = 1 written out from the conventions (tests/ode_support.py)."""
    from ode_support import linear_modes_eps
    return linear_modes_eps(lam, init, alphas, lambda a: mpmath.mpf(eta), noise=noise,
                            kappa=kappa, batch=batch, order=order, dps=dps)


@pytest.mark.parametrize("basis", ["levels", "modes"])
@pytest.mark.parametrize("noise, kappa, batch, order", [("0.3", "0", 1, 2), ("0", "0.05", 1, 2),
                                                        ("0.5", "0.1", 4, 2), ("0", "0.2", 1, 1)])
def test_noise_decay_batch_against_the_written_out_linear_odes(cache, basis, noise, kappa, batch,
                                                               order):
    lam = ["2", "1", "0.5"]
    init = (["0.05", "0", "-0.05"], ["0.02", "0.025", "0.03"], ["0.3", "0.3", "0.4"])
    alphas = [0.5, 2.0, 6.0]
    doc = {"model": {"activation": "linear", "K": 1, "M": 1},
           "data": {"eigenvalues": [2, 1, 0.5]},
           "training": {"eta": "0.3", "order": order, "init": "explicit", "noise": noise,
                        "weight_decay": kappa, "batch_size": batch},
           "init": {"modes": {"R": [[[v]] for v in init[0]], "Q": [[[v]] for v in init[1]],
                              "T": [[[v]] for v in init[2]]}},
           "solve": {"alphas": alphas, "basis": basis, "digits": 12}}
    got = _eps(solve_spec(parse_spec(doc)))
    ref = _linear_reference(lam, init, "0.3", noise, kappa, batch, order, alphas)
    # the solve claims 12 verified digits; the reference carries ~30
    with mpmath.workdps(30):
        for g, r in zip(got, ref, strict=True):
            assert abs(g - r) <= 2 * mpmath.mpf(10) ** -DIGITS * abs(r), (g, r)


def test_orthant_jets_match_derivatives_of_the_quadrature(cache):
    """The Taylor jets of the ReLU η² coefficient that holds the orthant probability (Q_12 of
    relu/erf K = M = 2) along a polynomial path of v1 equal mpmath's numerical Taylor
    coefficients of the generated coefficient (quadrature at every point): the jet op from
    the elementary gradient is checked against the integral itself."""
    from solvers.core.numbers import MpmathContext
    from solvers.core.problem import Problem, random_init
    from solvers.core.registry import load
    from derive import spectra
    from fractions import Fraction
    from ode_support import jets_on_random_path
    key = SystemKey("relu", 2, 2, teacher="erf")
    jets, mod = load(key, "taylor"), load(key, "mpmath")
    s = spectra.power_law(4, 1)
    prob = Problem(key, s, Fraction(1, 10), 2, random_init(2, 2, 1024, s, Fraction(1, 2), 3))
    q12 = mod.STATE.index("Q_12")
    i = len(mod.A_INDEX) + list(mod.F_INDEX).index(q12)
    order = 2      # coefficients 1, 2 exercise both terms of the recurrence (j = 1..k)
    with MpmathContext(30) as ctx:
        num = prob.numeric(ctx)
        path, t1, jets_out = jets_on_random_path(jets, mod, num, ctx, order, 50)
        got = [row[i] for row in jets_out]

        def f(tau):
            v = [sum(path[k][j] * tau**k for k in range(order + 1)) for j in range(len(path[0]))]
            return mod.coefficients(v, t1, num.eta, ctx)[i]
        ref = mpmath.taylor(f, 0, order)
        assert "orthant4" in open(mod.module.__file__).read()
        for k in range(order + 1):
            # numerical differentiation at 30 digits keeps ~20 of them at order 2
            assert abs(got[k] - ref[k]) <= mpmath.mpf(10) ** -15 * max(abs(ref[0]), 1), k
