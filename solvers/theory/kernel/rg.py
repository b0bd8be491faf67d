"""Equivalent kernel and decimation-only RG (two readings of the slides), float64.

Equivalent kernel (EK): κ_S = T/P, L_k = λ_k/(λ_k + T/P), γ → 0 in the denominator:
    E_EK = Σ m (1 − L)² c² + σ² Σ m L²/P       (``gamma`` reports Σ m L²/P, the noise factor)

Decimation (Howard, Maiti, Jefferson, Ringel 2024): integrate out the UV modes k > Λ',
T(Λ') = T + Σ_{k>Λ'} m λ_k.  The cut is self-consistent at learnability ℓ_c: Λ' is the
smallest number of kept groups such that the first dropped group has
λ/(λ + T(Λ')/P) < ℓ_c (ridgeless power law a: Λ' ≈ (1 − ℓ_c)/ℓ_c (a − 1) P).  The UV target
power Σ_UV c² is never learned; it enters the test error and acts as label noise on the rest.

- ``rg_ek`` (the literal "≈ for Λ' ≪ Λ" line): EK with ridge T(Λ') on the kept modes;
  κ = T(Λ').  Keeps the exponent, not the prefactor at small T.
- ``rg_gda``: the same decimation, kept modes solved by eigenlearning at ridge T(Λ') and noise
  σ² + Σ_UV c².  Equals eigenlearning up to O(ℓ_c): the exact relation
  P κ_S = T + Σ_UV λ(1 − L) + κ_S Σ_IR L shows what decimation drops.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from solvers.theory.kernel.eigenlearning import KernelError, _Prepared, solve_kappa


@dataclass
class Approx:
    """An approximate theory at one P (same fields as eigenlearning's Point where they apply)."""
    P: float
    kappa: float
    kappa_S: float
    gamma: float
    eps_g: float
    kept_groups: int | None = None
    kept_modes: int | None = None
    ridge_eff: float | None = None


def equivalent_kernel(spec, Ps, T=0.0, sigma2=0.0) -> list[Approx]:
    prep = _prep(spec)
    out = []
    for P in Ps:
        P = float(P)
        if not P > 0:
            raise KernelError(f"P = {P:g} must be > 0")
        kS = float(T) / P
        _, sL2, _, bias = prep.sums(kS)
        gamma = sL2 / P
        out.append(Approx(P, float(T), kS, gamma, bias + float(sigma2) * gamma))
    return out


@njit(cache=True)
def _first_cut(lam, tail, P, T, cut):
    # smallest n whose first dropped group is unlearnable at the decimated ridge T + tail[n]
    for n in range(lam.size):
        if lam[n] * (1.0 - cut) * P < cut * (T + tail[n]):
            return n
    return lam.size


def _tails(prep):
    """Suffix sums Σ_{i≥n} m λ and Σ_{i≥n} m c² (cached on the prepared spectrum)."""
    if getattr(prep, "_tails", None) is None:
        z = np.zeros(1)
        prep._tails = (np.concatenate([np.cumsum((prep.mult * prep.lam)[::-1])[::-1], z]),
                       np.concatenate([np.cumsum((prep.mult * prep.c2)[::-1])[::-1], z]))
    return prep._tails


def decimation_cut(lam, mult, P, T, cut, tail=None):
    """Number of kept groups n and the decimated ridge T(Λ') for learnability cut ``cut``."""
    if not 0.0 < cut < 1.0:
        raise KernelError(f"rg_cut = {cut} must be in (0, 1)")
    if tail is None:
        tail = np.concatenate([np.cumsum((mult * lam)[::-1])[::-1], [0.0]])
    n = int(_first_cut(np.ascontiguousarray(lam, dtype=np.float64), tail, float(P), float(T),
                       float(cut)))
    return n, float(T + tail[n])


def _uv_power(prep, n):
    """Target power of the decimated (UV) groups n.."""
    return float(_tails(prep)[1][n])


def _prep(spec_or_prep):
    return spec_or_prep if isinstance(spec_or_prep, _Prepared) else _Prepared(spec_or_prep)


def _cut(prep, P, T, cut):
    """(P, n, T_n, UV power) at sample size P: the decimation both RG closures start from."""
    P = float(P)
    n, Tn = decimation_cut(prep.lam, prep.mult, P, float(T), cut, _tails(prep)[0])
    return P, n, Tn, _uv_power(prep, n)


def rg_ek(spec, Ps, T=0.0, sigma2=0.0, cut=0.01) -> list[Approx]:
    prep = _prep(spec)
    out = []
    for P in Ps:
        P, n, Tn, uv = _cut(prep, P, T, cut)
        kS = Tn / P
        _, sL2, _, bias = prep.sums(kS, n) if n else (0.0, 0.0, 0.0, 0.0)
        gamma = sL2 / P
        eps = bias + uv + (float(sigma2) + uv) * gamma
        out.append(Approx(P, Tn, kS, gamma, eps, n, int(prep.prefix(n)[0]), Tn))
    return out


def rg_gda(spec, Ps, T=0.0, sigma2=0.0, cut=0.01) -> list[Approx]:
    prep = _prep(spec)
    out = []
    for P in Ps:
        P, n, Tn, uv = _cut(prep, P, T, cut)
        noise = float(sigma2) + uv
        if n == 0:
            out.append(Approx(P, Tn, Tn / P, 0.0, uv, 0, 0, Tn))
            continue
        N_kept = prep.prefix(n)[0]
        kappa, _ = solve_kappa(prep, P, Tn, n=n)
        kS = kappa / P
        _, sL2, sLq, bias = prep.sums(kS, n)
        gamma = sL2 / P
        omg = (Tn / kS + sLq) / P if kappa > 0 else (P - N_kept) / P
        if omg <= 0:
            if noise > 0:
                raise KernelError(f"rg_gda: ridgeless noisy regression at P = {P:g} = rank")
            eps = uv
        else:
            eps = uv + (bias + noise * gamma) / omg
        out.append(Approx(P, kappa, kS, gamma, eps, n, int(N_kept), Tn))
    return out


from solvers.core.artifacts import numba_kernels  # noqa: E402

numba_kernels(globals())     # compiled code under the cache of generated artifacts
