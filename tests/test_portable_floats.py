"""No test compares a computed float with a stored constant bit for bit.

A float that NumPy, BLAS or libm produced carries the rounding of the machine it was made on
(SIMD width, the order of a reduction, the libm build): on another CPU the last ulps move.  So
a stored constant with more digits than a tolerance could justify is compared with
``pytest.approx`` / ``np.allclose`` at a stated tolerance, or regenerated in the same run.

The scan reads every test module's syntax tree.  A *stored constant* is a float literal with at
least 8 significant digits, or a module-level name whose literal value holds one.  Flagged:
``==`` / ``!=`` with such an operand (directly, or a subscript of such a name), and
``array_equal`` / ``assert_array_equal`` / ``assert_equal`` called with one.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = [pytest.mark.contract]

TESTS = Path(__file__).resolve().parent
EXACT_CALLS = {"array_equal", "assert_array_equal", "assert_equal", "array_equiv"}


def _long_float(node) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, float):
        digits = repr(abs(node.value)).split("e")[0].replace(".", "").lstrip("0")
        return len(digits) >= 8
    return False


def _holds_long_float(node) -> bool:
    return any(_long_float(n) for n in ast.walk(node))


def _root_name(node):
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def exact_comparisons(source: str) -> list[int]:
    """Line numbers of exact comparisons with stored float constants in ``source``."""
    tree = ast.parse(source)
    stored = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if _holds_long_float(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                stored.update(t.id for t in targets if isinstance(t, ast.Name))

    def is_stored(operand) -> bool:
        if _long_float(operand):
            return True
        if isinstance(operand, (ast.Tuple, ast.List)):
            return any(is_stored(e) for e in operand.elts)
        return _root_name(operand) in stored and not isinstance(operand, ast.Call)

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(o, (ast.Eq, ast.NotEq))
                                                  for o in node.ops):
            if any(is_stored(x) for x in [node.left, *node.comparators]):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in EXACT_CALLS and any(is_stored(a) for a in node.args):
                lines.append(node.lineno)
    return lines


def test_the_scan_finds_what_it_looks_for():
    bad = ("X = (0.0063787519416624305, 1.5)\n"
           "def test_a(m):\n"
           "    assert (m[0], m[1]) == X\n"
           "    assert m[2] == 0.29345159306156643\n"
           "    assert np.array_equal(m, X)\n"
           "    assert m[3] != X[0]\n")
    assert exact_comparisons(bad) == [3, 4, 5, 6]
    good = ("X = (0.0063787519416624305, 1.5)\n"
            "def test_a(m):\n"
            "    assert (m[0], m[1]) == pytest.approx(X, rel=1e-12)\n"
            "    assert m[2] == 0.5\n"
            "    assert np.array_equal(m, m.copy())\n")
    assert exact_comparisons(good) == []


def test_no_test_compares_floats_with_stored_constants_exactly():
    hits = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for line in exact_comparisons(path.read_text()):
            hits.append(f"{path.relative_to(TESTS)}:{line}")
    assert not hits, ("exact comparison with a stored float constant (use pytest.approx with a "
                      "justified tolerance): " + ", ".join(hits))
