"""The paper's Figure 1: ε_g(α) for K = M = 2, η = 0.1, β = 1, σ_J = 0.01, N = 1024.

One random realisation (seed 0) per L ∈ {1, 4, 16, 64}, solved in the modes basis in float64:
it is the fastest correct basis (the level basis needs ~2.6 L extra digits; see docs/theory/online-sgd.md),
and tests/test_backbone.py checks it against the level basis at high precision.
Writes ``figure1.png`` and ``figure1.csv`` (and ``plateau.csv``, the measured plateau lengths).
"""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
from derive import spectra
from derive.keys import SystemKey

from solvers.core.progress import Progress
from solvers.hierarchy.odes import integrate_problem
from solvers.core.problem import Problem, random_init

LS = (1, 4, 16, 64)


def figure1_problem(L: int, N: int = 1024, seed: int = 0) -> Problem:
    return Problem(SystemKey("erf", 2, 2), spectra.power_law(L, 1), Fraction(1, 10), 2,
                   random_init(2, 2, N, spectra.power_law(L, 1), Fraction(1, 100), seed))


def plateau_length(alpha, eps, flat_slope: float = 0.1, start: float = 50.0) -> float:
    """α-measure of the plateau: where -d ln ε_g / d ln α < ``flat_slope`` after ``start``.

    On a plateau ε_g is flat; in the power-law phase the slope is about β/(1+β) (0.5 here) and
    in the exponential phase larger, so the threshold separates them for the paper's figures.
    """
    alpha, eps = np.asarray(alpha, float), np.asarray(eps, float)
    keep = alpha >= start
    a, e = alpha[keep], eps[keep]
    slope = -np.gradient(np.log(e), np.log(a))
    flat = slope < flat_slope
    widths = np.diff(a)
    return float(np.sum(widths[flat[:-1] & flat[1:]]))


ALPHA_MAX_RANGE = (100.0, 1e5)   # the plateau measure starts at α = 50; time grows with α


def check_alpha_max(alpha_max: float) -> None:
    lo, hi = ALPHA_MAX_RANGE
    if not (math.isfinite(alpha_max) and lo <= alpha_max <= hi):
        raise ValueError(f"--alpha-max = {alpha_max!r} must be a finite number between {lo:g} "
                         f"and {hi:g}")


def run_demo(out: Path, alpha_max: float = 3500.0, n_points: int = 701, Ls=LS, N: int = 1024,
             progress=True) -> dict:
    """Figure 1 into ``out``; ``progress``: True / False or a
    :class:`solvers.core.progress.Progress` (one phase per curve, "L = 16 (curve 3/4)")."""
    check_alpha_max(alpha_max)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    alphas = np.linspace(0.0, alpha_max, n_points)
    curves, lengths = {}, {}
    # one labelled phase per curve, each over alpha (a Progress may be passed in as well)
    shown = progress if isinstance(progress, Progress) else Progress("Figure 1",
                                                                       enabled=bool(progress))
    for i, L in enumerate(Ls, 1):
        with shown.phase(f"L = {L} (curve {i}/{len(Ls)})", alpha_max) as tick:
            traj = integrate_problem(figure1_problem(L, N), alphas, basis="modes",
                                     arithmetic="float64", rtol=1e-12, progress=tick)
        curves[L] = traj.eps_float()
        lengths[L] = plateau_length(alphas, curves[L])
    header = "alpha," + ",".join(f"eps_g_L{L}" for L in Ls)
    np.savetxt(out / "figure1.csv", np.column_stack([alphas] + [curves[L] for L in Ls]),
               delimiter=",", header=header, comments="")
    with open(out / "plateau.csv", "w") as fh:
        fh.write("L,plateau_length\n")
        fh.writelines(f"{L},{lengths[L]:.6g}\n" for L in Ls)
    _plot(out / "figure1.png", alphas, curves, lengths)
    return {"alpha": alphas, "eps_g": curves, "plateau_length": lengths,
            "png": out / "figure1.png", "csv": out / "figure1.csv"}


def plateau_label(L, alphas, eps, length):
    """Legend text for the flat-slope measure: a shoulder that never gets flatter than slope 0.1
    measures 0 (said so, not "plateau ≈ 0"), and a flat stretch still going at α_max is cut
    there (said so: the length is then a lower bound)."""
    if length == 0:
        return f"L = {L} (no stretch flatter than slope 0.1)"
    end = -np.diff(np.log(eps[-2:]))[0] / np.diff(np.log(alphas[-2:]))[0]
    cut = " (cut at α_max: a lower bound)" if end < 0.1 else ""
    return f"L = {L} (slope < 0.1 for Δα ≈ {length:.0f}{cut})"


def _plot(path, alphas, curves, lengths):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for L, eps in curves.items():
        ax.semilogy(alphas[1:], eps[1:], label=plateau_label(L, alphas, eps, lengths[L]))
    ax.set_xlabel(r"$\alpha$")
    ax.set_ylabel(r"$\epsilon_g$")
    ax.set_title(r"ODE theory, $K=M=2$, $\eta=0.1$, $\beta=1$, $\sigma_J=0.01$, $N=1024$")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
