"""Activation strings that are polynomials in x, parsed exactly and without SymPy.

One parser for both layers: the symbolic side (:mod:`derive.family.activations`, which turns
the coefficients into SymPy rationals) and the simulator's start-up (``solvers.sim.family``,
which must stay light).  The string is walked as a Python syntax tree with a short whitelist
(integer literals, the name ``x``, ``+ - * /``, powers with a non-negative integer exponent);
nothing in it is ever evaluated.  Every step is sized before it is done, so that no string
within the length limit can hang or exhaust the parser:

* the degree is tracked through every operation and may not pass ``MAX_DEGREE`` (the
  symbolic cost of the Gaussian integrals grows steeply with it);
* every exact number met on the way (a literal, an intermediate constant, a coefficient)
  has numerator and denominator below ``MAX_COEFFICIENT`` in magnitude: ``2**(10**9)`` is
  refused before it is computed, and so is a coefficient such as ``2**100`` that float64
  simulations and ODE coefficients could not carry (its square already nears the float64
  range once multiplied by a power of the fields);
* nesting deeper than ``MAX_NESTING`` (brackets, unary signs, chained operators) is refused
  instead of overflowing Python's recursion limit.

>>> polynomial_coefficients("(x**2 - 1)/2")
[Fraction(-1, 2), Fraction(0, 1), Fraction(1, 2)]
"""
from __future__ import annotations

import ast
from fractions import Fraction

NAMED = ("erf", "linear", "relu")
# sizes the symbolic work: I4 of two degree-6 polynomials has ~2.5e4 monomials in C (9 s),
# degree 8 ~2.2e5 (100 s)
MAX_DEGREE = 6
MAX_COEFFICIENT = 10**6
MAX_NESTING = 100
MAX_LENGTH = 2000


class ActivationError(ValueError):
    """An activation that is not one of the allowed forms, or one a theory does not cover (the
    message names the problem).  The one such error of every layer: derive.family, the simulator
    and the Bayes and one-step theories raise it."""


def parse(spec) -> tuple:
    """(kind, exact coefficients) of an activation string, the one reading both layers share:
    ("erf", ()), ("relu", ()), ("linear", (0, 1)) (also for "x"), or ("poly", (c_0, c_1, ...))
    with Fraction coefficients; ActivationError for anything else.

    >>> parse(" 2*x/2 ")
    ('linear', (Fraction(0, 1), Fraction(1, 1)))
    """
    if not isinstance(spec, str):
        raise ActivationError(f"activation must be a string ({', '.join(NAMED)} or a polynomial "
                              f"in x), got {spec!r}")
    text = spec.strip()
    if text in ("erf", "relu"):
        return text, ()
    coeffs = (Fraction(0), Fraction(1)) if text == "linear" \
        else tuple(polynomial_coefficients(spec))
    return ("linear", coeffs) if coeffs == (0, 1) else ("poly", coeffs)


def polynomial_coefficients(spec: str) -> list:
    """Exact coefficients c_0, c_1, ... (Fractions, trailing zeros removed; at least one) of a
    polynomial string; ActivationError (one line naming the string and the problem)."""
    text = spec.strip()
    shown = repr(spec) if len(spec) <= 60 else repr(spec[:50]) + f"... ({len(spec)} characters)"

    def fail(why):
        raise ActivationError(f"activation {shown}: {why}; allowed: {', '.join(NAMED)} or a "
                              "polynomial in x with rational coefficients, e.g. 'x**3 - 3*x'")

    if len(text) > MAX_LENGTH:
        fail(f"string longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval")
    except SyntaxError:
        fail("not a valid expression")
    except (RecursionError, MemoryError):
        fail(f"nested more than {MAX_NESTING} levels deep")

    def degree(a):
        return max((k for k, c in enumerate(a) if c), default=0)

    def sized(a):
        for c in a:
            if abs(c.numerator) > MAX_COEFFICIENT or c.denominator > MAX_COEFFICIENT:
                fail(f"the number {c} (on the way to the coefficients) is beyond "
                     f"{MAX_COEFFICIENT:.0e} in numerator or denominator")
        return a

    def mul(a, b):
        if degree(a) + degree(b) > MAX_DEGREE:
            fail(f"degree {degree(a) + degree(b)} is above the maximum {MAX_DEGREE}")
        a, b = a[:degree(a) + 1], b[:degree(b) + 1]
        out = [Fraction(0)] * (len(a) + len(b) - 1)
        for i, p in enumerate(a):
            for j, q in enumerate(b):
                out[i + j] += p * q
        return sized(out)

    def add(a, b, sign=1):
        n = max(len(a), len(b))
        a, b = a + [Fraction(0)] * (n - len(a)), b + [Fraction(0)] * (n - len(b))
        return sized([p + sign * q for p, q in zip(a, b)])

    def power(a, e, node):
        if degree(e) or e[0].denominator != 1 or e[0] < 0:
            fail(f"exponent {ast.unparse(node)} is not a non-negative integer")
        n = int(e[0])
        if degree(a) and degree(a) * n > MAX_DEGREE:
            fail(f"power {n} makes the degree exceed {MAX_DEGREE}")
        if not degree(a):
            c = a[0]
            if c not in (0, 1, -1) and n > 64:
                # refused before computing it: |c|**n passes MAX_COEFFICIENT long before
                fail(f"the constant power {ast.unparse(node)} is beyond {MAX_COEFFICIENT:.0e}")
            return sized([c ** n])
        out = [Fraction(1)]
        for _ in range(n):
            out = mul(out, a)
        return out

    def walk(node, depth):
        if depth > MAX_NESTING:
            fail(f"nested more than {MAX_NESTING} levels deep")
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                fail(f"literal {node.value!r} is not a number")
            if isinstance(node.value, float):
                fail(f"decimal literal {node.value!r} is not exact; write it as a fraction "
                     "such as 1/2")
            return sized([Fraction(node.value)])
        if isinstance(node, ast.Name):
            if node.id != "x":
                fail(f"unknown name {node.id!r} (the only variable is x)")
            return [Fraction(0), Fraction(1)]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = walk(node.operand, depth + 1)
            return [-c for c in v] if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult,
                                                                ast.Div, ast.Pow)):
            a, b = walk(node.left, depth + 1), walk(node.right, depth + 1)
            if isinstance(node.op, ast.Pow):
                return power(a, b, node.right)
            if isinstance(node.op, ast.Add):
                return add(a, b)
            if isinstance(node.op, ast.Sub):
                return add(a, b, -1)
            if isinstance(node.op, ast.Mult):
                return mul(a, b)
            if degree(b) or b[0] == 0:
                fail("division by x or by zero")
            return sized([c / b[0] for c in a])
        fail(f"{type(node).__name__} is not allowed")

    try:
        c = walk(tree.body, 0)
    except RecursionError:
        fail(f"nested more than {MAX_NESTING} levels deep")
    while len(c) > 1 and c[-1] == 0:
        c.pop()
    return c
