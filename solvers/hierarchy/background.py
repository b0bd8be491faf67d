"""One computation in a forked child process, for the two independent runs of a verification.

``runner.settle`` checks a run by a second one whose precision is fixed before either starts,
so on a machine with two CPUs the first can run in a child while this process runs the check:
the wall time becomes that of the longer run instead of the sum, while the CPU time stays (about
4 % more, measured: the two processes share caches; ``solve``'s JSON reports both).  Only the
compared values come back, as exact mpf (pickled ``_mpf_`` tuples: every bit of the mantissa),
through a pipe.

The child inherits the parent's memory (``fork``: nothing but the result is pickled, so closures
and generated modules need no import-by-name), runs with SIGINT ignored (a Ctrl-C reaches the
whole process group; the parent answers it by terminating the child) and dies with the parent
(PR_SET_PDEATHSIG).  Its Python-level stdout and stderr go to /dev/null.  Every path through
``Background`` joins the child: no zombies.

``SCALING_ODES_SERIAL=1`` (or one CPU in the affinity mask, no ``fork``, a worker process or
thread, e.g. of a sweep) turns it off; the simulator's two-thread step loop follows the same
rule (``parallel_allowed``), and so does the printing of a system's Taylor jets beside its
solver module (``solvers.core.registry.generate``).
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import sys
import threading

from solvers.core.cpus import available_cpus

SERIAL_ENV = "SCALING_ODES_SERIAL"


class ChildDied(RuntimeError):
    """The child ended without sending a result (killed, or out of memory)."""


def parallel_allowed() -> bool:
    """Whether this call may use a second CPU: not switched off (``SCALING_ODES_SERIAL=1``), two
    CPUs in the affinity mask, and the main thread of a main process — a sweep's worker
    processes and threads (``simulate_many``'s) already run in parallel."""
    if os.environ.get(SERIAL_ENV, "").strip() not in ("", "0"):
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    if multiprocessing.parent_process() is not None or multiprocessing.current_process().daemon:
        return False
    return available_cpus() >= 2


def concurrent_allowed() -> bool:
    """Whether a second run may go to a child process: ``parallel_allowed`` and ``fork`` (a
    daemonic dask worker may not have children; forking a thread other than the main one
    invites deadlocks)."""
    return parallel_allowed() and "fork" in multiprocessing.get_all_start_methods()


def _die_with_parent():
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)          # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _portable(exc):
    """The exception itself when it survives pickling both ways, else None."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:                        # noqa: BLE001 - any failure: send its text only
        return None


def _child(fn, conn, expected: tuple):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    # Whatever the child would print (a warning, say) goes nowhere: the parent's streams may be
    # objects with locks held by threads that were not copied by the fork (a Jupyter kernel's
    # output thread), and the result and any error travel through the pipe anyway.
    sys.stdout = sys.stderr = open(os.devnull, "w")
    try:
        try:
            value = fn()
        except expected as exc:
            conn.send(("expected", " ".join(str(exc).split())))
            return
        except BaseException as exc:         # noqa: BLE001 - everything goes back to the parent
            conn.send(("error", _portable(exc), type(exc).__name__, " ".join(str(exc).split())))
            return
        try:
            conn.send(("ok", value))
        except Exception as exc:             # noqa: BLE001 - an unpicklable result
            conn.send(("error", None, type(exc).__name__,
                       f"the background run's result cannot be sent: {exc}"))
    finally:
        conn.close()


class Background:
    """``fn()`` in a forked child.  ``result()`` waits for it: the value, or ``None`` when the
    child raised one of ``expected`` (an anticipated failure, e.g. IntegrationError), or the
    child's exception re-raised here (same type when it pickles, RuntimeError naming the type
    otherwise).  ``close()`` terminates the child if it is still running and reaps it."""

    def __init__(self, fn, *, expected: tuple = ()):
        ctx = multiprocessing.get_context("fork")
        self._recv, send = ctx.Pipe(duplex=False)
        for stream in (sys.stdout, sys.stderr):     # else the child flushes a copy of the buffers
            try:
                stream.flush()
            except (AttributeError, ValueError, OSError):
                pass
        self._proc = ctx.Process(target=_child, args=(fn, send, tuple(expected)), daemon=True)
        self._proc.start()
        send.close()
        self.failure: str | None = None

    @property
    def pid(self) -> int:
        return self._proc.pid

    def result(self):
        try:
            message = self._recv.recv()
        except EOFError:
            self._proc.join()
            raise ChildDied(f"the background run ended without a result (exit code "
                            f"{self._proc.exitcode})") from None
        self._proc.join()
        kind = message[0]
        if kind == "ok":
            return message[1]
        if kind == "expected":
            self.failure = message[1]
            return None
        exc, name, text = message[1:]
        if isinstance(exc, BaseException):
            raise exc
        raise RuntimeError(f"{name}: {text}")

    def close(self):
        if self._proc.is_alive():
            self._proc.terminate()
        self._proc.join()
        self._recv.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
