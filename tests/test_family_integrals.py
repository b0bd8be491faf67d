"""The family's Gaussian integrals (derive/family) against independent routes.

    I2 = <g1(z1) g2(z2)>,  I3 = <g1'(z1) z2 g3(z3)>,  I4 = <g1'(z1) g2'(z2) g3(z3) g4(z4)>

Oracles:
* polynomial slots: the Gaussian moment generating function exp(t'Ct/2) differentiated
  symbolically (no Wick recursion), exact equality;
* ReLU / erf / mixed: one-dimensional mpmath quadrature in a one-factor representation.  When
  z_a = s_a (l_a x + sqrt(1 - l_a²) e_a) with x, e_a independent N(0, 1), the fields are
  independent given x, and E[f_a(z_a) | x] is elementary (normal cdf, pdf, erf) for every factor
  used here (powers, step, Dirac delta and its derivative, erf and its derivatives).  Every 2 x 2
  covariance is one-factor; I3 with a general 3 x 3 covariance reduces to two fields by regressing
  the linear slot z2 on (z1, z3); I4 uses one-factor 4 x 4 covariances (8 of the 10 parameters),
  plus Monte Carlo (a sanity check) and a second path for the orthant probability at general ones;
* derivatives w.r.t. covariance entries: Price's theorem, d/dC_ab <f> = <d_a d_b f> (a != b) and
  d/dC_aa <f> = <d_a² f> / 2, the right side by the same quadrature (not by differentiating);
* erf-erf and linear-linear: the project's closed forms in derive/integrals.py.
"""
from __future__ import annotations

from itertools import product

import functools

import mpmath as mp
import numpy as np
import pytest
import sympy as sp

from derive import integrals as base
from derive.family import activations as A
from derive.family.expectations import wick
from derive.family.integrals import I2, I3, I4, pair_integrals
from derive.family.orthant import Orthant4, lambdify, orthant4_digits
from derive.integrals import covariance_symbols
from solvers.core.orthant import orthant4_float

pytestmark = [pytest.mark.quadrature, pytest.mark.closed_form, pytest.mark.higher_precision]

R = sp.Rational


# ----------------------------------------------------------------------------- activations

@pytest.mark.parametrize("text,coeffs", [
    ("x**2", (0, 0, 1)), ("x**3 - 3*x", (0, -3, 0, 1)), ("(x**2 - 1)/2", (R(-1, 2), 0, R(1, 2))),
    ("x^2 + 1/3", (R(1, 3), 0, 1)), ("-x*(x - 2)", (0, 2, -1)), ("(x+1)**3", (1, 3, 3, 1)),
])
def test_polynomial_parsing(text, coeffs):
    act = A.activation(text)
    assert act.kind == "poly" and act.coeffs == tuple(sp.sympify(c) for c in coeffs)
    assert all(isinstance(c, sp.Rational) for c in act.coeffs)


def test_named_and_linear():
    assert A.activation("relu").kind == "relu" and A.activation(" erf ").kind == "erf"
    assert A.activation("x").kind == "linear" == A.activation("linear").kind
    assert A.activation("relu").expr(sp.Integer(-2)) == 0


@pytest.mark.parametrize("text,needle", [
    ("0.5*x", "decimal literal 0.5"), ("x**2.0", "decimal literal 2.0"),
    ("y + x", "unknown name 'y'"), ("exp(x)", "Call is not allowed"),
    ("__import__('os').system('true')", "not allowed"), ("x**-1", "not a non-negative integer"),
    ("1/x", "division by x"), ("x**x", "not a non-negative integer"), ("x +", "not a valid"),
    ("x**7", "degree exceed 6"), ("x**4*x**3", "degree 7 is above the maximum 6"), ("((x+1)**9)**9", "degree"), ("tanh", "unknown name 'tanh'"),
    ("x[0]", "not allowed"), ("'x'", "not a number"), ("True*x", "not a number"),
])
def test_bad_activation_strings(text, needle):
    with pytest.raises(A.ActivationError) as err:
        A.activation(text)
    msg = str(err.value)
    assert needle in msg and "\n" not in msg and repr(text) in msg, msg


# ----------------------------------------------------------------------------- exact polynomials

def _mgf_expectation(C, slot_polys):
    """E[prod_a p_a(z_a)] read off the moment generating function exp(t'Ct/2):
    E[prod z_a^k_a] = (prod k_a!) [t^k] (t'Ct/2)^m / m!, |k| = 2m (series coefficients)."""
    n = C.shape[0]
    t = sp.symbols(f"t0:{n}")
    q = sp.expand(sum(C[a, b] * t[a] * t[b] for a in range(n) for b in range(n)) / 2)
    polys = [sp.Poly(p, A.X).all_coeffs()[::-1] for p in slot_polys]
    series = {}

    def coefficient(ks):
        m, odd = divmod(sum(ks), 2)
        if odd:
            return 0
        if m not in series:
            series[m] = sp.Poly(q**m / sp.factorial(m), *t)
        return series[m].coeff_monomial(sp.Mul(*[ti**k for ti, k in zip(t, ks, strict=True)]))

    out = sp.Integer(0)
    for ks in product(*[range(len(c)) for c in polys]):
        coef = sp.Mul(*[polys[a][k] for a, k in enumerate(ks)])
        if coef != 0:
            out += coef * sp.Mul(*[sp.factorial(k) for k in ks]) * coefficient(ks)
    return sp.expand(out)


@pytest.mark.parametrize("powers", [(2, 2), (3, 1), (1, 2, 1), (2, 2, 2), (1, 1, 1, 1), (3, 0, 2, 1),
                                    (2, 1, 1, 2)])
def test_wick_matches_moment_generating_function(powers):
    C = covariance_symbols(len(powers))
    mono = [A.X**p for p in powers]
    assert sp.expand(wick(C, powers) - _mgf_expectation(C, mono)) == 0


POLYS = ["x**2", "x**3 - 3*x", "(x**2 - 1)/2 + x/3", "linear"]


def _slot(act, derivative):
    a = A.activation(act)
    return sp.diff(a.expr(A.X), A.X) if derivative else a.expr(A.X)


POLY_PAIRS = [(s, t) for s in POLYS for t in POLYS]
HEAVY_POLY = [("x**3 - 3*x", "x**3 - 3*x"), ("x**2", "x**3 - 3*x"),
              ("x**3 - 3*x", "(x**2 - 1)/2 + x/3"), ("(x**2 - 1)/2 + x/3", "x**3 - 3*x")]


@pytest.mark.parametrize("s,t", [p for p in POLY_PAIRS if p not in HEAVY_POLY] + [
    pytest.param(*p, marks=pytest.mark.full) for p in HEAVY_POLY])
def test_polynomial_pairs_exact(s, t):
    for C, expr, slots in [
        (covariance_symbols(2), I2(s, t, covariance_symbols(2)), [_slot(s, 0), _slot(t, 0)]),
        (covariance_symbols(3), I3(s, t, covariance_symbols(3)), [_slot(s, 1), A.X, _slot(t, 0)]),
        (covariance_symbols(4), I4(s, s, s, t, covariance_symbols(4)),
         [_slot(s, 1), _slot(s, 1), _slot(s, 0), _slot(t, 0)]),
        (covariance_symbols(4), I4(s, s, t, t, covariance_symbols(4)),
         [_slot(s, 1), _slot(s, 1), _slot(t, 0), _slot(t, 0)]),
    ]:
        assert sp.expand(expr - _mgf_expectation(C, slots)) == 0, (s, t, slots)


def test_linear_linear_is_the_base_closed_form():
    for n, f, g in [(2, I2, base.I2), (3, I3, base.I3), (4, I4, base.I4)]:
        C = covariance_symbols(n)
        args = ("linear",) * {2: 2, 3: 2, 4: 4}[n]
        assert f(*args, C, route="engine") == g("linear", C)


# ----------------------------------------------------------------------------- one-factor oracle

def _pdf(mu, s):
    return mp.npdf(0, mu, s)                       # density of N(mu, s²) at 0


def cond_mean(poly, kind, mu, s):
    """E[poly(z) kind(z)] for z ~ N(mu, s²); poly a tuple of coefficients (mpmath numbers)."""
    return sum(c * cond_moment(k, kind, mu, s) for k, c in enumerate(poly) if c)


def cond_moment(k, kind, mu, s):
    """E[z^k kind(z)] for z ~ N(mu, s²), kind in one/theta/delta/ddelta/erf/gauss."""
    v = s * s
    if kind == "one":
        m = [mp.mpf(1), mu]
        for j in range(2, k + 1):
            m.append(mu * m[j - 1] + (j - 1) * v * m[j - 2])
        return m[k]
    if kind == "theta":                          # Stein for N(mu, v): E[(z-mu) g] = v E[g']
        m = [mp.ncdf(mu / s)]
        for j in range(1, k + 1):
            m.append(mu * m[j - 1] + v * ((j - 1) * (m[j - 2] if j >= 2 else 0)
                                          + (_pdf(mu, s) if j == 1 else 0)))
        return m[k]
    if kind == "delta":
        return _pdf(mu, s) if k == 0 else mp.mpf(0)
    if kind == "ddelta":                         # <z^k δ'(z)> = -(z^k p(z))'(0)
        if k == 0:
            return -(mu / v) * _pdf(mu, s)
        return -_pdf(mu, s) if k == 1 else mp.mpf(0)
    if kind == "gauss":                          # tilt: exp(-z²/2) N(mu, v) ∝ N(mu', v')
        w = 1 + v
        G = mp.exp(-mu * mu / (2 * w)) / mp.sqrt(w)
        return G * cond_moment(k, "one", mu / w, mp.sqrt(v / w))
    if kind == "erf":
        m = [mp.erf(mu / mp.sqrt(2 * (1 + v)))]
        for j in range(1, k + 1):
            m.append(mu * m[j - 1] + v * ((j - 1) * (m[j - 2] if j >= 2 else 0)
                                          + mp.sqrt(2 / mp.pi) * cond_moment(j - 1, "gauss", mu, s)))
        return m[k]
    raise ValueError(kind)


# A slot function is a list of (poly coefficients, kind) terms; derivative by the product rule.
_DKIND = {"theta": [((1,), "delta")], "delta": [((1,), "ddelta")], "one": [],
          "erf": [((sp.sqrt(2 / sp.pi),), "gauss")], "gauss": [((0, -1), "gauss")]}


def _polymul(p, q):
    out = [0] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        for j, b in enumerate(q):
            out[i + j] += a * b
    return tuple(out)


def slot_fn(act):
    """The test's own description of an activation as (poly, kind) terms (not the code's)."""
    if act == "relu":
        return [((0, 1), "theta")]
    if act == "erf":
        return [((1,), "erf")]
    p = sp.Poly(sp.sympify(act.replace("linear", "x")), sp.Symbol("x")).all_coeffs()[::-1]
    return [(tuple(p), "one")]


def _normal(poly, kind):
    """z δ(z) = 0, z δ'(z) = -δ(z), z^k δ'(z) = 0 for k >= 2: keep delta terms reduced."""
    poly = tuple(poly) + (0, 0)
    if kind == "delta":
        out = [((poly[0],), "delta")]
    elif kind == "ddelta":
        out = [((poly[0],), "ddelta"), ((-poly[1],), "delta")]
    else:
        out = [(tuple(poly[:len(poly) - 2]), kind)]
    return [(p, k) for p, k in out if any(c != 0 for c in p)]


def deriv(fn):
    out = []
    for poly, kind in fn:
        dp = tuple(k * c for k, c in enumerate(poly))[1:]
        if dp:
            out += _normal(dp, kind)
        if kind == "ddelta":
            raise NotImplementedError("third derivative of the step")
        for q, k2 in _DKIND[kind]:
            out += _normal(_polymul(poly, q), k2)
    return out


def times_z(fn):
    return [((0,) + tuple(p), k) for p, k in fn]


def _num(c):
    """A coefficient (int, exact SymPy number or mpf) at the working precision."""
    if isinstance(c, mp.mpf):
        return c
    return _sym_num(c, mp.mp.dps) if isinstance(c, sp.Basic) else mp.mpf(c)


@functools.lru_cache(maxsize=None)
def _sym_num(c, dps):
    with mp.workdps(dps + 5):
        return mp.mpf(sp.N(c, dps + 5))


def fn_mean(fn, mu, s):
    return sum(cond_mean(tuple(_num(c) for c in p), k, mu, s) for p, k in fn)


def one_factor(fns, lam, scale, dps):
    """E[prod_a fns[a](z_a)] for z_a = scale_a (lam_a x + sqrt(1 - lam_a²) e_a), by mp.quad."""
    with mp.workdps(dps + 10):
        lam = [mp.mpf(l) for l in lam]
        scale = [mp.mpf(s) for s in scale]
        sig = [sc * mp.sqrt(1 - l * l) for l, sc in zip(lam, scale, strict=True)]

        def f(x):
            out = mp.npdf(x)
            for fn, l, sc, sg in zip(fns, lam, scale, sig, strict=True):
                out *= fn_mean(fn, sc * l * x, sg)
            return out

        # |x| > L contributes below phi(L) * (polynomial growth) < 10^-(dps+8)
        L = mp.sqrt(2 * (dps + 12) * mp.log(10)) + 1
        val, err = mp.quad(f, mp.linspace(-L, L, 7), method="gauss-legendre", error=True)
        assert err < mp.mpf(10) ** (-dps - 3), ("oracle quadrature not converged", err)
        return val


def two_field_params(c11, c12, c22):
    """One-factor parameters of a 2 x 2 covariance (always possible)."""
    s1, s2 = mp.sqrt(c11), mp.sqrt(c22)
    r = c12 / (s1 * s2)
    l = mp.sqrt(abs(r))
    return [l, mp.sign(r) * l if r else l], [s1, s2]


def oracle_pair(fa, fb, C, dps):
    """<fa(z1) fb(z2)> for a 2 x 2 covariance (mpmath entries)."""
    with mp.workdps(dps + 15):
        lam, sc = two_field_params(C[0][0], C[0][1], C[1][1])
    return one_factor([fa, fb], lam, sc, dps)


def oracle_I3like(f1, f3, C, dps, mid=None):
    """<f1(z1) m(z2) f3(z3)> with m(z2) = z2 (or 1 when mid == "one"), general 3 x 3 C."""
    with mp.workdps(dps + 15):
        C = [[mp.mpf(x) for x in row] for row in C]
        sub = [[C[0][0], C[0][2]], [C[0][2], C[2][2]]]
        if mid == "one":
            return oracle_pair(f1, f3, sub, dps)
        det = C[0][0] * C[2][2] - C[0][2] ** 2
        b1 = (C[1][0] * C[2][2] - C[1][2] * C[0][2]) / det      # E[z2 | z1, z3] = b1 z1 + b3 z3
        b3 = (C[1][2] * C[0][0] - C[1][0] * C[0][2]) / det
        return (b1 * oracle_pair(times_z(f1), f3, sub, dps)
                + b3 * oracle_pair(f1, times_z(f3), sub, dps))


def evaluate(expr, C, dps):
    """The symbolic result at the exact covariance C (a sympy Matrix of Rationals), dps digits."""
    n = C.shape[0]
    S = covariance_symbols(n)
    sub = {S[a, b]: C[a, b] for a in range(n) for b in range(a, n)}
    with mp.workdps(dps + 10):          # the mpf keeps these digits outside the context
        return mp.mpf(sp.N(expr.xreplace(sub), dps + 10))


def rational_cov(seed, n):
    """A random positive-definite covariance with small-denominator rational entries."""
    rng = np.random.default_rng([seed, n, 99])
    while True:
        B = rng.integers(-4, 5, size=(n, n))
        M = sp.Matrix(B) * sp.Matrix(B).T / 8 + sp.eye(n) * R(int(rng.integers(1, 4)), 4)
        M = M / max(M[i, i] for i in range(n)) * R(int(rng.integers(5, 15)), 10)
        corr = [abs(M[a, b]) / sp.sqrt(M[a, a] * M[b, b]) for a in range(n) for b in range(a)]
        if all(c < R(95, 100) for c in corr):
            return M


def one_factor_cov(seed, n=4):
    """Rational one-factor covariance C_ab = s_a s_b l_a l_b, C_aa = s_a², with its parameters."""
    rng = np.random.default_rng([seed, 4321])
    lam = [R(int(v), 10) * (1 if rng.random() < 0.7 else -1) for v in rng.integers(2, 9, size=n)]
    sc = [R(int(v), 10) for v in rng.integers(6, 14, size=n)]
    C = sp.Matrix(n, n, lambda a, b: sc[a] ** 2 if a == b else sc[a] * sc[b] * lam[a] * lam[b])
    return C, _mp(lam), _mp(sc)


def _mp(xs):
    """Exact rationals to 80-digit mpf (they keep their precision outside the context)."""
    with mp.workdps(80):
        return [mp.mpf(x.p) / x.q for x in xs]


def _mpC(C):
    n = C.shape[0]
    return [_mp([C[a, b] for b in range(n)]) for a in range(n)]


def assert_close(got, want, dps, what):
    with mp.workdps(dps + 10):
        tol = mp.mpf(10) ** (-dps) * max(1, abs(want))
        assert abs(got - want) < tol, (what, mp.nstr(got, dps + 3), mp.nstr(want, dps + 3))


# ----------------------------------------------------------------------------- I2 and I3

MIXED = [("relu", "relu"), ("relu", "linear"), ("linear", "relu"), ("relu", "erf"), ("erf", "relu"),
         ("erf", "linear"), ("linear", "erf"), ("erf", "erf"), ("x**2", "relu"), ("relu", "x**2"),
         ("x**3 - 3*x", "erf"), ("erf", "x**3 - 3*x"), ("x**2", "erf"), ("relu", "x**3 - 3*x")]


def _check_I2(s, t, C, dps, derivatives=True):
    S = covariance_symbols(2)
    expr = I2(s, t, S)
    fs, ft = slot_fn(s), slot_fn(t)
    mC = _mpC(C)
    assert_close(evaluate(expr, C, dps), oracle_pair(fs, ft, mC, dps), dps, ("I2", s, t))
    if not derivatives:
        return
    # Price: d/dC12 -> <f' f'>, d/dC11 -> <f'' f>/2, d/dC22 -> <f f''>/2
    for sym, fa, fb, half in [(S[0, 1], deriv(fs), deriv(ft), 1), (S[0, 0], deriv(deriv(fs)), ft, 2),
                              (S[1, 1], fs, deriv(deriv(ft)), 2)]:
        with mp.workdps(dps + 10):
            want = oracle_pair(fa, fb, mC, dps) / half
        assert_close(evaluate(sp.diff(expr, sym), C, dps), want, dps, ("dI2", s, t, sym))


def _check_I3(s, t, C, dps, derivatives=True):
    S = covariance_symbols(3)
    expr = I3(s, t, S)
    f1, f3 = deriv(slot_fn(s)), slot_fn(t)
    mC = _mpC(C)
    assert_close(evaluate(expr, C, dps), oracle_I3like(f1, f3, mC, dps), dps, ("I3", s, t))
    if not derivatives:
        return
    checks = [(S[0, 1], deriv(f1), f3, "one", 1), (S[1, 2], f1, deriv(f3), "one", 1),
              (S[0, 2], deriv(f1), deriv(f3), None, 1), (S[0, 0], deriv(deriv(f1)), f3, None, 2),
              (S[2, 2], f1, deriv(deriv(f3)), None, 2)]
    for sym, fa, fb, mid, half in checks:
        with mp.workdps(dps + 10):
            want = oracle_I3like(fa, fb, mC, dps, mid) / half
        assert_close(evaluate(sp.diff(expr, sym), C, dps), want, dps, ("dI3", s, t, sym))
    assert sp.diff(expr, S[1, 1]) == 0


@pytest.mark.parametrize("s,t", MIXED)
def test_I2_I3_mixed_15_digits(s, t):
    priority = (s, t) in (("relu", "relu"), ("erf", "relu"), ("relu", "erf"))
    _check_I2(s, t, rational_cov(1, 2), 15, derivatives=priority)
    _check_I3(s, t, rational_cov(2, 3), 15, derivatives=priority)


@pytest.mark.full
@pytest.mark.parametrize("s,t", MIXED)
@pytest.mark.parametrize("seed", [3, 4, 5])
def test_I2_I3_mixed_30_digits(s, t, seed):
    _check_I2(s, t, rational_cov(seed, 2), 30)
    _check_I3(s, t, rational_cov(seed, 3), 30)


@pytest.mark.parametrize("s,t", [("relu", "relu"), ("erf", "relu"), ("relu", "erf"),
                                 ("x**3 - 3*x", "relu"), ("erf", "x**2")])
def test_I3_linear_in_C12_C23_free_of_C22(s, t):
    S = covariance_symbols(3)
    e = I3(s, t, S)
    c12, c22, c23 = S[0, 1], S[1, 1], S[1, 2]
    assert c22 not in e.free_symbols
    assert sp.simplify(e - c12 * sp.diff(e, c12) - c23 * sp.diff(e, c23)) == 0
    assert not ({c12, c23} & (sp.diff(e, c12).free_symbols | sp.diff(e, c23).free_symbols))


# ----------------------------------------------------------------------------- I4

I4_CASES = [("relu",) * 4, ("relu", "relu", "relu", "linear"), ("relu", "relu", "erf", "erf"),
            ("relu", "relu", "relu", "erf"), ("erf", "erf", "relu", "relu"),
            ("erf", "erf", "erf", "relu"), ("x**2", "x**2", "relu", "relu"),
            ("relu", "relu", "x**2", "erf"), ("x**3 - 3*x", "x**3 - 3*x", "erf", "erf")]


def _check_I4(acts, seed, dps, derivatives):
    S = covariance_symbols(4)
    expr = I4(*acts, S)
    fns = [deriv(slot_fn(acts[0])), deriv(slot_fn(acts[1])), slot_fn(acts[2]), slot_fn(acts[3])]
    C, lam, sc = one_factor_cov(seed)
    assert_close(evaluate(expr, C, dps), one_factor(fns, lam, sc, dps), dps, ("I4", acts))
    for a, b in derivatives:
        g = list(fns)
        g[a] = deriv(g[a])
        g[b] = deriv(g[b])
        with mp.workdps(dps + 10):
            want = one_factor(g, lam, sc, dps) / (2 if a == b else 1)
        assert_close(evaluate(sp.diff(expr, S[a, b]), C, dps), want, dps, ("dI4", acts, a, b))


ALL_PAIRS = [(a, b) for a in range(4) for b in range(a, 4)]


@pytest.mark.parametrize("acts", I4_CASES)
def test_I4_15_digits(acts):
    # every kind of entry once for relu-relu (diagonal of a θ slot and of a relu slot, the
    # three kinds of off-diagonal pair); the full run checks all ten entries of every case
    derivs = [(0, 0), (0, 1), (0, 2), (2, 2), (2, 3)] if acts == ("relu",) * 4 else [(0, 1), (2, 3)]
    _check_I4(acts, 11, 15, derivs)


@pytest.mark.full
@pytest.mark.parametrize("acts", I4_CASES)
@pytest.mark.parametrize("seed", [12, 13])
def test_I4_30_digits(acts, seed):
    _check_I4(acts, seed, 30, ALL_PAIRS)


def test_I4_relu_monte_carlo_general_covariance():
    """Sanity at a covariance that is not one-factor: 2e6 samples, 5 standard errors."""
    C = rational_cov(21, 4)
    expr = I4("relu", "relu", "relu", "relu", covariance_symbols(4))
    exact = float(evaluate(expr, C, 15))
    rng = np.random.default_rng(5)
    L = np.linalg.cholesky(np.array(C.tolist(), dtype=float))
    vals = []
    for _ in range(2):
        z = L @ rng.standard_normal((4, 1_000_000))
        vals.append((z[0] > 0) * (z[1] > 0) * np.maximum(z[2], 0) * np.maximum(z[3], 0))
    f = np.concatenate(vals)
    se = f.std() / np.sqrt(f.size)
    assert abs(f.mean() - exact) < 5 * se, (f.mean(), exact, se)


# ----------------------------------------------------------------------------- engine vs hand

@pytest.mark.parametrize("n,acts", [(2, ("relu", "relu")), (2, ("relu", "erf")), (2, ("erf", "linear")),
                                    (3, ("relu", "relu")), (3, ("erf", "relu")), (3, ("relu", "erf")),
                                    (3, ("erf", "linear")), (4, ("relu",) * 4), (2, ("erf", "erf")),
                                    (3, ("erf", "erf")), (4, ("erf",) * 4)])
def test_engine_agrees_with_closed_forms(n, acts):
    """Two derivations (the general Stein engine, the forms written by hand) at 50 digits
    (30 when the orthant probability's quadrature is involved)."""
    f = {2: I2, 3: I3, 4: I4}[n]
    S = covariance_symbols(n)
    hand, eng = f(*acts, S), f(*acts, S, route="engine")
    C = rational_cov(31, n)
    dps = 30 if hand.atoms(Orthant4) else 50
    assert_close(evaluate(eng, C, dps), evaluate(hand, C, dps), dps, (n, acts))


def test_erf_erf_matches_base_at_50_digits():
    """The engine's derivation of the erf integrals equals derive/integrals.py's closed forms."""
    for n, f in [(2, I2), (3, I3), (4, I4)]:
        S = covariance_symbols(n)
        acts = ("erf",) * {2: 2, 3: 2, 4: 4}[n]
        eng = f(*acts, S, route="engine")
        for seed in (41, 42, 43):
            C = rational_cov(seed, n)
            assert_close(evaluate(eng, C, 50), evaluate(base.__dict__[f"I{n}"]("erf", S), C, 50),
                         50, (n, seed))


# ----------------------------------------------------------------------------- orthant probability

def test_orthant_exchangeable_half_is_one_fifth():
    # z_a = (w_a - w_0)/sqrt(2) has r = 1/2; all four positive <=> w_0 is the smallest of five
    with mp.workdps(50):
        assert abs(orthant4_digits(["0.5"] * 6, 40) - mp.mpf(1) / 5) < mp.mpf(10) ** -40


@pytest.mark.parametrize("seed", [51, 52])
def test_orthant_one_factor_formula(seed):
    _, lam, _ = one_factor_cov(seed)
    with mp.workdps(40):
        r = [lam[a] * lam[b] for a, b in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]]
        want = one_factor([[((1,), "theta")]] * 4, lam, [1] * 4, 30)
        assert abs(orthant4_digits(r, 30) - want) < mp.mpf(10) ** -30


def _corr6(C):
    return [C[a, b] / sp.sqrt(C[a, a] * C[b, b]) for a, b in [(0, 1), (0, 2), (0, 3), (1, 2),
                                                                (1, 3), (2, 3)]]


def test_orthant_second_path_general_correlation():
    """P4 at a general R = P4 at a one-factor R0 (oracle quadrature) + the line integral of the
    gradient (fdiff) along the segment R0 -> R: a different path from Plackett's ray."""
    C, lam, sc = one_factor_cov(53)
    with mp.workdps(50):
        r0 = [mp.mpf(sp.N(x, 50)) for x in _corr6(C)]
        r1 = [mp.mpf(sp.N(x, 50)) for x in _corr6(rational_cov(54, 4))]
    syms = sp.symbols("r0:6")
    grads = [sp.lambdify(syms, sp.diff(Orthant4(*syms), s), "mpmath") for s in syms]
    with mp.workdps(40):
        d = [b - a for a, b in zip(r0, r1, strict=True)]

        def f(u):
            p = [a + u * x for a, x in zip(r0, d, strict=True)]
            return sum(x * g(*p) for x, g in zip(d, grads, strict=True))

        start = one_factor([[((1,), "theta")]] * 4, lam, [1] * 4, 30)
        want = start + mp.quad(f, [0, 1])
        assert abs(orthant4_digits(r1, 30) - want) < mp.mpf(10) ** -30


def test_orthant_float64_and_evalf():
    with mp.workdps(40):
        r = [mp.mpf(sp.N(x, 40)) for x in _corr6(rational_cov(55, 4))]
    ref = orthant4_digits(r, 30)
    assert abs(orthant4_float(*[float(x) for x in r]) - float(ref)) < 2e-15
    vec = orthant4_float(*[np.array([float(x), 0.0]) for x in r])
    assert abs(vec[1] - 1 / 16) < 1e-16
    assert sp.N(Orthant4(*[R(1, 2)] * 6), 30) == sp.Float("0.2", 30)


def test_orthant_refuses_a_matrix_outside_the_cone():
    """Orthant4's numbers come from the numeric layer, which refuses correlations that no four
    Gaussian fields have (smallest eigenvalue about -1.1) in float64, in mpmath and in evalf."""
    bad = [R(99, 100), R(9, 10), R(-9, 10), R(9, 10), R(-9, 10), R(1, 2)]
    r = sp.symbols("r0:6")
    for backend in ("numpy", "mpmath"):
        with pytest.raises(ValueError, match="not positive semi-definite"):
            lambdify(r, Orthant4(*r), backend)(*[float(x) for x in bad])
    with pytest.raises(ValueError, match="not positive semi-definite"):
        sp.N(Orthant4(*bad), 20)


def test_orthant_integral_form_and_special_values():
    r = sp.symbols("r0:6")
    o = Orthant4(*r)
    integral = o.as_integral()
    assert integral.atoms(sp.Integral) and not integral.atoms(sp.Float)
    vals = dict(zip(r, [R(1, 3), R(-1, 5), R(1, 7), R(2, 9), R(1, 11), R(-1, 4)], strict=True))
    (intg,) = integral.xreplace(vals).atoms(sp.Integral)
    t = intg.limits[0][0]
    f = sp.lambdify(t, intg.function, "mpmath")
    with mp.workdps(40):
        val = mp.mpf(1) / 16 + mp.quad(f, [0, 1])
        assert abs(val - mp.mpf(sp.N(o.xreplace(vals), 40))) < mp.mpf(10) ** -30
    assert Orthant4(0, 0, 0, 0, 0, 0) == R(1, 16)
    assert Orthant4(0, 0, 0, R(1, 3), 0, 0) == R(1, 16) + sp.asin(R(1, 3)) / (8 * sp.pi)


# ----------------------------------------------------------------------------- exactness

def test_expressions_are_exact():
    for s, t in [("relu", "erf"), ("x**3 - 3*x", "relu"), ("(x**2 - 1)/2", "erf")]:
        for k, e in pair_integrals(s, t).items():
            e = sp.sympify(e)
            assert not e.atoms(sp.Float), (s, t, k)
            assert all(isinstance(n, sp.Rational) for n in e.atoms(sp.Number)), (s, t, k)
            assert e.atoms(sp.NumberSymbol) <= {sp.pi}, (s, t, k)


def test_float64_lambdify_of_relu_I4():
    """The numpy route (Gauss–Legendre orthant probability) against the 30-digit value."""
    S = covariance_symbols(4)
    syms = [S[a, b] for a in range(4) for b in range(a, 4)]
    expr = I4("relu", "relu", "relu", "relu", S)
    C = rational_cov(61, 4)
    vals = [C[a, b] for a in range(4) for b in range(a, 4)]
    f64 = lambdify(syms, expr, "numpy")(*[float(v) for v in vals])
    assert abs(f64 - float(evaluate(expr, C, 30))) < 1e-14
    with mp.workdps(30):
        fmp = lambdify(syms, expr, "mpmath")(*_mp(vals))
        assert abs(fmp - evaluate(expr, C, 30)) < mp.mpf(10) ** -28


# ----------------------------------------------------------------------------- every pair

FAMILY = ["relu", "erf", "linear", "x**2", "x**3 - 3*x"]


@pytest.mark.full
@pytest.mark.parametrize("s", FAMILY)
@pytest.mark.parametrize("t", FAMILY)
def test_every_pair_every_integral_20_digits(s, t):
    """All eight integrals a (student, teacher) hierarchy calls, against the quadrature oracle
    (I2, I3 at general covariances, I4 at one-factor ones)."""
    dps = 20
    got = pair_integrals(s, t)
    slots = {"s": s, "t": t}
    for key, expr in got.items():
        kind, pattern = key.split("_")
        if kind == "I2":
            C = rational_cov(71, 2)
            want = oracle_pair(slot_fn(slots[pattern[0]]), slot_fn(slots[pattern[1]]), _mpC(C), dps)
        elif kind == "I3":
            C = rational_cov(72, 3)
            want = oracle_I3like(deriv(slot_fn(s)), slot_fn(slots[pattern[1]]), _mpC(C), dps)
        else:
            C, lam, sc = one_factor_cov(73)
            fns = [deriv(slot_fn(s)), deriv(slot_fn(s))] + [slot_fn(slots[c]) for c in pattern[2:]]
            want = one_factor(fns, lam, sc, dps)
        assert_close(evaluate(expr, C, dps), want, dps, (s, t, key))


@pytest.mark.parametrize("module", ["activations", "expectations", "orthant", "integrals", "relu"])
def test_docstring_examples(module):
    import doctest
    import importlib
    mod = importlib.import_module(f"derive.family.{module}")
    assert doctest.testmod(mod, optionflags=doctest.ELLIPSIS).failed == 0
