"""Activation functions of the committee-machine family as exact value objects.

An :class:`Activation` is one of

* ``"erf"``     g(x) = erf(x / sqrt(2))
* ``"linear"``  g(x) = x
* ``"relu"``    g(x) = max(0, x)
* a polynomial in ``x`` with rational coefficients, given as a string such as ``"x**2"``,
  ``"x**3 - 3*x"`` or ``"(x**2 - 1)/2"``.

Polynomial strings are parsed by walking their Python syntax tree with a short whitelist
(integer literals, the name ``x``, ``+ - * /``, powers with a non-negative integer exponent),
never by ``eval``/``sympify`` of the raw text: nothing else in the string can run.  Decimal
literals are refused, because ``0.1`` is not one tenth in binary and the symbolic layer is
exact; write ``1/10`` instead.  The polynomial ``x`` is the linear activation.

Each activation knows how its value and its first derivative enter a Gaussian expectation
(:meth:`Activation.factor`): a polynomial in the field times one of the "kinds" ``one``,
``erf`` (erf(x/√2)), ``gauss`` (exp(-x²/2)), ``theta`` (the step 1[x > 0]).  The integrals in
:mod:`derive.family.integrals` are built from those pieces.

>>> from derive.family.activations import activation
>>> activation("x**3 - 3*x").name
'poly(x**3 - 3*x)'
>>> activation("x").name, activation("relu").derivative_factor()
('linear', ((1,), 'theta'))
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import sympy as sp

X = sp.Symbol("x", real=True)

NAMED = ("erf", "linear", "relu")
# sizes the symbolic work: I4 of two degree-6 polynomials has ~2.5e4 monomials in C (9 s),
# degree 8 ~2.2e5 (100 s)
MAX_DEGREE = 6

# kinds of non-polynomial factor a slot can carry (see derive.family.expectations)
ONE, ERF, GAUSS, THETA, DELTA = "one", "erf", "gauss", "theta", "delta"


class ActivationError(ValueError):
    """An activation string that is not one of the allowed forms (message names the problem)."""


@dataclass(frozen=True)
class Activation:
    """One activation g.

    Attributes
    ----------
    kind : {"erf", "linear", "relu", "poly"}
    coeffs : tuple of sympy.Rational
        For "poly" (and "linear", ``(0, 1)``): coefficients c_0, c_1, ... of g(x) = sum c_k x^k.
    """

    kind: str
    coeffs: tuple = ()

    @property
    def name(self) -> str:
        if self.kind == "poly":
            return f"poly({sp.sstr(self.expr(X))})"
        return self.kind

    @property
    def is_polynomial(self) -> bool:
        return self.kind in ("poly", "linear")

    @property
    def degree(self) -> int | None:
        return len(self.coeffs) - 1 if self.is_polynomial else None

    def expr(self, x: sp.Expr = X) -> sp.Expr:
        """g(x) as a SymPy expression (ReLU as ``Max(0, x)``)."""
        if self.kind == "erf":
            return sp.erf(x / sp.sqrt(2))
        if self.kind == "relu":
            return sp.Max(0, x)
        return sum((c * x**k for k, c in enumerate(self.coeffs)), sp.Integer(0))

    def derivative_expr(self, x: sp.Expr = X) -> sp.Expr:
        """g'(x) (ReLU: the step ``Heaviside(x)``)."""
        if self.kind == "relu":
            return sp.Heaviside(x)
        t = sp.Dummy("t", real=True)
        return sp.diff(self.expr(t), t).subs(t, x)

    def value_factor(self):
        """g as (polynomial coefficients, kind): g(x) = (sum c_k x^k) * kind(x)."""
        if self.kind == "erf":
            return (sp.Integer(1),), ERF
        if self.kind == "relu":
            return (sp.Integer(0), sp.Integer(1)), THETA
        return self.coeffs, ONE

    def derivative_factor(self):
        """g' as (polynomial coefficients, kind); erf' = sqrt(2/pi) exp(-x²/2)."""
        if self.kind == "erf":
            return (sp.sqrt(2) / sp.sqrt(sp.pi),), GAUSS
        if self.kind == "relu":
            return (sp.Integer(1),), THETA
        d = tuple(k * c for k, c in enumerate(self.coeffs))[1:]
        return (d or (sp.Integer(0),)), ONE

    def factor(self, derivative: bool):
        return self.derivative_factor() if derivative else self.value_factor()

    def __str__(self) -> str:
        return self.name


def activation(spec) -> Activation:
    """Parse an activation: an :class:`Activation`, a name in ``NAMED`` or a polynomial in x.

    Parameters
    ----------
    spec : Activation or str

    Raises
    ------
    ActivationError
        One line naming what is wrong (unknown name, decimal literal, a symbol other than x,
        a negative or non-integer power, degree above ``MAX_DEGREE``).

    Examples
    --------
    >>> activation("(x**2 - 1)/2").coeffs
    (-1/2, 0, 1/2)
    >>> activation("0.5*x")
    Traceback (most recent call last):
    ...
    derive.family.activations.ActivationError: activation '0.5*x': decimal literal 0.5 is not exact; write it as a fraction such as 1/2
    """
    if isinstance(spec, Activation):
        return spec
    if not isinstance(spec, str):
        raise ActivationError(f"activation must be a string (one of {NAMED} or a polynomial in x), "
                              f"got {type(spec).__name__}")
    text = spec.strip()
    if text in NAMED:
        return Activation("linear", (sp.Integer(0), sp.Integer(1))) if text == "linear" \
            else Activation(text)
    expr = _parse_polynomial(text, spec)
    poly = sp.Poly(expr, X)
    coeffs = tuple(sp.Rational(c) for c in reversed(poly.all_coeffs()))
    if len(coeffs) - 1 > MAX_DEGREE:
        raise ActivationError(f"activation {spec!r}: degree {len(coeffs) - 1} is above the "
                              f"maximum {MAX_DEGREE}")
    if coeffs == (0, 1):
        return Activation("linear", coeffs)
    return Activation("poly", coeffs)


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}


def _parse_polynomial(text: str, spec: str) -> sp.Expr:
    def fail(why):
        raise ActivationError(f"activation {spec!r}: {why}; allowed: {', '.join(NAMED)} or a "
                              "polynomial in x with rational coefficients, e.g. 'x**3 - 3*x'")

    if len(text) > 2000:
        fail("string longer than 2000 characters")
    try:
        tree = ast.parse(text.replace("^", "**"), mode="eval")
    except SyntaxError:
        fail("not a valid expression")

    def check_degree(e):
        # sized before expanding: a nested power such as ((x+1)**9)**9 is refused, not built
        deg = sp.Poly(e, X).degree() if e.free_symbols else 0
        if deg > MAX_DEGREE:
            raise ActivationError(f"activation {spec!r}: degree {deg} is above the maximum "
                                  f"{MAX_DEGREE}")
        return sp.expand(e)

    def walk(node):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                fail(f"literal {node.value!r} is not a number")
            if isinstance(node.value, float):
                raise ActivationError(f"activation {spec!r}: decimal literal {node.value!r} is not "
                                      "exact; write it as a fraction such as 1/2")
            return sp.Integer(node.value)
        if isinstance(node, ast.Name):
            if node.id != "x":
                fail(f"unknown name {node.id!r} (the only variable is x)")
            return X
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = walk(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Div) and (b.free_symbols or b == 0):
                fail("division by x or by zero")
            return check_degree(_BINOPS[type(node.op)](a, b))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            base, exp = walk(node.left), walk(node.right)
            if exp.free_symbols or not exp.is_Integer or exp < 0:
                fail(f"exponent {exp} is not a non-negative integer")
            if exp > 64 or (base.free_symbols and sp.Poly(base, X).degree() * exp > MAX_DEGREE):
                fail(f"power {exp} makes the degree exceed {MAX_DEGREE}")
            return check_degree(base**exp)
        fail(f"{type(node).__name__} is not allowed")

    expr = sp.expand(walk(tree.body))
    if not expr.is_polynomial(X):
        fail("not a polynomial")
    return expr
