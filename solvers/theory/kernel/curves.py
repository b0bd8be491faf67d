"""Learning curves of several methods over a list of P: the result the CLI prints as JSON."""
from __future__ import annotations

import time

import mpmath

from solvers.theory.kernel.eigenlearning import KernelError, _Prepared, eigenlearning
from solvers.theory.kernel.rg import equivalent_kernel, rg_ek, rg_gda
from solvers.theory.kernel.spectrum import KernelSpectrum

METHODS = ("eig", "ek", "rg_ek", "rg_gda")
LABELS = {
    "eig": "eigenlearning / Gaussian discrepancy approximation (kappa from the fixed-point form)",
    "ek": "equivalent kernel (kappa_S = T/P, 1/(1-gamma) dropped; gamma = noise factor)",
    "rg_ek": "decimation RG, literal reading: decimate to learnability rg_cut, then equivalent "
             "kernel at T(cut) (keeps the exponent, not the prefactor)",
    "rg_gda": "decimation RG, decimated ridge T(cut) and noise sigma^2 + UV power, kept modes by "
              "eigenlearning (equals eig to O(rg_cut))",
}


def check_problem(spec: KernelSpectrum, Ps, ridge, noise):
    """The input rules shared by the theory and the Monte Carlo (KernelError on violation)."""
    for P in Ps:
        if not P > 0:
            raise KernelError(f"P = {P} must be > 0")
    if ridge < 0:
        raise KernelError(f"ridge = {float(ridge)} must be >= 0")
    if noise < 0:
        raise KernelError(f"noise = {float(noise)} must be >= 0")
    if ridge == 0 and noise > 0:
        for P in Ps:
            if P == spec.modes:
                raise KernelError(f"ridgeless noisy regression at P = {P} = rank {spec.modes} "
                                  f"of the kernel: the test error is infinite (give ridge > 0)")


def learning_curves(spec: KernelSpectrum, Ps, ridge=0.0, noise=0.0, methods=METHODS,
                    rg_cut=0.01, learnability=False) -> dict:
    """κ, κ_S, γ and ε_g (excess test error) for each method and P.

    Returns a dict with keys ``P``, ``kappa``, ``kappa_S``, ``gamma``, ``eps_g`` (each a dict
    method -> list over P; floats, or 17-digit decimal strings on the mpmath route, whose values
    may lie beyond the double range), optionally ``learnability`` (eigenlearning L_k per group
    and P) and ``meta``.
    """
    started = time.perf_counter()
    Ps = [int(p) if float(p).is_integer() else float(p) for p in Ps]
    check_problem(spec, Ps, ridge, noise)
    for m in methods:
        if m not in METHODS:
            raise KernelError(f"unknown method {m!r} (allowed: {', '.join(METHODS)})")
    if not 0.0 < float(rg_cut) < 1.0:
        raise KernelError(f"rg_cut = {float(rg_cut)} must be in (0, 1)")
    from solvers.theory.kernel.eigenlearning import _float_exact, _mp
    exact_mp = not (spec.float64_ok and _float_exact(ridge) and _float_exact(noise))
    T, s2 = float(ridge), float(noise)
    out = {"P": list(Ps), "kappa": {}, "kappa_S": {}, "gamma": {}, "eps_g": {}}
    def _show(v, f):
        if _float_exact(v):
            return f
        with mpmath.workdps(30):
            return mpmath.nstr(_mp(v), 17)
    meta = {"spectrum": spec.describe(), "ridge": _show(ridge, T), "noise": _show(noise, s2),
            "rg_cut": float(rg_cut),
            "methods": {m: LABELS[m] for m in methods}}
    needs_float = [m for m in methods if m != "eig"]
    if needs_float and exact_mp:
        raise KernelError(f"methods {', '.join(needs_float)} need a spectrum, ridge and noise "
                          f"inside the float64 range (only 'eig' runs in mpmath)")
    prep = None if exact_mp else _Prepared(spec)
    eig_pts = None
    for m in methods:
        if m == "eig":
            pts = eig_pts = eigenlearning(spec, Ps, ridge if exact_mp else T,
                                          noise if exact_mp else s2, prepared=prep)
            meta["precision"] = "mpmath" if exact_mp else "float64"
            meta["kappa_rel_err_max"] = max(p.rel_err for p in pts)
            if exact_mp:
                # values may lie outside the double range: 17-digit decimal strings
                for key in ("kappa", "kappa_S", "gamma", "eps_g"):
                    out[key][m] = [mpmath.nstr(p.mp[key], 17) for p in pts]
                continue
        elif m == "ek":
            pts = equivalent_kernel(prep, Ps, T, s2)
        elif m == "rg_ek":
            pts = rg_ek(prep, Ps, T, s2, float(rg_cut))
            meta["rg_kept_modes"] = [p.kept_modes for p in pts]
        else:
            pts = rg_gda(prep, Ps, T, s2, float(rg_cut))
            meta["rg_kept_modes"] = [p.kept_modes for p in pts]
        for key, attr in (("kappa", "kappa"), ("kappa_S", "kappa_S"), ("gamma", "gamma"),
                          ("eps_g", "eps_g")):
            out[key][m] = [float(getattr(p, attr)) for p in pts]
    if learnability:
        if exact_mp:
            raise KernelError("learnability output needs a spectrum, ridge and noise inside "
                              "the float64 range")
        if eig_pts is None:
            eig_pts = eigenlearning(spec, Ps, T, s2, prepared=prep)
        lam = spec.lam
        out["learnability"] = [[float(x) for x in lam / (lam + p.kappa_S)] if p.kappa_S > 0
                               else [1.0] * lam.size for p in eig_pts]
    meta["wall_time"] = time.perf_counter() - started
    out["meta"] = meta
    return out
