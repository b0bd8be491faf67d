"""Run every benchmark script in sequence and tee their output into bench/results/latest.md.

    .venv/bin/python bench/run_all.py [--quick]        (``make bench`` runs it without flags)

Each script runs in a subprocess with this interpreter, one after the other (never in parallel:
they time themselves).  Their stdout (the Markdown tables) goes both to the terminal and to
``bench/results/latest.md`` (git-ignored); their stderr (progress) only to the terminal.
``--quick`` is passed on to the scripts that accept it.  Exit status: non-zero if any failed.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"

# (script, accepts --quick)
SCRIPTS = [
    ("bench_integrator.py", False),
    ("bench_simulate.py", True),
    ("bench_solvers.py", True),
    ("bench_level_paths.py", True),   # the level basis: arb_mat / short scalars / object arrays
    ("bench_levels.py", True),        # level basis at L = 64, 128 vs heyoka, RK4, odefun, SciPy
    ("bench_dps_rule.py", True),      # digits kept vs dps in the level basis
    ("bench_modes_fast.py", True),    # modes basis at scale: L = 1024; K = M = 40, L = 512
    ("bench_kernel.py", True),        # eigenlearning, M = 2e6 modes x 100 P vs a brentq loop
    ("bench_taylor.py", True),        # Taylor integrator vs heyoka and RK7(8), 12-60 digits
    ("bench_onestep.py", False),      # one-step sRF fixed point vs a damped loop (~2 s; no --quick)
    ("bench_plrf.py", True),          # PLRF loss to r = 1e8: closed form vs a step loop
]


def _load():
    return "/".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def _commit():
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                             capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, text=True,
                               capture_output=True).stdout.strip()
        return out + (" (working tree modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="pass --quick to the scripts that take it")
    args = ap.parse_args(argv)

    RESULTS.mkdir(parents=True, exist_ok=True)
    out_path = RESULTS / "latest.md"
    failed = []
    with open(out_path, "w") as out:
        def emit(text):
            sys.stdout.write(text)
            sys.stdout.flush()
            out.write(text)
            out.flush()

        emit(f"# Benchmark run {datetime.datetime.now().isoformat(timespec='seconds')}\n\n"
             f"Commit {_commit()}; {platform.node()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()} ({sys.executable}); "
             f"load average {_load()} at start.\n")
        for script, takes_quick in SCRIPTS:
            cmd = [sys.executable, str(BENCH / script)]
            if args.quick and takes_quick:
                cmd.append("--quick")
            emit(f"\n## {script}{' --quick' if len(cmd) > 2 else ''}\n\n")
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, bufsize=1)
            for line in proc.stdout:
                emit(line)
            rc = proc.wait()
            emit(f"\n_{script}: exit status {rc}, {time.perf_counter() - t0:.0f} s, "
                 f"load average {_load()} at the end._\n")
            if rc != 0:
                failed.append(script)
    print(f"\nWrote {out_path}" + (f"; FAILED: {', '.join(failed)}" if failed else ""),
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
