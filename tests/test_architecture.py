"""The package's structure: what importing the numeric core pulls in, where flint precision is set."""
import pathlib
import subprocess
import sys
import pytest

pytestmark = [pytest.mark.contract]  # oracle (tests/conftest.py)

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_core_imports_without_sympy():
    code = ("import sys, solvers.core.problem, solvers.core.numbers; "
            "print(sorted(m for m in ('sympy', 'derive.hierarchy', 'derive.spectra') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_flint_precision_assigned_in_one_module():
    """Only solvers/core/numbers.py assigns python-flint's process-wide precision."""
    owners = set()
    for path in list((ROOT / "solvers").rglob("*.py")) + list((ROOT / "derive").rglob("*.py")):
        text = path.read_text()
        for needle in ("ctx.prec =", "ctx.dps =", "ctx.prec=", "ctx.dps="):
            if any(needle in line and "flint" in line for line in text.splitlines()):
                owners.add(path.relative_to(ROOT).as_posix())
    assert owners <= {"solvers/core/numbers.py"}, owners


def test_every_test_module_names_its_oracle():
    """Each test module declares ``pytestmark`` with at least one oracle marker (conftest)."""
    import ast
    from conftest import ORACLE_MARKERS
    missing = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        marks = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark"
                                                    for t in node.targets):
                marks |= {n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute)}
        if not marks & set(ORACLE_MARKERS):
            missing.append(path.name)
    assert not missing, missing


def test_no_import_cycles():
    """Every import inside solvers/ and derive/ (also those inside functions) forms no cycle."""
    import ast
    mods = {}
    for p in list((ROOT / "solvers").rglob("*.py")) + list((ROOT / "derive").rglob("*.py")):
        parts = p.relative_to(ROOT).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    edges = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in mods:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != m and not m.startswith(t + "."):
                    edges[m].add(t)
    # a cycle exists iff a depth-first search meets a module still on its stack
    state, cycle = {}, []

    def visit(m, stack):
        state[m] = 1
        for n in edges[m]:
            if state.get(n) == 1:
                cycle.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n, stack + [n])
        state[m] = 2

    for m in sorted(mods):
        if m not in state:
            visit(m, [m])
    assert not cycle, cycle[:3]


def test_system_names_import_without_the_symbolic_machinery():
    """derive/keys.py and derive/polynomial_text.py stay in derive/ (docs/guide/architecture.md)
    on the condition that the numeric layer can import them, name a system and parse a
    polynomial without loading SymPy, mpmath or NumPy."""
    code = ("import sys; from derive.keys import SystemKey; "
            "from derive.polynomial_text import polynomial_coefficients; "
            "SystemKey('relu', 2, 2, teacher='erf').tag; polynomial_coefficients('x**3 - 3*x'); "
            "print(sorted(m for m in ('sympy', 'mpmath', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_derive_imports_no_numeric_library():
    """Numerics live in solvers/ (docs/guide/architecture.md): no module of derive/ imports NumPy
    or SciPy, or calls mpmath's quadrature, fitting or root finding (Orthant4 evaluates through
    solvers/core/orthant.py, the float32 tables are fitted in solvers/precompute/)."""
    import ast
    offenders = []
    for path in sorted((ROOT / "derive").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Attribute) and node.attr in (
                    "quad", "quadgl", "quadts", "chebyfit", "findroot", "leggauss"):
                names = [node.attr]
            bad = [n for n in names if n.split(".")[0] in ("numpy", "scipy")
                   or n in ("quad", "quadgl", "quadts", "chebyfit", "findroot", "leggauss")]
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in bad]
    assert not offenders, offenders
