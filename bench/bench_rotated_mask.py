"""Rotated-mask online SGD (Figure 15): the literal O(N^2)-per-step kernel against the reduced
O(N_l) kernel (feature_scaling.simulate_rotated_mask_reduced), interleaved, at the figure's
N = 256, eta = 0.05, beta = 1 for each of its N_l.  CPU seconds per step (this thread's clock,
so the ratio holds on a shared machine) and the load average.

    python bench/bench_rotated_mask.py [reps]
"""
import os
import sys
import time

import numpy as np

from solvers.sim.simulate import power_law_eigenvalues
from solvers.theory import feature_scaling as fs

N, ETA, SJ = 256, 0.05, 0.01
LIT_ALPHA, RED_ALPHA = 4.0, 400.0        # the literal kernel is ~100x slower: fewer steps


def per_step(fn, N_l, alpha, seed):
    c = time.process_time()
    fn(power_law_eigenvalues(N, 1.0), N, N_l, ETA, SJ, alpha, seed)
    c0 = time.process_time()
    fn(power_law_eigenvalues(N, 1.0), N, N_l, ETA, SJ, 0.0, seed)     # set-up only (W, draws)
    setup = time.process_time() - c0
    return (c0 - c - setup) / (alpha * N)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for fn in (fs.simulate_rotated_mask, fs.simulate_rotated_mask_reduced):   # compile
        fn(power_law_eigenvalues(16, 1.0), 16, 4, ETA, SJ, 1.0, 0)
    print(f"load average {os.getloadavg()[0]:.2f}; N = {N}, eta = {ETA}; CPU microseconds per SGD step")
    print(f"{'N_l':>5} {'literal':>10} {'reduced':>10} {'ratio':>8}")
    for N_l in (50, 100, 150, 200):
        lit, red = [], []
        for r in range(reps):                          # interleaved repetitions
            lit.append(per_step(fs.simulate_rotated_mask, N_l, LIT_ALPHA, r))
            red.append(per_step(fs.simulate_rotated_mask_reduced, N_l, RED_ALPHA, r))
        a, b = np.median(lit) * 1e6, np.median(red) * 1e6
        print(f"{N_l:5d} {a:10.2f} {b:10.3f} {a / b:8.0f}")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
