"""Benchmark of the simulator on the committee-machine family (solvers/sim/family_kernels.py).

    .venv/bin/python bench/bench_sim_family.py [--repeat R]

Samples per CPU-second of the stepping thread (``steps_per_cpu_second`` x batch size), K = M = 2,
L = 8, float32 inputs, one thread, at N = 256 and 1024, for:

- today:        today's model (erf, paper readouts) on its own kernel (C, one thread);
- family loop:  the same model sent through the family's numba loop (a step schedule that
                never changes eta), i.e. the price of the generic loop (FAMILY_LOOP_SLOWDOWN in
                solvers/app/validate.py);
- relu/erf+noise: student ReLU, teacher erf, label noise 0.1, weight decay 0.01 (family loop);
- ... B = 4:    the same with four samples per step;
- trained:      the same with a trained readout;
- naive:        naive_simulate of relu/erf+noise, the literal NumPy loop (the plain reference a
                user would write), against which the ratios are taken.

Rounds are interleaved (every variant once per round); each rate is the best of the rounds
(other processes only slow a run down); the load average is printed beside the table.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from machine_info import cpu_name, load_avg  # noqa: E402
from solvers.sim.simulate import naive_simulate, simulate  # noqa: E402

FAM = dict(student_activation="relu", teacher_activation="erf", noise=0.1, weight_decay=0.01)
VARIANTS = {
    "today (C kernel)": (simulate, {}, 1),
    "family loop, today's model": (simulate, dict(schedule={"kind": "steps", "alphas": [1e9],
                                                            "etas": [1]}), 1),
    "relu/erf + noise + decay": (simulate, FAM, 1),
    "relu/erf + noise + decay, B = 4": (simulate, dict(FAM, batch_size=4), 4),
    "relu/erf + noise + decay, trained readout": (simulate, dict(FAM, readout="trained",
                                                                 eta_readout=0.1), 1),
    "naive (NumPy), relu/erf + noise + decay": (naive_simulate, FAM, 1),
}


def rate(fn, model, bsz, N, samples):
    steps = samples // bsz
    kw = dict(activation="erf", K=2, M=2, N=N, eta=0.1, sigma_J=0.1, seed=1,
              alphas=[steps / N], L=8, beta=1.0, generator="float32", **model)
    if fn is simulate:
        kw["threads"] = 1
    r = fn(**kw)
    return r.steps_per_cpu_second * bsz, r.kernel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for name, (fn, model, bsz) in VARIANTS.items():      # compile / warm up
        rate(fn, model, bsz, 256, 4096)
    print(f"CPU: {cpu_name()}")
    for N in (256, 1024):
        best, kernels, loads = {}, {}, []
        for _ in range(args.repeat):
            loads.append(load_avg())
            for name, (fn, model, bsz) in VARIANTS.items():
                samples = (2_000_000 if fn is simulate else 20_000) * 256 // N
                r, k = rate(fn, model, bsz, N, samples)
                best[name] = max(best.get(name, 0.0), r)
                kernels[name] = k
        naive = best["naive (NumPy), relu/erf + noise + decay"]
        print(f"\nN = {N}, K = M = 2 (load averages 1/5/15 min at each round: {', '.join(loads)})\n")
        print("| variant | kernel | samples / CPU-s | vs naive | vs today |")
        print("|---|---|---:|---:|---:|")
        for name in VARIANTS:
            print(f"| {name} | {kernels[name]} | {best[name]:,.0f} | {best[name] / naive:.1f}x "
                  f"| {best[name] / best['today (C kernel)']:.2f} |")


if __name__ == "__main__":
    main()
