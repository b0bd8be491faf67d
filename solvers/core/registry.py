"""Find the generated module for a system, printing it on demand when it is not checked in.

Checked-in modules live in ``solvers/generated`` and are kept in sync with derive/ by
``scaling-odes regenerate`` (``--check`` fails on any difference).  Any other (activation, K, M)
is printed into a cache directory (``$SCALING_ODES_CACHE`` or ``~/.cache/scaling-odes``) the
first time it is needed, keyed by a hash of the generator sources so a changed derivation never
reuses stale code.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from derive import codegen
from derive.keys import SystemKey
from solvers.core.assembly import System
from solvers.core.cachedir import cache_dir
from solvers.core.numbers import Float64Context

GENERATED_DIR = Path(__file__).resolve().parents[1] / "generated"

# The systems shipped with the package: the paper's figures use these.
CHECKED_IN = (
    SystemKey("linear", 1, 1),
    SystemKey("erf", 1, 1),
    SystemKey("erf", 2, 2),
)


def checked_in_files() -> dict:
    """path -> function printing its text, for every checked-in generated module."""
    files = {GENERATED_DIR / f"{codegen.module_name(k)}.py": (lambda k=k: codegen.render(k))
             for k in CHECKED_IN}
    files.update({GENERATED_DIR / f"{codegen.module_name(k, 'taylor')}.py":
                  (lambda k=k: _render(k, "taylor")) for k in CHECKED_IN})
    files[GENERATED_DIR / f"{codegen.KERNELS_MODULE}.py"] = codegen.render_kernels
    from derive import normal_tables
    files[GENERATED_DIR / f"{normal_tables.MODULE}.py"] = normal_tables.render_normal_tables
    return files


def _render(key: SystemKey, target: str) -> str:
    """Source of the module ``load(key, target)`` imports."""
    if target == "taylor":
        from derive.taylor import render_jets
        return render_jets(key)
    return codegen.render(key)


def regenerate(check: bool = False, progress=None) -> list[Path]:
    """Rewrite the checked-in modules (atomic writes); with ``check``, only list what differs."""
    differing = []
    for path, render in checked_in_files().items():
        text = render()
        current = path.read_text() if path.exists() else None
        if current != text:
            differing.append(path)
            if not check:
                codegen.write_atomic(path, text)
        if progress:
            progress(path)
    return differing


def _source_hash() -> str:
    h = hashlib.sha256()
    derive_dir = Path(codegen.__file__).parent
    for name in ("codegen.py", "hierarchy.py", "integrals.py", "taylor.py"):
        h.update((derive_dir / name).read_bytes())
    return h.hexdigest()[:12]


_loaded: dict = {}

# the context a system's functions use when the caller passes none: float64 for "numpy";
# "mpmath" callers always pass the context they run in
DEFAULT_CONTEXT = {"numpy": Float64Context, "mpmath": lambda: None}


def load(key: SystemKey, target: str):
    """The system for ``key`` on the generated module of ``target`` (``"mpmath"`` or ``"numpy"``):
    its coefficients, ε_g and index tables with the level / modes assembly; with ``"taylor"``,
    the module of Taylor-jet recurrences of its level-1 coefficients."""
    if target not in (*DEFAULT_CONTEXT, "taylor"):
        raise ValueError(f"target must be one of {(*DEFAULT_CONTEXT, 'taylor')}, got {target!r}")
    name = codegen.module_name(key, target)
    if (key, target) in _loaded:
        return _loaded[key, target]
    if key in CHECKED_IN:
        module = importlib.import_module(f"solvers.generated.{name}")
    else:
        path = cache_dir() / _source_hash() / f"{name}.py"
        if not path.exists():
            codegen.write_atomic(path, _render(key, target))
        spec = importlib.util.spec_from_file_location(f"scaling_odes_cache.{name}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    if target == "taylor":
        _loaded[key, target] = module
        return module
    _loaded[key, target] = system = System(module, DEFAULT_CONTEXT[target]())
    return system
