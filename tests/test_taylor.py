"""The Taylor integrator: printed jet recurrences, the order of a step, agreement with
the RK7(8) and with the modes basis, the regenerate guard of the jet modules."""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from derive import spectra
from derive.hierarchy import SystemKey
from solvers.core.arb_rhs import ArbMatRHS, to_arb_mat
from solvers.core.numbers import FlintContext, MpmathContext
from solvers.core.problem import Problem, random_init
from solvers.core.registry import load
from solvers.hierarchy.odes import agreement_digits, estimated_dps, integrate_problem
from solvers.integrators.taylor import TaylorSeries, _horner, taylor_order

from ode_support import jets_on_random_path

pytestmark = [pytest.mark.closed_form, pytest.mark.higher_precision, pytest.mark.second_basis]  # oracle (tests/conftest.py)


def _problem(key, L, order=1, seed=0):
    s = spectra.power_law(L, 1)
    return Problem(key, s, Fraction(1, 10), order,
                   random_init(key.K, key.M, 1024, s, Fraction(1, 100), seed))


@pytest.mark.parametrize("key", [SystemKey("erf", 1, 1), SystemKey("erf", 2, 2)])
def test_jets_match_derivatives_of_the_generated_coefficients(key):
    """Coefficient k of a(v1(τ)), f(v1(τ)) for a polynomial path v1(τ) equals the Taylor
    coefficient of the generated coefficients (mpmath numerical differentiation at 60 digits):
    an independent route through the same expressions, so every printed recurrence (products,
    reciprocals, square roots, arcsine) is checked, including f (asin, order-2 systems)."""
    jets, mod = load(key, "taylor"), load(key, "mpmath")
    prob = _problem(key, 4, order=2)
    order = 6
    with MpmathContext(60) as ctx:
        num = prob.numeric(ctx)
        path, t1, got = jets_on_random_path(jets, mod, num, ctx, order, 10)

        def component(i):
            def f(tau):
                v = [sum(path[k][s] * tau**k for k in range(order + 1))
                     for s in range(len(path[0]))]
                # the outputs: a, f, then the label-noise coefficients
                noise = mod.module.noise_coefficients(v, t1, ctx)[:len(mod.FN_INDEX)]
                return (list(mod.coefficients(v, t1, num.eta, ctx)) + list(noise))[i]
            return f
        for i in range(jets.N_OUTPUTS):
            ref = mpmath.taylor(component(i), 0, order)
            for k in range(order + 1):
                scale = max(abs(ref[0]), mpmath.mpf(1))
                assert abs(got[k][i] - ref[k]) <= mpmath.mpf(10) ** -40 * scale, (i, k)


def test_step_error_falls_with_the_order():
    """One step of order p from the same state: the error against a converged series falls
    like h^(p+1) when h is halved (slope p + 1 within 0.3), and is about the first omitted
    term ‖Y_(p+1)‖ h^(p+1) (within a factor 10)."""
    key = SystemKey("erf", 2, 2)
    prob = _problem(key, 4)
    with FlintContext(60) as ctx:
        from flint import arb
        num = prob.numeric(ctx)
        rhs = ArbMatRHS(load(key, "mpmath"), num, ctx, "levels")
        series = TaylorSeries(rhs, load(key, "taylor"), 60)
        Ys = series.coefficients(to_arb_mat(num.y_levels), 40)
        exact = {h: _horner(Ys, arb(h)) for h in (0.05, 0.025)}

        def err(p, h):
            d = _horner(Ys[:p + 1], arb(h)) - exact[h]
            return max(abs(float(x.mid())) for x in d.entries())
        for p in (4, 6, 8):
            slope = math.log2(err(p, 0.05) / err(p, 0.025))
            assert abs(slope - (p + 1)) < 0.3, (p, slope)
            first_omitted = max(abs(float(x.mid())) for x in Ys[p + 1].entries()) * 0.05 ** (p + 1)
            assert 0.1 < err(p, 0.05) / first_omitted < 10, p


@pytest.mark.parametrize("order,sigma", [(1, 0), (2, -2), (2, 1)])
def test_fixed_point_series_matches_the_arb_series(order, sigma):
    """The fmpz series (fixed_series.py, scaled rows and time unit 2^σ) against the arb_mat
    series of the same state: every coefficient Y_k, k <= 60, agrees to the working precision
    relative to the row's scale |Y_0[r]| / 2^(σ k) (the integers' unit), for order-1 and
    order-2 systems (the forcing term) and time units below and above the step."""
    from flint import arb
    from solvers.integrators.fixed_series import FixedPointSeries

    key = SystemKey("erf", 2, 2)
    prob = _problem(key, 8, order=order)
    with FlintContext(80) as ctx:
        num = prob.numeric(ctx)
        # jets at the working precision too, so that the two routes differ only by the rounding
        # of the L-row algebra (at short jets they differ at the jets' precision)
        rhs = ArbMatRHS(load(key, "mpmath"), num, ctx, "levels")
        series = TaylorSeries(rhs, load(key, "taylor"), 80)
        fixed = FixedPointSeries(rhs, series.jets, series._short, series.extend, 80)
        Y0 = to_arb_mat(num.y_levels)
        ref = series.coefficients(Y0, 60)
        got, units = fixed.coefficients(Y0, 60, sigma)
        two = arb(2)
        for k in (0, 1, 7, 30, 60):
            for r in range(Y0.nrows()):
                scale = max(abs(Y0[r, c].mid()) for c in range(Y0.ncols())) * two ** (-sigma * k)
                for c in range(Y0.ncols()):
                    y = got[k][r, c] * two ** (units[r] - sigma * k)
                    assert abs((y - ref[k][r, c]).mid()) <= scale * two ** -(ctx.bits() - 24), \
                        (k, r, c)


def test_order_rule():
    assert taylor_order(1e-17) == 21          # heyoka's rule: order 21
    assert taylor_order(1e-35) == 42


@pytest.mark.parametrize("L,order", [(4, 1), (4, 2)])
def test_agrees_with_rk78_at_12_digits_small(L, order):
    """Small version of the full test below (default suite): erf K = M = 2, L = 4, α ≤ 50."""
    prob = _problem(SystemKey("erf", 2, 2), L, order=order)
    alphas = [0, 1, 5, 20, 50]
    dps = estimated_dps(L, 12, "levels")
    tay = integrate_problem(prob, alphas, basis="levels", dps=dps, rtol=1e-17, integrator="taylor")
    rk = integrate_problem(prob, alphas, basis="levels", dps=dps, rtol=1e-17)
    assert agreement_digits(tay.eps_g, rk.eps_g) >= 12


def test_levels_agree_with_modes_at_30_digits_small():
    """The level basis (closure, dps 2.6 L + 40) and the modes basis (no closure) at 30 digits,
    L = 8, α ≤ 20; both Taylor, tolerance 1e-35."""
    prob = _problem(SystemKey("erf", 2, 2), 8)
    alphas = [0, 1, 5, 20]
    lev = integrate_problem(prob, alphas, basis="levels", dps=estimated_dps(8, 30, "levels"),
                            rtol=1e-35, integrator="taylor")
    mod = integrate_problem(prob, alphas, basis="modes", dps=45, rtol=1e-35, integrator="taylor")
    assert agreement_digits(lev.eps_g, mod.eps_g) >= 30


def test_levels_agree_with_modes_at_60_digits_fixed_point():
    """Order 76 (tolerance 1e-65) runs the level series in fixed point (FIXED_POINT_MIN_ORDER):
    it agrees with the modes basis (arb path) to 60 digits, L = 4, α ≤ 10."""
    from solvers.integrators.taylor import FIXED_POINT_MIN_ORDER
    assert taylor_order(1e-65) >= FIXED_POINT_MIN_ORDER
    prob = _problem(SystemKey("erf", 2, 2), 4)
    alphas = [0, 1, 10]
    lev = integrate_problem(prob, alphas, basis="levels", dps=estimated_dps(4, 60, "levels"),
                            rtol=1e-65, integrator="taylor")
    mod = integrate_problem(prob, alphas, basis="modes", dps=75, rtol=1e-65, integrator="taylor")
    assert agreement_digits(lev.eps_g, mod.eps_g) >= 60


def test_taylor_needs_flint():
    prob = _problem(SystemKey("linear", 1, 1), 2)
    with pytest.raises(ValueError, match="flint"):
        integrate_problem(prob, [0, 1], basis="levels", arithmetic="mpmath", dps=30,
                          integrator="taylor")
    with pytest.raises(ValueError, match="integrator"):
        integrate_problem(prob, [0, 1], basis="levels", dps=30, integrator="euler")


def test_breakdown_is_an_integration_error():
    """The Taylor integrator's failures are IntegrationError (the CLI prints them in one line,
    exit status 2), not a bare RuntimeError with a traceback."""
    from solvers.integrators.rk78 import IntegrationError
    from solvers.integrators.taylor import integrate_taylor

    key = SystemKey("linear", 1, 1)
    prob = _problem(key, 2)
    with FlintContext(30) as ctx:
        num = prob.numeric(ctx)
        rhs = ArbMatRHS(load(key, "mpmath"), num, ctx, "levels")
        with pytest.raises(IntegrationError, match="more than 1 steps"):
            integrate_taylor(rhs, load(key, "taylor"), [Fraction(0), Fraction(1000)],
                             to_arb_mat(num.y_levels), tol=1e-20, jet_dps=30, max_steps=1)


def test_regenerate_check_covers_the_jet_modules(tmp_path, monkeypatch):
    """A stale jet module is reported by ``regenerate --check`` (and only listed, not fixed)."""
    from solvers.core import registry
    jet_files = [p for p in registry.checked_in_files() if p.name.endswith("_taylor.py")]
    assert len(jet_files) == len(registry.CHECKED_IN)
    # the smallest shipped system keeps the test quick (rendering all takes ~10 s)
    monkeypatch.setattr(registry, "CHECKED_IN", (SystemKey("linear", 1, 1),))
    files = registry.checked_in_files()
    jet_files = [p for p in files if p.name.endswith("_taylor.py")]
    # a copy of the generated directory with one jet module edited
    copy = tmp_path / "generated"
    copy.mkdir()
    for p in files:
        (copy / p.name).write_text(p.read_text())
    victim = copy / jet_files[0].name
    victim.write_text(victim.read_text() + "# edited\n")
    monkeypatch.setattr(registry, "GENERATED_DIR", copy)
    differing = registry.regenerate(check=True)
    assert [p.name for p in differing] == [victim.name]
    assert victim.read_text().endswith("# edited\n")


# -- full size (make verify) -------------------------------------------------------------------

def _grid(a_max=300):
    return [0.0] + [float(a) for a in np.geomspace(1, a_max, 8)]


@pytest.mark.full
@pytest.mark.parametrize("L", [16, 32])
def test_agrees_with_rk78_at_12_digits(L):
    prob = _problem(SystemKey("erf", 2, 2), L)
    dps = estimated_dps(L, 12, "levels")
    tay = integrate_problem(prob, _grid(), basis="levels", dps=dps, rtol=1e-17, integrator="taylor")
    rk = integrate_problem(prob, _grid(), basis="levels", dps=dps, rtol=1e-17)
    assert agreement_digits(tay.eps_g, rk.eps_g) >= 12


@pytest.mark.full
@pytest.mark.parametrize("L", [16, 32])
@pytest.mark.parametrize("digits", [30, 60])
def test_levels_agree_with_modes(L, digits):
    prob = _problem(SystemKey("erf", 2, 2), L)
    tol = 10.0 ** -(digits + 5)
    lev = integrate_problem(prob, _grid(), basis="levels", dps=estimated_dps(L, digits, "levels"),
                            rtol=tol, integrator="taylor")
    mod = integrate_problem(prob, _grid(), basis="modes", dps=digits + 15, rtol=tol,
                            integrator="taylor")
    assert agreement_digits(lev.eps_g, mod.eps_g) >= digits
