"""Benchmark: the peers' integration scheme (forward Euler, dt = 0.01, float64) against a
verified solve, erf K = M = 2 at L = 1.

The peer codes (nn2pp's ``scmpp_ode.cpp``, pyscm's ``scm_ode_erf.pyx``) integrate the
order-parameter ODEs with forward Euler at dt = 0.01 in float64.  Here the same scheme runs on
the independent re-implementation of nn2pp's right-hand side (tests/peers/nn2pp_equations.py,
paper readouts v = √M/K, u = 1/√M, which at L = 1 is the project's model: tests/
test_peer_equations.py checks the two right-hand sides agree to rounding), and its ε_g is
compared with ``solvers.solve`` at ``digits = 12`` (level basis, verified by a second run at
other precision and tolerance) from the same initial condition.  A second Euler run at
dt = 0.005 shows the deviation is the scheme's first-order error (the ratio of the two errors is
≈ 2), not a difference of models.

Initial condition: teacher B_n ~ N(0, 1), student J_i ~ N(0, σ_J² = 0.01) in N = 500 dimensions
(numpy seed 0), Q, R, T their overlaps in float64, passed to the solve exactly (the decimal
expansion of each binary number, [init.levels]).  The curve has three phases: the initial
decay, the symmetric plateau (ε_g ≈ 5e-3) and the escape to perfect learning (exponential
decay of ε_g); the table gives the relative error of ε_g in each.

Timings: the Euler loop here is pure Python (≈ 0.3 ms per right-hand side); the peers' C++ is
much faster per step, so the time ratio says how the verified solve compares with the plainest
integrator a user would write in Python, not with the peers' binaries.

With ``--trained`` the second layer is learned too (η_v = ETA_V, nn2pp's ``--both``): v joins
the state of both (the solve's Taylor route, the Euler loop's fourth block), and the table adds
the deviation of v.

Run:  .venv/bin/python bench/bench_peers.py            (η = 0.1 to α = 5000, η = 0.5 to 1000;
                                                        ~10 min of CPU with the dt = 0.005 runs)
      .venv/bin/python bench/bench_peers.py --quick    (α ≤ 200 and 100, without the escape)
      .venv/bin/python bench/bench_peers.py --trained  (a trained readout)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from decimal import Decimal

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from machine_info import load_avg  # noqa: E402
from peers import nn2pp_equations as nn2pp  # noqa: E402

K, M, N, SIGMA_J, SEED = 2, 2, 500, 0.1, 0
DT = 0.01
ETA_V = 0.3
READOUT_V = [np.sqrt(M) / K] * K
READOUT_A = [1 / np.sqrt(M)] * M


def initial_condition():
    rng = np.random.default_rng(SEED)
    B = rng.standard_normal((M, N))
    J = SIGMA_J * rng.standard_normal((K, N))
    return J @ J.T / N, J @ B.T / N, B @ B.T / N


def grid(alpha_max, n=36):
    """Log-spaced output times, each a whole number of steps of dt = 0.005 (and so of 0.01)."""
    raw = np.geomspace(0.1, alpha_max, n)
    return sorted({round(a / 0.01) * 0.01 for a in raw})


def exact(x: float) -> str:
    return str(Decimal(x))          # the binary value, every digit


def verified(Q, R, T, eta, alphas, trained=False):
    """ε_g of solvers.solve at 12 digits from (Q, R, T), its wall time, meta and v (trained)."""
    import solvers
    mat = lambda X: [[exact(x) for x in row] for row in X]   # noqa: E731
    spec = {"model": {"activation": "erf", "K": K, "M": M},
            "data": {"L": 1, "beta": 1.0, "N": N},
            "training": {"eta": eta, "init": "explicit"},
            "init": {"levels": {"R": [mat(R)], "Q": [mat(Q)], "T": [mat(T), mat(T)]}},
            "solve": {"alphas": [float(a) for a in alphas], "basis": "levels", "digits": 12}}
    if trained:
        spec["model"]["readout"] = "trained"
        spec["training"]["eta_readout"] = ETA_V
    t0 = time.perf_counter()
    r = solvers.solve(spec)
    return np.asarray(r.eps_g, dtype=float), time.perf_counter() - t0, r.meta, r.v


def euler(Q, R, T, eta, alphas, dt, trained=False):
    """ε_g (and v) of the peers' scheme at the output times, and its wall time."""
    steps = {round(a / dt): i for i, a in enumerate(alphas)}
    out = np.empty(len(alphas))
    vs = np.empty((len(alphas), K))
    Q, R = np.array(Q, dtype=object), np.array(R, dtype=object)
    v = np.array(READOUT_V, dtype=object)
    extra = {"lr2": ETA_V, "both": True} if trained else {}
    t0 = time.perf_counter()
    for k in range(max(steps) + 1):
        if k in steps:
            out[steps[k]] = nn2pp.eps_g(Q, R, T, v, READOUT_A)
            vs[steps[k]] = np.asarray(v, dtype=float)
        if k == max(steps):
            break
        dQ, dR, dv = nn2pp.rhs(Q, R, T, v, READOUT_A, lr=eta, **extra)
        Q, R = Q + dt * dQ, R + dt * dR
        if trained:
            v = v + dt * np.asarray(dv, dtype=object)
    return out, time.perf_counter() - t0, vs


def phases(alphas, ref):
    """Index sets of the curve's phases: the plateau level is ε_g where the log-log slope is
    smallest; before it (ε_g > 1.05 × plateau) the initial decay, within 5 % the plateau,
    after it (below 0.95 × plateau) the escape and convergence."""
    la, le = np.log(alphas), np.log(ref)
    slope = np.abs(np.diff(le) / np.diff(la))
    k = int(np.argmin(slope[len(slope) // 4:])) + len(slope) // 4
    level = ref[k]
    out = {"initial decay": [], "plateau": [], "escape and convergence": []}
    for i, e in enumerate(ref):
        if i <= k and e > 1.05 * level:
            out["initial decay"].append(i)
        elif i > k and e < 0.95 * level:
            out["escape and convergence"].append(i)
        else:
            out["plateau"].append(i)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="short runs (no plateau escape)")
    ap.add_argument("--no-halving", action="store_true", help="skip the dt = 0.005 check")
    ap.add_argument("--trained", action="store_true", help=f"trained readout, η_v = {ETA_V}")
    args = ap.parse_args()
    runs = [(0.1, 200.0), (0.5, 100.0)] if args.quick else [(0.1, 5000.0), (0.5, 1000.0)]
    tr = args.trained
    Q, R, T = initial_condition()
    print(f"## Peers' forward Euler (dt = {DT}, float64) vs solve (12 digits), erf K = M = 2, "
          f"L = 1{f', trained readout η_v = {ETA_V}' if tr else ''}\n\n"
          f"load {load_avg()}; σ_J = {SIGMA_J}, N = {N}, seed {SEED}\n")
    for eta, amax in runs:
        alphas = grid(amax)
        ref, t_ref, meta, v_ref = verified(Q, R, T, eta, alphas, tr)
        eul, t_eul, v_eul = euler(Q, R, T, eta, alphas, DT, tr)
        rel = np.abs(eul - ref) / ref
        if tr:
            print(f"max |v_Euler - v_solve| over α: {np.abs(v_eul - v_ref).max():.2e} "
                  f"(v moves from {v_ref[0, 0]:.4f} to {v_ref[-1, 0]:.4f}, "
                  f"{v_ref[-1, 1]:.4f})\n")
        half = None
        if not args.no_halving:
            eul2 = euler(Q, R, T, eta, alphas, DT / 2, tr)[0]
            half = np.abs(eul2 - ref) / ref
        print(f"### η = {eta}, α ≤ {amax:g}: solve {t_ref:.1f} s wall (dps {meta.get('dps')}, "
              f"agreement {meta.get('agreement_digits')} digits), Euler {t_eul:.1f} s wall "
              f"({round(amax / DT)} steps, pure Python)\n")
        print("| α | ε_g (12 digits) | rel. error Euler dt = 0.01 | dt = 0.005 | ratio |")
        print("|---|---|---|---|---|")
        for i, a in enumerate(alphas):
            h = "–" if half is None else f"{half[i]:.2e}"
            ratio = "–" if half is None or half[i] == 0 else f"{rel[i] / half[i]:.2f}"
            print(f"| {a:g} | {ref[i]:.10g} | {rel[i]:.2e} | {h} | {ratio} |")
        print()
        for name, idx in phases(alphas, ref).items():
            if idx:
                print(f"- {name} (α {alphas[idx[0]]:g}–{alphas[idx[-1]]:g}): max relative error "
                      f"{rel[idx].max():.2e}, median {np.median(rel[idx]):.2e}")
        print()
        sys.stdout.flush()


if __name__ == "__main__":
    main()
