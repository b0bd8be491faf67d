"""channel = "glm": cost of the joint solve, and the k = 20, d = 40 comparison with HMC.

Speed: the Anderson-accelerated block iteration (what ``curve`` runs) against the plain block
iteration a user would write first (q_G ← map(q_G) until it settles), same equations, same
tolerance, measured in the same run; cubic σ, β = 1, Δ = 0.1.

    SCALING_ODES_CACHE=.cache nice .venv/bin/python bench/bench_bayes_glm.py --speed

HMC: posterior sampling of the teacher (solvers/theory/bayes/sampling.py) at k = 20, d = 40,
β = 1, Δ = 0.1, teacher-started, `instances` data sets × 2 chains, 400 + 600 iterations, errors
over data sets; printed against the Gaussian-channel fixed point and the GLM channel.

    SCALING_ODES_CACHE=.cache nice .venv/bin/python bench/bench_bayes_glm.py --hmc 3.775 6.825 \
        --instances 8 --seed 2600 --out hmc_k20.json
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from solvers.theory.bayes import Setup, curve

D, K, DELTA, BETA = 40, 20, 0.1, 1.0


def speed(points=(2.4, 10.0, 100.0), d=200):
    st = Setup(activation="cubic", d=d, gamma=1.0, Delta=DELTA, beta=BETA, channel="glm")
    mp = st.mixed
    print(f"d = k = {d}, β = 1, Δ = 0.1: {mp.G.size} GLM units")
    for s in points:
        t0 = time.process_time()
        acc = mp._iterate(s, np.zeros(mp.G.size), "uninformed")
        t_acc = time.process_time() - t0
        t0 = time.process_time()
        plain = mp._iterate(s, np.zeros(mp.G.size), "uninformed", memory=0, max_iter=20000)
        t_plain = time.process_time() - t0
        dev = float(np.max(np.abs(acc.q - plain.q)))
        print(f"  n/d = {s:6g}: accelerated {acc.iterations:4d} it {t_acc:6.2f} s CPU | plain "
              f"{plain.iterations:5d} it {t_plain:7.2f} s CPU | ratio {t_plain / t_acc:5.1f}× | "
              f"max |Δq| {dev:.1e}")


def theory(s):
    out = {}
    for ch in ("gaussian", "glm"):
        st = Setup(activation="cubic", d=D, gamma=K / D, Delta=DELTA, beta=BETA, channel=ch)
        r = curve(st, n_over_d=[s])
        out[ch] = {"q": r["q"][0][:5], "eps": r["eps_bo"][0]}
    return out


def hmc(points, instances, seed, out):
    from solvers.theory.bayes import sampling as S
    rows = []
    for j, s in enumerate(points):
        t0, c0 = time.perf_counter(), time.process_time()
        m = S.measure(D, K, s, DELTA, BETA, instances=instances, chains=2, warmup=400,
                      samples=600, seed=seed + j, which=("informed",))
        r = m["informed"]
        qm, qse = S.summary(r["q_inst"])
        gm, gse = S.summary(r["gibbs_inst"])
        row = {"d": D, "k": K, "n_over_d": m["n_over_d"], "q": qm[:5].tolist(), "q_se": qse[:5].tolist(),
               "gibbs_half": float(gm), "gibbs_half_se": float(gse),
               "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
               "instances": instances, "seed": seed + j}
        row["theory"] = theory(m["n_over_d"])
        rows.append(row)
        report(row)
        if out:
            with open(out, "w") as f:
                json.dump(rows, f, indent=1)


def report(row):
    s = row["n_over_d"]
    print(f"d = {row.get('d', 40)}, n/d = {s:.4g} (HMC {row['instances']} data sets, {row.get('wall_s', 0):.0f} s wall, "
          f"{row.get('cpu_s', 0):.0f} s CPU)")
    th = row["theory"]
    for i in range(min(len(row["q"]), len(th["glm"]["q"]))):
        print(f"  q{i + 1}: HMC {row['q'][i]:.3f} ± {row['q_se'][i]:.3f} | Gaussian "
              f"{th['gaussian']['q'][i]:.3f} | GLM channel {th['glm']['q'][i]:.3f}")
    print(f"  Gibbs/2: HMC {row['gibbs_half']:.3f} ± {row['gibbs_half_se']:.3f} | Gaussian "
          f"{th['gaussian']['eps']:.3f} | GLM channel {th['glm']['eps']:.3f}")


def main():
    global D, K
    ap = argparse.ArgumentParser()
    ap.add_argument("--speed", action="store_true")
    ap.add_argument("--hmc", type=float, nargs="*")
    ap.add_argument("--instances", type=int, default=8)
    ap.add_argument("--seed", type=int, default=2600)
    ap.add_argument("--out")
    ap.add_argument("--d", type=int, default=D, help="input dimension (k = d/2)")
    ap.add_argument("--report", help="print the comparison for a stored --out file")
    a = ap.parse_args()
    D, K = a.d, a.d // 2
    if a.speed:
        speed()
    if a.hmc:
        hmc(a.hmc, a.instances, a.seed, a.out)
    if a.report:
        for row in json.load(open(a.report)):
            D, K = row.get("d", 40), row.get("d", 40) // 2
            row.setdefault("theory", theory(row["n_over_d"]))
            report(row)


if __name__ == "__main__":
    main()
