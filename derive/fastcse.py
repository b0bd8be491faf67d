"""Common-subexpression elimination: the result of ``sympy.cse(exprs, order="none")``, faster.

SymPy's ``cse`` first looks for rewriting opportunities (``opt_cse``: negated sums and
products, negative powers, sums and products sharing several arguments) and then pulls out the
repeated subtrees (``tree_cse``).  On the derived coefficients most of the first pass went into
``could_extract_minus_sign``, which SymPy answers for a product by building its negative and
comparing (``self == -self``, only ever true with an infinity or NaN in it) and for a sum by asking
every term the same question again, once per sum the term belongs to.  :func:`cse` makes the
same pass with those answers computed once per subexpression, from the leading coefficient,
and hands the same substitutions to SymPy's own ``tree_cse`` and ``match_common_args``: the
replacements and reduced expressions are SymPy's (tests/test_codegen_speed.py compares them
with ``sympy.cse`` on the printed systems).  Expressions with an infinity or NaN, where the
shortcut would not hold, or with non-commutative symbols go to ``sympy.cse`` unchanged.
"""
from __future__ import annotations

import sympy as sp
from sympy.simplify import cse_main
from sympy.utilities.iterables import numbered_symbols, topological_sort

_INFINITE = frozenset((sp.S.ComplexInfinity, sp.S.Infinity, sp.S.NegativeInfinity, sp.S.NaN))


def cse(exprs, prefix: str = "x"):
    """``sympy.cse(exprs, symbols=numbered_symbols(prefix), order="none")``, the same output.

    >>> import sympy as sp
    >>> x, y = sp.symbols("x y")
    >>> e = [sp.sqrt(x + y) * (x - y), 1 / sp.sqrt(x + y) - (x - y)]
    >>> cse(e) == sp.cse(e, symbols=sp.numbered_symbols("x"), order="none")
    True
    """
    exprs = [sp.sympify(e) for e in exprs]
    symbols = numbered_symbols(prefix)
    opt_subs = _opt_subs(exprs)
    if opt_subs is None:
        return sp.cse(exprs, symbols=symbols, order="none")
    return _tree_cse(exprs, symbols, opt_subs)


def rebuild(func, args):
    """``func(*args)``, with an arcsine built without SymPy's evaluation where that evaluation
    cannot change it: ``asin.eval`` rewrites only numbers, odd negations, imaginary multiples,
    arcsines of sin / cos and zero, and asking an argument whether it is zero costs more than
    everything else in rebuilding the derived expressions."""
    if func is sp.asin:
        (arg,) = args
        if not (arg.is_Atom or not arg.free_symbols or isinstance(arg, (sp.sin, sp.cos))
                or arg.has(sp.I, *_INFINITE) or arg.could_extract_minus_sign()):
            return sp.asin(arg, evaluate=False)
    return func(*args)


def _tree_cse(exprs, symbols, opt_subs):
    """``sympy.simplify.cse_main.tree_cse(exprs, symbols, opt_subs, "none")`` for expressions
    of commutative scalars, rebuilding arcsines with :func:`rebuild` (the same result)."""
    Unevaluated = cse_main.Unevaluated
    repeated, seen, taken = set(), set(), set()

    def find(expr):                     # the subexpressions met more than once
        if isinstance(expr, sp.Basic):
            if expr.is_Atom or expr.is_Order:
                if expr.is_Symbol:
                    taken.add(expr.name)
                return
        elif not isinstance(expr, Unevaluated):
            return
        if expr in seen:
            repeated.add(expr)
            return
        seen.add(expr)
        for a in opt_subs.get(expr, expr).args:
            find(a)

    for e in exprs:
        find(e)
    names = (s for s in symbols if s.name not in taken)
    replacements, named = [], {}

    def build(expr):
        if not isinstance(expr, (sp.Basic, Unevaluated)) or not expr.args:
            return expr
        if expr in named:
            return named[expr]
        orig = expr
        expr = opt_subs.get(expr, expr)
        # SymPy rebuilds every node (its test of changed arguments compares a list with a
        # tuple), so this does too: rebuilding re-evaluates what was built unevaluated
        new = rebuild(expr.func, [build(a) for a in expr.args])
        if orig in repeated:
            sym = next(names)
            named[orig] = sym
            replacements.append((sym, new))
            return sym
        return new

    return replacements, [build(e) for e in exprs]


class _Sign:
    """``expr.could_extract_minus_sign()`` for finite expressions, remembered per expression."""

    def __init__(self):
        self.memo = {}

    def __call__(self, expr) -> bool:
        if expr.is_Number:
            return bool(expr.is_extended_negative)
        if expr.is_Mul:                       # Mul.could_extract_minus_sign without the negation
            c = expr.args[0]
            return bool(c.is_Number and c.is_extended_negative)
        if not expr.is_Add:                   # Expr's and Basic's default
            return False
        out = self.memo.get(expr)
        if out is None:
            # sympy.core.add._could_extract_minus_sign, with the terms' answers from here
            negative = sum(1 for a in expr.args if self(a))
            positive = len(expr.args) - negative
            if positive != negative:
                out = positive < negative
            else:
                out = bool(expr.sort_key() < (-expr).sort_key())
            self.memo[expr] = out
        return out


class _Unusual(Exception):
    """An atom the shortcuts do not cover (an infinity, NaN, a non-commutative symbol)."""


def _opt_subs(exprs):
    """The substitutions ``sympy.simplify.cse_main.opt_cse(exprs, "none")`` returns (the same
    walk, in the same order), or None for expressions with an atom of ``_Unusual``."""
    Add, Mul, Pow = sp.Add, sp.Mul, sp.Pow
    minus = _Sign()
    opt_subs = {}
    adds, muls = cse_main.OrderedSet(), cse_main.OrderedSet()
    seen, collapsible = set(), set()

    def visit(expr):
        if expr.is_Atom:
            if expr in _INFINITE or not expr.is_commutative:
                raise _Unusual
            return
        if expr.is_Order:
            return
        if expr in seen:
            return
        seen.add(expr)
        for a in expr.args:
            visit(a)
        if minus(expr):
            neg = Add(*(-a for a in expr.args)) if expr.is_Add else -expr
            if not neg.is_Atom:
                opt_subs[expr] = cse_main.Unevaluated(Mul, (sp.S.NegativeOne, neg))
                seen.add(neg)
                expr = neg
        if expr.is_Mul or expr.is_Add:
            if len(expr.args) == 1:
                collapsible.add(expr)
            else:
                (muls if expr.is_Mul else adds).add(expr)
        elif expr.is_Pow and minus(expr.exp):
            opt_subs[expr] = cse_main.Unevaluated(Pow, (Pow(expr.base, -expr.exp), -1))

    try:
        for e in exprs:
            visit(e)
    except _Unusual:
        return None
    edges = [(s, s.args[0]) for s in collapsible if s.args[0] in collapsible]
    for e in reversed(topological_sort((collapsible, edges))):
        opt_subs[e] = opt_subs.get(e.args[0], e.args[0])
    # every product is commutative (checked by cse()): opt_cse's split of each into its
    # commutative part rebuilds the same product
    cse_main.match_common_args(Add, adds, opt_subs)
    cse_main.match_common_args(Mul, muls, opt_subs)
    return opt_subs
