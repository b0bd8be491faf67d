"""Derivatives of the derived expressions: the same expressions ``sympy.diff`` gives, faster.

The split of the hierarchy into next-level coefficients is many first derivatives of large sums
of Gaussian integrals, and the printed coefficient derivatives are the partials of every line
of the coefficients' CSE program (derive/codegen/forward_derivatives.py).  :func:`diff`
follows SymPy's own rules node by node without its per-node checks, remembering what it built by (sub-expression,
variable) (measured: BENCHMARKS.md, "On-demand generation" and "Generation speed"); the
expressions are SymPy's (tests/test_system_matrix.py compares them with ``sympy.diff``).
"""
from __future__ import annotations

import sympy as sp


def diff(expr, var, free=None, memo=None):
    """``sp.diff(expr, var)``, the same expression, built faster for sums and products.

    SymPy differentiates a sum term by term and a product factor by factor (Leibniz), but on the
    way asks every intermediate result whether it is zero and walks it for leftover Derivative
    objects; on the η² coefficients (sums of I4 arcsines) that was most of the time.  Here the
    sums and products are taken apart the way SymPy would, only the terms and factors that
    contain ``var`` are differentiated (by SymPy), and the pieces are put together with the
    same constructors, so the result is structurally identical (tests/test_system_matrix.py
    compares it with ``sp.diff``).  ``free``: memo of free symbols per sub-expression (one
    dict for the calls on one set of expressions); ``memo``: derivatives already built, by
    (sub-expression, variable) (one dict for a set of expressions that share sub-expressions:
    the Gaussian integrals of a pair of fields recur in many coefficients).

    >>> import sympy as sp
    >>> x, y = sp.symbols("x y")
    >>> e = sp.asin(x * y) / sp.sqrt(1 + x**2) + y
    >>> diff(e, x) == sp.diff(e, x)
    True
    """
    free = {} if free is None else free
    if var not in free_symbols(expr, free):
        return sp.S.Zero
    if memo is None:
        memo = {}
    out = memo.get((expr, var))
    if out is None:
        out = memo[expr, var] = _diff(expr, var, free, memo)
    return out


def _diff(expr, var, free, memo):
    if expr.is_Add or expr.is_Mul:
        args = expr.args
        if expr.is_Add:                        # Add._eval_derivative
            return sp.Add(*[diff(a, var, free, memo) for a in args])
        terms = []                             # Mul._eval_derivative_n_times, first order
        for i, a in enumerate(args):
            if var in free_symbols(a, free):
                terms.append(sp.Mul(*args[:i], diff(a, var, free, memo), *args[i + 1:]))
        return sp.Add(*terms)
    if expr.is_Pow and expr.exp.is_Rational:   # Pow._eval_derivative with a constant exponent
        return expr * (diff(expr.base, var, free, memo) * expr.exp / expr.base)
    if expr.is_Symbol:                         # diff() has ruled out every other symbol
        return sp.S.One
    if isinstance(expr, sp.asin):              # Function._eval_derivative
        return sp.Add(_asin_prime(expr) * diff(expr.args[0], var, free, memo))
    if getattr(expr, "symbolic_eval_is_identity", False):
        # the orthant probability: Function._eval_derivative, over the arguments with var
        return sp.Add(*[expr.fdiff(i + 1) * diff(a, var, free, memo)
                        for i, a in enumerate(expr.args) if var in free_symbols(a, free)])
    return sp.diff(expr, var)


def free_symbols(expr, memo: dict):
    """``expr.free_symbols``, remembered in ``memo`` (SymPy recomputes it on every call)."""
    out = memo.get(expr)
    if out is None:
        out = memo[expr] = expr.free_symbols
    return out


def _asin_prime(expr):
    """``asin(z).fdiff(1)`` = (1 - z²)^(-1/2).  For a symbol z the power is built without
    evaluation: ``Add._eval_power`` leaves a sum of a symbol term and the number 1 unchanged,
    after asking each term whether it is infinite (which deduces every assumption of it)."""
    z = expr.args[0]
    if z.is_Symbol:
        return sp.Pow(1 - z**2, sp.Rational(-1, 2), evaluate=False)
    return expr.fdiff(1)

