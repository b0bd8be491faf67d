"""Gaussian integrals for the committee-machine family: any activation in each slot.

The hierarchy of online SGD (docs/theory/conventions.md, ``derive.hierarchy``) needs, for a
student activation g_s and a teacher activation g_t, the expectations over jointly Gaussian
fields with covariance C

    I2(a, b)       = <g_a(a) g_b(b)>
    I3(a, b, c)    = <g_a'(a) b g_c(c)>
    I4(a, b, c, d) = <g_a'(a) g_b'(b) g_c(c) g_d(d)>

with the student activation on student fields and the teacher activation on teacher fields.

Modules
-------
activations  :class:`Activation` ("erf", "linear", "relu", polynomial strings such as
             "x**3 - 3*x", parsed without eval; decimals refused).
expectations Exact reduction engine (Stein's lemma, conditioning on δ, Gaussian tilting, Wick,
             sign moments) for products of powers, erf, exp(-x²/2), step and δ factors.
orthant      :class:`Orthant4`, the four-field orthant probability: elementary gradient,
             Plackett's one-dimensional integral, mpmath and float64 Gauss–Legendre evaluation,
             and a ``lambdify`` that knows it.
relu         Hand-written closed forms for ReLU with ReLU, linear and erf.
integrals    Public ``I2(g1, g2, C)``, ``I3(g1, g3, C)``, ``I4(g1, g2, g3, g4, C)`` and
             ``pair_integrals(student, teacher)``.

What is closed form: every I2 and I3 of every pair is elementary (polynomials in C, sqrt, asin);
I4 is elementary unless all four slots carry ReLU/erf factors with a step or erf in each after the
reduction, where one orthant probability (a one-dimensional integral) remains, e.g. ReLU–ReLU:
I4 = elementary + C34 · P4(correlations of C).  All derivatives with respect to C are elementary.

>>> from derive.family import I3
>>> from derive.integrals import covariance_symbols
>>> I3("relu", "relu", covariance_symbols(3))
C23*(asin(C13/(sqrt(C11)*sqrt(C33)))/(2*pi) + 1/4) + C12*sqrt(C11*C33 - C13**2)/(2*pi*C11)
"""
from .activations import Activation, ActivationError, activation  # noqa: F401
from .integrals import I2, I3, I4, pair_integrals  # noqa: F401
from .orthant import Orthant4  # noqa: F401
