"""Where the one cache of generated code is: ``$SCALING_ODES_CACHE`` or ``~/.cache/scaling-odes``,
and the hash of the generator sources that names the folder of everything printed from derive/
(a changed derivation never reuses stale code).  What goes in the cache, and how, is
:mod:`solvers.core.artifacts`.  Free of SymPy."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

DERIVE_DIR = Path(__file__).resolve().parents[2] / "derive"
# the generator sources a printed module depends on, as patterns relative to derive/: the code
# generator, the models it prints and every module of derive/ they import (checked by
# tests/test_codegen_cache_key.py)
_SOURCES = ("__init__.py", "codegen/*.py", "family/*.py", "hierarchy.py", "integrals.py",
            "keys.py", "polynomial_text.py")


def cache_dir() -> Path:
    return Path(os.environ.get("SCALING_ODES_CACHE", Path.home() / ".cache" / "scaling-odes"))


def generator_sources() -> list[Path]:
    """The files of derive/ whose text shapes printed code, in a fixed order."""
    return [p for pattern in _SOURCES for p in sorted(DERIVE_DIR.glob(pattern))]


def derive_source_hash() -> str:
    """Hash of the generator sources: the name of the cache folder of everything printed."""
    h = hashlib.sha256()
    for path in generator_sources():
        h.update(path.read_bytes())
    return h.hexdigest()[:12]
