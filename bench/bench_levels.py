"""Level (Cayley-Hamilton) basis: the project's integrator against its competitors, same run.

    .venv/bin/python bench/bench_levels.py [--quick] [--L 64 128]

System: erf K = M = 2, order 1 (e2 = 0), power-law spectrum (β = 1) with L distinct eigenvalues,
η = 1/10, the finite-N initial condition (N = 1024, σ_J = 1/100, seed 0), α ∈ [0, 3500].
Target: ε_g correct to 1e-8 relative.  Every method works on the same closed level system (the
generated ``rhs_levels`` or, for heyoka, expressions built from the same generated functions) at
the same working precision dps = estimated_dps(L, 8, "levels").

Reference: the modes basis (no closure, well conditioned) with the project's RK7(8) in float64
at rtol 1e-13; a second run at rtol 1e-14 bounds the reference's own error (printed).

Methods, per L:
1. ours: ``integrate_problem(basis="levels", arithmetic="flint", rtol=1e-11)`` on the full range
   and on the short range used for the slow competitors;
2. heyoka ``taylor_adaptive`` (fp_type=real, compact mode) on the same system, numbers given at
   full precision; expression building, compilation and integration timed separately;
3. naive fixed-step RK4 on ``rhs_levels``: the step count is searched (doubling) with flint
   arithmetic until the short range is right to 1e-8, then timed in mpmath (and flint);
4. ``mpmath.odefun`` on ``rhs_levels``: one Taylor step (cost and length), projected;
5. float64 in the level basis: SciPy DOP853 and the project's RK7(8) (where they break).
Slow competitors run on a short range only; their full-range times are PROJECTIONS (time per
unit α × 3500), marked as such.  Every timing carries the 1-min load average taken just before
it and the process CPU time (every method here ran on one thread: CPU time <= wall time; on a
loaded machine the CPU time is the steadier number).
Progress goes to stderr, the Markdown report to stdout.
"""
from __future__ import annotations

import argparse
import copy
import math
import os
import platform
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import WallCpu  # noqa: E402

import mpmath  # noqa: E402
import numpy as np  # noqa: E402

from machine_info import cpu_name, load_avg  # noqa: E402

from derive import spectra  # noqa: E402
from derive.hierarchy import SystemKey  # noqa: E402
from solvers.integrators.rk78 import fixed_step_rk4  # noqa: E402
from solvers.core.numbers import FlintContext, MpmathContext, to_mpf  # noqa: E402
from solvers.hierarchy.odes import PrecisionLost, estimated_dps, integrate_problem  # noqa: E402
from solvers.core.problem import Problem, random_init  # noqa: E402
from solvers.core.registry import load  # noqa: E402

try:
    import heyoka as hy
except ImportError:          # optional competitor: the [bench] extra installs it
    hy = None

KEY = SystemKey("erf", 2, 2)
TARGET = 1e-8                # required relative accuracy of ε_g
OURS_RTOL = 1e-11
ODEFUN_TOL = 1e-10          # absolute (odefun has no relative tolerance; see odefun_step)
T_START = time.perf_counter()


def log(msg):
    print(f"[{time.perf_counter() - T_START:7.1f} s] {msg}", file=sys.stderr, flush=True)


def load1():
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


class Timing(WallCpu):
    """Wall and process CPU time of one block, with the load average just before it."""

    def before(self):
        self.load = load1()


def best_of(fn, repeats, budget):
    """Min wall time over up to ``repeats`` runs (no new run once ``budget`` s are spent).

    Returns (best Timing, number of runs, result of the last run).  Other jobs on a shared
    machine only ever slow a run down, so the minimum is the estimate of the undisturbed cost.
    """
    runs, result = [], None
    while len(runs) < repeats and (not runs or sum(r.wall for r in runs) + min(r.wall for r in runs) <= budget):
        with Timing() as tm:
            result = fn()
        runs.append(tm)
    return min(runs, key=lambda r: r.wall), len(runs), result


def make_problem(L):
    s = spectra.power_law(L, 1)
    return Problem(KEY, s, Fraction(1, 10), 1, random_init(2, 2, 1024, s, Fraction(1, 100), 0))


def rel_errs(eps, ref):
    """|eps_i - ref_i| / |ref_i| as floats (inf where eps is not a finite number)."""
    out = []
    with mpmath.workdps(30):
        for a, b in zip(eps, ref):
            try:
                a = to_mpf(a)
                out.append(float(abs(a - to_mpf(b)) / abs(to_mpf(b))) if mpmath.isfinite(a) else math.inf)
            except (TypeError, ValueError, OverflowError):
                out.append(math.inf)
    return out


def fmt_e(e):
    if e is None:
        return "-"
    return "0" if e == 0 else ("inf/NaN" if not math.isfinite(e) else f"{e:.1e}")


def fmt_s(t):
    return "-" if t is None else f"{t:.3g}"


def log_grid(a_max, n):
    """0 and n log-spaced points in [1, a_max], rounded to 3 significant digits (exact decimals)."""
    pts = [float(f"{a:.3g}") for a in np.geomspace(1.0, a_max, n)]
    pts[-1] = float(a_max)
    return [0.0] + sorted(set(pts))


def machine():
    import flint
    import scipy
    cpu = cpu_name()
    hv = hy.__version__ if hy is not None else "not installed"
    return (f"Machine: {platform.platform()}, {cpu}, os.cpu_count() = {os.cpu_count()}; "
            f"Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
            f"mpmath {mpmath.__version__} (backend {mpmath.libmp.BACKEND}), "
            f"python-flint {flint.__version__}, heyoka {hv}; "
            f"load average (1/5/15 min) at start {load_avg()}")


# -- the reference -------------------------------------------------------------------------------

def reference(prob, alphas):
    """ε_g in the modes basis, float64 RK7(8) at rtol 1e-13, and the gap to a rtol 1e-14 run."""
    r13 = integrate_problem(prob, alphas, basis="modes", arithmetic="float64", rtol=1e-13)
    r14 = integrate_problem(prob, alphas, basis="modes", arithmetic="float64", rtol=1e-14)
    gap = max(rel_errs(r13.eps_g, r14.eps_g))
    return dict(zip(alphas, r14.eps_g)), gap


# -- heyoka ----------------------------------------------------------------------------------------

def _hy_real(x, prec):
    """mpf -> heyoka real at ``prec`` bits, exactly (mantissa and binary exponent)."""
    sign, man, exp, _ = mpmath.mpf(x)._mpf_
    r = hy.real((-1) ** sign * int(man), prec)
    # multiplying by a power of two is exact in binary floating point at any precision
    r = r * hy.real(2) ** exp if exp >= 0 else r / hy.real(2) ** (-exp)
    return hy.real(r, prec)


class _HeyokaContext:
    """Number context that makes the generated functions return heyoka expressions.

    The generated ``coefficients`` with the assembly's ``combine`` only use +, -, *, /, **, ctx.pi, ctx.sqrt,
    ctx.asin and ctx.convert, so handing them heyoka variables yields the same closed system
    the other methods evaluate numerically.  pi stays the symbolic constant (heyoka evaluates
    it at the integrator's precision); exact rationals become reals at full precision.
    """

    sqrt = staticmethod(lambda x: hy.sqrt(x))
    asin = staticmethod(lambda x: hy.asin(x))

    def __init__(self, prec, dps):
        self.prec, self.dps = prec, dps
        self.pi = hy.pi

    def convert(self, x):
        with mpmath.workdps(self.dps + 20):
            v = mpmath.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else mpmath.mpf(x)
            return hy.expression(_hy_real(v, self.prec))


def heyoka_system(prob, dps):
    """(equations, initial state, prec bits, numeric problem at dps + 10) for the level system."""
    prec = int(math.ceil(dps * math.log2(10)))
    mod = load(prob.key, "mpmath")
    L, n = prob.L, mod.N_STATE
    with MpmathContext(dps + 10) as mctx:
        num = prob.numeric(mctx)

        def E(v):
            return hy.expression(_hy_real(v, prec))
        c = [E(v) for v in num.c]
        nu = np.array([E(v) for v in num.nu], dtype=object)
        T = np.array([[E(v) for v in row] for row in num.T_levels], dtype=object)
        eta = E(num.eta)
        y0 = [_hy_real(v, prec) for v in num.y_levels.reshape(-1)]
    Y = np.array([[hy.make_vars(f"y_{l}_{k}") for k in range(n)] for l in range(L)], dtype=object)
    # Cayley-Hamilton closure X^(L) = -sum_j c_j X^(j), as in System.closure; hy.sum keeps
    # the 64-term sum one flat node instead of a 64-deep chain of binary additions.
    top = np.array([-hy.sum([c[j] * Y[j, k] for j in range(L)]) for k in range(n)], dtype=object)
    nx = np.concatenate([Y[1:], top[None, :]], axis=0)
    co = mod.coefficients(nx[0], T[0], eta, _HeyokaContext(prec, dps))
    nxt = np.concatenate([nx, T], axis=1)
    e2 = 0 if prob.order == 1 else eta * eta   # order 1: heyoka folds 0 * f away
    out = mod.combine(co, nxt, nu, e2, np.empty((L, n), dtype=object))
    eqs = [(Y[l, k], out[l, k]) for l in range(L) for k in range(n)]
    return eqs, y0, prec, num


def heyoka_eps(rows, prob, num, dps):
    """ε_g from heyoka's level states, through the generated closure and eps_g in mpmath."""
    mod = load(prob.key, "mpmath")
    L, n = prob.L, mod.N_STATE
    eps = []
    with MpmathContext(dps + 10) as mctx:
        for row in rows:
            y = np.array([mpmath.mpf(str(v)) for v in row], dtype=object).reshape(L, n)
            eps.append(mod.eps_g(mod.closure(y, num.c)[0], num.T_levels[0], mctx))
    return eps


def run_heyoka(prob, alphas, dps, tol, repeats, budget):
    with Timing() as t_build:
        eqs, y0, prec, num = heyoka_system(prob, dps)
    with Timing() as t_compile:
        ta = hy.taylor_adaptive(eqs, y0, fp_type=hy.real, prec=prec,
                                tol=hy.real(tol, prec), compact_mode=True)
    with mpmath.workdps(dps + 20):
        grid = [_hy_real(mpmath.mpf(Fraction(str(a)).numerator) / Fraction(str(a)).denominator, prec)
                for a in alphas]

    def integrate():
        t = copy.deepcopy(ta)          # fresh state at α = 0 for every repeat (copy not timed below)
        with Timing() as tm:
            res = t.propagate_grid(grid)
        return tm, res
    runs = []
    res = None
    while len(runs) < repeats and (not runs or sum(r.wall for r in runs) + min(r.wall for r in runs) <= budget):
        tm, res = integrate()
        runs.append(tm)
    outcome, _, _, nsteps, _, states = res
    if len(states) != len(alphas):
        raise RuntimeError(f"heyoka stopped early: {outcome}")
    eps = heyoka_eps(states, prob, num, dps)
    return dict(build=t_build, compile=t_compile, integrate=min(runs, key=lambda r: r.wall),
                runs=len(runs), eps=eps, nsteps=int(nsteps), order=ta.order, prec=prec,
                n_eq=len(eqs), decomposition=len(ta.decomposition), outcome=str(outcome))


# -- naive fixed-step RK4 and mpmath.odefun on the generated rhs_levels --------------------------

def _level_fun(prob, ctx):
    mod = load(prob.key, "mpmath")
    num = prob.numeric(ctx)
    shape = num.y_levels.shape
    args = (num.T_levels, num.c, num.nu, num.eta, num.e2, ctx)

    def fun(t, y):
        return mod.rhs_levels(y.reshape(shape), *args).reshape(-1)

    def eps(y):
        return to_mpf(mod.eps_g(mod.closure(y.reshape(shape), num.c)[0], num.T_levels[0], ctx))
    return fun, eps, num


def rk4(prob, alphas, dps, n_per_interval, arithmetic):
    ctx = (MpmathContext if arithmetic == "mpmath" else FlintContext)(dps)
    with ctx:
        fun, eps, num = _level_fun(prob, ctx)
        states = fixed_step_rk4(fun, [Fraction(str(a)) for a in alphas], num.y_levels.reshape(-1).copy(),
                                ctx=ctx, n_steps_per_interval=n_per_interval)
        return [eps(s) for s in states]


def _free_var(fn, name):
    """Value of the closure variable ``name`` of the function ``fn``."""
    return fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents


def odefun_step(prob, dps, degree, tol):
    """One Taylor step of mpmath.odefun on rhs_levels: its wall time, its length, ε_g at its end.

    odefun computes the first Taylor series when it is constructed; the series' radius of
    validity is read back from odefun's own list of series boundaries (closure variable).
    tol is absolute: odefun also uses it as the finite-difference step (h = 2^-(log2(1/tol)+10)),
    so it must stay small; a tol scaled to the level magnitudes (~λ_+^L) breaks it.
    """
    with MpmathContext(dps) as ctx:
        fun, eps, num = _level_fun(prob, ctx)
        y0 = num.y_levels.reshape(-1)
        n_calls = [0]

        def F(x, y):
            n_calls[0] += 1
            return list(fun(x, np.array(y, dtype=object)))
        with Timing() as tm:
            sol = mpmath.odefun(F, 0, list(y0), tol=tol, degree=degree)
        bounds = _free_var(_free_var(sol, "get_series"), "series_boundaries")
        radius = bounds[1] - bounds[0]
        # just inside the step (at its end odefun would compute the next series)
        a = radius * (1 - mpmath.mpf(10) ** -6)
        e = eps(np.array(sol(a), dtype=object))
    return dict(timing=tm, radius=float(radius), alpha=float(a), eps=e, calls=n_calls[0])


def odefun_eval_cost(prob, dps, degree):
    """Seconds for one rhs_levels call at the precision odefun's Taylor step works at."""
    with MpmathContext(dps) as ctx:
        fun, _, num = _level_fun(prob, ctx)
        y0 = num.y_levels.reshape(-1)
        with mpmath.workprec(mpmath.mp.prec * (1 + degree)):
            t0 = time.perf_counter()
            fun(0, y0)
            return time.perf_counter() - t0


# -- float64 in the level basis ------------------------------------------------------------------

def scipy_levels(prob, alphas, rtol=1e-13):
    """SciPy DOP853 on the numpy rhs_levels; returns (wall, eps at the α reached, message)."""
    from scipy.integrate import solve_ivp
    from solvers.core.numbers import Float64Context
    ctx = Float64Context()
    mod = load(prob.key, "numpy")
    with Timing() as tm:
        num = prob.numeric(ctx)
        shape = num.y_levels.shape
        args = (num.T_levels, num.c, num.nu, float(num.eta), float(num.e2))

        def fun(t, y):
            with np.errstate(all="ignore"):
                return mod.rhs_levels(y.reshape(shape), *args).reshape(-1)
        # atol as integrate_problem sets it (rtol * 1e-8)
        sol = solve_ivp(fun, (alphas[0], alphas[-1]), num.y_levels.reshape(-1), method="DOP853",
                        t_eval=alphas, rtol=rtol, atol=rtol * 1e-8)
        eps = []
        with np.errstate(all="ignore"):
            for i in range(sol.y.shape[1]):
                y = sol.y[:, i].reshape(shape)
                eps.append(float(mod.eps_g(mod.closure(y, num.c)[0], num.T_levels[0], ctx)))
    return tm, eps, sol.message, sol.nfev


def float64_rk78(prob, alphas, rtol=1e-13):
    with Timing() as tm:
        try:
            tr = integrate_problem(prob, alphas, basis="levels", arithmetic="float64", rtol=rtol)
            return tm, [float(e) for e in tr.eps_g], "returned", tr.stats.get("n_fevals")
        except (PrecisionLost, RuntimeError) as exc:
            return tm, [], f"raised {type(exc).__name__}: {str(exc)[:110]}", None


def breakdown(alphas, errs):
    """First α where the error exceeds TARGET (or None) and the error there."""
    for a, e in zip(alphas, errs):
        if not (e <= TARGET):
            return a, e
    return None, None


# -- one L -----------------------------------------------------------------------------------------

def bench_L(L, cfg):
    prob = make_problem(L)
    dps = estimated_dps(L, 8, "levels")
    grid, short = cfg["grid"], cfg["short"]
    alpha_max, s_max = grid[-1], short[-1]
    log(f"L = {L}: dps = {dps}, reference")
    ref, ref_gap = reference(prob, sorted(set(grid) | set(short)))
    ref_g, ref_s = [ref[a] for a in grid], [ref[a] for a in short]
    rows, notes = [], []

    def row(method, rng, tm, runs, work, err, ratio, note=""):
        rows.append((method, rng, tm, runs, work, err, ratio, note))

    # 1. ours, full range and short range
    log("ours, full range")
    t_ours, n_ours, tr = best_of(lambda: integrate_problem(prob, grid, basis="levels", arithmetic="flint",
                                                           dps=dps, rtol=OURS_RTOL),
                                 cfg["repeats"], cfg["repeat_budget"])
    err_ours = rel_errs(tr.eps_g, ref_g)
    row("ours: RK7(8), flint arb", f"[0, {alpha_max:g}]", t_ours, n_ours,
        f"{tr.stats.get('n_fevals')} fevals", max(err_ours), 1.0, f"rtol {OURS_RTOL:g}")
    log(f"ours: {t_ours.wall:.1f} s, err {max(err_ours):.1e}")
    log("ours, short range")
    t_ours_s, n_ours_s, trs = best_of(lambda: integrate_problem(prob, short, basis="levels", arithmetic="flint",
                                                                dps=dps, rtol=OURS_RTOL),
                                      cfg["repeats"], cfg["repeat_budget"])
    err_ours_s = max(rel_errs(trs.eps_g, ref_s))
    ours_per_alpha = t_ours_s.wall / s_max
    row("ours: RK7(8), flint arb", f"[0, {s_max:g}]", t_ours_s, n_ours_s,
        f"{trs.stats.get('n_fevals')} fevals", err_ours_s, 1.0, "base of the short-range ratios")

    # 2. heyoka
    hy_res = []
    if hy is None:
        notes.append("heyoka: not installed (`pip install heyoka`, the [bench] extra); skipped.")
    else:
        for tol in cfg["heyoka_tols"]:
            log(f"heyoka, tol {tol:g}")
            try:
                h = run_heyoka(prob, grid, dps, tol, cfg["repeats"], cfg["repeat_budget"])
            except Exception as exc:  # report, do not abort the other measurements
                notes.append(f"heyoka tol {tol:g}: failed: {type(exc).__name__}: {exc}")
                continue
            h["tol"], h["errs"] = tol, rel_errs(h["eps"], ref_g)
            hy_res.append(h)
            total = h["build"].wall + h["compile"].wall + h["integrate"].wall
            info = (f"order {h['order']}, {h['prec']} bits, {h['n_eq']} eqs, "
                    f"decomposition {h['decomposition']}")
            row(f"heyoka tol {tol:g}: build expressions", "-", h["build"], 1, "-", None, None, "")
            row(f"heyoka tol {tol:g}: compile (compact mode)", "-", h["compile"], 1, "-", None, None, info)
            row(f"heyoka tol {tol:g}: integrate", f"[0, {alpha_max:g}]", h["integrate"], h["runs"],
                f"{h['nsteps']} steps", max(h["errs"]), h["integrate"].wall / t_ours.wall, "")
            rows.append((f"heyoka tol {tol:g}: total", f"[0, {alpha_max:g}]", total, "", "-",
                         max(h["errs"]), total / t_ours.wall, "build + compile + integrate"))
            log(f"heyoka: compile {h['compile'].wall:.1f} s, integrate {h['integrate'].wall:.1f} s, "
                f"err {max(h['errs']):.1e}")

    # 3. naive RK4: step search in flint, timing in mpmath (and flint)
    log("RK4: step-count search (flint)")
    n_steps, search = cfg["rk4_n0"], []
    while True:
        with Timing() as tm:
            e = max(rel_errs(rk4(prob, short, dps, n_steps, "flint"), ref_s))
        search.append((n_steps, e, tm.wall))
        log(f"  RK4 flint n = {n_steps}/interval: err {e:.1e}, {tm.wall:.1f} s")
        if e <= TARGET or len(search) >= cfg["rk4_max_doublings"]:
            break
        n_steps *= 2
    n_int = len(short) - 1
    h_step = (short[1] - short[0]) / n_steps
    t_rk4f = tm
    err_rk4f = e
    row(f"naive RK4, flint, h = {h_step:.3g}", f"[0, {s_max:g}]", t_rk4f, 1,
        f"{4 * n_steps * n_int} fevals", err_rk4f, t_rk4f.wall / t_ours_s.wall,
        f"projection to [0, {alpha_max:g}]: {t_rk4f.wall / s_max * alpha_max:.3g} s")
    # mpmath run: as many intervals of the short grid as the budget allows (by the flint time x 25)
    per_interval_guess = t_rk4f.wall / n_int * 25
    k = max(1, min(n_int, int(cfg["rk4_budget"] / per_interval_guess)))
    sub = short[:k + 1]
    log(f"RK4 mpmath on [0, {sub[-1]:g}] (n = {n_steps}/interval)")
    with Timing() as t_rk4m:
        eps = rk4(prob, sub, dps, n_steps, "mpmath")
    err_rk4m = max(rel_errs(eps, ref_s[:k + 1]))
    per_alpha = t_rk4m.wall / sub[-1]
    row(f"naive RK4, mpmath, h = {h_step:.3g}", f"[0, {sub[-1]:g}]", t_rk4m, 1,
        f"{4 * n_steps * k} fevals", err_rk4m, per_alpha / ours_per_alpha,
        f"projection to [0, {alpha_max:g}]: {per_alpha * alpha_max:.3g} s "
        f"(= {per_alpha * alpha_max / t_ours.wall:.3g}x ours)")
    rk4_proj = per_alpha * alpha_max

    # 4. mpmath.odefun
    if cfg["odefun"]:
        for degree in cfg["odefun_degrees"]:
            log(f"mpmath.odefun, degree {degree}: one Taylor step")
            o = odefun_step(prob, dps, degree, ODEFUN_TOL)
            o["err"] = rel_errs([o["eps"]], [_ref_at(prob, o["alpha"])])[0]
            per_step = o["timing"].wall
            proj = per_step * alpha_max / o["radius"]
            row(f"mpmath.odefun, degree {degree}, tol {ODEFUN_TOL:g}", f"[0, {o['radius']:.3g}] (1 step)",
                o["timing"], 1, f"{o['calls']} fevals", o["err"], (per_step / o["radius"]) / ours_per_alpha,
                f"projection to [0, {alpha_max:g}] at this step length: {proj:.3g} s (= {proj / t_ours.wall:.3g}x ours)")
            log(f"  step {o['radius']:.3g} in {per_step:.1f} s")
        d_def = 3 + int(3 * dps / 2)
        log(f"mpmath.odefun default degree {d_def}: cost of one RHS call at its internal precision")
        c1 = odefun_eval_cost(prob, dps, d_def)
        notes.append(f"mpmath.odefun with its default degree ({d_def} at {dps} digits) evaluates the RHS "
                     f"at {d_def + 1}x the working precision: one rhs_levels call there took {c1:.3g} s "
                     f"(measured), so one Taylor step ({d_def} calls) costs at least {c1 * d_def:.3g} s; "
                     f"not run.")
    else:
        notes.append("mpmath.odefun: not run at this L (see the smaller L; its cost grows faster than ours).")

    # 5. float64 in the level basis
    log("SciPy DOP853 float64, level basis")
    t_sp, eps_sp, msg_sp, nfev_sp = scipy_levels(prob, grid)
    err_sp = rel_errs(eps_sp, ref_g[:len(eps_sp)])
    a_br, e_br = breakdown(grid, err_sp)
    row("SciPy DOP853 float64 (levels)", f"[0, {grid[len(eps_sp) - 1]:g}] reached", t_sp, 1,
        f"{nfev_sp} fevals", max(err_sp) if err_sp else None, t_sp.wall / t_ours.wall,
        f"rtol 1e-13; {msg_sp.rstrip('.')}; " +
        (f"error > {TARGET:g} from α = {a_br:g} ({fmt_e(e_br)})" if a_br is not None else "within target"))
    log("RK7(8) float64, level basis")
    t_f, eps_f, msg_f, nfev_f = float64_rk78(prob, grid)
    err_f = rel_errs(eps_f, ref_g[:len(eps_f)])
    a_bf, e_bf = breakdown(grid, err_f)
    row("RK7(8) float64 (levels)", f"[0, {alpha_max:g}]", t_f, 1, f"{nfev_f} fevals" if nfev_f else "-",
        max(err_f) if err_f else None, t_f.wall / t_ours.wall,
        f"rtol 1e-13; {msg_f}" + (f"; error > {TARGET:g} from α = {a_bf:g} ({fmt_e(e_bf)})"
                                  if a_bf is not None else ""))

    # -- report
    print(f"\n### L = {L} (dps = {dps}, {7 * L} ODEs)\n")
    print(f"Reference: modes basis, float64 RK7(8), rtol 1e-14; its gap to rtol 1e-13 is "
          f"{fmt_e(ref_gap)} (max relative, over all α used).  Ratios: wall time / ours on the same "
          f"α range (per unit α when a method ran on part of the short range) (full range: ours {t_ours.wall:.3g} s; short range [0, {s_max:g}]: "
          f"ours {t_ours_s.wall:.3g} s).\n")
    print("| method | α range | wall time [s] | cpu time [s] | runs | load (1 min) | work | max rel. error ε_g | wall time / ours | note |")
    print("|---|---|---:|---:|---:|---:|---|---:|---:|---|")
    for method, rng, tm, runs, work, err, ratio, note in rows:
        if isinstance(tm, Timing):
            wall, cpu, ld = fmt_s(tm.wall), fmt_s(tm.cpu), f"{tm.load:.2f}"
        else:
            wall, cpu, ld = fmt_s(tm), "", ""
        r = "-" if ratio is None else f"{ratio:.3g}x"
        print(f"| {method} | {rng} | {wall} | {cpu} | {runs} | {ld} | {work} | {fmt_e(err)} | {r} | {note} |")
    print(f"\nRK4 step-count search (flint, α ∈ [0, {s_max:g}], target {TARGET:g}): " +
          "; ".join(f"n = {n}/interval (h = {(short[1] - short[0]) / n:.3g}): {fmt_e(e)} in {w:.3g} s"
                    for n, e, w in search) + ".")
    for note in notes:
        print(f"\n{note}")
    print("\nε_g per α (relative error against the modes reference):\n")
    hdr = "| α | ε_g reference | ours | " + " | ".join(f"heyoka tol {h['tol']:g}" for h in hy_res) + \
          " | DOP853 float64 | RK7(8) float64 |"
    print(hdr)
    print("|" + "---:|" * (hdr.count("|") - 1))
    for i, a in enumerate(grid):
        cells = [f"{a:g}", mpmath.nstr(to_mpf(ref_g[i]), 12), fmt_e(err_ours[i])]
        cells += [fmt_e(h["errs"][i]) for h in hy_res]
        cells += [fmt_e(err_sp[i]) if i < len(err_sp) else "not reached",
                  fmt_e(err_f[i]) if i < len(err_f) else "-"]
        print("| " + " | ".join(cells) + " |")
    sys.stdout.flush()
    return dict(L=L, ours=t_ours.wall, heyoka=[(h["tol"], h["integrate"].wall, h["compile"].wall,
                                                max(h["errs"])) for h in hy_res],
                rk4_proj=rk4_proj, err_ours=max(err_ours))


def _ref_at(prob, alpha):
    """Modes reference ε_g at one α (for odefun, whose single step ends wherever it ends)."""
    a = float(mpmath.nstr(mpmath.mpf(alpha), 12))
    return integrate_problem(prob, [0.0, a], basis="modes", arithmetic="float64", rtol=1e-14).eps_g[-1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: L = 16, α ≤ 300, small budgets (< 2 min)")
    ap.add_argument("--L", type=int, nargs="+", default=None, help="values of L (default 64)")
    args = ap.parse_args(argv)
    if args.quick:
        cfg = dict(grid=log_grid(300, 8), short=[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], repeats=1,
                   repeat_budget=0, heyoka_tols=[1e-10], rk4_n0=10, rk4_max_doublings=6,
                   rk4_budget=10, odefun=True, odefun_degrees=[12, 30])
        Ls = args.L or [16]
    else:
        cfg = dict(grid=log_grid(3500, 15), short=[0.0, 10.0, 20.0, 30.0, 40.0, 50.0], repeats=3,
                   repeat_budget=120, heyoka_tols=[1e-10, 1e-8], rk4_n0=50, rk4_max_doublings=6,
                   rk4_budget=240, odefun=True, odefun_degrees=[12, 30])
        Ls = args.L or [64]
    print("# Level basis: ours vs heyoka, naive RK4, mpmath.odefun, float64\n")
    print(machine() + "\n")
    print(f"erf K = M = 2, order 1, β = 1, η = 1/10, N = 1024, σ_J = 1/100, seed 0; α grid "
          f"{', '.join(f'{a:g}' for a in cfg['grid'])}; target {TARGET:g} relative on ε_g; "
          f"dps = estimated_dps(L, 8, 'levels') for every arbitrary-precision method.")
    summary = []
    for L in Ls:
        c = dict(cfg)
        if L > 64 and not args.quick:
            # the slow competitors at L > 64: odefun is skipped, RK4 in mpmath gets one interval
            c.update(odefun=False, rk4_budget=60, repeats=1, heyoka_tols=[1e-10])
        summary.append(bench_L(L, c))
    print(f"\n_Total {time.perf_counter() - T_START:.0f} s; load average (1/5/15 min) at the end {load_avg()}._")
    return 0


if __name__ == "__main__":
    sys.exit(main())
