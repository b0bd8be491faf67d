"""I2, I3, I4 for any activation in each slot (the committee-machine family).

For jointly Gaussian zero-mean fields with covariance C (1-based entries C[a, b] as in
:mod:`derive.integrals`), with activation g_a on slot a:

    I2(g1, g2; C)         = <g1(z1) g2(z2)>
    I3(g1, g3; C)         = <g1'(z1) z2 g3(z3)>
    I4(g1, g2, g3, g4; C) = <g1'(z1) g2'(z2) g3(z3) g4(z4)>

In the hierarchy slot 1 (and 2 of I4) is always a student field, so g1 = g2 = student activation;
slots 3, 4 carry the student or the teacher activation depending on the field.  Activations are
:class:`~derive.family.activations.Activation` objects or strings ("erf", "linear", "relu", or a
polynomial in x such as "x**3 - 3*x").

Every result is an exact SymPy expression (integers, rationals, sqrt, pi, asin; for I4 with ReLU
or erf in all four slots the orthant probability :class:`~derive.family.orthant.Orthant4`), derived
by Stein's lemma and conditioning in :mod:`derive.family.expectations`.  Polynomial-only slots give
polynomials in C (Wick/Isserlis).  ReLU closed forms written out by hand are in
:mod:`derive.family.relu`; the tests check both against quadrature.

>>> from derive.integrals import covariance_symbols
>>> I3("relu", "linear", covariance_symbols(3))
C23/2
>>> I2("erf", "linear", covariance_symbols(2))
sqrt(2)*C12/(sqrt(pi)*sqrt(C11 + 1))
"""
from __future__ import annotations

from itertools import product

import sympy as sp

from .activations import ONE, activation
from .expectations import _pairings, expect
from .relu import I2_FORMS, I3_FORMS, I4_FORMS

ROUTES = ("auto", "engine")


def _closed(table, acts, C, route):
    """The hand-written closed form for these activations, or None (then the engine runs)."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
    if route == "engine":
        return None
    kinds = tuple(a.kind for a in acts)
    if len(set(kinds)) == 1 and kinds[0] in ("erf", "linear"):
        from derive import integrals as base          # the project's erf / linear forms
        return {2: base.I2, 3: base.I3, 4: base.I4}[C.shape[0]](kinds[0], C)
    form = table.get(kinds)
    return form(C) if form else None


def _expand(C, factors):
    """Sum over the monomials of each slot's polynomial factor of expect(C, powers, kinds)."""
    kinds = tuple(k for _, k in factors)
    if all(k == ONE for k in kinds):
        return _polynomial(C, factors)
    terms = []                      # one Add at the end: repeated += on an Add is quadratic
    for choice in product(*[[(p, c) for p, c in enumerate(coeffs) if c != 0]
                            for coeffs, _ in factors]):
        coef = sp.Mul(*[c for _, c in choice])
        terms.append(coef * expect(C, tuple(p for p, _ in choice), kinds))
    out = sp.Add(*terms)
    # polynomial results (no sqrt, asin, orthant) are returned expanded: canonical and smaller
    return sp.expand(out) if out.is_polynomial(*C.free_symbols) else out


def _polynomial(C, factors):
    """Polynomial slots only: accumulate Wick pairings as integer-exponent dictionaries and build
    one sum at the end (SymPy's Add would re-sort on every partial sum)."""
    n = C.shape[0]
    pairs = [(a, b) for a in range(n) for b in range(a, n)]
    acc = {}
    for choice in product(*[[(p, c) for p, c in enumerate(coeffs) if c != 0]
                            for coeffs, _ in factors]):
        coef = sp.Mul(*[c for _, c in choice])
        for expo, count in _pairings(tuple(p for p, _ in choice)).items():
            acc[expo] = acc.get(expo, 0) + coef * count
    terms = [c * sp.Mul(*[C[a, b] ** e for (a, b), e in zip(pairs, expo) if e])
             for expo, c in acc.items() if c != 0]
    return sp.expand(sp.Add(*terms))


def _check_cov(C, n):
    C = sp.Matrix(C)
    if C.shape != (n, n):
        raise ValueError(f"covariance must be {n} x {n}, got {C.shape[0]} x {C.shape[1]}")
    return C


def I2(g1, g2, C, route: str = "auto") -> sp.Expr:
    """<g1(z1) g2(z2)> for a 2 x 2 covariance C.

    ``route="auto"`` returns the hand-written closed form where one exists (relu, erf, linear
    pairs; :mod:`derive.family.relu`, :mod:`derive.integrals`), else the engine's derivation;
    ``route="engine"`` always derives (the tests compare the two).
    """
    C = _check_cov(C, 2)
    acts = (activation(g1), activation(g2))
    closed = _closed(I2_FORMS, acts, C, route)
    if closed is not None:
        return closed
    return _expand(C, [a.value_factor() for a in acts])


def I3(g1, g3, C, route: str = "auto") -> sp.Expr:
    """<g1'(z1) z2 g3(z3)> for a 3 x 3 covariance C (linear in C12, C23; free of C22)."""
    C = _check_cov(C, 3)
    acts = (activation(g1), activation(g3))
    closed = _closed(I3_FORMS, acts, C, route)
    if closed is not None:
        return closed
    return _expand(C, [acts[0].derivative_factor(), ((0, 1), ONE), acts[1].value_factor()])


def I4(g1, g2, g3, g4, C, route: str = "auto") -> sp.Expr:
    """<g1'(z1) g2'(z2) g3(z3) g4(z4)> for a 4 x 4 covariance C."""
    C = _check_cov(C, 4)
    acts = tuple(activation(g) for g in (g1, g2, g3, g4))
    closed = _closed(I4_FORMS, acts, C, route)
    if closed is not None:
        return closed
    return _expand(C, [acts[0].derivative_factor(), acts[1].derivative_factor(),
                       acts[2].value_factor(), acts[3].value_factor()])


def pair_integrals(student, teacher, C2=None, C3=None, C4=None) -> dict:
    """Every integral the hierarchy of a (student, teacher) pair calls, keyed by slot pattern.

    Keys: ``I2_ss, I2_st, I2_tt, I3_ss, I3_st, I4_ssss, I4_ssst, I4_sstt`` (s = student field,
    t = teacher field in that slot; slot 1 of I3 and slots 1, 2 of I4 are always student).
    """
    from derive.integrals import covariance_symbols
    C2 = covariance_symbols(2) if C2 is None else C2
    C3 = covariance_symbols(3) if C3 is None else C3
    C4 = covariance_symbols(4) if C4 is None else C4
    s, t = activation(student), activation(teacher)
    return {"I2_ss": I2(s, s, C2), "I2_st": I2(s, t, C2), "I2_tt": I2(t, t, C2),
            "I3_ss": I3(s, s, C3), "I3_st": I3(s, t, C3),
            "I4_ssss": I4(s, s, s, s, C4), "I4_ssst": I4(s, s, s, t, C4),
            "I4_sstt": I4(s, s, t, t, C4)}
