"""Benchmark: the modes basis at scale in float64 -- RODAS4 (solvers.hierarchy.modes_fast) vs the RK7(8) path.

Targets (erf, order 1):
  (a) K = M = 2, L = N = 1024, β = 1, η = 0.1, σ_J = 0.01, seed 0, α from 0 to 1e4, ≤ 10 s;
  (b) the paper's Figure 6: K = M = 40, L = N = 512, η = 0.01, σ_J = 1e-6, seed 0,
      β ∈ {1, 0.5, 1.5}, α from 0 to 5·10⁴, ≤ 5 minutes.

The naive comparison is the existing RK7(8) float64 modes path of ``integrate_problem``
(solvers.integrators.rk78.integrate on the generated module's ``rhs_modes``, rtol = 1e-12,
atol = rtol/1e8).  For (a) it is run over the whole range, called through the same components
because ``Problem.numeric`` overflows in float64 from L ≈ 256 on (ν_l = Σ λ^l is formed for
l ≤ L).  For (b) printed modules are infeasible (K = M = 40), so the RK7(8) runs on the
index-vectorised kernel in the overlap layout (solvers.core.modes_kernel.rhs, what a printed module
would compute) over short windows started from the fast solver's state; the measured cost per
unit α is extrapolated to the full range (its step is stability-bound, so that cost is nearly
constant in α).

Accuracy: (a) and the small-size table against the RK7(8) reference at rtol 1e-12; (b) against
the same solver at a 100x tighter tolerance.  Wall and CPU times (BLAS limited to one thread,
as in the solver); the load average is printed next to every timing (2-core shared machine).

    .venv/bin/python bench/bench_modes_fast.py [--quick] [--sections a,small,b] [--out FILE]
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from fractions import Fraction

import numpy as np

from machine_info import load_avg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from timing import WallCpu  # noqa: E402
from derive import spectra  # noqa: E402
from derive.hierarchy import SystemKey  # noqa: E402
from solvers.hierarchy import modes_fast as mf  # noqa: E402
from solvers.core import modes_kernel as mk  # noqa: E402
from solvers.integrators.rk78 import integrate  # noqa: E402
from solvers.core.numbers import Float64Context  # noqa: E402
from solvers.hierarchy.odes import integrate_problem  # noqa: E402
from solvers.core.problem import Problem, random_init  # noqa: E402
from solvers.core.registry import load  # noqa: E402

NAIVE_RTOL = 1e-12




class Timer(WallCpu):
    def before(self):
        self.load0 = load_avg()

    def after(self):
        self.load1 = load_avg()

    @property
    def load(self):
        return f"{self.load0.split('/')[0]}→{self.load1.split('/')[0]}"


def fmt(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return f"{x:.{digits}g}"


def rel_diff(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a / b - 1)))


# -- the naive path ---------------------------------------------------------------------------

def rk78_generated(inp: mf.ModesInputs, alphas, rtol=NAIVE_RTOL):
    """integrate_problem(basis="modes", arithmetic="float64") on float inputs: generated
    rhs_modes + RK7(8), atol = rtol/1e8, from the same initial overlaps."""
    mod = load(SystemKey(inp.activation, inp.K, inp.M), "numpy")
    R, Q, T = inp.overlaps()
    y0 = mk.pack(R, Q)
    t = mk.pack_teacher(T)
    e2 = inp.eta ** 2 if inp.order == 2 else 0.0
    shape = y0.shape

    def fun(a, y):
        return mod.rhs_modes(y.reshape(shape), t, inp.lam, inp.w, inp.eta, e2).reshape(-1)

    stats = {}
    ys = integrate(fun, [Fraction(str(a)) for a in alphas], y0.reshape(-1), ctx=Float64Context(),
                   rtol=rtol, atol=Fraction(str(rtol)) / 10 ** 8, stats=stats)
    states = [y.reshape(shape) for y in ys]
    T1 = inp.lam @ t
    eps = np.array([mod.eps_g(inp.lam @ s, T1) for s in states])
    return eps, np.array(states), stats


def rk78_kernel_window(inp: mf.ModesInputs, R0, Q0, a0, da, rtol=NAIVE_RTOL):
    """RK7(8) on the vectorised kernel (overlap layout) over [a0, a0 + da]."""
    R, Q, T = inp.overlaps()
    L, K, M = R.shape
    nR = L * K * M

    def fun(a, y):
        Rr = y[:nR].reshape(L, K, M)
        Qq = y[nR:].reshape(L, K, K)
        dR, dQ = mk.rhs(Rr, Qq, T, inp.lam, inp.w, inp.eta, 0.0, inp.activation)
        return np.concatenate([dR.reshape(-1), dQ.reshape(-1)])

    y0 = np.concatenate([R0.reshape(-1), Q0.reshape(-1)])
    stats = {}
    ys = integrate(fun, [Fraction(str(a0)), Fraction(str(a0 + da))], y0, ctx=Float64Context(),
                   rtol=rtol, atol=Fraction(str(rtol)) / 10 ** 8, stats=stats)
    y = ys[-1]
    return y[:nR].reshape(L, K, M), y[nR:].reshape(L, K, K), stats


# -- sections ---------------------------------------------------------------------------------

def section_a(quick, out):
    L = 128 if quick else 1024
    amax = 1e3 if quick else 1e4
    alphas = [0.0] + list(np.logspace(-1, np.log10(amax), 61))
    out(f"\n## (a) K = M = 2, L = N = {L}, β = 1, η = 0.1, σ_J = 0.01, α ≤ {amax:g} "
        f"({len(alphas)} outputs)\n")
    with Timer() as ti:
        inp = mf.random_inputs(2, 2, L, L=L, beta=1.0, eta=0.1, sigma_J=0.01, seed=0)
    fast = {}
    for rtol in (1e-6, 1e-8, 1e-10):
        with Timer() as tm:
            tr = mf.solve_modes_fast(inp, alphas, rtol=rtol)
        fast[rtol] = (tr, tm)
    with Timer() as tx:
        trx = mf.solve_modes_fast(inp, alphas, rtol=1e-8, method="rk78")
    with Timer() as tn:
        eps_ref, states_ref, st_ref = rk78_generated(inp, alphas)
    out("| method | rtol | wall [s] | CPU [s] | load | steps (rejected) | f evals | "
        "max rel. ε_g diff vs RK7(8) | max state diff / max state |")
    out("|---|---:|---:|---:|---|---:|---:|---:|---:|")
    for rtol, (tr, tm) in fast.items():
        s = tr.stats
        out(f"| RODAS4 modes_fast | {rtol:g} | {fmt(tm.wall)} | {fmt(tm.cpu)} | {tm.load} | "
            f"{s['n_steps']} ({s['n_rejected']}) | {s['n_fevals']} | "
            f"{fmt(rel_diff(tr.eps_g, eps_ref), 2)} | "
            f"{fmt(np.abs(np.array(tr.states) - states_ref).max() / np.abs(states_ref).max(), 2)}"
            " |")
    sx = trx.stats
    out(f"| RK7(8) on the factored RHS (method=\"rk78\") | 1e-08 | {fmt(tx.wall)} | {fmt(tx.cpu)} | "
        f"{tx.load} | {sx['n_steps']} ({sx['n_rejected']}) | {sx['n_fevals']} | "
        f"{fmt(rel_diff(trx.eps_g, eps_ref), 2)} | "
        f"{fmt(np.abs(np.array(trx.states) - states_ref).max() / np.abs(states_ref).max(), 2)}"
        " |")
    out(f"| RK7(8) generated rhs_modes (naive) | {NAIVE_RTOL:g} | {fmt(tn.wall)} | {fmt(tn.cpu)} "
        f"| {tn.load} | {st_ref['n_steps']} ({st_ref['n_rejected']}) | {st_ref['n_fevals']} | "
        f"(reference) | |")
    tr, tm = fast[1e-8]
    out(f"\nInputs (eigenvalues, overlaps, factorisation; no SymPy): {fmt(ti.wall)} s.  "
        f"Speed-up at the default rtol = 1e-8: {fmt(tn.wall / tm.wall)}x wall "
        f"({fmt(tn.cpu / tm.cpu)}x CPU); target (a) ≤ 10 s: "
        f"{'met' if tm.wall <= 10 else 'NOT met'} ({fmt(tm.wall)} s).")
    return dict(fast=fast, naive=tn)


def section_small(quick, out):
    cases = [(2, 2, 16, 64, 1, 300.0)] if quick else [
        (2, 2, 64, 64, 1, 1e4), (2, 2, 64, 64, 2, 1e4), (2, 3, 16, 64, 1, 1e3),
        (3, 3, 16, 64, 1, 1e3), (3, 3, 16, 64, 2, 1e3)]
    out("\n## Small sizes against `integrate_problem(..., basis=\"modes\", arithmetic=\"float64\", "
        "rtol=1e-12)` (η = 0.1, β = 1, σ_J = 0.01, seed 0)\n")
    out("| K | M | L | N | order | α max | RK7(8) wall [s] | RODAS4 wall [s] (rtol 1e-8) | load | "
        "max rel. ε_g diff | max |ΔR1|, |ΔQ1| |")
    out("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for K, M, L, N, order, amax in cases:
        sp_ = spectra.power_law(L, 1)
        prob = Problem(SystemKey("erf", K, M), sp_, Fraction(1, 10), order,
                       random_init(K, M, N, sp_, Fraction(1, 100), 0))
        alphas = [0.0] + list(np.logspace(-1, np.log10(amax), 31))
        load(prob.key, "numpy")                       # generation is not timed
        with Timer() as tn:
            ref = integrate_problem(prob, alphas, basis="modes", arithmetic="float64", rtol=1e-12)
        with Timer() as tm:
            new = mf.solve_modes_fast(prob, alphas, rtol=1e-8)
        d = max(np.abs(new.R1 - ref.R1).max(), np.abs(new.Q1 - ref.Q1).max())
        out(f"| {K} | {M} | {L} | {N} | {order} | {amax:g} | {fmt(tn.wall)} | {fmt(tm.wall)} | "
            f"{tm.load} | {fmt(rel_diff(new.eps_float(), ref.eps_float()), 2)} | {fmt(d, 2)} |")


def section_b(quick, out, betas):
    if quick:
        K = M = 10
        L = N = 128
        amax, windows, da = 2e3, (200.0,), 2.0
    else:
        K = M = 40
        L = N = 512
        amax, windows, da = 5e4, (1000.0, 20000.0), 10.0
    alphas = [0.0] + list(np.logspace(0, np.log10(amax), 61))
    out(f"\n## (b) Figure 6: K = M = {K}, L = N = {L}, η = 0.01, σ_J = 1e-6, seed 0, "
        f"α ≤ {amax:g} ({len(alphas)} outputs)\n")
    out("| β | rtol | wall [s] | CPU [s] | load | steps (rejected) | linear solves | GCR its | "
        "ε_g(α max) | max rel. ε_g diff vs rtol/100 |")
    out("|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    results = {}
    for beta in betas:
        inp = mf.random_inputs(K, M, N, L=L, beta=beta, eta=0.01, sigma_J=1e-6, seed=0)
        runs = {}
        for rtol in ((1e-8, 1e-9, 1e-10) if beta == betas[0] and not quick else (1e-8, 1e-10)):
            with Timer() as tm:
                tr = mf.solve_modes_fast(inp, alphas, rtol=rtol, keep_states=False)
            runs[rtol] = (tr, tm)
        ref = runs[1e-10][0]
        for rtol, (tr, tm) in runs.items():
            s = tr.stats
            agree = "(reference)" if rtol == 1e-10 else fmt(rel_diff(tr.eps_g, ref.eps_g), 2)
            out(f"| {beta:g} | {rtol:g} | {fmt(tm.wall)} | {fmt(tm.cpu)} | {tm.load} | "
                f"{s['n_steps']} ({s['n_rejected']}) | {s['n_solves']} | {s['gcr_iterations']} | "
                f"{tr.eps_g[-1]:.4e} | {agree} |")
        if beta == betas[0]:
            with Timer() as tx:
                trx = mf.solve_modes_fast(inp, alphas, rtol=1e-8, keep_states=False,
                                          method="rk78")
            s = trx.stats
            out(f"| {beta:g} | 1e-08, method=\"rk78\" | {fmt(tx.wall)} | {fmt(tx.cpu)} | {tx.load} "
                f"| {s['n_steps']} ({s['n_rejected']}) | - | - | {trx.eps_g[-1]:.4e} | "
                f"{fmt(rel_diff(trx.eps_g, ref.eps_g), 2)} |")
        results[beta] = (inp, runs)
    out("\nTarget (b) ≤ 300 s at rtol = 1e-8: "
        + ", ".join(f"β = {b:g}: {fmt(r[1][1e-8][1].wall)} s" for b, r in results.items()) + ".")

    # naive: RK7(8) on the kernel (overlap layout) over short windows
    beta = betas[0]
    inp = results[beta][0]
    out(f"\nNaive RK7(8) (rtol {NAIVE_RTOL:g}) on the vectorised kernel, overlap layout, "
        f"β = {beta:g}, "
        f"windows of Δα = {da:g} started from the RODAS4 state:\n")
    out("| window | RK7(8) steps | f evals | wall [s] | load | RK7(8) s per unit α | "
        "RODAS4 s per unit α (same window) | ratio | max rel. diff of Q_k at the window end |")
    out("|---|---:|---:|---:|---|---:|---:|---:|---:|")
    per_unit = []
    start = mf.solve_modes_fast(inp, [0.0, *windows], rtol=1e-8)
    for a0, state in zip(windows, start.states[1:]):
        R0, Q0 = mk.unpack(state, K, M)
        with Timer() as tn:
            R1n, Q1n, st = rk78_kernel_window(inp, R0, Q0, a0, da)
        # the fast solver over the same window, from the same state
        inp_w = mf.inputs_from_overlaps(inp.lam, R0, Q0, inp.overlaps()[2], eta=inp.eta)
        with Timer() as tm:
            fw = mf.solve_modes_fast(inp_w, [a0, a0 + da], rtol=1e-8)
        Rf, Qf = mk.unpack(fw.states[-1], K, M)
        diff = np.abs(Qf - Q1n).max() / np.abs(Q1n).max()
        per_unit.append(tn.wall / da)
        out(f"| [{a0:g}, {a0 + da:g}] | {st['n_steps']} | {st['n_fevals']} | {fmt(tn.wall)} | "
            f"{tn.load} | {fmt(tn.wall / da)} | {fmt(tm.wall / da)} | "
            f"{fmt(tn.wall / tm.wall)} | {fmt(diff, 2)} |")
    est = min(per_unit) * amax
    out(f"\nExtrapolated naive run to α = {amax:g} (the cheaper window's cost per unit α): "
        f"≈ {fmt(est)} s = {fmt(est / 3600)} h, vs {fmt(tm_total(results, beta))} s for RODAS4 at "
        f"rtol 1e-8 over the whole range: ≈ {fmt(est / tm_total(results, beta))}x.")
    return results


def tm_total(results, beta):
    return results[beta][1][1e-8][1].wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="reduced sizes, < 1 minute")
    ap.add_argument("--sections", default="a,small,b", help="comma list of a, small, b")
    ap.add_argument("--betas", default="1,0.5,1.5", help="β values for (b)")
    ap.add_argument("--out", help="also write the Markdown here")
    args = ap.parse_args(argv)
    lines = []

    def out(s=""):
        print(s, flush=True)
        lines.append(s)

    out(f"# bench_modes_fast.py {'(--quick) ' if args.quick else ''}— "
        f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\n")
    out(f"{platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}; load average {load_avg()} at start; BLAS 1 thread.")
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    betas = [float(b) for b in args.betas.split(",")][:1 if args.quick else None]
    started = time.perf_counter()
    if "a" in sections:
        section_a(args.quick, out)
    if "small" in sections:
        section_small(args.quick, out)
    if "b" in sections:
        section_b(args.quick, out, betas)
    out(f"\nTotal {fmt(time.perf_counter() - started)} s; load average {load_avg()} at the end.")
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
