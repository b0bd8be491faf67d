"""Notices on stderr (a system printed on demand, a wait for another process), held while a
command runs so that a refused run prints only its one error line.

Inside :func:`holding` (the command line wraps every command in it) a notice is kept, not
printed: when the command succeeds the kept notices are printed at its end; when it fails they
are dropped and the error line stands alone.  A notice that a user should see at once -- a
generation long enough to print its phases -- calls :func:`release` first: the kept notices and
every later one are then printed as they come.  Outside :func:`holding` (the Python API, a
notebook) every notice is printed at once.
"""
from __future__ import annotations

import contextlib
import sys

_held: list | None = None


def _print(line: str) -> None:
    """One plain line on stderr (through tqdm when a bar may be showing, so it is not torn)."""
    tqdm = sys.modules.get("tqdm")
    if tqdm is not None and hasattr(tqdm, "tqdm"):
        tqdm.tqdm.write(line, file=sys.stderr)
    else:
        print(line, file=sys.stderr, flush=True)


def say(text: str) -> None:
    """``scaling-odes: text`` on stderr, or kept while a command holds its notices."""
    line = f"scaling-odes: {text}"
    if _held is not None:
        _held.append(line)
    else:
        _print(line)


def release() -> None:
    """Print the kept notices now and stop holding (a long wait is announced as it starts)."""
    global _held
    kept, _held = _held, None
    for line in kept or ():
        _print(line)


@contextlib.contextmanager
def holding():
    """Keep the notices of the block; print them when it ends normally, drop them on error."""
    global _held
    outer, _held = _held, []
    try:
        yield
        kept = _held
        _held = outer
        for line in kept or ():
            _print(line)
    finally:
        _held = outer
