"""What every benchmark prints about the machine: load average and CPU model."""
from __future__ import annotations

import os
import platform
from pathlib import Path


def load_avg() -> str:
    """1/5/15-minute load averages, or "n/a" where the OS has none."""
    return "/".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def cpu_name() -> str:
    """CPU model from /proc/cpuinfo, else platform's guess."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
