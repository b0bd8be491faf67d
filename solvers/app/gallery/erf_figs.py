"""Erf networks (§5 and App. C): Figures 1, 4, 6 (right), 17, 18, 19, 20.

ODE trajectories in the modes basis (float64 RK7(8) via integrate_problem / mode_states), the
plateau fixed points of solvers.theory.plateau, the plateau length of the `plateau` subcommand,
and the linearisation at perfect learning of solvers.theory.asymptotic.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from .base import Figure, check, slope
from .common import frac, power_law, finite_size_bound, sim_dev, log_grid
from .style import style, panels, save, one_panel, ALPHA, EPS


def _problem(K, M, L, beta, eta, order, N, sigma_J, seed, expected_teacher=False):
    from derive.hierarchy import SystemKey
    from solvers.core.problem import Problem, random_init, expected_init, InitialCondition
    sp = power_law(L, beta)
    ini = random_init(K, M, N, sp, frac(sigma_J), seed)
    if expected_teacher:
        ex = expected_init(sp, K, M, frac(sigma_J))
        ini = InitialCondition("modes", ini.R, ini.Q, ex.T)
    return Problem(SystemKey("erf", K, M), sp, frac(eta), order, ini)


def _lam(problem):
    from solvers.core.numbers import Float64Context
    return problem.numeric(Float64Context()).lam


# ---- Figure 1 --------------------------------------------------------------------------------

def fig1_compute(p, piece):
    from solvers.app.demo import figure1_problem, plateau_length
    from solvers.hierarchy.odes import integrate_problem
    a_th = np.linspace(0.0, p["alpha_max"], p["n_points"])
    a_sim = log_grid(1.0, p["alpha_max"], p["n_sim"], with_zero=True)
    out = {"alpha": a_th, "theory": {}, "plateau": {}, "sim": {}}
    for L in p["Ls"]:
        def theory(L=L):
            tr = integrate_problem(figure1_problem(L, p["N"]), a_th, basis="modes", arithmetic="float64", rtol=1e-12)
            return tr.eps_float()
        out["theory"][str(L)] = e = piece(f"theory-L{L}", {"L": L, "N": p["N"], "a": p["alpha_max"], "n": p["n_points"]}, theory)
        out["plateau"][str(L)] = plateau_length(a_th, e)

        def sim(L=L):
            from solvers.sim.simulate import simulate
            from solvers.core.problem import Problem, explicit_init
            from derive.hierarchy import SystemKey
            sp = power_law(L, 1)
            r = simulate(activation="erf", K=2, M=2, N=p["N"], eta=0.1, sigma_J=0.01, seed=0, alphas=a_sim,
                         eigenvalues=[float(v) for v in sp.eigenvalues])
            init = explicit_init("modes", r.init_modes["R"], r.init_modes["Q"], r.init_modes["T"])
            pr = Problem(SystemKey("erf", 2, 2), sp, Fraction(1, 10), 2, init)
            th = integrate_problem(pr, list(r.alpha), basis="modes", arithmetic="float64", rtol=1e-10).eps_float()
            return {"alpha": r.alpha, "eps": r.eps_g, "ode": th}
        if p["sim"]:
            out["sim"][str(L)] = piece(f"sim-L{L}", {"L": L, "N": p["N"], "a": p["alpha_max"], "n": p["n_sim"]}, sim)
    return out


def fig1_plot(d, p, out, small):
    with style() as plt:
        fig, (ax,) = panels(plt, 1, width=6.4)
        for j, L in enumerate(p["Ls"]):
            ax.semilogy(d["alpha"][1:], d["theory"][str(L)][1:], f"C{j}", lw=3, alpha=0.45, label=f"L = {L}")
            s = d["sim"].get(str(L))
            if s:
                ax.semilogy(s["alpha"][1:], s["eps"][1:], "k--", lw=0.7)
        ax.set(xlabel=ALPHA, ylabel=EPS, title=f"K = M = 2, η = 0.1, β = 1, σ_J = 0.01, N = {p['N']}")
        ax.legend(title="wide: ODE; black dashed: SGD, same seed" if d["sim"] else None)
        return [save(fig, out / "fig01.png", small=small)]


# The two windows of the late-slope measurement (Fig. 1, largest L)
_W_EARLY, _W_LATE = (300.0, 1000.0), (1.0 / 3.0, 1.0)      # the late one in units of α_max


def _slope_growth(s_early, s_late, w_early, w_late):
    """d ln(slope) / d ln α between two windows (centres: geometric means of their ends).

    A power law ε ∝ α^−p has the constant local slope p: growth 0.  An exponential ε ∝ e^−cα has
    the local slope cα: growth 1.  Between them the measure says which the curve is closer to.
    """
    c_early, c_late = np.sqrt(np.prod(w_early)), np.sqrt(np.prod(w_late))
    return float(np.log(s_late / s_early) / np.log(c_late / c_early))


def fig1_checks(d, p):
    pl = [d["plateau"][str(L)] for L in p["Ls"]]
    shrinks = all(a >= b for a, b in zip(pl, pl[1:])) and pl[-1] < pl[0]
    out = [check("plateau length (flat-slope measure) per L", dict(zip(map(str, p["Ls"]), pl)),
                 note="α-measure of the stretch with −d ln ε/d ln α < 0.1 after α = 50 (solvers.app.demo."
                      "plateau_length); a shoulder that never gets that flat counts 0"),
           check("plateau shrinks with L (paper: until it disappears)", shrinks, True, shrinks,
                 tol="exact ordering: non-increasing in L, shortest < longest",
                 ref="the caption's statement; lengths measured on the ODE curves of this figure")]
    Lmax = p["Ls"][-1]
    e = np.asarray(d["theory"][str(Lmax)])
    a = np.asarray(d["alpha"])
    late = (a[-1] * _W_LATE[0], a[-1] * _W_LATE[1])
    s_late, s_early = -slope(a, e, *late), -slope(a, e, *_W_EARLY)
    out.append(check(f"L = {Lmax}: late local slope −d ln ε/d ln α on α ∈ [α_max/3, α_max]",
                     s_late, "β/(1+β) = 0.5 (power-law phase)", None,
                     "reported: the caption claims a power law in the early asymptotic phase, not this "
                     "exponent; β/(1+β) is the linear network's L → ∞ value, shown for reference"))
    out.append(check(f"L = {Lmax}: local slope on α ∈ [300, 1000] (nearer the centre of the erf power-law window)",
                     s_early, "β/(1+β) = 0.5", None,
                     "reported, as the row above"))
    growth = _slope_growth(s_early, s_late, _W_EARLY, late)
    out.append(check(f"L = {Lmax}: power law, not exponential: growth d ln(slope)/d ln α between the two windows",
                     growth, "0 (power law); 1 (exponential)", growth < 0.5,
                     tol="< 0.5, the midpoint between the two forms",
                     ref="closed forms: ε ∝ α^−p has a constant local slope (growth 0), ε ∝ e^−cα the slope "
                         "cα (growth 1); the caption's 'exponential to power law' claim"))
    if d["sim"]:
        bound = finite_size_bound(p["N"])
        devs = {L: sim_dev(s["eps"], s["ode"]) for L, s in d["sim"].items()}
        out.append(check("rms rel. deviation SGD (seed 0) vs ODE from the run's own initial overlaps, per L",
                         devs, f"< 3/√N = {bound:.3g}", all(v < bound for v in devs.values()),
                         tol=f"< 3/√N = {bound:.3g}",
                         ref="ODE of the run's own initial overlaps; 3/√N is the finite-size criterion of "
                             "tests/test_sim_vs_ode.py (SGD noise falls like N^−1/2)"))
    return out


FIG1 = Figure(1, "ε_g(α) for K = M = 2 and L = 1, 4, 16, 64 distinct eigenvalues",
              "ODE theory (one random realisation per L, order 2 in η, modes basis) with an online-SGD run "
              "at the same N on top; the plateau shortens with L and the late decay turns from exponential "
              "to a power law.",
              full={"Ls": [1, 4, 16, 64], "N": 1024, "alpha_max": 3500.0, "n_points": 701, "n_sim": 120, "sim": True},
              small={"Ls": [1, 4], "N": 32, "alpha_max": 300.0, "n_points": 61, "n_sim": 12, "sim": True},
              compute=fig1_compute, plot=fig1_plot, checks=fig1_checks, overlay=True)


# ---- Figures 4 and 18: order parameters on the plateau -------------------------------------

def _plateau_traj(p):
    from solvers.theory import plateau as P
    from solvers.theory.asymptotic import mode_states
    M = p["M"]
    pr = _problem(M, M, p["L"], p["beta"], p["eta"], 1, p["N"], p["sigma_J"], p["seed"])
    al = np.linspace(0, p["alpha_max"], p["n_points"])
    st, eps = mode_states(pr, list(al))
    lam = _lam(pr)
    Tm = np.array(pr.init.T, dtype=float)
    Rex, Qex, res, _ = P.equal_students_plateau(M, pr.spectrum, pr.init.T, pr.eta, 1, dps=30)
    Rex = np.array(Rex, dtype=float)              # (L, M) modes
    Qex = np.array(Qex, dtype=float)              # (L,)
    R_row, Q_row, R_row_m, Q_row_m = P.per_row_plateau(Tm, lam)
    levels = list(range(0, p["levels"]))
    st = np.asarray(st)
    nR = M * M
    lv = {l: (lam ** l) @ st for l in levels + [1]}   # level-l state per α: (n_alpha, N_STATE)
    return {"alpha": al, "eps": eps, "residual": float(res),
            "R1": lv[1][:, :nR], "Q1": lv[1][:, nR:],
            "Rl": {str(l): lv[l][:, :nR] for l in levels}, "Ql": {str(l): lv[l][:, nR:] for l in levels},
            "Rex_l": {str(l): ((lam ** l) @ Rex).tolist() for l in levels},
            "Qex_l": {str(l): float((lam ** l) @ Qex) for l in levels},
            "Rrow_l": {str(l): ((lam ** l) @ R_row_m).tolist() for l in levels},
            "Qrow_l": {str(l): float((lam ** l) @ Q_row_m) for l in levels}}


def _plateau_index(eps):
    e = np.asarray(eps)
    return 5 + int(np.argmin(np.abs(np.diff(e[5:]))))


def fig4_compute(p, piece):
    return piece("trajectory", p, lambda: _plateau_traj(p), group="plateau-K4-L10")


def fig4_plot(d, p, out, small):
    M = p["M"]
    with style() as plt:
        fig, (a1, a2, a3) = panels(plt, 3)
        al = np.asarray(d["alpha"])
        R1, Q1 = np.asarray(d["R1"]), np.asarray(d["Q1"])
        for c in range(R1.shape[1]):
            a1.plot(al, R1[:, c], lw=0.9)
        for n in range(M):
            a1.axhline(d["Rrow_l"]["1"][n], color="k", ls="--", lw=0.6)
        for c in range(Q1.shape[1]):
            a2.plot(al, Q1[:, c], lw=0.9)
        a2.axhline(d["Qrow_l"]["1"], color="k", ls="--", lw=0.6)
        a3.semilogy(al, d["eps"], "C0")
        a1.set(xlabel=ALPHA, ylabel=r"$R^{(1)}_{in}$", title=f"K = M = {M}, L = {p['L']}, N = {p['N']}")
        a2.set(xlabel=ALPHA, ylabel=r"$Q^{(1)}_{ij}$", title=f"η = {p['eta']}, σ_J = {p['sigma_J']}, β = {p['beta']}, O(η)")
        a3.set(xlabel=ALPHA, ylabel=EPS, title="generalisation error")
        return [save(fig, out / "fig04.png", small=small, note="dashed: per-row plateau, corrected Eq. (98)")]


def _plateau_checks(d, p):
    i = _plateau_index(d["eps"])
    M = p["M"]
    R_ode = np.asarray(d["R1"])[i].reshape(M, M).mean(axis=0)
    R_ex, R_row = np.asarray(d["Rex_l"]["1"]), np.asarray(d["Rrow_l"]["1"])
    Q_ode = float(np.mean(np.asarray(d["Q1"])[i]))
    dev_ode = float(np.max(np.abs(R_ode / R_ex - 1)))
    dev_row = float(np.max(np.abs(R_row / R_ex - 1)))
    return [check("plateau fixed point (all students equal): Newton residual", d["residual"], "< 1e-20", d["residual"] < 1e-20,
                  tol="< 1e-20", ref="the stationarity equations themselves, solved by Newton at 30 digits: "
                                     "the residual of a converged root is ~10^−30"),
              check(f"α at closest approach to the plateau", float(d["alpha"][i]), note="reported: where the check rows below are taken"),
              check("M distinct plateau heights of R^(1)_in (exact fixed point, spread/mean)",
                    float(np.ptp(R_ex) / np.mean(R_ex)), note="reported: the caption's M distinct heights"),
              check("ODE R^(1) at the plateau vs exact fixed point, max rel.", dev_ode, "< 1e-3", dev_ode < 1e-3,
                    tol="< 1e-3", ref=_REF_FP),
              check("per-row formula (corrected Eq. 98) vs exact fixed point, max rel.", dev_row, "< 0.01", dev_row < 0.01,
                    tol="< 0.01", ref=_REF_ROW),
              check("ODE Q^(1) at the plateau vs corrected Eq. (98)", Q_ode / d["Qrow_l"]["1"] - 1, "|·| < 0.01",
                    abs(Q_ode / d["Qrow_l"]["1"] - 1) < 0.01, tol="|·| < 0.01", ref=_REF_ROW)]


_REF_FP = ("exact fixed point of the O(η) equations (Newton, 30 digits); the ODE passes the plateau at a "
           "finite distance, measured ~1e-5: 1e-3 leaves room for the grid's closest point")
_REF_ROW = ("exact fixed point (Newton); the per-row formula neglects the off-diagonal teacher structure "
            "beyond the row sums: an O(1 %) approximation (measured 0.3 % at the paper's size)")


_P4 = {"M": 4, "L": 10, "N": 7000, "beta": 0.25, "eta": 0.1, "sigma_J": 0.01, "seed": 1,
       "alpha_max": 7000.0, "n_points": 351, "levels": 5}
_P4s = dict(_P4, M=2, L=3, N=999, alpha_max=2500.0, n_points=101, levels=3)
_ERR98 = ("The paper's Eq. (96)/(98) put T^(l)_nn where the row sum S^(l)_n = T^(l)_nn + d^(l)_n belongs "
          "(corrected per-row formula in solvers.theory.plateau.per_row_plateau); β is not given in the "
          "caption, β = 0.25 (as in Figs. 17, 19) is used.")

FIG4 = Figure(4, "Symmetric plateau of the order parameters (K = M = 4, L = 10)",
              "R^(1)_in, Q^(1)_ij and ε_g from the O(η) ODE for one random teacher and student; the student-teacher "
              "overlaps settle at M distinct heights, the student-student ones at one.",
              full=_P4, small=_P4s, compute=fig4_compute, plot=fig4_plot, checks=_plateau_checks, errata=_ERR98)


def fig18_plot(d, p, out, small):
    M = p["M"]
    with style() as plt:
        fig, axes = panels(plt, 2)
        i = _plateau_index(d["eps"])
        ls = sorted(int(l) for l in d["Rl"])
        for n in range(M):
            ode = [np.asarray(d["Rl"][str(l)])[i].reshape(M, M)[:, n].mean() for l in ls]
            axes[0].semilogy(ls, np.abs(ode), f"C{n}o", label=f"ODE, teacher n = {n + 1}")
            axes[0].semilogy(ls, [abs(d["Rrow_l"][str(l)][n]) for l in ls], f"C{n}--", lw=0.8)
        axes[1].semilogy(ls, [np.mean(np.asarray(d["Ql"][str(l)])[i]) for l in ls], "C0o", label="ODE")
        axes[1].semilogy(ls, [d["Qrow_l"][str(l)] for l in ls], "k--", lw=0.8, label="corrected Eq. (98)")
        axes[0].set(xlabel="level l", ylabel=r"$R^{(l)}$ at the plateau", title=f"K = M = {M}, L = {p['L']}, α = {d['alpha'][i]:.0f}")
        axes[1].set(xlabel="level l", ylabel=r"$Q^{(l)}$ at the plateau", title="student-student")
        axes[0].legend(); axes[1].legend()
        return [save(fig, out / "fig18.png", small=small, note="dashed: corrected Eq. (98), per teacher row")]


def fig18_checks(d, p):
    i = _plateau_index(d["eps"])
    M = p["M"]
    out = _plateau_checks(d, p)[:1]
    for l in sorted(int(k) for k in d["Rl"]):
        ode = np.asarray(d["Rl"][str(l)])[i].reshape(M, M).mean(axis=0)
        dev = float(np.max(np.abs(ode / np.asarray(d["Rex_l"][str(l)]) - 1)))
        out.append(check(f"level {l}: ODE R^(l) vs exact plateau, max rel.", dev, "< 1e-3", dev < 1e-3,
                         tol="< 1e-3", ref=_REF_FP))
    return out


FIG18 = Figure(18, "Higher-level order parameters on the plateau (the insets of Fig. 4)",
               "R^(l) and Q^(l) at the plateau for levels l = 0…4 from the ODE, against the corrected Eq. (98).",
               full=_P4, small=_P4s, compute=fig4_compute, plot=fig18_plot, checks=fig18_checks, errata=_ERR98)


# ---- Figure 17: plateau height vs L ---------------------------------------------------------

def fig17_compute(p, piece):
    def one(L):
        from solvers.theory import plateau as P
        from solvers.theory.asymptotic import mode_states
        from solvers.core.registry import load
        M = p["M"]
        N = (p["N"] // L) * L
        pr = _problem(M, M, L, p["beta"], p["eta"], 1, N, p["sigma_J"], p["seed"])
        al = np.linspace(0, p["alpha_max"], p["n_points"])
        _, e = mode_states(pr, list(al))
        lam = _lam(pr)
        Tm = np.array(pr.init.T, dtype=float)
        mod = load(pr.key, "numpy")
        t1 = lam @ pr.numeric(__import__("solvers.core.numbers", fromlist=["Float64Context"]).Float64Context()).T_modes
        nq = M * (M + 1) // 2
        R_r, Q_r, _, _ = P.per_row_plateau(Tm, lam)
        e_row = float(mod.eps_g(np.concatenate([np.tile(R_r, M), np.full(nq, Q_r)]), t1))
        Rx, Qx, _, _ = P.equal_students_plateau(M, pr.spectrum, pr.init.T, pr.eta, 1, dps=30)
        vx = np.concatenate([np.tile(lam @ np.array(Rx, dtype=float), M), np.full(nq, float(lam @ np.array(Qx, dtype=float)))])
        return {"alpha": al, "eps": e, "e_row": e_row, "e_exact": float(mod.eps_g(vx, t1))}
    def eq99(L):
        # Eq. (99) (corrected): the plateau height of the symmetrised teacher (T, D per mode)
        from solvers.theory import plateau as P
        pr = _problem(p["M"], p["M"], L, p["beta"], p["eta"], 1, (p["N"] // L) * L, p["sigma_J"], p["seed"])
        fp = P.plateau_fixed_point(p["M"], pr.spectrum, P.SymmetricTeacher.from_modes(pr.init.T), pr.eta, 1, dps=30)
        return {"eq99": P.to_float(P.plateau_height(fp))}
    return {str(L): piece(f"L{L}", p | {"L": L}, lambda L=L: one(L))
            | piece(f"eq99-L{L}", p | {"L": L}, lambda L=L: eq99(L)) for L in p["Ls"]}


def fig17_plot(d, p, out, small):
    def draw(ax):
        lo = []
        for j, L in enumerate(p["Ls"]):
            r = d[str(L)]
            ax.plot(r["alpha"], r["eps"], f"C{j}", label=f"L = {L}")
            ax.axhline(r["e_row"], color=f"C{j}", ls="--", lw=0.8)
            lo.append(r["e_row"])
        ax.set(xlabel=ALPHA, ylabel=EPS, ylim=(0.5 * min(lo), 2 * max(lo)),
               title=f"K = M = {p['M']}, N ≈ {p['N']}, β = {p['beta']}, η = {p['eta']}, σ_J = {p['sigma_J']}, O(η)")

    return one_panel(out, "fig17.png", small=small, width=6.0, draw=draw, note="dashed: fixed point, corrected Eqs. (95)/(98)")


def fig17_checks(d, p):
    out = []
    for L in p["Ls"]:
        r = d[str(L)]
        i = _plateau_index(r["eps"])
        dev = r["eps"][i] / r["e_exact"] - 1
        out.append(check(f"L = {L}: ε_g of the ODE at the plateau vs exact fixed point", dev, "|·| < 1e-3", abs(dev) < 1e-3,
                         tol="|·| < 1e-3", ref=_REF_FP))
        out.append(check(f"L = {L}: corrected-Eq.(98) height vs exact fixed point", r["e_row"] / r["e_exact"] - 1, "|·| < 0.02",
                         abs(r["e_row"] / r["e_exact"] - 1) < 0.02, tol="|·| < 0.02",
                         ref="exact fixed point (Newton); ε_g of the per-row formula inherits its O(1 %) "
                             "approximation of R, Q (measured ≤ 2e-4 at the paper's size)"))
        out.append(check(f"L = {L}: corrected Eq. (99) (symmetrised teacher) vs the ODE plateau", r["eq99"] / r["eps"][i] - 1,
                         None, None, "reported: the random teacher is only symmetric on average, an O(1/√N)-type offset"))
    return out


FIG17 = Figure(17, "Plateau height from the ODE vs the approximate fixed point",
               "ε_g of the O(η) ODE (solid) and the plateau height of the fixed point (dashed) for several L.",
               full={"M": 4, "N": 7000, "beta": 0.25, "eta": 0.1, "sigma_J": 0.01, "seed": 1, "Ls": [2, 8, 10, 12],
                     "alpha_max": 1800.0, "n_points": 181},
               small={"M": 2, "N": 1000, "beta": 0.25, "eta": 0.1, "sigma_J": 0.01, "seed": 1, "Ls": [2, 4],
                      "alpha_max": 1200.0, "n_points": 61},
               compute=fig17_compute, plot=fig17_plot, checks=fig17_checks, errata=_ERR98)


# ---- Figure 19: plateau length ----------------------------------------------------------------

def fig19_compute(p, piece):
    def one(L):
        from solvers.app.cli.plateau import plateau_result
        from solvers.app.spec import parse_spec
        from solvers.app.solve import problem_of
        from solvers.theory.asymptotic import mode_states
        N = (p["N"] // L) * L
        doc = {"model": {"activation": "erf", "K": p["M"], "M": p["M"]},
               "data": {"L": L, "beta": p["beta"], "N": N},
               "training": {"eta": p["eta"], "order": 1, "sigma_J": p["sigma_J"], "seed": p["seed"]},
               "solve": {"alpha_max": p["alpha_max"], "n_points": p["n_points"], "spacing": "linear",
                         "basis": "modes", "dps": "float64"},
               "plateau": {"alpha0": p["alpha0"]}}
        spec = parse_spec(doc, name=f"fig19-L{L}", extra_sections=("plateau", "asymptotic"))
        r = plateau_result(spec)
        al = np.linspace(0, p["alpha_max"], p["n_points"])
        problem = problem_of(spec)
        st, e = mode_states(problem, list(al), rtol=1e-10)
        keep = ("tau_esc", "plateau_length", "plateau_length_ode", "D", "eps_plateau", "plateau_length_note",
                "rho_offset")
        out = {"alpha": al, "eps": e, **{k: r[k] for k in keep if k in r}}
        if "rho_offset" in r:
            # the growth rate of the specialisation component ρ actually seen on this trajectory,
            # over two escape times after α0: Eq. (117) assumes the symmetric plateau's 1/τ_esc
            from solvers.core.numbers import Float64Context
            from solvers.theory.plateau import specialisation_component
            from solvers.theory.plateau_length import level_one_R
            R1, _ = level_one_R(st, problem.numeric(Float64Context()).lam, p["M"])
            rho = specialisation_component(R1, p["M"])
            win = (al >= p["alpha0"]) & (al <= p["alpha0"] + 2 * r["tau_esc"])
            out["rate_measured"] = float(np.polyfit(al[win], np.log(np.abs(rho[win] - r["rho_offset"])), 1)[0])
        return out
    # "-rate": the piece also holds the measured growth rate (a new name keeps older pieces apart)
    return {str(L): piece(f"L{L}-rate", p | {"L": L}, lambda L=L: one(L)) for L in p["Ls"]}


def fig19_plot(d, p, out, small):
    def draw(ax):
        for j, L in enumerate(p["Ls"]):
            r = d[str(L)]
            ax.semilogy(r["alpha"], r["eps"], f"C{j}", label=f"L = {L}")
            if r.get("plateau_length") is not None:
                ax.axvline(p["alpha0"] + r["plateau_length"], color=f"C{j}", ls="--", lw=0.8)
        ax.axvline(p["alpha0"], color="k", lw=0.7)
        ax.set(xlabel=ALPHA, ylabel=EPS, title=f"K = M = {p['M']}, N ≈ {p['N']}, β = {p['beta']}, η = {p['eta']}, O(η)")

    return one_panel(out, "fig19.png", small=small, width=6.0, draw=draw, note="black: α0; dashed: α_P from Eq. (117) with the measured log-ratio")


def fig19_checks(d, p):
    out = []
    for L in p["Ls"]:
        r = d[str(L)]
        if r.get("plateau_length") is None or r.get("plateau_length_ode") is None:
            out.append(check(f"L = {L}: plateau length", None, None, None, r.get("plateau_length_note", "not available")))
            continue
        dev = r["plateau_length"] / r["plateau_length_ode"] - 1
        out.append(check(f"L = {L}: Eq. (117) length / ODE length − 1 (τ_esc = {r['tau_esc']:.4g})", dev, "|·| < 0.1", abs(dev) < 0.1,
                         tol="|·| < 0.1",
                         ref="the escape of the O(η) ODE itself; 10 %: Eq. (117) is a linearisation about the "
                             "symmetric plateau, which a random teacher only approximates"))
        if "rate_measured" in r:
            ratio = r["rate_measured"] * r["tau_esc"]
            out.append(check(f"L = {L}: growth rate of ρ on the ODE over [α0, α0 + 2τ_esc] × τ_esc", ratio, 1.0, None,
                             "reported: Eq. (117) takes the symmetric plateau's rate; a random teacher's plateau escapes at its own"))
    return out


FIG19 = Figure(19, "Plateau length: ODE vs Eq. (117)",
               "ε_g from the O(η) ODE for several L with the escape α_P predicted from the escape time τ_esc "
               "(Eq. 116) and Eq. (117), counted from α0 = 500.",
               full={"M": 4, "N": 7000, "beta": 0.25, "eta": 0.1, "sigma_J": 0.01, "seed": 1, "Ls": [2, 4, 6, 8],
                     "alpha0": 500.0, "alpha_max": 7000.0, "n_points": 401},
               small={"M": 2, "N": 1000, "beta": 0.25, "eta": 0.1, "sigma_J": 0.01, "seed": 1, "Ls": [2],
                      "alpha0": 500.0, "alpha_max": 4000.0, "n_points": 101},
               compute=fig19_compute, plot=fig19_plot, checks=fig19_checks,
               errata="Eq. (117)'s constant τ(D − ln σ_J + ½ ln N) is replaced by the log-ratio measured on the "
                      "trajectory (see `scaling-odes plateau`); the paper's escape at R = e·R* is taken at 0.1·R*. "
                      "L = 6 misses the 10 % mark (Eq. 117 short by ≈ 12 %): the theory's rate 1/τ_esc is that of the "
                      "symmetric plateau, while this run's random teacher (seed 1, N/L = 1166 directions per level) gives "
                      "a plateau whose specialisation component grows more slowly (the measured-rate row). Moving α0 "
                      "from 500 to 900 and 1300 moved the predicted α_P from 4676 to 4750 and 4837 while the ODE's escape "
                      "stayed at 5232.5 (measured once, not part of the figure): the rate, not the fitted amplitude, is off.")


# ---- Figures 6 (right) and 20: the asymptotic phase -----------------------------------------

def _asym_piece(L, p):
    from solvers.theory import asymptotic as A
    pr = _problem(2, 2, L, p["beta"], p["eta"], 1, p["N"], p["sigma_J"], p["seed"], expected_teacher=True)
    al = np.arange(p["alpha_start"], p["alpha_end"][str(L)] + p["step"] / 2, p["step"])
    st, e = A.mode_states(pr, [0.0] + list(al))
    st, e = np.asarray(st[1:]), np.asarray(e[1:])
    lam = _lam(pr)
    F = A.FullLinearisation(pr, A.matched_permutation((lam @ st[0])[:4].reshape(2, 2), 2))
    i0 = int(np.argmin(np.abs(al - p["alpha0"][str(L)])))
    pred = F.eps_g(st[i0], al[i0], al[i0:])
    first = [F.first_order(s) for s in st]
    # second order from the same state: the first-order ε_g misses ½ xᵀHx of in-span deformations,
    # which is itself O(ε_g) (asymptotic.SecondOrder); this is what explains Eq. (122)'s residual
    second = A.SecondOrder(F).eps_g(st[i0], al[i0], al[i0:])
    return {"alpha": al, "eps": e, "i0": i0, "eq122": pred, "eq121": first, "second": second,
            "rates": F.rates()[:6]}


def _asym_compute(p, piece):
    def key(L):
        keep = ("beta", "eta", "sigma_J", "N", "seed", "alpha_start", "step")
        return {k: p[k] for k in keep} | {"L": L, "alpha_end": p["alpha_end"][str(L)], "alpha0": p["alpha0"][str(L)]}
    # "-o2": the piece holds the second-order prediction too (a new name, so that the Fig. 6 version,
    # which keys its SGD pieces, stays)
    return {str(L): piece(f"L{L}-o2", key(L), lambda L=L: _asym_piece(L, p), group="asymptotic-K2")
            for L in p["Ls"]}


EPS_MIN = 1e-10     # below this the float64 trajectory is rounding-limited (see notebook 05)


def _asym_dev(r, key="eq122"):
    i0 = r["i0"]
    e = np.asarray(r["eps"])[i0:]
    pr = np.asarray(r[key])
    keep = e >= EPS_MIN
    return float(np.max(np.abs(pr[keep] / e[keep] - 1)))


def fig6r_plot(d, p, out, small):
    def draw(ax):
        for L in p["Ls"]:
            r = d[str(L)]
            a = np.asarray(r["alpha"])
            ax.semilogy(a, r["eps"], "C0", label="ODE, O(η)")
            ax.semilogy(a[r["i0"]:], r["eq122"], "C1--", label=f"Eq. (17)/(122) from α0 = {p['alpha0'][str(L)]:g}")
        ax.set(xlabel=ALPHA, ylabel=EPS, title=f"K = M = 2, η = {p['eta']}, β = {p['beta']}, L = {p['Ls'][0]}")

    return one_panel(out, "fig06_right.png", small=small, width=5.6, draw=draw)


def _asym_checks(d, p):
    out = []
    for L in p["Ls"]:
        r = d[str(L)]
        dev = _asym_dev(r)
        out.append(check(f"L = {L}: Eq. (122) from α0 vs ODE, max rel. (ε_g ≥ 1e-10)", dev, "< 0.05", dev < 0.05,
                         "first order: misses ½ xᵀHx of the in-span directions, O(ε_g) itself (see the next rows)",
                         tol="< 0.05", ref="the O(η) ODE from the same state (float64 RK7(8), rtol 1e-10); 5 %: "
                                           "the linearisation's own neglected terms"))
        e = np.asarray(r["eps"])
        off = float(np.asarray(r["eq121"])[-1] / e[-1] - 1)
        out.append(check(f"L = {L}: Eq. (121) on the ODE state at α_end, rel. offset", off, None, None,
                         "reported: a constant relative offset, not a transient: first order is not asymptotically exact"))
        dev2 = _asym_dev(r, "second")
        out.append(check(f"L = {L}: second-order expansion from α0 vs ODE, max rel. (ε_g ≥ 1e-10)", dev2, "< 0.01",
                         dev2 < 0.01, "error cubic in the deviation from perfect learning",
                         tol="< 0.01", ref="the O(η) ODE from the same state; 1 %: the cubic remainder at α0, "
                                           "where the deviation from perfect learning is ~10 %"))
        lam_min = float(min(power_law(L, p["beta"]).eigenvalues))
        a = 2 * np.sqrt(3) / (3 * np.pi * 2) * p["eta"]          # a = 2√3/(3πM), times η (DESIGN errata)
        slow = a * (2 - np.sqrt(3)) * lam_min
        out.append(check(f"L = {L}: slowest decay rate of the Jacobian with ε_g weight / a(2−√3)λ_L",
                         r["rates"][0] / slow, 1.0, abs(r["rates"][0] / slow - 1) < 0.02,
                         "asymptotic group (2−√3)λ_k governs the late decay",
                         tol="|ratio − 1| < 0.02",
                         ref="closed form a(2−√3)λ_L (linearisation at perfect learning, App. C.5) vs the "
                             "eigenvalues of the Jacobian of the generated right-hand side: exact for the O(η) "
                             "system (measured to 1e-14); 2 % only has to tell the (2−√3) group from its "
                             "neighbours (λ_{L−1}/λ_L and (2+√3)/(2−√3) are far from 1)"))
    return out


_P20 = {"beta": 1.0, "eta": 0.25, "sigma_J": 0.01, "N": 9000, "seed": 0,
        "alpha_start": 1000.0, "step": 250.0}
FIG6R = Figure(6, "Asymptotic phase (erf): ODE vs Eq. (17) (right panel; left panel in the simulation figures)",
               "ε_g of the O(η) ODE against the linearisation at perfect learning (Eqs. 17/122, evaluated as the "
               "full Jacobian exponential from the ODE state at α0).",
               full=_P20 | {"Ls": [9], "alpha_end": {"9": 14000.0}, "alpha0": {"9": 6000.0}},
               small=_P20 | {"Ls": [3], "N": 900, "alpha_end": {"3": 4000.0}, "alpha0": {"3": 2000.0}, "step": 500.0},
               compute=_asym_compute, plot=fig6r_plot, checks=_asym_checks)


def fig20_plot(d, p, out, small):
    with style() as plt:
        fig, axes = panels(plt, 1 + len(p["Ls"]))
        for j, L in enumerate(p["Ls"]):
            r = d[str(L)]
            a = np.asarray(r["alpha"])
            axes[0].semilogy(a, r["eps"], f"C{j}", label=f"L = {L}")
            ax = axes[1 + j]
            ax.semilogy(a, r["eps"], "C0", label="ODE, O(η)")
            ax.semilogy(a, r["eq121"], "C2-.", lw=0.9, label="Eq. (121) on the ODE state")
            ax.semilogy(a[r["i0"]:], r["eq122"], "C1--", label=f"Eq. (122) from α0 = {p['alpha0'][str(L)]:g}")
            ax.semilogy(a[r["i0"]:], r["second"], "C3:", lw=1.6, label="second order from α0")
            ax.set(xlabel=r"$\alpha$", ylabel=EPS, title=f"L = {L}")
            ax.legend()
        axes[0].set(xlabel=ALPHA, ylabel=EPS, title=f"K = M = 2, η = {p['eta']}, β = {p['beta']}, N = {p['N']}")
        axes[0].legend()
        return [save(fig, out / "fig20.png", small=small)]


FIG20 = Figure(20, "Asymptotic convergence: first-order expansion Eq. (121) vs Eq. (122)",
               "Left: ε_g of the O(η) ODE; centre/right: Eq. (121) evaluated on the ODE's own state and the "
               "linearised solution Eq. (122) started late in the asymptotic phase (α0 = 3000 for L = 3, 6000 for L = 9; "
               "the paper uses α0 = 1000, where the state is not yet in the linear regime: Eq. 122 is then tens of % off).",
               full=_P20 | {"Ls": [3, 9], "alpha_end": {"3": 6000.0, "9": 14000.0}, "alpha0": {"3": 3000.0, "9": 6000.0}},
               small=_P20 | {"Ls": [3], "N": 900, "alpha_end": {"3": 3000.0}, "alpha0": {"3": 2000.0}, "step": 500.0},
               compute=_asym_compute, plot=fig20_plot, checks=_asym_checks,
               errata="α0 = 1000 (paper) → 3000/6000 here (see above). The initial conditions r(α0)… are taken from the ODE (not a simulation), with the teacher "
                      "at its expectation so that the perfect-learning point is the paper's. Eq. (121), the first-order "
                      "expansion of ε_g, is not asymptotically exact: in-span deformations of the students change ε_g only "
                      "at second order (½ xᵀHx) yet decay at about half the slowest visible rate, so their contribution is "
                      "O(ε_g) for all α — a constant relative offset (measured 12 % at L = 3). Eq. (122) inherits it (13 % at "
                      "α0 for L = 3, the check not met); the second-order expansion from the same state (dotted) "
                      "follows the ODE (see the checks).")

FIGURES = [FIG1, FIG4, FIG17, FIG18, FIG19, FIG20]   # Fig. 6 (right) is part of sim_figs.FIG6
