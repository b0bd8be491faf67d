"""Wall and process-CPU time of a ``with`` block, shared by the benchmark scripts.

Each script keeps its own way of recording the load average (``before`` / ``after`` hooks), so
the numbers and tables they print are unchanged."""
import time


class WallCpu:
    """``with WallCpu() as t: ...`` leaves ``t.wall`` and ``t.cpu`` in seconds."""

    def before(self):
        pass

    def after(self):
        pass

    def __enter__(self):
        self.before()
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0
        self.after()
        return False
