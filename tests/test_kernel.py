"""Kernel / GP learning curves: the eigenlearning solver, EK, RG, exponents."""
import math
from itertools import pairwise

import mpmath
import numpy as np
import pytest

from solvers.theory.kernel import (KernelError, decimation_cut, eigenlearning, eigenlearning_mp,
                                   equivalent_kernel, explicit, learning_curves, levels,
                                   power_law, rg_ek, rg_gda, solve_kappa, solve_kappa_S_mp)


@pytest.fixture(scope="module")
def pl2000():
    return power_law(2, 2000, 2)


@pytest.fixture(scope="module")
def pl2e6():
    return {ab: power_law(ab[0], 2_000_000, ab[1]) for ab in ((2, 2), (2, 6), ("1.5", "2.5"))}


@pytest.mark.parametrize("T", ["0", "0.01"])
@pytest.mark.parametrize("P", [16, 256])
def test_fixed_point_kappa_equals_P_kappa_S(pl2000, P, T):
    """κ of the fixed-point form (float64) = P κ_S of the learnability form (mpmath, 40 digits,
    an independent root finder) to 1e-13."""
    kappa = eigenlearning(pl2000, [P], float(T))[0].kappa
    with mpmath.workdps(25):
        lam, _, mult = pl2000.mp_values()
        kS = solve_kappa_S_mp(lam, mult, P, mpmath.mpf(T))
        ref = float(P * kS)
    assert abs(kappa - ref) / ref < 1e-13


def test_mpmath_route_agrees_with_float64():
    """The 25-digit mpmath eigenlearning confirms the float64 κ, γ, E_g to ~1e-13."""
    spec = power_law(2, 400, 2)
    Ps = [16, 100, 390]
    for T, s2 in ((0.0, 0.0), (1e-2, 1e-2)):
        fast = eigenlearning(spec, Ps, T, s2)
        slow = eigenlearning_mp(spec, Ps, T, s2, dps=25)
        for f, s in zip(fast, slow, strict=True):
            for key in ("kappa", "gamma", "eps_g"):
                assert abs(getattr(f, key) - getattr(s, key)) <= 1e-13 * abs(getattr(s, key))


def test_ridgeless_sum_of_learnabilities_is_P(pl2000):
    for pt in eigenlearning(pl2000, [16, 128, 512, 1999], 0.0):
        assert abs(pt.sum_L - pt.P) <= 1e-12 * pt.P
    # at and beyond the rank: κ = 0, L = 1, γ = N/P
    pt = eigenlearning(pl2000, [4000], 0.0, 0.5)[0]
    assert pt.kappa == 0 and pt.gamma == 0.5 and pt.eps_g == pytest.approx(0.5 * 2000 / 2000)


def test_prior_target_error_equals_kappa(pl2000):
    """For a target drawn from the prior (c_k² = λ_k), ridgeless and noiseless, E_g = κ exactly:
    Σ(1−L)²λ/(1−γ) = κ_S Σ L(1−L)/(Σ L(1−L)/P) — an identity independent of the solver."""
    spec = power_law(2, 2000)          # b = a
    for pt in eigenlearning(spec, [8, 64, 700], 0.0):
        assert pt.eps_g == pytest.approx(pt.kappa, rel=1e-13)


def test_grouped_spectrum_equals_expanded_list():
    """L levels x N/L (grouped) vs the same N modes as an explicit list: κ and E_g to 1e-13."""
    grouped = levels(16, 1, 1024)
    lam, c2 = grouped.expanded()
    flat = explicit([float(x) for x in lam], [float(x) for x in c2])
    assert flat.modes == grouped.modes == 1024 and grouped.groups == 16
    for T, s2 in ((0.0, 0.0), (1e-3, 1e-2), (0.0, 1e-2)):
        Ps = [8, 100, 1000, 2048] if not (T == 0 and s2 > 0) else [8, 100, 1000, 2048]
        a = eigenlearning(grouped, Ps, T, s2)
        b = eigenlearning(flat, Ps, T, s2)
        for x, y in zip(a, b, strict=True):
            assert abs(x.kappa - y.kappa) <= 1e-13 * max(y.kappa, 1e-300)
            assert abs(x.eps_g - y.eps_g) <= 1e-13 * y.eps_g


def test_beyond_double_range_uses_mpmath():
    """Scaling all eigenvalues and the ridge by s scales κ by s: s = 1e-400 (mpmath route,
    float64 cannot hold it) against s = 1 (float64)."""
    base = [1, "0.5", "0.25", "0.125", "0.01"]
    tiny = [f"{x}e-400" if isinstance(x, str) and "e" not in x else f"{x}e-400" for x in base]
    spec_tiny = explicit(tiny, target=[1] * 5)
    assert not spec_tiny.float64_ok
    ref = eigenlearning(explicit(base, target=[1] * 5), [2, 3], 0.1)
    got = eigenlearning(spec_tiny, [2, 3], 0.0)       # ridgeless check below
    ridged = eigenlearning_mp(spec_tiny, [2, 3], mpmath.mpf("0.1e-400"))
    for r, g in zip(ref, ridged, strict=True):
        assert float(g.mp["kappa"] * mpmath.mpf(10) ** 400) == pytest.approx(r.kappa, rel=1e-13)
        assert g.eps_g == pytest.approx(r.eps_g, rel=1e-13)
    assert all(p.sum_L == pytest.approx(p.P, rel=1e-13) for p in got)


def test_bracket_is_guaranteed_and_error_estimate_holds(pl2000):
    """The root lies in the a-priori bracket; the float64 root is as close to the 25-digit one
    as its own error estimate says (near the rank, P = 299, the root is ill-conditioned)."""
    from solvers.theory.kernel.eigenlearning import _Prepared, bracket
    spec = power_law(2, 300, 2)
    prep = _Prepared(spec)
    with mpmath.workdps(25):
        lam, _, mult = spec.mp_values()
        for P in (1, 16, 299):
            for T in ("0", "1e6") if P != 16 else ("1e-8", "1"):
                br = bracket(prep.N, prep.trace, prep.inv_trace, P, float(T))
                k, rel = solve_kappa(prep, P, float(T))
                assert br[0] <= k * (1 + 1e-15) and k <= br[1]
                ref = float(solve_kappa_S_mp(lam, mult, P, mpmath.mpf(T)) * P)
                assert abs(k - ref) <= max(rel, 1e-15) * ref
                assert rel < 1e-10


def test_equivalent_kernel_is_the_large_P_limit():
    """Finite rank, fixed ridge: κ → T and γ → 0 as P → ∞, so eigenlearning → EK."""
    spec = power_law(2, 50, 2)
    Ps = [10, 1e3, 1e5, 1e7]
    eig = eigenlearning(spec, Ps, 1e-2, 1e-2)
    ek = equivalent_kernel(spec, Ps, 1e-2, 1e-2)
    ratios = [abs(a.eps_g / b.eps_g - 1) for a, b in zip(eig, ek, strict=True)]
    assert ratios[-1] < 1e-4 and ratios == sorted(ratios, reverse=True)
    assert eig[-1].kappa == pytest.approx(1e-2, rel=1e-4)


def test_rank_d_closed_forms():
    """Degenerate rank-d kernel, ridgeless: E = (1 − P/d)‖c‖² + σ²P/(d − P), σ² d/(P − d)."""
    d, s2 = 64, 0.1
    spec = explicit(["0.015625"], target=["0.015625"], multiplicities=[d])   # λ = c² = 1/d
    for P in (8, 32, 56, 72, 128):
        pt = eigenlearning(spec, [P], 0.0, s2)[0]
        want = (1 - P / d) + s2 * P / (d - P) if P < d else s2 * d / (P - d)
        assert pt.eps_g == pytest.approx(want, rel=1e-13)
    with pytest.raises(KernelError, match="infinite"):
        eigenlearning(spec, [d], 0.0, s2)
    # the ridge removes the double descent: a monotone curve at T = 0.05
    curve = [p.eps_g for p in eigenlearning(spec, range(1, 257), 0.05, s2)]
    assert all(b < a for a, b in pairwise(curve))
    ridgeless = [p.eps_g for p in eigenlearning(spec, [48, 60, 68, 80], 0.0, s2)]
    assert ridgeless[1] > ridgeless[0] and ridgeless[2] > ridgeless[3]


def _slope(P, y):
    return float(np.polyfit(np.log(P), np.log(y), 1)[0])


@pytest.mark.parametrize("ab,want,tol", [((2, 2), -1.0, 0.01), ((2, 6), -4.0, 0.01),
                                         (("1.5", "2.5"), -1.5, 0.03)])
def test_ridgeless_exponents(pl2e6, ab, want, tol):
    """M = 2·10⁶ modes, P ∈ [1e3, 3e4]: E ∝ P^−min(b−1, 2a), κ_S ∝ P^−a."""
    P = np.geomspace(1e3, 3e4, 12)
    pts = eigenlearning(pl2e6[ab], P, 0.0)
    assert _slope(P, [p.eps_g for p in pts]) == pytest.approx(want, abs=tol)
    a = float(ab[0]) if isinstance(ab[0], int) else float(ab[0])
    assert _slope(P, [p.kappa_S for p in pts]) == pytest.approx(-a, abs=tol)


@pytest.mark.parametrize("ab,want", [((2, 2), -0.5), ((2, 6), -2.0)])
def test_bias_exponent_at_fixed_ridge(pl2e6, ab, want):
    """Fixed T = 1 (κ → T once √(P T) ≫ 1): bias ∝ P^−min((b−1)/a, 2)."""
    P = np.geomspace(1e3, 3e4, 8)
    pts = eigenlearning(pl2e6[ab], P, 1.0, 0.0)
    assert _slope(P, [p.eps_g for p in pts]) == pytest.approx(want, abs=0.03)


def test_noise_exponent_at_fixed_ridge(pl2e6):
    """Fixed T: the noise part σ²γ/(1−γ) ∝ P^−(1 − 1/a) (a = 2: −1/2)."""
    spec = pl2e6[(2, 2)]
    P = np.geomspace(1e3, 3e4, 8)
    quiet = eigenlearning(spec, P, 1e-2, 0.0)
    noisy = eigenlearning(spec, P, 1e-2, 1.0)
    slope = _slope(P, [n.eps_g - q.eps_g for q, n in zip(quiet, noisy, strict=True)])
    assert slope == pytest.approx(-0.5, abs=0.02)


@pytest.mark.parametrize("a,P", [(2.0, 2000.0), (3.0, 2000.0), (1.5, 300.0)])
def test_kappa_S_prefactor_C_of_a(a, P):
    """κ_S P^a → C(a)^a with C(a) = (π/a)/sin(π/a) (ridgeless; corrections a/(2P) from the
    sum's end point and ~ M^(1−a)/κ_S from the modes beyond M, hence P = 300 at a = 1.5)."""
    M = 2_000_000
    spec = power_law(repr(a), M, 2)
    kS = eigenlearning(spec, [P], 0.0)[0].kappa_S
    C = (math.pi / a) / math.sin(math.pi / a)
    lead = (C / P) ** a
    missing = M ** (1 - a) / ((a - 1) * lead)        # Σ_{k>M} λ_k/κ_S
    assert kS / (C / (P + 0.5 + missing)) ** a == pytest.approx(1.0, abs=0.01)
    assert kS / lead == pytest.approx(1.0, abs=0.03)


def test_rg_gda_matches_eigenlearning(pl2000):
    for T, s2 in ((1e-2, 1e-2), (1e-4, 1e-2)):
        Ps = [16, 32, 64, 128, 256, 512]
        eig = eigenlearning(pl2000, Ps, T, s2)
        gda = rg_gda(pl2000, Ps, T, s2, 0.01)
        for a, b in zip(eig, gda, strict=True):
            assert abs(b.eps_g / a.eps_g - 1) < 1e-3


def test_rg_ek_keeps_exponent_not_prefactor(pl2e6):
    """Ridgeless a = b = 2: the cut sits at Λ' ≈ 99(a−1)P; κ_RG/κ ≈ 0.004, E_RG-EK/E ≈ 0.06."""
    spec = pl2e6[(2, 2)]
    # P ≤ 300 keeps the cut (≈ 99 P) well inside M: the finite-M tail does not shift T(Λ')
    P = np.geomspace(30, 300, 3)
    eig = eigenlearning(spec, P, 0.0)
    ek = rg_ek(spec, P, 0.0, 0.0, 0.01)
    gda = rg_gda(spec, P, 0.0, 0.0, 0.01)
    i = 1
    assert 0.8 < ek[i].kept_modes / (99 * P[i]) < 1.25
    ratio = [b.eps_g / a.eps_g for a, b in zip(eig, ek, strict=True)]
    assert all(0.04 < r < 0.08 for r in ratio), ratio
    assert ek[-1].kappa / eig[-1].kappa == pytest.approx(0.004, rel=0.25)
    assert _slope(P, [p.eps_g for p in ek]) == pytest.approx(_slope(P, [p.eps_g for p in eig]),
                                                             abs=0.03)
    for a, b in zip(eig, gda, strict=True):
        assert abs(b.eps_g / a.eps_g - 1) < 1e-3


def test_decimation_cut_rule():
    lam = np.arange(1, 20001) ** -1.2
    mult = np.ones(lam.size)
    n, Tn = decimation_cut(lam, mult, 10.0, 0.0, 0.01)
    assert 0 < n < lam.size
    assert Tn == pytest.approx(lam[n:].sum())
    # the first dropped mode is unlearnable at the decimated ridge, the last kept one is not
    assert lam[n] / (lam[n] + Tn / 10) < 0.01
    Tprev = Tn + lam[n - 1]
    assert lam[n - 1] / (lam[n - 1] + Tprev / 10) >= 0.01
    with pytest.raises(KernelError):
        decimation_cut(lam, mult, 10.0, 0.0, 1.5)


@pytest.mark.parametrize("bad,match", [
    (dict(Ps=[0]), "P = 0"), (dict(Ps=[-3]), "P = -3"), (dict(ridge=-1), "ridge"),
    (dict(rg_cut=0), "rg_cut"), (dict(rg_cut=1), "rg_cut"),
    (dict(Ps=[2000], noise=0.1), "infinite")])
def test_bad_input_is_refused(pl2000, bad, match):
    kw = dict(Ps=[16], ridge=0.0, noise=0.0, rg_cut=0.01)
    kw.update(bad)
    with pytest.raises(KernelError, match=match):
        learning_curves(pl2000, kw.pop("Ps"), **kw)
    with pytest.raises(ValueError, match="must be > 0"):
        explicit([1, -0.5])


def test_block_moments_equal_compensated_direct_sums():
    """The head/tail series over block moments (any prefix of the groups) against the
    compensated direct sum: 1e-13 (they are ~1e-15 apart)."""
    from solvers.theory.kernel.passes import Moments
    rng = np.random.default_rng(0)
    for a, b, M in ((2, 2, 300_000), ("1.5", "2.5", 300_000), (2, 6, 100_000)):
        spec = power_law(a, M, b)
        mo = Moments(spec.lam, spec.mult, spec.c2)
        assert mo.use
        for t in (1e-3, 1e-6, 3e-9):
            for n in [M, M - 1, 256, 257, 255 * 256] + list(rng.integers(1, M, 4)):
                x, y = np.array(mo.sums(t, n)), np.array(mo.sums_direct(t, n))
                assert np.all(np.abs(x - y) <= 1e-13 * np.abs(y)), (a, t, n, x, y)


def test_rg_with_moments_equals_direct(pl2e6):
    from solvers.theory.kernel.eigenlearning import _Prepared
    spec = pl2e6[(2, 2)]
    fast, slow = _Prepared(spec), _Prepared(spec, moments=False)
    for T in (0.0, 1e-2):
        for f, s in ((rg_ek(fast, [300, 3000], T, 1e-2), rg_ek(slow, [300, 3000], T, 1e-2)),
                     (rg_gda(fast, [300, 3000], T, 1e-2), rg_gda(slow, [300, 3000], T, 1e-2))):
            for x, y in zip(f, s, strict=True):
                assert x.kept_groups == y.kept_groups
                assert x.eps_g == pytest.approx(y.eps_g, rel=1e-12)
                assert x.kappa == pytest.approx(y.kappa, rel=1e-12)


def test_slides_literal_reading_is_12_to_14_percent_high(pl2000):
    """Erratum check: the slides' "T + ⟨∫(f−y)²⟩_MF" read with the bias included overestimates
    E_g by 12–14 % (a = b = 2, ridgeless, P = 16…256); eigenlearning itself is validated
    against the Monte Carlo in test_kernel_mc.py."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "tools" / "kernel_slides_erratum.py"
    spec = importlib.util.spec_from_file_location("kernel_slides_erratum", path)
    erratum = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(erratum)          # a tool outside the package: loaded by path
    slides_literal = erratum.slides_literal
    Ps = [16, 64, 256]
    lit = slides_literal(pl2000, Ps)
    eig = eigenlearning(pl2000, Ps, 0.0)
    ratios = [a.eps_g / b.eps_g for a, b in zip(lit, eig, strict=True)]
    assert all(1.11 < r < 1.15 for r in ratios), ratios
    # its κ solves the literal equation (independent check of the root)
    lam, c2 = pl2000.lam, pl2000.c2
    for p in lit:
        L = lam / (lam + p.kappa_S)
        rhs = float(np.sum(lam * (1 - L)) + np.sum((1 - L) ** 2 * c2))
        assert p.kappa == pytest.approx(rhs, rel=1e-12)


from hypothesis import given, settings, strategies as st  # noqa: E402

pytestmark = [pytest.mark.closed_form, pytest.mark.higher_precision, pytest.mark.second_basis]  # oracle (tests/conftest.py)


@settings(max_examples=40, deadline=None)
@given(logs=st.lists(st.floats(-12, 3), min_size=1, max_size=25, unique=True),
       mults=st.lists(st.integers(1, 50), min_size=25, max_size=25),
       P=st.floats(0.5, 2000), logT=st.one_of(st.none(), st.floats(-14, 4)))
def test_solver_on_random_spectra(logs, mults, P, logT):
    """Random spectra with multiplicities, any P and ridge: the float64 root is within its own
    error estimate of the 30-digit root of the other form, and E_g is finite and ≥ 0."""
    lam = [10.0 ** x for x in logs]
    spec = explicit(lam, target=[1.0] * len(lam), multiplicities=mults[:len(lam)])
    T = 0.0 if logT is None else 10.0 ** logT
    if T == 0 and P == spec.modes:
        return
    pt = eigenlearning(spec, [P], T, 0.0)[0]
    assert math.isfinite(pt.eps_g) and pt.eps_g >= 0
    with mpmath.workdps(30):
        l_mp, _, m_mp = spec.mp_values()
        ref = float(solve_kappa_S_mp(l_mp, m_mp, P, mpmath.mpf(T)) * P)
    if ref == 0:
        assert pt.kappa == 0
    else:
        assert abs(pt.kappa - ref) <= max(4 * pt.rel_err, 1e-13) * ref
