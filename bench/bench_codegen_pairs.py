"""Generation time per activation pair, from a cold process: the measurements behind the
activation factors of :mod:`solvers.core.codegen_time`.

Each (student, teacher, K, M) is printed by ``solvers.core.registry.generate`` (derivation,
number module, Taylor jets: what a default ``solve`` of a system not checked in waits for) in a
fresh Python process with its own empty ``SCALING_ODES_CACHE``, one after the other.  The CPU
time of ``generate`` with the jets' second process (the machine may be shared: wall time
says little about the next estimate) is the measure, the wall time beside it; the
estimate of :func:`solvers.core.codegen_time.estimate_seconds` and the one the spec check
(``solvers.app.validate``) uses are printed beside it, with their ratio to the measurement.

    python bench/bench_codegen_pairs.py                          # the default table
    python bench/bench_codegen_pairs.py relu:erf:3:3 x**2:x**2:4:4
    python bench/bench_codegen_pairs.py relu:relu:4:4:trained        # a trained readout
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from table import header, row

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
student, teacher, K, M, folder = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
trained = sys.argv[6] == "trained"
from derive.keys import SystemKey
from solvers.core import registry
key = SystemKey(student, K, M, teacher=teacher, trained=trained)
def cpu():
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + child.ru_utime + child.ru_stime
t0, w0 = cpu(), time.perf_counter()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
phases = registry.generate(key, Path(folder), say=lambda _: None)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"cpu": cpu() - t0, "wall": time.perf_counter() - w0, "phases": phases,
                  "mib": [before / 1024, peak / 1024]}))
"""

DEFAULT = [(s, t, k, k) for k in (2, 3, 4)
           for s, t in (("erf", "erf"), ("linear", "linear"), ("relu", "relu"),
                        ("x**2", "x**2"), ("x**3 - 3*x", "x**3 - 3*x"),
                        ("relu", "erf"), ("erf", "relu"), ("linear", "relu"))]


def run(student: str, teacher: str, K: int, M: int, readout: str = "fixed") -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, SCALING_ODES_CACHE=cache)
        out = subprocess.run([sys.executable, "-c", CHILD, student, teacher, str(K), str(M),
                              cache, readout], capture_output=True, text=True, check=True,
                             cwd=ROOT, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("systems", nargs="*", help="student:teacher:K:M (default: the table)")
    args = parser.parse_args(argv)
    systems = [tuple(a.split(":")) for a in args.systems] or DEFAULT
    systems = [(s, t, int(k), int(m), *rest) for s, t, k, m, *rest in systems]
    sys.path.insert(0, str(ROOT))
    from solvers.app.validate import _codegen_seconds
    from solvers.core.codegen_time import estimate_seconds
    header("student", "teacher", "K", "M", "CPU (s)", "derivation / printing / jets (wall s)",
           "estimate (s)", "measured / estimate", "peak RSS before / after (MiB)", "load", "wall (s)")
    for s, t, K, M, *readout in systems:
        res = run(s, t, K, M, *readout)
        est = estimate_seconds(s, K, M, teacher=t)
        assert abs(_codegen_seconds(K, M, s, t) - est) < 1e-9
        ph = res["phases"]
        row(f"{s} ({readout[0]} readout)" if readout else s, t, K, M, f"{res['cpu']:.2f}",
            f"{ph['derivation']:.1f} / {ph['printing']:.1f} / {ph['Taylor jets']:.1f}", f"{est:.2f}",
            f"{res['cpu'] / est:.2f}", f"{res['mib'][0]:.0f} / {res['mib'][1]:.0f}",
            f"{os.getloadavg()[0]:.1f}", f"{res['wall']:.2f}")


if __name__ == "__main__":
    main()
