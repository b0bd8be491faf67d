"""Measured CPU time of whole ``scaling-odes solve`` processes against the sizing model
(solvers/app/sizing.py): the data its constants were fitted to (BENCHMARKS.md, "Sizing model").

    .venv/bin/python bench/bench_sizing.py            # the default set of requests
    .venv/bin/python bench/bench_sizing.py NAME ...   # some of them

Each line: name, route, steps of the returned run, measured CPU s, estimated CPU s, ratio.
Pairs run serially (SCALING_ODES_SERIAL=1): the CPU time is the same either way.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

SCALING_ODES = str(Path(sys.executable).with_name("scaling-odes"))

# name: (K, L, eta, alpha_max, extra [training] lines, extra [solve] lines)
REQUESTS = {
    "rodas-L16": (2, 16, 0.5, 300, "", ""),
    "rodas-L16-a2000": (2, 16, 0.5, 2000, "", ""),
    "rodas-L64": (2, 64, 0.5, 300, "", ""),
    "rodas-L256": (2, 256, 0.1, 300, "", ""),
    "rodas-K3": (3, 16, 0.5, 300, "", ""),
    "rodas-order1": (2, 16, 0.5, 300, "order = 1", ""),
    "rk78-L4": (2, 4, 0.5, 100, "", ""),
    "rk78-L4-a1000": (2, 4, 0.5, 1000, "", ""),
    "rk78-L1": (2, 1, 0.5, 1000, "", ""),
    "rk78-L16": (2, 16, 0.1, 300, "", ""),
    "rk78-L64": (2, 64, 0.1, 1000, "", ""),
    "rk78-noise": (2, 16, 0.5, 300, "noise = 0.01", ""),
    "taylor-modes-L4": (2, 4, 0.5, 100, "", "digits = 12"),
    "taylor-modes-L16": (2, 16, 0.1, 100, "", "digits = 12"),
    "taylor-modes-L16-a2000": (2, 16, 0.5, 2000, "", "digits = 12"),
    "taylor-levels-L8": (2, 8, 0.5, 100, "", 'basis = "levels"'),
    "taylor-levels-L4": (2, 4, 0.5, 300, "", 'basis = "levels"\ndigits = 12'),
}


def spec_text(K, L, eta, alpha_max, training, solve) -> str:
    return (f"[model]\nK = {K}\nM = {K}\n[data]\nL = {L}\nN = {max(1024, L)}\n"
            f"[training]\neta = {eta}\n{training}\n[solve]\nalpha_max = {alpha_max}\n"
            f"n_points = 50\n{solve}\n")


def main(names) -> None:
    os.environ["SCALING_ODES_SERIAL"] = "1"
    from solvers.app.sizing import solve_estimate
    from solvers.app.spec import load_spec
    env = dict(os.environ, SCALING_ODES_PROGRESS="off")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path = Path(tmp) / f"{name}.toml"
            path.write_text(spec_text(*REQUESTS[name]))
            est = solve_estimate(load_spec(path))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            out = path.with_suffix(".json")
            proc = subprocess.run([SCALING_ODES, "solve", str(path), "-o", str(out)], env=env,
                                  capture_output=True, text=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode:
                print(name, "failed:", proc.stderr.strip()[-200:], flush=True)
                continue
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            meta = json.loads(out.read_text())["meta"]
            print(f"{name:24s} {meta['route']:30s} {meta['n_steps']:6d} {cpu:8.2f} "
                  f"{est.cpu_s:8.2f} {cpu / est.cpu_s:5.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(REQUESTS))
