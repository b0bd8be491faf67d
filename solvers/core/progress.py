"""Progress display, one implementation for every long computation (solve, demo, simulate).

A :class:`Progress` is a titled display ("solve", "Figure 1", "SGD") that shows one labelled
*phase* at a time — "run 1/2 at 190 digits", "run 2/2 (check) at 240 digits", "L = 16 (curve
3/4)" — each over its own total (α, steps, seeds).  Three forms, chosen from where the output
goes:

* a terminal: a tqdm bar per phase, kept on screen when the phase ends;
* a notebook (IPython kernel): ``tqdm.auto``'s widget;
* anything else (a log file, a pipe, a CI job): plain lines, one each time another ~10 % of the
  phase is done, at least one every ``SCALING_ODES_PROGRESS_INTERVAL`` seconds (default 10;
  a heartbeat thread writes it when the work itself has not moved on) and one when it ends,
  with no carriage returns, e.g. ``solve: run 1/2 at 190 digits: alpha 1200/5000 (24 %)``.

Positions and totals are integers (α = 1173.2 shows as 1173).  Short phases stay silent: nothing
is shown before ``delay`` seconds (a bar: DEFAULT_DELAY = 0.5; plain lines: PLAIN_DELAY = 10, so
that a short run that fails leaves only its one-line error in a log) — the plain form then
reports where the phase stands.  ``SCALING_ODES_PROGRESS`` = "tty" | "plain" | "notebook" | "off" overrides the choice.

Callers that run integrations take ``progress=`` as None, a Progress, or a plain callable
``tick(t)`` (the older form, still accepted everywhere): :func:`phase` turns any of them into a
context manager yielding the ``tick`` for one run.

Example
-------
>>> import io
>>> out = io.StringIO()
>>> p = Progress("solve", stream=out, mode="plain", delay=0)
>>> with p.phase("run 1/2 at 30 digits", total=1000.0) as tick:
...     for t in (99.5, 512.3, 1000.0):
...         tick(t)
>>> print(out.getvalue().strip().splitlines()[-1].split(" done")[0])
solve: run 1/2 at 30 digits: alpha 1000/1000 (100 %)
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
import weakref

MODES = ("tty", "plain", "notebook", "off")
DEFAULT_DELAY = 0.5     # seconds before a bar shows (short runs stay silent)
# a log gets lines only from phases longer than this: a short run that fails then leaves its
# one-line error alone on stderr (the command line's contract for failures)
PLAIN_DELAY = 10.0
ENV = "SCALING_ODES_PROGRESS"
INTERVAL_ENV = "SCALING_ODES_PROGRESS_INTERVAL"
PLAIN_INTERVAL = 10.0   # a log hears from a run at least this often (seconds)
MIN_INTERVAL = 0.05


# when the last plain line of any phase was written (time.perf_counter): a heartbeat stays
# quiet while some display is already saying where the work stands
_last_plain_line = [0.0]


def plain_interval() -> float:
    """Seconds between plain lines at the most (and before the first one): PLAIN_INTERVAL
    unless ``SCALING_ODES_PROGRESS_INTERVAL`` says otherwise (a test's short run, a terse
    log); never below MIN_INTERVAL."""
    try:
        value = float(os.environ.get(INTERVAL_ENV, PLAIN_INTERVAL))
    except ValueError:
        return PLAIN_INTERVAL
    return max(value, MIN_INTERVAL) if math.isfinite(value) else PLAIN_INTERVAL


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
        return shell is not None and "IPKernelApp" in shell.config
    except Exception:                      # noqa: BLE001 - any oddity: not a notebook
        return False


def choose_mode(stream) -> str:
    """The display form for ``stream``: the environment override, else notebook / tty / plain."""
    forced = os.environ.get(ENV, "").strip().lower()
    if forced in MODES:
        return forced
    if _in_notebook():
        return "notebook"
    try:
        return "tty" if stream.isatty() else "plain"
    except (AttributeError, ValueError):
        return "plain"


def _int(x) -> int:
    x = float(x)
    return int(math.floor(x)) if math.isfinite(x) else 0


class Phase:
    """One labelled stretch of work over ``total`` units; ``phase(t)`` moves to position t,
    ``update(n)`` by n (tqdm's form).  Positions only grow; ``close(done=True)`` fills it."""

    def __init__(self, owner: "Progress", label: str, total):
        self.owner, self.label = owner, label
        self.total = max(1, int(math.ceil(float(total))))
        self.n = 0
        self.started = time.perf_counter()
        self._bar = None
        self._shown = False
        self._next_decile = 1
        self._closed = False
        self._last_line = self.started
        self._lock = threading.Lock()
        self._stop = None
        if owner.mode == "plain":
            # a phase whose ticks are sparse (one slow step, a silent library call) still
            # says where it stands at least once per interval
            # (a weak reference: a phase dropped without close() ends its heartbeat too)
            self._stop = threading.Event()
            threading.Thread(target=_heartbeat, args=(weakref.ref(self), self._stop,
                                                      owner.interval),
                             daemon=True, name="progress-heartbeat").start()
        if owner.mode in ("tty", "notebook"):
            if owner.mode == "notebook":
                from tqdm.auto import tqdm
            else:
                from tqdm import tqdm
            self._bar = tqdm(total=self.total, desc=self.title, unit=owner.unit, leave=True,
                             file=owner.stream, delay=owner.delay, dynamic_ncols=True)

    @property
    def title(self) -> str:
        return f"{self.owner.desc}: {self.label}" if self.label else self.owner.desc

    def __call__(self, t) -> None:
        n = min(_int(t), self.total)
        if n > self.n:
            self._advance(n)

    def update(self, n=1) -> None:
        self(self.n + n)

    def _advance(self, n: int) -> None:
        step, self.n = n - self.n, n
        if self._bar is not None:
            self._bar.update(step)
        elif self.owner.mode == "plain":
            decile = (10 * self.n) // self.total
            if decile >= self._next_decile and self.n < self.total:
                self._next_decile = decile + 1
                if time.perf_counter() - self.started >= self.owner.delay:
                    self._line("")

    def _line(self, tail: str) -> None:
        pct = 100 * self.n // self.total
        text = f"{self.title}: {self.owner.unit_name} {self.n}/{self.total} ({pct} %){tail}"
        with self._lock:
            try:
                self.owner.stream.write(text + "\n")
                self.owner.stream.flush()
            except (ValueError, OSError):  # a closed stream: progress is never worth a failure
                pass
            self._shown = True
            self._last_line = _last_plain_line[0] = time.perf_counter()

    def close(self, done: bool = False) -> None:
        if self._closed:
            return
        self._closed = True
        if self._stop is not None:
            self._stop.set()
        if done:
            self(self.total)
        if self._bar is not None:
            self._bar.close()
        elif self.owner.mode == "plain":
            elapsed = time.perf_counter() - self.started
            finished = done and self.n >= self.total
            # a phase that fails says so only when it has shown lines before (its error follows)
            if self._shown or (finished and elapsed >= self.owner.delay):
                self._line(f" done in {elapsed:.1f} s" if finished
                           else f" stopped after {elapsed:.1f} s")

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(done=exc_type is None)
        return False


def _heartbeat(ref, stop: threading.Event, interval: float) -> None:
    """A plain phase's line once per ``interval`` when nothing else was written meanwhile."""
    while not stop.wait(min(interval, 1.0)):
        ph = ref()
        if ph is None:
            return
        now = time.perf_counter()
        if now - ph.started >= ph.owner.delay and now - _last_plain_line[0] >= interval:
            ph._line(f" after {now - ph.started:.0f} s")
        del ph


@contextlib.contextmanager
def heartbeat(desc: str, stream=None):
    """Around a whole command: in the plain form, a line ``desc: working, 40 s so far`` whenever
    no progress line has been written for an interval (set-up, compilation, a computation
    without a display of its own), so that a log hears from a run at least once per interval.
    Nothing in a terminal or notebook (their bars say it) or when progress is off, and nothing
    before the first interval: a short run that fails leaves its one error line alone."""
    stream = sys.stderr if stream is None else stream
    if choose_mode(stream) != "plain":
        yield
        return
    interval, started, stop = plain_interval(), time.perf_counter(), threading.Event()

    def beat():
        while not stop.wait(min(interval, 1.0)):
            now = time.perf_counter()
            if now - started >= interval and now - _last_plain_line[0] >= interval:
                _last_plain_line[0] = now
                try:
                    stream.write(f"{desc}: working, {now - started:.0f} s so far\n")
                    stream.flush()
                except (ValueError, OSError):
                    return

    thread = threading.Thread(target=beat, daemon=True, name="progress-heartbeat")
    thread.start()
    try:
        yield
    finally:
        stop.set()


class Progress:
    """A titled progress display made of labelled phases (see the module docstring).

    desc: the title ("solve"); unit: tqdm's unit ("α", "step", "seed"); unit_name: the word in
    plain lines (default "alpha" for "α", else the unit); stream: default sys.stderr;
    mode: one of MODES or None (automatic); enabled: False shows nothing (same as mode "off");
    delay: seconds before anything is shown (default DEFAULT_DELAY; for plain lines the
    interval); interval: at most this many seconds between plain lines (default
    :func:`plain_interval`).
    """

    def __init__(self, desc: str, *, unit: str = "α", unit_name: str | None = None,
                 stream=None, mode: str | None = None, enabled: bool = True,
                 delay: float | None = None, interval: float | None = None):
        self.desc, self.unit = desc, unit
        self.unit_name = unit_name or ("alpha" if unit == "α" else unit)
        self.stream = sys.stderr if stream is None else stream
        if mode is not None and mode not in MODES:
            raise ValueError(f"progress mode must be one of {MODES}, got {mode!r}")
        self.mode = "off" if not enabled else (mode or choose_mode(self.stream))
        self.interval = float(interval) if interval is not None else plain_interval()
        if delay is None:
            delay = min(PLAIN_DELAY, self.interval) if self.mode == "plain" else DEFAULT_DELAY
        self.delay = float(delay)

    def phase(self, label: str, total) -> Phase:
        return Phase(self, label, total)


@contextlib.contextmanager
def phase(progress, label: str, total):
    """``with phase(progress, "run 1/2 at 40 digits", alphas[-1]) as tick: run(progress=tick)``.

    progress: None (yields None), a :class:`Progress` (a new labelled phase, kept when done),
    or a callable ``tick(t)`` (yielded as it is).
    """
    if progress is None:
        yield None
        return
    if isinstance(progress, Progress):
        with progress.phase(label, total) as ph:
            yield ph
        return
    yield progress


def bar(total, desc: str, *, unit: str = "step", enabled: bool = True, label: str = ""):
    """A single-phase display (``with bar(n, "SGD") as b: b.update(k)``): tqdm's usual form."""
    return Progress(desc, unit=unit, enabled=enabled).phase(label, total)
