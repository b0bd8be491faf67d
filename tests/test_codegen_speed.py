"""The faster generation route prints the same functions: the CSE pass against sympy.cse, the
forward-accumulated derivatives against sympy.diff, and a freshly generated erf K = M = 3
module against the explicit SymPy closed system (derive/systems.py) and central differences."""
from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

from derive import spectra, systems
from derive.codegen import module_printer as codegen
from derive.codegen.cse import cse
from derive.hierarchy import Hierarchy, SystemKey
from solvers.core import registry
from solvers.core.numbers import MpmathContext

pytestmark = [pytest.mark.higher_precision, pytest.mark.second_basis]  # oracle (tests/conftest.py)


def _same(a, b):
    """Two cse results, structurally (srepr: the printed code follows from it)."""
    (ra, ea), (rb, eb) = a, b
    return ([(s, sp.srepr(v)) for s, v in ra] == [(s, sp.srepr(v)) for s, v in rb]
            and [sp.srepr(e) for e in ea] == [sp.srepr(e) for e in eb])


def test_fast_cse_is_sympys():
    """On the coefficients of erf K = 2, M = 1 and their symbolic derivatives (sums with as
    many negative as positive terms, whose sign SymPy settles by sort keys), and on a sum with
    an infinity (handed to sympy.cse)."""
    d = codegen._derive(SystemKey("erf", 2, 1))
    exprs = d.a_exprs + d.f_exprs
    _, dexprs = codegen._derivatives(exprs, d.h.v1.state)
    x, y = sp.symbols("x y")
    for block in (exprs, dexprs, [d.h.eps_g], [x - y + sp.sqrt(x - y), (y - x) ** -2],
                  [sp.oo * x + sp.sqrt(x + y), sp.sqrt(x + y) / 2]):
        ref = sp.cse(block, symbols=sp.numbered_symbols("x"), order="none")
        assert _same(cse(block, "x"), ref)


def _point(h, seed):
    """A random level-1 state near the identity covariance (positive definite), exact."""
    rng = random.Random(seed)
    vals = {}
    for s in h.v1.state + h.v1.teacher:
        diag = s.name[0] in "QT" and s.name.split("_")[1] == s.name.split("_")[2]
        vals[s] = Fraction(rng.randint(5, 15), 10) if diag else Fraction(rng.randint(-20, 20), 100)
    return vals


def test_forward_derivatives_equal_sympy_diff():
    """coefficient_derivatives of the checked-in erf K = M = 2 module against sympy.diff of the
    coefficient expressions, at 40 digits: every symbolic nonzero is printed, and the printed
    entries the symbolic route drops are zero.  Tolerance: the two evaluations round
    differently, a few hundred operations at 40 digits (1e-30 leaves 8 digits to spare)."""
    key = SystemKey("erf", 2, 2)
    d = codegen._derive(key)
    h = d.h
    v1, t1 = h.v1.state, h.v1.teacher
    sym_idx, sym_exprs = codegen._derivatives(d.a_exprs + d.f_exprs, v1)
    na = len(d.a_exprs)
    system = registry.load(key, "mpmath")
    printed = list(system.DA_INDEX) + [(k + na, u) for k, u in system.DF_INDEX]
    assert set(sym_idx) <= set(printed)
    vals = _point(h, 1)
    eta = Fraction(3, 10)
    args = list(v1) + list(t1) + [h.eta]
    f = sp.lambdify(args, sym_exprs, modules="mpmath")
    with MpmathContext(40) as ctx:
        num = [ctx.convert(vals[s]) for s in list(v1) + list(t1)]
        ref = dict(zip(sym_idx, f(*num, ctx.convert(eta)), strict=True))
        got = system.coefficient_derivatives(num[:len(v1)], num[len(v1):], ctx.convert(eta), ctx)
        assert len(got) == len(printed)
        err = max(abs(g - ref.get(i, 0)) for i, g in zip(printed, got, strict=True))
    assert err < mpmath.mpf(10) ** -30


def test_fresh_K3_M3_module_matches_the_closed_system():
    """A freshly generated erf K = M = 3 module (empty cache): the level right-hand side at
    L = 2, order 2, against the explicit SymPy closed system evaluated at the same exact point
    at 50 digits, and its coefficient derivatives against central differences of its own
    coefficients (step 1e-22 at 60 digits: truncation ~1e-44, cancellation ~1e-38).  Tolerance
    1e-25 as asked of the generator; both errors are far smaller at these precisions."""
    key = SystemKey("erf", 3, 3)
    assert key not in registry.CHECKED_IN
    spec = spectra.power_law(2, 1)
    system = registry.load(key, "mpmath")
    h = Hierarchy(key)
    closed = systems.level_system(key, spec, 2)
    vals = _point(h, 2)
    rng = random.Random(5)
    # level 0 (the state) and level 1 (= v1); the teacher at levels 1 and 2
    y0 = [Fraction(rng.randint(-30, 30), 100) for _ in h.v1.state]
    y1 = [vals[s] for s in h.v1.state]
    t1 = [vals[s] for s in h.v1.teacher]
    t2 = [Fraction(rng.randint(-30, 30), 100) for _ in h.v1.teacher]
    eta = Fraction(1, 2)
    sub = dict(zip(closed.states, [sp.Rational(v.numerator, v.denominator) for v in y0 + y1],
                   strict=True))
    sub.update(zip(closed.parameters, [sp.Rational(v.numerator, v.denominator)
                                        for v in [eta] + t1 + t2], strict=True))
    ref = [sp.N(r.xreplace(sub), 50) for r in closed.rhs]
    with MpmathContext(50) as ctx:
        import numpy as np
        c = ctx.convert
        y = np.array([[c(v) for v in y0], [c(v) for v in y1]], dtype=object)
        T = np.array([[c(v) for v in t1], [c(v) for v in t2]], dtype=object)
        cc = np.array([c(Fraction(int(x.p), int(x.q))) for x in spec.charpoly[:2]],
                      dtype=object)
        nu = np.array([c(Fraction(int(x.p), int(x.q))) for x in
                       (spec.nu(1), spec.nu(2))], dtype=object)
        got = system.rhs_levels(y, T, cc, nu, c(eta), c(eta) ** 2, ctx).ravel()
        err = max(abs(g - mpmath.mpf(str(r))) for g, r in zip(got, ref, strict=True))
    assert err < mpmath.mpf(10) ** -25
    with MpmathContext(60) as ctx:
        c = ctx.convert
        v1 = [c(v) for v in y1]
        tt = [c(v) for v in t1]
        dco = system.coefficient_derivatives(v1, tt, c(eta), ctx)
        step = mpmath.mpf(10) ** -22
        n_a = len(system.A_INDEX)
        for u in range(len(v1)):
            up, dn = list(v1), list(v1)
            up[u] += step
            dn[u] -= step
            cu = system.coefficients(up, tt, c(eta), ctx)
            cd = system.coefficients(dn, tt, c(eta), ctx)
            fd = [(a - b) / (2 * step) for a, b in zip(cu, cd, strict=True)]
            printed = {ka: dco[k] for k, (ka, uu) in enumerate(system.DA_INDEX) if uu == u}
            printed |= {n_a + kf: dco[len(system.DA_INDEX) + k]
                        for k, (kf, uu) in enumerate(system.DF_INDEX) if uu == u}
            for j, value in enumerate(fd):
                assert abs(printed.get(j, 0) - value) < mpmath.mpf(10) ** -25, (u, j)
