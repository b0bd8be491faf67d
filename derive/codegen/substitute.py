"""Rebuilding derived expressions around new arguments: SymPy's result, without its slowest
questions.

Substituting a covariance into an integral derived in covariance symbols (derive/hierarchy.py)
and rebuilding the subtrees of a common-subexpression elimination (derive/codegen/cse.py) both
construct every node again.  Most of that time went into the evaluation of two functions whose
evaluation cannot change a node with a symbolic argument: the arcsine (``asin.eval`` rewrites
numbers, odd negations, imaginary multiples, arcsines of sin / cos and zero, and asks each
argument whether it is zero, which deduces every assumption of it) and the orthant probability
(``Orthant4.eval`` acts only when a correlation is zero).  :func:`rebuild` skips those
evaluations exactly where they would return nothing, and :func:`xreplace` is
``Basic.xreplace`` walking each shared subtree once; the results are the expressions SymPy
builds (tests/test_codegen_speed.py compares them).
"""
from __future__ import annotations

import sympy as sp

_INFINITE = frozenset((sp.S.ComplexInfinity, sp.S.Infinity, sp.S.NegativeInfinity, sp.S.NaN))


def rebuild(func, args):
    """``func(*args)``, with an arcsine or an orthant probability of symbolic arguments built
    without an evaluation that cannot change it."""
    if func is sp.asin:
        (arg,) = args
        if not (arg.is_Atom or not arg.free_symbols or isinstance(arg, (sp.sin, sp.cos))
                or arg.has(sp.I, *_INFINITE) or arg.could_extract_minus_sign()):
            return sp.asin(arg, evaluate=False)
    elif getattr(func, "symbolic_eval_is_identity", False):
        # a function that evaluates only when an argument is a number (Orthant4: a zero
        # correlation); a symbolic argument that is zero would have been built as 0
        if not any(a.is_Number or not a.free_symbols for a in args):
            return func(*args, evaluate=False)
    return func(*args)


def xreplace(expr, rule: dict, memo: dict | None = None):
    """``expr.xreplace(rule)``, the same expression, each distinct subtree rebuilt once.

    >>> import sympy as sp
    >>> x, y, z = sp.symbols("x y z")
    >>> e = sp.asin(x / sp.sqrt(y)) + sp.asin(x / sp.sqrt(y)) ** 2 * y
    >>> xreplace(e, {x: z, y: 2}) == e.xreplace({x: z, y: 2})
    True
    """
    memo = {} if memo is None else memo

    def walk(e):
        if e in rule:
            return rule[e]
        if not e.args:
            return e
        out = memo.get(e)
        if out is None:
            args = e.args
            new = tuple(walk(a) for a in args)
            out = memo[e] = e if new == args else rebuild(e.func, new)
        return out

    return walk(expr)
