"""Derivatives of a straight-line program by forward accumulation, printed as more lines.

The coefficients of a printed module are a straight-line program after common-subexpression
elimination: ``x_k = e_k(v, x_0 .. x_{k-1})``, then outputs ``o_m(v, x)``.  Their derivatives by
the variables ``v`` follow by the chain rule, one line at a time:

    dx_k/dv_u = Σ_s  ∂e_k/∂s · ds/dv_u        (s over the variables and x's in e_k)

Only the partials ``∂e_k/∂s`` are symbolic (small expressions: one CSE line each); the sums are
printed directly, and a derivative that is structurally zero (``e_k`` does not depend on ``v_u``
through any path) is never formed.  Differentiating the large coefficient expressions
symbolically and eliminating common subexpressions in the result again cost most of the
generation time (BENCHMARKS.md, "Generation speed"); this costs a few small derivatives per
line.  The printed values are the same functions (tests/test_codegen_speed.py checks them
against ``sympy.diff`` of the coefficients).
"""
from __future__ import annotations

import re

import sympy as sp

from .derivatives import diff, free_symbols
from .long_sums import join_sum


def program_derivatives(replacements, outputs, variables, printer, prefix="d", split="z"):
    """Forward-mode derivative program of a CSE program.

    The program is first split into three-address form (every argument of an operation that
    is not a symbol, a number, a power of a symbol or a product of those gets a name starting
    with ``split``), so that each partial derivative is a small expression of names.

    Parameters
    ----------
    replacements : list of (Symbol, Expr)
        The program's assignments in order (``sympy.cse`` output).
    outputs : list of Expr
        The program's results, in terms of the variables and the assigned symbols.
    variables : list of Symbol
        Differentiate by these; every other free symbol is a constant.
    printer : sympy printer
        Prints the values and partials.
    prefix, split : str
        Prefixes of the new names (neither may start a name of the program).

    Returns
    -------
    values : list of str
        Assignments ``name = code`` of the values the derivatives need (the split program,
        restricted to what is used), in order.
    lines : list of str
        Assignments of the partials and derivatives, in order, after ``values``.
    index : list of (int, int)
        ``(m, u)`` for every derivative of output m by variable u that is not structurally zero,
        ordered by m then u.
    codes : list of str
        The code of each of those derivatives, in ``index`` order.

    >>> import sympy as sp
    >>> from sympy.printing.pycode import PythonCodePrinter
    >>> a, b, x0 = sp.symbols("a b x0")
    >>> values, lines, index, codes = program_derivatives([(x0, a * b)], [x0 + a], [a, b],
    ...                                                   PythonCodePrinter())
    >>> index, codes
    ([(0, 0), (0, 1)], ['1 + b', 'a'])
    """
    program, outputs = _three_address(replacements, outputs, split)
    printed = {}

    def doprint(expr):
        # the same partial recurs (an arcsine's derivative in every line that uses it, the
        # orthant gradients): each distinct expression is printed once
        code = printed.get(expr)
        if code is None:
            code = printed[expr] = printer.doprint(expr)
        return code
    rank = {v: i for i, v in enumerate(variables)}
    nvar = len(variables)
    dep = {v: (i,) for i, v in enumerate(variables)}   # variables each symbol depends on
    # code of ds/dv_u for every symbol s: a name, or "1" for the variable itself
    dname = {(v, i): "1" for i, v in enumerate(variables)}
    lines, free, memo = [], {}, {}
    counter = [0]

    def fresh():
        counter[0] += 1
        return f"{prefix}{counter[0] - 1}"

    def partial_code(p):
        if p.is_Number or p.is_Symbol:
            return doprint(p)
        name = fresh()
        lines.append((name, doprint(p)))
        return name

    def chain(expr):
        """(dependencies, {u: code of d expr / d v_u}) for an expression of the program."""
        syms = sorted((s for s in expr.free_symbols if s in dep), key=rank.__getitem__)
        if not syms:
            return (), {}
        by = all_partials(expr, syms, free, memo)
        partials = [(s, partial_code(by[s])) for s in syms]
        us = sorted({u for s in syms for u in dep[s]})
        out = {}
        for u in us:
            terms = []
            for s, p in partials:
                d = dname.get((s, u))
                if d is None or p == "0":
                    continue
                if p == "1":
                    terms.append(d)
                elif d == "1":
                    terms.append(p)            # a term of a sum: no parentheses needed
                elif p == "-1":
                    terms.append(f"-{d}")
                else:
                    terms.append(f"{_paren(p)}*{d}")
            if terms:
                out[u] = join_sum(terms)
        return tuple(us), out

    for sym, expr in program:
        rank[sym] = nvar + len(rank)
        us, codes = chain(expr)
        if not us:
            continue
        dep[sym] = us
        for u, code in codes.items():
            if _is_name(code) or code.isdigit():
                dname[sym, u] = code           # an alias or a constant: no line of its own
            else:
                name = fresh()
                lines.append((name, code))
                dname[sym, u] = name
    index, codes = [], []
    for m, expr in enumerate(outputs):
        us, out = chain(sp.sympify(expr))
        for u in us:
            if u in out:
                index.append((m, u))
                codes.append(out[u])
    # only the lines the outputs need, in program order
    need = _needed(lines, codes)
    lines = [(name, code) for name, code in lines if name in need]
    used = _used(program, [code for _, code in lines] + codes)
    return ([f"{sym} = {doprint(expr)}" for sym, expr in program if sym in used],
            [f"{name} = {code}" for name, code in lines], index, codes)


def all_partials(expr, syms, free=None, memo=None) -> dict:
    """``{s: diff(expr, s)}`` for every ``s`` in ``syms``, the same expressions, with one walk
    over the terms of a sum.

    A line of a polynomial coefficient is a sum of hundreds of monomials in a few of its dozens
    of symbols; asking every term for every symbol was most of the printing of polynomial pairs.
    Here each term is differentiated only by the symbols it has, and the pieces of each partial
    are summed by the same constructor :func:`~derive.codegen.derivatives.diff` uses (``Add`` orders
    its arguments canonically and drops zeros, so the result is the same expression).

    >>> import sympy as sp
    >>> x, y, z = sp.symbols("x y z")
    >>> e = 3 * x**2 * y + y * z + sp.sqrt(z)
    >>> all_partials(e, [x, y, z]) == {s: sp.diff(e, s) for s in (x, y, z)}
    True
    """
    free = {} if free is None else free
    memo = {} if memo is None else memo
    if not expr.is_Add:
        return {s: diff(expr, s, free, memo) for s in syms}
    wanted = set(syms)
    pieces = {s: [] for s in syms}
    for term in expr.args:
        for s in free_symbols(term, free) & wanted:
            pieces[s].append(diff(term, s, free, memo))
    return {s: sp.Add(*pieces[s]) for s in syms}


def _three_address(replacements, outputs, split):
    """The program with every compound argument of a compound expression named (a name per
    distinct subexpression), and the outputs likewise."""
    names = sp.numbered_symbols(split)
    program, named = [], {}

    def simple(e):
        return (e.is_Atom or (e.is_Pow and e.base.is_Atom)
                or (e.is_Mul and all(a.is_Atom or (a.is_Pow and a.base.is_Atom)
                                     for a in e.args)))

    def name(e):
        if simple(e):
            return e
        s = named.get(e)
        if s is None:
            s = named[e] = next(names)
            program.append((s, top(e)))
        return s

    def top(e):
        return e if simple(e) else e.func(*[name(a) for a in e.args])

    for sym, expr in replacements:
        program.append((sym, top(expr)))
    outputs = [top(sp.sympify(e)) for e in outputs]
    return program, outputs


_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def _used(program, codes) -> set:
    """The symbols of ``program`` the ``codes`` use, directly or through other assignments."""
    by_name = {str(sym): (sym, expr) for sym, expr in program}
    todo = [by_name[n][0] for code in codes for n in _NAME.findall(code) if n in by_name]
    used = set()
    while todo:
        sym = todo.pop()
        if sym not in used:
            used.add(sym)
            todo += [s for s in by_name[str(sym)][1].free_symbols if str(s) in by_name]
    return used


def _paren(code: str) -> str:
    return code if _is_name(code) else f"({code})"


def _is_name(code: str) -> bool:
    return code.replace("_", "a").isalnum() and not code[0].isdigit()


def _needed(lines, codes) -> set:
    """Names of ``lines`` the ``codes`` use, directly or through other lines."""
    body = dict(lines)
    need, todo = set(), [n for c in codes for n in _NAME.findall(c) if n in body]
    while todo:
        n = todo.pop()
        if n in need:
            continue
        need.add(n)
        todo += [m for m in _NAME.findall(body[n]) if m in body]
    return need
