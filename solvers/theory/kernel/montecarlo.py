"""The Monte-Carlo oracle: exact kernel ridge regression on a Gaussian design.

Each mode k is a feature z_k ~ N(0, 1) (ψ_k = z_k is orthonormal under the design), the kernel
is K = Z diag(λ) Zᵀ on P samples, the labels y = Z c + σ ξ.  The posterior mean / KRR
predictor has coefficients ĉ = λ ⊙ Zᵀ (K + T)⁻¹ y, and its excess test error is exactly
E_g = Σ_k (c_k − ĉ_k)² (no test sampling).  Ridgeless (T = 0): the minimum-RKHS-norm
interpolant, ĉ = Λ^(1/2) pinv(Z Λ^(1/2)) y (least squares when P ≥ number of modes).

The target coefficients are c_k = +sqrt(c_k²); a sign pattern would not change the average
(the design is invariant under z_k → −z_k).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from threadpoolctl import threadpool_limits

from solvers.theory.kernel.curves import check_problem
from solvers.theory.kernel.eigenlearning import KernelError
from solvers.theory.kernel.spectrum import KernelSpectrum

MAX_MODES = 50_000
MAX_P = 20_000
MAX_ENTRIES = 60_000_000          # design P x M plus kernel P x P, float64: ~0.5 GB


def _modes(spec: KernelSpectrum):
    if spec.modes > MAX_MODES:
        raise KernelError(f"the Monte Carlo needs the expanded modes: {spec.modes} > "
                          f"{MAX_MODES} is too many")
    lam, c2 = spec.expanded()
    return lam, np.sqrt(c2)


def _fit(Z, lam, y, T, K=None):
    """ĉ for one design (Z: P x M) at ridge T (K = Z Λ Zᵀ if already known)."""
    P, M = Z.shape
    A = Z * np.sqrt(lam)
    if T == 0 and P >= M:
        w, *_ = np.linalg.lstsq(A, y, rcond=None)
        return np.sqrt(lam) * w
    K = A @ A.T if K is None else K.copy()      # numpy uses syrk for A Aᵀ
    if T > 0:
        K[np.diag_indices_from(K)] += T
    try:
        alpha = sla.cho_solve(sla.cho_factor(K, check_finite=False), y, check_finite=False)
    except np.linalg.LinAlgError:
        # numerically singular kernel matrix (ridgeless, tiny eigenvalues): minimum norm
        w, *_ = np.linalg.lstsq(A, y, rcond=None)
        return np.sqrt(lam) * w
    return lam * (Z.T @ alpha)


def kernel_mc(spec: KernelSpectrum, Ps, ridge=0.0, noise=0.0, trials=32, seed=0,
              ridges=None, progress=None) -> dict:
    """Mean and standard error of E_g over ``trials`` Gaussian designs for each P.

    ``ridges`` (list of (T, σ²) pairs) evaluates several ridge / noise settings on the same
    designs and noise draws (returned under ``"settings"``); otherwise (ridge, noise).
    """
    Ps = [int(p) for p in Ps]
    settings = [(float(ridge), float(noise))] if ridges is None else \
        [(float(t), float(s)) for t, s in ridges]
    for T, s2 in settings:
        check_problem(spec, Ps, T, s2)
    if trials < 2:
        raise KernelError(f"trials = {trials} must be >= 2 (for a standard error)")
    for P in Ps:
        if P > MAX_P:
            raise KernelError(f"P = {P} > {MAX_P} is too large for the Monte Carlo")
    with threadpool_limits(1):
        # one BLAS thread: the matrices are small, and threaded OpenBLAS on a loaded machine
        # spends its time spinning (a 512 x 512 Cholesky took 2 s instead of 15 ms)
        return _kernel_mc(spec, Ps, settings, trials, seed, ridges is None, progress)


def _kernel_mc(spec, Ps, settings, trials, seed, single, progress):
    # Designs are nested: trial t draws one design of max(P) rows and each P uses its first P
    # rows (and the leading block of one kernel matrix).  Every P still averages over
    # independent designs; only the estimates at different P are correlated.
    lam, c = _modes(spec)
    M = lam.size
    Pmax = max(Ps)
    if Pmax * (Pmax + M) > MAX_ENTRIES:
        raise KernelError(f"P = {Pmax} with {M} modes is too large for the Monte Carlo "
                          f"(P (P + M) > {MAX_ENTRIES:.0e} matrix entries)")
    errs = np.zeros((len(settings), len(Ps), trials))
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(trials)]
    for t in range(trials):
        rng = rngs[t]
        Z = rng.standard_normal((Pmax, M))
        xi = rng.standard_normal(Pmax)
        signal = Z @ c
        A = Z * np.sqrt(lam)
        Kfull = A @ A.T
        for i, P in enumerate(Ps):
            for s, (T, s2) in enumerate(settings):
                y = signal[:P] + np.sqrt(s2) * xi[:P]
                ch = _fit(Z[:P], lam, y, T, Kfull[:P, :P])
                errs[s, i, t] = float(np.sum((c - ch) ** 2))
        if progress is not None:
            progress(len(Ps))
    mean = errs.mean(axis=2)
    sem = errs.std(axis=2, ddof=1) / np.sqrt(trials)
    res = [{"mean": mean[s].tolist(), "sem": sem[s].tolist()} for s in range(len(settings))]
    out = {"P": Ps, "trials": trials, "seed": seed}
    if single:
        out.update(res[0])
    else:
        out["settings"] = [{"ridge": T, "noise": s2, **r} for (T, s2), r in zip(settings, res)]
    return out


def mc_learnability(spec: KernelSpectrum, P: int, ridge=0.0, trials=64, seed=0) -> dict:
    """Mode-wise learnability by Monte Carlo at one P (noiseless labels).

    ``ratio``: mean and sem of ĉ_k/c_k (the definition; its spread grows with c_1/c_k);
    ``diag``: mean and sem of λ_k [Zᵀ(K + T)⁻¹Z]_kk, the target-independent part of ĉ_k/c_k
    (the rest averages to zero by z → −z symmetry), a lower-variance estimator of the same mean.
    """
    with threadpool_limits(1):
        return _mc_learnability(spec, P, ridge, trials, seed)


def _mc_learnability(spec, P, ridge, trials, seed):
    lam, c = _modes(spec)
    if np.any(c == 0):
        raise KernelError("the learnability ratio needs c_k != 0 for every mode")
    M = lam.size
    P = int(P)
    rng = np.random.default_rng(np.random.SeedSequence([seed, P]))
    ratios = np.zeros((trials, M))
    diags = np.zeros((trials, M))
    for t in range(trials):
        Z = rng.standard_normal((P, M))
        ZL = Z * lam
        K = ZL @ Z.T
        if ridge > 0:
            K[np.diag_indices_from(K)] += ridge
        if P >= M and ridge == 0:
            raise KernelError("mc_learnability needs P < number of modes when ridgeless")
        cf = sla.cho_factor(K, check_finite=False)
        W = sla.cho_solve(cf, Z, check_finite=False)          # K⁻¹ Z  (P x M)
        diags[t] = lam * np.einsum("pk,pk->k", Z, W)
        ch = ZL.T @ sla.cho_solve(cf, Z @ c, check_finite=False)
        ratios[t] = ch / c
    def stats(x):
        return x.mean(axis=0), x.std(axis=0, ddof=1) / np.sqrt(trials)
    rm, rs = stats(ratios)
    dm, ds = stats(diags)
    return {"P": P, "trials": trials, "ratio": {"mean": rm, "sem": rs},
            "diag": {"mean": dm, "sem": ds}}


def kernel_mc_averaged(spec: KernelSpectrum, Ps, ridges=((0.0, 0.0),), trials=256, seed=0,
                       progress=None) -> dict:
    """Gaussian-design E_g averaged exactly over the label noise and the target signs.

    For one design Z, with R = Λ Zᵀ (K + T)⁻¹ Z (M x M) and random independent signs on c_k
    (the design law is invariant under z_k → −z_k, so the mean over designs is unchanged):
        E_{signs, ξ}[Σ_k (c_k − ĉ_k)²] = Σ_j c_j² (1 − 2 R_jj + Σ_k R_kj²)
                                          + σ² tr((K + T)⁻¹ Z Λ² Zᵀ (K + T)⁻¹).
    Same mean as `kernel_mc`, a several times smaller spread (no label or sign noise), and
    independent designs at every P (not nested).  Ridgeless needs P < number of modes.
    Returns {"P", "trials", "seed", "settings": [{"ridge", "noise", "mean", "sem"}]}.
    """
    Ps = [int(p) for p in Ps]
    settings = [(float(t), float(s)) for t, s in ridges]
    for T, s2 in settings:
        check_problem(spec, Ps, T, s2)
    if trials < 2:
        raise KernelError(f"trials = {trials} must be >= 2 (for a standard error)")
    lam, c = _modes(spec)
    c2 = c * c
    M = lam.size
    for P in Ps:
        if P * (P + M) > MAX_ENTRIES:
            raise KernelError(f"P = {P} with {M} modes is too large for the Monte Carlo")
        if P >= M and any(T == 0 for T, _ in settings):
            raise KernelError(f"the averaged Monte Carlo needs P < {M} modes when ridgeless")
    errs = np.zeros((len(settings), len(Ps), trials))
    sl = np.sqrt(lam)
    with threadpool_limits(1):
        for i, P in enumerate(Ps):
            rng = np.random.default_rng(np.random.SeedSequence([seed, P]))
            for t in range(trials):
                Z = rng.standard_normal((P, M))
                A, B = Z * sl, Z * lam
                K, G2 = A @ A.T, B @ B.T                       # Z Λ Zᵀ, Z Λ² Zᵀ
                for s, (T, s2) in enumerate(settings):
                    errs[s, i, t] = _averaged_error(Z, lam, c2, T, s2, K, G2)
                if progress is not None:
                    progress(1)
    mean = errs.mean(axis=2)
    sem = errs.std(axis=2, ddof=1) / np.sqrt(trials)
    return {"P": Ps, "trials": trials, "seed": seed,
            "settings": [{"ridge": T, "noise": s2, "mean": mean[s].tolist(),
                          "sem": sem[s].tolist()} for s, (T, s2) in enumerate(settings)]}


def _averaged_error(Z, lam, c2, T, s2, K=None, G2=None):
    """E over target signs and label noise of Σ_k (c_k − ĉ_k)² for one design Z (P x M)."""
    if K is None:
        A, B = Z * np.sqrt(lam), Z * lam
        K, G2 = A @ A.T, B @ B.T
    Kt = K.copy()
    Kt[np.diag_indices_from(Kt)] += T
    cf = sla.cho_factor(Kt, check_finite=False)
    W = sla.cho_solve(cf, Z, check_finite=False)                 # (K + T)⁻¹ Z
    Rjj = lam * np.einsum("pk,pk->k", Z, W)
    colsq = np.einsum("pk,pk->k", W, G2 @ W)                     # Σ_k R_kj²
    err = float(np.dot(c2, 1.0 - 2.0 * Rjj + colsq))
    if s2 > 0:
        KiG = sla.cho_solve(cf, G2, check_finite=False)
        err += s2 * float(np.trace(sla.cho_solve(cf, KiG.T, check_finite=False)))
    return err
