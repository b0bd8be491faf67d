"""Feature scaling — only N_l input directions trainable (§4.3, App. B.3): Figures 3, 14, 16.

Theory from solvers.theory.feature_scaling (Eqs. 10, 71-79, 88), simulations from
solvers.sim.simulate (eigenbasis mask) and, for real data, a vectorised online-SGD loop over
replicas on the eigen-coordinates of a data set (moved here from notebooks/07_more_overlays).
CIFAR-5m is not available on this machine: scikit-learn's digits (8×8 images, N = 64) stands in.
"""
from __future__ import annotations

import numpy as np

from .base import Figure, check, slope
from .common import eigenvalues, log_grid, finite_size_bound, sim_dev
from .style import style, panels, save, one_panel, ALPHA, EPS

DIGITS_NOTE = ("CIFAR-5m (the paper's data) is not available here; scikit-learn's digits data set "
               "(1797 images of 8×8 pixels, N = 64) is used instead, with its own measured spectrum.")


def _digits():
    from solvers.theory import realdata as rd
    X = rd.load_inputs("digits")
    sp = rd.empirical_spectrum(X)
    return sp.project(X), sp.eigenvalues


def sgd_on_data(Z, lam, N_ls, seeds, eta, sigma_J, alpha_max, n_alpha, seed=3):
    """Linear K = M = 1 online SGD on rows of Z (eigen-coordinates, covariance diag(lam)), only the
    first N_l coordinates of J trained, all (N_l, seed) replicas in one vectorised loop.
    Returns (alpha, eps (len(N_ls), seeds, n_alpha)); ε_g is evaluated exactly on the spectrum."""
    N = lam.size
    rng = np.random.default_rng(seed)
    R = len(N_ls) * seeds
    mask = np.zeros((R, N))
    for j, n in enumerate(N_ls):
        mask[j * seeds:(j + 1) * seeds, :n] = 1.0
    e0 = sigma_J * rng.standard_normal((seeds, N)) - rng.standard_normal((seeds, N))   # J − B
    E = np.tile(e0, (len(N_ls), 1))
    steps = np.unique(np.rint(log_grid(1, alpha_max, n_alpha, with_zero=True) * N).astype(np.int64))
    rec, done, c = [], 0, eta / N
    for target in steps:
        for _ in range(done, target):
            zb = Z[rng.integers(0, Z.shape[0], size=R)]
            d = np.einsum("ra,ra->r", E, zb)
            E -= (c * d)[:, None] * zb * mask
        done = target
        rec.append(0.5 * (E * E * lam).sum(axis=1) / N)
    rec = np.array(rec).T.reshape(len(N_ls), seeds, -1)
    return steps / N, rec


# ---- Figure 3 ---------------------------------------------------------------------------------

def fig3_compute(p, piece):
    from solvers.sim.simulate import simulate
    from solvers.theory import feature_scaling as fs
    q = p["left"]
    lam = eigenvalues(q["N"], q["beta"])
    grid = log_grid(1, q["alpha_max"], q["n_alpha"], with_zero=True)
    left = {}
    for n in q["N_ls"]:
        def one(n=n):
            runs = [simulate(activation="linear", K=1, M=1, N=q["N"], eta=q["eta"], sigma_J=q["sigma_J"], seed=s,
                             alphas=grid, eigenvalues=lam, n_trainable=n, untrainable="frozen")
                    for s in range(q["seeds"])]
            a = runs[0].alpha
            return {"alpha": a, "sim": np.mean([r.eps_g for r in runs], axis=0),
                    "sim_se": np.std([r.eps_g for r in runs], axis=0, ddof=1) / np.sqrt(q["seeds"]),
                    "ode": fs.eps_g_masked_modes(a, lam, q["N"], n, q["eta"], q["sigma_J"], order=2),
                    "eq79": fs.eps_g_em(a, q["N"], q["beta"], n, q["eta"], q["sigma_J"])}
        left[str(n)] = piece(f"left-Nl{n}", q | {"N_l": n}, one)
    r = p["right"]

    def right():
        Z, lamd = _digits()
        from solvers.theory import realdata as rd
        beta, beta_err = rd.fit_beta(lamd)
        a, E = sgd_on_data(Z, lamd, r["N_ls"], r["seeds"], r["eta"], r["sigma_J"], r["alpha_max"], r["n_alpha"])
        out = {"alpha": a, "beta_fit": beta, "beta_err": beta_err, "N": int(lamd.size), "curves": {}}
        for j, n in enumerate(r["N_ls"]):
            out["curves"][str(n)] = {"sim": E[j].mean(0), "ode": fs.eps_g_masked_modes(a, lamd, lamd.size, n, r["eta"], r["sigma_J"], order=2),
                                     "eq78": fs.eps_g_eigenbasis(a, lamd, lamd.size, n, r["eta"], r["sigma_J"])}
        return out
    return {"left": left, "right": piece("right-digits", r, right)}


def fig3_plot(d, p, out, small):
    with style() as plt:
        fig, (a1, a2) = panels(plt, 2)
        q = p["left"]
        for j, n in enumerate(q["N_ls"]):
            c = d["left"][str(n)]
            a = np.asarray(c["alpha"])[1:]
            a1.loglog(a, np.asarray(c["sim"])[1:], f"C{j}", label=f"N_l = {n}")
            a1.loglog(a, np.asarray(c["ode"])[1:], "k--", lw=0.8)
            a1.loglog(a, np.asarray(c["eq79"])[1:], "k:", lw=0.8)
        a1.set(xlabel=ALPHA, ylabel=EPS, title=f"synthetic: N = L = {q['N']}, β = {q['beta']}, η = {q['eta']}, {q['seeds']} seeds")
        a1.legend(title="solid: SGD; dashed: ODE; dotted: Eq. (79)")
        r, dr = p["right"], d["right"]
        for j, n in enumerate(r["N_ls"]):
            c = dr["curves"][str(n)]
            a = np.asarray(dr["alpha"])[1:]
            a2.loglog(a, np.asarray(c["sim"])[1:], f"C{j}", label=f"N_l = {n}")
            a2.loglog(a, np.asarray(c["ode"])[1:], "k--", lw=0.8)
        a2.set(xlabel=ALPHA, ylabel=EPS, title=f"digits (not CIFAR-5m): N = {dr['N']}, β ≈ {dr['beta_fit']:.2f}, {r['seeds']} seeds")
        a2.legend(title="dashed: theory on the measured spectrum")
        return [save(fig, out / "fig03.png", small=small, note="right: scikit-learn digits stands in for CIFAR-5m")]


def fig3_checks(d, p):
    q, r = p["left"], p["right"]
    out = []
    for n in q["N_ls"]:
        c = d["left"][str(n)]
        dev = sim_dev(c["sim"], c["ode"])
        bound = finite_size_bound(q["N"])
        out.append(check(f"synthetic N_l = {n}: rms rel. dev. SGD mean vs order-2 ODE", dev, f"< 3/√N = {bound:.3g}", dev < bound,
                         tol=f"< 3/√N = {bound:.3g}",
                         ref="the order-2 ODE (modes basis); 3/√N: the finite-size criterion of "
                             "tests/test_sim_vs_ode.py"))
    devs = {n: sim_dev(d["right"]["curves"][str(n)]["sim"], d["right"]["curves"][str(n)]["ode"]) for n in r["N_ls"]}
    out.append(check("digits: rms rel. dev. SGD mean vs theory on the measured spectrum, per N_l", devs,
                     f"< 3/√N = {finite_size_bound(d['right']['N']):.3g}", max(devs.values()) < finite_size_bound(d["right"]["N"]),
                     "real inputs are not Gaussian: the Gaussian theory need not hold exactly",
                     tol=f"max < 3/√N = {finite_size_bound(d['right']['N']):.3g}",
                     ref="the Gaussian theory on the measured spectrum; 3/√N: the finite-size criterion of "
                         "tests/test_sim_vs_ode.py (at N = 64 it also bounds the non-Gaussian mismatch)"))
    out.append(check("digits: fitted β (paper's CIFAR-5m: ≈ 0.3)", d["right"]["beta_fit"]))
    return out


FIG3 = Figure(3, "Only N_l input directions trainable: ε_g(α) on synthetic data and on real data",
              "Left: the linear student with its first N_l eigen-directions trainable (the rest frozen at their random "
              "initial values), SGD vs the order-2 ODE and Eq. (79). Right: the same on real images.",
              full={"left": {"N": 256, "beta": 1.0, "eta": 0.05, "sigma_J": 0.01, "N_ls": [50, 100, 150, 200], "seeds": 20,
                             "alpha_max": 1e4, "n_alpha": 50},
                    "right": {"eta": 0.05, "sigma_J": 0.01, "N_ls": [4, 8, 16, 32, 48], "seeds": 50, "alpha_max": 1e4, "n_alpha": 40}},
              small={"left": {"N": 16, "beta": 1.0, "eta": 0.05, "sigma_J": 0.01, "N_ls": [4, 8], "seeds": 3,
                              "alpha_max": 100.0, "n_alpha": 10},
                     "right": {"eta": 0.05, "sigma_J": 0.01, "N_ls": [8, 32], "seeds": 3, "alpha_max": 20.0, "n_alpha": 8}},
              compute=fig3_compute, plot=fig3_plot, checks=fig3_checks, overlay=True, data_note=DIGITS_NOTE,
              errata="Eq. (79) as printed is corrected (see notebooks/04_feature_scaling). The paper does not state "
                     "the number of seeds for the left panel; 20 are used.")


# ---- Figure 14 --------------------------------------------------------------------------------

def fig14_compute(p, piece):
    def spec():
        from solvers.theory import realdata as rd
        _, lam = _digits()
        beta, err = rd.fit_beta(lam)
        return {"lam": lam, "beta": beta, "beta_err": err}
    return piece("digits-spectrum", p, spec)


def fig14_plot(d, p, out, small):
    lam = np.asarray(d["lam"])
    N = lam.size
    with style() as plt:
        fig, (ax,) = panels(plt, 1, width=5.6)
        k = np.arange(1, N + 1)
        ax.loglog(k, lam, "C0o", ms=3, label=f"digits covariance spectrum (N = {N})")
        ax.loglog(k, eigenvalues(N, round(d["beta"], 3)), "C1--", label=f"Eq. (1), fitted β = {d['beta']:.2f}")
        ax.loglog(k, eigenvalues(N, 0.3), "k:", lw=0.9, label="Eq. (1), β = 0.3 (paper's CIFAR-5m value)")
        ax.set(xlabel="l", ylabel=r"$\lambda_l$ (mean 1)", title="data spectrum vs power law")
        ax.legend()
        return [save(fig, out / "fig14.png", small=small, note="scikit-learn digits stands in for CIFAR-5m")]


def fig14_checks(d, p):
    return [check("fitted β of the digits spectrum (l ≤ N/2) ± std. error", [d["beta"], d["beta_err"]], None, None,
                  "the paper reads β ≈ 0.3 off CIFAR-5m"),
            check("spectrum mean (normalisation, Tr Σ = N)", float(np.mean(d["lam"])), 1.0, abs(np.mean(d["lam"]) - 1) < 1e-12,
                  tol="|Δ| < 1e-12 (float64 rounding of a mean)",
                  ref="the normalisation Tr Σ = N imposed on the measured spectrum (the model's convention)")]


FIG14 = Figure(14, "Spectrum of a real data set vs the power law Eq. (1)",
               "Eigenvalues of the feature-feature covariance of a real image data set against λ_l ∝ l^−(1+β).",
               full={"dataset": "digits"}, small={"dataset": "digits"},
               compute=fig14_compute, plot=fig14_plot, checks=fig14_checks, data_note=DIGITS_NOTE)


# ---- Figure 16 --------------------------------------------------------------------------------

def fig16_compute(p, piece):
    from solvers.theory import feature_scaling as fs
    N, out = p["N"], {}
    N_ls = sorted(set(int(x) for x in np.geomspace(p["Nl_min"], N // 2, p["n_Nl"])))
    for beta in p["betas"]:
        lam = eigenvalues(N, beta)
        chunks = []
        for c in range(0, p["n_W"], p["W_chunk"]):
            n = min(p["W_chunk"], p["n_W"] - c)
            chunks.append(piece(f"b{beta}-W{c}", {"N": N, "beta": beta, "N_ls": N_ls, "n_W": n, "seed": 1 + c},
                                lambda n=n, c=c: {"samples": fs.eq88_average(lam, N, N_ls, p["sigma_J"], n, seed=1 + c)[2]}))
        S = np.concatenate([np.asarray(ch["samples"], float).reshape(-1, len(N_ls)) for ch in chunks], axis=0)
        out[str(beta)] = {"N_ls": N_ls, "eq88": S.mean(0), "eq88_se": S.std(0, ddof=1) / np.sqrt(S.shape[0]),
                          "eq74": [fs.eps_asymp_em(N, beta, n, p["sigma_J"])[0] for n in N_ls],
                          "exact": [fs.eps_asymp_eigenbasis(lam, N, n, p["sigma_J"]) for n in N_ls]}
    return out


def fig16_plot(d, p, out, small):
    def draw(ax):
        for j, beta in enumerate(p["betas"]):
            r = d[str(beta)]
            ax.loglog(r["N_ls"], r["eq74"], f"C{j}", label=f"β = {beta}: Eq. (74)")
            ax.errorbar(r["N_ls"], r["eq88"], yerr=r["eq88_se"], fmt=f"C{j}--", lw=1)
        ax.set(xlabel=r"$N_l$", ylabel=r"$\epsilon_{g,\mathrm{asymp}}$",
               title=f"N = L = {p['N']}; dashed: Eq. (88), mean of {p['n_W']} random Σ")

    return one_panel(out, "fig16.png", small=small, width=6.0, draw=draw)


_REF_FIT_TOL = ("15 % of max(β, 0.3): a log-log fit over N_l ≤ N/16 of a discrete sum whose integral "
                "approximation Eq. (74) is itself up to 10 % off in value (the max rel. rows)")
_REF_FIT = "the paper's N_l^−β law (Eqs. 71/74); " + _REF_FIT_TOL


def fig16_checks(d, p):
    from solvers.theory import feature_scaling as fs
    out = []
    for beta in p["betas"]:
        r = d[str(beta)]
        sel = [i for i, n in enumerate(r["N_ls"]) if n <= p["N"] // 16]
        pick = lambda v: [v[i] for i in sel]   # noqa: E731
        b_eig = fs.fit_exponent(pick(r["N_ls"]), pick(r["exact"]))
        b_rot = fs.fit_exponent(pick(r["N_ls"]), pick(r["eq88"]))
        b_74 = fs.fit_exponent(pick(r["N_ls"]), pick(r["eq74"]))
        tol = 0.15 * max(beta, 0.3)
        # Eq. (74) is (s λ+/2Lβ)(n^-β − L^-β): a pure power N_l^-β only where N_l^β ≪ N^β (the
        # paper's condition).  At β = 0.3, N = 1024 that fails ((N_l/N)^β = 0.23..0.44 on the fit
        # range), so the pure-β fit is reported and the claim is checked in the form Eq. (74) makes.
        cond = (max(pick(r["N_ls"])) / p["N"]) ** beta
        out.append(check(f"β = {beta}: fitted N_l exponent, eigenbasis (Eq. 71) | rotated Σ (Eq. 88) vs pure β",
                         [b_eig, b_rot], f"β = {beta} where (N_l/N)^β ≪ 1",
                         None if cond > 0.25 else abs(b_eig - beta) < tol,
                         f"(N_l,max/N)^β = {cond:.2f}" + ("; the condition N_l^β ≪ N^β fails: no pass/fail"
                                                           if cond > 0.25 else ""),
                         tol=None if cond > 0.25 else f"|Δ| < {tol:.3g} (eigenbasis fit)",
                         ref=None if cond > 0.25 else _REF_FIT))
        out.append(check(f"β = {beta}: fitted exponent, exact eigenbasis sum vs Eq. (74) on the same N_l (finite-L term included)",
                         [b_eig, b_74], f"|Δ| < {tol:.3g}", abs(b_eig - b_74) < tol, tol=f"|Δ| < {tol:.3g}",
                         ref="Eq. (74) (closed form, the integral approximation of the sum) fitted on the "
                             "same N_l; " + _REF_FIT_TOL))
        lp = fs._lambda_plus(p["N"], beta)
        const = 0.5 * (1 + p["sigma_J"] ** 2) * lp / p["N"] * p["N"] ** -beta / beta
        b_res = fs.fit_exponent(pick(r["N_ls"]), [v + const for v in pick(r["exact"])])
        out.append(check(f"β = {beta}: exponent of the exact sum with Eq. (74)'s finite-L constant added back",
                         b_res, f"β = {beta} ± {tol:.3g}", abs(b_res - beta) < tol, tol=f"|Δ| < {tol:.3g}",
                         ref=_REF_FIT))
        dev = float(np.max(np.abs(np.asarray(r["eq74"]) / np.asarray(r["exact"]) - 1)))
        out.append(check(f"β = {beta}: Eq. (74) vs exact eigenbasis sum, max rel.", dev))
    return out


FIG16 = Figure(16, "Asymptotic error vs the number of trainable directions N_l",
               "ε_g,asymp(N_l) for training in the eigenbasis (Eq. 74) and for a general (rotated) covariance "
               "(Eq. 88, averaged over random Haar rotations).",
               full={"N": 1024, "betas": [0.3, 0.75, 1.0, 1.5], "sigma_J": 0.01, "n_W": 20, "W_chunk": 5,
                     "Nl_min": 8, "n_Nl": 9},
               small={"N": 64, "betas": [0.75, 1.5], "sigma_J": 0.01, "n_W": 4, "W_chunk": 2, "Nl_min": 2, "n_Nl": 5},
               compute=fig16_compute, plot=fig16_plot, checks=fig16_checks,
               errata="The paper averages Eq. (88) over 100 covariance matrices; 20 are used here (4.3 s CPU each at "
                      "N = 1024 on this machine); the standard error of the mean is drawn as error bars. "
                      "The exponent: ε ∝ N_l^−β holds only where N_l^β ≪ N^β (the paper's own condition); Eq. (74) is "
                      "(n^−β − L^−β)/β, whose local slope β/(1 − (N_l/N)^β) exceeds β. At β = 0.3, N = 1024 the condition "
                      "fails on the whole fit range (N^0.3 ≈ 8), so the fitted exponent (≈ 0.44) is compared with Eq. (74) "
                      "fitted on the same N_l and, with the finite-L constant added back, with β (checks below).")

FIGURES = [FIG3, FIG14, FIG16]
