"""The order in which a printed sum lists its terms: ``Expr.as_ordered_terms()``, faster.

SymPy's printers sort the terms of every sum (order ``None``: lexicographic in the sum's
generators, higher powers first).  Each term's key is a dense exponent vector over all the
generators of the sum, so a polynomial coefficient of a hundred generators and a thousand terms
builds and negates a hundred thousand entries; on the polynomial pairs that was most of the
printing.  :func:`ordered_terms` compares the same vectors through their nonzero entries: for
positive exponents, (index, -exponent) pairs closed by an end marker beyond every index order
exactly as the negated dense vectors do.  Sums with a negative exponent use the dense key.
The result is SymPy's list (tests/test_codegen_speed.py compares them on the printed systems).
"""
from __future__ import annotations

from sympy import Mul, Number, NumberSymbol, S
from sympy.core.exprtools import decompose_power
from sympy.core.sorting import default_sort_key


def ordered_terms(expr) -> list:
    """``expr.as_ordered_terms()`` for a sum, the same list.

    >>> import sympy as sp
    >>> x, y, z = sp.symbols("x y z")
    >>> e = 3 * x * y**2 + x**3 + 2 * z - y + 7
    >>> ordered_terms(e) == e.as_ordered_terms()
    True
    """
    return _ordered(expr.args, expr)


def negation_sorts_first(expr) -> bool:
    """``expr.sort_key() < (-expr).sort_key()`` for a sum (the tie-break of
    ``Add.could_extract_minus_sign``), the same answer.

    Both keys start alike (the class, the number of terms); the rest is the sort keys of the
    ordered terms, compared here one pair at a time up to the first difference, with the
    negated terms ordered without building their sum.

    >>> import sympy as sp
    >>> x, y = sp.symbols("x y")
    >>> [negation_sorts_first(e) == (e.sort_key() < (-e).sort_key()) for e in (x - y, y - x, 1 - x)]
    [True, True, True]
    """
    from sympy.core.sorting import default_sort_key as key
    terms = ordered_terms(expr)
    negated = _ordered([-t for t in expr.args], None)
    for a, b in zip(terms, negated):
        ka, kb = key(a), key(b)
        if ka != kb:
            return ka < kb
    return expr.sort_key() < (-expr).sort_key()      # equal terms: cannot happen for a sum


def _ordered(args, expr):
    """The ordered terms of the sum with terms ``args`` (``expr``: that sum, when built)."""

    def number_first(a):
        return not isinstance(a, (Number, NumberSymbol))

    # SymPy's special case of a positive number and a negative multiple (1 - x)
    add_args = sorted(args, key=number_first)
    if (len(add_args) == 2 and isinstance(add_args[0], (Number, NumberSymbol))
            and isinstance(add_args[1], Mul)):
        mul_args = sorted(Mul.make_args(add_args[1]), key=number_first)
        if (len(mul_args) == 2 and isinstance(mul_args[0], Number)
                and add_args[0].is_positive and mul_args[0].is_negative):
            return add_args
    if any(a.is_Order for a in args):
        from sympy import Add
        return (expr if expr is not None else Add(*args)).as_ordered_terms()
    # Expr.as_terms, keeping each term's exponents as a dictionary
    gens, rows = set(), []
    for term in args:
        coeff, rest = term.as_coeff_Mul()
        # complex() of a SymPy rational evaluates it as a Float first; both round correctly
        coeff = complex(coeff.p / coeff.q) if coeff.is_Rational else complex(coeff)
        cpart, ncpart = {}, []
        if rest is not S.One:
            for factor in Mul.make_args(rest):
                if factor.is_number:
                    try:
                        coeff *= complex(factor)
                    except (TypeError, ValueError):
                        pass
                    else:
                        continue
                if factor.is_commutative:
                    base, exp = decompose_power(factor)
                    cpart[base] = exp
                    gens.add(base)
                else:
                    ncpart.append(factor)
        rows.append((term, coeff, cpart, tuple(ncpart)))
    index = {g: i for i, g in enumerate(sorted(gens, key=default_sort_key))}
    end = (len(index), 0)
    sparse = all(e > 0 for _, _, cpart, _ in rows for e in cpart.values())

    def key(row):
        _, coeff, cpart, ncpart = row
        if sparse:
            monom = tuple(sorted((index[b], -e) for b, e in cpart.items())) + (end,)
        else:
            dense = [0] * len(index)
            for b, e in cpart.items():
                dense[index[b]] = -e
            monom = tuple(dense)
        re, im = coeff.real, coeff.imag
        return monom, tuple(e.sort_key() for e in ncpart), ((bool(im), im), (re, im))

    return [row[0] for row in sorted(rows, key=key)]
