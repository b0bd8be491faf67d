"""Every artifact the package generates at run time: named, built, checked and published here.

All of them live under the one cache directory ``cache_dir()`` (``$SCALING_ODES_CACHE`` or
``~/.cache/scaling-odes``), one kind per row of :data:`KINDS`:

==========================  =================================  ===============================
kind                        key (a change of it builds anew)   file under ``cache_dir()``
==========================  =================================  ===============================
solver modules              system; hash of derive/'s sources  ``<hash>/<system>.py``
Taylor jets                 system; hash of derive/'s sources  ``<hash>/<system>_taylor.py``
simulator's pair I2         activation pair; derive/'s hash    ``<hash>/family_I2_<pair>.py``
C step kernel               C source, compiler and flags, CPU  ``ckernel/sgd_rows-<key>.so``
numba kernels               numba's index (the kernel's file)  ``numba/<source folder>/…``
                            and the files compiled into it
==========================  =================================  ===============================

A file reaches its place only through :func:`publish`: written under a temporary name in its
folder, checked there (a printed module must import, a library must load), then renamed, so no
reader ever sees part of a file or one that failed its check.  Processes that build the same
file at once (pytest workers, a sweep's workers) take its lock file (:func:`lock`): one builds,
the others wait and read what it published.  numba writes its own files; :func:`numba_kernels`
points a module's kernels at ``numba/`` and drops them when a file compiled into them changed.

What a process loads from the cache it remembers per (cache directory, key)
(:func:`remembered`): switching ``SCALING_ODES_CACHE`` gives what the new directory holds.

Free of SymPy and numba: the simulator's start-up imports it.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.util
import os
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from solvers.core.cachedir import cache_dir, derive_source_hash


class GeneratedModuleError(ValueError):
    """A printed module that does not compile or import: it is never published."""


def _one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:120]}"


def check_text(text: str, what: str, filename: str = "<printed>"):
    """The check of a printed module (``what`` names it in the message): its text compiles and
    runs as a module; GeneratedModuleError otherwise.  Returns the compiled code."""
    try:
        code = compile(text, filename, "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise GeneratedModuleError(f"the printed module of the {what} does not compile "
                                   f"({_one_line(e)}); it was not cached") from None
    module = types.ModuleType(f"_scaling_odes_check_{os.getpid()}")
    module.__file__ = filename
    try:
        exec(code, module.__dict__)
    except Exception as e:                              # noqa: BLE001 - reported in one line
        raise GeneratedModuleError(f"the printed module of the {what} does not import "
                                   f"({_one_line(e)}); it was not cached") from None
    return code


def check_module(what: str) -> Callable[[str], None]:
    """:func:`check_text` of a module file."""
    return lambda tmp: check_text(Path(tmp).read_text(), what, tmp)


def check_library(what: str) -> Callable[[str], None]:
    """The check of a shared library: it loads (OSError otherwise)."""
    def check(tmp: str) -> None:
        ctypes.CDLL(tmp)
    return check


def publish(path: Path, fill: Callable[[str], None], check=None) -> Path:
    """The one way a generated file reaches ``path``: ``fill(tmp)`` writes it under a temporary
    name in the same folder, ``check(tmp)`` raises if it is unusable, then one rename.  On any
    error the temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        fill(tmp)
        # readable by all like any file (mkstemp makes it 0600); a linker's x bits are kept
        os.chmod(tmp, 0o644 | (os.stat(tmp).st_mode & 0o111))
        if check is not None:
            check(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_module(path: Path, text: str, what: str | None = None, code=None) -> Path:
    """Publish the module ``text`` at ``path``; with ``what``, only if it imports (callers
    that checked the text already, e.g. in another process, pass None and the ``code`` that
    check compiled, if they have it).  The code the check compiled (under the final name) is
    left as the module's bytecode, so that loading the module just printed does not compile it
    a second time: for the large modules of K = M = 4 that compilation is several percent of
    the generation."""
    path = Path(path)
    compiled = [] if code is None else [code]
    check = None if what is None else \
        (lambda tmp: compiled.append(check_text(text, what, str(path))))
    publish(path, lambda tmp: Path(tmp).write_text(text), check)
    if compiled and not sys.dont_write_bytecode:
        _write_bytecode(path, compiled[0])
    return path


def _write_bytecode(path: Path, code) -> None:
    """The ``__pycache__`` file the next import of ``path`` looks for (PEP 3147), validated by
    the source's mtime and size (PEP 552).  Best effort: without it the import compiles the
    source as usual."""
    import marshal
    try:
        stat = path.stat()
        header = b"".join((importlib.util.MAGIC_NUMBER, (0).to_bytes(4, "little"),
                           (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little"),
                           (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little")))
        pyc = Path(importlib.util.cache_from_source(str(path)))
        publish(pyc, lambda tmp: Path(tmp).write_bytes(header + marshal.dumps(code)))
    except (OSError, ValueError, NotImplementedError):
        pass


@contextlib.contextmanager
def lock(path: Path, waiting: str, say=None):
    """An exclusive lock on ``path`` (created); ``say(waiting)`` (default: a notice on stderr)
    when another process holds it.  Without fcntl (not POSIX) no lock: the atomic publish alone
    keeps readers safe, at the price of building twice."""
    try:
        import fcntl
    except ImportError:                         # pragma: no cover - non-POSIX
        yield
        return
    if say is None:
        from solvers.core.notices import say
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


def printed_folder() -> Path:
    """The folder of everything printed from derive/ as it is now."""
    return cache_dir() / derive_source_hash()


def numba_dir() -> Path:
    """Where numba keeps the compiled kernels: under the cache, unless numba's own
    ``NUMBA_CACHE_DIR`` says otherwise (numba reads it for every cached function it meets)."""
    return Path(os.environ.get("NUMBA_CACHE_DIR") or cache_dir() / "numba")


@dataclass(frozen=True)
class Kind:
    """One kind of generated artifact: where its files go and how one is checked."""

    title: str
    folder: Callable[[], Path]          # its folder under cache_dir() (now)
    suffix: str
    check: Callable[[str], Callable] | None
    pattern: str                        # its files in every folder it ever had, from cache_dir()
    owns: Callable[[str], bool] = lambda name: True
    verb: str = "printing"              # what another process is doing while this one waits

    def path(self, name: str) -> Path:
        return self.folder() / f"{name}{self.suffix}"

    def obtain(self, name: str, fill: Callable[[str], None], what: str) -> Path:
        """The file ``name`` of this kind, built by ``fill`` and published first when it is
        missing (one process builds, the others wait for it)."""
        path = self.path(name)
        if not path.exists():
            with lock(path.with_name(f".{name}.lock"),
                      f"waiting for another process {self.verb} the {what}"):
                if not path.exists():
                    publish(path, fill, self.check(what) if self.check else None)
        return path

    def files(self, root: Path) -> list:
        found = [p for p in root.glob(self.pattern)
                 if p.is_file() and not p.name.startswith(".") and self.owns(p.name)]
        if self.suffix == ".py":        # with the bytecode Python keeps of each module
            found += [c for c in (Path(importlib.util.cache_from_source(str(p))) for p in found)
                      if c.is_file()]
        return found


def _hash_folder_py(name: str) -> bool:
    return not name.endswith("_taylor.py") and not name.startswith("family_I2_")


SOLVER = Kind("solver modules", printed_folder, ".py", check_module, "*/*.py", _hash_folder_py)
JETS = Kind("Taylor jets", printed_folder, ".py", check_module, "*/*_taylor.py")
PAIR_I2 = Kind("simulator's pair I2", printed_folder, ".py", check_module, "*/family_I2_*.py")
CKERNEL = Kind("C step kernel", lambda: cache_dir() / "ckernel", ".so", check_library,
               "ckernel/*.so", verb="compiling")
NUMBA = Kind("numba kernels", numba_dir, "", None, "numba/**/*")
KINDS = (SOLVER, JETS, PAIR_I2, CKERNEL, NUMBA)


def listing(root: Path | None = None) -> list[tuple[str, int, int]]:
    """(kind, files, bytes) for every kind in the cache (printed modules of every derive/
    hash, not only the current one)."""
    root = cache_dir() if root is None else Path(root)
    out = []
    for kind in KINDS:
        files = kind.files(root)
        out.append((kind.title, len(files), sum(p.stat().st_size for p in files)))
    return out


def clear(root: Path | None = None) -> tuple[int, int]:
    """Delete what :func:`listing` lists, with the kinds' lock files and the folders left empty
    (nothing else: the cache directory may hold other files); returns (files, bytes)."""
    root = cache_dir() if root is None else Path(root)
    files = [p for kind in KINDS for p in kind.files(root)]
    size = sum(p.stat().st_size for p in files)
    folders = {p.parent for p in files}
    for path in files:
        path.unlink()
    for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
        for lockfile in folder.glob(".*.lock"):
            lockfile.unlink()
        while folder != root and folder.is_relative_to(root) and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    return len(files), size


def import_path(path: Path, name: str):
    """Import the module file ``path`` as ``scaling_odes_cache.<name>``."""
    spec = importlib.util.spec_from_file_location(f"scaling_odes_cache.{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def printed_module(kind: Kind, name: str, render: Callable[[], str], what: str):
    """The module ``name`` of ``kind``, printed from ``render()`` the first time; imported."""
    path = kind.obtain(name, lambda tmp: Path(tmp).write_text(render()), what)
    return import_path(path, name)


_remembered: dict = {}


def remembered(key: tuple, make: Callable):
    """``make()`` once per (cache directory, ``key``) in this process."""
    where = (cache_dir(), key)
    if where not in _remembered:
        _remembered[where] = make()
    return _remembered[where]


def forget(first) -> None:
    """Forget what was remembered under keys starting with ``first``, in every directory."""
    for where in [w for w in _remembered if w[1][0] == first]:
        del _remembered[where]


def numba_kernels(namespace: dict, dependencies=()) -> bool:
    """Register the ``cache=True`` numba kernels of a module; it calls this at its end with
    ``globals()``, before anything is compiled.  Their compiled code is kept under
    :func:`numba_dir`, and dropped when one of the files ``dependencies`` changed since it was
    compiled: numba keys a cached kernel by its own source file only, yet the njit functions
    of other modules it calls are compiled into it, and other modules' constants as literals
    (e.g. the float32 tables after ``scaling-odes regenerate``).  Returns whether it dropped
    them."""
    from numba.core import config
    module = namespace["__name__"]
    kernels = [v for v in list(namespace.values())
               if hasattr(getattr(v, "_cache", None), "_cache_path")
               and getattr(v.py_func, "__module__", None) == module]
    previous, config.CACHE_DIR = config.CACHE_DIR, str(numba_dir())
    try:
        for kernel in kernels:
            kernel.enable_caching()     # numba picks the folder from config.CACHE_DIR
    finally:
        config.CACHE_DIR = previous
    if not kernels or not dependencies:
        return False
    h = hashlib.sha256()
    for path in sorted(str(p) for p in dependencies):
        h.update(Path(path).read_bytes())
    digest = h.hexdigest()
    stamp = Path(kernels[0]._cache._cache_path) / f"{module.rsplit('.', 1)[-1]}.deps-sha256"
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass
    for kernel in kernels:          # concurrent processes: at worst both recompile
        try:
            kernel._cache.flush()
        except OSError:
            pass
    try:
        publish(stamp, lambda tmp: Path(tmp).write_text(digest))
    except OSError:
        pass
    return True
