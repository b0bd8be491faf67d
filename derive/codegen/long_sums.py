"""Long sums printed so that Python can compile them.

CPython compiles ``a + b + c + ...`` into a left-nested tree of additions, one level per term,
and refuses a line nested deeper than its compiler allows ("RecursionError: maximum recursion
depth exceeded during compilation").  The η² coefficients of the cubic pair at K = M = 6 are
sums of ~3,900 terms: their modules could be printed but not imported.  A sum of more than
``LONG`` terms is printed as ``sum((a, b, c, ...))`` instead: a flat tuple, added in the same
order (``sum`` starts from 0, and 0 + a is a in every number context).
"""
from __future__ import annotations

LONG = 200


def join_sum(codes) -> str:
    """The code of the sum of the terms ``codes`` (each printed as a term of a sum).

    >>> join_sum(["a", "-b", "2*c"])
    'a + -b + 2*c'
    >>> join_sum([f"x{i}" for i in range(LONG + 1)])[:18]
    'sum((x0, x1, x2, x'
    """
    codes = list(codes)
    if len(codes) <= LONG:
        return " + ".join(codes)
    return "sum((" + ", ".join(codes) + ",))"
