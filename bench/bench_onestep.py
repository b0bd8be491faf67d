"""One step + ridge: a 100-point learning curve of the sRF theory.

    .venv/bin/python bench/bench_onestep.py

Ours: `solvers.theory.onestep.curve` (all α at once; (V1, V2) by a monotone iteration and a
Newton polish, the rest as 2 × 2 linear solves).  Plain: what one writes from the equations —
one α at a time, a damped (0.5) iteration on all seven order parameters (V1, V2, q1, q2, m, t,
ψ, with m from its own equation at fixed t), on the same κ tables and the same spectral rule,
until the largest change is below 1e-12.  Both in the same run; the answers are compared.
Tables (the Gaussian averages, independent of α) are built once and not timed.

Second part: one simulation point of the real protocol at d = p = 2000 (one step on n0 = d/2
samples, ridge on n = αd fresh ones, test error on 2d held-out inputs; tanh/tanh, η = 1,
λ = 0.01), ``simulate.run("protocol", ...)`` against the same computation written plainly
(explicit feature matrices, ``np.linalg.solve`` of the p × p ridge system at every α), on the
same random numbers so that the two test errors must agree.  At α < β ours solves the n × n
system instead; above it both routes are the same p × p solve.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import cpu_name, load_avg  # noqa: E402
from timing import WallCpu  # noqa: E402
from solvers.theory.onestep import Setup, curve  # noqa: E402
from solvers.theory.onestep.spectrum import MPQuadrature  # noqa: E402
from solvers.theory.onestep.simulate import run  # noqa: E402


def plain(tab, a, beta, c, lam, spec, damp=0.5, tol=1e-12, max_iter=100000):
    ap = a / beta
    k, m0, m1, ms2, h, h1, h2 = tab.kappa, tab.mu0, tab.mu1, tab.mus2, tab.h, tab.h1, tab.h2
    E = tab.E
    V1 = V2 = q1 = q2 = m = t = psi = 0.0
    for it in range(max_iter):
        W = 1 / (1 + m1 ** 2 * V1 + ms2 * V2)
        y0 = m0 * m + k * m1 * t
        En = h2 - 2 * h * y0 - 2 * m1 * psi * h1 + y0 ** 2 + m1 ** 2 * q1 + ms2 * q2
        vh1, vh2 = ap * E(m1 ** 2 * W), ap * E(ms2 * W)
        qh1, qh2 = ap * E(m1 ** 2 * En * W * W), ap * E(ms2 * En * W * W)
        th = ap * E(k * m1 * (h - y0) * W)
        ph = ap * E(m1 * h1 * W)
        av = spec.averages(lam + vh2, vh1, c)
        av = {key: float(v) for key, v in av.items()}
        new = {"V1": av["D/S"], "V2": av["1/S"],
               "q1": qh1 * av["D2/S2"] + qh2 * av["D/S2"]
               + beta * (c * th ** 2 * av["D/S2"] + ph ** 2 * av["D2/S2"]),
               "q2": qh1 * av["D/S2"] + qh2 * av["1/S2"]
               + beta * (c * th ** 2 * av["1/S2"] + ph ** 2 * av["D/S2"]),
               "t": beta * c * th * av["1/S"], "psi": beta * ph * av["D/S"],
               "m": E(m0 * (h - k * m1 * t) * W) / E(m0 ** 2 * W)}
        old = {"V1": V1, "V2": V2, "q1": q1, "q2": q2, "t": t, "psi": psi, "m": m}
        change = max(abs(new[x] - old[x]) for x in new)
        V1, V2, q1, q2, t, psi, m = (damp * new[x] + (1 - damp) * old[x]
                                     for x in ("V1", "V2", "q1", "q2", "t", "psi", "m"))
        if change < tol:
            break
    W = 1 / (1 + m1 ** 2 * V1 + ms2 * V2)
    y0 = m0 * m + k * m1 * t
    return E(h2 - 2 * h * y0 - 2 * m1 * psi * h1 + y0 ** 2 + m1 ** 2 * q1 + ms2 * q2), it + 1


def plain_protocol_point(d, alpha, alpha0=0.5, eta=1.0, lam=0.01, seed=0):
    """The real protocol written the obvious way, drawing the same numbers as ``run``."""
    rng = np.random.default_rng([seed, 0])
    p, n0, n, n_test = d, int(round(alpha0 * d)), int(round(alpha * d)), 2 * d
    W0 = rng.standard_normal((p, d))
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    X0 = rng.standard_normal((n0, d))
    y0 = np.tanh(X0[:, 0]) + 0.0 * rng.standard_normal(n0)
    pre = X0 @ W0.T
    f = np.tanh(pre).mean(axis=1)
    W = W0 + eta * ((y0 - f)[:, None] * (1 - np.tanh(pre) ** 2)).T @ X0 / n0
    Xt = rng.standard_normal((n_test, d))
    Ft, yt = np.tanh(Xt @ W.T) / np.sqrt(p), np.tanh(Xt[:, 0])
    X = rng.standard_normal((n, d))
    F, y = np.tanh(X @ W.T) / np.sqrt(p), np.tanh(X[:, 0]) + 0.0 * rng.standard_normal(n)
    w = np.linalg.solve(F.T @ F + lam * np.eye(p), F.T @ y)
    return float(np.mean((yt - Ft @ w) ** 2))


def simulation_point(d=2000, alphas=(0.5, 3.0), reps=2):
    st = Setup("tanh", "tanh", 0.5, 1.0, 1.0, 0.01)
    print(f"simulation point, real protocol, d = p = {d} (load {load_avg()} before)")
    for a in alphas:
        t_ours, t_plain = [], []
        for _ in range(reps):                  # alternate, keep the fastest of each
            with WallCpu() as ours:
                e_ours = run("protocol", d=d, beta=1.0, alpha=[a], student=st.student_act,
                             target=st.target_act, lam=0.01, alpha0=0.5, eta=1.0,
                             seed=0)["eps_g"][0]
            with WallCpu() as pl:
                e_plain = plain_protocol_point(d, a)
            t_ours.append(ours)
            t_plain.append(pl)
        o = min(t_ours, key=lambda t: t.cpu)
        q = min(t_plain, key=lambda t: t.cpu)
        print(f"  alpha = {a}: ours {o.wall:.2f} s wall / {o.cpu:.2f} s CPU, plain "
              f"{q.wall:.2f} s wall / {q.cpu:.2f} s CPU (best of {reps}); ratio plain/ours "
              f"(CPU) {q.cpu / o.cpu:.2f}; eps_g {e_ours:.6f} vs {e_plain:.6f} "
              f"(|diff| {abs(e_ours - e_plain):.1e})")
    print(f"load {load_avg()} after")


def main():
    st = Setup("tanh", "tanh", 0.5, 1.0, 1.0, 0.01)
    al = np.linspace(0.05, 5.0, 100)
    st.tables()
    curve(st, al[:3])                                   # warm-up (imports, caches)
    with WallCpu() as ours:
        res = curve(st, al)
    spec = MPQuadrature(1.0)
    c = st.srf()["c"]
    sub = al[::10]
    with WallCpu() as pl:
        out = [plain(st.tables(), a, 1.0, c, 0.01, spec) for a in sub]
    diff = max(abs(e - r) for (e, _), r in zip(out, res["eps_g"][::10]))
    per_ours = ours.cpu / len(al)
    per_plain = pl.cpu / len(sub)
    print(f"machine: {cpu_name()}, load {load_avg()}")
    print(f"ours: 100 points in {ours.wall:.3f} s wall, {ours.cpu:.3f} s CPU "
          f"({1e3 * per_ours:.2f} ms/point)")
    print(f"plain damped iteration: {len(sub)} points, {pl.cpu:.2f} s CPU "
          f"({1e3 * per_plain:.1f} ms/point; iterations {min(i for _, i in out)}-"
          f"{max(i for _, i in out)})")
    print(f"ratio plain/ours per point: {per_plain / per_ours:.0f}; max |Δε_g| = {diff:.1e}")


if __name__ == "__main__":
    if "--sim-only" not in sys.argv:
        main()
    simulation_point()
