"""Figures of the power-law random-features room (solvers.theory.plrf): one-pass SGD on d random
projections of power-law data.

P1: the expected loss of one draw of W (closed form of the per-mode recursion) against seeded
SGD on the same W, at (B, γ) = (1, 0.2) and (4, 0.12), with the deterministic equivalent.
P2: the phase diagram over (α, β) (exact classification) with the predicted ξ of each phase.
P3: the compute-optimal frontier in phases II and III: d*(f) and its fitted exponent against the
predicted one, from deterministic-equivalent curves over a ladder of d.
"""
from __future__ import annotations

import numpy as np

from .base import Figure, check
from .style import panels, save, style

# ---- P1: loss curves, theory against simulation ------------------------------------------------


def p1_compute(p, piece):
    from solvers.theory.plrf import Problem, curve, simulate
    out = {}
    r_line = np.unique(np.geomspace(1, p["r_max"], 120).astype(int)).tolist()
    for B, g in p["settings"]:
        def one(B=B, g=g):
            pb = Problem(1.0, 0.7, 200, 50, B, g)
            th = curve(pb, r_line, "exact", seed=0)
            de = curve(pb, r_line, "deterministic")
            sim = simulate(pb, p["r_sim"], runs=p["runs"], seed=0, sim_seed=1, inputs="features")
            return {"r": r_line, "exact": th["loss"], "de": de["loss"], "p_inf": th["meta"]["p_inf"],
                    "sim": sim["sim"]["loss"], "sem": sim["sim"]["sem"], "z": sim["sim"]["z"]}
        out[f"{B}-{g}"] = piece(f"B{B}-g{g}", {"B": B, "gamma": g, "runs": p["runs"],
                                               "r_sim": p["r_sim"], "r_max": p["r_max"]}, one)
    return out


def _p1_panel(ax, r, p, B, g):
    ax.loglog(r["r"], r["exact"], "C0-", label="exact recursion, one W (closed form)")
    ax.loglog(r["r"], r["de"], "C1--", lw=1.0, label="deterministic equivalent")
    ax.errorbar(p["r_sim"], r["sim"], yerr=r["sem"], fmt="ko", ms=3,
                label=f"SGD on the same W, {p['runs']} runs")
    ax.axhline(r["p_inf"], color="0.5", lw=0.8, ls=":", label="plateau P*/(1 − ‖K‖)")
    ax.set(xlabel="r (steps)", ylabel="E P(θ_r)",
           title=f"α = 1, β = 0.7, v = 200, d = 50, B = {B}, γ = {g:g}")


def _figure(n, fill, path, small):
    """n panels filled by ``fill(axes)``, each with its legend, saved at ``path``."""
    with style() as plt:
        fig, axes = panels(plt, n)
        fill(axes)
        for ax in axes:
            ax.legend()
        return [save(fig, path, small=small)]


def p1_plot(d, p, out, small):
    def fill(axes):
        for ax, (B, g) in zip(axes, p["settings"]):
            _p1_panel(ax, d[f"{B}-{g}"], p, B, g)
    return _figure(len(p["settings"]), fill, out / "figP1.png", small)


def p1_checks(d, p):
    out = []
    for B, g in p["settings"]:
        z = float(np.max(np.abs(d[f"{B}-{g}"]["z"])))
        out.append(check(f"B = {B}, γ = {g:g}: max |z| of SGD against the recursion", z, "< 4", z < 4,
                         tol="|z| < 4 at every r",
                         ref=f"simulation: {p['runs']} seeded runs on the same W; z = (mean − theory)/SE, "
                             f"{len(p['r_sim'])} values of r far from the stability edge"))
    return out


FIGP1 = Figure("P1", "Power-law random features: the expected loss against SGD",
               "The expected loss of one-pass SGD on one draw of the features W (the per-mode recursion in "
               "closed form, any r) against seeded SGD runs on the same W, for a single sample per step and "
               "for batches of four; the dashed line is the deterministic equivalent (the average over W) and "
               "the dotted one the plateau P*/(1 − ‖K‖) that constant-step SGD ends on.",
               full={"settings": [[1, 0.2], [4, 0.12]], "runs": 2000, "r_max": 1e5,
                     "r_sim": [1, 3, 10, 30, 100, 300, 1000]},
               small={"settings": [[1, 0.2], [4, 0.12]], "runs": 200, "r_max": 1e4,
                      "r_sim": [1, 3, 10, 30, 100]},
               compute=p1_compute, plot=p1_plot, checks=p1_checks, overlay=True,
               data_note="Not a figure of the power-law-spectra paper: the power-law random-features "
                         "companion theory (one-pass SGD, compute-optimal scaling).")


# ---- P2: the phase diagram ---------------------------------------------------------------------

def p2_compute(p, piece):
    def grid():
        from derive import plrf as D
        a = np.linspace(0.02, 1.5, p["n"])
        b = np.linspace(0.02, 1.6, p["n"])
        phase = [[D.phase_of(float(x), float(y)) for x in a] for y in b]
        cont = []
        import sympy as sp
        half, quarter = sp.Rational(1, 2), sp.Rational(1, 4)
        for left, right, sub in (("Ia", "II", {D.beta: half}), ("II", "III", {D.beta: D.alpha}),
                                 ("III", "IVb", {D.alpha: half}), ("Ib", "IVb", {D.beta: half}),
                                 ("IVa", "Ic", {D.alpha: quarter}), ("Ia", "Ib", {D.alpha: half})):
            e1, e2 = D.exponents(left)[1].subs(sub), D.exponents(right)[1].subs(sub)
            cont.append(bool(sp.simplify(e1 - e2) == 0))
        return {"alpha": a.tolist(), "beta": b.tolist(), "phase": phase, "eta_continuous": cont}
    return piece("grid", {"n": p["n"]}, grid)


def p2_plot(d, p, out, small):
    from derive import plrf as D
    names = list(D.PHASES)
    a, b = np.array(d["alpha"]), np.array(d["beta"])
    Z = np.array([[np.nan if ph is None else names.index(ph) for ph in row] for row in d["phase"]])
    with style() as plt:
        fig, (ax,) = panels(plt, 1, width=6.4)
        ax.pcolormesh(a, b, Z, cmap="tab10", vmin=0, vmax=9, shading="auto")
        for k, ph in enumerate(names):
            sel = Z == k
            if sel.any():
                A, Bm = np.meshgrid(a, b)
                ax.text(A[sel].mean(), Bm[sel].mean(), ph, ha="center", va="center", weight="bold")
        ax.plot([0, 0.5], [0.5, 0], "k-", lw=1.0)
        ax.set(xlabel="α (σ_j = j^−2α)", ylabel="β (b_j = j^−β)",
               title="phases of compute-optimal scaling (white: no scaling law / not classified)")
        return [save(fig, out / "figP2.png", small=small)]


def p2_checks(d, p):
    ok = all(d["eta_continuous"])
    return [check("η continuous across the six phase boundaries", ok, True, ok, tol="exact (SymPy)",
                  ref="the exponents of derive.plrf evaluated on each boundary from both sides")]


FIGP2 = Figure("P2", "Power-law random features: the phase diagram",
               "The (α, β) plane split into the phases of compute-optimal scaling (exact classification of "
               "derive.plrf); below the line α + β = ½ there is no scaling law. Each phase names the two loss "
               "terms whose crossing sets the optimal model size.",
               full={"n": 240}, small={"n": 60},
               compute=p2_compute, plot=p2_plot, checks=p2_checks,
               data_note="Not a figure of the power-law-spectra paper: the power-law random-features "
                         "companion theory.")


# ---- P3: the compute-optimal frontier ----------------------------------------------------------

def p3_compute(p, piece):
    from solvers.theory.plrf.frontier import frontier
    out = {}
    for a, b in p["points"]:
        def one(a=a, b=b):
            fr = frontier(a, b, p["ds"], cells=tuple(p["cells"]), f=np.geomspace(1e3, 1e12, 109))
            return {k: fr[k] for k in ("f", "d_star", "loss_star", "xi", "xi_se", "eta", "eta_se",
                                       "predicted")}
        out[f"{a}-{b}"] = piece(f"a{a}-b{b}", {"ds": p["ds"], "cells": p["cells"], "ab": [a, b]}, one)
    return out


def p3_plot(d, p, out, small):
    def fill(axes):
        for j, (a, b) in enumerate(p["points"]):
            r = d[f"{a}-{b}"]
            f = np.array(r["f"])
            lab = f"{r['predicted']['phase']} (α = {a:g}, β = {b:g})"
            axes[0].loglog(f, r["d_star"], f"C{j}o", ms=3)
            c = np.polyfit(np.log(f), np.log(r["d_star"]), 1)
            axes[0].loglog(f, np.exp(np.polyval(c, np.log(f))), f"C{j}-",
                           label=f"{lab}: ξ = {r['xi']:.3f} ± {r['xi_se']:.3f} (predicted "
                                 f"{r['predicted']['xi']:.3f})")
            axes[1].loglog(f, r["loss_star"], f"C{j}o", ms=3,
                           label=f"{lab}: η = {r['eta']:.3f} (predicted {r['predicted']['eta']:.3f})")
        axes[0].set(xlabel="compute f = B d r", ylabel="d*(f)",
                    title=f"optimal size, d = {p['ds'][0]}…{p['ds'][-1]}")
        axes[1].set(xlabel="compute f = B d r", ylabel="loss at d*", title="compute-optimal loss")
    return _figure(2, fill, out / "figP3.png", small)


def p3_checks(d, p):
    out = []
    for a, b in p["points"]:
        r = d[f"{a}-{b}"]
        dev = abs(r["xi"] - r["predicted"]["xi"])
        out.append(check(f"{r['predicted']['phase']} (α = {a:g}, β = {b:g}): |ξ − predicted|", dev, "< 0.03",
                         dev < 0.03, tol="< 0.03",
                         ref="the asymptotic trade-off of derive.plrf; finite-size drift of 0.01-0.02 at "
                             "d ≤ 1600 (measured on two ladders)"))
    return out


FIGP3 = Figure("P3", "Power-law random features: the compute-optimal frontier",
               "At compute f = B·d·r the model size that minimises the loss grows like f^ξ: measured from "
               "deterministic-equivalent loss curves on a ladder of d (v = 4d, γ = 0.5/Σσ, B = 1), with the "
               "fitted exponent next to the phase's prediction, in phase II (the population term against the "
               "embedding distortion) and phase III (SGD noise against the distortion).",
               full={"points": [[1.0, 0.7], [1.0, 1.5]],
                     "ds": [int(round(100 * 2 ** (k / 2))) for k in range(9)], "cells": [250, 1000]},
               small={"points": [[1.0, 0.7], [1.0, 1.5]], "ds": [100, 141, 200, 283, 400],
                      "cells": [80, 250]},
               compute=p3_compute, plot=p3_plot, checks=p3_checks,
               data_note="Not a figure of the power-law-spectra paper: the power-law random-features "
                         "companion theory.")

FIGURES = [FIGP1, FIGP2, FIGP3]
