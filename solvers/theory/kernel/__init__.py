"""Kernel / Gaussian-process learning curves on power-law spectra: the lazy baseline.

    from solvers.theory.kernel import power_law, eigenlearning, learning_curves, kernel_mc
    spec = power_law(a=2, M=2000, b=2)
    pts = eigenlearning(spec, [16, 64, 256], T=1e-2, sigma2=1e-2)   # κ, κ_S, γ, E_g per P
    res = learning_curves(spec, [16, 64], ridge=1e-2, noise=1e-2)    # all methods, as the CLI
    mc = kernel_mc(spec, [16, 64], ridge=1e-2, noise=1e-2, trials=32) # Gaussian-design oracle

Conventions and equations: ``derive/kernel.py`` and ``docs/theory/kernel-curves.md``.
"""
from solvers.theory.kernel.spectrum import KernelSpectrum, explicit, levels, power_law
from solvers.theory.kernel.eigenlearning import (KernelError, Point, eigenlearning,
                                                 eigenlearning_mp, learnabilities, solve_kappa,
                                                 solve_kappa_mp, solve_kappa_S_mp)
from solvers.theory.kernel.rg import (Approx, decimation_cut, equivalent_kernel, rg_ek,
                                      rg_gda)
from solvers.theory.kernel.curves import METHODS, LABELS, learning_curves

__all__ = ["KernelSpectrum", "explicit", "levels", "power_law", "KernelError", "Point",
           "eigenlearning", "eigenlearning_mp", "learnabilities", "solve_kappa",
           "solve_kappa_mp", "solve_kappa_S_mp", "Approx", "decimation_cut",
           "equivalent_kernel", "rg_ek", "rg_gda", "METHODS", "LABELS", "learning_curves",
           "kernel_mc", "kernel_mc_averaged", "mc_learnability"]


def __getattr__(name):
    # the Monte-Carlo oracle pulls in scipy.linalg; load it on first use
    if name in ("kernel_mc", "kernel_mc_averaged", "mc_learnability"):
        from solvers.theory.kernel import montecarlo
        return getattr(montecarlo, name)
    raise AttributeError(name)
