"""The one cache of generated code: ``$SCALING_ODES_CACHE`` or ``~/.cache/scaling-odes``.

Every module printed on demand lives in ``cache_dir() / derive_source_hash()`` (a changed
derivation never reuses stale code): the solver modules and Taylor jets of
:mod:`solvers.core.registry`, and the simulator's I2 functions of a pair of activations
(``solvers.sim.family``, through :func:`printed_module`).  A module of its own, free of SymPy,
so that light callers (the simulator's start-up) need not import the code generator when what
they need is already printed."""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
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


@contextlib.contextmanager
def lock(path: Path, waiting: str, say):
    """An exclusive lock on ``path`` (created); ``say(waiting)`` when another process holds it.
    Without fcntl (not POSIX) no lock: the atomic writes alone keep readers safe, at the price
    of generating twice."""
    try:
        import fcntl
    except ImportError:                         # pragma: no cover - non-POSIX
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(waiting)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def import_path(path: Path, name: str):
    """Import the module file ``path`` as ``scaling_odes_cache.<name>``."""
    spec = importlib.util.spec_from_file_location(f"scaling_odes_cache.{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def printed_module(name: str, render, what: str):
    """The cached module ``name`` (a module-name-safe string naming what it holds), printed from
    ``render()`` (its source text) the first time, under a lock, written atomically and checked
    to import (derive.codegen.module_printer.write_atomic); then imported."""
    folder = cache_dir() / derive_source_hash()
    path = folder / f"{name}.py"
    if not path.exists():
        from solvers.core import notices
        with lock(folder / f".{name}.lock", f"waiting for another process printing the {what}",
                  notices.say):
            if not path.exists():
                from derive.codegen.module_printer import write_atomic   # SymPy: when printing
                write_atomic(path, render(), verify=what)
    return import_path(path, name)
