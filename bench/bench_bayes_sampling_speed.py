"""Speed of the HMC potential and of whole HMC trajectories: fast against reference, same run.

Three formulations of the same U(W), ∇U(W) at the flat-readout check's sizes (k = d/2,
n = 1.5 d², 2 chains, Δ = 0.5):

- ``reference``: :func:`solvers.theory.bayes.sampling.potential_reference`, the plain numpy einsum version (the one a
  user writes first; the sampler's only implementation before the speed-up);
- ``numpy-gemm``: the same arithmetic with both products as one matmul over all chains and the
  element-wise pass in numpy (what BLAS alone gives, no compiled loop);
- ``fast``: :func:`solvers.theory.bayes.sampling.potential` (the GEMMs plus the fused numba pass).

and whole HMC runs (``hmc(impl=...)``, same seed, a few trajectories after a short warm-up) in
CPU seconds per trajectory.  Both wall and process CPU time are printed: the machine is shared,
and CPU time is the less load-sensitive of the two.

    OPENBLAS_NUM_THREADS=1 nice .venv/bin/python bench/bench_bayes_sampling_speed.py --d 20 40 80
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from solvers.theory.bayes import sampling as S


def _potential_numpy_gemm(W, data):
    c, k, d = W.shape
    X = data.X
    H = (X @ W.reshape(c * k, d).T).reshape(-1, c, k) / math.sqrt(d)       # (n, c, k)
    r = S.sigma(H) @ data.v - data.y[:, None]                               # (n, c)
    U = 0.5 * np.sum(W * W, axis=(1, 2)) + 0.5 * np.sum(r * r, axis=0) / data.Delta
    G = (r[:, :, None] * S.dsigma(H)) * data.v
    grad = W + (G.reshape(-1, c * k).T @ X).reshape(c, k, d) / (math.sqrt(d) * data.Delta)
    return U, grad


def _clock(f, reps, blocks=5):
    """(wall, CPU) seconds per call: the fastest of `blocks` blocks of `reps` calls each (the
    machine is shared; the minimum is the least disturbed block)."""
    f()                                   # compile / warm caches
    best = (math.inf, math.inf)
    for _ in range(blocks):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(reps):
            f()
        t = ((time.perf_counter() - w0) / reps, (time.process_time() - c0) / reps)
        best = min(best, t, key=lambda x: x[1])
    return best


def potential_times(d: int, chains: int = 2, alpha: float = 1.5, seed: int = 0) -> dict:
    """Seconds (wall, CPU) per U + ∇U evaluation for each formulation, and their agreement."""
    k, n = d // 2, int(round(alpha * d * d))
    rng = np.random.default_rng(seed)
    data = S.make_data(d, k, n, 0.5, 0.0, rng)
    W = rng.standard_normal((chains, k, d))
    work = {}
    reps = max(3, int(2e7 / (chains * n * k * d)))
    out = {"d": d, "k": k, "n": n, "chains": chains}
    for name, f in (("reference", lambda: S.potential_reference(W, data)),
                    ("numpy-gemm", lambda: _potential_numpy_gemm(W, data)),
                    ("fast", lambda: S.potential(W, data, work))):
        out[name] = _clock(f, reps)
    U0, g0 = S.potential_reference(W, data)
    U1, g1 = S.potential(W, data)
    out["max_rel_diff"] = float(max(np.max(np.abs(U1 - U0) / np.abs(U0)),
                                    np.max(np.abs(g1 - g0)) / np.max(np.abs(g0))))
    return out


def trajectory_times(d: int, trajectories: int, chains: int = 2, alpha: float = 1.5,
                     seed: int = 0) -> dict:
    """CPU and wall seconds per HMC trajectory (warm-up 5, then `trajectories` kept), both impls,
    same seed; leapfrog = 20 (lengths drawn in 10..20) as in the flat-readout check."""
    k, n = d // 2, int(round(alpha * d * d))
    out = {"d": d, "k": k, "n": n, "chains": chains, "trajectories": trajectories}
    for impl in ("reference", "fast"):
        rng = np.random.default_rng(seed)
        data = S.make_data(d, k, n, 0.5, 0.0, rng)
        W0 = S.starts(data, chains, True, rng)
        S.hmc(data, W0, warmup=1, samples=1, leapfrog=2, rng=np.random.default_rng(1), impl=impl)
        w0, c0 = time.perf_counter(), time.process_time()
        S.hmc(data, W0, warmup=5, samples=trajectories, leapfrog=20, rng=rng, impl=impl)
        m = 5 + trajectories
        out[impl] = ((time.perf_counter() - w0) / m, (time.process_time() - c0) / m)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[20, 40, 80])
    ap.add_argument("--trajectories", type=int, default=20)
    a = ap.parse_args(argv)
    print("U + ∇U per evaluation, 2 chains, k = d/2, n = 1.5 d²: ms wall / ms CPU, ratio = "
          "reference CPU / CPU")
    for d in a.d:
        r = potential_times(d)
        ref = r["reference"][1]
        cells = "  ".join(f"{nm} {r[nm][0] * 1e3:.2f}/{r[nm][1] * 1e3:.2f} ({ref / r[nm][1]:.1f}x)"
                          for nm in ("reference", "numpy-gemm", "fast"))
        print(f"d={d:3d} n={r['n']:6d}: {cells}  max rel diff {r['max_rel_diff']:.1e}", flush=True)
    print("HMC trajectory (≤ 20 leapfrog steps), 2 chains: s wall / s CPU per trajectory")
    for d in a.d:
        t = trajectory_times(d, a.trajectories)
        print(f"d={d:3d}: reference {t['reference'][0]:.4f}/{t['reference'][1]:.4f}  fast "
              f"{t['fast'][0]:.4f}/{t['fast'][1]:.4f}  ratio (CPU) "
              f"{t['reference'][1] / t['fast'][1]:.1f}x", flush=True)


if __name__ == "__main__":
    main()
