"""Keep numba's on-disk caches honest about the files a cached kernel was built from.

numba keys a cached function by its own source file's time stamp only.  A kernel that calls
njit functions of another module (their code is compiled into it) or reads another module's
constants (compiled in as literals) keeps running the old code after that module changes — for
example after ``scaling-odes regenerate`` rewrites the float32 tables of
solvers/generated/normal_f32.py, or after a checkout that changes only normals.py.
``drop_stale`` empties the cache of the given dispatchers when a hash of their dependencies
differs from the one recorded next to the cache, so they are compiled afresh.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def dispatchers_of(namespace: dict) -> list:
    """The numba dispatchers among a module's globals (``dispatchers_of(globals())``)."""
    return [v for v in list(namespace.values()) if hasattr(v, "_cache") and hasattr(v, "py_func")]


def drop_stale(module_name: str, dispatchers, dependencies) -> bool:
    """Flush the caches of ``dispatchers`` (njit functions with cache=True, all of module
    ``module_name``) if the files ``dependencies`` changed since they were cached; returns
    whether it did.  Safe with concurrent processes: at worst both recompile."""
    h = hashlib.sha256()
    for path in sorted(str(p) for p in dependencies):
        h.update(Path(path).read_bytes())
    digest = h.hexdigest()
    caches = [d._cache for d in dispatchers if hasattr(getattr(d, "_cache", None), "_cache_path")]
    if not caches:          # nothing cached on disk (cache=False everywhere)
        return False
    stamp = Path(caches[0]._cache_path) / f"{module_name}.deps-sha256"
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass
    for cache in caches:
        try:
            cache.flush()
        except OSError:
            pass
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=stamp.parent)
        with os.fdopen(fd, "w") as f:
            f.write(digest)
        os.replace(tmp, stamp)
    except OSError:
        pass
    return True
