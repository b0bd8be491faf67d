"""Benchmark of the SGD simulator: numba kernels vs the per-sample NumPy loop, and simulate_many.

    .venv/bin/python bench/bench_simulate.py [--quick]

Prints a Markdown table.  Rates are SGD steps per second of the stepping loop (both simulators
measure it the same way: set-up and record points excluded), best of ``--repeat`` runs, because
other processes on a shared machine only ever slow a run down.  The naive loop runs fewer steps;
its rate does not depend on the number of steps.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from solvers.sim.simulate import naive_simulate, simulate, simulate_many  # noqa: E402

CASES = [  # (N, K = M, numba steps, naive steps)
    (1024, 2, 400_000, 4_000),
    (512, 40, 100_000, 2_000),
]


def _config(N, K, steps):
    return dict(activation="erf", K=K, M=K, N=N, eta=0.1, sigma_J=0.01, L=16, beta=1.0,
                alphas=[steps / N])


def _best_rate(fn, repeat, **kw):
    return max(fn(seed=0, **kw).steps_per_second for _ in range(repeat))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10x fewer steps (smoke run)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per numba measurement")
    args = ap.parse_args(argv)
    div = 10 if args.quick else 1

    t0 = time.perf_counter()
    simulate(seed=0, **_config(64, 2, 64))   # row kernel: compile or load from numba's cache
    simulate(seed=0, **_config(64, 8, 64))   # column kernel
    warm = time.perf_counter() - t0

    rows = []
    for N, K, n_fast, n_slow in CASES:
        fast = _best_rate(simulate, args.repeat, **_config(N, K, n_fast // div))
        slow = _best_rate(naive_simulate, 1, **_config(N, K, n_slow // div))
        rows.append((N, K, fast, slow))

    # simulate_many: 2 seeds in parallel processes vs the same 2 runs one after the other.
    N_many, K_many, n_many = 1024, 2, 1_000_000 // div
    kw = _config(N_many, K_many, n_many)
    t0 = time.perf_counter()
    for s in (0, 1):
        simulate(seed=s, **kw)
    t_seq = time.perf_counter() - t0
    t0 = time.perf_counter()
    simulate_many([0, 1], n_jobs=2, **kw)
    t_par = time.perf_counter() - t0
    t0 = time.perf_counter()  # fixed cost: spawn 2 workers, import, load the cached kernels
    simulate_many([0, 1], n_jobs=2, **_config(N_many, K_many, N_many))
    t_start = time.perf_counter() - t0

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {load:.2f} at the end; kernel compile/cache load {warm:.1f} s\n")
    print("| case (erf) | numba steps/s | NumPy loop steps/s | speed-up |")
    print("|---|---:|---:|---:|")
    for N, K, fast, slow in rows:
        print(f"| N={N}, K=M={K} | {fast:,.0f} | {slow:,.0f} | {fast / slow:.1f}x |")
    print(f"\n| simulate_many (N={N_many}, K=M={K_many}, {n_many:,} steps/seed) | wall time |")
    print("|---|---:|")
    print(f"| 2 seeds sequential | {t_seq:.2f} s |")
    print(f"| 2 seeds, simulate_many(n_jobs=2) | {t_par:.2f} s ({t_seq / t_par:.2f}x) |")
    print(f"| simulate_many, same but {N_many:,} steps/seed (start-up cost) | {t_start:.2f} s |")


if __name__ == "__main__":
    main()
