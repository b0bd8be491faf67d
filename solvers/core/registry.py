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
from derive.hierarchy import SystemKey

GENERATED_DIR = Path(__file__).resolve().parent / "generated"

# The systems shipped with the package: the paper's figures use these.
CHECKED_IN = (
    SystemKey("linear", 1, 1),
    SystemKey("erf", 1, 1),
    SystemKey("erf", 2, 2),
)


def checked_in_files() -> dict[Path, tuple[SystemKey, str]]:
    return {GENERATED_DIR / f"{codegen.module_name(k, t)}.py": (k, t)
            for k in CHECKED_IN for t in codegen.TARGETS}


def regenerate(check: bool = False, progress=None) -> list[Path]:
    """Rewrite the checked-in modules (atomic writes); with ``check``, only list what differs."""
    differing = []
    for path, (key, target) in checked_in_files().items():
        text = codegen.render(key, target)
        current = path.read_text() if path.exists() else None
        if current != text:
            differing.append(path)
            if not check:
                codegen.write_atomic(path, text)
        if progress:
            progress(path)
    return differing


def cache_dir() -> Path:
    return Path(os.environ.get("SCALING_ODES_CACHE", Path.home() / ".cache" / "scaling-odes"))


def _source_hash() -> str:
    h = hashlib.sha256()
    derive_dir = Path(codegen.__file__).parent
    for name in ("codegen.py", "hierarchy.py", "integrals.py", "taylor.py"):
        h.update((derive_dir / name).read_bytes())
    return h.hexdigest()[:12]


_loaded: dict = {}


def load(key: SystemKey, target: str):
    """The generated module for ``key`` and ``target`` (``"mpmath"``, ``"numpy"`` or ``"taylor"``)."""
    name = codegen.module_name(key, target)
    if (key, target) in _loaded:
        return _loaded[key, target]
    if key in CHECKED_IN:
        module = importlib.import_module(f"solvers.generated.{name}")
    else:
        path = cache_dir() / _source_hash() / f"{name}.py"
        if not path.exists():
            codegen.write_atomic(path, codegen.render(key, target))
        spec = importlib.util.spec_from_file_location(f"scaling_odes_cache.{name}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    _loaded[key, target] = module
    return module
