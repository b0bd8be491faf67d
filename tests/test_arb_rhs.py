"""The arb_mat form of the generated right-hand sides (solvers.core.arb_rhs) against the generated
modules' own numpy-object-array functions, and the integrator's arb_mat state space against
its array state space."""
from fractions import Fraction

import pytest

from derive import spectra
from derive.keys import SystemKey
from solvers.core.arb_rhs import ArbMatRHS, from_arb_mat, to_arb_mat
from solvers.core.numbers import FlintContext
from solvers.hierarchy.odes import agreement_digits, integrate_problem
from solvers.core.problem import Problem, random_init
from solvers.core.registry import load

pytestmark = [pytest.mark.second_basis, pytest.mark.higher_precision]  # oracle (tests/conftest.py)

DPS = 60


def _problem(key, L, order):
    s = spectra.power_law(L, Fraction(1, 2))
    return Problem(key, s, Fraction(3, 10), order,
                   random_init(key.K, key.M, 8 * L, s, Fraction(1, 10), 3))


def _max_rel(a, b):
    worst = 0.0
    for x, y in zip(a.flat, b.flat, strict=True):
        scale = max(float(abs(y).mid()), 1e-300)
        worst = max(worst, float(abs(x - y).mid()) / scale)
    return worst


@pytest.mark.parametrize("key", [SystemKey("erf", 2, 2), SystemKey("erf", 1, 1),
                                 SystemKey("linear", 1, 1)], ids=lambda k: k.tag)
@pytest.mark.parametrize("L", [1, 2, 5])
@pytest.mark.parametrize("order", [1, 2])
def test_matrix_form_equals_generated(key, L, order):
    prob = _problem(key, L, order)
    with FlintContext(DPS) as ctx:
        num = prob.numeric(ctx)
        mod = load(key, "mpmath")
        for basis in ("levels", "modes"):
            y = num.y_levels if basis == "levels" else num.y_modes
            if basis == "levels":
                ref = mod.rhs_levels(y, num.T_levels, num.c, num.nu, num.eta, num.e2, ctx)
            else:
                ref = mod.rhs_modes(y, num.T_modes, num.lam, num.w, num.eta, num.e2, ctx)
            got = from_arb_mat(ArbMatRHS(mod, num, ctx, basis)(0, to_arb_mat(y)))
            # same products summed in another order: a few ulps of the largest term, and the
            # level values are O(1) after the power-law normalisation only up to λ_1^l, so
            # compare entrywise relative to each reference entry; 1e-50 leaves 10 digits of
            # room for cancellation inside a sum at 60 digits
            assert _max_rel(got, ref) < 1e-50, basis


def test_matrix_and_array_paths_integrate_alike():
    """Same RK7(8) steps on both state types: ε_g equal to ~ the working precision."""
    prob = _problem(SystemKey("erf", 2, 2), 8, 2)
    grid = [0, 1, 5, 20]
    a = integrate_problem(prob, grid, basis="levels", arithmetic="flint", dps=DPS, rtol=1e-20)
    b = integrate_problem(prob, grid, basis="levels", arithmetic="flint", dps=DPS, rtol=1e-20,
                          matrix_rhs=False)
    assert a.stats["n_steps"] == b.stats["n_steps"]
    # rounding differs (summation order), and the level basis at L = 8 amplifies rounding by
    # ~10^(2.6 L) ≈ 10^21 (docs/guide/precision.md): 60 - 21 = 39 digits would be left; ask for 30
    assert agreement_digits(a.eps_g, b.eps_g) >= 30


def test_short_row_independent_scalars_cost_no_digits():
    """Coefficients and RK scalars at short_dps (35 digits) vs everything at 80 digits, and a
    control run with *all* arithmetic at 36 digits.  Rounding common to every level row (the
    short scalars) is not amplified by the closure; rounding that differs between rows is."""
    from solvers.hierarchy.odes import short_dps
    prob = _problem(SystemKey("erf", 2, 2), 12, 1)
    # to α = 20 (960 steps): the amplification shows as it does to α = 40, at two thirds of the
    # CPU (7.7 digits lost to α = 20, 10.3 to α = 40)
    grid = [0, 2, 10, 20]
    assert short_dps(1e-20, 80) == 35
    run = dict(basis="levels", arithmetic="flint", rtol=1e-20)
    short = integrate_problem(prob, grid, dps=80, **run)
    full = integrate_problem(prob, grid, dps=80, short_scalars=False, **run)
    low = integrate_problem(prob, grid, dps=36, short_scalars=False, **run)
    # same step sequence, so the two 80-digit runs differ only by the scalars' rounding
    assert short.stats["n_steps"] == full.stats["n_steps"]
    # 35-digit scalars perturb the dynamics by ~1e-35 relative: ≥ 30 digits (measured 35.5)
    kept = agreement_digits(short.eps_g, full.eps_g)
    assert kept >= 30
    # row-wise rounding at 36 digits is amplified (measured: 27.8 digits left, 7.7 lost; without
    # amplification about the 36 digits asked would be kept)
    assert agreement_digits(low.eps_g, full.eps_g) < kept - 5
