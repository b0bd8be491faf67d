"""Two rules every test module keeps, checked on its syntax tree.

**No wall-clock assertion in the default run.**  The suite runs on shared machines: a load of
ten on two cores stretches every wall time by five, so a bound on one fails for reasons that
have nothing to do with the code.  A cost is bounded in CPU time (``time.process_time``, which
load does not stretch), or by a count (steps, calls), or by the state a fast path leaves (a
child terminated rather than finished); a bound that only a wall clock can state goes behind
``@pytest.mark.bench``, which `make verify` runs.  Flagged: an ``assert`` (or an ``assert*``
call) whose condition reads a wall clock (``time.perf_counter``, ``time.time``,
``time.monotonic``, ``datetime.now`` ...) directly or through a name assigned from one, in a
function not marked ``bench`` or ``full`` (within one function: a helper that returns a time to
another that asserts on it is not followed).  A wait with a deadline (``while time.time() <
deadline``) asserts nothing about the time and is not flagged.

**A ``zip`` over compared sequences asserts that they have the same length.**  A plain
``zip`` stops at the shorter one, so a curve that came back with fewer points passes a
point-by-point comparison.  Every ``zip(...)`` in the tests says ``strict=True``; consecutive
pairs of one sequence are ``itertools.pairwise``.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

TESTS = Path(__file__).resolve().parent
WALL_ATTRS = {"perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns",
              "now", "utcnow", "today"}
WALL_MODULES = {"time", "datetime"}
WALL_NAMES = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns"}
EXEMPT_MARKS = {"bench", "full"}


def _reads_wall_clock(node) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute) and f.attr in WALL_ATTRS:
                base = f.value
                if isinstance(base, ast.Attribute):      # datetime.datetime.now()
                    base = base.value
                if isinstance(base, ast.Name) and base.id in WALL_MODULES:
                    return True
            if isinstance(f, ast.Name) and f.id in WALL_NAMES:
                return True
    return False


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _marks(decorators) -> set[str]:
    """Marker names among decorators: ``pytest.mark.x`` and ``pytest.mark.x(...)``."""
    out = set()
    for d in decorators:
        d = d.func if isinstance(d, ast.Call) else d
        if isinstance(d, ast.Attribute) and isinstance(d.value, ast.Attribute) \
                and d.value.attr == "mark":
            out.add(d.attr)
    return out


def _module_marks(tree) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark"
                                                for t in node.targets):
            value = node.value
            elts = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            return _marks(elts)
    return set()


def _assignments(fn):
    """(targets, value) of every binding in ``fn``: assignments, loops, comprehensions."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                yield t, n.value
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and n.value is not None:
            yield n.target, n.value
        elif isinstance(n, (ast.For, ast.comprehension)):
            yield n.target, n.iter


def _tainted(fn) -> set[str]:
    """Names in ``fn`` that hold a wall-clock reading or something computed from one."""
    tainted: set[str] = set()
    pairs = list(_assignments(fn))
    while True:
        before = len(tainted)
        for target, value in pairs:
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
                    and len(target.elts) == len(value.elts):
                sides = zip(target.elts, value.elts, strict=True)
            else:
                sides = [(target, value)]
            for t, v in sides:
                if _reads_wall_clock(v) or _names(v) & tainted:
                    tainted |= _names(t)
        if len(tainted) == before:
            return tainted


def wall_clock_assertions(source: str) -> list[int]:
    """Line numbers of assertions on a wall-clock reading outside ``bench``/``full`` tests."""
    tree = ast.parse(source)
    if _module_marks(tree) & EXEMPT_MARKS:
        return []
    exempt = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and _marks(node.decorator_list) & EXEMPT_MARKS:
            exempt |= {id(n) for n in ast.walk(node)}
    lines = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or id(fn) in exempt:
            continue
        tainted = _tainted(fn)

        def reads(node):
            return _reads_wall_clock(node) or bool(_names(node) & tainted)
        for n in ast.walk(fn):
            if isinstance(n, ast.Assert) and reads(n.test):
                lines.add(n.lineno)
            elif isinstance(n, ast.Call):
                f = n.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if name.startswith("assert") and any(reads(a) for a in n.args):
                    lines.add(n.lineno)
    return sorted(lines)


def loose_zips(source: str) -> list[int]:
    """Line numbers of ``zip(...)`` calls without ``strict=``."""
    return sorted(n.lineno for n in ast.walk(ast.parse(source))
                  if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                  and n.func.id == "zip" and not any(k.arg == "strict" for k in n.keywords))


def test_the_wall_clock_scan_finds_what_it_looks_for():
    bad = ("import time\n"
           "def test_a():\n"
           "    t0 = time.perf_counter()\n"
           "    run()\n"
           "    took = time.perf_counter() - t0\n"
           "    assert took < 5\n"                                  # 6: through two names
           "    assert time.time() - t0 < 5, 'slow'\n"             # 7: directly
           "    stamps = [t0] + [t for t, _ in LINES]\n"
           "    gaps = np.diff(stamps)\n"
           "    np.testing.assert_array_less(gaps, 1.3)\n"         # 10: an assert* call
           "def test_b():\n"
           "    start, cpu = perf_counter(), time.process_time()\n"
           "    assert time.process_time() - cpu < 5\n"            # CPU: not flagged
           "    assert datetime.datetime.now() > start\n")         # 14
    assert wall_clock_assertions(bad) == [6, 7, 10, 14]
    good = ("import time\n"
            "def test_a():\n"
            "    cpu = time.process_time()\n"
            "    assert time.process_time() - cpu < 5\n"
            "    deadline = time.time() + 90\n"
            "    while time.time() < deadline:\n"
            "        time.sleep(0.3)\n"
            "    assert done()\n"
            "@pytest.mark.bench\n"
            "def test_b():\n"
            "    t0 = time.perf_counter()\n"
            "    assert time.perf_counter() - t0 < 1\n"
            "class TestC:\n"
            "    @pytest.mark.full\n"
            "    def test_c(self):\n"
            "        assert time.monotonic() < 1\n")
    assert wall_clock_assertions(good) == []
    marked = "import pytest\npytestmark = [pytest.mark.bench]\ndef test_a():\n" \
             "    assert time.time() > 0\n"
    assert wall_clock_assertions(marked) == []


def test_no_default_test_asserts_a_wall_clock_time():
    hits = [f"{path.relative_to(TESTS)}:{line}" for path in sorted(TESTS.rglob("*.py"))
            for line in wall_clock_assertions(path.read_text())]
    assert not hits, ("a wall-clock time asserted in the default run (bound CPU time or a count "
                      "instead, or mark the test bench): " + ", ".join(hits))


def test_the_zip_scan_finds_what_it_looks_for():
    src = ("for a, b in zip(x, y):\n"
           "    pass\n"
           "assert all(a == b for a, b in zip(u, v, strict=True))\n"
           "pairs = dict(zip(k,\n"
           "                 v))\n"
           "ok = list(zip(*rows, strict=True))\n")
    assert loose_zips(src) == [1, 4]


def test_every_zip_in_the_tests_is_strict():
    hits = [f"{path.relative_to(TESTS)}:{line}" for path in sorted(TESTS.rglob("*.py"))
            for line in loose_zips(path.read_text())]
    assert not hits, ("zip without strict=True (a shorter sequence would pass unnoticed; "
                      "consecutive pairs: itertools.pairwise): " + ", ".join(hits))
