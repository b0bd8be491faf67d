"""Find the generated module for a system, printing it on demand when it is not checked in.

Checked-in modules live in ``solvers/generated`` and are kept in sync with derive/ by
``scaling-odes regenerate`` (``--check`` fails on any difference).  Any other (activation, K, M)
is printed into a cache directory (``$SCALING_ODES_CACHE`` or ``~/.cache/scaling-odes``) the
first time it is needed, keyed by a hash of the generator sources so a changed derivation never
reuses stale code.

Printing on demand says so on stderr before it starts, with an estimate
(:mod:`solvers.core.codegen_time`), and again when it is done, with the time of each phase::

    scaling-odes: generating erf K=4 M=4 solver (about 5 s, once; cached in ~/.cache/scaling-odes/…)
    scaling-odes: erf K=4 M=4 solver generated in 3.4 s (derivation 2.3 s, printing 1.2 s,
        Taylor jets 0.6 s (beside the printing); 4.1 s of CPU)

(plain lines, also when stderr is not a terminal; between them, for a generation estimated at
more than PHASE_LINES_FROM seconds, one line as each phase starts).  Under the command line
these notices go through :mod:`solvers.core.notices`: a short generation's lines are printed
when the command succeeds and dropped when it fails (its error line stands alone); a long one's
as they come.  With a second free CPU the
Taylor jets are printed in a forked child beside the solver module (the policy of
``solvers.hierarchy.background``; ``SCALING_ODES_SERIAL=1`` turns it off); the CPU time
reported includes the child's.  Processes that need the same
module at once (pytest-xdist workers, the two runs of a precision check, a sweep's workers)
take a lock file per system: one prints, the others wait for it and read its files.  Where the
files go, the lock and the publishing (a file is imported under a temporary name before it is
renamed into place) are those of every generated artifact (:mod:`solvers.core.artifacts`);
a loaded system is remembered per cache directory, so a process that switches
``SCALING_ODES_CACHE`` loads what the new one holds.
"""
from __future__ import annotations

import importlib
import importlib.util
import time
from pathlib import Path

from derive.codegen import module_printer as codegen
from derive.keys import SystemKey
from solvers.core.assembly import System
from solvers.core import notices
from solvers.core.artifacts import (JETS, SOLVER, check_text, import_path, lock, remembered,
                                    write_module)
from solvers.core.cachedir import derive_source_hash as _source_hash
from solvers.core.codegen_time import JETS_SHARE, describe, estimate_seconds
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
    from solvers.precompute import normal_tables
    files[GENERATED_DIR / f"{normal_tables.MODULE}.py"] = normal_tables.render_normal_tables
    return files


def _render(key: SystemKey, target: str) -> str:
    """Source of the module ``load(key, target)`` imports."""
    if target == "taylor":
        from derive.codegen.jet_printer import render_jets
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
                write_module(path, text, path.name)
        if progress:
            progress(path)
    return differing


# the context a system's functions use when the caller passes none: float64 for "numpy";
# "mpmath" callers always pass the context they run in
DEFAULT_CONTEXT = {"numpy": Float64Context, "mpmath": lambda: None}


def load(key: SystemKey, target: str):
    """The system for ``key`` on the generated module of ``target`` (``"mpmath"`` or ``"numpy"``):
    its coefficients, ε_g and index tables with the level / modes assembly; with ``"taylor"``,
    the module of Taylor-jet recurrences of its level-1 coefficients."""
    if target not in (*DEFAULT_CONTEXT, "taylor"):
        raise ValueError(f"target must be one of {(*DEFAULT_CONTEXT, 'taylor')}, got {target!r}")
    return remembered(("system", key, target), lambda: _load(key, target))


def _load(key: SystemKey, target: str):
    name = codegen.module_name(key, target)
    if key in CHECKED_IN:
        module = importlib.import_module(f"solvers.generated.{name}")
    else:
        module = import_path(cached_module(key, target), name)
    return module if target == "taylor" else System(module, DEFAULT_CONTEXT[target]())


# a generation estimated at more than this many seconds also prints a line as each phase starts
PHASE_LINES_FROM = 10.0


def _say(text: str) -> None:
    """One plain line on stderr (solvers.core.notices: held while a command line runs)."""
    notices.say(text)


def _lock(path: Path, waiting: str):
    return lock(path, waiting, _say)


def cached_module(key: SystemKey, target: str) -> Path:
    """Path of the printed module of ``key`` for ``target`` in the cache, printing the system's
    modules first when it is missing (both the solver module and its Taylor jets: every solve
    in arbitrary precision needs both)."""
    path = _path(key, target)
    if path.exists():
        return path
    what = f"{key.description} solver"
    with _lock(path.with_name(f".{key.tag}.lock"),
               f"waiting for another process generating the {what}"):
        missing = [t for t in _targets(key) if not _path(key, t).exists()]
        if not path.exists():
            generate(key, path.parent, missing)
    return path


def printed(key: SystemKey) -> bool:
    """Whether the modules of ``key`` exist (checked in, or in the cache) without printing
    them: a solve of it starts without a generation."""
    return key in CHECKED_IN or all(_path(key, t).exists() for t in _targets(key))


def _path(key: SystemKey, target: str) -> Path:
    """Where the module of ``key`` for ``target`` is cached (solvers.core.artifacts)."""
    return (JETS if target == "taylor" else SOLVER).path(codegen.module_name(key, target))


def ensure_printed(key: SystemKey) -> None:
    """Print the modules of ``key`` into the cache now unless they are checked in or cached
    (without importing them): callers about to fork call it first, so that the printing
    happens once, announced on their own stderr."""
    if key not in CHECKED_IN:
        for target in _targets(key):
            cached_module(key, target)


def _targets(key: SystemKey) -> tuple:
    """The modules a system is printed into: the solver and its Taylor jets (a trained
    readout's jets carry v as inputs and its rates as outputs, derive/codegen/jet_printer.py)."""
    return ("mpmath", "taylor")


def generate(key: SystemKey, folder: Path, targets=("mpmath", "taylor"), say=_say) -> dict:
    """Print the modules of ``key`` for ``targets`` into ``folder``, announcing it with the
    estimated time and ending with the measured time per phase; returns the phases' seconds."""
    targets = [t for t in targets if t in _targets(key)]
    what = f"{key.description} solver"
    estimate = estimate_seconds(key.activation, key.K, key.M, teacher=key.teacher)
    if "mpmath" not in targets:
        estimate *= JETS_SHARE                 # the jets alone: their share of the measured time
    verbose = estimate > PHASE_LINES_FROM
    if verbose and say is _say:
        notices.release()                      # a long generation is announced as it starts
    say(f"generating {what} (about {describe(estimate)}, once; cached in {folder})")
    phases = {}

    def phase(name, work):
        if verbose:
            say(f"{what}: {name} ...")
        t0 = time.perf_counter()
        out = work()
        phases[name] = time.perf_counter() - t0
        return out

    started, cpu = time.perf_counter(), _cpu_seconds()
    jets_path = folder / f"{codegen.module_name(key, 'taylor')}.py"
    child = None
    try:
        if "mpmath" in targets:
            phase("derivation", lambda: codegen._derive(key))
            if "taylor" in targets:
                child = _start_jets_process(key, jets_path)
                if child is not None and verbose:
                    say(f"{what}: Taylor jets, in a second process ...")
            text = phase("printing", lambda: codegen.render(key))
            write_module(folder / f"{codegen.module_name(key)}.py", text, what)
        if child is not None:
            jets = _finish_jets_process(child)
            if jets is not None:          # printed and checked by the child; published here
                import marshal
                text, code, phases["Taylor jets"] = jets
                write_module(jets_path, text, code=marshal.loads(code))
                targets = [t for t in targets if t != "taylor"]
    finally:
        if child is not None:             # a failure here: the child's jets are never published
            child.close()
    if "taylor" in targets:
        text = phase("Taylor jets", lambda: _render(key, "taylor"))
        write_module(jets_path, text, f"{what} (Taylor jets)")
    took = ", ".join(f"{name} {s:.1f} s" for name, s in phases.items())
    if child is not None and "taylor" not in targets:
        took += " (beside the printing)"
    # the CPU time too: on a busy machine the wall time says little about the next estimate
    say(f"{what} generated in {time.perf_counter() - started:.1f} s ({took}; "
        f"{_cpu_seconds() - cpu:.1f} s of CPU)")
    return phases


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the jets' process)."""
    import resource
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + child.ru_utime + child.ru_stime


def _start_jets_process(key: SystemKey, path: Path):
    """Print the Taylor jets in a forked child (``solvers.hierarchy.background``) while this
    process prints the solver module: the two share nothing but the derivation, which the
    child inherits, so with a second free CPU the generation takes the longer of the two
    instead of their sum.  The same rule as every second process of the package: not with
    ``SCALING_ODES_SERIAL=1``, one CPU, no ``fork``, or from a worker.  The child sends the
    text back, checked; this process publishes it after the solver module, so a solver module
    that fails leaves no jets behind.  Returns the child or None."""
    from solvers.hierarchy.background import Background, concurrent_allowed
    if not concurrent_allowed():
        return None

    def jets():
        import marshal
        t0 = time.perf_counter()
        text = _render(key, "taylor")
        # compiled under its final name: the code comes back as the module's bytecode
        code = check_text(text, f"{key.description} solver (Taylor jets)", str(path))
        return text, marshal.dumps(code), time.perf_counter() - t0
    try:
        return Background(jets)
    except OSError:
        return None


def _finish_jets_process(child):
    """(jets' text, its compiled code (marshal), seconds the child took), or None when it did
    not print them (then this process prints them itself, so that an error is raised here,
    with its traceback)."""
    try:
        return child.result()
    except Exception:                        # noqa: BLE001 - redone in this process
        return None
    finally:
        child.close()
