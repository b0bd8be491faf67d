"""Benchmark of the SGD simulator: step loop, whole command, generator floor, seeds x cores.

    .venv/bin/python bench/bench_simulate.py [--quick] [--repeat R]

Prints Markdown tables (paste them into BENCHMARKS.md).  The machine is shared, so every row
carries the 1-minute load average measured next to it, repetitions are interleaved (round r runs
every variant once before round r + 1 starts), and each rate is the best of the rounds: other
processes only ever slow a run down.  Rates are given per wall-clock second and per second of
this thread's CPU time (what one core does when the machine is shared).

1. Step loop, N in {256, 1024, 7000}, K = M in {2, 40} (erf, L = 8, eta = 0.1):
   - xoshiro: ``simulate(generator="xoshiro")``, xoshiro256++ lanes + ziggurat (the default
     until float32 passed the same checks),
     on the C kernel (solvers/sim/ckernel.py; K < 32) or numba's column kernel (K = 40), one
     thread (the per-core rate);
   - float32: ``simulate(generator="float32")`` (the default), the same lanes, two float32
     inverse-CDF normals per word, same kernels;
   - 2 threads: the same two, one run's steps on two threads (the C kernel's default from
     N = 512 with a free second CPU; wall-clock rate);
   - numba kernel: the same two with the C kernel switched off (what runs without a
     compiler; the C kernel's same-run speed-up);
   - pcg64:   ``simulate(generator="numpy")``, NumPy's PCG64 stream drawn inside the kernel;
   - naive:   ``naive_simulate(generator="numpy")``, one NumPy iteration per sample;
   - floor:   drawing the N inputs of a step alone (and the scale multiply), in a compiled
     loop (the C kernel's), per generator: no step loop with it can beat it.
2. Whole command: ``scaling-odes simulate`` (a fresh process: interpreter, imports, the cached
   C library, set-up, records, JSON; two threads, the default on an idle 2-CPU machine) at N = 1024, K = M = 2, L = 16, alpha <= 2000 (2.05e6 steps),
   at its defaults (no ``[simulate]`` section: the default generator, "float32") and with
   ``generator = "xoshiro"`` (the ziggurat), steps / wall time, against the naive loop's rate
   measured in the same round.  ``--isa native,avx2`` alternates the C kernel's instruction-set
   paths in each round (avx2: what a CPU without AVX-512 runs, built here).
3. Seeds x cores: 8 seeds, ``simulate_many(n_jobs=2)`` (threads) vs ``n_jobs=1`` (one after the
   other), interleaved, for both generators.  The 0.6x target is for an idle machine; the table
   shows the load.  Run it at a raised priority (``nice -n -15``, as root) when other jobs
   share the machine: autogroup scheduling must be off for nice to act across sessions.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from machine_info import cpu_name, load_avg  # noqa: E402
from simulate_spec import spec_text  # noqa: E402
from solvers.sim import ckernel, normals  # noqa: E402
from solvers.sim.simulate import naive_simulate, simulate, simulate_many  # noqa: E402

CASES = [(256, 2), (1024, 2), (7000, 2), (256, 40), (1024, 40), (7000, 40)]
# multiply-adds per timed run (numba); the naive loop gets 1/40 of it (its rate does not depend
# on the number of steps)
WORK = 4e8


def load1():
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def _config(N, K, steps, L=8):
    return dict(activation="erf", K=K, M=K, N=N, eta=0.1, sigma_J=0.01, L=L, beta=1.0,
                alphas=[steps / N])


def _floor_rate(N, steps, generator="xoshiro"):
    """Steps/s (wall, CPU) of drawing N scaled normals per step and nothing else, with the
    kernel that runs that generator's steps (the C kernel's draw loop; numba's without it)."""
    state = normals.seed_state(0)
    s, z = np.linspace(0.5, 2.0, N), np.empty(N)
    ck = ckernel.kernel()
    if ck is not None:
        ck.draw_only(generator, state, s, z, 1)
        t0, c0 = time.perf_counter(), time.thread_time()
        ck.draw_only(generator, state, s, z, steps)
        return steps / (time.perf_counter() - t0), steps / (time.thread_time() - c0)
    from numba import njit

    fill = normals.fill_normals if generator == "xoshiro" else normals.fill_normals_f32

    @njit(nogil=True)
    def draw_only(state, bits, s, z, n):
        for _ in range(n):
            fill(state, bits, s, z)

    bits = np.empty(2 * N, np.uint64)
    draw_only(state, bits, s, z, 1)
    t0, c0 = time.perf_counter(), time.thread_time()
    draw_only(state, bits, s, z, steps)
    return steps / (time.perf_counter() - t0), steps / (time.thread_time() - c0)


@contextlib.contextmanager
def numba_kernels():
    """Run simulate on the numba kernels (as without a C compiler), for the same-run ratio."""
    with ckernel.numba_only():
        yield


def _step_rates(fn, **kw):
    r = fn(seed=0, **kw)
    return r.steps_per_second, r.steps_per_cpu_second


def _best(rows):
    """Per key: best wall rate, best CPU rate, load average range over the rounds."""
    out = {}
    for key, vals in rows.items():
        wall = max(v[0] for v in vals)
        cpu = max(v[1] for v in vals)
        loads = [v[2] for v in vals]
        out[key] = (wall, cpu, min(loads), max(loads))
    return out


def step_loop_table(repeat, div):
    rows = {}
    for N, K in CASES:     # compile / load every kernel first
        for g in ("xoshiro", "numpy", "float32"):
            simulate(seed=0, generator=g, **_config(N, K, 8))
            with numba_kernels():
                simulate(seed=0, generator=g, **_config(N, K, 8))
    _floor_rate(64, 1)
    _floor_rate(64, 1, "float32")
    for _ in range(repeat):
        for N, K in CASES:
            steps = max(200, int(WORK / div / (N * 2 * K)))
            naive_steps = max(50, steps // 40)
            for name, fn, kw in (
                    ("xoshiro", simulate, dict(_config(N, K, steps), generator="xoshiro", threads=1)),
                    ("float32", simulate, dict(_config(N, K, steps), generator="float32",
                                               threads=1)),
                    ("xoshiro-2t", simulate, dict(_config(N, K, steps), generator="xoshiro", threads=2)),
                    ("float32-2t", simulate, dict(_config(N, K, steps), generator="float32",
                                                  threads=2)),
                    ("xoshiro-numba", simulate, dict(_config(N, K, steps), generator="xoshiro")),
                    ("float32-numba", simulate, dict(_config(N, K, steps), generator="float32")),
                    ("pcg64", simulate, dict(_config(N, K, steps), generator="numpy")),
                    ("naive", naive_simulate, dict(_config(N, K, naive_steps),
                                                   generator="numpy"))):
                with numba_kernels() if name.endswith("-numba") else contextlib.nullcontext():
                    rate = _step_rates(fn, **kw)
                rows.setdefault((N, K, name), []).append((*rate, load1()))
            rows.setdefault((N, K, "floor"), []).append((*_floor_rate(N, steps), load1()))
            rows.setdefault((N, K, "floor32"), []).append(
                (*_floor_rate(N, steps, "float32"), load1()))
    return _best(rows)


def whole_command(repeat, div, isas=("native",)):
    """Rows per round, instruction-set path (``SCALING_ODES_CKERNEL_ISA``: "avx2" builds what an
    AVX2-only CPU runs) and spec, each next to a naive loop of the same round."""
    exe = Path(sys.executable).with_name("scaling-odes")
    alpha_max = 2000 // div
    N, K = 1024, 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # the command at its defaults (no [simulate] section: whatever generator is the default)
        # and with the ziggurat named explicitly
        specs = {"default": Path(tmp) / "spec-default.toml", "xoshiro": Path(tmp) / "spec-xoshiro.toml"}
        specs["default"].write_text(spec_text(N, K, alpha_max))
        specs["xoshiro"].write_text(spec_text(N, K, alpha_max, '[simulate]\ngenerator = "xoshiro"\n'))
        out = Path(tmp) / "out.json"
        for _, isa, g in ((r, i, g) for r in range(repeat) for i in isas for g in specs):
            spec = specs[g]
            env = {**os.environ, "SCALING_ODES_CKERNEL_ISA": isa}
            # imports reuse (and write) compiled bytecode, as Python does by default and as an
            # installed package has it: without it each run compiles ~90 modules (~0.45 s CPU)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            la = load1()
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([str(exe), "simulate", str(spec), "-o", str(out), "--no-progress"],
                           check=True, env=env)
            wall = time.perf_counter() - t0
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
            res = json.loads(out.read_text())
            steps = round(res["alpha"][-1] * N)
            inner = res["meta"]["steps_per_second"]
            # the naive per-sample loop, same round, same model
            nv = naive_simulate(seed=0, generator="numpy",
                                **dict(_config(N, K, max(500, 20000 // div), L=16)))
            label = f"default ({res['meta']['generator']})" if g == "default" else g
            rows.append(dict(generator=label, isa=isa, threads=res["meta"]["threads"], load=la,
                             wall=wall, cpu=cpu, steps=steps, inner=inner,
                             naive=nv.steps_per_second, naive_cpu=nv.steps_per_cpu_second,
                             load_end=load1()))
    return rows


def seeds_cores(repeat, div):
    kw = _config(1024, 2, 600_000 // div, L=16)
    for g in ("xoshiro", "float32"):
        simulate(seed=0, generator=g, **_config(1024, 2, 64, L=16))
    rows = []
    seeds = list(range(8))
    for _ in range(repeat):
        for g in ("xoshiro", "float32"):
            for n_jobs in (1, 2):
                la = load1()
                c0 = time.process_time()
                t0 = time.perf_counter()
                simulate_many(seeds, n_jobs=n_jobs, generator=g, **kw)
                rows.append(dict(generator=g, n_jobs=n_jobs, wall=time.perf_counter() - t0,
                                 cpu=time.process_time() - c0, load=la, load_end=load1()))
    return rows, kw


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10x fewer steps (smoke run)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds")
    ap.add_argument("--only", choices=("steps", "command", "seeds"), action="append",
                    help="run only these parts (default: all)")
    ap.add_argument("--isa", default="native",
                    help="whole command: comma-separated C kernel paths to alternate "
                         f"({', '.join(ckernel.ISA_VARIANTS)}; default native)")
    args = ap.parse_args(argv)
    div = 10 if args.quick else 1
    parts = args.only or ["steps", "command", "seeds"]
    print(f"Machine: {cpu_name()}, {os.cpu_count()} cores; load average at start "
          f"{load_avg()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")

    if "steps" in parts:
        best = step_loop_table(args.repeat, div)
        print("Step loop, steps/s: best of the interleaved rounds, wall | per CPU-second; "
              "load = 1-min load average over the rounds.  floor = drawing the inputs alone.  "
              f"C kernel: {'yes' if ckernel.kernel() is not None else 'NO (numba only)'} "
              "(rows layout, K < 32; K = 40 runs numba's column kernel in every column).\n")
        print("| N | K=M | xoshiro (wall \\| CPU) | float32 (wall \\| CPU) "
              "| 2 threads: xoshiro \\| float32 (wall) "
              "| numba kernel: xoshiro \\| float32 (CPU) | PCG64 in kernel (CPU) "
              "| naive NumPy loop (CPU) | floor: draw only (ziggurat \\| float32, CPU) "
              "| xoshiro / naive | float32 / naive | C / numba (xoshiro, float32) "
              "| step / floor (ziggurat, float32) | load |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        keys = ("xoshiro", "float32", "xoshiro-2t", "float32-2t", "xoshiro-numba",
                "float32-numba", "pcg64", "naive", "floor", "floor32")
        for N, K in CASES:
            x, x32, x2, x322, xn, x32n, p, n, f, f32 = (best[(N, K, k)] for k in keys)
            loads = [v for k in keys for v in best[(N, K, k)][2:]]
            print(f"| {N} | {K} | {x[0]:,.0f} \\| {x[1]:,.0f} | {x32[0]:,.0f} \\| {x32[1]:,.0f} "
                  f"| {x2[0]:,.0f} \\| {x322[0]:,.0f} "
                  f"| {xn[1]:,.0f} \\| {x32n[1]:,.0f} | {p[1]:,.0f} | {n[1]:,.0f} "
                  f"| {f[1]:,.0f} \\| {f32[1]:,.0f} | {x[1] / n[1]:.1f}x | {x32[1] / n[1]:.1f}x "
                  f"| {x[1] / xn[1]:.2f}, {x32[1] / x32n[1]:.2f} "
                  f"| {f[1] / x[1]:.2f}, {f32[1] / x32[1]:.2f} | {min(loads):.1f}-{max(loads):.1f} |")
        print()

    if "command" in parts:
        isas = tuple(args.isa.split(","))
        if not set(isas) <= set(ckernel.ISA_VARIANTS):
            ap.error(f"--isa: each of {', '.join(ckernel.ISA_VARIANTS)}")
        rows = whole_command(args.repeat, div, isas)
        print(f"Whole command `scaling-odes simulate` (fresh process), N=1024, K=M=2, L=16, "
              f"alpha <= {2000 // div}, vs the naive per-sample loop in the same round:\n")
        # wall / wall is what a user waits; under load it favours the command, whose two threads
        # get two shares of the CPUs against the naive loop's one, so the per-CPU-second ratio
        # (the command's steps per CPU second of all its threads, set-up included, against the
        # naive loop's steps per CPU second) is printed too
        print("| round | path (threads) | generator | steps | wall s | command steps/s | its step loop steps/s "
              "| naive steps/s (wall \\| CPU) | command / naive (wall) | CPU s of the command "
              "| command / naive (per CPU s) | load (start-end) |")
        print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        per_round = len(rows) // max(1, args.repeat)
        for i, r in enumerate(rows):
            rate = r["steps"] / r["wall"]
            cpu_ratio = (r["steps"] / r["cpu"]) / r["naive_cpu"]
            print(f"| {i // per_round + 1} | {r['isa']} ({r['threads']}) | {r['generator']} "
                  f"| {r['steps']:,} | {r['wall']:.2f} "
                  f"| {rate:,.0f} | {r['inner']:,.0f} "
                  f"| {r['naive']:,.0f} \\| {r['naive_cpu']:,.0f} | **{rate / r['naive']:.1f}x** "
                  f"| {r['cpu']:.2f} | {cpu_ratio:.1f}x "
                  f"| {r['load']:.1f}-{r['load_end']:.1f} |")
        print("\nMedians over the rounds, command / naive of the same round:\n")
        print("| path | generator | threads (per round) | command CPU s | command wall s "
              "| per CPU s | wall | load |")
        print("|---|---|---|---:|---:|---:|---:|---|")
        for isa in isas:
            for g in sorted({r["generator"] for r in rows}):
                rs = [r for r in rows if r["isa"] == isa and r["generator"] == g]
                cpu_r = [(r["steps"] / r["cpu"]) / r["naive_cpu"] for r in rs]
                wall_r = [(r["steps"] / r["wall"]) / r["naive"] for r in rs]
                print(f"| {isa} | {g} | {','.join(str(r['threads']) for r in rs)} "
                      f"| {np.median([r['cpu'] for r in rs]):.2f} "
                      f"| {np.median([r['wall'] for r in rs]):.2f} "
                      f"| **{np.median(cpu_r):.1f}x** ({min(cpu_r):.1f}-{max(cpu_r):.1f}) "
                      f"| **{np.median(wall_r):.1f}x** ({min(wall_r):.1f}-{max(wall_r):.1f}) "
                      f"| {min(r['load'] for r in rs):.1f}-{max(r['load_end'] for r in rs):.1f} |")
        print()

    if "seeds" in parts:
        rows, kw = seeds_cores(args.repeat, div)
        steps = round(kw["alphas"][0] * 1024)
        print(f"Seeds x cores: 8 seeds x {steps:,} steps (N=1024, K=M=2), simulate_many, "
              f"interleaved:\n")
        print("| round | generator | n_jobs | wall s | CPU s (all threads) | load (start-end) |")
        print("|---:|---|---:|---:|---:|---|")
        for i, r in enumerate(rows):
            print(f"| {i // 4 + 1} | {r['generator']} | {r['n_jobs']} | {r['wall']:.2f} "
                  f"| {r['cpu']:.2f} | {r['load']:.1f}-{r['load_end']:.1f} |")
        for g in ("xoshiro", "float32"):
            seq = [r["wall"] for r in rows if r["n_jobs"] == 1 and r["generator"] == g]
            par = [r["wall"] for r in rows if r["n_jobs"] == 2 and r["generator"] == g]
            ratios = [p / s for s, p in zip(seq, par)]
            print(f"\n{g}: parallel / sequential wall time per round: "
                  f"{', '.join(f'{q:.2f}' for q in ratios)} (best {min(par) / min(seq):.2f})")


if __name__ == "__main__":
    main()
