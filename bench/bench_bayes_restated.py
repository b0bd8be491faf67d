"""HMC against the Bayes-optimal fixed point where the theory claims to hold: flat readouts.

v_i² = 1/k (k = γd), n = αd², σ = He₃/√6, around the collective transition
α_c = λ_σ γ (Δ + g(1)) (every unit has the same readout, so all of them jump together).  The
fixed point is exactly d-independent in α here, so any d-dependence of the sampled numbers is the
finite-size trend.  Per (d, α, start): the overlap with the teacher (informed starts: unit i vs
teacher i; random starts: after Hungarian matching, since flat readouts make the units
exchangeable), the chain–chain overlap (Nishimori check, informed starts) and Gibbs error / 2,
each as mean ± standard error over independent data sets.

    SCALING_ODES_CACHE=.cache nice .venv/bin/python bench/bench_bayes_restated.py \
        --d 20 --alpha 0.7 1.0 1.5 --instances 3 --out restated_d20.json

Cost is measured and printed per run (one HMC run: `chains` chains, warmup + samples
trajectories of ≤ `leapfrog` gradient evaluations, each O(chains·n·k·d)).
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from solvers.theory.bayes import Setup, curve
from solvers.theory.bayes import sampling as S

from hmc_runs import add_run_options, keep


def fixed_point(d: int, gamma: float, Delta: float, alpha: float) -> dict:
    k = int(round(gamma * d))
    st = Setup(activation="cubic", d=d, readouts=[1.0] * k, Delta=Delta, beta=None)
    res = curve(st, alpha=[alpha], selection="potential")
    inf = curve(st, alpha=[alpha], selection="informed")
    uni = curve(st, alpha=[alpha], selection="uninformed")
    return {"q_bo": res["q"][0][0], "eps_bo": res["eps_bo"][0],
            "q_informed": inf["q"][0][0], "eps_informed": inf["eps_bo"][0],
            "q_uninformed": uni["q"][0][0], "eps_uninformed": uni["eps_bo"][0],
            "n_stable": len(res["fixed_points"][0])}


def run(d, gamma, Delta, alpha, instances, chains, warmup, samples, leapfrog, seed,
        which=("informed", "uninformed")):
    k = int(round(gamma * d))
    n_over_d = alpha * d
    t0 = time.perf_counter()
    m = S.measure(d, k, n_over_d, Delta, 0.0, instances=instances, chains=chains,
                  warmup=warmup, samples=samples, leapfrog=leapfrog, seed=seed, which=which)
    wall = time.perf_counter() - t0
    row = {"d": d, "k": k, "n": m["n"], "alpha": m["n"] / d ** 2, "Delta": Delta,
           "gamma": gamma, "wall_s": wall, "instances": instances, "chains": chains,
           "warmup": warmup, "samples": samples, "leapfrog": leapfrog}
    row["fixed_point"] = fixed_point(d, gamma, Delta, m["n"] / d ** 2)
    for key in which:
        r = m[key]
        qinst = r["q_inst"].mean(axis=1)                       # average over the (equal) units
        qm = r["q_matched"].reshape(instances, chains, k).mean(axis=(1, 2))
        pinst = r["pair_inst"].mean(axis=1)
        out = {}
        for name, x in (("q", qinst), ("q_matched", qm), ("pair", pinst),
                        ("gibbs_half", r["gibbs_inst"])):
            mu, se = S.summary(x) if len(x) > 1 else (x.mean(), float("nan"))
            out[name] = [float(mu), float(se)]
        out["accept"] = r["accept"]
        row[key] = out
    return row


def fmt(row):
    fp = row["fixed_point"]
    lines = [f"d={row['d']} k={row['k']} n={row['n']} α={row['alpha']:.3f} Δ={row['Delta']} "
             f"wall {row['wall_s']:.0f}s  fixed point: q_BO {fp['q_bo']:.3f} ε_BO "
             f"{fp['eps_bo']:.3f} (informed branch q {fp['q_informed']:.3f} ε "
             f"{fp['eps_informed']:.3f}; {fp['n_stable']} stable)"]
    for key in ("informed", "uninformed"):
        if key not in row:
            continue
        r = row[key]
        lines.append(f"   {key:10s} q {r['q'][0]:.3f}±{r['q'][1]:.3f} matched "
                     f"{r['q_matched'][0]:.3f}±{r['q_matched'][1]:.3f} pair "
                     f"{r['pair'][0]:.3f}±{r['pair'][1]:.3f} Gibbs/2 "
                     f"{r['gibbs_half'][0]:.3f}±{r['gibbs_half'][1]:.3f} acc {r['accept']:.2f}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    add_run_options(ap, d=[20], instances=3)
    ap.add_argument("--alpha", type=float, nargs="+", default=[0.7, 1.0, 1.5])
    ap.add_argument("--gamma", type=float, default=0.5)
    ap.add_argument("--Delta", type=float, default=0.5)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--leapfrog", type=int, default=20)
    ap.add_argument("--which", nargs="+", default=["informed", "uninformed"],
                    choices=["informed", "uninformed"])
    a = ap.parse_args()
    lam = 1.4557767406190114587
    print(f"α_c = λ_σ γ (Δ + g(1)) = {lam * a.gamma * (a.Delta + 1):.4f}")
    rows = []
    for d in a.d:
        for j, al in enumerate(a.alpha):
            row = run(d, a.gamma, a.Delta, al, a.instances, a.chains, a.warmup, a.samples,
                      a.leapfrog, a.seed + 1000 * d + j, tuple(a.which))
            keep(rows, row, fmt(row), a.out)


if __name__ == "__main__":
    main()
