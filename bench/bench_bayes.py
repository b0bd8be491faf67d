"""Bayes-optimal baseline: the float64 vectorised channel against the mpmath one, and the fixed
point at the defaults (cubic, β = 1, d = k = 200, Δ = 0.1), interleaved repetitions.

    .venv/bin/python bench/bench_bayes.py
"""
from __future__ import annotations

import time

import numpy as np

from machine_info import cpu_name, load_avg
from solvers.theory.bayes import Setup
from solvers.theory.bayes.channel import branch_t_mp, branch_t_np


def main(reps=3):
    st = Setup()
    act, jump = st.act, st.jump
    lams = jump.lam_f * np.geomspace(1.0001, 1e6, 200)
    t_np, t_mp, t_fp = [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        a = branch_t_np(act, lams, jump)
        t_np.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b = [float(branch_t_mp(act, lam, jump, 20)) for lam in lams]
        t_mp.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for s in (1, 2.4, 10, 100, 1e4, 1e7):
            st.problem.solutions(s)
        t_fp.append(time.perf_counter() - t0)
    dev = float(np.max(np.abs(a - np.array(b)) / np.maximum(1, np.abs(b))))
    print(f"load {load_avg()}  cpu {cpu_name()}")
    print(f"m_σ at 200 λ: float64 vectorised {min(t_np) * 1e3:.1f} ms, mpmath (20 digits) "
          f"{min(t_mp) * 1e3:.0f} ms, ratio {min(t_mp) / min(t_np):.0f}x, max rel. difference "
          f"{dev:.1e}")
    print(f"all stable fixed points at 6 values of n/d (d = k = 200): {min(t_fp):.2f} s")


if __name__ == "__main__":
    main()
