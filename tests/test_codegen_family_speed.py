"""The shortcuts that make generation of ReLU and polynomial pairs fast give SymPy's own
results: the argument matching of the common-subexpression pass against ``sympy.cse``, the
sorted terms of a printed sum against ``Expr.as_ordered_terms``, the substitution against
``Basic.xreplace``, the one-walk partials against ``sympy.diff``, and the merged-ReLU integrals
derived once per pattern against the expectation engine run on the covariance itself."""
from __future__ import annotations

import random
from fractions import Fraction

import mpmath
import pytest
import sympy as sp

from derive import integrals
from derive.codegen import module_printer as codegen
from derive.codegen.cse import cse
from derive.codegen.derivatives import diff
from derive.family.integrals import _expand
from derive.family.orthant import Orthant4, gradient_entry
from derive.codegen.forward_derivatives import _three_address, all_partials
from derive.hierarchy import Hierarchy, SystemKey
from derive.codegen.substitute import rebuild, xreplace
from derive.codegen.term_order import ordered_terms

pytestmark = [pytest.mark.second_basis, pytest.mark.higher_precision]  # oracle (tests/conftest.py)

PAIRS = [("relu", "relu", 2, 1), ("x**3 - 3*x", "x**3 - 3*x", 2, 2), ("erf", "relu", 2, 1)]


def _coefficients(student, teacher, K, M):
    d = codegen._derive(SystemKey(student, K, M, teacher=teacher))
    return d, d.a_exprs + d.f_exprs


def _same(a, b):
    (ra, ea), (rb, eb) = a, b
    return ([(s, sp.srepr(v)) for s, v in ra] == [(s, sp.srepr(v)) for s, v in rb]
            and [sp.srepr(e) for e in ea] == [sp.srepr(e) for e in eb])


@pytest.mark.parametrize("student, teacher, K, M", PAIRS)
def test_cse_with_argument_matching_is_sympys(student, teacher, K, M):
    """Polynomial and ReLU coefficients: long sums sharing many terms, where the matching of
    common arguments does most of its work."""
    _, exprs = _coefficients(student, teacher, K, M)
    ref = sp.cse(exprs, symbols=sp.numbered_symbols("x"), order="none")
    assert _same(cse(exprs, "x"), ref)


def test_cse_matching_on_overlapping_sums():
    """Sums and products sharing overlapping subsets of arguments (the recursive matches)."""
    a, b, c, d, e = sp.symbols("a b c d e")
    exprs = [a + b + c + d, a + b + c + e, b + c + d + e, a * b * c, a * b * d * e, b * c * e,
             sp.sqrt(a + b + c) + a * b * c * d, (a + b) * (c + d + e)]
    ref = sp.cse(exprs, symbols=sp.numbered_symbols("x"), order="none")
    assert _same(cse(exprs, "x"), ref)


@pytest.mark.parametrize("student, teacher, K, M", PAIRS + [("erf", "erf", 2, 2)])
def test_ordered_terms_are_sympys(student, teacher, K, M):
    d, exprs = _coefficients(student, teacher, K, M)
    replacements, reduced = cse(exprs, "x")
    sums = {a for e in [v for _, v in replacements] + list(reduced) + [d.h.eps_g]
            for a in sp.preorder_traversal(e) if a.is_Add}
    x, y = sp.symbols("x y")
    sums |= {1 - x, 2 + x / y - y**-2 + sp.sqrt(2) * x, x * y**3 - sp.pi * x**2 + y / 3}
    assert len(sums) > 20
    for s in sums:
        assert ordered_terms(s) == s.as_ordered_terms(), s


def test_substitution_is_xreplace():
    """The ReLU four-field integral (orthant probability, arcsines of correlations) and a
    polynomial one, substituted with a level-1 covariance with coincident fields."""
    from derive import family
    C = integrals.covariance_symbols(4)
    h = Hierarchy(SystemKey("relu", 2, 2))
    fields = [("x", 0), ("x", 1), ("y", 0), ("x", 0)]
    rule = {C[a, b]: h._c1(fields[a], fields[b]) for a in range(4) for b in range(a, 4)}
    for expr in (family.I4("relu", "relu", "relu", "relu", C),
                 family.I4("x**3 - 3*x", "x**3 - 3*x", "x**2", "relu", C)):
        assert xreplace(expr, rule) == expr.xreplace(rule)
    r = sp.symbols("r0:6", real=True)
    assert rebuild(Orthant4, r) == Orthant4(*r)
    zero = [sp.Integer(0), *r[1:]]
    assert rebuild(Orthant4, zero) == Orthant4(*zero)
    assert rebuild(sp.asin, [-r[0]]) == sp.asin(-r[0]) == -sp.asin(r[0])


def test_orthant_gradient_by_renaming_is_the_entry():
    r = sp.symbols("q0:6", real=True)
    for k in range(6):
        assert Orthant4(*r).fdiff(k + 1) == gradient_entry(r, k)
        assert diff(Orthant4(*r), r[k]) == sp.diff(Orthant4(*r), r[k])


@pytest.mark.parametrize("student, teacher, K, M", PAIRS)
def test_one_walk_partials_are_sympy_diff(student, teacher, K, M):
    """Every partial the printed derivatives use (each line of the three-address program by
    each symbol it has) against ``sympy.diff``."""
    _, exprs = _coefficients(student, teacher, K, M)
    replacements, reduced = cse(exprs, "x")
    program, _ = _three_address(replacements, reduced, "z")
    checked = 0
    for _, expr in program[:400]:
        syms = sorted(expr.free_symbols, key=str)
        got = all_partials(expr, syms)
        for s in syms:
            assert got[s] == sp.diff(expr, s), (expr, s)
            checked += 1
    assert checked > 100


def _pd_point(h, seed):
    """A positive-definite level-1 covariance of the K + M fields, exact rationals."""
    rng = random.Random(seed)
    n = h.key.K + h.key.M
    A = [[Fraction(rng.randint(-10, 10), 10) for _ in range(n)] for _ in range(n)]
    C = [[sum(A[i][k] * A[j][k] for k in range(n)) / n + (Fraction(1, 2) if i == j else 0)
          for j in range(n)] for i in range(n)]
    K = h.key.K

    def entry(block, name):
        _, a, b = name.split("_")
        a, b = int(a) - 1, int(b) - 1
        return C[a][K + b] if block == "R" else C[K + a][K + b] if block == "T" else C[a][b]
    return {s: entry(s.name[0], s.name) for s in h.v1.state + h.v1.teacher}


@pytest.mark.parametrize("student, teacher", [("relu", "relu"), ("relu", "x**3 - 3*x"),
                                              ("relu", "erf")])
def test_merged_relu_patterns_match_the_engine_on_the_covariance(student, teacher):
    """Coincident ReLU fields are merged and the merged integral is derived once per pattern in
    covariance symbols; here each merged I4 of K = 3, M = 2 against the expectation engine run
    on that covariance directly, at 30 digits at a positive-definite point (the two are
    different expressions of one function: agreement to rounding, 1e-25)."""
    h = Hierarchy(SystemKey(student, 3, 2, teacher=teacher))
    vals = _pd_point(h, 3)
    xs = [("x", i) for i in range(3)]
    ys = [("y", n) for n in range(2)]
    cases = [(xs[0], xs[0], ys[0], ys[1]), (xs[0], xs[1], xs[0], ys[1]),
             (xs[1], xs[1], xs[1], xs[2]), (xs[0], xs[2], xs[2], xs[0]),
             (xs[2], xs[2], ys[1], ys[1])]
    for f in cases:
        got = h._merged_I4(f)
        # the engine on the merged covariance itself (what the pattern route replaced)
        fields, factors = h._merged_fields(f)
        n = len(fields)
        direct = _expand(sp.Matrix(n, n, lambda a, b: h._c1(fields[a], fields[b])), factors)
        sub = {s: sp.Rational(v.numerator, v.denominator) for s, v in vals.items()}
        a, b = sp.N(got.xreplace(sub), 30), sp.N(direct.xreplace(sub), 30)
        assert abs(a - b) < sp.Float(1e-25) * (1 + abs(b)), f


class _ExactContext:
    """Just enough of a number context for printed sums of rationals: exact Fractions."""

    @staticmethod
    def convert(v):
        return Fraction(v)


def test_a_long_sum_prints_as_code_python_compiles():
    """A sum of 5,000 terms (deeper than CPython's compiler nests ``a + b + ...``) prints as a
    flat ``sum((...))`` that compiles and gives the exact sum; short sums print as before."""
    from derive.codegen.long_sums import LONG
    x = sp.symbols("y0:5000")
    expr = sp.Add(*[sp.Rational(i % 7 - 3, 1 + i % 5) * x[i] * x[(i * 31) % 5000]
                    for i in range(5000)])
    printer = codegen._printer("mpmath")
    code = printer.doprint(expr)
    # (the chain "t1 + t2 + ..." of these terms raises RecursionError in CPython 3.11's compiler)
    assert code.startswith("sum((")
    rng = random.Random(7)
    vals = {str(s): Fraction(rng.randint(-50, 50), rng.randint(1, 9)) for s in x}
    got = eval(compile(code, "<sum>", "eval"), {"ctx": _ExactContext, **vals})
    want = expr.xreplace({s: sp.Rational(vals[str(s)].numerator, vals[str(s)].denominator)
                          for s in x})
    assert got == Fraction(int(want.p), int(want.q))
    short = sp.Add(*x[:LONG])
    assert printer.doprint(short) == codegen.PythonCodePrinter().doprint(short)


def test_a_long_derivative_line_prints_as_code_python_compiles():
    """The chain rule along a program whose output uses 3,000 lines that depend on the
    variable: the derivative line is a flat sum, compiles, and equals the product rule worked
    out here in exact rationals (sympy.diff of the 3,000-term sum gave the same number in ~8 s
    of CPU, the product rule takes 0.1 s)."""
    from derive.codegen.forward_derivatives import program_derivatives
    a = sp.Symbol("a")
    xs = sp.symbols("x0:3000")
    replacements = [(xs[i], (i + 1) * a**2 + i) for i in range(3000)]
    output = sp.Add(*[xs[i] * xs[(i + 1) % 3000] for i in range(3000)])
    values, lines, index, codes = program_derivatives(replacements, [output], [a],
                                                      codegen._printer("mpmath", order="none"))
    assert index == [(0, 0)] and codes[0].startswith("sum((")
    env = {"ctx": _ExactContext, "a": Fraction(3, 7)}
    exec(compile("\n".join(values + lines), "<program>", "exec"), env)
    got = eval(compile(codes[0], "<d>", "eval"), env)
    # d/da sum_i x_i x_(i+1) with x_i = (i+1) a^2 + i, x_i' = 2 (i+1) a, at a = 3/7
    q = Fraction(3, 7)
    x = [(i + 1) * q * q + i for i in range(3000)]
    dx = [2 * (i + 1) * q for i in range(3000)]
    assert got == sum(dx[i] * x[(i + 1) % 3000] + x[i] * dx[(i + 1) % 3000] for i in range(3000))


@pytest.mark.full
@pytest.mark.slow
def test_cubic_K6_modules_import_and_agree_exactly(tmp_path, monkeypatch):
    """The cubic pair at K = M = 6 (η² coefficients of ~3,900 terms): both printed modules
    import, and the printed coefficients at a rational point, at 60 digits, equal the derived
    polynomials evaluated exactly (1e-45 relative: a few thousand roundings at 60 digits)."""
    from solvers.core import registry
    from solvers.core.numbers import MpmathContext
    monkeypatch.setenv("SCALING_ODES_CACHE", str(tmp_path))
    key = SystemKey("x**3 - 3*x", 6, 6)
    system = registry.load(key, "mpmath")
    registry.load(key, "taylor")
    d = codegen._derive(key)
    h = d.h
    rng = random.Random(11)
    point = {s: sp.Rational(rng.randint(-20, 20), 100) for s in h.v1.state + h.v1.teacher}
    point[h.eta] = sp.Rational(1, 3)
    exprs = d.a_exprs + d.f_exprs
    longest = sorted(range(len(exprs)), key=lambda k: -len(exprs[k].args))[:4] + [0, 1]
    with MpmathContext(60) as ctx:
        c = lambda q: ctx.convert(Fraction(int(q.p), int(q.q)))  # noqa: E731
        got = system.coefficients([c(point[s]) for s in h.v1.state],
                                  [c(point[s]) for s in h.v1.teacher], c(point[h.eta]), ctx)
        for k in longest:
            want = exprs[k].xreplace(point)
            assert abs(got[k] - c(want)) <= mpmath.mpf(10) ** -45 * (1 + abs(c(want))), k
