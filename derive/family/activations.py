"""Activation functions of the committee-machine family as exact value objects.

An :class:`Activation` is one of

* ``"erf"``     g(x) = erf(x / sqrt(2))
* ``"linear"``  g(x) = x
* ``"relu"``    g(x) = max(0, x)
* a polynomial in ``x`` with rational coefficients, given as a string such as ``"x**2"``,
  ``"x**3 - 3*x"`` or ``"(x**2 - 1)/2"``.

Polynomial strings are parsed by walking their Python syntax tree with a short whitelist
(integer literals, the name ``x``, ``+ - * /``, powers with a non-negative integer exponent),
never by ``eval``/``sympify`` of the raw text: nothing else in the string can run
(:mod:`derive.polynomial_text`, shared with the simulator; it also bounds the degree, the size of
every number and the nesting, so that no string can hang the parser).  Decimal
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

from dataclasses import dataclass

import sympy as sp

from derive.polynomial_text import MAX_DEGREE, NAMED, ActivationError, parse  # noqa: F401

X = sp.Symbol("x", real=True)

# kinds of non-polynomial factor a slot can carry (see derive.family.expectations)
ONE, ERF, GAUSS, THETA, DELTA = "one", "erf", "gauss", "theta", "delta"


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
    derive.polynomial_text.ActivationError: activation '0.5*x': decimal literal 0.5 is not exact; write it as a fraction such as 1/2; allowed: erf, linear, relu or a polynomial in x with rational coefficients, e.g. 'x**3 - 3*x'
    """
    if isinstance(spec, Activation):
        return spec
    kind, coeffs = parse(spec)
    return Activation(kind, tuple(sp.Rational(c.numerator, c.denominator) for c in coeffs))
