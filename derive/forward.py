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

from .derivatives import diff


def program_derivatives(replacements, outputs, variables, printer, prefix="d"):
    """Forward-mode derivative lines of a CSE program.

    Parameters
    ----------
    replacements : list of (Symbol, Expr)
        The program's assignments in order (``sympy.cse`` output).
    outputs : list of Expr
        The program's results, in terms of the variables and the assigned symbols.
    variables : list of Symbol
        Differentiate by these; every other free symbol is a constant.
    printer : sympy printer
        Prints the partials.
    prefix : str
        Prefix of the new names (must not start any name of the program).

    Returns
    -------
    lines : list of str
        Assignments ``name = code``, in an order that computes each name after what it uses
        (every line of ``replacements`` must be computed before them).
    index : list of (int, int)
        ``(m, u)`` for every derivative of output m by variable u that is not structurally zero,
        ordered by m then u.
    codes : list of str
        The code of each of those derivatives, in ``index`` order.

    >>> import sympy as sp
    >>> from sympy.printing.pycode import PythonCodePrinter
    >>> a, b, x0 = sp.symbols("a b x0")
    >>> lines, index, codes = program_derivatives([(x0, a * b)], [x0 + a], [a, b],
    ...                                           PythonCodePrinter())
    >>> index, codes
    ([(0, 0), (0, 1)], ['1 + b', 'a'])
    """
    rank = {v: i for i, v in enumerate(variables)}
    nvar = len(variables)
    dep = {v: (i,) for i, v in enumerate(variables)}   # variables each symbol depends on
    # code of ds/dv_u for every symbol s: a name, or "1" for the variable itself
    dname = {(v, i): "1" for i, v in enumerate(variables)}
    lines, uses, free, memo = [], {}, {}, {}
    counter = [0]

    def fresh():
        counter[0] += 1
        return f"{prefix}{counter[0] - 1}"

    def partial_code(expr, s):
        p = diff(expr, s, free, memo)
        if p.is_Number or p.is_Symbol:
            return printer.doprint(p)
        name = fresh()
        lines.append((name, printer.doprint(p)))
        return name

    def chain(expr):
        """(dependencies, {u: code of d expr / d v_u}) for an expression of the program."""
        syms = sorted((s for s in expr.free_symbols if s in dep), key=rank.__getitem__)
        if not syms:
            return (), {}
        partials = [(s, partial_code(expr, s)) for s in syms]
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
                else:
                    terms.append(f"{_paren(p)}*{d}")
            if terms:
                out[u] = " + ".join(terms)
        return tuple(us), out

    for sym, expr in replacements:
        rank[sym] = nvar + len(rank)
        us, codes = chain(expr)
        if not us:
            continue
        dep[sym] = us
        for u, code in codes.items():
            if _is_name(code):
                dname[sym, u] = code           # an alias: no line of its own
            else:
                name = fresh()
                lines.append((name, code))
                dname[sym, u] = name
    index, codes = [], []
    for m, expr in enumerate(outputs):
        expr = sp.sympify(expr)
        us, out = chain(expr)
        for u in us:
            if u in out:
                index.append((m, u))
                codes.append(out[u])
    # only the lines the outputs need, in program order
    needed = _needed_names(lines, codes, prefix)
    return [f"{name} = {code}" for name, code in lines if name in needed], index, codes


def _paren(code: str) -> str:
    return code if _is_name(code) else f"({code})"


def _is_name(code: str) -> bool:
    return code.replace("_", "a").isalnum() and not code[0].isdigit()


def _needed_names(lines, codes, prefix) -> set:
    pattern = re.compile(rf"\b{re.escape(prefix)}\d+\b")
    body = dict(lines)
    need, todo = set(), [n for c in codes for n in pattern.findall(c)]
    while todo:
        n = todo.pop()
        if n in need:
            continue
        need.add(n)
        todo += pattern.findall(body[n])
    return need
