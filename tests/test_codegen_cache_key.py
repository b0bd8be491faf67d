"""The cache of modules printed on demand is keyed by a hash of the generator sources
(solvers/core/cachedir.py): every file of derive/ that the printers import, directly or through
the models, also inside functions, must be hashed, or a changed derivation would reuse stale code.

The reference is the import graph read from the source files (ast), not the list the cache keeps.
Modules outside derive/ that the printers reach are excluded by design: solvers/core/orthant.py
evaluates Orthant4 numerically and never runs while code is printed.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from solvers.core import cachedir

pytestmark = [pytest.mark.contract]

ROOT = Path(__file__).resolve().parents[1]
PRINTERS = ("derive.codegen.module_printer", "derive.codegen.jet_printer")


def _module_file(name: str) -> Path | None:
    path = ROOT.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(name: str, path: Path):
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            yield base
            yield from (f"{base}.{a.name}" for a in node.names)


def derive_closure(roots=PRINTERS) -> set[Path]:
    """Files of derive/ reachable from ``roots`` by imports (parent packages included: importing
    a submodule runs them)."""
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if not name.startswith("derive") or name in seen:
            continue
        path = _module_file(name)
        if path is None:            # a name imported from a module, not a module
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:k]) for k in range(1, len(parts))]
        todo += list(_imports(name, path))
    return {_module_file(n) for n in seen}


def test_the_cache_key_hashes_every_file_the_printers_import():
    hashed = set(cachedir.generator_sources())
    missing = sorted(p.relative_to(ROOT).as_posix() for p in derive_closure() - hashed)
    assert not missing, f"printed code depends on files the cache key does not hash: {missing}"


def test_the_closure_reaches_the_models_and_the_codegen_tools():
    """The check can fail: the graph it walks contains the modules a printed system is made of
    (a closure that stopped at the printers would pass any key)."""
    names = {p.relative_to(ROOT / "derive").as_posix() for p in derive_closure()}
    for needed in ("hierarchy.py", "integrals.py", "keys.py", "polynomial_text.py",
                   "family/orthant.py", "family/relu.py", "codegen/cse.py",
                   "codegen/forward_derivatives.py", "codegen/term_order.py"):
        assert needed in names, needed


def test_a_changed_generator_source_changes_the_key(tmp_path, monkeypatch):
    """The hash reads the files' text: a copy of derive/ with one codegen tool changed by one
    byte gets another cache folder."""
    import shutil
    copy = tmp_path / "derive"
    shutil.copytree(ROOT / "derive", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cachedir, "DERIVE_DIR", copy)
    before = cachedir.derive_source_hash()
    with open(copy / "codegen" / "long_sums.py", "a") as fh:
        fh.write("\n")
    assert cachedir.derive_source_hash() != before
