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

from .substitute import rebuild
from .term_order import negation_sorts_first

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
    subs = _opt_subs(exprs)
    if subs is None:
        return sp.cse(exprs, symbols=symbols, order="none")
    return _tree_cse(exprs, symbols, *subs)


def _tree_cse(exprs, symbols, opt_subs, negated):
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
        # tuple).  A node of SymPy's own whose arguments all come back as they were is kept:
        # expr.func(*expr.args) == expr is SymPy's invariant for evaluated expressions, and
        # the derived ones are evaluated (an arcsine or power built unevaluated is built so
        # only where evaluation would not change it: derive/codegen/substitute.py, derivatives.py)
        args = [build(a) for a in expr.args]
        if (expr is orig and isinstance(expr, sp.Basic)
                and all(n is a for n, a in zip(args, expr.args))):
            new = expr
        elif negated.get(orig) is expr and args[1] is expr.args[1]:
            new = orig            # (-1)·(-c·m) rebuilds the product c·m it came from
        else:
            new = rebuild(expr.func, args)
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
            return _negative(expr)
        if expr.is_Mul:                       # Mul.could_extract_minus_sign without the negation
            c = expr.args[0]
            return c.is_Number and _negative(c)
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
                out = negation_sorts_first(expr)      # SymPy's tie-break, faster
            self.memo[expr] = out
        return out


def _negative(number) -> bool:
    """``number.is_extended_negative`` for a SymPy number; a rational's sign is read from its
    numerator (asking the assumptions system deduces every fact of each new number first)."""
    if number.is_Rational:
        return number.p < 0
    return bool(number.is_extended_negative)


class _Unusual(Exception):
    """An atom the shortcuts do not cover (an infinity, NaN, a non-commutative symbol)."""


def _opt_subs(exprs):
    """The substitutions ``sympy.simplify.cse_main.opt_cse(exprs, "none")`` returns (the same
    walk, in the same order) with the products among them that are negations, or None for
    expressions with an atom of ``_Unusual``."""
    Add, Mul, Pow = sp.Add, sp.Mul, sp.Pow
    minus = _Sign()
    opt_subs, negated = {}, {}
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
                if expr.is_Mul:
                    negated[expr] = opt_subs[expr]
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
    _match_common_args(Add, adds, opt_subs)
    _match_common_args(Mul, muls, opt_subs)
    # a product with a negative coefficient still substituted by (-1)·(its negation)
    negated = {e: u for e, u in negated.items() if opt_subs.get(e) is u}
    return opt_subs, negated


def _match_common_args(func_class, funcs, opt_subs):
    """``sympy.simplify.cse_main.match_common_args``: the same walk, the same substitutions.

    SymPy keeps its argument sets as ``OrderedSet`` objects (an ``OrderedDict`` behind the
    generic ``MutableSet`` operations, a new one per intersection); on the polynomial
    coefficients of the family those set operations were most of the elimination.  Python's
    dict keeps insertion order too, so every set below is a dict with the same order as
    SymPy's at every step (additions at the end, removals in place, intersections and
    differences in the order of the left operand), and the candidates are met in the same
    order."""
    Unevaluated = cse_main.Unevaluated
    funcs = sorted(funcs, key=lambda f: len(f.args))
    numbers, values, arg_funcs, func_args = {}, [], [], []

    def number(value):
        n = numbers.setdefault(value, len(values))
        if n == len(values):
            values.append(value)
            arg_funcs.append({})
        return n

    for i, func in enumerate(funcs):
        argset = {}
        for arg in func.args:
            n = number(arg)
            argset[n] = None
            arg_funcs[n][i] = None
        func_args.append(argset)

    def in_value_order(argset):
        return [values[n] for n in sorted(argset)]

    def update(i, new_args):
        old = func_args[i]
        for gone in [a for a in old if a not in new_args]:
            del arg_funcs[gone][i]
        for added in [a for a in new_args if a not in old]:
            arg_funcs[added][i] = None
        old.clear()
        old.update(new_args)

    def candidates(argset, first):
        # FuncArgTracker.get_common_arg_candidates: functions from ``first`` on that share
        # at least two arguments with ``argset``
        count = {}
        if not argset:
            return count
        funcsets = [arg_funcs[a] for a in argset]
        largest = max(funcsets, key=len)
        for funcset in funcsets:
            if funcset is largest:
                continue
            for f in funcset:
                if f >= first:
                    count[f] = count.get(f, 0) + 1
        smaller, larger = sorted([largest, count], key=len)
        for f in smaller:
            if count.get(f, 0) < 1:
                continue
            if f in larger:
                count[f] += 1
        return {k: v for k, v in count.items() if v >= 2}

    changed = {}
    for i in range(len(funcs)):
        counts = candidates(func_args[i], i + 1)
        queue = dict.fromkeys(sorted(counts, key=lambda k: (counts[k], k)))
        while queue:
            j = next(iter(queue))
            del queue[j]
            common = {a: None for a in func_args[i] if a in func_args[j]}
            if len(common) <= 1:
                continue
            diff_i = {a: None for a in func_args[i] if a not in common}
            if diff_i:
                com_number = number(Unevaluated(func_class, in_value_order(common)))
                update(i, {**diff_i, com_number: None})
                changed[i] = None
            else:
                com_number = number(funcs[i])
            diff_j = {a: None for a in func_args[j] if a not in common}
            update(j, {**diff_j, com_number: None})
            changed[j] = None
            first, *rest = common
            subset = {f: None for f in arg_funcs[first] if f in queue}
            for a in rest:
                subset = {f: None for f in subset if f in arg_funcs[a]}
            for k in subset:
                diff_k = {a: None for a in func_args[k] if a not in common}
                update(k, {**diff_k, com_number: None})
                changed[k] = None
        if i in changed:
            opt_subs[funcs[i]] = Unevaluated(func_class, in_value_order(func_args[i]))
        for a in func_args[i]:
            del arg_funcs[a][i]
