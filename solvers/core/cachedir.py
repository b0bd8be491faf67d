"""Where the one cache of generated code is: ``$SCALING_ODES_CACHE`` or ``~/.cache/scaling-odes``,
and the hash of the generator sources that names the folder of everything printed from derive/
(a changed derivation never reuses stale code).  What goes in the cache, and how, is
:mod:`solvers.core.artifacts`.  Free of SymPy."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

DERIVE_DIR = Path(__file__).resolve().parents[2] / "derive"
# the generator sources a printed module depends on (derive/family/*.py besides)
_SOURCES = ("codegen.py", "derivatives.py", "fastcse.py", "forward.py", "hierarchy.py",
            "integrals.py", "taylor.py", "keys.py", "substitute.py", "term_order.py",
            "long_sums.py")


def cache_dir() -> Path:
    return Path(os.environ.get("SCALING_ODES_CACHE", Path.home() / ".cache" / "scaling-odes"))


def derive_source_hash() -> str:
    """Hash of the generator sources: the name of the cache folder of everything printed."""
    h = hashlib.sha256()
    for name in _SOURCES:
        h.update((DERIVE_DIR / name).read_bytes())
    for path in sorted((DERIVE_DIR / "family").glob("*.py")):     # the family's integrals
        h.update(path.read_bytes())
    return h.hexdigest()[:12]
