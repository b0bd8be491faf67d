"""Worker processes that die with their parent, and one sweep per output directory.

* `worker_init` (a ``ProcessPoolExecutor`` initializer): on Linux the kernel sends the worker
  SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), also after ``kill -9`` of the parent,
  which runs no Python cleanup; elsewhere a daemon thread notices the new parent id within a
  second.  Without this a killed sweep left its workers computing for minutes, holding the
  parent's stdout/stderr pipes (and multiprocessing's resource tracker alive with them).
* `terminate_pool`: stop a pool now (cancel queued tasks, kill running workers) -- what a
  failure or a signal in the parent needs; ``shutdown(wait=True)`` would finish every task.
* `DirectoryLock`: an ``fcntl.flock`` on ``<dir>/.lock`` holding the owner's pid; the kernel
  drops it when the owner dies, so a crashed sweep never blocks the next one.
* `remove_stale_temps`: the ``*.tmp<pid>`` files a kill inside the write window leaves.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1


def worker_init(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    # Ctrl-C reaches the whole process group: the parent handles it (terminate_pool); a worker
    # interrupted on its own would only print a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the parent may already be gone (between fork/spawn and prctl), and other systems need
    # the watchdog anyway
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(1)
    threading.Thread(target=watch, daemon=True, name="parent-watchdog").start()


def terminate_pool(pool) -> None:
    """Cancel what has not started and kill the workers (private attribute, checked)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        try:
            p.kill()
        except (OSError, ValueError, AttributeError):
            pass
    for p in procs:
        try:
            p.join(timeout=5)
        except (OSError, ValueError, AttributeError, AssertionError):
            pass


class SignalsAsExit:
    """SIGTERM / SIGHUP raise SystemExit in the main thread, so ``finally`` blocks (pool
    termination, lock release) run; restored on exit.  A no-op outside the main thread."""

    def __enter__(self):
        self.saved = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self.saved[sig] = signal.signal(sig, self._raise)
        return self

    @staticmethod
    def _raise(signum, frame):
        raise SystemExit(128 + signum)

    def __exit__(self, *exc):
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        return False


class LockedError(OSError):
    pass


class DirectoryLock:
    def __init__(self, directory: Path):
        self.path = Path(directory) / ".lock"
        self.fh = None

    def __enter__(self):
        import fcntl
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            owner = fh.read().strip() or "?"
            fh.close()
            raise LockedError(f"another sweep (pid {owner}) is running in {self.path.parent}; "
                              f"refusing to start a second one there (wait for it, or use "
                              f"another --out)") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self.fh = fh
        return self

    def __exit__(self, *exc):
        import fcntl
        if self.fh is not None:
            fcntl.flock(self.fh, fcntl.LOCK_UN)
            self.fh.close()
            self.fh = None
        return False


def remove_stale_temps(*directories) -> int:
    """Delete ``*.tmp*`` files (only ever half-written files); call while holding the lock."""
    n = 0
    for d in directories:
        d = Path(d)
        if not d.is_dir():
            continue
        for p in d.glob("*.tmp*"):
            try:
                p.unlink()
                n += 1
            except FileNotFoundError:
                pass
    return n
