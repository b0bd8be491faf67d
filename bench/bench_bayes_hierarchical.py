"""HMC against the fixed point feature by feature, for a hierarchical readout profile near k_c.

v_i² ∝ i^(−2β) with β < 1/2 (β = 0.25 by default: every readout is O(k^(−1/2)), the regime where
the Gaussian output channel is meant to hold, approached as d grows), k = γd, n = αd², cubic σ,
at α where the fixed point has learned the first k_c features and not the rest.  Per feature i
(unit i against teacher unit i: distinct readouts break the exchangeability, up to neighbours
whose readouts differ by a few per cent, so the Hungarian-matched overlap is reported too):
sampled q_i (informed and random starts), the chain–chain overlap of the informed chains
(Nishimori), and the fixed point's q_i; error bars are standard errors over independent data
sets (teacher, X, noise), as in :func:`solvers.theory.bayes.sampling.measure`.

    OPENBLAS_NUM_THREADS=1 nice .venv/bin/python bench/bench_bayes_hierarchical.py \
        --d 40 --alpha 1.0 --instances 4 --out hier_d40.json
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from solvers.theory.bayes import Setup, curve
from solvers.theory.bayes import sampling as S

from hmc_runs import add_run_options, keep


def run(d: int, alpha: float, beta: float = 0.25, gamma: float = 0.5, Delta: float = 0.5,
        instances: int = 4, chains: int = 2, warmup: int = 400, samples: int = 400,
        seed: int = 0) -> dict:
    """Sampled and fixed-point overlaps per feature; lists are per feature i = 1..k."""
    k = int(round(gamma * d))
    t0 = time.perf_counter()
    m = S.measure(d, k, alpha * d, Delta, beta, instances=instances, chains=chains,
                  warmup=warmup, samples=samples, leapfrog=20, seed=seed)
    wall = time.perf_counter() - t0
    st = Setup(activation="cubic", d=d, gamma=gamma, Delta=Delta, beta=beta)
    a = m["n"] / d ** 2
    fp = {sel: curve(st, alpha=[a], selection=sel) for sel in ("potential", "informed",
                                                                 "uninformed")}
    v2 = S.readouts(k, beta) ** 2
    eps = fp["potential"]["eps_bo"][0]
    out = {"d": d, "k": k, "n": m["n"], "alpha": a, "beta": beta, "Delta": Delta,
           "instances": instances, "chains": chains, "warmup": warmup, "samples": samples,
           "seed": seed, "wall_s": wall,
           "fixed_point": {sel: {"q": list(map(float, r["q"][0])), "eps": float(r["eps_bo"][0]),
                                 "kc": int(r["kc"][0])} for sel, r in fp.items()},
           "r": list(map(float, v2 / (Delta + eps)))}
    for key in ("informed", "uninformed"):
        r = m[key]
        qm = r["q_matched"].reshape(instances, chains, k).mean(axis=1)
        row = {}
        for name, x in (("q", r["q_inst"]), ("q_matched", qm), ("pair", r["pair_inst"])):
            mu, se = S.summary(x)
            row[name] = [list(map(float, mu)), list(map(float, se))]
        row["gibbs_half"] = list(map(float, S.summary(r["gibbs_inst"])))
        row["accept"] = r["accept"]
        out[key] = row
    return out


def fmt(row: dict, width: int = 4) -> str:
    fp = row["fixed_point"]["potential"]
    kc = fp["kc"]
    lines = [f"d={row['d']} k={row['k']} n={row['n']} α={row['alpha']:.3f} β={row['beta']} "
             f"Δ={row['Delta']} wall {row['wall_s']:.0f}s: fixed point ε {fp['eps']:.3f} "
             f"k_c {kc}; Gibbs/2 informed {row['informed']['gibbs_half'][0]:.3f}±"
             f"{row['informed']['gibbs_half'][1]:.3f} random {row['uninformed']['gibbs_half'][0]:.3f}"
             f"±{row['uninformed']['gibbs_half'][1]:.3f}"]
    lines.append("   i    r_i  q_FP   q informed     pair (Nish.)   q random     q random matched")
    for i in range(max(0, kc - width), min(row["k"], kc + width)):
        inf, un = row["informed"], row["uninformed"]
        lines.append(f"  {i + 1:3d} {row['r'][i]:.3f} {fp['q'][i]:.3f}  "
                     f"{inf['q'][0][i]:.3f}±{inf['q'][1][i]:.3f}  "
                     f"{inf['pair'][0][i]:.3f}±{inf['pair'][1][i]:.3f}  "
                     f"{un['q'][0][i]:.3f}±{un['q'][1][i]:.3f}  "
                     f"{un['q_matched'][0][i]:.3f}±{un['q_matched'][1][i]:.3f}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(ap, d=[40], instances=4)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--beta", type=float, default=0.25)
    a = ap.parse_args(argv)
    rows = []
    for d in a.d:
        row = run(d, a.alpha, a.beta, instances=a.instances, warmup=a.warmup, samples=a.samples,
                  seed=a.seed + 1000 * d)
        keep(rows, row, fmt(row), a.out)


if __name__ == "__main__":
    main()
