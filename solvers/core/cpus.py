"""The number of CPUs this process may run on: the one count that the verification's second
process, the simulator's threads, sweeps and the sizing model all use."""
from __future__ import annotations

import os


def available_cpus() -> int:
    """CPUs in this process's affinity mask (a container or ``taskset`` may allow fewer than the
    machine has); ``os.cpu_count()`` where the mask cannot be read."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
