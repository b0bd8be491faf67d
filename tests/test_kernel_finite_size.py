"""Eigenlearning's finite-P correction on the Gaussian design, resolved.

Eigenlearning is the P → ∞ limit.  With thousands of designs and the estimator averaged
exactly over label noise and target signs (`kernel_mc_averaged`), M = 2000, a = b = 2, the
Monte Carlo sits above it by E_MC/E_eig − 1 ≈ 0.4–0.7/P (P = 8: +5.0 %, 16: +2.8 %, 32: +1.4 %,
64: +0.8 %, 128: +0.37 %, 256: +0.26 %, 512: +0.12 % ± 0.02 %), the same for (T, σ²) = (0, 0), (1e−2, 1e−2), (1e−4, 1e−2).  With 16–128 designs
and the plain estimator this is below the standard error, so those runs are "within 3 SE".
Also: 1/(1 − γ), the factor that dropping the denominator loses, against a 25-digit route.
"""
import itertools

import mpmath
import numpy as np
import pytest

from kernel_support import theory_vs_mc
from solvers.theory.kernel import eigenlearning, kernel_mc_averaged, power_law
from solvers.theory.kernel.montecarlo import _averaged_error, _fit

pytestmark = [pytest.mark.sampling, pytest.mark.higher_precision]  # oracle (tests/conftest.py)

SETTINGS = [(0.0, 0.0), (1e-2, 1e-2), (1e-4, 1e-2)]
# P (E_MC/E_eig − 1) measured 0.40 (P = 8) … 0.54 (P = 64); the band below is that spread
C_BAND = (0.45, 0.1)


@pytest.mark.parametrize("T", [0.0, 0.03])
def test_averaged_error_equals_brute_force(T):
    """The sign- and noise-averaged error of one design against enumeration of all 2^M sign
    patterns (exact KRR fits) plus the noise variance summed over a basis of label vectors."""
    rng = np.random.default_rng(4)
    M, P, s2 = 6, 4, 0.2
    lam = 1.0 / np.arange(1, M + 1) ** 1.5
    c = 1.0 / np.arange(1, M + 1) ** 0.8
    Z = rng.standard_normal((P, M))
    bias = np.mean([np.sum((c * s - _fit(Z, lam, Z @ (c * s), T)) ** 2)
                    for s in itertools.product([-1.0, 1.0], repeat=M)])
    noise = s2 * sum(np.sum(_fit(Z, lam, e, T) ** 2) for e in np.eye(P))
    assert _averaged_error(Z, lam, c * c, T, s2) == pytest.approx(bias + noise, rel=1e-10)


def _ratios(Ps, settings, trials, seed):
    spec = power_law(2, 2000, 2)
    mc = kernel_mc_averaged(spec, Ps, ridges=settings, trials=trials, seed=seed)
    return [dict(T=T, s2=s2, P=P, r=m / e.eps_g, se=s / e.eps_g, gda=g.eps_g / m,
                 no_gamma=m / (e.eps_g * e.one_minus_gamma))
            for T, s2, P, e, g, m, s in theory_vs_mc(spec, Ps, settings, mc)]


def _check_correction(r):
    P = r["P"]
    assert r["r"] - 1 > 3 * r["se"], r                    # the correction is resolved
    assert abs(P * (r["r"] - 1) - C_BAND[0]) < C_BAND[1] + 3 * P * r["se"], r


def test_finite_P_correction_resolved_small_P():
    """P = 8, 16 with 1200 designs: E_MC/E_eig − 1 > 0 by more than 3 SE, ≈ 0.45/P, larger at
    P = 8 than at 16; at P = 16 it stays inside the band 0.97–1.05 observed earlier."""
    rows = _ratios([8, 16], SETTINGS[:2], trials=1200, seed=21)
    print([(r["P"], round(r["r"], 4), round(r["se"], 4)) for r in rows])
    for r in rows:
        _check_correction(r)
    for a, b in zip(rows[0::2], rows[1::2], strict=True):             # (P = 8, P = 16) per setting
        assert a["r"] - b["r"] > 3 * np.hypot(a["se"], b["se"]), (a, b)
        assert b["r"] + 3 * b["se"] < 1.05, b


@pytest.mark.full
def test_finite_P_correction_full():
    """P = 8…512, all three (T, σ²): the correction is resolved and ≈ 0.45/P up to P = 128,
    between −3 SE and 3 SE + 1/P beyond; rg_gda within 3 % of the Monte Carlo from P = 16 on (P = 8:
    −4.8 %); E_MC/(E_eig (1 − γ)) is 1.4–2.3 except (T = 1e-2, P = 512): 1.33."""
    Ps = [8, 16, 32, 64, 128, 256, 512]
    rows = []
    for P, n in zip(Ps, [6000, 6000, 3000, 1500, 400, 100, 40], strict=True):
        rows += _ratios([P], SETTINGS, trials=n, seed=5)
    for r in sorted(rows, key=lambda r: (r["T"], r["s2"], r["P"])):
        print(f"T={r['T']:g} s2={r['s2']:g} P={r['P']}: E_MC/E_eig = {r['r']:.4f} ± "
              f"{r['se']:.4f}, P(r-1) = {r['P'] * (r['r'] - 1):.3f}, "
              f"gda/MC = {r['gda']:.4f}, no-gamma factor = {r['no_gamma']:.3f}")
    for r in rows:
        P = r["P"]
        if P <= 128:
            _check_correction(r)
        else:                                             # P (r − 1) = 0.6–0.7 at P = 256
            assert -3 * r["se"] < r["r"] - 1 < 3 * r["se"] + 1.0 / P, r
        if P >= 16:
            assert abs(r["gda"] - 1) < 0.03, r
        if (r["T"], P) == (1e-2, 512):
            assert 1.3 < r["no_gamma"] < 1.4, r
        else:
            assert 1.4 < r["no_gamma"] < 2.3, r


def _one_minus_gamma_mp(P, T, M=2000, a=2, dps=25):
    """1 − γ from the defining sums: P = T/κ_S + Σ λ/(λ + κ_S) solved in v = log κ_S by
    bisection on [−60, 10] to 1e-10, then Newton steps until they stop moving (to 1e-22)."""
    with mpmath.workdps(dps):
        lam = [mpmath.mpf(k) ** -a for k in range(1, M + 1)]
        P, T = mpmath.mpf(P), mpmath.mpf(T)

        def G(v):
            kS = mpmath.exp(v)
            return T / kS + mpmath.fsum(l / (l + kS) for l in lam) - P
        lo, hi = mpmath.mpf(-60), mpmath.mpf(10)
        assert G(lo) > 0 > G(hi)
        for _ in range(40):                             # 70·2^-40 < 1e-10
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if G(mid) > 0 else (lo, mid)
        v = (lo + hi) / 2
        for _ in range(8):
            kS = mpmath.exp(v)
            dG = -T / kS - mpmath.fsum(l * kS / (l + kS) ** 2 for l in lam)
            step = G(v) / dG
            v -= step
            if abs(step) < mpmath.mpf(10) ** -22:
                break
        assert abs(step) < mpmath.mpf(10) ** -22 and lo <= v <= hi
        kS = mpmath.exp(v)
        return float(1 - mpmath.fsum((l / (l + kS)) ** 2 for l in lam) / P)


def test_gamma_factor_against_25_digits():
    """1/(1 − γ) at M = 2000, a = 2: T = 1e-2 falls from 1.84 (P = 16) to 1.33 (P = 512);
    ridgeless it rises to 2.29.  So 'dropping 1/(1 − γ) is 1.4–2.3× off' holds except at
    T = 1e-2, P = 512 (1.33×; 1.45× at P = 256)."""
    spec = power_law(2, 2000, 2)
    want = {(1e-2, 512): (1.3, 1.4), (1e-2, 256): (1.4, 1.5), (0.0, 512): (2.25, 2.3)}
    for (T, P), (lo, hi) in want.items():
        omg = _one_minus_gamma_mp(P, T)
        pt = eigenlearning(spec, [P], T)[0]
        assert pt.one_minus_gamma == pytest.approx(omg, rel=1e-13)
        assert lo < 1 / omg < hi, (T, P, 1 / omg)
