"""Kernel learning curves against the Gaussian-design Monte-Carlo oracle.

Default sizes keep these under ~15 s; the full-size runs are marked ``full``."""
from itertools import pairwise

import numpy as np
import pytest

from kernel_support import theory_vs_mc
from solvers.theory.kernel import eigenlearning, explicit, kernel_mc, mc_learnability, power_law

pytestmark = [pytest.mark.sampling]  # oracle (tests/conftest.py)

SETTINGS = [(0.0, 0.0), (1e-2, 1e-2), (1e-4, 1e-2)]


def _compare(trials, Ps, seed):
    spec = power_law(2, 2000, 2)
    mc = kernel_mc(spec, Ps, trials=trials, seed=seed, ridges=SETTINGS)
    return [dict(T=T, s2=s2, P=p.P, ratio=m / p.eps_g, z=(m - p.eps_g) / s,
                 no_gamma=m / (p.eps_g * p.one_minus_gamma),
                 z_no_gamma=(m - p.eps_g * p.one_minus_gamma) / s,
                 gda=g.eps_g / m, rel_sem=s / m)
            for T, s2, _, p, g, m, s in theory_vs_mc(spec, Ps, SETTINGS, mc)]


def _check(rows):
    for r in rows:
        assert abs(r["z"]) < 3, r                       # E_MC/E_eig within 3 standard errors
        assert r["no_gamma"] > 1.2 and r["z_no_gamma"] > 3, r    # without 1/(1−γ): rejected


def test_mc_matches_eigenlearning():
    """M = 2000, a = b = 2, P = 16…512, 16 trials, (T, σ²) ∈ {(0,0), (1e−2,1e−2), (1e−4,1e−2)}."""
    rows = _compare(16, [16, 32, 64, 128, 256, 512], seed=1)
    _check(rows)
    print("E_MC/E_eig:", [round(r["ratio"], 3) for r in rows])
    print("without 1/(1-gamma):", [round(r["no_gamma"], 2) for r in rows])


@pytest.mark.full
def test_mc_matches_eigenlearning_full():
    """128 designs.  E_MC/E_eig within 3 standard errors everywhere.  With seed 7 the P = 16
    means come out 1.06–1.07 (z ≈ 2): an upward fluctuation of a skewed distribution on top of
    eigenlearning's real finite-P correction, which is +2.8 % at P = 16 (20 000 designs,
    test_kernel_finite_size.py; there rg_gda is within 3 % of the Monte Carlo from P = 16 on).
    Here rg_gda is checked within 3 % from P = 64 and within 3 SE (plus 1e-3) below."""
    rows = _compare(128, [16, 32, 64, 128, 256, 512], seed=7)
    print("E_MC/E_eig:", [round(r["ratio"], 3) for r in rows])
    print("z:", [round(r["z"], 1) for r in rows])
    print("without 1/(1-gamma):", [round(r["no_gamma"], 2) for r in rows])
    print("E_gda/E_MC:", [round(r["gda"], 3) for r in rows])
    for r in rows:
        assert abs(r["z"]) < 3, r
        assert r["z_no_gamma"] > 10, r
        if r["P"] >= 64:
            assert abs(r["gda"] - 1) < 0.03, r
        else:
            assert abs(r["gda"] - 1) < 3 * r["rel_sem"] + 1e-3, r


def test_mc_learnability_matches_L_k():
    """Ridgeless P = 128: the Monte-Carlo mean of ĉ_k/c_k against L_k = λ_k/(λ_k + κ_S)."""
    spec = power_law(2, 2000, 2)
    P = 128
    mc = mc_learnability(spec, P, trials=48, seed=3)
    kS = eigenlearning(spec, [P], 0.0)[0].kappa_S
    L = spec.lam / (spec.lam + kS)
    for est in ("ratio", "diag"):
        mean, sem = mc[est]["mean"], mc[est]["sem"]
        z = (mean - L) / sem
        assert np.mean(np.abs(z) < 3) > 0.97, est
        assert np.mean(z ** 2) < 1.5, est
    # Σ_k E[ĉ_k/c_k] along the diagonal is exactly P per design (trace of a projector)
    assert mc["diag"]["mean"].sum() == pytest.approx(P, rel=1e-9)
    # the well-resolved, learned modes agree closely
    top = slice(0, 40)
    assert np.max(np.abs(mc["diag"]["mean"][top] - L[top])) < 0.03


def test_rank_d_double_descent_against_exact_gaussian_laws():
    """d = 64, σ² = 0.1, ridgeless: E = (1 − P/d) + σ²P/(d − P − 1) (P < d), σ²d/(P − d − 1)."""
    d, s2 = 64, 0.1
    spec = explicit(["0.015625"], target=["0.015625"], multiplicities=[d])
    Ps = [16, 40, 56, 72, 88, 128]
    mc = kernel_mc(spec, Ps, 0.0, s2, trials=400, seed=5)
    for P, m, s in zip(Ps, mc["mean"], mc["sem"], strict=True):
        exact = (1 - P / d) + s2 * P / (d - P - 1) if P < d else s2 * d / (P - d - 1)
        assert abs(m / exact - 1) < 0.10, (P, m, exact, s)
    # the ridge T = 0.05 removes the peak: MC means decrease with P
    mc_r = kernel_mc(spec, [32, 56, 64, 72, 96], 0.05, s2, trials=200, seed=6)
    means = mc_r["mean"]
    assert all(b < a for a, b in pairwise(means)), means
    eig = [p.eps_g for p in eigenlearning(spec, [32, 56, 64, 72, 96], 0.05, s2)]
    for m, s, e in zip(means, mc_r["sem"], eig, strict=True):
        assert abs(m - e) < 3 * s + 0.05 * e


def test_mc_is_reproducible_and_refuses_bad_input():
    spec = power_law(2, 50, 2)
    a = kernel_mc(spec, [10, 20], 1e-2, 0.0, trials=4, seed=11)
    b = kernel_mc(spec, [10, 20], 1e-2, 0.0, trials=4, seed=11)
    assert a["mean"] == b["mean"]
    with pytest.raises(ValueError, match="infinite"):
        kernel_mc(spec, [50], 0.0, 0.1, trials=4)
    with pytest.raises(ValueError, match="trials"):
        kernel_mc(spec, [10], 0.0, 0.0, trials=1)
